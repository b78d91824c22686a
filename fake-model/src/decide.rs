//! The pure decision: given a Messages API request body, what does the fake model answer?

use serde_json::Value;

/// Longest tool output quoted back in a reply, in chars.
const TOOL_OUTPUT_LIMIT: usize = 200;
/// Longest user text echoed back in a reply, in chars.
const ECHO_LIMIT: usize = 500;
/// Longest Bash tool description, in chars.
const DESCRIPTION_LIMIT: usize = 60;

/// What the fake model answers with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// A plain assistant text turn; ends the turn.
    Text(String),
    /// A request to run one shell command with Claude Code's Bash tool.
    Bash { command: String, description: String },
    /// A question for the user with Claude Code's AskUserQuestion tool (a
    /// decision prompt): `ask: QUESTION | OPTION | OPTION ...`.
    Ask { question: String, options: Vec<String> },
    /// A new file at `path` (as given, relative or absolute) holding
    /// [`CREATED_CONTENT`]: `create: PATH`.
    Create { path: String },
}

/// What the fake model advises when it gets a monitor's trigger message.
pub const MONITOR_ADVICE: &str = "the fake model advises: look at the first hit";

/// What a `create: PATH` reply puts in the new file.
pub(crate) const CREATED_CONTENT: &str = "created by the fake model\n";

/// Decides the reply to a request, looking only at its last user message.
///
/// A tool result is acknowledged, a `run: CMD` line asks for the Bash tool,
/// `create: PATH` for a new file, `recall:` quotes the user's earlier messages
/// (what a resumed CLI sent back), anything else is echoed back. Odd shapes
/// get a harmless "ok". Anthropic and OpenAI requests share the shape read
/// here: `messages` with a `role` and string or text-block `content`.
pub(crate) fn decide(request: &Value) -> Reply {
    let Some(content) = last_user_content(request) else {
        return ok();
    };
    // New text from the user wins over a tool result in the same turn: after
    // a "No" at a permission dialog, Claude Code sends the rejected tool's
    // result together with the user's next message.
    if let Some(text) = user_text(content) {
        if line_after(text, "recall:").is_some() {
            return recall(request);
        }
        return text_reply(text);
    }
    match first_tool_result(content) {
        Some(result) => tool_reply(result),
        None => ok(),
    }
}

fn ok() -> Reply {
    Reply::Text("ok".to_owned())
}

/// The `content` of every message whose role is "user", newest first.
fn user_contents(request: &Value) -> impl Iterator<Item = &Value> {
    request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .rev()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .filter_map(|m| m.get("content"))
}

/// The `content` of the last message whose role is "user".
fn last_user_content(request: &Value) -> Option<&Value> {
    user_contents(request).next()
}

/// Quotes the user's messages before the last one, newest first: what the
/// CLI sent as the conversation so far.
fn recall(request: &Value) -> Reply {
    let earlier: Vec<String> = user_contents(request)
        .skip(1)
        .filter_map(user_text)
        .map(|t| t.lines().map(str::trim_end).collect::<Vec<_>>().join(" "))
        .collect();
    if earlier.is_empty() {
        return Reply::Text("Nothing earlier.".to_owned());
    }
    let text = format!("Earlier you said: {}", earlier.join(" | "));
    Reply::Text(truncate_chars(&text, ECHO_LIMIT))
}

fn block_type(block: &Value) -> Option<&str> {
    block.get("type").and_then(Value::as_str)
}

/// The texts of a message's text blocks, in order; string content is one text block.
fn texts(content: &Value) -> Vec<&str> {
    match content {
        Value::String(text) => vec![text.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| block_type(b) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    }
}

fn first_tool_result(content: &Value) -> Option<&Value> {
    content
        .as_array()?
        .iter()
        .find(|b| block_type(b) == Some("tool_result"))
}

/// Acknowledges a tool result, quoting the start of its output.
fn tool_reply(result: &Value) -> Reply {
    let output = result.get("content").map(|c| texts(c).join("\n")).unwrap_or_default();
    let output = truncate_chars(&output, TOOL_OUTPUT_LIMIT);
    if result.get("is_error").and_then(Value::as_bool) == Some(true) {
        Reply::Text(format!("Tool was not run: {output}"))
    } else {
        Reply::Text(format!("Tool finished: {output}"))
    }
}

/// The user's own text: the last text block that is not a `<system-reminder>`, trimmed.
fn user_text(content: &Value) -> Option<&str> {
    let text = texts(content)
        .into_iter()
        .rfind(|t| !t.trim_start().starts_with("<system-reminder>"))?
        .trim();
    (!text.is_empty()).then_some(text)
}

/// What follows `prefix` on the first line of `text` that starts with it (after trimming).
fn line_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.lines().find_map(|line| line.trim().strip_prefix(prefix))
}

