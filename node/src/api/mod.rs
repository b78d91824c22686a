//! The JSON-RPC API: one dispatcher shared by the WebSocket and the Unix socket.
//! Each request is parsed, authenticated, routed to the node core, and answered
//! with a result or an error whose code and message say what was wrong.

pub mod auth;
pub mod cbor;
pub mod conn;
pub mod doors;
pub mod route;
pub mod tls;
pub mod unix;
pub mod ws;

use std::sync::Arc;

use console_api::{ErrorCode, Id, Request, Response, RpcError, methods as m};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::service::{Node, NodeError};
use conn::Conn;

/// What the server knows about itself, for `node.info`.
pub struct NodeIdentity {
    pub node_id: String,
    pub endpoint: String,
    pub started_at: u64,
    pub root_public_key: String,
}

/// Shared by every connection.
pub struct App {
    pub node: Arc<Node>,
    pub identity: NodeIdentity,
    pub verifier: Arc<capabilities::Verifier>,
    pub limits: crate::config::Limits,
    /// Authenticated connections (WebSocket and Unix socket).
    pub connections: Arc<tokio::sync::Semaphore>,
    /// WebSocket connections that have not authenticated yet.
    pub anonymous: doors::AnonymousPool,
    /// Guests dial `/guest` (Docker runtime only).
    pub guests: Option<Arc<crate::runtime::guest_link::GuestRegistry>>,
    /// One-time pairing codes of the web console.
    pub pairing: crate::console::pair::Pairing,
}

/// Parses `params` into `T`; the error names the offending field.
pub fn params<T: DeserializeOwned>(params: Option<Value>) -> Result<T, RpcError> {
    let value = match params {
        None | Some(Value::Null) => json!({}),
        Some(v @ Value::Object(_)) => v,
        Some(_) => return Err(RpcError::new(ErrorCode::InvalidParams, "params must be an object")),
    };
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner().to_string();
        let msg = if path == "." || path.is_empty() {
            format!("invalid params: {inner}")
        } else {
            format!("invalid params: {path}: {inner}")
        };
        RpcError::new(ErrorCode::InvalidParams, msg)
    })
}

impl From<NodeError> for RpcError {
    fn from(e: NodeError) -> RpcError {
        match e {
            NodeError::Invalid(m) => RpcError::new(ErrorCode::InvalidParams, m),
            NodeError::NotFound(m) => RpcError::new(ErrorCode::NotFound, m),
            NodeError::Conflict(m) => RpcError::new(ErrorCode::Conflict, m),
            NodeError::Ambiguous { message, candidates } => {
                RpcError::new(ErrorCode::Conflict, message).with_data(json!({ "candidates": candidates }))
            }
            NodeError::Forbidden(m) => {
                RpcError::new(ErrorCode::Forbidden, m.clone()).with_data(json!({ "failed_check": m }))
            }
            NodeError::Busy {
                message,
                retry_after_ms,
            } => RpcError::new(ErrorCode::Busy, message).with_data(json!({ "retry_after_ms": retry_after_ms })),
            NodeError::LaunchFailed {
                message,
                setting,
                conversation,
            } => {
                let mut data = serde_json::Map::new();
                if let Some(s) = setting {
                    data.insert("setting".into(), json!(s));
                }
                if !conversation.is_empty() {
                    data.insert("conversation".into(), json!(conversation));
                }
                RpcError::new(ErrorCode::LaunchFailed, message).with_data(Value::Object(data))
            }
            NodeError::Unreachable { node, message } => {
                RpcError::new(ErrorCode::Unreachable, message).with_data(json!({ "node": node }))
            }
            NodeError::PausedForBudget {
                message,
                retry_after_ms,
                state,
            } => {
                let mut data = json!({ "state": state });
                if let Some(ms) = retry_after_ms {
                    data["retry_after_ms"] = json!(ms);
                }
                RpcError::new(ErrorCode::PausedForBudget, message).with_data(data)
            }
            NodeError::Internal(m) => RpcError::new(ErrorCode::Internal, m),
        }
    }
}

