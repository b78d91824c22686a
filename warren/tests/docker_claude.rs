//! The real Claude Code CLI tier inside the `claude` guest image: the same
//! round trip, supervision approve and hold scenarios, hooks and resume as
//! claude.rs, through node -> container -> guest -> real claude -> the fake
//! model server. Needs a Docker engine: without one these fail.

mod support;

const RUNTIME: &str = "docker";

include!("cases/claude.rs");
include!("cases/claude_agents.rs");
include!("cases/claude_workspace.rs");
include!("cases/claude_task.rs");
