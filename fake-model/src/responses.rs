//! Pure rendering for OpenAI's Responses API (`POST /v1/responses`, the only
//! API Codex speaks): a request's `input` items read as the messages
//! `decide` looks at, and a [`Reply`] as the server-sent events Codex reads
//! (`response.created`, the output item added, text deltas, the item done,
//! `response.completed` with `usage`). A shell command is Codex's
//! `exec_command` function call asking to run outside its sandbox
//! (`require_escalated`, which Codex puts to the user); a new file is an
//! `exec_command` inside the sandbox. Codex's side request that titles a
//! thread (a JSON schema named `codex_output_schema`, no tools) is answered
//! with an object that fits the schema.

use serde_json::{Value, json};

use crate::decide::{CREATED_CONTENT, Reply};
use crate::sse::{CACHE_READ_TOKENS, CHUNKS, INPUT_TOKENS, split_chars};

/// The schema name of Codex's title request.
const TITLE_SCHEMA: &str = "codex_output_schema";
/// The title the fake model gives a thread (cut to the schema's maximum).
const TITLE: &str = "Fake model thread";

/// The texts of a message item's content (`input_text` / `output_text`
/// blocks, or a string).
fn item_texts(content: &Value) -> Vec<&str> {
    match content {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| {
                matches!(
                    b.get("type").and_then(Value::as_str),
                    Some("input_text" | "output_text" | "text")
                )
            })
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => vec![],
    }
}

/// Context Codex wraps in a tag of its own (`<environment_context>...`,
/// `<user_instructions>...`): sent in the user's role, never typed by one.
fn is_wrapped_context(text: &str) -> bool {
    let t = text.trim();
    t.starts_with('<') && t.ends_with('>')
}

/// The request's `input` as the Messages shape `decide` reads: user and
/// assistant messages with text blocks (Codex's own context left out), and
/// each function call's output as a user turn holding a `tool_result`.
pub(crate) fn as_messages(request: &Value) -> Value {
    let mut messages = vec![];
    for item in request.get("input").and_then(Value::as_array).into_iter().flatten() {
        let kind = item.get("type").and_then(Value::as_str).unwrap_or("message");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or_default();
                if role != "user" && role != "assistant" {
                    continue;
                }
                let texts: Vec<Value> = item_texts(item.get("content").unwrap_or(&Value::Null))
                    .into_iter()
                    .filter(|t| !is_wrapped_context(t))
                    .map(|t| json!({"type": "text", "text": t}))
                    .collect();
                if !texts.is_empty() {
                    messages.push(json!({"role": role, "content": texts}));
                }
            }
            "function_call_output" => {
                let output = match item.get("output") {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => item_texts(other).join("\n"),
                    None => String::new(),
                };
                messages.push(json!({"role": "user", "content": [{"type": "tool_result", "content": output}]}));
            }
            _ => {}
        }
    }
    json!({ "messages": messages })
}

/// The JSON schema of a title request, if this is one.
pub(crate) fn title_schema(request: &Value) -> Option<&Value> {
    let format = request.get("text")?.get("format")?;
    (format.get("name").and_then(Value::as_str) == Some(TITLE_SCHEMA)).then(|| format.get("schema"))?
}

/// A value that fits `schema` (objects, strings, numbers, booleans, arrays).
pub(crate) fn sample(schema: &Value) -> Value {
    match schema.get("type").and_then(Value::as_str) {
        Some("object") => {
            let mut out = serde_json::Map::new();
            for (name, prop) in schema
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                out.insert(name.clone(), sample(prop));
            }
            Value::Object(out)
        }
        Some("string") => {
            let max = schema.get("maxLength").and_then(Value::as_u64).unwrap_or(u64::MAX);
            json!(
                TITLE
                    .chars()
                    .take(max.min(TITLE.len() as u64) as usize)
                    .collect::<String>()
            )
        }
        Some("integer" | "number") => json!(0),
        Some("boolean") => json!(false),
        Some("array") => json!([]),
        _ => Value::Null,
    }
}

