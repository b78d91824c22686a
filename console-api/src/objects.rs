//! Objects carried in params and results: agents, conversations, transcript
//! events, screens. Params structs refuse unknown fields so a typo is an error
//! that names the field rather than a silently ignored option.

use serde::{Deserialize, Serialize};

/// What an agent may do (grants). Enforcement grows with the capabilities issue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    #[serde(default)]
    pub tools: Vec<String>,
    /// `"all"` or a list of agent names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peers: Option<serde_json::Value>,
    #[serde(default)]
    pub recall: bool,
    #[serde(default)]
    pub egress: Vec<String>,
}

/// Resource limits of an agent's conversation containers (Docker runtime);
/// unset fields take the node's `[docker]` defaults.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids: Option<i64>,
}

/// One rule of a fake-harness script: a regex over the submitted message and
/// the actions the fake CLI takes (see the fake CLI's rules file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FakeRule {
    #[serde(rename = "match")]
    pub pattern: String,
    pub actions: Vec<serde_json::Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    pub harness: String,
    pub persona: Option<String>,
    pub model: Option<String>,
    pub grants: Grants,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<FakeRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// The repository the agent works on (`agent.create {workspace}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<AgentWorkspace>,
    pub created_at: u64,
    pub updated_at: u64,
    pub archived: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentCreate {
    pub name: String,
    pub harness: String,
    #[serde(default)]
    pub persona: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub grants: Option<Grants>,
    /// Scripted behaviour for the `fake` harness.
    #[serde(default)]
    pub rules: Option<Vec<FakeRule>>,
    #[serde(default)]
    pub resources: Option<Resources>,
    /// A spend-rate bucket: the agent's conversations wait when it is empty.
    #[serde(default)]
    pub budget: Option<BudgetSpec>,
    /// A real repository to work on (a path on the agent's node, or a URL
    /// the node clones once).
    #[serde(default)]
    pub workspace: Option<WorkspaceSpec>,
}

/// `agent.create {workspace}` as asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSpec {
    pub repo: String,
    #[serde(default)]
    pub base: Option<String>,
    #[serde(default)]
    pub mode: WorkspaceMode,
}

/// Each conversation on its own worktree and branch, or in the repository
/// itself under a lease.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    #[default]
    Worktree,
    InPlace,
}

/// An agent's repository as the node resolved it: `repo` is the absolute
/// path of its top level (a clone in the agent's home for a URL, which is
/// kept in `url`), `base` the branch conversations are cut from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentWorkspace {
    pub repo: String,
    pub base: String,
    pub mode: WorkspaceMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// `conversation.get {workspace}`: where the conversation works; commits as
/// full hashes (`head` read from git when asked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConversationWorkspace {
    pub path: String,
    pub branch: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

/// `conversation.diff`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationDiff {
    pub conversation: String,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// One changed file of a diff: `status` is git's letter spelled out
/// (`added`, `modified`, `deleted`, `renamed`, `copied`, `type_changed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffFile {
    pub path: String,
    pub status: String,
    /// Lines added and deleted (0 and 0 for a binary file).
    pub additions: u64,
    pub deletions: u64,
}

/// Committed and uncommitted changes of a workspace against its baseline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diff {
    pub baseline: String,
    pub head: String,
    pub files: Vec<DiffFile>,
    pub patch: String,
    /// The patch was cut at `max_bytes` (the file list is whole).
    pub truncated: bool,
}

/// `agent.create {budget}`: dollars per hour and the bucket's size.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSpec {
    pub usd_per_hour: f64,
    pub burst_usd: f64,
}

/// `budget.set`: a new rate and/or burst (the accrued level is kept).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSet {
    pub agent: String,
    #[serde(default)]
    pub usd_per_hour: Option<f64>,
    #[serde(default)]
    pub burst_usd: Option<f64>,
}

