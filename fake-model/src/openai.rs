//! Pure rendering of a [`Reply`] as an OpenAI Chat Completions response: an
//! SSE stream of `chat.completion.chunk`s ending in `data: [DONE]`, or one
//! `chat.completion`. CLIs on this API (aider) use no tools: a shell command
//! is a fenced `bash` block in the text, and a new file is an edit in the
//! CLI's own edit format, read off its system prompt.

use serde_json::{Value, json};

use crate::decide::{CREATED_CONTENT, Reply};
use crate::sse::{CHUNKS, INPUT_TOKENS, split_chars};

/// How the CLI asked for file edits (aider's edit formats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EditFormat {
    /// SEARCH/REPLACE blocks (aider's `diff`, `diff-fenced`, `editor-diff`):
    /// a new file is a block with an empty SEARCH section.
    SearchReplace,
    /// The whole file after its path line (aider's `whole`, the fallback).
    Whole,
}

impl EditFormat {
    /// Read off the request's system messages.
    pub(crate) fn of(request: &Value) -> EditFormat {
        let system_text = request
            .get("messages")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("system"))
            .filter_map(|m| m.get("content").and_then(Value::as_str))
            .any(|t| t.contains("SEARCH/REPLACE"));
        if system_text {
            EditFormat::SearchReplace
        } else {
            EditFormat::Whole
        }
    }
}

/// The assistant's text for a reply.
pub(crate) fn reply_text(reply: &Reply, format: EditFormat) -> String {
    match reply {
        Reply::Text(text) => text.clone(),
        Reply::Bash { command, .. } => format!("I will run it.\n\n```bash\n{command}\n```\n"),
        Reply::Ask { question, options } => {
            let listed: Vec<String> = options.iter().map(|o| format!("- {o}")).collect();
            format!("{question}\n\n{}\n", listed.join("\n"))
        }
        Reply::Create { path } => match format {
            EditFormat::SearchReplace => format!(
                "Creating {path}.\n\n{path}\n```\n<<<<<<< SEARCH\n=======\n{CREATED_CONTENT}>>>>>>> REPLACE\n```\n"
            ),
            EditFormat::Whole => format!("Creating {path}.\n\n{path}\n```\n{CREATED_CONTENT}```\n"),
        },
    }
}

/// The usage object: a fixed prompt count, one completion token per four chars.
fn usage(text: &str) -> Value {
    let completion = (text.chars().count() / 4).max(1) as u64;
    json!({
        "prompt_tokens": INPUT_TOKENS,
        "completion_tokens": completion,
        "total_tokens": INPUT_TOKENS + completion,
    })
}