/// What one reply's item is: a message, or an `exec_command` call.
fn item(reply: &Reply, seq: u64, tag: &str) -> (Value, String) {
    let call = |cmd: String, escalated: bool, why: &str| {
        let mut args = json!({ "cmd": cmd });
        if escalated {
            args["sandbox_permissions"] = json!("require_escalated");
            args["justification"] = json!(why);
        }
        let arguments = args.to_string();
        let item = json!({
            "type": "function_call",
            "id": format!("fc_fake_{tag}{seq}"),
            "call_id": format!("call_fake_{tag}{seq}"),
            "name": "exec_command",
            "arguments": arguments,
        });
        (item, arguments)
    };
    let text = match reply {
        Reply::Bash { command, description } => return call(command.clone(), true, description),
        Reply::Create { path } => {
            let dir = std::path::Path::new(path)
                .parent()
                .map(|p| p.display().to_string())
                .filter(|p| !p.is_empty());
            let quoted = shell_quote(path);
            let write = format!("printf '%s' {} > {quoted}", shell_quote(CREATED_CONTENT));
            let cmd = match dir {
                Some(d) => format!("mkdir -p {} && {write}", shell_quote(&d)),
                None => write,
            };
            return call(cmd, false, "");
        }
        Reply::Text(text) => text.clone(),
        Reply::Ask { question, options } => {
            let listed: Vec<String> = options.iter().map(|o| format!("- {o}")).collect();
            format!("{question}\n\n{}\n", listed.join("\n"))
        }
    };
    let item = json!({
        "type": "message",
        "role": "assistant",
        "id": format!("msg_fake_{tag}{seq}"),
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    });
    (item, text)
}

/// `'text'` for a POSIX shell.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The tokens a reply is reported with: `(uncached input, cached input,
/// output)`; output is one token per four characters of what was sent.
pub(crate) fn usage_numbers(reply: &Reply) -> (u64, u64, u64) {
    let (_, sent) = item(reply, 0, "");
    (INPUT_TOKENS, CACHE_READ_TOKENS, output_tokens(&sent))
}

fn output_tokens(sent: &str) -> u64 {
    (sent.chars().count() / 4).max(1) as u64
}

/// The `usage` object: `input_tokens` counts the cached ones too, as the
/// API reports them.
fn usage(sent: &str) -> Value {
    let output = output_tokens(sent);
    json!({
        "input_tokens": INPUT_TOKENS + CACHE_READ_TOKENS,
        "input_tokens_details": {"cached_tokens": CACHE_READ_TOKENS},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": INPUT_TOKENS + CACHE_READ_TOKENS + output,
    })
}

/// The reply to a title request: a message whose text is JSON fitting the schema.
pub(crate) fn title_reply(schema: &Value) -> Reply {
    Reply::Text(sample(schema).to_string())
}

fn event(data: &Value) -> String {
    let name = data.get("type").and_then(Value::as_str).unwrap_or("message");
    format!("event: {name}\ndata: {data}\n\n")
}

/// The whole SSE body of a reply. `tag` makes ids unique among servers.
pub(crate) fn sse_body(reply: &Reply, model: &str, seq: u64, tag: &str) -> String {
    let id = response_id(seq, tag);
    let (done, sent) = item(reply, seq, tag);
    let response = |status: &str| json!({"id": id, "object": "response", "model": model, "status": status});
    let mut body = event(&json!({"type": "response.created", "response": response("in_progress")}));
    let mut added = done.clone();
    if done["type"] == "message" {
        added["content"] = json!([]);
        added["status"] = json!("in_progress");
    }
    body.push_str(&event(
        &json!({"type": "response.output_item.added", "output_index": 0, "item": added}),
    ));
    if done["type"] == "message" {
        for piece in split_chars(&sent, CHUNKS) {
            body.push_str(&event(&json!({
                "type": "response.output_text.delta",
                "item_id": done["id"],
                "output_index": 0,
                "content_index": 0,
                "delta": piece,
            })));
        }
    }
    body.push_str(&event(
        &json!({"type": "response.output_item.done", "output_index": 0, "item": done}),
    ));
    let mut completed = response("completed");
    completed["usage"] = usage(&sent);
    body.push_str(&event(&json!({"type": "response.completed", "response": completed})));
    body
}

