//! Stored event records: what the event log holds, one variant per fact. These
//! are storage types, separate from the wire types in `console-api`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// What the store must promise before a write is acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Committed with `synchronous=FULL`: survives power loss once acknowledged.
    /// Agent definitions and the conversation catalog.
    Full,
    /// Committed with `synchronous=NORMAL` in WAL mode: survives a process
    /// crash (`kill -9`); a power loss may drop the last commits. Transcript deltas.
    Relaxed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrantsRecord {
    #[serde(default)]
    pub tools: Vec<String>,
    #[serde(default)]
    pub peers: Option<serde_json::Value>,
    #[serde(default)]
    pub recall: bool,
    #[serde(default)]
    pub egress: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleRecord {
    pub pattern: String,
    pub actions: Vec<serde_json::Value>,
}

/// An agent's stored definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentRecord {
    pub name: String,
    pub harness: String,
    pub persona: Option<String>,
    pub model: Option<String>,
    pub grants: GrantsRecord,
    #[serde(default)]
    pub rules: Vec<RuleRecord>,
    /// Container limits (Docker runtime); unset fields: the node's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<console_api::Resources>,
    /// The repository it works on, as resolved at `agent.create`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<console_api::AgentWorkspace>,
}

/// One fact in the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    AgentCreated {
        agent: AgentRecord,
    },
    /// The whole definition after the update (the fold replaces it).
    AgentUpdated {
        agent: AgentRecord,
    },
    AgentArchived {
        name: String,
    },
    /// A new conversation, in state `starting`; the resume reference is chosen
    /// by the node up front (the CLI is told to use it as its session id).
    ConversationCreated {
        id: String,
        agent: String,
        resume_ref: Option<String>,
        /// A login session (`agent.login`): the CLI's own login flow, not
        /// supervised, ended (archived) when the CLI exits.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        login: bool,
    },
    /// The CLI is running: `starting` -> `active`.
    ConversationLaunched {
        id: String,
        resumed: bool,
    },
    /// `active`/`starting` -> `paused`. `planned` is false for crashes, exits
    /// and node restarts.
    ConversationPaused {
        id: String,
        planned: bool,
        reason: String,
        /// Set when the CLI stopped by itself: what it said on the way out.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit: Option<CliExit>,
    },
    /// `continue`: `paused` -> `starting`. `fresh`: the CLI starts anew (its
    /// own context is not restored) under a new session reference.
    ConversationContinued {
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fresh: Option<FreshStart>,
    },
    ConversationArchived {
        id: String,
        reason: String,
    },
    /// The conversation holds workspace `path` (its worktree, or the
    /// repository itself in place) from its creation until it is archived;
    /// `branch` is what it works on, cut from `baseline`.
    WorkspaceLeased {
        id: String,
        path: String,
        branch: String,
        baseline: String,
    },
    /// A message from one agent to another (the mailbox's command).
    MailSent {
        id: String,
        from: String,
        to: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        body: String,
    },
    /// Mail to agents homed on member `node` was handed over up to `upto`
    /// (the seq of message `id`, a `MailSent` to `NAME@node`): the member
    /// stored it, or `refused` it for good (the reason).
    MailForwarded {
        node: String,
        upto: u64,
        id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
    },
    /// `agent` has read its inbox up to `cursor` (a mail event's seq).
    MailAcked {
        agent: String,
        cursor: u64,
    },
    /// The node delivered `agent`'s mail up to `upto` (a mail event's seq)
    /// into `conversation`, confirmed by the CLI taking it: as each message's
    /// full body (`full_body`), or as one nudge line. Committed once the CLI
    /// has taken it, so a restarted node does not deliver it again.
    MailDelivered {
        agent: String,
        conversation: String,
        upto: u64,
        full_body: bool,
    },
    /// An agent's supervision override, whole, after a `supervision.set`.
    SupervisionSet {
        agent: String,
        policy: supervision::AgentOverride,
    },
    /// The node's own global supervision defaults after a `config.set`,
    /// whole; `None` clears them (warren.toml's `[supervision]` applies again).
    /// The newest one wins over warren.toml.
    SupervisionDefaults {
        defaults: Option<supervision::SupervisionConfig>,
    },
    /// One supervision audit row (seed 000's `supervision_log`): every action
    /// supervision attempted or declined. Its id is the event's seq.
    SupervisionActed {
        agent: String,
        conversation: Option<String>,
        fields: supervision::AuditFields,
        pane_excerpt: String,
        /// Set on the outcome of a verified send: the seq of the `attempted`
        /// row it completes (the two fold into one audit row with that id).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempt: Option<u64>,
    },
    /// A workspace's learned approval rule (seed 000): a confirmed command
    /// pattern that may lift a hold on an already repo-scoped `command_exec`.
    /// `learned` false forgets it; `by` says who (e.g. "human via supervision.answer").
    ApprovalRule {
        /// The agent's workspace directory.
        workspace: String,
        pattern: String,
        learned: bool,
        by: String,
    },
    /// Definition files of a workspace as a human accepted them (the
    /// repository-code rule's memory, `definitions.rs`): each path (relative
    /// to the workspace) with its content fingerprint, `None` when accepted
    /// as absent. The first for a workspace is its baseline.
    DefinitionsAccepted {
        workspace: String,
        files: BTreeMap<String, Option<String>>,
        by: String,
    },
    /// An agent secret was set or removed (the name only: values are kept
    /// outside the log, see `secrets.rs`).
    AgentSecret {
        agent: String,
        name: String,
        set: bool,
    },
    /// This node is a member of the fleet whose root is `root` (hex), by
    /// `cert` (self-issued by the owner's node, or from the inviter).
    FleetJoined {
        root: String,
        cert: fabric::Certificate,
    },
    /// Another member, known by its certificate.
    FleetMember {
        cert: fabric::Certificate,
    },
    /// The owner removed a member (signed by the fleet root).
    FleetRemoved {
        removal: fabric::Removal,
    },
    /// A join code was printed (the secret's hash only).
    FleetInvite {
        secret_hash: String,
        expires_at: u64,
    },
    /// A join code was used by `node_id`: it is refused from now on.
    FleetInviteUsed {
        secret_hash: String,
        node_id: String,
    },
    /// A token (any token one of whose blocks has this revocation id) is dead.
    TokenRevoked {
        revocation_id: String,
    },
    /// Something the node did to or refused from a guest container: `what` is
    /// `refused` (a replayed, expired or unknown launch token) or `reaped`
    /// (an orphan container stopped and removed).
    Guest {
        conversation: String,
        what: String,
        reason: String,
        /// Refusals this record stands for (refusals are coalesced per
        /// address and window); absent: one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
        /// The address refused hellos came from.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        source: Option<String>,
    },
    /// The egress proxy decided a guest's connection: every refusal (coalesced
    /// into `count` when a guest repeats itself) and a sample of what was
    /// allowed. `rule` is the model endpoint or grant that allowed it, or why
    /// it was refused.
    Egress {
        conversation: String,
        agent: String,
        dest: String,
        port: u16,
        allowed: bool,
        rule: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
    },
    /// Instance tokens were issued to a conversation (launch or renewal): a
    /// restarted node revokes them, whatever became of the CLI.
    InstanceTokenIssued {
        conversation: String,
        revocation_ids: Vec<String>,
    },
    /// A guest attached to a conversation; `key_hash` (sha256, hex) of the
    /// session key it reconnects with, so a restarted node can re-adopt it.
    GuestAttached {
        conversation: String,
        key_hash: String,
    },
    /// One attributed transcript delta. `cursor` is the byte offset in the
    /// CLI's session file just past the line this came from (file-derived
    /// events only): committed with the event, it says where to resume reading.
    Transcript {
        conversation: String,
        seq: u64,
        speaker: String,
        kind: String,
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<u64>,
    },
    /// One turn's token use and cost as the CLI reported it (the first slice
    /// of usage: aider's analytics log). `cursor` is the byte offset in the
    /// CLI's usage file just past the report's line, as for transcripts.
    /// `usd_reported` is the CLI's own figure, `None` when it had no price.
    UsageRecorded {
        conversation: String,
        agent: String,
        harness: String,
        model: String,
        input: u64,
        output: u64,
        cache_read: u64,
        cache_write: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usd_reported: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cursor: Option<u64>,
    },
    /// An owner-defined tool ran for an agent: who, what, how it ended. The
    /// output is returned to the caller and never stored.
    ToolInvoked {
        agent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
        tool: String,
        /// The arguments, each cut to 256 bytes, at most 32 of them.
        args: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        duration_ms: u64,
        truncated: bool,
        /// Why it did not finish by itself (`timed out after 5 s`), if so.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
    },
    /// A document was stashed into an agent's recall (replacing one of the
    /// same name).
    RecallStashed {
        agent: String,
        name: String,
        text: String,
    },
    /// A stashed document was forgotten.
    RecallForgot {
        agent: String,
        name: String,
    },
    /// A monitor was attached (`spec`: the normalized `monitor.attach` params).
    MonitorAttached {
        attachment: String,
        spec: monitor::AttachmentSpec,
    },
    MonitorDetached {
        attachment: String,
    },
    /// A fact about an attachment's circuit breaker.
    MonitorBreaker {
        attachment: String,
        event: monitor::BreakerEvent,
    },
    /// The highest seq of a target conversation that fired (deltas up to it
    /// are never matched again, across restarts).
    MonitorCursor {
        attachment: String,
        conversation: String,
        seq: u64,
    },
    /// The monitor's own conversation for one target conversation.
    MonitorConversation {
        attachment: String,
        target: String,
        conversation: String,
    },
    /// An agent's spend-rate budget (`agent.create {budget}`, `budget.set`):
    /// the rate and burst after the change, in micro-dollars.
    BudgetSet {
        agent: String,
        micros_per_hour: i64,
        burst_micros: i64,
    },
    /// A human added exactly `micros` to the agent's bucket.
    BudgetToppedUp {
        agent: String,
        micros: i64,
    },
    /// Recorded usage was charged: `micros` for `requests` requests (one
    /// event per ledger commit or usage report).
    BudgetCharged {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
        micros: i64,
        requests: u64,
    },
    /// The bucket cannot cover the next step: the agent's conversation waits
    /// (its CLI frozen) and the node decides again in `retry_after_ms`.
    BudgetWaiting {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
        retry_after_ms: u64,
    },
    /// The bucket covers the next step again: the conversation continues.
    BudgetResumed {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
    },
    /// Accrual will not do (a zero or far too slow rate): a human was asked.
    BudgetExhausted {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        conversation: Option<String>,
    },
    /// A change to an unattended task (seed 001), as the `tasks` crate decided it.
    Task {
        task: String,
        event: tasks::TaskEvent,
    },
}