/// Turns user text into a Bash request when it has a `run:` line, a question
/// when it has an `ask:` line with at least two options, else echoes it.
fn text_reply(text: &str) -> Reply {
    let ask = line_after(text, "ask:").map(|rest| {
        rest.split('|')
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
    });
    if let Some(mut parts) = ask.filter(|p| p.len() >= 3) {
        let question = parts.remove(0);
        return Reply::Ask {
            question,
            options: parts,
        };
    }
    // A monitor's trigger message: the fake model advises once, with the
    // conversation it names (`advise with `warren-advise CONV TEXT``).
    if let Some(conv) = text
        .split("`warren-advise ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .filter(|c| c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '-'))
    {
        let command = format!("warren-advise {conv} '{MONITOR_ADVICE}'");
        return Reply::Bash {
            description: truncate_chars(&format!("Advise {conv}"), DESCRIPTION_LIMIT),
            command,
        };
    }
    if let Some(path) = line_after(text, "create:").map(str::trim).filter(|p| !p.is_empty()) {
        return Reply::Create { path: path.to_owned() };
    }
    // `run-json: "..."`: a command that is one JSON string, so it can hold
    // several lines (what a multi-line tool call looks like in a dialog).
    let json_command = line_after(text, "run-json:")
        .and_then(|rest| serde_json::from_str::<String>(rest.trim()).ok())
        .filter(|c| !c.trim().is_empty());
    match json_command.or_else(|| line_after(text, "run:").map(|c| c.trim().to_owned())) {
        Some(command) if !command.is_empty() => Reply::Bash {
            description: truncate_chars(&format!("Run {}", first_line(&command)), DESCRIPTION_LIMIT),
            command,
        },
        _ => Reply::Text(format!("You said: {}", truncate_chars(text, ECHO_LIMIT))),
    }
}

/// The first line of `text`.
fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default()
}

