//! Session methods: authenticating a connection, pairing a browser, its
//! event subscription and cancelling a subscription.

use std::sync::Arc;

use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, internal, not_served};
use crate::api::conn::Conn;
use crate::api::{App, doors};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let (app, conn) = (c.app, c.conn);
    let v = match c.method.name {
        m::SESSION_AUTHENTICATE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct Auth {
                token: String,
            }
            let a: Auth = c.params()?;
            // Leaving the unauthenticated pool takes an authenticated place.
            let place = match conn.admitted_anonymously() {
                true => Some(app.connections.clone().try_acquire_owned().map_err(|_| {
                    RpcError::new(ErrorCode::Busy, "too many connections: try again later")
                        .with_data(json!({ "retry_after_ms": 1000 }))
                })?),
                false => None,
            };
            conn.authenticate(&app.verifier, &a.token, |ids| app.node.any_revoked(ids))?;
            if let Some(place) = place {
                conn.admit(doors::Admission::Authenticated(place));
            }
            json!({ "authenticated": true })
        }
        m::SESSION_PAIR => pair(app, conn, c.params()?)?,
        m::SESSION_PAIR_CODE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                #[serde(default)]
                companion: bool,
                #[serde(default)]
                with_actions: bool,
            }
            use crate::console::pair::{CODE_TTL_MS, Profile};
            let p: P = c.params()?;
            let profile = match (p.companion, p.with_actions) {
                (false, false) => Profile::Console,
                (true, false) => Profile::Companion,
                (true, true) => Profile::CompanionActions,
                (false, true) => {
                    return Err(RpcError::new(
                        ErrorCode::InvalidParams,
                        "with_actions: only a companion takes it (give companion: true)",
                    ));
                }
            };
            let endpoint = app
                .fleet
                .published_endpoint()
                .unwrap_or_else(|| app.identity.endpoint.clone());
            json!({
                "code": app.pairing.issue(profile, node_store::util::now_ms()),
                "profile": profile.as_str(),
                "url": crate::console::console_url(&endpoint),
                "expires_in_ms": CODE_TTL_MS,
            })
        }
        m::EVENTS_SUBSCRIBE => {
            let e: console_api::EventsSubscribe = c.params()?;
            json!({ "subscription": conn.subscribe_events(&app.node, e.kinds, e.agent)? })
        }
        m::PUSH_SUBSCRIBE => app.push.subscribe(token_of(conn), c.params()?).await?,
        m::PUSH_UNSUBSCRIBE => {
            let p: console_api::PushRef = c.params()?;
            app.push.unsubscribe(token_of(conn), &p.subscription).await?
        }
        m::PUSH_LIST => {
            c.no_params()?;
            app.push.list(token_of(conn)).await?
        }
        m::SUBSCRIPTION_CANCEL => {
            let s: console_api::SubscriptionRef = c.params()?;
            conn.cancel(&s.subscription)?;
            json!({ "cancelled": true })
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}

/// The caller's verified token (none on the Unix socket).
fn token_of(conn: &Conn) -> Option<Arc<capabilities::Verified>> {
    match conn.caller() {
        crate::api::conn::Caller::Token(t) => Some(t),
        _ => None,
    }
}

/// `session.pair {code}`: the code's token, once (no token needed). Wrong
/// guesses count against the caller's address (a caller with none, on the
/// Unix socket or the fabric, counts as one address of its own).
fn pair(app: &Arc<App>, conn: &Arc<Conn>, p: console_api::PairCode) -> Result<Value, RpcError> {
    use crate::console::pair::PairError;
    let source = conn
        .peer()
        .map(doors::source_key)
        .unwrap_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
    let profile = app
        .pairing
        .redeem(&p.code, source, node_store::util::now_ms())
        .map_err(|e| match e {
            PairError::Refused => RpcError::new(ErrorCode::Unauthenticated, e.to_string()),
            PairError::LockedOut { retry_after_ms } => {
                RpcError::new(ErrorCode::Busy, e.to_string()).with_data(json!({ "retry_after_ms": retry_after_ms }))
            }
        })?;
    // On the node that holds the fleet owner key, a paired browser or phone
    // gets a token every member trusts, so it sees (and, as far as its
    // profile allows, acts on) the whole fleet through this node; elsewhere
    // its authority ends at this node.
    let spec = profile.mint_spec(std::time::SystemTime::now(), app.node.node_id());
    let token = app
        .fleet
        .mint_fleet_wide(&spec)
        .unwrap_or_else(|| app.node.root().mint(&spec))
        .map_err(internal)?;
    let revocation_ids = capabilities::inspect_unverified(&token)
        .map(|i| i.revocation_ids)
        .map_err(internal)?;
    tracing::info!(profile = profile.as_str(), "a browser paired");
    Ok(json!({ "token": token, "profile": profile.as_str(), "revocation_ids": revocation_ids }))
}