/// The non-streamed `chat.completion` object.
pub(crate) fn completion_json(text: &str, model: &str, seq: u64) -> Value {
    json!({
        "id": format!("chatcmpl-fake-{seq}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }],
        "usage": usage(text),
    })
}

/// Whether a streaming request asked for a final usage chunk
/// (`stream_options.include_usage`).
pub(crate) fn wants_usage(request: &Value) -> bool {
    request
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The whole SSE body of a streamed reply: a role chunk, the text in pieces,
/// a finish chunk, the usage chunk when asked for (empty `choices`, as OpenAI
/// sends it), then `[DONE]`.
pub(crate) fn sse_body(text: &str, model: &str, seq: u64, include_usage: bool) -> String {
    let chunk = |choices: Value| {
        json!({
            "id": format!("chatcmpl-fake-{seq}"),
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": choices,
        })
    };
    let delta = |delta: Value, finish: Value| json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
    let mut chunks = vec![chunk(delta(json!({"role": "assistant", "content": ""}), Value::Null))];
    for piece in split_chars(text, CHUNKS) {
        chunks.push(chunk(delta(json!({"content": piece}), Value::Null)));
    }
    chunks.push(chunk(delta(json!({}), json!("stop"))));
    if include_usage {
        let mut last = chunk(json!([]));
        last["usage"] = usage(text);
        chunks.push(last);
    }
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    body
}

/// Parses an OpenAI SSE body back into its JSON chunks, stopping at `[DONE]`;
/// `None` when the body does not end with `[DONE]`.
pub fn parse_chunks(body: &str) -> Option<Vec<Value>> {
    let mut chunks = vec![];
    for event in body.split("\n\n").filter(|e| !e.trim().is_empty()) {
        let data = event.lines().find_map(|l| l.strip_prefix("data:"))?.trim();
        if data == "[DONE]" {
            return Some(chunks);
        }
        chunks.push(serde_json::from_str(data).ok()?);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(chunks: &[Value]) -> String {
        chunks
            .iter()
            .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
            .collect()
    }

    #[test]
    fn a_stream_carries_the_text_then_stop_then_done() {
        let body = sse_body("You said: hello there", "gpt-x", 4, false);
        assert!(body.ends_with("data: [DONE]\n\n"));
        let chunks = parse_chunks(&body).expect("ends with [DONE]");
        assert!(chunks.len() >= 4, "{body}");
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        assert_eq!(joined(&chunks), "You said: hello there");
        let last = chunks.last().expect("chunks");
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert!(chunks.iter().all(|c| c["object"] == "chat.completion.chunk"));
        assert!(
            chunks
                .iter()
                .all(|c| c["id"] == "chatcmpl-fake-4" && c["model"] == "gpt-x")
        );
        assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    }

    #[test]
    fn usage_comes_last_when_asked_for() {
        let chunks = parse_chunks(&sse_body("abcdefgh", "m", 1, true)).expect("done");
        let last = chunks.last().expect("chunks");
        assert_eq!(last["choices"], json!([]));
        assert_eq!(
            last["usage"],
            json!({"prompt_tokens": 42, "completion_tokens": 2, "total_tokens": 44})
        );
        assert!(wants_usage(
            &json!({"stream": true, "stream_options": {"include_usage": true}})
        ));
        assert!(!wants_usage(&json!({"stream": true})));
    }

    #[test]
    fn a_completion_holds_the_whole_text_and_usage() {
        let c = completion_json("k", "m", 9);
        assert_eq!(c["object"], "chat.completion");
        assert_eq!(c["choices"][0]["message"], json!({"role": "assistant", "content": "k"}));
        assert_eq!(c["choices"][0]["finish_reason"], "stop");
        assert_eq!(c["usage"]["prompt_tokens"], 42);
        assert_eq!(c["usage"]["completion_tokens"], 1, "at least one");
    }

    #[test]
    fn a_shell_command_is_a_fenced_bash_block() {
        let reply = Reply::Bash {
            command: "echo hi > ran.txt".into(),
            description: "Run echo hi > ran.txt".into(),
        };
        assert_eq!(
            reply_text(&reply, EditFormat::Whole),
            "I will run it.\n\n```bash\necho hi > ran.txt\n```\n"
        );
    }

    #[test]
    fn a_new_file_follows_the_edit_format_of_the_system_prompt() {
        let diff = json!({"messages": [
            {"role": "system", "content": "Every *SEARCH/REPLACE block* must use this format"},
            {"role": "user", "content": "create: a/b.txt"}
        ]});
        assert_eq!(EditFormat::of(&diff), EditFormat::SearchReplace);
        let reply = Reply::Create { path: "a/b.txt".into() };
        assert_eq!(
            reply_text(&reply, EditFormat::of(&diff)),
            "Creating a/b.txt.\n\na/b.txt\n```\n<<<<<<< SEARCH\n=======\ncreated by the fake model\n>>>>>>> REPLACE\n```\n"
        );
        let whole = json!({"messages": [{"role": "system", "content": "use this *file listing* format"}]});
        assert_eq!(EditFormat::of(&whole), EditFormat::Whole);
        assert_eq!(
            reply_text(&reply, EditFormat::Whole),
            "Creating a/b.txt.\n\na/b.txt\n```\ncreated by the fake model\n```\n"
        );
        assert_eq!(EditFormat::of(&json!({})), EditFormat::Whole);
    }

    #[test]
    fn a_question_lists_its_options() {
        let reply = Reply::Ask {
            question: "Which?".into(),
            options: vec!["A".into(), "B".into()],
        };
        assert_eq!(reply_text(&reply, EditFormat::Whole), "Which?\n\n- A\n- B\n");
    }

    #[test]
    fn parse_chunks_needs_done() {
        assert_eq!(parse_chunks("data: {}\n\n"), None);
        assert_eq!(parse_chunks("data: [DONE]\n\n"), Some(vec![]));
    }
}
