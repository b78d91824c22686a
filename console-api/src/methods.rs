//! Method names of the API. Names are stable: consoles, monitors and outside
//! checks depend on them.

pub const SESSION_AUTHENTICATE: &str = "session.authenticate";
/// Exchange a one-time pairing code for a token (no token needed).
pub const SESSION_PAIR: &str = "session.pair";
/// Issue a one-time pairing code (local-only: `warren console pair`).
pub const SESSION_PAIR_CODE: &str = "session.pair_code";
pub const NODE_INFO: &str = "node.info";

pub const AGENT_CREATE: &str = "agent.create";
pub const AGENT_GET: &str = "agent.get";
pub const AGENT_LIST: &str = "agent.list";
pub const AGENT_UPDATE: &str = "agent.update";
pub const FLEET_NODES: &str = "fleet.nodes";
pub const FLEET_INVITE: &str = "fleet.invite";
pub const FLEET_JOIN: &str = "fleet.join";
pub const FLEET_REMOVE: &str = "fleet.remove";
pub const AGENT_SECRET_SET: &str = "agent.secret.set";
pub const AGENT_SECRET_UNSET: &str = "agent.secret.unset";
pub const AGENT_SECRET_LIST: &str = "agent.secret.list";
pub const AGENT_LOGIN: &str = "agent.login";
pub const AGENT_ARCHIVE: &str = "agent.archive";

pub const CONVERSATION_START: &str = "conversation.start";
pub const CONVERSATION_CONTINUE: &str = "conversation.continue";
pub const CONVERSATION_PAUSE: &str = "conversation.pause";
pub const CONVERSATION_TERMINATE: &str = "conversation.terminate";
pub const CONVERSATION_GET: &str = "conversation.get";
pub const CONVERSATION_LIST: &str = "conversation.list";
pub const CONVERSATION_SCREEN: &str = "conversation.screen";
pub const CONVERSATION_SEND_MESSAGE: &str = "conversation.sendMessage";
pub const CONVERSATION_SEND_KEYS: &str = "conversation.sendKeys";
pub const CONVERSATION_RESIZE: &str = "conversation.resize";

pub const TRANSCRIPT_READ: &str = "transcript.read";
pub const TRANSCRIPT_SUBSCRIBE: &str = "transcript.subscribe";
pub const TERMINAL_SUBSCRIBE: &str = "terminal.subscribe";
pub const SUBSCRIPTION_CANCEL: &str = "subscription.cancel";
pub const EVENTS_SUBSCRIBE: &str = "events.subscribe";

/// Server-pushed event kinds (`events.subscribe {kinds?}`); each is also the
/// notification's method name.
pub const EVENT_SUPERVISION_ACTED: &str = "event.supervision.acted";
pub const EVENT_SUPERVISION_NEEDS_YOU: &str = "event.supervision.needs_you";
pub const EVENT_MONITOR_TRIPPED: &str = "event.monitor.tripped";
pub const EVENT_FLEET_CHANGED: &str = "event.fleet.changed";
/// `{agent, from, message_id, seq}`: mail reached an agent's inbox (no body).
pub const EVENT_MAIL_ARRIVED: &str = "event.mail.arrived";
/// `{agent, conversation?, available_usd, usd_per_hour}`: an agent's budget
/// will not accrue enough in time; a human tops up, raises the rate or stops.
/// Once per exhaustion episode.
pub const EVENT_BUDGET_EXHAUSTED: &str = "event.budget.exhausted";
pub const EVENT_KINDS: &[&str] = &[
    EVENT_MAIL_ARRIVED,
    EVENT_SUPERVISION_ACTED,
    EVENT_SUPERVISION_NEEDS_YOU,
    EVENT_MONITOR_TRIPPED,
    EVENT_FLEET_CHANGED,
    EVENT_BUDGET_EXHAUSTED,
];

pub const SUPERVISION_GET: &str = "supervision.get";
pub const SUPERVISION_SET: &str = "supervision.set";
pub const SUPERVISION_STATUS: &str = "supervision.status";
pub const SUPERVISION_HOLDS: &str = "supervision.holds";
pub const SUPERVISION_ANSWER: &str = "supervision.answer";
pub const SUPERVISION_AUDIT: &str = "supervision.audit";
pub const SUPERVISION_NUDGE: &str = "supervision.nudge";
/// The learned approval rules of an agent's workspace.
pub const SUPERVISION_RULES: &str = "supervision.rules";
/// Learn a rule (local-only: standing authority).
pub const SUPERVISION_LEARN: &str = "supervision.learn";
/// Forget a learned rule (local-only).
pub const SUPERVISION_FORGET: &str = "supervision.forget";
/// A CLI's hook report (Claude Code hooks), from its own instance token.
pub const SUPERVISION_HOOK: &str = "supervision.hook";

