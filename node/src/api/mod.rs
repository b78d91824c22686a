//! The JSON-RPC API: one dispatcher shared by the WebSocket, the Unix socket
//! and members' forwarded calls. Each request is parsed, routed (here, to the
//! member that homes what it names, or to every member: `routing/`), then
//! authorized and answered by its method's family (`dispatch/`), with a
//! result or an error whose code and message say what was wrong.

pub mod auth;
pub mod cbor;
pub mod conn;
mod dispatch;
pub mod doors;
pub mod routing;
pub mod tls;
pub mod unix;
pub mod ws;

use std::sync::Arc;

use console_api::{ErrorCode, Id, Request, Response, RpcError, methods as m};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use crate::service::{Node, NodeError};
use conn::Conn;
use routing::Routed;

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
    /// The subsystems over the core.
    pub conversations: Arc<crate::conversations::Conversations>,
    pub supervisor: Arc<crate::supervise::Supervisor>,
    pub monitors: Arc<crate::monitors::Monitors>,
    pub tasks: Arc<crate::work::Tasks>,
    pub mail: Arc<crate::mail::Mail>,
    pub fleet: Arc<crate::fleet::Fleet>,
    pub spend: Arc<crate::spend::Spend>,
    pub secrets: Arc<crate::secrets::Secrets>,
    pub egress: Arc<crate::egress::Gate>,
    pub tools: Arc<crate::tools::Tools>,
    pub identity: NodeIdentity,
    pub verifier: Arc<capabilities::Verifier>,
    pub limits: crate::config::Limits,
    /// Authenticated connections (WebSocket and Unix socket).
    pub connections: Arc<tokio::sync::Semaphore>,
    /// WebSocket connections that have not authenticated yet.
    pub anonymous: doors::AnonymousPool,
    /// Guests dial `/guest` (Docker runtime only).
    pub guests: Option<Arc<node_runtime::runtime::guest_link::GuestRegistry>>,
    /// One-time pairing codes of the web console.
    pub pairing: crate::console::pair::Pairing,
    /// The calling side of routing: where calls about other members go.
    pub router: routing::Router,
    /// Web Push subscriptions and their deliveries.
    pub push: Arc<crate::push::Push>,
}

/// The dispatcher as the home side of routing calls it (`routing::Home` is
/// built with one): a member's forwarded call is answered as this node's
/// own WebSocket answers it.
pub struct ApiDispatch(pub Arc<App>);

impl routing::Dispatch for ApiDispatch {
    fn answer<'a>(&'a self, conn: &'a Arc<Conn>, text: &'a str) -> BoxFuture<'a, Option<Response>> {
        Box::pin(handle_text(&self.0, conn, text))
    }
}

/// The push subsystem's way to follow needs-yous: a connection of its own
/// with the subscription's token, answered by this same dispatcher (a
/// fleet-wide `events.subscribe`), so it is sent what that token may observe.
pub struct PushFollow(pub Arc<App>);

/// Ends a push follower's connection with it.
struct CloseOnDrop(Arc<Conn>);

impl Drop for CloseOnDrop {
    fn drop(&mut self) {
        self.0.close_all();
    }
}

impl crate::push::Follow for PushFollow {
    fn follow<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<crate::push::Following, crate::push::Refused>> {
        use crate::push::Refused;
        Box::pin(async move {
            let app = &self.0;
            let (conn, notes, cut) = Conn::new("push", conn::Caller::Anonymous, app.limits.outbound_queue, 4);
            conn.authenticate(&app.verifier, token, |ids| app.node.any_revoked(ids))
                .map_err(|e| Refused::Token(e.message))?;
            let conn::Caller::Token(verified) = conn.caller() else {
                return Err(Refused::Token("no token".into()));
            };
            let ask = json!({
                "jsonrpc": "2.0", "id": 1, "method": m::EVENTS_SUBSCRIBE,
                "params": { "fleet": true, "kinds": [m::EVENT_SUPERVISION_NEEDS_YOU, m::EVENT_FLEET_CHANGED] },
            })
            .to_string();
            let opened = handle_text(app, &conn, &ask).await;
            let missing = match opened.as_ref().and_then(|r| r.error.as_ref()) {
                None => opened
                    .as_ref()
                    .and_then(|r| r.result.as_ref())
                    .and_then(|v| v["unreachable"].as_array())
                    .map_or(0, Vec::len),
                Some(e) if e.code == ErrorCode::Unauthenticated.code() || e.code == ErrorCode::Forbidden.code() => {
                    return Err(Refused::Token(e.message.clone()));
                }
                Some(e) => return Err(Refused::Now(e.message.clone())),
            };
            // Listed after the subscription opened, so a hold raised before
            // it is here and one raised since is relayed (or both: the
            // follower pushes a hold once).
            let list = json!({
                "jsonrpc": "2.0", "id": 2, "method": m::SUPERVISION_HOLDS, "params": { "fleet": true },
            })
            .to_string();
            let held = handle_text(app, &conn, &list)
                .await
                .and_then(|r| r.result)
                .and_then(|mut v| v.get_mut("holds").and_then(Value::as_array_mut).map(std::mem::take))
                .unwrap_or_default();
            // Notifications may flow: the subscription's answer is in.
            conn.open_gates();
            Ok(crate::push::Following {
                notes,
                cut,
                token: verified,
                held,
                missing,
                guard: Box::new(CloseOnDrop(conn)),
            })
        })
    }
}

pub use console_api::rpc::params;

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
    let method = m::find(&req.method);
    let params = match app.router.route(conn, method, &req).await {
        Routed::Here(p) => p,
        Routed::FanOut { params, .. } if let Some(spec) = method.filter(|m| m.stream) => {
            // Authorized here as a local call would be; each member judges
            // the caller's token for its own part.
            let answer = match dispatch::authorize(app, conn, spec, params.as_ref()).await {
                Ok(()) => app.router.subscribe_fleet_events(&app.node, conn, &req, params).await,
                Err(e) => Response::err(req.id.clone(), e),
            };
            return req.id.is_some().then_some(answer);
        }
        Routed::FanOut { list, params } => {
            let answer = match dispatch::call(app, conn, &req.method, params.clone()).await {
                Ok(local) => app.router.merge(conn, &req, list, params, local).await,
                Err(e) => Response::err(req.id.clone(), e),
            };
            return req.id.is_some().then_some(answer);
        }
        Routed::Answered(resp) => return req.id.is_some().then_some(resp),
        Routed::Failed(e) => return req.id.map(|id| Response::err(Some(id), e)),
    };
    let started = std::time::Instant::now();
    let method = req.method.clone();
    let result = match (&req.id, method.as_str()) {
        // Requests that may build a guest image report its progress.
        (Some(id), m::CONVERSATION_START | m::CONVERSATION_CONTINUE) => {
            let (sink, mut rx) = node_runtime::progress::Sink::new();
            let (conn2, id2) = (conn.clone(), id.clone());
            let forward = tokio::spawn(async move {
                while let Some(r) = rx.recv().await {
                    conn2.notify_lossy(
                        m::NOTIFY_REQUEST_PROGRESS,
                        json!({ "id": id2, "message": r.message, "elapsed_ms": r.elapsed_ms }),
                    );
                }
            });
            let result = sink.scope(dispatch::call(app, conn, &req.method, params)).await;
            // Every report goes out before the answer.
            let _ = forward.await;
            result
        }
        _ => dispatch::call(app, conn, &req.method, params).await,
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
}
