//! The structured side channel of CLIs that have hooks (Claude Code): the CLI
//! runs `warren hook claude` at PreToolUse, PermissionRequest, Stop and
//! Notification, which reports the hook's JSON here (`supervision.hook`).
//! Hooks never decide anything and a hook that cannot reach the node exits
//! quietly, so a node problem never wedges the CLI. A fresh tool request is
//! the authoritative source of a dialog's command, path and working directory
//! (what the CLI will really run), and the screen must agree with it
//! (`harness::frame`): else supervision holds.

use std::time::{Duration, Instant};

use serde_json::Value;

/// Longest command kept from a hook.
const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// Longest description, path or working directory kept from a hook.
const MAX_FIELD_BYTES: usize = 8 * 1024;
/// A tool request older than this is not matched to a dialog.
const FRESH_FOR: Duration = Duration::from_secs(600);

/// A tool call the CLI is about to make (PreToolUse / PermissionRequest):
/// `tool_input.command`, `.description`, `.file_path` and the hook's `cwd`.
/// A field too long to keep is absent (the screen alone then decides, and a
/// long command is held).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRequest {
    pub event: String,
    pub tool: String,
    pub command: Option<String>,
    pub description: Option<String>,
    pub file_path: Option<String>,
    pub cwd: Option<String>,
    pub at: Instant,
}

impl ToolRequest {
    /// Whether the report is recent enough to describe the dialog on screen.
    pub fn fresh(&self, now: Instant) -> bool {
        now.duration_since(self.at) <= FRESH_FOR
    }
}

/// What one hook report means for the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookReport {
    /// A tool request (its `at` is when the node read it).
    ToolRequest(ToolRequest),
    /// The turn ended (Stop).
    TurnEnded,
    /// Anything else the CLI reported (Notification, ...): activity only.
    Other(String),
}

/// Reads a hook's JSON (pure). Errors name what is missing.
pub fn parse(v: &Value) -> Result<HookReport, String> {
    let event = v["hook_event_name"]
        .as_str()
        .ok_or("event.hook_event_name: missing (not a Claude Code hook payload)")?;
    Ok(match event {
        "PreToolUse" | "PermissionRequest" => {
            let tool = v["tool_name"].as_str().ok_or("event.tool_name: missing")?.to_string();
            let text = |value: &Value, max: usize| value.as_str().filter(|c| c.len() <= max).map(str::to_string);
            let input = &v["tool_input"];
            HookReport::ToolRequest(ToolRequest {
                event: event.to_string(),
                tool,
                command: text(&input["command"], MAX_COMMAND_BYTES),
                description: text(&input["description"], MAX_FIELD_BYTES),
                file_path: text(&input["file_path"], MAX_FIELD_BYTES)
                    .or_else(|| text(&input["notebook_path"], MAX_FIELD_BYTES)),
                cwd: text(&v["cwd"], MAX_FIELD_BYTES),
                at: Instant::now(),
            })
        }
        "Stop" => HookReport::TurnEnded,
        other => HookReport::Other(other.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(report: Result<HookReport, String>) -> ToolRequest {
        match report {
            Ok(HookReport::ToolRequest(r)) => r,
            other => panic!("not a tool request: {other:?}"),
        }
    }

    #[test]
    fn claude_payloads_are_read() {
        let pr = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash", "cwd": "/w",
            "tool_input": {"command": "echo hi > out.txt", "description": "d"}});
        let r = request(parse(&pr));
        assert_eq!((r.event.as_str(), r.tool.as_str()), ("PermissionRequest", "Bash"));
        assert_eq!(r.command.as_deref(), Some("echo hi > out.txt"));
        assert_eq!(r.description.as_deref(), Some("d"));
        assert_eq!((r.file_path, r.cwd.as_deref()), (None, Some("/w")));
        let write = json!({"hook_event_name": "PreToolUse", "tool_name": "Write", "cwd": "/w",
            "tool_input": {"file_path": "/w/notes.txt", "content": "x"}});
        let r = request(parse(&write));
        assert_eq!((r.file_path.as_deref(), r.command), (Some("/w/notes.txt"), None));
        // Too long to keep: absent, never cut.
        let long = json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": "x".repeat(MAX_COMMAND_BYTES + 1)}});
        assert_eq!(request(parse(&long)).command, None);
        assert_eq!(parse(&json!({"hook_event_name": "Stop"})), Ok(HookReport::TurnEnded));
        assert_eq!(
            parse(&json!({"hook_event_name": "Notification", "message": "m"})),
            Ok(HookReport::Other("Notification".into()))
        );
        let e = parse(&json!({"tool_name": "Bash"})).expect_err("no event name");
        assert!(e.contains("hook_event_name"), "{e}");
        let e = parse(&json!({"hook_event_name": "PreToolUse"})).expect_err("no tool");
        assert!(e.contains("tool_name"), "{e}");
    }

    #[test]
    fn an_old_report_is_not_fresh() {
        let now = Instant::now();
        let mut r = request(parse(&json!({"hook_event_name": "PreToolUse", "tool_name": "Bash"})));
        assert!(r.fresh(now + Duration::from_secs(1)));
        r.at = now;
        assert!(!r.fresh(now + FRESH_FOR + Duration::from_secs(1)));
    }
}
