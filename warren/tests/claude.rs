//! The real Claude Code CLI under supervision, offline: the project's fake
//! Anthropic server (streaming SSE) stands in for the model, `run: CMD` makes
//! it ask for a Bash tool call, and the CLI shows its real permission dialog.
//! Routine repo-scoped commands are approved without a human; the veto, an
//! out-of-scope path and a human's answer behave as with the fake CLI; the
//! hooks deliver the exact command; pause + continue uses `claude --resume`.

mod support;

const RUNTIME: &str = "local";

include!("cases/claude.rs");
include!("cases/claude_agents.rs");
include!("cases/claude_workspace.rs");
include!("cases/claude_task.rs");