/// The answer to a request over the size limit.
pub fn too_large(len: usize, limit: usize) -> Response {
    Response::err(
        None,
        RpcError::new(
            ErrorCode::InvalidRequest,
            format!("request of {len} bytes is over the limit of {limit} bytes"),
        ),
    )
}

/// Answers one request in its own task, at most `in_flight` at a time per
/// connection (waits for a slot). False when the connection is going away.
pub async fn spawn_request(
    app: &Arc<App>,
    conn: &Arc<Conn>,
    in_flight: &Arc<tokio::sync::Semaphore>,
    text: String,
) -> bool {
    let Ok(permit) = in_flight.clone().acquire_owned().await else {
        return false;
    };
    let app = app.clone();
    let conn = conn.clone();
    tokio::spawn(async move {
        answer(&app, &conn, &text).await;
        drop(permit);
    });
    true
}

/// Handles one request and queues its response (if it has one).
pub async fn answer(app: &Arc<App>, conn: &Arc<Conn>, text: &str) {
    if let Some(resp) = handle_text(app, conn, text).await
        && let Ok(t) = serde_json::to_string(&resp)
    {
        conn.respond(t).await;
    }
}

/// Parses one text frame or line and answers it. `None` for notifications.
pub async fn handle_text(app: &Arc<App>, conn: &Arc<Conn>, text: &str) -> Option<Response> {
    if text.len() > app.limits.max_frame_bytes {
        return Some(too_large(text.len(), app.limits.max_frame_bytes));
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Some(Response::err(
                None,
                RpcError::new(ErrorCode::Parse, format!("parse error: {e}")),
            ));
        }
    };
    if value.is_array() {
        return Some(Response::err(
            None,
            RpcError::new(ErrorCode::InvalidRequest, "batch requests are not supported"),
        ));
    }
    let id = value
        .get("id")
        .and_then(|v| serde_json::from_value::<Id>(v.clone()).ok());
    let req: Request = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            return Some(Response::err(
                id,
                RpcError::new(ErrorCode::InvalidRequest, format!("invalid request: {e}")),
            ));
        }
    };
    if req.jsonrpc != "2.0" {
        return Some(Response::err(
            req.id,
            RpcError::new(ErrorCode::InvalidRequest, "jsonrpc must be \"2.0\""),
        ));
    }
    let params = match route::route(app, conn, &req).await {
        route::Routed::Here(p) => p,
        route::Routed::Answered(resp) => return req.id.is_some().then_some(resp),
        route::Routed::Failed(e) => return req.id.map(|id| Response::err(Some(id), e)),
    };
    let started = std::time::Instant::now();
    let method = req.method.clone();
    let result = match (&req.id, method.as_str()) {
        // Requests that may build a guest image report its progress.
        (Some(id), m::CONVERSATION_START | m::CONVERSATION_CONTINUE) => {
            let (sink, mut rx) = crate::progress::Sink::new();
            let (conn2, id2) = (conn.clone(), id.clone());
            let forward = tokio::spawn(async move {
                while let Some(r) = rx.recv().await {
                    conn2.notify_lossy(
                        m::NOTIFY_REQUEST_PROGRESS,
                        json!({ "id": id2, "message": r.message, "elapsed_ms": r.elapsed_ms }),
                    );
                }
            });
            let result = sink.scope(call(app, conn, &req.method, params)).await;
            // Every report goes out before the answer.
            let _ = forward.await;
            result
        }
        _ => call(app, conn, &req.method, params).await,
    };
    tracing::debug!(
        method = %method,
        transport = conn.transport(),
        ok = result.is_ok(),
        code = result.as_ref().err().map(|e| e.code),
        micros = started.elapsed().as_micros() as u64,
        "request"
    );
    let id = req.id?;
    Some(match result {
        Ok(v) => Response::ok(Some(id), v),
        Err(e) => Response::err(Some(id), e),
    })
}

