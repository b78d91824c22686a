//! Monitor methods: attaching a monitor agent to a target (here or on
//! another member, with a delegation for it), listing, detaching and
//! re-arming attachments.

use console_api::{RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};
use crate::api::auth;
use crate::fleet::address::split_address;

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let (app, conn) = (c.app, c.conn);
    let v = match c.method.name {
        m::MONITOR_ATTACH => {
            let mut spec: monitor::AttachmentSpec = c.params()?;
            // Where the target agent is homed: `Some(None)` here.
            let home = match spec.target.agent.as_deref() {
                Some(a) => app.monitors.remote_home(a).await.ok(),
                None => None,
            };
            // `NAME@THIS_NODE` is this node's `NAME`, checked as such.
            if let (Some(None), Some(a)) = (&home, spec.target.agent.as_deref()) {
                spec.target.agent = Some(split_address(a).0.to_string());
            }
            auth::may_observe_target(app, conn, &spec)?;
            // A target on another member: the caller's forwarding token.
            let delegate = match home.flatten() {
                // The local admin's delegation is signed by the owner key
                // for the attachment alone, with no expiry (its forwarding
                // token lives minutes).
                Some((home, name)) if app.router.is_local_admin(conn) => Some(app.monitors.owner_delegation(
                    &home,
                    &name,
                    spec.inject.unwrap_or(true),
                )?),
                Some((home, _)) => Some(app.router.token_for(conn, &home).await?),
                None => None,
            };
            app.monitors.monitor_attach(spec, delegate).await?
        }
        m::MONITOR_LIST => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                #[serde(default)]
                monitor: Option<String>,
                #[serde(default)]
                target: Option<String>,
            }
            let l: P = c.params()?;
            app.monitors
                .monitor_list(l.monitor.as_deref(), l.target.as_deref())
                .await?
        }
        m::MONITOR_DETACH | m::MONITOR_REARM => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                attachment: String,
            }
            let a: P = c.params()?;
            if c.method.name == m::MONITOR_DETACH {
                app.monitors.monitor_detach(&a.attachment).await?
            } else {
                app.monitors.monitor_rearm(&a.attachment).await?
            }
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