/// A response's id: `resp_fake_<tag><seq>`.
pub(crate) fn response_id(seq: u64, tag: &str) -> String {
    format!("resp_fake_{tag}{seq}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decide::decide;
    use crate::sse::parse_events;

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    #[test]
    fn codex_context_is_not_the_users_words() {
        let request = json!({"input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex"}]},
            user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
            user("first words"),
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "You said: first words"}]},
            user("recall: please"),
        ]});
        let messages = as_messages(&request);
        assert_eq!(messages["messages"].as_array().map(Vec::len), Some(3));
        assert_eq!(decide(&messages), Reply::Text("Earlier you said: first words".into()));
    }

    #[test]
    fn a_function_call_output_is_acknowledged() {
        let request = json!({"input": [
            user("run: ls"),
            {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c"},
            {"type": "function_call_output", "call_id": "c", "output": "a.txt\nb.txt"},
        ]});
        assert_eq!(
            decide(&as_messages(&request)),
            Reply::Text("Tool finished: a.txt\nb.txt".into())
        );
    }

    #[test]
    fn a_command_is_an_escalated_exec_command() {
        let reply = Reply::Bash {
            command: "echo hi > ran.txt".into(),
            description: "Run echo hi > ran.txt".into(),
        };
        let events = parse_events(&sse_body(&reply, "gpt-x", 3, "t_"));
        let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "response.created",
                "response.output_item.added",
                "response.output_item.done",
                "response.completed"
            ]
        );
        let item = &events[2].1["item"];
        assert_eq!(item["type"], "function_call");
        assert_eq!(item["name"], "exec_command");
        let args: Value = serde_json::from_str(item["arguments"].as_str().expect("arguments")).expect("json");
        assert_eq!(args["cmd"], "echo hi > ran.txt");
        assert_eq!(args["sandbox_permissions"], "require_escalated");
        let usage = &events[3].1["response"]["usage"];
        assert_eq!(usage["input_tokens"], INPUT_TOKENS + CACHE_READ_TOKENS);
        assert_eq!(usage["input_tokens_details"]["cached_tokens"], CACHE_READ_TOKENS);
        assert_eq!(events[3].1["response"]["id"], "resp_fake_t_3");
    }

    #[test]
    fn text_streams_in_deltas_then_the_whole_item() {
        let events = parse_events(&sse_body(&Reply::Text("You said: hello".into()), "m", 1, ""));
        let deltas: String = events
            .iter()
            .filter(|(n, _)| n == "response.output_text.delta")
            .filter_map(|(_, d)| d["delta"].as_str())
            .collect();
        assert_eq!(deltas, "You said: hello");
        let done = events
            .iter()
            .find(|(n, _)| n == "response.output_item.done")
            .expect("done");
        assert_eq!(done.1["item"]["content"][0]["text"], "You said: hello");
        let (input, cached, output) = usage_numbers(&Reply::Text("You said: hello".into()));
        assert_eq!((input, cached, output), (INPUT_TOKENS, CACHE_READ_TOKENS, 3));
        assert_eq!(
            events.last().expect("completed").1["response"]["usage"]["output_tokens"],
            3
        );
    }

    #[test]
    fn a_new_file_is_written_inside_the_sandbox() {
        let (item, _) = item(
            &Reply::Create {
                path: "d/it's.txt".into(),
            },
            1,
            "",
        );
        let args: Value = serde_json::from_str(item["arguments"].as_str().expect("args")).expect("json");
        assert_eq!(
            args["cmd"],
            "mkdir -p 'd' && printf '%s' 'created by the fake model\n' > 'd/it'\\''s.txt'"
        );
        assert!(args.get("sandbox_permissions").is_none());
    }

    #[test]
    fn a_title_request_gets_json_that_fits() {
        let request = json!({"text": {"format": {"type": "json_schema", "name": "codex_output_schema", "schema": {
            "type": "object", "required": ["title"], "additionalProperties": false,
            "properties": {"title": {"type": "string", "minLength": 1, "maxLength": 8}}
        }}}});
        let schema = title_schema(&request).expect("a title request");
        assert_eq!(title_reply(schema), Reply::Text(r#"{"title":"Fake mod"}"#.into()));
        assert!(title_schema(&json!({"text": {"format": {"type": "text"}}})).is_none());
        assert!(title_schema(&json!({})).is_none());
    }
}