pub(super) async fn call(app: &Arc<App>, conn: &Arc<Conn>, method: &str, p: Option<Value>) -> Result<Value, RpcError> {
    if method == m::SESSION_AUTHENTICATE {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Auth {
            token: String,
        }
        let a: Auth = params(p)?;
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
        return Ok(json!({ "authenticated": true }));
    }
    if method == m::SESSION_PAIR {
        return pair(app, conn, params(p)?);
    }
    auth::check(app, conn, method, p.as_ref()).await?;
    let node = &app.node;
    if let Some(agent) = conn.speaks_for() {
        node.instance_tool_call(&agent, method, p.as_ref()).await?;
    }
    let v = match method {
        m::NODE_INFO => {
            let (peer_id, fleet) = node.fleet_identity().await;
            let mut info = serde_json::to_value(console_api::NodeInfo {
                node_id: app.identity.node_id.clone(),
                peer_id: Some(peer_id),
                version: env!("CARGO_PKG_VERSION").to_string(),
                protocol_version: console_api::PROTOCOL_VERSION,
                // What clients should use: the published one when set.
                endpoint: node
                    .published_endpoint()
                    .unwrap_or_else(|| app.identity.endpoint.clone()),
                runtime: node.runtime_name().to_string(),
                started_at: app.identity.started_at,
                root_public_key: app.identity.root_public_key.clone(),
                auth_limit_hits: app.verifier.limit_hits(),
            })
            .map_err(internal)?;
            info["fleet"] = json!(fleet);
            info
        }
        m::FLEET_NODES => node.fleet_nodes().await?,
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
            let p: P = params(p)?;
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
            let endpoint = node
                .published_endpoint()
                .unwrap_or_else(|| app.identity.endpoint.clone());
            json!({
                "code": app.pairing.issue(profile, crate::util::now_ms()),
                "profile": profile.as_str(),
                "url": crate::console::console_url(&endpoint),
                "expires_in_ms": CODE_TTL_MS,
            })
        }
        m::FLEET_INVITE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                #[serde(default)]
                ttl_secs: Option<u64>,
            }
            let ttl = params::<P>(p)?.ttl_secs.unwrap_or(3600);
            if ttl == 0 || ttl > 7 * 24 * 3600 {
                return Err(RpcError::new(
                    ErrorCode::InvalidParams,
                    format!("ttl_secs: {ttl} is outside 1..=604800 (a week)"),
                ));
            }
            node.fleet_invite(std::time::Duration::from_secs(ttl)).await?
        }
        m::FLEET_REMOVE => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                node: String,
            }
            node.fleet_remove(&params::<P>(p)?.node).await?
        }
        m::FLEET_JOIN => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                invite: String,
            }
            node.fleet_join(&params::<P>(p)?.invite).await?
        }
        m::AGENT_CREATE => json!({ "agent": node.agent_create(params(p)?).await? }),
        m::AGENT_GET => json!({ "agent": node.agent_get(&params::<console_api::AgentRef>(p)?.agent).await? }),
        m::AGENT_LIST => {
            no_params(p)?;
            json!({ "agents": node.agent_list().await })
        }
        m::AGENT_UPDATE => json!({ "agent": node.agent_update(params(p)?).await? }),
        m::AGENT_ARCHIVE => {
            json!({ "agent": node.agent_archive(&params::<console_api::AgentRef>(p)?.agent).await? })
        }
        m::CONVERSATION_START => {
            json!({ "conversation": node.conversation_start(&params::<console_api::AgentRef>(p)?.agent).await? })
        }
        m::CONVERSATION_CONTINUE => json!({ "conversation": node.conversation_continue(params(p)?).await? }),
        m::CONVERSATION_PAUSE => json!({ "conversation": node.conversation_pause(&conv_ref(p)?).await? }),
        m::CONVERSATION_TERMINATE => json!({ "conversation": node.conversation_terminate(&conv_ref(p)?).await? }),
        m::CONVERSATION_GET => json!({ "conversation": node.conversation_get(&conv_ref(p)?).await? }),
        m::CONVERSATION_LIST => json!({ "conversations": node.conversation_list(params(p)?).await? }),
        m::CONVERSATION_SCREEN => {
            let read: console_api::ScreenRead = params(p)?;
            let mut screen = node.screen(&read).await?;
            crate::redact::redact_screen(&node.store().redaction().matcher(), &mut screen);
            serde_json::to_value(screen).map_err(internal)?
        }
        m::CONVERSATION_SEND_MESSAGE => {
            let sent = match conn.speaks_for() {
                // An agent's own token (a monitor advising): never a human.
                Some(agent) => node.send_advice(params(p)?, &agent).await?,
                None => {
                    let msg: console_api::SendMessage = params(p)?;
                    match msg.advice_from.clone() {
                        // A member forwards its monitor's advice: the home
                        // prefixes and attributes it (only then).
                        Some(monitor) if conn.transport() == "fabric" => node.send_remote_advice(msg, &monitor).await?,
                        Some(_) => {
                            return Err(RpcError::new(
                                ErrorCode::InvalidParams,
                                "advice_from: only a member forwarding its monitor's advice sets it",
                            ));
                        }
                        None => node.send_message(msg, conn.speaker()).await?,
                    }
                }
            };
            serde_json::to_value(sent).map_err(internal)?
        }
        m::CONVERSATION_SEND_KEYS => {
            node.send_keys(params(p)?).await?;
            json!({ "sent": true })
        }
        m::CONVERSATION_RESIZE => {
            node.resize(params(p)?).await?;
            json!({ "resized": true })
        }
        m::TRANSCRIPT_READ => serde_json::to_value(node.transcript_read(params(p)?).await?).map_err(internal)?,
        m::TRANSCRIPT_SUBSCRIBE => {
            let sp: console_api::TranscriptSubscribe = params(p)?;
            node.check_subscribe_target(&sp).await?;
            json!({ "subscription": conn.subscribe_transcript(app, sp)? })
        }
        m::EVENTS_SUBSCRIBE => {
            let e: console_api::EventsSubscribe = params(p)?;
            json!({ "subscription": conn.subscribe_events(app, e.kinds, e.agent)? })
        }
        m::TERMINAL_SUBSCRIBE => {
            let id = conv_ref(p)?;
            let session = node.live_session(&id).await?;
            json!({ "subscription": conn.subscribe_terminal(session, node.store().redaction().clone())? })
        }
        m::SUPERVISION_GET => {
            node.supervision_get(params::<console_api::AgentFilter>(p)?.agent.as_deref())
                .await?
        }
        m::SUPERVISION_SET => node.supervision_set(params(p)?).await?,
        m::SUPERVISION_STATUS => {
            node.supervision_status(params::<console_api::AgentFilter>(p)?.agent.as_deref())
                .await?
        }
        m::SUPERVISION_HOLDS => {
            let mut holds = node.supervision_holds(params::<console_api::AgentFilter>(p)?.agent.as_deref());
            crate::redact::redact_value(&node.store().redaction().matcher(), &mut holds);
            holds
        }
        m::SUPERVISION_ANSWER => {
            let a: console_api::SupervisionAnswer = params(p)?;
            if a.learn && !conn.is_local() {
                return Err(RpcError::new(
                    ErrorCode::LocalOnly,
                    "learn: learning a rule is local-only: call supervision.answer on the node's Unix socket (warren.sock)",
                ));
            }
            node.supervision_answer(&a.hold, &a.decision, a.learn).await?
        }
        m::SUPERVISION_RULES => {
            node.supervision_rules(&params::<console_api::AgentRef>(p)?.agent)
                .await?
        }
        m::AGENT_LOGIN => {
            json!({ "conversation": node.agent_login(&params::<console_api::AgentRef>(p)?.agent).await? })
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
            let s: SecretParams = params(p)?;
            let need = |v: Option<String>, field: &str| {
                v.ok_or_else(|| {
                    RpcError::new(
                        ErrorCode::InvalidParams,
                        format!("invalid params: missing field `{field}`"),
                    )
                })
            };
            match method {
                m::AGENT_SECRET_SET => {
                    let (name, value) = (need(s.name, "name")?, need(s.value, "value")?);
                    node.agent_secret_set(&s.agent, &name, &value).await?
                }
                m::AGENT_SECRET_UNSET => node.agent_secret_unset(&s.agent, &need(s.name, "name")?).await?,
                _ => node.agent_secret_list(&s.agent).await?,
            }
        }
        m::SUPERVISION_LEARN => {
            let r: console_api::SupervisionRule = params(p)?;
            node.supervision_learn(&r.agent, &r.pattern, true, "local admin via supervision.learn")
                .await?
        }
        m::SUPERVISION_FORGET => {
            let r: console_api::SupervisionRule = params(p)?;
            node.supervision_learn(&r.agent, &r.pattern, false, "local admin via supervision.forget")
                .await?
        }
        m::SUPERVISION_AUDIT => {
            let a: console_api::SupervisionAudit = params(p)?;
            node.supervision_audit(a.agent.as_deref(), a.limit, a.before_id).await?
        }
        m::SUPERVISION_HOOK => {
            let h: console_api::SupervisionHook = params(p)?;
            node.supervision_hook(&h.conversation, &h.event, conn.speaks_for().as_deref())
                .await?
        }
        m::SUPERVISION_NUDGE => {
            let n: console_api::SupervisionNudge = params(p)?;
            node.supervision_nudge(&n.agent, n.conversation.as_deref(), n.text)
                .await?
        }
        m::MAILBOX_SEND => node.mail_send(params(p)?, conn.speaks_for().as_deref()).await?,
        m::MAILBOX_INBOX => node.mail_inbox(params(p)?).await?,
        m::MAILBOX_ACK => node.mail_ack(params(p)?).await?,
        m::TOOL_INVOKE => {
            node.tool_invoke(params(p)?, conn.speaks_for().as_deref(), conn.speaks_in().as_deref())
                .await?
        }
        m::TOOL_LOG => node.tool_log(p.as_ref().unwrap_or(&Value::Null)).await?,
        m::RECALL_SEARCH => node.recall_search(params(p)?).await?,
        m::RECALL_STASH => node.recall_stash(params(p)?).await?,
        m::RECALL_FORGET => node.recall_forget(params(p)?).await?,
        m::TOKEN_MINT => serde_json::to_value(auth::mint(app, conn, params(p)?)?).map_err(internal)?,
        m::TOKEN_INSPECT => {
            serde_json::to_value(auth::inspect(app, &params::<console_api::TokenRef>(p)?.token)).map_err(internal)?
        }
        m::TOKEN_REVOKE => {
            let r: console_api::TokenRevoke = params(p)?;
            node.revoke_fleet_wide(vec![r.revocation_id]).await?;
            json!({ "revoked": true })
        }
        m::USAGE_GET => node.usage_get(params(p)?).await?,
        m::SPEND_HISTORY => node.spend_history(params(p)?).await?,
        m::BUDGET_GET => node.budget_get(&params::<console_api::AgentRef>(p)?.agent).await?,
        m::BUDGET_SET => node.budget_set(params(p)?).await?,
        m::BUDGET_TOPUP => node.budget_topup(params(p)?).await?,
        m::MONITOR_ATTACH => {
            let spec: monitor::AttachmentSpec = params(p)?;
            auth::may_observe_target(app, conn, &spec)?;
            // A target on another member: the caller's forwarding token.
            let delegate = match spec.target.agent.as_deref() {
                Some(a) => match node.remote_home(a).await {
                    // The local admin's delegation is signed by the owner key
                    // for the attachment alone, with no expiry (its
                    // forwarding token lives minutes).
                    Ok(Some((home, name))) if route::is_local_admin(app, conn) => {
                        Some(node.owner_delegation(&home, &name, spec.inject.unwrap_or(true))?)
                    }
                    Ok(Some((home, _))) => Some(route::token_for(app, conn, &home).await?),
                    _ => None,
                },
                None => None,
            };
            node.monitor_attach(spec, delegate).await?
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
            let l: P = params(p)?;
            node.monitor_list(l.monitor.as_deref(), l.target.as_deref()).await?
        }
        m::MONITOR_DETACH | m::MONITOR_REARM => {
            #[derive(serde::Deserialize)]
            #[serde(deny_unknown_fields)]
            struct P {
                attachment: String,
            }
            let a: P = params(p)?;
            if method == m::MONITOR_DETACH {
                node.monitor_detach(&a.attachment).await?
            } else {
                node.monitor_rearm(&a.attachment).await?
            }
        }
        m::SUBSCRIPTION_CANCEL => {
            let s: console_api::SubscriptionRef = params(p)?;
            conn.cancel(&s.subscription)?;
            json!({ "cancelled": true })
        }
        other => {
            return Err(RpcError::new(
                ErrorCode::MethodNotFound,
                format!("method {other:?} is not served by this node yet"),
            ));
        }
    };
    Ok(v)
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
        .redeem(&p.code, source, crate::util::now_ms())
        .map_err(|e| match e {
            PairError::Refused => RpcError::new(ErrorCode::Unauthenticated, e.to_string()),
            PairError::LockedOut { retry_after_ms } => {
                RpcError::new(ErrorCode::Busy, e.to_string()).with_data(json!({ "retry_after_ms": retry_after_ms }))
            }
        })?;
    let token = app
        .node
        .root()
        .mint(&profile.mint_spec(std::time::SystemTime::now(), app.node.node_id()))
        .map_err(internal)?;
    let revocation_ids = capabilities::inspect_unverified(&token)
        .map(|i| i.revocation_ids)
        .map_err(internal)?;
    tracing::info!(profile = profile.as_str(), "a browser paired");
    Ok(json!({ "token": token, "profile": profile.as_str(), "revocation_ids": revocation_ids }))
}