pub const MAILBOX_SEND: &str = "mailbox.send";
pub const MAILBOX_INBOX: &str = "mailbox.inbox";
pub const MAILBOX_ACK: &str = "mailbox.ack";
pub const TOOL_INVOKE: &str = "tool.invoke";
/// `{limit?, before_id?}` -> `{entries}`: owner-tool invocations, newest first.
pub const TOOL_LOG: &str = "tool.log";
pub const RECALL_SEARCH: &str = "recall.search";
pub const RECALL_STASH: &str = "recall.stash";
pub const RECALL_FORGET: &str = "recall.forget";

pub const TOKEN_MINT: &str = "token.mint";
pub const TOKEN_INSPECT: &str = "token.inspect";
pub const TOKEN_REVOKE: &str = "token.revoke";

/// Token use and cost of a conversation, an agent or the node.
pub const USAGE_GET: &str = "usage.get";
/// Tokens and dollars per UTC day, model and agent, from the node's spend ledger.
pub const SPEND_HISTORY: &str = "spend.history";
/// `{agent}` -> `{usd_per_hour, burst_usd, available_usd, state}`.
pub const BUDGET_GET: &str = "budget.get";
/// `{agent, usd_per_hour?, burst_usd?}` (local-only).
pub const BUDGET_SET: &str = "budget.set";
/// `{agent, usd}` (local-only).
pub const BUDGET_TOPUP: &str = "budget.topup";
pub const MONITOR_ATTACH: &str = "monitor.attach";
pub const MONITOR_LIST: &str = "monitor.list";
pub const MONITOR_DETACH: &str = "monitor.detach";
pub const MONITOR_REARM: &str = "monitor.rearm";

/// Server notifications.
pub const NOTIFY_TRANSCRIPT_EVENT: &str = "transcript.event";
pub const NOTIFY_TERMINAL_DATA: &str = "terminal.data";
/// Progress of a long request (e.g. a guest image built on a first
/// `conversation.start`): `{id, message, elapsed_ms}`, `id` the request's.
pub const NOTIFY_REQUEST_PROGRESS: &str = "request.progress";

/// Every method this node answers.
pub const ALL: &[&str] = &[
    SESSION_AUTHENTICATE,
    SESSION_PAIR,
    SESSION_PAIR_CODE,
    NODE_INFO,
    FLEET_NODES,
    FLEET_INVITE,
    FLEET_JOIN,
    FLEET_REMOVE,
    AGENT_CREATE,
    AGENT_GET,
    AGENT_LIST,
    AGENT_UPDATE,
    AGENT_SECRET_SET,
    AGENT_SECRET_UNSET,
    AGENT_SECRET_LIST,
    AGENT_LOGIN,
    AGENT_ARCHIVE,
    CONVERSATION_START,
    CONVERSATION_CONTINUE,
    CONVERSATION_PAUSE,
    CONVERSATION_TERMINATE,
    CONVERSATION_GET,
    CONVERSATION_LIST,
    CONVERSATION_SCREEN,
    CONVERSATION_SEND_MESSAGE,
    CONVERSATION_SEND_KEYS,
    CONVERSATION_RESIZE,
    TRANSCRIPT_READ,
    TRANSCRIPT_SUBSCRIBE,
    TERMINAL_SUBSCRIBE,
    SUBSCRIPTION_CANCEL,
    EVENTS_SUBSCRIBE,
    SUPERVISION_GET,
    SUPERVISION_SET,
    SUPERVISION_STATUS,
    SUPERVISION_HOLDS,
    SUPERVISION_ANSWER,
    SUPERVISION_AUDIT,
    SUPERVISION_NUDGE,
    SUPERVISION_HOOK,
    SUPERVISION_RULES,
    SUPERVISION_LEARN,
    SUPERVISION_FORGET,
    MAILBOX_SEND,
    MAILBOX_INBOX,
    MAILBOX_ACK,
    TOOL_INVOKE,
    TOOL_LOG,
    RECALL_SEARCH,
    RECALL_STASH,
    RECALL_FORGET,
    TOKEN_MINT,
    TOKEN_INSPECT,
    TOKEN_REVOKE,
    USAGE_GET,
    SPEND_HISTORY,
    BUDGET_GET,
    BUDGET_SET,
    BUDGET_TOPUP,
    MONITOR_ATTACH,
    MONITOR_LIST,
    MONITOR_DETACH,
    MONITOR_REARM,
];
