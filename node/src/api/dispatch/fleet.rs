//! Fleet methods: founding on the running node, the members this node
//! knows, invites, joining and removal.

use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let fleet = &c.app.fleet;
    let v = match c.method.name {
        m::FLEET_NODES => fleet.fleet_nodes().await?,
        m::FLEET_INIT => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                #[serde(default)]
                owner_key: Option<String>,
            }
            fleet.fleet_init(c.params::<P>()?.owner_key.as_deref()).await?
        }
        m::FLEET_INVITE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                #[serde(default)]
                ttl_secs: Option<u64>,
            }
            let ttl = c.params::<P>()?.ttl_secs.unwrap_or(3600);
            if ttl == 0 || ttl > 7 * 24 * 3600 {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    format!("ttl_secs: {ttl} is outside 1..=604800 (a week)"),
                ));
            }
            fleet.fleet_invite(std::time::Duration::from_secs(ttl)).await?
        }
        m::FLEET_REMOVE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                node: String,
            }
            fleet.fleet_remove(&c.params::<P>()?.node).await?
        }
        m::FLEET_JOIN => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                invite: String,
            }
            fleet.fleet_join(&c.params::<P>()?.invite).await?
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
