//! Node methods: what the node says about itself.

use console_api::{RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, not_served, to_value};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let app = c.app;
    let node = &app.node;
    let v = match c.method.name {
        m::NODE_INFO => {
            let (peer_id, fleet) = app.fleet.fleet_identity().await;
            let me = app.fleet.fleet_record().await;
            let defaults = app.supervisor.supervision_get(None).await?;
            let mut info = to_value(console_api::NodeInfo {
                node_id: app.identity.node_id.clone(),
                peer_id: Some(peer_id),
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol_version: console_api::PROTOCOL_VERSION,
                // What clients should use: the published one when set.
                endpoint: app
                    .fleet
                    .published_endpoint()
                    .unwrap_or_else(|| app.identity.endpoint.clone()),
                runtime: node.runtime_name().to_string(),
                started_at: app.identity.started_at,
                root_public_key: app.identity.root_public_key.clone(),
                auth_limit_hits: app.verifier.limit_hits(),
                name: me.name,
                capacity: Some(json!(me.capacity)),
                harness_warnings: node.harness_problems().into_iter().map(|p| p.message).collect(),
                pricing: Some(app.spend.pricing_wire()),
                supervision_defaults: defaults.get("defaults").cloned(),
            })?;
            info["fleet"] = json!(fleet);
            info["vapid_public_key"] = json!(app.push.vapid_public_key());
            info
        }
        // Local-only (the registry refuses it over the network with -32010).
        m::CONFIG_SET => {
            let p: console_api::ConfigSet = c.params()?;
            app.supervisor.config_set(&p.supervision).await?
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
