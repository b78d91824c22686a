//! Harness adapters: what the node knows about each CLI. How to launch it fresh
//! and resumed, which config files it reads from the agent's home, how to read
//! its status and dialogs off the screen, and where its own structured session
//! file is (the transcript source).

pub mod aider;
pub mod aider_screen;
pub mod claude;
pub mod codex;
pub mod codex_screen;
pub mod fake;
pub mod frame;
pub mod hooks;
pub mod setup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use console_api::Status;

use crate::runtime::ScreenSnapshot;
use node_store::events::AgentRecord;

/// What Claude Code prints (and exits 1) when `--resume` names a session it
/// does not have (the fake CLI says it the same way).
pub const CLAUDE_MISSING_SESSION: &str = "No conversation found with session ID";

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("harness {0:?} has no adapter on this node yet")]
    Unsupported(String),
    #[error("could not prepare the agent's home: {0}")]
    Home(String),
    /// A setting the adapter cannot launch with.
    #[error("{0}")]
    Setting(setup::SetupProblem),
}

/// Everything an adapter needs to plan a launch.
pub struct LaunchContext<'a> {
    pub agent: &'a AgentRecord,
    /// The agent's durable home (the CLI's config and session store).
    pub home: &'a Path,
    /// The agent's working directory.
    pub workspace: &'a Path,
    /// The CLI's native session reference for this conversation.
    pub resume_ref: &'a str,
    /// true: relaunch with the CLI's native resume.
    pub resume: bool,
    /// This node's own executable (the fake CLI is a verb of it).
    pub self_exe: &'a Path,
    /// `[harnesses.NAME]` from warren.toml.
    pub settings: &'a HarnessSettings,
    /// The warren tools mounted for this conversation (`warren-read`, ...):
    /// the CLI may run them without asking.
    pub tools: &'a [String],
    /// What the CLI is told about its tools (a short prompt section; empty
    /// when none are mounted).
    pub tool_notes: &'a str,
    /// The `warren` binary as the CLI sees it (hooks call it by this path:
    /// it is not on the CLI's PATH).
    pub warren_exe: &'a Path,
}

/// Per-harness settings (`[harnesses.claude]` in warren.toml): the CLI's
/// program and the environment it needs, e.g. its model endpoint and key.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessSettings {
    /// The CLI's program (default: its usual name, found on PATH). In a
    /// guest container the image's own program of that file name runs.
    pub program: Option<PathBuf>,
    /// The guest image (default `warren/guest-NAME:latest`).
    pub image: Option<String>,
    /// Added to the CLI's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

pub struct LaunchPlan {
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Added to the runtime's base environment.
    pub env: Vec<(String, String)>,
    /// Files to write under the agent's home before launch: (relative path, content).
    pub files: Vec<(PathBuf, Vec<u8>)>,
    /// The CLI's own session file, tailed for the transcript.
    pub transcript_file: Option<PathBuf>,
}

/// A dialog as the screen shows it. Two reads are the same dialog when they
/// are equal (what verified send and holds compare).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    pub title: String,
    /// The dialog's rows as drawn, trimmed at the end: for the Claude Code
    /// layout every row from the rule that opens it to its footer; for aider
    /// the question and its subject.
    pub lines: Vec<String>,
    /// Option rows as shown, e.g. `1. Yes` (for display; answers come from
    /// the adapter's template read).
    pub options: Vec<String>,
    /// The screen's width (where a row is full and continues on the next).
    pub cols: u16,
}

/// One turn's token use and cost as the CLI itself reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportedUsage {
    /// The model, when the report names it.
    pub model: Option<String>,
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The cost the CLI computed; `None` when it knows no price for the model.
    pub usd: Option<f64>,
}

/// One entry of the CLI's own session file, attributed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub speaker: &'static str,
    pub kind: &'static str,
    pub text: String,
}

