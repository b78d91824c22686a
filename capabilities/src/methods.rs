//! The method table: for every API method, the resource it acts on and the
//! operation it needs. A method missing from the table is denied. Also the
//! companion allowlist and the local-only methods.

use crate::rights::Operation;

/// Which resource a call acts on, taken from its params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The node itself (`resource("node")`).
    Node,
    /// The agent named in the params (`agent`, or `to` for mail).
    Agent,
    /// The conversation in the params, and its agent.
    Conversation,
    /// A conversation if the params name one, else an agent if they name one,
    /// else the node (lists and subscriptions that can be narrowed).
    Narrowest,
    /// The owner-defined tool named in the params (`tool`).
    Tool,
    /// Only the caller's own session (cancel its own subscription, inspect a
    /// token it holds): any valid token may.
    Caller,
}

/// What a method needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub scope: Scope,
    pub operation: Operation,
}

const fn need(scope: Scope, operation: Operation) -> Need {
    Need { scope, operation }
}

use Operation::*;
use Scope::*;

/// Every method of the API (API.md), built or planned.
pub const TABLE: &[(&str, Need)] = &[
    ("session.authenticate", need(Caller, Observe)),
    // Answered before any token is checked: the code is the credential.
    ("session.pair", need(Caller, Observe)),
    ("session.pair_code", need(Node, Admin)),
    ("node.info", need(Node, Observe)),
    ("fleet.nodes", need(Node, Observe)),
    ("fleet.invite", need(Node, Admin)),
    ("fleet.join", need(Node, Admin)),
    ("fleet.remove", need(Node, Admin)),
    ("agent.create", need(Node, Admin)),
    ("agent.get", need(Agent, Observe)),
    ("agent.list", need(Node, Observe)),
    ("agent.update", need(Agent, Admin)),
    ("agent.archive", need(Agent, Admin)),
    ("agent.secret.set", need(Agent, Admin)),
    ("agent.secret.unset", need(Agent, Admin)),
    ("agent.secret.list", need(Agent, Admin)),
    ("agent.login", need(Agent, Admin)),
    ("conversation.start", need(Agent, Control)),
    ("conversation.continue", need(Conversation, Control)),
    ("conversation.pause", need(Conversation, Control)),
    ("conversation.terminate", need(Conversation, Control)),
    ("conversation.get", need(Conversation, Observe)),
    ("conversation.list", need(Narrowest, Observe)),
    ("conversation.screen", need(Conversation, Observe)),
    ("conversation.sendMessage", need(Conversation, Inject)),
    ("conversation.sendKeys", need(Conversation, Terminal)),
    ("conversation.resize", need(Conversation, Terminal)),
    ("transcript.read", need(Conversation, Observe)),
    ("transcript.subscribe", need(Narrowest, Observe)),
    ("terminal.subscribe", need(Conversation, Terminal)),
    ("subscription.cancel", need(Caller, Observe)),
    ("events.subscribe", need(Node, Observe)),
    ("mailbox.send", need(Agent, Message)),
    ("mailbox.inbox", need(Agent, Observe)),
    // Acting for the agent (see `ACTS_AS`): observe alone may not ack.
    ("mailbox.ack", need(Agent, Control)),
    ("supervision.get", need(Narrowest, Observe)),
    ("supervision.set", need(Node, Supervise)),
    ("supervision.audit", need(Narrowest, Observe)),
    ("supervision.status", need(Narrowest, Observe)),
    ("supervision.nudge", need(Agent, Supervise)),
    ("supervision.hook", need(Conversation, Observe)),
    ("supervision.holds", need(Narrowest, Observe)),
    ("supervision.answer", need(Node, Supervise)),
    ("supervision.rules", need(Agent, Observe)),
    ("supervision.learn", need(Node, Supervise)),
    ("supervision.forget", need(Node, Supervise)),
    ("monitor.attach", need(Agent, Supervise)),
    ("monitor.list", need(Narrowest, Observe)),
    ("monitor.detach", need(Node, Supervise)),
    ("monitor.rearm", need(Node, Supervise)),
    ("token.mint", need(Node, Admin)),
    ("token.inspect", need(Caller, Observe)),
    ("token.revoke", need(Node, Admin)),
    ("tool.invoke", need(Tool, Invoke)),
    ("tool.log", need(Node, Admin)),
    ("recall.search", need(Agent, Observe)),
    ("recall.stash", need(Agent, Invoke)),
    ("recall.forget", need(Agent, Invoke)),
    ("usage.get", need(Narrowest, Observe)),
    ("spend.history", need(Node, Observe)),
    ("budget.get", need(Agent, Observe)),
    ("budget.set", need(Agent, Admin)),
    ("budget.topup", need(Agent, Admin)),
    ("config.set", need(Node, Admin)),
];

