//! A fake Anthropic Messages API server, good enough to run the real Claude Code CLI offline.
//!
//! `POST /v1/messages` answers with a canned reply chosen by `decide` from the last user
//! message, streamed as server-sent events (or one JSON message when `stream` is false).
//! `POST /v1/messages/count_tokens` answers a fixed count, and every other request gets `{}`
//! so that Claude Code's probes never see a 404.

mod decide;
mod sse;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderName, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use decide::decide;
pub use sse::parse_events;
use sse::{message_json, sse_body};

/// Largest request body accepted; larger ones get a 413.
const BODY_LIMIT: usize = 8 * 1024 * 1024;

/// A running fake model server; the server stops when this is dropped.
pub struct FakeModel {
    addr: SocketAddr,
    served: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl FakeModel {
    /// Binds `addr` (port 0 picks any free port) and serves in a spawned tokio task.
    pub async fn start(addr: SocketAddr) -> anyhow::Result<FakeModel> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let addr = listener.local_addr()?;
        let served = Arc::new(AtomicU64::new(0));
        let app = router(Arc::clone(&served));
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::error!(%err, "fake model server stopped");
            }
        });
        Ok(FakeModel { addr, served, task })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give Claude Code as `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        base_url(self.addr)
    }

    /// Number of `/v1/messages` requests answered with a reply so far.
    pub fn requests(&self) -> u64 {
        self.served.load(Ordering::SeqCst)
    }
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves on 127.0.0.1:`port` in the foreground until ctrl-c, announcing the URL on stdout first.
pub async fn run(port: u16) -> anyhow::Result<()> {
    let model = FakeModel::start(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "fake-model listening on {}", model.base_url())?;
    stdout.flush()?;
    tokio::signal::ctrl_c().await.context("waiting for ctrl-c")?;
    Ok(())
}

/// The base URL for a bound address; an unspecified IP is reached through loopback.
fn base_url(addr: SocketAddr) -> String {
    let ip = if addr.ip().is_unspecified() {
        IpAddr::V4(Ipv4Addr::LOCALHOST)
    } else {
        addr.ip()
    };
    format!("http://{}", SocketAddr::new(ip, addr.port()))
}

/// Which endpoint a request is for.
#[derive(Debug, PartialEq, Eq)]
enum Endpoint {
    Messages,
    CountTokens,
    Other,
}

/// Routes on method and path only; the query string is ignored.
fn endpoint(method: &Method, path: &str) -> Endpoint {
    match (method, path.trim_end_matches('/')) {
        (&Method::POST, "/v1/messages") => Endpoint::Messages,
        (&Method::POST, "/v1/messages/count_tokens") => Endpoint::CountTokens,
        _ => Endpoint::Other,
    }
}

fn router(served: Arc<AtomicU64>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(served)
}

async fn handle(
    State(served): State<Arc<AtomicU64>>,
    method: Method,
    uri: Uri,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    tracing::debug!(%method, %uri, "fake model request");
    let body = match body {
        Ok(body) => body,
        Err(rejection) => return error(rejection.status(), &rejection.body_text()),
    };
    match endpoint(&method, uri.path()) {
        Endpoint::Messages => messages(&served, &body),
        Endpoint::CountTokens => json_response(StatusCode::OK, &json!({"input_tokens": sse::INPUT_TOKENS})),
        Endpoint::Other => json_response(StatusCode::OK, &json!({})),
    }
}

/// Answers one Messages API request.
fn messages(served: &AtomicU64, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(err) => return error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {err}")),
    };
    let seq = served.fetch_add(1, Ordering::SeqCst) + 1;
    let reply = decide(&request);
    let model = request.get("model").and_then(Value::as_str).unwrap_or("claude-fake");
    tracing::debug!(seq, ?reply, "fake model reply");
    let request_id = (HeaderName::from_static("request-id"), format!("req_fake_{seq}"));
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream".to_owned()),
            (header::CACHE_CONTROL, "no-cache".to_owned()),
            request_id,
        ];
        (headers, sse_body(&reply, model, seq)).into_response()
    } else {
        let headers = [(header::CONTENT_TYPE, "application/json".to_owned()), request_id];
        (headers, message_json(&reply, model, seq).to_string()).into_response()
    }
}

/// An Anthropic-style error body.
fn error(status: StatusCode, message: &str) -> Response {
    let kind = if status == StatusCode::PAYLOAD_TOO_LARGE {
        "request_too_large"
    } else {
        "invalid_request_error"
    };
    json_response(
        status,
        &json!({"type": "error", "error": {"type": kind, "message": message}}),
    )
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_ignore_query_and_trailing_slash() {
        assert_eq!(endpoint(&Method::POST, "/v1/messages"), Endpoint::Messages);
        assert_eq!(endpoint(&Method::POST, "/v1/messages/"), Endpoint::Messages);
        assert_eq!(
            endpoint(&Method::POST, "/v1/messages/count_tokens"),
            Endpoint::CountTokens
        );
        assert_eq!(endpoint(&Method::GET, "/v1/messages"), Endpoint::Other);
        assert_eq!(endpoint(&Method::POST, "/api/hello"), Endpoint::Other);
        assert_eq!(endpoint(&Method::HEAD, "/"), Endpoint::Other);
    }

    #[test]
    fn base_url_uses_loopback_for_unspecified() {
        assert_eq!(base_url("0.0.0.0:8080".parse().unwrap()), "http://127.0.0.1:8080");
        assert_eq!(base_url("127.0.0.1:9".parse().unwrap()), "http://127.0.0.1:9");
        assert_eq!(base_url("[::1]:9".parse().unwrap()), "http://[::1]:9");
    }
}