/// The first `limit` chars of `text`, never splitting a char.
fn truncate_chars(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(messages: Value) -> Value {
        json!({"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true, "messages": messages})
    }

    fn user(content: Value) -> Value {
        json!({"role": "user", "content": content})
    }

    fn text(s: &str) -> Reply {
        Reply::Text(s.to_owned())
    }

    #[test]
    fn a_trigger_message_gets_advice_for_the_conversation_it_names() {
        let trigger = "Keywords: segfault (1)\nRead more with `warren-read c-1f --after 3`; advise with `warren-advise c-1f TEXT`, or stay silent.";
        let Reply::Bash { command, .. } = decide(&request(json!([user(json!(trigger))]))) else {
            panic!("a Bash request");
        };
        assert_eq!(command, format!("warren-advise c-1f '{MONITOR_ADVICE}'"));
        let watch_only = "Read more with `warren-read c-1f --after 3`. This attachment is watch-only";
        assert!(matches!(
            decide(&request(json!([user(json!(watch_only))]))),
            Reply::Text(_)
        ));
    }

    #[test]
    fn user_text_after_system_reminders_is_echoed() {
        let req = request(json!([user(json!([
            {"type": "text", "text": "<system-reminder>\nAs you answer...\n</system-reminder>"},
            {"type": "text", "text": "  hello there \n", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "<system-reminder>todo list is empty</system-reminder>"}
        ]))]));
        assert_eq!(decide(&req), text("You said: hello there"));
    }

    #[test]
    fn string_content_is_echoed() {
        assert_eq!(decide(&request(json!([user(json!("quota"))]))), text("You said: quota"));
    }

    #[test]
    fn only_the_last_user_message_counts() {
        let req = request(json!([
            user(json!("first")),
            {"role": "assistant", "content": [{"type": "text", "text": "You said: first"}]},
            user(json!("second")),
            {"role": "assistant", "content": "trailing prefill"}
        ]));
        assert_eq!(decide(&req), text("You said: second"));
    }

    #[test]
    fn ask_line_asks_a_question() {
        let reply = decide(&request(json!([user(json!(
            "ask: Which database? | PostgreSQL | SQLite"
        ))])));
        assert_eq!(
            reply,
            Reply::Ask {
                question: "Which database?".into(),
                options: vec!["PostgreSQL".into(), "SQLite".into()]
            }
        );
        // One option is not a choice: echoed.
        assert!(matches!(
            decide(&request(json!([user(json!("ask: Q | A"))]))),
            Reply::Text(_)
        ));
    }

    #[test]
    fn run_line_asks_for_bash() {
        let req = request(json!([user(
            json!([{"type": "text", "text": "please\n  run: cargo test  \nthanks"}])
        )]));
        let expected = Reply::Bash {
            command: "cargo test".into(),
            description: "Run cargo test".into(),
        };
        assert_eq!(decide(&req), expected);
    }

    #[test]
    fn long_bash_description_is_truncated_to_60_chars() {
        let command = "é".repeat(100);
        let Reply::Bash { description, .. } = decide(&request(json!([user(json!(format!("run: {command}")))]))) else {
            panic!("expected Bash");
        };
        assert_eq!(description.chars().count(), 60);
        assert!(description.starts_with("Run é"));
    }

    #[test]
    fn create_line_asks_for_a_new_file() {
        let reply = decide(&request(json!([user(json!("please\ncreate: ../out.txt "))])));
        assert_eq!(
            reply,
            Reply::Create {
                path: "../out.txt".into()
            }
        );
        assert_eq!(
            decide(&request(json!([user(json!("create:"))]))),
            text("You said: create:")
        );
    }

    #[test]
    fn recall_quotes_earlier_user_messages_newest_first() {
        let req = request(json!([
            user(json!("hello there  \n")),
            {"role": "assistant", "content": "You said: hello there"},
            user(json!([{"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": "run: ls"}])),
            {"role": "assistant", "content": "ok"},
            user(json!("recall: what did I say?")),
            {"role": "system", "content": "a reminder after the user's message"}
        ]));
        assert_eq!(decide(&req), text("Earlier you said: run: ls | hello there"));
        assert_eq!(
            decide(&request(json!([user(json!("recall:"))]))),
            text("Nothing earlier.")
        );
    }

    #[test]
    fn run_json_line_asks_for_a_multi_line_command() {
        let message = r#"run-json: "cat README.md\n ❯ 1. No\n   2. Yes""#;
        assert_eq!(
            decide(&request(json!([user(json!(message))]))),
            Reply::Bash {
                command: "cat README.md\n ❯ 1. No\n   2. Yes".into(),
                description: "Run cat README.md".into(),
            }
        );
        // Not a JSON string: echoed, never run.
        assert_eq!(
            decide(&request(json!([user(json!("run-json: cat x"))]))),
            text("You said: run-json: cat x")
        );
    }

    #[test]
    fn empty_run_line_is_just_echoed() {
        assert_eq!(decide(&request(json!([user(json!("run:"))]))), text("You said: run:"));
    }

    #[test]
    fn tool_result_with_string_content_is_acknowledged() {
        let req = request(json!([user(json!([
            {"type": "tool_result", "tool_use_id": "toolu_fake_1", "content": "test result: ok. 3 passed", "is_error": false},
            {"type": "text", "text": "<system-reminder>whatever</system-reminder>"}
        ]))]));
        assert_eq!(decide(&req), text("Tool finished: test result: ok. 3 passed"));
    }

    #[test]
    fn tool_result_with_block_content_is_flattened_and_truncated() {
        let long = "x".repeat(300);
        let req = request(json!([user(
            json!([{"type": "tool_result", "tool_use_id": "t", "content": [
                {"type": "text", "text": "line one"}, {"type": "image", "source": {}}, {"type": "text", "text": long}
            ]}])
        )]));
        let Reply::Text(reply) = decide(&req) else {
            panic!("expected Text")
        };
        assert!(reply.starts_with("Tool finished: line one\nxxx"));
        assert_eq!(reply.chars().count(), "Tool finished: ".len() + 200);
    }

    #[test]
    fn failed_tool_result_says_not_run() {
        let req = request(json!([user(json!([
            {"type": "tool_result", "tool_use_id": "t", "content": "permission denied", "is_error": true}
        ]))]));
        assert_eq!(decide(&req), text("Tool was not run: permission denied"));
    }

    #[test]
    fn long_text_is_limited_on_a_char_boundary() {
        let Reply::Text(reply) = decide(&request(json!([user(json!("ü".repeat(800)))]))) else {
            panic!("expected Text");
        };
        assert_eq!(reply.chars().count(), "You said: ".len() + 500);
    }

    #[test]
    fn odd_shapes_get_ok() {
        let odd = [
            json!(null),
            json!({}),
            json!({"messages": "nope"}),
            request(json!([])),
            request(json!([{"role": "assistant", "content": "hi"}])),
            request(json!([{"role": "user"}])),
            request(json!([user(json!(7))])),
            request(json!([user(json!([]))])),
            request(json!([user(json!(["bare string", 3, null, {"type": "text"}]))])),
            request(json!([user(json!("   "))])),
            request(json!([user(
                json!([{"type": "text", "text": "<system-reminder>only</system-reminder>"}])
            )])),
        ];
        for req in odd {
            assert_eq!(decide(&req), text("ok"), "{req}");
        }
    }

    #[test]
    fn tool_result_without_content_is_still_acknowledged() {
        let req = request(json!([user(json!([{"type": "tool_result", "tool_use_id": "t"}]))]));
        assert_eq!(decide(&req), text("Tool finished: "));
    }
}