/// How a CLI that stopped by itself left: its exit code (where the runtime
/// knew it) and the last lines of its screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CliExit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub last_lines: Vec<String>,
}

/// A conversation continued fresh: the CLI's new session reference, and the
/// transcript seq from which lines read from its session file count (the old
/// file's read positions mean nothing in the new one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FreshStart {
    pub resume_ref: String,
    pub cursor_floor: u64,
}

impl Event {
    /// The `kind` column.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::AgentCreated { .. } => "agent_created",
            Event::AgentUpdated { .. } => "agent_updated",
            Event::AgentArchived { .. } => "agent_archived",
            Event::ConversationCreated { .. } => "conversation_created",
            Event::ConversationLaunched { .. } => "conversation_launched",
            Event::ConversationPaused { .. } => "conversation_paused",
            Event::ConversationContinued { .. } => "conversation_continued",
            Event::ConversationArchived { .. } => "conversation_archived",
            Event::WorkspaceLeased { .. } => "workspace_leased",
            Event::MailSent { .. } => "mail_sent",
            Event::MailForwarded { .. } => "mail_forwarded",
            Event::MailAcked { .. } => "mail_acked",
            Event::MailDelivered { .. } => "mail_delivered",
            Event::SupervisionSet { .. } => "supervision_set",
            Event::SupervisionDefaults { .. } => "supervision_defaults",
            Event::SupervisionActed { .. } => "supervision_acted",
            Event::ApprovalRule { .. } => "approval_rule",
            Event::DefinitionsAccepted { .. } => "definitions_accepted",
            Event::TokenRevoked { .. } => "token_revoked",
            Event::AgentSecret { .. } => "agent_secret",
            Event::FleetJoined { .. } => "fleet_joined",
            Event::FleetMember { .. } => "fleet_member",
            Event::FleetRemoved { .. } => "fleet_removed",
            Event::FleetInvite { .. } => "fleet_invite",
            Event::FleetInviteUsed { .. } => "fleet_invite_used",
            Event::Guest { .. } => "guest",
            Event::Egress { .. } => "egress",
            Event::GuestAttached { .. } => "guest_attached",
            Event::InstanceTokenIssued { .. } => "instance_token_issued",
            Event::Transcript { .. } => "transcript",
            Event::UsageRecorded { .. } => "usage_recorded",
            Event::MonitorAttached { .. } => "monitor_attached",
            Event::MonitorDetached { .. } => "monitor_detached",
            Event::MonitorBreaker { .. } => "monitor_breaker",
            Event::MonitorCursor { .. } => "monitor_cursor",
            Event::MonitorConversation { .. } => "monitor_conversation",
            Event::ToolInvoked { .. } => "tool_invoked",
            Event::RecallStashed { .. } => "recall_stashed",
            Event::RecallForgot { .. } => "recall_forgot",
            Event::BudgetSet { .. } => "budget_set",
            Event::BudgetToppedUp { .. } => "budget_topped_up",
            Event::BudgetCharged { .. } => "budget_charged",
            Event::BudgetWaiting { .. } => "budget_waiting",
            Event::BudgetResumed { .. } => "budget_resumed",
            Event::BudgetExhausted { .. } => "budget_exhausted",
            Event::Task { .. } => "task",
        }
    }

    /// The conversation this event is about, if any (the `conversation` column).
    pub fn conversation(&self) -> Option<&str> {
        match self {
            Event::ConversationCreated { id, .. }
            | Event::ConversationLaunched { id, .. }
            | Event::ConversationPaused { id, .. }
            | Event::ConversationContinued { id, .. }
            | Event::ConversationArchived { id, .. }
            | Event::WorkspaceLeased { id, .. } => Some(id),
            Event::Transcript { conversation, .. } | Event::UsageRecorded { conversation, .. } => Some(conversation),
            Event::SupervisionActed { conversation, .. } => conversation.as_deref(),
            Event::Guest { conversation, .. }
            | Event::Egress { conversation, .. }
            | Event::GuestAttached { conversation, .. }
            | Event::InstanceTokenIssued { conversation, .. } => Some(conversation),
            Event::ToolInvoked { conversation, .. }
            | Event::BudgetCharged { conversation, .. }
            | Event::BudgetWaiting { conversation, .. }
            | Event::BudgetResumed { conversation, .. }
            | Event::BudgetExhausted { conversation, .. } => conversation.as_deref(),
            _ => None,
        }
    }

    /// The durability each kind is committed with (see ARCHITECTURE.md).
    pub fn durability(&self) -> Durability {
        match self {
            // An attempt is on disk before its keys are typed.
            Event::SupervisionActed { fields, .. } if fields.outcome == supervision::Outcome::Attempted => {
                Durability::Full
            }
            // Usage is re-read from the CLI's file past the last committed
            // cursor: a report lost with a commit is recorded again. An
            // egress record lost with a crash loses only a sample.
            Event::Transcript { .. }
            | Event::SupervisionActed { .. }
            | Event::UsageRecorded { .. }
            | Event::Egress { .. } => Durability::Relaxed,
            _ => Durability::Full,
        }
    }
}