/// A call made for an agent named in its params (`param`): the agent's own
/// instance token may make it (it holds `observe` on itself), and any other
/// token needs one of `any_of` on `agent:<that agent>`. An instance token
/// never acts for another agent, whatever rights it holds on it (a peer's
/// `message` lets it mail that agent, not ack or send as it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActsAs {
    pub param: &'static str,
    pub any_of: &'static [Operation],
}

/// The calls that act for an agent. For `mailbox.ack` this is the whole
/// check (its `TABLE` entry names the agent it acts on); `mailbox.send`
/// needs it on its sender besides `message` on its recipient.
pub const ACTS_AS: &[(&str, ActsAs)] = &[
    (
        "mailbox.ack",
        ActsAs {
            param: "agent",
            any_of: &[Message, Control],
        },
    ),
    (
        "mailbox.send",
        ActsAs {
            param: "from",
            any_of: &[Message, Invoke],
        },
    ),
];

/// Whether `method` acts for an agent, and how.
pub fn acts_as(method: &str) -> Option<ActsAs> {
    ACTS_AS.iter().find(|(m, _)| *m == method).map(|(_, a)| *a)
}

/// What `method` needs; `None` means the method is unknown and denied.
pub fn need_of(method: &str) -> Option<Need> {
    TABLE.iter().find(|(m, _)| *m == method).map(|(_, n)| *n)
}

/// The phone companion's read-only methods.
pub const COMPANION_READ: &[&str] = &[
    "node.info",
    "fleet.nodes",
    "agent.get",
    "agent.list",
    "conversation.get",
    "conversation.list",
    "conversation.screen",
    "transcript.read",
    "transcript.subscribe",
    "subscription.cancel",
    // Live updates: holds, trips, mail arrivals (no bodies), fleet changes.
    "events.subscribe",
    "supervision.status",
    "supervision.audit",
    "supervision.holds",
    "supervision.rules",
    "usage.get",
    "budget.get",
];

/// The companion's optional actions (no standing authority).
pub const COMPANION_ACTIONS: &[&str] = &["supervision.nudge", "supervision.answer"];

/// Methods that grant standing authority: never over the network.
pub const LOCAL_ONLY: &[&str] = &[
    // A secret's value never crosses the network.
    "agent.secret.set",
    // Who may join the fleet, and which fleet this node is in.
    "fleet.invite",
    "fleet.join",
    "fleet.remove",
    // It changes the credentials every later conversation of the agent uses.
    "agent.login",
    "supervision.set",
    "supervision.learn",
    "supervision.forget",
    "config.set",
    // A pairing code becomes a token of the node's own root.
    "session.pair_code",
    // Money: who may spend how much is the owner's standing decision.
    "budget.set",
    "budget.topup",
];

/// What every conversation's instance token may call, whatever its agent's
/// grants: authenticate, report its CLI's hooks, and read about itself (its
/// rights confine these to its own agent).
pub const INSTANCE_BASE: &[&str] = &[
    "session.authenticate",
    "token.inspect",
    "subscription.cancel",
    "supervision.hook",
    "agent.get",
    "conversation.get",
    "conversation.list",
    "transcript.read",
];

