//! Talks raw HTTP/1.1 to a running fake model over a TCP socket.

use std::time::Duration;

use fake_model::{FakeModel, parse_chunks, parse_events};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A parsed HTTP response.
struct HttpResponse {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl HttpResponse {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("JSON body")
    }
}

/// Sends one request with `Connection: close` and reads the whole response.
async fn send(model: &FakeModel, method: &str, path: &str, body: &[u8]) -> HttpResponse {
    send_with(model, method, path, "", body).await
}

/// Like `send`, with extra header lines (each ending in `\r\n`).
async fn send_with(model: &FakeModel, method: &str, path: &str, extra: &str, body: &[u8]) -> HttpResponse {
    let mut stream = TcpStream::connect(model.addr()).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        model.addr(),
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (413) and stop reading before an oversized body is all written.
    let _ = stream.write_all(body).await;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut raw))
        .await
        .unwrap()
        .unwrap();
    parse_response(&String::from_utf8(raw).unwrap())
}

fn parse_response(raw: &str) -> HttpResponse {
    let (head, body) = raw.split_once("\r\n\r\n").expect("header end");
    let mut lines = head.lines();
    let status = lines.next().unwrap().split(' ').nth(1).unwrap().parse().unwrap();
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    HttpResponse {
        status,
        headers,
        body: body.to_owned(),
    }
}

async fn start() -> FakeModel {
    FakeModel::start("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn claude_request(text: &str, stream: bool) -> Vec<u8> {
    json!({
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "stream": stream,
        "system": [{"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."}],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "<system-reminder>\ncontext\n</system-reminder>"},
            {"type": "text", "text": text}
        ]}]
    })
    .to_string()
    .into_bytes()
}

/// Concatenates the text or tool-input deltas of a stream.
fn joined_deltas(events: &[(String, Value)]) -> String {
    events
        .iter()
        .filter(|(name, _)| name == "content_block_delta")
        .filter_map(|(_, d)| d["delta"]["text"].as_str().or(d["delta"]["partial_json"].as_str()))
        .collect()
}

#[tokio::test]
async fn streams_a_text_reply_over_http() {
    let model = start().await;
    assert!(model.base_url().starts_with("http://127.0.0.1:"));
    let response = send(
        &model,
        "POST",
        "/v1/messages?beta=true",
        &claude_request("hello there", true),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let events = parse_events(&response.body);
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert_eq!(events[0].1["message"]["model"], "claude-sonnet-4-5-20250929");
    assert_eq!(joined_deltas(&events), "You said: hello there");
    assert_eq!(events[events.len() - 2].1["delta"]["stop_reason"], "end_turn");
    assert_eq!(model.requests(), 1);
}

#[tokio::test]
async fn streams_a_bash_tool_call_over_http() {
    let model = start().await;
    let response = send(
        &model,
        "POST",
        "/v1/messages?beta=true",
        &claude_request("run: echo hi", true),
    )
    .await;
    let events = parse_events(&response.body);
    let input: Value = serde_json::from_str(&joined_deltas(&events)).unwrap();
    assert_eq!(input, json!({"command": "echo hi", "description": "Run echo hi"}));
    assert_eq!(events[1].1["content_block"]["name"], "Bash");
    assert_eq!(events[events.len() - 2].1["delta"]["stop_reason"], "tool_use");
}

#[tokio::test]
async fn answers_one_json_message_when_not_streaming() {
    let model = start().await;
    let response = send(&model, "POST", "/v1/messages", &claude_request("quota", false)).await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let message = response.json();
    assert_eq!(message["content"][0]["text"], "You said: quota");
    assert_eq!(message["stop_reason"], "end_turn");
}

#[tokio::test]
async fn count_tokens_and_unknown_paths_answer_json() {
    let model = start().await;
    let response = send(
        &model,
        "POST",
        "/v1/messages/count_tokens?beta=true",
        &claude_request("hi", false),
    )
    .await;
    assert_eq!((response.status, response.json()), (200, json!({"input_tokens": 42})));
    for (method, path) in [
        ("GET", "/api/oauth/profile"),
        ("POST", "/api/event_logging/batch"),
        ("GET", "/v1/messages"),
    ] {
        let response = send(&model, method, path, b"").await;
        assert_eq!(response.status, 200, "{method} {path}");
        assert_eq!(response.header("content-type"), Some("application/json"));
        assert_eq!(response.json(), json!({}));
    }
    assert_eq!(model.requests(), 0);
}

#[tokio::test]
async fn rejects_a_body_that_is_not_json() {
    let model = start().await;
    let response = send(&model, "POST", "/v1/messages", b"{not json").await;
    assert_eq!(response.status, 400);
    let body = response.json();
    assert_eq!(body["type"], "error");
    assert_eq!(body["error"]["type"], "invalid_request_error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("body is not JSON: ")
    );
    assert_eq!(model.requests(), 0);
}

#[tokio::test]
async fn rejects_a_body_over_the_limit() {
    let model = start().await;
    let response = send(&model, "POST", "/v1/messages", &vec![b' '; 9 * 1024 * 1024]).await;
    assert_eq!(response.status, 413);
    assert_eq!(response.json()["type"], "error");
}

#[tokio::test]
async fn counts_served_requests() {
    let model = start().await;
    for n in 1..=3 {
        send(&model, "POST", "/v1/messages", &claude_request("again", true)).await;
        assert_eq!(model.requests(), n);
    }
}

/// A request shaped like aider's (litellm, OpenAI provider): example
/// messages first, the user's text, then a trailing system reminder.
fn aider_request(text: &str, stream: bool) -> Vec<u8> {
    json!({
        "model": "gpt-4o-mini",
        "stream": stream,
        "temperature": 0,
        "messages": [
            {"role": "system", "content": "Act as an expert software developer. Every *SEARCH/REPLACE block* must use this format"},
            {"role": "user", "content": "Change get_factorial() to use math.factorial"},
            {"role": "assistant", "content": "To make this change ..."},
            {"role": "user", "content": text},
            {"role": "system", "content": "# *SEARCH/REPLACE block* Rules:"}
        ]
    })
    .to_string()
    .into_bytes()
}

fn streamed_text(chunks: &[Value]) -> String {
    chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect()
}

#[tokio::test]
async fn chat_completions_stream_a_reply_and_end_with_done() {
    let model = start().await;
    let response = send(
        &model,
        "POST",
        "/v1/chat/completions",
        &aider_request("hello there", true),
    )
    .await;
    assert_eq!(response.status, 200, "{}", response.body);
    assert!(
        response
            .header("content-type")
            .unwrap()
            .starts_with("text/event-stream")
    );
    let chunks = parse_chunks(&response.body).expect("a stream ending in [DONE]");
    assert_eq!(streamed_text(&chunks), "You said: hello there");
    assert_eq!(chunks[0]["model"], "gpt-4o-mini");
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");
    assert!(chunks.iter().all(|c| c.get("usage").is_none()), "usage only when asked");
    assert_eq!(model.requests(), 1);
}

#[tokio::test]
async fn chat_completions_stream_usage_when_asked() {
    let model = start().await;
    let mut request: Value = serde_json::from_slice(&aider_request("hi", true)).unwrap();
    request["stream_options"] = json!({"include_usage": true});
    let body = request.to_string().into_bytes();
    let response = send(&model, "POST", "/chat/completions", &body).await;
    let chunks = parse_chunks(&response.body).expect("done");
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage["prompt_tokens"], 42);
    assert_eq!(usage["total_tokens"], 42 + usage["completion_tokens"].as_u64().unwrap());
}