/// An event as committed: with its global sequence number and time (unix ms).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: u64,
    pub ts: u64,
    pub event: Event,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_text() -> impl Strategy<Value = String> {
        "[a-z \\n\u{e9}\u{1F600}]{0,20}"
    }

    fn arb_event() -> impl Strategy<Value = Event> {
        prop_oneof![
            (arb_text(), arb_text()).prop_map(|(name, persona)| Event::AgentCreated {
                agent: AgentRecord {
                    name,
                    harness: "fake".into(),
                    persona: Some(persona),
                    model: None,
                    grants: GrantsRecord {
                        tools: vec![],
                        peers: None,
                        recall: true,
                        egress: vec![]
                    },
                    rules: vec![],
                    resources: None,
                    workspace: None,
                }
            }),
            (arb_text(), arb_text(), any::<bool>()).prop_map(|(workspace, pattern, learned)| Event::ApprovalRule {
                workspace,
                pattern,
                learned,
                by: "local admin".into(),
            }),
            (arb_text(), arb_text(), proptest::option::of(arb_text())).prop_map(|(workspace, path, fingerprint)| {
                Event::DefinitionsAccepted {
                    workspace,
                    files: BTreeMap::from([(path, fingerprint)]),
                    by: "human".into(),
                }
            }),
            (arb_text(), any::<bool>(), arb_text(), any::<Option<i32>>()).prop_map(|(id, planned, reason, code)| {
                Event::ConversationPaused {
                    id,
                    planned,
                    exit: code.map(|code| CliExit {
                        code: Some(code),
                        last_lines: vec![reason.clone()],
                    }),
                    reason,
                }
            }),
            (arb_text(), arb_text(), any::<u64>()).prop_map(|(id, resume_ref, cursor_floor)| {
                Event::ConversationContinued {
                    id,
                    fresh: Some(FreshStart {
                        resume_ref,
                        cursor_floor,
                    }),
                }
            }),
            (arb_text(), any::<u32>(), any::<Option<u32>>(), any::<Option<u64>>()).prop_map(
                |(conversation, input, cents, cursor)| Event::UsageRecorded {
                    conversation,
                    agent: "a".into(),
                    harness: "aider".into(),
                    model: "gpt-4o-mini".into(),
                    input: input.into(),
                    output: 7,
                    cache_read: 0,
                    cache_write: 1,
                    usd_reported: cents.map(|c| f64::from(c) / 100.0),
                    cursor,
                }
            ),
            (arb_text(), any::<i64>(), any::<i64>()).prop_map(|(agent, micros_per_hour, burst_micros)| {
                Event::BudgetSet {
                    agent,
                    micros_per_hour,
                    burst_micros,
                }
            }),
            (arb_text(), any::<Option<String>>(), any::<i64>(), any::<u64>()).prop_map(
                |(agent, conversation, micros, requests)| Event::BudgetCharged {
                    agent,
                    conversation,
                    micros,
                    requests,
                }
            ),
            (arb_text(), any::<Option<String>>(), any::<u64>()).prop_map(|(agent, conversation, retry_after_ms)| {
                Event::BudgetWaiting {
                    agent,
                    conversation,
                    retry_after_ms,
                }
            }),
            (arb_text(), any::<u64>(), arb_text(), any::<Option<u64>>()).prop_map(
                |(conversation, seq, text, cursor)| {
                    Event::Transcript {
                        conversation,
                        seq,
                        speaker: "agent".into(),
                        kind: "reply".into(),
                        text,
                        cursor,
                    }
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn event_json_round_trips(event in arb_event()) {
            let json = serde_json::to_string(&event).expect("encode");
            let back: Event = serde_json::from_str(&json).expect("decode");
            prop_assert_eq!(back, event);
        }
    }
}