/// The built-in tools an agent can be granted (`grants.tools`), beside the
/// owner's `[tools.NAME]` and the monitors' `read`/`advise`.
pub const BUILTIN_TOOLS: &[&str] = &["mail", "recall", "supervision"];

/// The methods a granted tool adds to its conversation's instance token: the
/// one place a grant and its token derive from. An owner-defined tool adds
/// `tool.invoke` (and its token a `tool:NAME` invoke right).
pub fn tool_methods(tool: &str) -> &'static [&'static str] {
    match tool {
        "mail" => &["mailbox.send", "mailbox.inbox", "mailbox.ack"],
        "recall" => &["recall.search", "recall.stash", "recall.forget"],
        "supervision" => &["supervision.status", "supervision.audit", "supervision.get"],
        "read" => &["transcript.read", "conversation.get"],
        "advise" => &["conversation.sendMessage"],
        _ => &["tool.invoke"],
    }
}

/// The methods allowlist of an instance token whose conversation mounts `tools`.
pub fn instance_methods<'a>(tools: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = INSTANCE_BASE.iter().map(|m| m.to_string()).collect();
    for t in tools {
        for m in tool_methods(t) {
            if !out.iter().any(|o| o == m) {
                out.push(m.to_string());
            }
        }
    }
    out
}

/// Operations a remotely minted token may not carry.
pub const LOCAL_ONLY_OPERATIONS: &[Operation] = &[Operation::Admin, Operation::Supervise];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_method_has_exactly_one_entry() {
        let mut seen = std::collections::HashSet::new();
        for (m, _) in TABLE {
            assert!(seen.insert(*m), "{m} twice");
        }
        for list in [COMPANION_READ, COMPANION_ACTIONS, LOCAL_ONLY] {
            for m in list {
                assert!(need_of(m).is_some(), "{m} has no entry");
            }
        }
        assert_eq!(need_of("agent.explode"), None);
    }

    #[test]
    fn a_tools_methods_are_exactly_its_grant() {
        let none = instance_methods([]);
        assert!(
            !none
                .iter()
                .any(|m| m.starts_with("mailbox.") || m.starts_with("recall."))
        );
        assert!(!none.contains(&"tool.invoke".to_string()));
        let mail = instance_methods(["mail"]);
        assert!(mail.contains(&"mailbox.send".to_string()));
        assert!(!mail.contains(&"recall.search".to_string()));
        let owner = instance_methods(["mail", "deploy", "lint"]);
        assert_eq!(owner.iter().filter(|m| *m == "tool.invoke").count(), 1);
        for t in ["mail", "recall", "supervision", "read", "advise", "x"] {
            for m in tool_methods(t) {
                assert!(need_of(m).is_some(), "{m} has no entry");
            }
        }
        for m in INSTANCE_BASE {
            assert!(need_of(m).is_some(), "{m} has no entry");
        }
    }

    #[test]
    fn acting_for_an_agent_needs_more_than_observe() {
        for (m, a) in ACTS_AS {
            assert!(need_of(m).is_some(), "{m} has no entry");
            assert!(!a.any_of.contains(&Observe), "{m}: observe is read-only");
            assert!(!COMPANION_READ.contains(m), "{m} is not a read");
        }
        assert_eq!(acts_as("mailbox.ack").map(|a| a.param), Some("agent"));
        assert_eq!(acts_as("mailbox.send").map(|a| a.param), Some("from"));
        assert_eq!(acts_as("mailbox.inbox"), None);
    }

    #[test]
    fn companion_reads_only_observe() {
        for m in COMPANION_READ {
            assert_eq!(need_of(m).map(|n| n.operation), Some(Operation::Observe), "{m}");
        }
    }
}
