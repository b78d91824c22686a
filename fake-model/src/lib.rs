//! A fake model server, good enough to run the real Claude Code CLI and aider offline.
//!
//! Anthropic's Messages API: `POST /v1/messages` answers with a canned reply chosen by
//! `decide` from the last user message, streamed as server-sent events (or one JSON message
//! when `stream` is false); `POST /v1/messages/count_tokens` answers a fixed count.
//! OpenAI's Chat Completions API (`POST /v1/chat/completions`, what aider's litellm calls):
//! the same decision rendered as chat completion chunks ending in `data: [DONE]`, or one
//! `chat.completion`, with `usage`; `GET /v1/models` lists one model. Every other request
//! OpenAI's Responses API (`POST /v1/responses`, the only API Codex speaks): the same
//! decision as Codex's server-sent events, a command as an escalated `exec_command`, with
//! `usage` and Codex's rate-limit headers (`x-codex-primary-*`, `x-codex-secondary-*`)
//! rising with each request; Codex's thread-title request gets JSON fitting its schema.
//! Every other request gets `{}` so that the CLIs' probes never see a 404. The API key of every request
//! (`x-api-key`, or `Authorization: Bearer`) is kept for tests ([`FakeModel::keys_seen`]).

mod decide;
mod openai;
pub mod push;
mod responses;
mod sse;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderName, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

pub use decide::MONITOR_ADVICE;
use decide::decide;
pub use openai::parse_chunks;
pub use sse::parse_events;
use sse::{message_json, sse_body};

/// Largest request body accepted; larger ones get a 413.
const BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Most API keys kept (the first ones; later requests are not recorded).
const MAX_KEYS: usize = 4096;
/// Most Messages replies whose usage is kept.
const MAX_SENT: usize = 4096;

/// The usage one Messages reply reported, as the API bills it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentUsage {
    pub message_id: String,
    pub model: String,
    /// Uncached input.
    pub input: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub output: u64,
    /// The CLI session the request named (`x-claude-code-session-id`).
    pub session: Option<String>,
    /// Whether the request offered tools (the CLI's main loop does; its side
    /// requests, such as a title, may not).
    pub tools: bool,
}

/// What the server counts and records.
struct Shared {
    /// Model requests answered with a reply (both APIs).
    served: AtomicU64,
    /// The API key of each request that carried one, in arrival order.
    keys: Mutex<Vec<String>>,
    /// Makes this server's message ids its own (`msg_fake_<tag><seq>`), so
    /// two servers (or runs) never report one id for two messages.
    tag: String,
    /// The usage of each Messages and Responses reply, in order.
    sent: Mutex<Vec<SentUsage>>,
    /// The rate-limit windows last sent to Codex.
    limits: Mutex<Option<RateLimits>>,
    /// Unix seconds when the server started (the windows reset from there).
    started: u64,
}

/// The rate-limit windows one Responses reply carried in its headers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// The 5-hour window's use, percent (one per request, at most
    /// [`MAX_USED_PERCENT`]).
    pub primary_used_percent: f64,
    /// The weekly window's use, percent (a quarter per request, at most
    /// [`MAX_USED_PERCENT`]).
    pub secondary_used_percent: f64,
    /// Unix seconds when each window resets.
    pub primary_reset_at: u64,
    pub secondary_reset_at: u64,
}

/// The most a window is said to be used: Codex warns near its limit and
/// stops at 100 %, which a long run against one fake model would reach.
pub const MAX_USED_PERCENT: f64 = 50.0;

/// The primary (5-hour) and secondary (weekly) windows, in minutes.
pub const PRIMARY_WINDOW_MINUTES: u64 = 300;
pub const SECONDARY_WINDOW_MINUTES: u64 = 10_080;

impl Default for Shared {
    fn default() -> Shared {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let nanos = now.subsec_nanos();
        Shared {
            served: AtomicU64::new(0),
            keys: Mutex::new(vec![]),
            tag: format!("{:x}{:05x}_", std::process::id(), nanos & 0xf_ffff),
            sent: Mutex::new(vec![]),
            limits: Mutex::new(None),
            started: now.as_secs(),
        }
    }
}