pub trait Harness: Send + Sync {
    fn name(&self) -> &'static str;
    /// The program a launch runs: `[harnesses.NAME] program`, else the CLI's
    /// usual name (looked up on PATH) or, for the fake CLI, this node's own
    /// executable.
    fn program(&self, settings: &HarnessSettings, self_exe: &Path) -> PathBuf;
    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError>;
    fn status(&self, screen: &ScreenSnapshot) -> Status;
    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog>;
    /// Parses one line of the CLI's session file; `None` for lines that carry
    /// no transcript entry.
    fn parse_session_line(&self, line: &str) -> Option<Entry>;
    /// What supervision classifies, read from the dialog's fixed frame by
    /// this CLI's templates: title, question, command, paths, options, and
    /// the answers by meaning (filled only when the frame matched a template
    /// exactly; never dependent on `hook`), with a `doubt` when the content
    /// was not read for sure. `hook` is the CLI's own fresh report of the tool
    /// call, when it has hooks: the source of the command or path, which the
    /// screen must agree with.
    fn supervision_dialog(
        &self,
        dialog: &Dialog,
        cwd: &Path,
        hook: Option<&crate::harness::hooks::ToolRequest>,
    ) -> supervision::Dialog;
    /// How this CLI says that the session a `--resume` names does not exist:
    /// its own line among the last lines of its screen, if it printed one.
    /// The default knows no such phrase (the pause then quotes the last lines).
    fn missing_session_words<'a>(&self, _last_lines: &'a [String]) -> Option<&'a str> {
        None
    }
    /// Whether the CLI reports each turn's end itself (a hook), so a turn
    /// ends with that report rather than when the screen goes idle (which a
    /// CLI waiting on a tool or a dialog can look like).
    fn reports_turn_end(&self) -> bool {
        false
    }
    /// The arguments that open the CLI's own login flow (added to a fresh
    /// launch), or `None` when it has none (its key comes from a secret).
    fn login_args(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// The length of the first complete record at the start of `unread` (the
    /// part of the session file not read yet), its final newline included;
    /// `None` until one is complete. `parse_session_line` gets each record
    /// without that newline. By default a record is one line (JSON lines); a
    /// CLI whose file is markdown (aider) groups lines into messages.
    fn session_record_len(&self, unread: &[u8]) -> Option<usize> {
        unread.iter().position(|b| *b == b'\n').map(|nl| nl + 1)
    }
    /// The CLI's session file, given the plan's `transcript_file`: that path
    /// itself, unless the CLI names its file (Codex: the newest rollout under
    /// the planned directory); `None` while there is none.
    fn session_file(&self, planned: &Path) -> Option<PathBuf> {
        Some(planned.to_path_buf())
    }
    /// A tool call the CLI recorded in its session file (Codex's
    /// `exec_command`): the source of a dialog's command, as a hook is for
    /// Claude Code.
    fn tool_request(&self, _line: &str) -> Option<hooks::ToolRequest> {
        None
    }
    /// Whether a line of the CLI's session file records the end of a turn
    /// (Codex's `task_complete` and `turn_aborted`), for a CLI that
    /// `reports_turn_end` that way.
    fn turn_ended(&self, _line: &str) -> bool {
        false
    }
    /// The file where the CLI reports each turn's token use and cost, one
    /// JSON line per report, if it writes one (tailed for usage).
    fn usage_file(&self, _home: &Path, _resume_ref: &str) -> Option<PathBuf> {
        None
    }
    /// One line of `usage_file`: a turn's usage, or `None` for other lines.
    fn parse_usage_line(&self, _line: &str) -> Option<ReportedUsage> {
        None
    }
}

/// Every harness with an adapter here (what `adapter` accepts): keep the two
/// in step.
pub const ADAPTERS: [&str; 4] = ["fake", "claude", "codex", "aider"];

/// The adapter for `harness`, if this node has one.
pub fn adapter(harness: &str) -> Result<&'static dyn Harness, HarnessError> {
    match harness {
        "fake" => Ok(&fake::FakeHarness),
        "claude" => Ok(&claude::ClaudeHarness),
        "codex" => Ok(&codex::CodexHarness),
        "aider" => Ok(&aider::AiderHarness),
        other => Err(HarnessError::Unsupported(other.to_string())),
    }
}