#[tokio::test]
async fn chat_completions_answer_one_completion_with_usage() {
    let model = start().await;
    let response = send(
        &model,
        "POST",
        "/v1/chat/completions",
        &aider_request("run: echo hi > ran.txt", false),
    )
    .await;
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("application/json"));
    let c = response.json();
    assert_eq!(
        c["choices"][0]["message"]["content"],
        "I will run it.\n\n```bash\necho hi > ran.txt\n```\n"
    );
    assert_eq!(c["usage"]["prompt_tokens"], 42);
    assert!(c["usage"]["completion_tokens"].as_u64().unwrap() >= 1);
    // A new file, in the SEARCH/REPLACE format the system prompt asked for.
    let response = send(
        &model,
        "POST",
        "/v1/chat/completions",
        &aider_request("create: notes/a.txt", false),
    )
    .await;
    let text = response.json()["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        text.contains("notes/a.txt\n```\n<<<<<<< SEARCH\n=======\ncreated by the fake model\n>>>>>>> REPLACE\n```"),
        "{text}"
    );
}

#[tokio::test]
async fn models_are_listed_and_bad_bodies_get_openai_errors() {
    let model = start().await;
    let response = send(&model, "GET", "/v1/models", b"").await;
    assert_eq!(response.status, 200);
    assert_eq!(response.json()["data"][0]["id"], "fake-model");
    let response = send(&model, "POST", "/v1/chat/completions", b"{nope").await;
    assert_eq!(response.status, 400);
    assert_eq!(response.json()["error"]["type"], "invalid_request_error");
    assert_eq!(model.requests(), 0);
}

#[tokio::test]
async fn api_keys_of_both_apis_are_recorded() {
    let model = start().await;
    send_with(
        &model,
        "POST",
        "/v1/messages",
        "x-api-key: sk-ant-one\r\n",
        &claude_request("hi", true),
    )
    .await;
    send_with(
        &model,
        "POST",
        "/v1/chat/completions",
        "Authorization: Bearer sk-openai-two\r\n",
        &aider_request("hi", false),
    )
    .await;
    send(&model, "GET", "/v1/models", b"").await;
    send_with(&model, "GET", "/api/hello", "authorization: Bearer sk-probe\r\n", b"").await;
    assert_eq!(model.keys_seen(), ["sk-ant-one", "sk-openai-two", "sk-probe"]);
}