/// `budget.topup`: add exactly `usd` to the agent's bucket.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetTopup {
    pub agent: String,
    pub usd: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentUpdate {
    pub agent: String,
    #[serde(default)]
    pub persona: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub grants: Option<Grants>,
    #[serde(default)]
    pub rules: Option<Vec<FakeRule>>,
    #[serde(default)]
    pub resources: Option<Resources>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentRef {
    pub agent: String,
}

/// `egress.audit`: an agent's allow-list and its guests' recorded egress
/// decisions, newest first (`limit` 1..=1000, default 100).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EgressAudit {
    pub agent: String,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConversationState {
    Starting,
    Active,
    Paused,
    Archived,
}

impl ConversationState {
    pub fn as_str(self) -> &'static str {
        match self {
            ConversationState::Starting => "starting",
            ConversationState::Active => "active",
            ConversationState::Paused => "paused",
            ConversationState::Archived => "archived",
        }
    }

    /// Live = has (or is getting) a running CLI.
    pub fn is_live(self) -> bool {
        matches!(self, ConversationState::Starting | ConversationState::Active)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Busy,
    Idle,
    Dialog,
    Exited,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conversation {
    pub id: String,
    pub agent: String,
    pub state: ConversationState,
    pub status: Status,
    pub created_at: u64,
    pub updated_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_ref: Option<String>,
    /// Why it was last paused (e.g. "node restarted", "cli exited").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pause_reason: Option<String>,
    /// How many times the CLI was launched for this conversation.
    pub launches: u32,
    /// When the CLI stopped by itself: its exit code, where the runtime knew it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// When the CLI stopped by itself: the last lines of its screen (what it said).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_lines: Vec<String>,
    /// Set while the conversation waits for its agent's budget
    /// (`"waiting"`: it continues by itself; `"exhausted"`: a human must act).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<String>,
    /// Where it works, when its agent has a workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<ConversationWorkspace>,
}

/// `conversation.continue`: resume with the CLI's native resume, or (`fresh`)
/// start the CLI anew in the same conversation, keeping its transcript.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationContinue {
    pub conversation: String,
    #[serde(default)]
    pub fresh: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationRef {
    pub conversation: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConversationList {
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub state: Option<ConversationState>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    pub conversation: String,
    pub text: String,
    /// Set by the member forwarding its monitor's advice (never by a
    /// client): the home prefixes the text and attributes it `monitor:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advice_from: Option<String>,
    /// A retry with the same key within 10 minutes gets the first call's
    /// result and types nothing (1 to 128 characters, no control characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SendMessageResult {
    pub message_id: String,
    pub delivered_at: u64,
    /// Seq of the transcript event that records the delivery.
    pub seq: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SendKeys {
    pub conversation: String,
    /// Raw keystrokes, sent as they are (UTF-8; control characters allowed).
    pub keys: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resize {
    pub conversation: String,
    pub rows: u16,
    pub cols: u16,
}

/// `conversation.screen {conversation, cells?}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScreenRead {
    pub conversation: String,
    /// Also answer the screen as styled runs (`Screen::cells`).
    #[serde(default)]
    pub cells: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Screen {
    pub rows: u16,
    pub cols: u16,
    pub lines: Vec<String>,
    /// `[row, col]`.
    pub cursor: (u16, u16),
    pub status: Status,
    /// The screen as styled runs, when asked for (`cells: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<ScreenCells>,
}

/// A screen's cells as runs of one style per row, and the cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenCells {
    /// One entry per screen row, top first: its runs, left to right. A row's
    /// trailing blank cells in the default style are left out.
    pub rows: Vec<Vec<Run>>,
    pub cursor: Cursor,
    /// The run budget ran out: rows from the first one over it carry their
    /// text as one unstyled run.
    #[serde(default, skip_serializing_if = "is_false")]
    pub truncated: bool,
}

/// Consecutive cells of one row with the same style. A wide character is
/// one character of `text` that covers two columns.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Run {
    pub text: String,
    /// How many columns `text` covers.
    pub width: u16,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fg: Option<CellColor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bg: Option<CellColor>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub bold: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub italic: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub underline: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub inverse: bool,
}

/// A cell colour: an index of the 256-colour palette (0-15 the terminal's
/// own sixteen) as a number, or RGB as `"#rrggbb"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CellColor {
    Indexed(u8),
    Rgb(String),
}

/// Where the cursor is (0-based) and whether the program shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub row: u16,
    pub col: u16,
    pub visible: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// One attributed transcript event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TranscriptEvent {
    pub conversation: String,
    pub seq: u64,
    pub ts: u64,
    /// `human` | `agent` | `tool` | `system` | `monitor:<agent>`.
    pub speaker: String,
    /// e.g. `message`, `reply`, `tool_output`, `lifecycle`, `terminal_input`.
    pub kind: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptRead {
    pub conversation: String,
    /// Return events with seq > after_seq (default 0).
    #[serde(default)]
    pub after_seq: Option<u64>,
    /// Alternatively: return events with seq >= from_seq.
    #[serde(default)]
    pub from_seq: Option<u64>,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TranscriptPage {
    pub events: Vec<TranscriptEvent>,
    /// The seq the next read should start from (`from_seq`), i.e. last + 1.
    pub next_seq: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TranscriptSubscribe {
    #[serde(default)]
    pub conversation: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
    /// Deliver stored events from this seq (inclusive) before live ones.
    /// Only with `conversation`. Absent: live events only.
    #[serde(default)]
    pub from_seq: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionRef {
    pub subscription: String,
}

/// `supervision.set`: only the fields given change (seed 000's shape).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionSet {
    pub agent: String,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// class -> `auto_approve` | `auto_deny` | `hold`, or `null` to reset to the default.
    #[serde(default)]
    pub classes: Option<std::collections::BTreeMap<String, Option<String>>>,
    #[serde(default)]
    pub mail_mode: Option<String>,
    #[serde(default)]
    pub nudge_text: Option<String>,
    #[serde(default)]
    pub stall_mins: Option<u32>,
    #[serde(default)]
    pub nudge_retries: Option<u32>,
    #[serde(default)]
    pub expect_work: Option<bool>,
}

/// `config.set` (local-only): the node's settings that change at runtime.
/// Today only `supervision`: the global supervision defaults (warren.toml's
/// `[supervision]` shape, the master switch `enabled` among them), merged
/// field by field onto the defaults in force and stored whole as the node's
/// own override; `null` clears the override (warren.toml's apply again).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigSet {
    pub supervision: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionAnswer {
    pub hold: String,
    /// `approve` or `deny`.
    pub decision: String,
    /// With `approve`: also learn the held command as a rule of the agent's
    /// workspace (local-only: standing authority).
    #[serde(default)]
    pub learn: bool,
}

/// `supervision.learn` / `supervision.forget`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionRule {
    pub agent: String,
    /// A command's words; a final `*` matches any further words.
    pub pattern: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionAudit {
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub limit: Option<u32>,
    #[serde(default)]
    pub before_id: Option<u64>,
}

/// `supervision.hook`: the hook's JSON as the CLI gave it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionHook {
    pub conversation: String,
    pub event: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SupervisionNudge {
    pub agent: String,
    #[serde(default)]
    pub conversation: Option<String>,
    /// Default: the agent's nudge text.
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsSubscribe {
    /// Event kinds wanted (default: all).
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
    /// Only events about this agent (`NAME` or `NAME@NODE`: an agent on
    /// another member is followed through the fabric).
    #[serde(default)]
    pub agent: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentFilter {
    #[serde(default)]
    pub agent: Option<String>,
}

/// One message in an agent's mailbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MailMessage {
    pub id: String,
    /// The inbox cursor of this message.
    pub seq: u64,
    pub ts: u64,
    pub from: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    pub body: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailSend {
    pub from: String,
    pub to: String,
    pub body: String,
    #[serde(default)]
    pub context: Option<String>,
}

/// `mailbox.outbox`: an agent's mail to agents homed on other members.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailOutbox {
    pub agent: String,
    /// Messages older than this seq (the previous page's `next_before`).
    #[serde(default)]
    pub before: Option<u64>,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailInbox {
    pub agent: String,
    /// Messages after this cursor (default: the agent's acknowledged cursor).
    #[serde(default)]
    pub after: Option<u64>,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MailAck {
    pub agent: String,
    pub cursor: u64,
}

/// `tool.invoke`: run an owner-defined tool with these arguments (argv, never a shell).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolInvoke {
    pub tool: String,
    #[serde(default)]
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallSearch {
    pub agent: String,
    pub query: String,
    #[serde(default)]
    pub limit: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallStash {
    pub agent: String,
    pub name: String,
    pub text: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecallForget {
    pub agent: String,
    pub name: String,
}

/// One recall hit: a stashed document or a line of the agent's own transcripts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecallHit {
    /// `doc` or `transcript`.
    pub source: String,
    /// The document's name, or `CONVERSATION#SEQ`.
    #[serde(rename = "ref")]
    pub reference: String,
    pub snippet: String,
    /// bm25: lower is better (SQLite's sign).
    pub score: f64,
}

/// One right to put in a token: `{resource: "agent:coder", operation: "observe"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RightSpec {
    pub resource: String,
    pub operation: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenMint {
    pub rights: Vec<RightSpec>,
    #[serde(default)]
    pub ttl_secs: Option<u64>,
    /// Only these methods.
    #[serde(default)]
    pub methods: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenMinted {
    pub token: String,
    pub revocation_ids: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRef {
    pub token: String,
}

/// `session.pair {code}`: a one-time code from `warren console pair`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairCode {
    pub code: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenInspection {
    /// Each block's Datalog, authority first.
    pub blocks: Vec<String>,
    pub revocation_ids: Vec<String>,
    /// Signed by a root this node trusts.
    pub verified: bool,
    pub revoked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRevoke {
    pub revocation_id: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NodeInfo {
    pub node_id: String,
    pub peer_id: Option<String>,
    pub version: String,
    pub protocol_version: u32,
    pub endpoint: String,
    pub runtime: String,
    pub started_at: u64,
    pub root_public_key: String,
    /// Authorizations denied because they hit the Datalog run limits.
    pub auth_limit_hits: u64,
    /// This node's name in the fleet.
    #[serde(default)]
    pub name: String,
    /// `{cpus, memory_mb, guests}`: what it has, and the guests it runs now.
    #[serde(default)]
    pub capacity: Option<serde_json::Value>,
    /// Problems in its harnesses' setup, one sentence each naming the setting.
    #[serde(default)]
    pub harness_warnings: Vec<String>,
    /// Its price table's source (as `spend.history`'s `pricing`).
    #[serde(default)]
    pub pricing: Option<serde_json::Value>,
    /// Its supervision defaults, the master switch among them.
    #[serde(default)]
    pub supervision_defaults: Option<serde_json::Value>,
}

/// `spend.history` params: inclusive UTC days (`YYYY-MM-DD`), one agent or all.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpendHistory {
    pub since_day: String,
    #[serde(default)]
    pub until_day: Option<String>,
    #[serde(default)]
    pub agent: Option<String>,
}

/// `usage.get` params: `scope` is `conversation`, `agent` or `node`;
/// `id` names the conversation or agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UsageGet {
    pub scope: String,
    #[serde(default)]
    pub id: Option<String>,
}
