//! The WebSocket transport (axum): `GET /v1/ws` upgrades, `GET /healthz`
//! answers probes. JSON-RPC travels in text frames (`warren.v1.json`, also
//! when no subprotocol is asked for) or as CBOR in binary frames
//! (`warren.v1.cbor`, see `cbor.rs`); each request runs as its own task
//! (bounded per connection) so a slow call never blocks the others. The
//! same listener serves the web console (`console::http`), and every request
//! passes the browser guard first.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::Semaphore;

use super::conn::{Caller, Conn};
use super::doors::Admission;
use super::{App, cbor};

/// How a connection's messages are framed, fixed at the upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// `warren.v1.json`: JSON text frames.
    Json,
    /// `warren.v1.cbor`: CBOR binary frames.
    Cbor,
}

/// Every route of one listener, behind the browser guard of `policy`
/// (its Host/Origin allowlists) and with the security headers on every
/// response (`console::http`).
pub fn router(app: Arc<App>, policy: crate::console::guard::Policy) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok\n" }))
        .route(console_api::WS_PATH, get(upgrade))
        .route("/guest", get(guest_upgrade))
        .merge(crate::console::http::routes())
        .with_state(app)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(policy),
            crate::console::http::guard,
        ))
}

/// A guest container dialing back (Docker runtime); refused elsewhere. An
/// address over its rate of hellos is turned away before the upgrade.
async fn guest_upgrade(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    ws: WebSocketUpgrade,
) -> Response {
    let Some(registry) = app.guests.clone() else {
        return (StatusCode::NOT_FOUND, "this node runs no guests\n").into_response();
    };
    let source = super::doors::source_key(peer.ip());
    if !registry.admit_hello(source) {
        return (
            StatusCode::TOO_MANY_REQUESTS,
            "too many guest hellos from this address\n",
        )
            .into_response();
    }
    ws.max_message_size(guest::proto::MAX_TEXT_FRAME * 2)
        .on_upgrade(move |socket| registry.accept(socket, source))
}

async fn upgrade(
    State(app): State<Arc<App>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
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
            Ok(v) => match capabilities::usable_at(&v, std::time::SystemTime::now()) {
                Ok(()) => Caller::Token(v),
                Err(e) => return (StatusCode::UNAUTHORIZED, format!("token refused: {e}\n")).into_response(),
            },
            Err(e) => return (StatusCode::UNAUTHORIZED, format!("token refused: {e}\n")).into_response(),
        },
        None => Caller::Anonymous,
    };
    // A token holder takes an authenticated place; a client with none yet
    // waits in the small unauthenticated pool (see `doors`).
    let admission = match &caller {
        Caller::Anonymous => match app.anonymous.admit(peer.ip()) {
            Ok(slot) => Admission::Anonymous(slot),
            Err(e) => return (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response(),
        },
        _ => match app.connections.clone().try_acquire_owned() {
            Ok(place) => Admission::Authenticated(place),
            Err(_) => return (StatusCode::SERVICE_UNAVAILABLE, "too many connections\n").into_response(),
        },
    };
    // Frames above the soft limit are answered with -32600; far above it the
    // socket itself gives up (close code 1009).
    let hard_limit = app.limits.max_frame_bytes.saturating_mul(4);
    // axum picks the first of these the client offers, whatever the client's
    // own order: a client offering both gets JSON, the default.
    let ws = ws.protocols([console_api::SUBPROTOCOL_JSON, console_api::SUBPROTOCOL_CBOR]);
    let framing = match ws.selected_protocol() {
        Some(p) if p.as_bytes() == console_api::SUBPROTOCOL_CBOR.as_bytes() => Framing::Cbor,
        _ => Framing::Json,
    };
    ws.max_message_size(hard_limit)
        .max_frame_size(hard_limit)
        .on_upgrade(move |socket| serve(app, socket, caller, framing, admission, peer.ip()))
}

/// Answers `error` (a frame that is no request) on `conn`'s queue.
async fn reject(conn: &Conn, error: console_api::Response) {
    if let Ok(t) = serde_json::to_string(&error) {
        conn.respond(t).await;
    }
}

fn invalid_request(message: &str) -> console_api::Response {
    console_api::Response::err(
        None,
        console_api::RpcError::new(console_api::ErrorCode::InvalidRequest, message),
    )
}

async fn serve(app: Arc<App>, socket: WebSocket, caller: Caller, framing: Framing, admission: Admission, peer: IpAddr) {
    let (conn, mut out_rx, mut kill_rx) =
        Conn::new("ws", caller, app.limits.outbound_queue, app.limits.max_subscriptions);
    conn.set_peer(peer);
    let anonymous = matches!(admission, Admission::Anonymous(_));
    conn.admit(admission);
    let mut killed = conn.killed();
    // An unauthenticated connection has until the deadline to authenticate.
    let deadline = anonymous.then(|| {
        let (conn, after) = (Arc::downgrade(&conn), app.anonymous.deadline);
        tokio::spawn(async move {
            tokio::time::sleep(after).await;
            if let Some(conn) = conn.upgrade()
                && matches!(conn.caller(), Caller::Anonymous)
            {
                conn.cut_off(&format!(
                    "unauthenticated: call session.authenticate within {} ms of connecting",
                    after.as_millis()
                ));
            }
        })
    });
    let (mut sink, mut stream) = socket.split();

    let writer = tokio::spawn(async move {
        loop {
            tokio::select! {
                msg = out_rx.recv() => match msg {
                    Some(text) => {
                        // The queue holds JSON text for either framing, so the
                        // queue bound and the slow-client cut-off are the same.
                        let frame = match framing {
                            Framing::Json => Message::Text(text.into()),
                            Framing::Cbor => match cbor::encode_message(&text) {
                                Ok(bytes) => Message::Binary(bytes.into()),
                                Err(e) => {
                                    tracing::error!(error = %e, "a queued message could not be sent as CBOR");
                                    continue;
                                }
                            },
                        };
                        if sink.send(frame).await.is_err() {
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
    loop {
        // A connection that is cut off stops reading at once, whether or not
        // its client answers the close.
        let msg = tokio::select! {
            msg = stream.next() => match msg {
                Some(m) => m,
                None => break,
            },
            _ = killed.wait_for(Option::is_some) => break,
        };
        let text = match (framing, msg) {
            (Framing::Json, Ok(Message::Text(t))) => t.to_string(),
            (Framing::Json, Ok(Message::Binary(_))) => {
                reject(
                    &conn,
                    invalid_request("binary frames are not accepted on the warren.v1.json subprotocol"),
                )
                .await;
                continue;
            }
            // Converted to the JSON text a JSON client would have sent, then
            // answered by the same dispatcher (and authorization).
            (Framing::Cbor, Ok(Message::Binary(b))) => match cbor::request_text(&b, app.limits.max_frame_bytes) {
                Ok(text) => text,
                Err(answer) => {
                    reject(&conn, *answer).await;
                    continue;
                }
            },
            (Framing::Cbor, Ok(Message::Text(_))) => {
                reject(
                    &conn,
                    invalid_request(
                        "text frames are not accepted on the warren.v1.cbor subprotocol: send CBOR in binary frames",
                    ),
                )
                .await;
                continue;
            }
            (_, Ok(Message::Close(_))) => break,
            (_, Ok(_)) => continue,
            (_, Err(e)) => {
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
    conn.release_admission();
    if let Some(d) = deadline {
        d.abort();
    }
    // Let queued answers go out, then stop the writer.
    drop(conn);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
}
