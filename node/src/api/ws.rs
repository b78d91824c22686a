//! The WebSocket transport (axum): `GET /v1/ws` upgrades, `GET /healthz`
//! answers probes. Text frames carry JSON-RPC; each request runs as its own
//! task (bounded per connection) so a slow call never blocks the others.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::Semaphore;

use super::App;
use super::conn::{Caller, Conn};

pub fn router(app: Arc<App>) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(console_api::WS_PATH, get(upgrade))
        .route("/guest", get(guest_upgrade))
        .with_state(app)
}

/// A guest container dialing back (Docker runtime); refused elsewhere.
async fn guest_upgrade(State(app): State<Arc<App>>, ws: WebSocketUpgrade) -> Response {
    let Some(registry) = app.guests.clone() else {
        return (StatusCode::NOT_FOUND, "this node runs no guests\n").into_response();
    };
    ws.max_message_size(guest::proto::MAX_TEXT_FRAME * 2)
        .on_upgrade(move |socket| registry.accept(socket))
}

async fn upgrade(State(app): State<Arc<App>>, headers: HeaderMap, ws: WebSocketUpgrade) -> Response {
    let Ok(permit) = app.connections.clone().try_acquire_owned() else {
        return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response();
    };
    let bearer = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    // A bad bearer token is refused at the upgrade with a reason; no token at
    // all upgrades unauthenticated (browsers call session.authenticate).
    let caller = match bearer {
        Some(token) => match app.verifier.verify(&token) {
            Ok(v) if app.node.any_revoked(&v.revocation_ids) => {
                return (StatusCode::UNAUTHORIZED, "token refused: it has been revoked\n").into_response();
            }
            Ok(v) => Caller::Token(v),
            Err(e) => return (StatusCode::UNAUTHORIZED, format!("token refused: {e}\n")).into_response(),
        },
        None => Caller::Anonymous,
    };
    // Frames above the soft limit are answered with -32600; far above it the
    // socket itself gives up (close code 1009).
    let hard_limit = app.limits.max_frame_bytes.saturating_mul(4);
    ws.protocols([console_api::SUBPROTOCOL_JSON])
        .max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .on_upgrade(move |socket| async move {
            serve(app, socket, caller).await;
            drop(permit);
        })
}

async fn serve(app: Arc<App>, socket: WebSocket, caller: Caller) {
    let (conn, mut out_rx, mut kill_rx) =
        Conn::new("ws", caller, app.limits.outbound_queue, app.limits.max_subscriptions);
    let (mut sink, mut stream) = socket.split();

    let writer = tokio::spawn(async move {
        loop {
            tokio::select! {
                msg = out_rx.recv() => match msg {
                    Some(text) => {
                        if sink.send(Message::Text(text.into())).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                changed = kill_rx.changed() => {
                    let reason = if changed.is_ok() { kill_rx.borrow().clone() } else { None };
                    if let Some(reason) = reason {
                        let _ = sink
                            .send(Message::Close(Some(CloseFrame { code: 1008, reason: reason.into() })))
                            .await;
                    }
                    return;
                }
            }
        }
    });

    let in_flight = Arc::new(Semaphore::new(app.limits.max_in_flight));
    while let Some(msg) = stream.next().await {
        let text = match msg {
            Ok(Message::Text(t)) => t.to_string(),
            Ok(Message::Binary(_)) => {
                let r = console_api::Response::err(
                    None,
                    console_api::RpcError::new(
                        console_api::ErrorCode::InvalidRequest,
                        "binary frames are not accepted on the warren.v1.json subprotocol",
                    ),
                );
                if let Ok(t) = serde_json::to_string(&r) {
                    conn.respond(t).await;
                }
                continue;
            }
            Ok(Message::Close(_)) => break,
            Ok(_) => continue,
            Err(e) => {
                tracing::debug!(error = %e, "websocket read ended");
                break;
            }
        };
        if writer.is_finished() {
            break;
        }
        if !super::spawn_request(&app, &conn, &in_flight, text).await {
            break;
        }
    }
    conn.close_all();
    // Let queued answers go out, then stop the writer.
    drop(conn);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
}
