//! Agent methods: defining, reading, updating and archiving agents, their
//! secrets, and a CLI's own login session.

use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let node = &c.app.node;
    let v = match c.method.name {
        m::AGENT_CREATE => json!({ "agent": node.agent_create(c.params()?).await? }),
        m::AGENT_GET => json!({ "agent": node.agent_get(&c.params::<console_api::AgentRef>()?.agent).await? }),
        m::AGENT_LIST => {
            c.no_params()?;
            json!({ "agents": node.agent_list().await })
        }
        m::AGENT_UPDATE => json!({ "agent": node.agent_update(c.params()?).await? }),
        m::EGRESS_AUDIT => {
            let a: console_api::EgressAudit = c.params()?;
            c.app.egress.audit(&a.agent, a.limit).await?
        }
        m::AGENT_ARCHIVE => {
            json!({ "agent": node.agent_archive(&c.params::<console_api::AgentRef>()?.agent).await? })
        }
        m::AGENT_LOGIN => {
            json!({ "conversation": c.app.conversations.agent_login(&c.params::<console_api::AgentRef>()?.agent).await? })
        }
        m::AGENT_SECRET_SET | m::AGENT_SECRET_UNSET | m::AGENT_SECRET_LIST => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct SecretParams {
                agent: String,
                #[serde(default)]
                name: Option<String>,
                #[serde(default)]
                value: Option<String>,
            }
            let s: SecretParams = c.params()?;
            let need = |v: Option<String>, field: &str| {
                v.ok_or_else(|| {
                    RpcError::new(
                        ErrorCode::InvalidParams,
                        format!("invalid params: missing field `{field}`"),
                    )
                })
            };
            match c.method.name {
                m::AGENT_SECRET_SET => {
                    let (name, value) = (need(s.name, "name")?, need(s.value, "value")?);
                    c.app.secrets.set(&s.agent, &name, &value).await?
                }
                m::AGENT_SECRET_UNSET => c.app.secrets.unset(&s.agent, &need(s.name, "name")?).await?,
                _ => c.app.secrets.list(&s.agent).await?,
            }
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