impl Shared {
    fn record_usage(&self, usage: SentUsage) {
        if let Ok(mut sent) = self.sent.lock()
            && sent.len() < MAX_SENT
        {
            sent.push(usage);
        }
    }

    fn record_key(&self, headers: &HeaderMap) {
        if let Some(key) = api_key(headers)
            && let Ok(mut keys) = self.keys.lock()
            && keys.len() < MAX_KEYS
        {
            keys.push(key);
        }
    }
}

/// A running fake model server; the server stops when this is dropped.
pub struct FakeModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl FakeModel {
    /// Binds `addr` (port 0 picks any free port) and serves in a spawned tokio task.
    pub async fn start(addr: SocketAddr) -> anyhow::Result<FakeModel> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared::default());
        let app = router(Arc::clone(&shared));
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::error!(%err, "fake model server stopped");
            }
        });
        Ok(FakeModel { addr, shared, task })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to give Claude Code as `ANTHROPIC_BASE_URL`, e.g. `http://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        base_url(self.addr)
    }

    /// Number of model requests (`/v1/messages`, `/v1/chat/completions`)
    /// answered with a reply so far.
    pub fn requests(&self) -> u64 {
        self.shared.served.load(Ordering::SeqCst)
    }

    /// The API key of every request that carried one (Anthropic's
    /// `x-api-key`, or an `Authorization: Bearer` token), in arrival order,
    /// probes included; at most the first 4,096.
    pub fn keys_seen(&self) -> Vec<String> {
        self.shared.keys.lock().map(|k| k.clone()).unwrap_or_default()
    }

    /// The usage every Messages and Responses reply reported, in order (at
    /// most the first 4,096).
    pub fn usage_sent(&self) -> Vec<SentUsage> {
        self.shared.sent.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The rate-limit windows the last Responses reply carried.
    pub fn limits_sent(&self) -> Option<RateLimits> {
        self.shared.limits.lock().ok().and_then(|l| *l)
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
    ChatCompletions,
    Responses,
    Models,
    Other,
}

/// Routes on method and path only; the query string is ignored. The OpenAI
/// paths are also answered without `/v1` (a base URL given without it).
fn endpoint(method: &Method, path: &str) -> Endpoint {
    match (method, path.trim_end_matches('/')) {
        (&Method::POST, "/v1/messages") => Endpoint::Messages,
        (&Method::POST, "/v1/messages/count_tokens") => Endpoint::CountTokens,
        (&Method::POST, "/v1/chat/completions" | "/chat/completions") => Endpoint::ChatCompletions,
        (&Method::POST, "/v1/responses" | "/responses") => Endpoint::Responses,
        (&Method::GET, "/v1/models" | "/models") => Endpoint::Models,
        _ => Endpoint::Other,
    }
}

/// The request's API key: `x-api-key`, else a bearer token.
fn api_key(headers: &HeaderMap) -> Option<String> {
    let value = |name| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    value("x-api-key")
        .or_else(|| {
            value(header::AUTHORIZATION.as_str())
                .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
                .map(str::trim)
        })
        .filter(|k| !k.is_empty())
        .map(str::to_owned)
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .fallback(handle)
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(shared)
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    tracing::debug!(%method, %uri, "fake model request");
    shared.record_key(&headers);
    let endpoint = endpoint(&method, uri.path());
    let body = match body {
        Ok(body) => body,
        Err(rejection) if matches!(endpoint, Endpoint::ChatCompletions | Endpoint::Responses) => {
            return openai_error(rejection.status(), &rejection.body_text());
        }
        Err(rejection) => return error(rejection.status(), &rejection.body_text()),
    };
    match endpoint {
        Endpoint::Messages => messages(&shared, &headers, &body),
        Endpoint::CountTokens => json_response(StatusCode::OK, &json!({"input_tokens": sse::INPUT_TOKENS})),
        Endpoint::ChatCompletions => chat_completions(&shared.served, &body),
        Endpoint::Responses => responses(&shared, &headers, &body),
        Endpoint::Models => json_response(
            StatusCode::OK,
            &json!({"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0, "owned_by": "warren"}]}),
        ),
        Endpoint::Other => json_response(StatusCode::OK, &json!({})),
    }
}

/// Answers one Chat Completions request.
fn chat_completions(served: &AtomicU64, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(err) => return openai_error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {err}")),
    };
    let seq = served.fetch_add(1, Ordering::SeqCst) + 1;
    let reply = decide(&request);
    let text = openai::reply_text(&reply, openai::EditFormat::of(&request));
    let model = request.get("model").and_then(Value::as_str).unwrap_or("gpt-fake");
    tracing::debug!(seq, ?reply, "fake model reply (chat completions)");
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ];
        let include_usage = openai::wants_usage(&request);
        (headers, openai::sse_body(&text, model, seq, include_usage)).into_response()
    } else {
        json_response(StatusCode::OK, &openai::completion_json(&text, model, seq))
    }
}

/// An OpenAI-style error body.
fn openai_error(status: StatusCode, message: &str) -> Response {
    json_response(
        status,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
    )
}

/// Answers one Messages API request.
fn messages(shared: &Shared, headers: &HeaderMap, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(err) => return error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {err}")),
    };
    let seq = shared.served.fetch_add(1, Ordering::SeqCst) + 1;
    let reply = decide(&request);
    let model = request.get("model").and_then(Value::as_str).unwrap_or("claude-fake");
    tracing::debug!(seq, ?reply, "fake model reply");
    let tag = shared.tag.as_str();
    let (input, cache_read, cache_write_5m, cache_write_1h, output) = sse::usage_numbers(&reply);
    shared.record_usage(SentUsage {
        message_id: format!("msg_fake_{tag}{seq}"),
        model: model.to_string(),
        input,
        cache_read,
        cache_write_5m,
        cache_write_1h,
        output,
        session: headers
            .get("x-claude-code-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        tools: offers_tools(&request),
    });
    let request_id = (HeaderName::from_static("request-id"), format!("req_fake_{tag}{seq}"));
    if request.get("stream").and_then(Value::as_bool) == Some(true) {
        let headers = [
            (header::CONTENT_TYPE, "text/event-stream".to_owned()),
            (header::CACHE_CONTROL, "no-cache".to_owned()),
            request_id,
        ];
        (headers, sse_body(&reply, model, seq, tag)).into_response()
    } else {
        let headers = [(header::CONTENT_TYPE, "application/json".to_owned()), request_id];
        (headers, message_json(&reply, model, seq, tag).to_string()).into_response()
    }
}

/// Whether a request offered the model tools.
fn offers_tools(request: &Value) -> bool {
    request
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty())
}

/// Answers one Responses API request (Codex).
fn responses(shared: &Shared, headers: &HeaderMap, body: &[u8]) -> Response {
    let request: Value = match serde_json::from_slice(body) {
        Ok(request) => request,
        Err(err) => return openai_error(StatusCode::BAD_REQUEST, &format!("body is not JSON: {err}")),
    };
    let seq = shared.served.fetch_add(1, Ordering::SeqCst) + 1;
    let reply = match responses::title_schema(&request) {
        Some(schema) => responses::title_reply(schema),
        None => decide(&responses::as_messages(&request)),
    };
    let model = request.get("model").and_then(Value::as_str).unwrap_or("gpt-fake");
    tracing::debug!(seq, ?reply, "fake model reply (responses)");
    let tag = shared.tag.as_str();
    let (input, cache_read, output) = responses::usage_numbers(&reply);
    shared.record_usage(SentUsage {
        message_id: responses::response_id(seq, tag),
        model: model.to_string(),
        input,
        cache_read,
        cache_write_5m: 0,
        cache_write_1h: 0,
        output,
        session: request
            .pointer("/client_metadata/session_id")
            .and_then(Value::as_str)
            .or_else(|| headers.get("session_id").and_then(|v| v.to_str().ok()))
            .map(str::to_string),
        tools: offers_tools(&request),
    });
    let limits = RateLimits {
        primary_used_percent: (seq as f64).min(MAX_USED_PERCENT),
        secondary_used_percent: (seq as f64 / 4.0).min(MAX_USED_PERCENT),
        primary_reset_at: shared.started + PRIMARY_WINDOW_MINUTES * 60,
        secondary_reset_at: shared.started + SECONDARY_WINDOW_MINUTES * 60,
    };
    if let Ok(mut last) = shared.limits.lock() {
        *last = Some(limits);
    }
    let mut headers = vec![
        (header::CONTENT_TYPE, "text/event-stream".to_owned()),
        (header::CACHE_CONTROL, "no-cache".to_owned()),
    ];
    for (name, used, window, reset) in [
        (
            "primary",
            limits.primary_used_percent,
            PRIMARY_WINDOW_MINUTES,
            limits.primary_reset_at,
        ),
        (
            "secondary",
            limits.secondary_used_percent,
            SECONDARY_WINDOW_MINUTES,
            limits.secondary_reset_at,
        ),
    ] {
        for (what, value) in [
            ("used-percent", used.to_string()),
            ("window-minutes", window.to_string()),
            ("reset-at", reset.to_string()),
        ] {
            if let Ok(name) = HeaderName::try_from(format!("x-codex-{name}-{what}")) {
                headers.push((name, value));
            }
        }
    }
    let mut response = responses::sse_body(&reply, model, seq, tag).into_response();
    for (name, value) in headers {
        if let Ok(value) = value.parse() {
            response.headers_mut().insert(name, value);
        }
    }
    response
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
        assert_eq!(
            endpoint(&Method::POST, "/v1/chat/completions"),
            Endpoint::ChatCompletions
        );
        assert_eq!(endpoint(&Method::POST, "/chat/completions/"), Endpoint::ChatCompletions);
        assert_eq!(endpoint(&Method::GET, "/v1/chat/completions"), Endpoint::Other);
        assert_eq!(endpoint(&Method::GET, "/v1/models"), Endpoint::Models);
        assert_eq!(endpoint(&Method::POST, "/v1/responses"), Endpoint::Responses);
        assert_eq!(endpoint(&Method::POST, "/responses/"), Endpoint::Responses);
        assert_eq!(endpoint(&Method::GET, "/v1/responses"), Endpoint::Other);
        assert_eq!(endpoint(&Method::POST, "/api/hello"), Endpoint::Other);
        assert_eq!(endpoint(&Method::HEAD, "/"), Endpoint::Other);
    }

    #[test]
    fn api_keys_come_from_either_header() {
        let mut h = HeaderMap::new();
        assert_eq!(api_key(&h), None);
        h.insert("authorization", "Bearer sk-openai".parse().unwrap());
        assert_eq!(api_key(&h).as_deref(), Some("sk-openai"));
        h.insert("x-api-key", "sk-ant".parse().unwrap());
        assert_eq!(api_key(&h).as_deref(), Some("sk-ant"), "x-api-key first");
        let mut basic = HeaderMap::new();
        basic.insert("authorization", "Basic abc".parse().unwrap());
        assert_eq!(api_key(&basic), None);
        basic.insert("x-api-key", " ".parse().unwrap());
        assert_eq!(api_key(&basic), None, "blank is no key");
    }

    #[test]
    fn base_url_uses_loopback_for_unspecified() {
        assert_eq!(base_url("0.0.0.0:8080".parse().unwrap()), "http://127.0.0.1:8080");
        assert_eq!(base_url("127.0.0.1:9".parse().unwrap()), "http://127.0.0.1:9");
        assert_eq!(base_url("[::1]:9".parse().unwrap()), "http://[::1]:9");
    }
}
