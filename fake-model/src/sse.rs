//! Pure rendering of a [`Reply`] as a Messages API response: an SSE stream or one JSON message.

use serde_json::{Value, json};

use crate::decide::{CREATED_CONTENT, Reply};

/// Input token count reported for every request; the fake does not tokenize.
pub(crate) const INPUT_TOKENS: u64 = 42;
/// Cache tokens reported for every Messages request: read, then written for
/// 5 minutes and for 1 hour (so every bucket a parser keeps is non-zero).
pub(crate) const CACHE_READ_TOKENS: u64 = 64;
pub(crate) const CACHE_WRITE_5M_TOKENS: u64 = 16;
pub(crate) const CACHE_WRITE_1H_TOKENS: u64 = 8;

/// How many deltas a text or tool input is split into (at most).
pub(crate) const CHUNKS: usize = 3;

/// Renders the whole SSE body of a streamed reply, as Claude Code expects to read it.
/// `tag` makes the message ids of one server unique among servers
/// (`msg_fake_<tag><seq>`).
pub(crate) fn sse_body(reply: &Reply, model: &str, seq: u64, tag: &str) -> String {
    let content = Content::of(reply);
    let mut message = message(&content, model, seq, tag);
    message["content"] = json!([]);
    message["stop_reason"] = Value::Null;
    message["usage"]["output_tokens"] = json!(1);
    let mut body = event("message_start", &json!({"type": "message_start", "message": message}));
    let start = json!({"type": "content_block_start", "index": 0, "content_block": content.block(seq, false)});
    body.push_str(&event("content_block_start", &start));
    for delta in content.deltas() {
        let data = json!({"type": "content_block_delta", "index": 0, "delta": delta});
        body.push_str(&event("content_block_delta", &data));
    }
    body.push_str(&event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": 0}),
    ));
    let stop = json!({"stop_reason": content.stop_reason(), "stop_sequence": null});
    // As the API now sends it: the whole usage again, with the final output.
    let usage = usage(&content);
    body.push_str(&event(
        "message_delta",
        &json!({"type": "message_delta", "delta": stop, "usage": usage}),
    ));
    body.push_str(&event("message_stop", &json!({"type": "message_stop"})));
    body
}

/// The complete, non-streamed message object for a reply (the `stream: false` answer).
pub(crate) fn message_json(reply: &Reply, model: &str, seq: u64, tag: &str) -> Value {
    message(&Content::of(reply), model, seq, tag)
}

/// The usage a reply is reported with: `(input, cache_read, cache_write_5m,
/// cache_write_1h, output)`.
pub(crate) fn usage_numbers(reply: &Reply) -> (u64, u64, u64, u64, u64) {
    let out = Content::of(reply).output_tokens();
    (
        INPUT_TOKENS,
        CACHE_READ_TOKENS,
        CACHE_WRITE_5M_TOKENS,
        CACHE_WRITE_1H_TOKENS,
        out,
    )
}

fn usage(content: &Content<'_>) -> Value {
    json!({
        "input_tokens": INPUT_TOKENS,
        "output_tokens": content.output_tokens(),
        "cache_creation_input_tokens": CACHE_WRITE_5M_TOKENS + CACHE_WRITE_1H_TOKENS,
        "cache_read_input_tokens": CACHE_READ_TOKENS,
        "cache_creation": {
            "ephemeral_5m_input_tokens": CACHE_WRITE_5M_TOKENS,
            "ephemeral_1h_input_tokens": CACHE_WRITE_1H_TOKENS
        }
    })
}

fn message(content: &Content<'_>, model: &str, seq: u64, tag: &str) -> Value {
    json!({
        "id": format!("msg_fake_{tag}{seq}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [content.block(seq, true)],
        "stop_reason": content.stop_reason(),
        "stop_sequence": null,
        "usage": usage(content)
    })
}

/// Parses an SSE body back into `(event name, data)` pairs; events without JSON data are skipped.
pub fn parse_events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter_map(|chunk| {
            let name = chunk.lines().find_map(|l| l.strip_prefix("event:"))?.trim();
            let data = chunk.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
            Some((name.to_owned(), serde_json::from_str(data).ok()?))
        })
        .collect()
}

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A reply's one content block: text, or a call of the named tool with its input.
enum Content<'a> {
    Text(&'a str),
    Tool { name: &'static str, input: Value },
}

impl Content<'_> {
    /// Bash takes a command; AskUserQuestion takes one question with labelled
    /// options; Write takes the file's path and content.
    fn of(reply: &Reply) -> Content<'_> {
        match reply {
            Reply::Text(text) => Content::Text(text),
            Reply::Bash { command, description } => Content::Tool {
                name: "Bash",
                input: json!({"command": command, "description": description}),
            },
            Reply::Ask { question, options } => Content::Tool {
                name: "AskUserQuestion",
                input: json!({"questions": [{
                    "question": question,
                    "header": "Choice",
                    "multiSelect": false,
                    "options": options.iter().map(|o| json!({"label": o, "description": o})).collect::<Vec<_>>(),
                }]}),
            },
            Reply::Create { path } => Content::Tool {
                name: "Write",
                input: json!({"file_path": path, "content": CREATED_CONTENT}),
            },
        }
    }

    fn stop_reason(&self) -> &'static str {
        match self {
            Content::Text(_) => "end_turn",
            Content::Tool { .. } => "tool_use",
        }
    }

    /// The block as the whole message holds it, or (`complete` false) as
    /// `content_block_start` opens it: no text or input yet.
    fn block(&self, seq: u64, complete: bool) -> Value {
        match self {
            Content::Text(text) => json!({"type": "text", "text": if complete { text } else { "" }}),
            Content::Tool { name, input } => {
                let input = if complete { input.clone() } else { json!({}) };
                json!({"type": "tool_use", "id": format!("toolu_fake_{seq}"), "name": name, "input": input})
            }
        }
    }

    /// What the deltas carry: the text, or the tool input's JSON text.
    fn streamed(&self) -> String {
        match self {
            Content::Text(text) => (*text).to_owned(),
            Content::Tool { input, .. } => input.to_string(),
        }
    }

    /// A rough output token count: one per four streamed chars, at least one.
    fn output_tokens(&self) -> u64 {
        (self.streamed().chars().count() / 4).max(1) as u64
    }

    /// The content block deltas: text pieces, or pieces of the tool input's JSON text.
    fn deltas(&self) -> Vec<Value> {
        let (kind, field) = match self {
            Content::Text(_) => ("text_delta", "text"),
            Content::Tool { .. } => ("input_json_delta", "partial_json"),
        };
        split_chars(&self.streamed(), CHUNKS)
            .into_iter()
            .map(|piece| json!({"type": kind, field: piece}))
            .collect()
    }
}