fn conv_ref(p: Option<Value>) -> Result<String, RpcError> {
    Ok(params::<console_api::ConversationRef>(p)?.conversation)
}

fn no_params(p: Option<Value>) -> Result<(), RpcError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Empty {}
    params::<Empty>(p).map(|_| ())
}

fn internal(e: impl std::fmt::Display) -> RpcError {
    tracing::error!(error = %e, "internal error");
    RpcError::new(ErrorCode::Internal, "internal error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_errors_name_the_field() {
        let err = params::<console_api::SendMessage>(Some(json!({"conversation": "c", "text": 5}))).expect_err("type");
        assert_eq!(err.code, -32602);
        assert!(err.message.contains("text"), "{}", err.message);
        let err = params::<console_api::SendMessage>(Some(json!({"conversation": "c"}))).expect_err("missing");
        assert!(err.message.contains("text"), "{}", err.message);
        let err = params::<console_api::AgentRef>(Some(json!({"agent": "a", "agnet": 1}))).expect_err("unknown");
        assert!(err.message.contains("agnet"), "{}", err.message);
        let err = params::<console_api::AgentRef>(Some(json!([1]))).expect_err("array");
        assert!(err.message.contains("object"));
    }

    #[test]
    fn every_listed_method_is_routed() {
        // The router's match arms and the public list must agree.
        let src = include_str!("mod.rs");
        for method in m::ALL {
            let konst = method.replace(['.'], "_").to_uppercase();
            let konst = konst
                .replace("SENDMESSAGE", "SEND_MESSAGE")
                .replace("SENDKEYS", "SEND_KEYS");
            assert!(
                src.contains(&format!("m::{konst}")),
                "method {method} ({konst}) is not routed"
            );
        }
    }
}
