//! Every API method, declared once: its name constant and its registry entry
//! (see `registry.rs` for what an entry says). Names are stable: consoles,
//! monitors and outside checks depend on them. Also the server's event kinds
//! and notification names.
//!
//! Adding a method: its entry here (the token policy table, the routing and
//! the companion and tool lists follow from it), its arm in its family's
//! dispatch file (`node/src/api/dispatch/FAMILY.rs`), and the node method
//! that arm calls; `docs/API.md` gets its row (a test checks that).

use crate::objects::*;
use crate::push::*;
use crate::registry::{Family as F, Method, Operation as O, Route, Scope as S, Select, count, names, on};
use crate::tasks::*;

/// Declares each method's name constant and its entry in [`REGISTRY`].
macro_rules! methods {
    ($( $(#[$doc:meta])* $konst:ident = $name:literal => $spec:expr; )*) => {
        $( $(#[$doc])* pub const $konst: &str = $name; )*
        /// Every method of the API, each once, in the order `ALL` lists them.
        pub const REGISTRY: &[Method] = &[ $( $spec.named($name) ),* ];
    };
}

methods! {
    /// Binds a token to the connection (the token is the credential).
    SESSION_AUTHENTICATE = "session.authenticate" => on(F::Session, S::Caller, O::Observe).open().instance();
    /// Exchange a one-time pairing code for a token (no token needed).
    SESSION_PAIR = "session.pair" => on(F::Session, S::Caller, O::Observe).open().params::<PairCode>();
    /// Issue a one-time pairing code (local-only: `warren console pair`).
    SESSION_PAIR_CODE = "session.pair_code" => on(F::Session, S::Node, O::Admin).local_only();
    /// `{node?}`: this node's, or a member's (by name or id).
    NODE_INFO = "node.info" => on(F::Node, S::Node, O::Observe)
        .route(Route::Node("node")).companion_read().result::<NodeInfo>();
    FLEET_NODES = "fleet.nodes" => on(F::Fleet, S::Node, O::Observe).companion_read();
    FLEET_INIT = "fleet.init" => on(F::Fleet, S::Node, O::Admin).local_only();
    FLEET_INVITE = "fleet.invite" => on(F::Fleet, S::Node, O::Admin).local_only();
    FLEET_JOIN = "fleet.join" => on(F::Fleet, S::Node, O::Admin).local_only();
    FLEET_REMOVE = "fleet.remove" => on(F::Fleet, S::Node, O::Admin).local_only();
    AGENT_CREATE = "agent.create" => on(F::Agent, S::Node, O::Admin)
        .route(Route::Node("node")).params::<AgentCreate>();
    AGENT_GET = "agent.get" => on(F::Agent, S::Agent, O::Observe)
        .routed().companion_read().instance().params::<AgentRef>();
    AGENT_LIST = "agent.list" => on(F::Agent, S::Node, O::Observe).fanout("agents").companion_read();
    AGENT_UPDATE = "agent.update" => on(F::Agent, S::Agent, O::Admin).routed().params::<AgentUpdate>();
    /// A secret's value never crosses the network.
    AGENT_SECRET_SET = "agent.secret.set" => on(F::Agent, S::Agent, O::Admin).routed().local_only();
    AGENT_SECRET_UNSET = "agent.secret.unset" => on(F::Agent, S::Agent, O::Admin).routed();
    AGENT_SECRET_LIST = "agent.secret.list" => on(F::Agent, S::Agent, O::Admin).routed();
    /// Local-only: it changes the credentials every later conversation of the agent uses.
    AGENT_LOGIN = "agent.login" => on(F::Agent, S::Agent, O::Admin)
        .routed().local_only().launches().params::<AgentRef>();
    AGENT_ARCHIVE = "agent.archive" => on(F::Agent, S::Agent, O::Admin).routed().params::<AgentRef>();
    EGRESS_AUDIT = "egress.audit" => on(F::Agent, S::Agent, O::Observe)
        .routed().companion_read().params::<EgressAudit>();
    CONVERSATION_START = "conversation.start" => on(F::Conversation, S::Agent, O::Control)
        .routed().launches().params::<AgentRef>();
    CONVERSATION_CONTINUE = "conversation.continue" => on(F::Conversation, S::Conversation, O::Control)
        .routed().launches().params::<ConversationContinue>();
    CONVERSATION_PAUSE = "conversation.pause" => on(F::Conversation, S::Conversation, O::Control)
        .routed().params::<ConversationRef>();
    CONVERSATION_TERMINATE = "conversation.terminate" => on(F::Conversation, S::Conversation, O::Control)
        .routed().params::<ConversationRef>();
    CONVERSATION_GET = "conversation.get" => on(F::Conversation, S::Conversation, O::Observe)
        .routed().companion_read().instance().tool("read").params::<ConversationRef>();
    CONVERSATION_LIST = "conversation.list" => on(F::Conversation, S::Narrowest, O::Observe)
        .routed().fanout("conversations").companion_read().instance().params::<ConversationList>();
    /// Its worktree's committed and uncommitted changes against the baseline.
    CONVERSATION_DIFF = "conversation.diff" => on(F::Conversation, S::Conversation, O::Observe)
        .routed().companion_read().params::<ConversationDiff>().result::<Diff>();
    CONVERSATION_SCREEN = "conversation.screen" => on(F::Conversation, S::Conversation, O::Observe)
        .routed().companion_read().params::<ScreenRead>().result::<Screen>();
    CONVERSATION_SEND_MESSAGE = "conversation.sendMessage" => on(F::Conversation, S::Conversation, O::Inject)
        .routed().tool("advise").params::<SendMessage>().result::<SendMessageResult>();
    CONVERSATION_SEND_KEYS = "conversation.sendKeys" => on(F::Conversation, S::Conversation, O::Terminal)
        .routed().params::<SendKeys>();
    CONVERSATION_RESIZE = "conversation.resize" => on(F::Conversation, S::Conversation, O::Terminal)
        .routed().params::<Resize>();
    TRANSCRIPT_READ = "transcript.read" => on(F::Transcript, S::Conversation, O::Observe)
        .routed().companion_read().instance().tool("read").params::<TranscriptRead>().result::<TranscriptPage>();
    TRANSCRIPT_SUBSCRIBE = "transcript.subscribe" => on(F::Transcript, S::Narrowest, O::Observe)
        .routed().stream().companion_read().params::<TranscriptSubscribe>();
    TERMINAL_SUBSCRIBE = "terminal.subscribe" => on(F::Transcript, S::Conversation, O::Terminal)
        .routed().stream().params::<ConversationRef>();
    SUBSCRIPTION_CANCEL = "subscription.cancel" => on(F::Session, S::Caller, O::Observe)
        .companion_read().instance().params::<SubscriptionRef>();
    /// Live updates: holds, trips, mail arrivals (no bodies), fleet changes.
    EVENTS_SUBSCRIBE = "events.subscribe" => on(F::Session, S::Node, O::Observe)
        .routed().stream().fanout("events").companion_read().params::<EventsSubscribe>();
    /// Web Push: needs-yous anywhere in the fleet POSTed to this browser,
    /// authorized by the caller's token (`kinds`: hold, escalation, breaker,
    /// budget, task).
    PUSH_SUBSCRIBE = "push.subscribe" => on(F::Session, S::Node, O::Observe)
        .companion_read().params::<PushSubscribe>();
    /// Ends one of the caller's own push subscriptions.
    PUSH_UNSUBSCRIBE = "push.unsubscribe" => on(F::Session, S::Caller, O::Observe)
        .companion_read().params::<PushRef>();
    /// The caller's own push subscriptions (each endpoint's origin, not its URL).
    PUSH_LIST = "push.list" => on(F::Session, S::Caller, O::Observe).companion_read();
    SUPERVISION_GET = "supervision.get" => on(F::Supervision, S::Narrowest, O::Observe)
        .routed().tool("supervision").params::<AgentFilter>();
    SUPERVISION_SET = "supervision.set" => on(F::Supervision, S::Node, O::Supervise)
        .routed().local_only().params::<SupervisionSet>();
    SUPERVISION_STATUS = "supervision.status" => on(F::Supervision, S::Narrowest, O::Observe)
        .routed().companion_read().tool("supervision").params::<AgentFilter>();
    SUPERVISION_HOLDS = "supervision.holds" => on(F::Supervision, S::Narrowest, O::Observe)
        .routed().fanout("holds").companion_read().params::<AgentFilter>();
    SUPERVISION_ANSWER = "supervision.answer" => on(F::Supervision, S::Node, O::Supervise)
        .route(Route::Hold("hold")).companion_action().params::<SupervisionAnswer>();
    SUPERVISION_AUDIT = "supervision.audit" => on(F::Supervision, S::Narrowest, O::Observe)
        .routed().companion_read().tool("supervision").params::<SupervisionAudit>();
    SUPERVISION_NUDGE = "supervision.nudge" => on(F::Supervision, S::Agent, O::Supervise)
        .routed().companion_action().params::<SupervisionNudge>();
    /// A CLI's hook report (Claude Code hooks), from its own instance token.
    SUPERVISION_HOOK = "supervision.hook" => on(F::Supervision, S::Conversation, O::Observe)
        .instance().params::<SupervisionHook>();
    /// The learned approval rules of an agent's workspace.
    SUPERVISION_RULES = "supervision.rules" => on(F::Supervision, S::Agent, O::Observe)
        .routed().companion_read().params::<AgentRef>();
    /// Learn a rule (local-only: standing authority).
    SUPERVISION_LEARN = "supervision.learn" => on(F::Supervision, S::Node, O::Supervise)
        .routed().local_only().params::<SupervisionRule>();
    /// Forget a learned rule (local-only).
    SUPERVISION_FORGET = "supervision.forget" => on(F::Supervision, S::Node, O::Supervise)
        .routed().local_only().params::<SupervisionRule>();
    /// Mail to `to`, sent as `from` (acting for it needs more than `message` on `to`).
    MAILBOX_SEND = "mailbox.send" => on(F::Mail, S::Agent, O::Message)
        .agent_param("to").acts_as("from", &[O::Message, O::Invoke]).tool("mail").params::<MailSend>();
    MAILBOX_INBOX = "mailbox.inbox" => on(F::Mail, S::Agent, O::Observe).routed().tool("mail").params::<MailInbox>();
    /// `{agent, before?, limit?}` -> `{messages, next_before}`: the agent's mail
    /// to agents on other members, newest first, each delivered, pending or refused.
    MAILBOX_OUTBOX = "mailbox.outbox" => on(F::Mail, S::Agent, O::Observe).routed().tool("mail").params::<MailOutbox>();
    /// `{agent?, fleet?}`: how many messages each agent has not acknowledged
    /// (a count, not the messages: the console's one call for every agent).
    MAILBOX_UNREAD = "mailbox.unread" => on(F::Mail, S::Narrowest, O::Observe)
        .routed().fanout("agents").companion_read().params::<AgentFilter>();
    /// Acting for the agent: observe alone may not ack (acting for it is the whole check).
    MAILBOX_ACK = "mailbox.ack" => on(F::Mail, S::Agent, O::Control)
        .routed().acts_as("agent", &[O::Message, O::Control]).tool("mail").params::<MailAck>();
    TOOL_INVOKE = "tool.invoke" => on(F::Tools, S::Tool, O::Invoke).owner_tool().params::<ToolInvoke>();
    /// `{limit?, before_id?}` -> `{entries}`: owner-tool invocations, newest first.
    TOOL_LOG = "tool.log" => on(F::Tools, S::Node, O::Admin);
    RECALL_SEARCH = "recall.search" => on(F::Tools, S::Agent, O::Observe).tool("recall").params::<RecallSearch>();
    RECALL_STASH = "recall.stash" => on(F::Tools, S::Agent, O::Invoke).tool("recall").params::<RecallStash>();
    RECALL_FORGET = "recall.forget" => on(F::Tools, S::Agent, O::Invoke).tool("recall").params::<RecallForget>();
    TOKEN_MINT = "token.mint" => on(F::Tokens, S::Node, O::Admin).params::<TokenMint>().result::<TokenMinted>();
    TOKEN_INSPECT = "token.inspect" => on(F::Tokens, S::Caller, O::Observe)
        .instance().params::<TokenRef>().result::<TokenInspection>();
    TOKEN_REVOKE = "token.revoke" => on(F::Tokens, S::Node, O::Admin).params::<TokenRevoke>();
    /// Token use and cost of a conversation, an agent or the node.
    USAGE_GET = "usage.get" => on(F::Usage, S::Narrowest, O::Observe)
        .route(Route::ScopeId).companion_read().params::<UsageGet>();
    /// Tokens and dollars per UTC day, model and agent, from the node's spend ledger.
    SPEND_HISTORY = "spend.history" => on(F::Usage, S::Node, O::Observe).fanout("days").params::<SpendHistory>();
    /// `{agent}` -> `{usd_per_hour, burst_usd, available_usd, state}`.
    BUDGET_GET = "budget.get" => on(F::Usage, S::Agent, O::Observe).routed().companion_read().params::<AgentRef>();
    /// `{agent, usd_per_hour?, burst_usd?}` (local-only: money is the owner's standing decision).
    BUDGET_SET = "budget.set" => on(F::Usage, S::Agent, O::Admin).routed().local_only().params::<BudgetSet>();
    /// `{agent, usd}` (local-only).
    BUDGET_TOPUP = "budget.topup" => on(F::Usage, S::Agent, O::Admin).routed().local_only().params::<BudgetTopup>();
    MONITOR_ATTACH = "monitor.attach" => on(F::Monitors, S::Agent, O::Supervise)
        .route(Route::Node("node"));
    MONITOR_LIST = "monitor.list" => on(F::Monitors, S::Narrowest, O::Observe).fanout("attachments");
    /// `{attachment, node?}`: `node` names the member that holds it (as a
    /// fleet-wide `monitor.list` says); default this node.
    MONITOR_DETACH = "monitor.detach" => on(F::Monitors, S::Node, O::Supervise).route(Route::Node("node"));
    MONITOR_REARM = "monitor.rearm" => on(F::Monitors, S::Node, O::Supervise).route(Route::Node("node"));
    /// `{agent, goal, acceptance, review?, decider?, max_repairs?, deadline_secs?}`: work on
    /// the agent's workspace, verified by the node (params checked by the `tasks` crate).
    TASK_START = "task.start" => on(F::Tasks, S::Agent, O::Control);
    // A task's own calls take `node?`: the member that homes it (as a
    // fleet-wide `task.list` names it); default this node.
    TASK_GET = "task.get" => on(F::Tasks, S::Task, O::Observe).route(Route::Node("node")).companion_read().params::<TaskRef>();
    TASK_LIST = "task.list" => on(F::Tasks, S::Narrowest, O::Observe)
        .fanout("tasks").companion_read().params::<TaskList>();
    TASK_STOP = "task.stop" => on(F::Tasks, S::Task, O::Control).route(Route::Node("node")).params::<TaskRef>();
    /// `{task, extend_secs?}`: a task that timed out goes on (or closes out at once).
    TASK_RECOVER = "task.recover" => on(F::Tasks, S::Task, O::Control).route(Route::Node("node")).params::<TaskRecover>();
    TASK_DISCARD = "task.discard" => on(F::Tasks, S::Task, O::Control).route(Route::Node("node")).params::<TaskRef>();
    /// The task's change against its baseline (its reviewer's `warren-review diff`).
    TASK_DIFF = "task.diff" => on(F::Tasks, S::Task, O::Observe).route(Route::Node("node")).tool("review").params::<TaskRef>().result::<Diff>();
    /// The reviewer's verdict (`warren-review approve|reject NOTES`): only the
    /// reviewer agent's own conversation may give it.
    TASK_REVIEW = "task.review" => on(F::Tasks, S::Task, O::Observe).tool("review").params::<TaskReview>();
    /// The decider's answer to the dialog its task holds (`warren-decide
    /// approve|deny REASON`): only the decider agent's own conversation may
    /// give it, and an approve only inside the decider's bounds.
    TASK_DECIDE = "task.decide" => on(F::Tasks, S::Task, O::Observe).tool("decide").params::<TaskDecide>();
    /// After a human took over: automatic messages to the worker flow again.
    TASK_RESUME_AUTO = "task.resume_auto" => on(F::Tasks, S::Task, O::Control).route(Route::Node("node")).params::<TaskRef>();
    /// `{supervision}`: the global supervision defaults, the master switch
    /// among them (local-only: standing authority).
    CONFIG_SET = "config.set" => on(F::Node, S::Node, O::Admin).local_only().params::<ConfigSet>();
}

/// The method `name`, if the API has it.
pub fn find(name: &str) -> Option<&'static Method> {
    REGISTRY.iter().find(|m| m.name == name)
}

/// Every method this node answers.
pub const ALL: &[&str] = &names::<{ count(REGISTRY, Select::Served) }>(REGISTRY, Select::Served);

/// Server-pushed event kinds (`events.subscribe {kinds?}`); each is also the
/// notification's method name.
pub const EVENT_SUPERVISION_ACTED: &str = "event.supervision.acted";
pub const EVENT_SUPERVISION_NEEDS_YOU: &str = "event.supervision.needs_you";
/// Supervision settings changed: `{agent, override, effective}` after a
/// `supervision.set`, `{agent: null, defaults}` after a `config.set`.
pub const EVENT_SUPERVISION_CHANGED: &str = "event.supervision.changed";
pub const EVENT_MONITOR_TRIPPED: &str = "event.monitor.tripped";
pub const EVENT_FLEET_CHANGED: &str = "event.fleet.changed";
/// `{agent, from, message_id, seq}`: mail reached an agent's inbox (no body).
pub const EVENT_MAIL_ARRIVED: &str = "event.mail.arrived";
/// `{agent, conversation?, available_usd, usd_per_hour}`: an agent's budget
/// will not accrue enough in time; a human tops up, raises the rate or stops.
/// Once per exhaustion episode.
pub const EVENT_BUDGET_EXHAUSTED: &str = "event.budget.exhausted";
/// `{task, agent, conversation, state, reason?}`: a task's state changed.
pub const EVENT_TASK_CHANGED: &str = "event.task.changed";
pub const EVENT_KINDS: &[&str] = &[
    EVENT_MAIL_ARRIVED,
    EVENT_SUPERVISION_ACTED,
    EVENT_SUPERVISION_NEEDS_YOU,
    EVENT_SUPERVISION_CHANGED,
    EVENT_MONITOR_TRIPPED,
    EVENT_FLEET_CHANGED,
    EVENT_BUDGET_EXHAUSTED,
    EVENT_TASK_CHANGED,
];

/// Server notifications.
pub const NOTIFY_TRANSCRIPT_EVENT: &str = "transcript.event";
pub const NOTIFY_TERMINAL_DATA: &str = "terminal.data";
/// Progress of a long request (e.g. a guest image built on a first
/// `conversation.start`): `{id, message, elapsed_ms}`, `id` the request's.
pub const NOTIFY_REQUEST_PROGRESS: &str = "request.progress";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Companion, Grant};

    #[test]
    fn every_method_is_declared_once_and_found_by_name() {
        let mut seen = std::collections::HashSet::new();
        for m in REGISTRY {
            assert!(seen.insert(m.name), "{} twice", m.name);
            assert_eq!(find(m.name).map(|f| f.name), Some(m.name));
        }
        assert!(find("agent.explode").is_none());
        // `ALL` is what is served (a planned method, `.unserved()`, is not).
        let served: Vec<&str> = REGISTRY.iter().filter(|m| m.served).map(|m| m.name).collect();
        assert_eq!(ALL, served.as_slice());
        assert!(ALL.contains(&CONFIG_SET) && ALL.contains(&AGENT_GET));
        assert_eq!(ALL.len(), 82);
    }

    #[test]
    fn entries_are_consistent() {
        for m in REGISTRY {
            let n = m.name;
            // What opens a stream is routed like what it is about, and read-only.
            if m.stream {
                assert_eq!(m.route, Route::AgentOrConversation, "{n}");
            }
            // Fleet-wide lists are node-level reads.
            if m.fanout.is_some() {
                assert_eq!(m.operation, O::Observe, "{n}");
            }
            if m.companion == Companion::Read {
                assert_eq!(m.operation, O::Observe, "{n}: the companion only reads");
                assert!(!m.local_only, "{n}");
            }
            if m.open {
                assert_eq!(m.scope, S::Caller, "{n}: answered before a token is checked");
            }
            if let Some(a) = m.acts_as {
                assert!(!a.any_of.contains(&O::Observe), "{n}: observe is read-only");
                assert_eq!(m.scope, S::Agent, "{n}");
            }
            if m.agent_param != "agent" {
                assert_eq!(m.scope, S::Agent, "{n}: the agent param is the agent scope's");
            }
            if m.grant == Grant::OwnerTool {
                assert_eq!(m.scope, S::Tool, "{n}");
            }
            // A method's family is the file its name's prefix suggests.
            let prefix = n.split('.').next().unwrap_or(n);
            let family = match prefix {
                "session" | "subscription" | "events" | "push" => F::Session,
                "node" | "config" => F::Node,
                "fleet" => F::Fleet,
                "agent" | "egress" => F::Agent,
                "conversation" => F::Conversation,
                "transcript" | "terminal" => F::Transcript,
                "supervision" => F::Supervision,
                "mailbox" => F::Mail,
                "tool" | "recall" => F::Tools,
                "monitor" => F::Monitors,
                "task" => F::Tasks,
                "usage" | "spend" | "budget" => F::Usage,
                "token" => F::Tokens,
                other => panic!("{n}: no family for {other}"),
            };
            assert_eq!(m.family, family, "{n}");
        }
    }

    #[test]
    fn params_and_results_name_this_crates_types() {
        let m = find(AGENT_GET).expect("agent.get");
        assert_eq!(m.params.map(|t| t.name()), Some("AgentRef"));
        assert_eq!(m.params.map(|t| t.path()), Some(std::any::type_name::<AgentRef>()));
        let m = find(TRANSCRIPT_READ).expect("transcript.read");
        assert_eq!(m.result.map(|t| t.name()), Some("TranscriptPage"));
        for m in REGISTRY {
            for t in m.params.iter().chain(m.result.iter()) {
                assert!(t.path().starts_with("console_api::"), "{}: {}", m.name, t.path());
            }
        }
    }

    /// Every method this node serves has a row of its own in docs/API.md's
    /// method table.
    #[test]
    fn every_served_method_is_documented() {
        let doc = include_str!("../../docs/API.md");
        let start = doc.find("\n## Methods\n").expect("a Methods section") + 1;
        let table: Vec<&str> = doc[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("## "))
            .filter(|l| l.starts_with("| `"))
            .collect();
        let missing: Vec<&str> = ALL
            .iter()
            .copied()
            .filter(|m| {
                let quoted = format!("`{m}`");
                !table
                    .iter()
                    .any(|row| row.split(" | ").next().is_some_and(|first| first.contains(&quoted)))
            })
            .collect();
        assert!(missing.is_empty(), "docs/API.md has no row for {missing:?}");
    }
}