/// Splits `text` into at most `parts` non-empty pieces on char boundaries; one empty piece for empty text.
pub(crate) fn split_chars(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(parts.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(events: &[(String, Value)]) -> Vec<&str> {
        events.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Checks the envelope every stream shares and returns the concatenated deltas.
    fn check_stream(body: &str, stop: &str) -> (Vec<(String, Value)>, String) {
        let events = parse_events(body);
        assert!(body.ends_with("\n\n"));
        let n = events.len();
        assert!(n >= 6, "{body}");
        assert_eq!(names(&events)[..2], ["message_start", "content_block_start"]);
        assert!(names(&events)[2..n - 3].iter().all(|e| *e == "content_block_delta"));
        assert_eq!(
            names(&events)[n - 3..],
            ["content_block_stop", "message_delta", "message_stop"]
        );
        for (name, data) in &events {
            assert_eq!(data["type"], name.as_str());
        }
        assert_eq!(events[n - 2].1["delta"]["stop_reason"], stop);
        let joined = events[2..n - 3]
            .iter()
            .map(|(_, d)| {
                d["delta"]["text"]
                    .as_str()
                    .or(d["delta"]["partial_json"].as_str())
                    .unwrap()
                    .to_owned()
            })
            .collect();
        (events, joined)
    }

    #[test]
    fn text_stream_round_trips() {
        let body = sse_body(&Reply::Text("You said: hello there, héllo".into()), "claude-x", 7, "");
        let (events, joined) = check_stream(&body, "end_turn");
        assert_eq!(joined, "You said: hello there, héllo");
        assert!(events.len() - 5 >= 2, "text is split into several deltas");
        let message = &events[0].1["message"];
        assert_eq!(message["id"], "msg_fake_7");
        assert_eq!(message["model"], "claude-x");
        assert_eq!(message["content"], json!([]));
        assert_eq!(message["stop_reason"], Value::Null);
        assert_eq!(message["usage"]["output_tokens"], 1);
        assert_eq!(events[1].1["content_block"], json!({"type": "text", "text": ""}));
        assert!(events[5..].iter().all(|(_, d)| d.get("index").is_none_or(|i| i == 0)));
    }

    #[test]
    fn bash_stream_round_trips() {
        let reply = Reply::Bash {
            command: "cargo test".into(),
            description: "Run cargo test".into(),
        };
        let (events, joined) = check_stream(&sse_body(&reply, "m", 3, ""), "tool_use");
        assert!(events.len() - 5 >= 2, "tool input is split into several deltas");
        let input: Value = serde_json::from_str(&joined).unwrap();
        assert_eq!(input, json!({"command": "cargo test", "description": "Run cargo test"}));
        assert_eq!(
            events[1].1["content_block"],
            json!({"type": "tool_use", "id": "toolu_fake_3", "name": "Bash", "input": {}})
        );
    }

    #[test]
    fn short_and_empty_text_still_stream() {
        for text in ["", "k"] {
            let (_, joined) = check_stream(&sse_body(&Reply::Text(text.into()), "m", 1, ""), "end_turn");
            assert_eq!(joined, text);
        }
    }

    #[test]
    fn message_json_holds_the_whole_reply() {
        let reply = Reply::Bash {
            command: "ls".into(),
            description: "Run ls".into(),
        };
        let message = message_json(&reply, "m", 2, "");
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(
            message["content"][0]["input"],
            json!({"command": "ls", "description": "Run ls"})
        );
        let message = message_json(&Reply::Text("hi".into()), "m", 2, "");
        assert_eq!(message["content"], json!([{"type": "text", "text": "hi"}]));
        assert_eq!(message["stop_reason"], "end_turn");
    }

    #[test]
    fn a_new_file_is_a_write_tool_call() {
        let message = message_json(
            &Reply::Create {
                path: "/w/a.txt".into(),
            },
            "m",
            5,
            "",
        );
        assert_eq!(message["stop_reason"], "tool_use");
        assert_eq!(message["content"][0]["name"], "Write");
        assert_eq!(
            message["content"][0]["input"],
            json!({"file_path": "/w/a.txt", "content": "created by the fake model\n"})
        );
    }

    #[test]
    fn split_chars_keeps_every_char() {
        assert_eq!(split_chars("abcdefg", 3), ["abc", "def", "g"]);
        assert_eq!(split_chars("ab", 3), ["a", "b"]);
        assert_eq!(split_chars("", 3), [""]);
    }
}
