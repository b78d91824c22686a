//! The structured side channel of CLIs that have hooks (Claude Code): the CLI
//! runs `warren hook claude` at PreToolUse, PermissionRequest, Stop and
//! Notification, which reports the hook's JSON here (`supervision.hook`).
//! Hooks never decide anything and a hook that cannot reach the node exits
//! quietly, so a node problem never wedges the CLI. Supervision prefers the
//! hook's exact command over text read off the screen, but only when the
//! screen shows that same command: the screen confirms.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::service::{Node, NodeError, NodeResult};

/// Longest command kept from a hook.
const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// A tool request older than this is not matched to a dialog.
const FRESH_FOR: Duration = Duration::from_secs(600);

/// A tool call the CLI is about to make (PreToolUse / PermissionRequest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRequest {
    pub event: String,
    pub tool: String,
    pub command: Option<String>,
    pub at: Instant,
}

/// What one hook report means for the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookReport {
    ToolRequest {
        event: String,
        tool: String,
        command: Option<String>,
    },
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
            let command = v["tool_input"]["command"]
                .as_str()
                .filter(|c| c.len() <= MAX_COMMAND_BYTES)
                .map(str::to_string);
            HookReport::ToolRequest {
                event: event.to_string(),
                tool,
                command,
            }
        }
        "Stop" => HookReport::TurnEnded,
        other => HookReport::Other(other.to_string()),
    })
}

/// The hook's command, if it is the one the screen shows (wrapping and
/// indentation aside): the screen confirms what the hook says.
pub fn confirmed_command<'a>(hook: Option<&'a ToolRequest>, on_screen: Option<&str>, now: Instant) -> Option<&'a str> {
    let hook = hook.filter(|h| now.duration_since(h.at) <= FRESH_FOR)?;
    let command = hook.command.as_deref()?;
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    (squash(command) == squash(on_screen?)).then_some(command)
}

impl Node {
    /// `supervision.hook {conversation, event}`: only the conversation's own
    /// CLI (its instance token) reports its hooks.
    pub async fn supervision_hook(&self, conversation: &str, event: &Value, caller: Option<&str>) -> NodeResult<Value> {
        let agent = self
            .conversation_agent(conversation)
            .await
            .ok_or_else(|| NodeError::NotFound(format!("conversation {conversation:?} not found")))?;
        if caller != Some(agent.as_str()) {
            return Err(NodeError::Forbidden(
                "supervision.hook: only the conversation's own CLI (its instance token) reports hooks".into(),
            ));
        }
        let report = parse(event).map_err(NodeError::Invalid)?;
        let live = self
            .live(conversation)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {conversation} has no running CLI")))?;
        live.touch();
        if let Ok(mut h) = live.hook.lock() {
            match &report {
                HookReport::ToolRequest { event, tool, command } => {
                    *h = Some(ToolRequest {
                        event: event.clone(),
                        tool: tool.clone(),
                        command: command.clone(),
                        at: Instant::now(),
                    })
                }
                HookReport::TurnEnded => *h = None,
                HookReport::Other(_) => {}
            }
        }
        Ok(json!({ "recorded": true }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_payloads_are_read() {
        let pr = json!({"hook_event_name": "PermissionRequest", "tool_name": "Bash",
            "tool_input": {"command": "echo hi > out.txt", "description": "d"}});
        assert_eq!(
            parse(&pr),
            Ok(HookReport::ToolRequest {
                event: "PermissionRequest".into(),
                tool: "Bash".into(),
                command: Some("echo hi > out.txt".into())
            })
        );
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
    fn the_hook_command_counts_only_when_the_screen_shows_it() {
        let now = Instant::now();
        let hook = ToolRequest {
            event: "PermissionRequest".into(),
            tool: "Bash".into(),
            command: Some("cargo test --workspace --all-features -- --nocapture".into()),
            at: now,
        };
        // Wrapped on screen: still the same command.
        let wrapped = "cargo test --workspace --all-feat\n  ures -- --nocapture";
        assert_eq!(
            confirmed_command(Some(&hook), Some(wrapped), now),
            hook.command.as_deref()
        );
        // A different command on screen: the hook is not trusted.
        assert_eq!(confirmed_command(Some(&hook), Some("rm -rf /"), now), None);
        assert_eq!(confirmed_command(Some(&hook), None, now), None);
        assert_eq!(confirmed_command(None, Some(wrapped), now), None);
        // A stale report is not matched.
        let old = ToolRequest {
            at: now - Duration::from_secs(3600),
            ..hook.clone()
        };
        assert_eq!(confirmed_command(Some(&old), Some(wrapped), now), None);
    }
}
