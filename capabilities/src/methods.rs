//! The policy's view of the method registry (`console_api::methods::REGISTRY`,
//! where every method is declared once): for every API method, the resource
//! it acts on and the operation it needs (a method missing from the table is
//! denied), the calls that act for an agent, the companion allowlists, the
//! local-only methods and what each tool grant adds to an instance token.

use console_api::methods::REGISTRY;
use console_api::registry::{Grant, Select, count, names};

pub use console_api::registry::{ActsAs, Scope};

use crate::rights::Operation;

/// What a method needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Need {
    pub scope: Scope,
    pub operation: Operation,
}

const fn table<const N: usize>() -> [(&'static str, Need); N] {
    let mut out = [(
        "",
        Need {
            scope: Scope::Caller,
            operation: Operation::Observe,
        },
    ); N];
    let mut i = 0;
    while i < N {
        let m = &REGISTRY[i];
        out[i] = (
            m.name,
            Need {
                scope: m.scope,
                operation: m.operation,
            },
        );
        i += 1;
    }
    out
}

/// Every method of the API (API.md), served or planned, with what it needs.
pub const TABLE: &[(&str, Need)] = &table::<{ REGISTRY.len() }>();

/// Whether `method` acts for an agent, and how (`mailbox.ack` acts on the
/// agent its scope names, so acting for it is its whole check;
/// `mailbox.send` needs it on its sender besides `message` on its recipient).
pub fn acts_as(method: &str) -> Option<ActsAs> {
    console_api::methods::find(method).and_then(|m| m.acts_as)
}

/// What `method` needs; `None` means the method is unknown and denied.
pub fn need_of(method: &str) -> Option<Need> {
    TABLE.iter().find(|(m, _)| *m == method).map(|(_, n)| *n)
}

/// The phone companion's read-only methods.
pub const COMPANION_READ: &[&str] =
    &names::<{ count(REGISTRY, Select::CompanionRead) }>(REGISTRY, Select::CompanionRead);

/// The companion's optional actions (no standing authority).
pub const COMPANION_ACTIONS: &[&str] =
    &names::<{ count(REGISTRY, Select::CompanionAction) }>(REGISTRY, Select::CompanionAction);

/// Methods that grant standing authority: never over the network.
pub const LOCAL_ONLY: &[&str] = &names::<{ count(REGISTRY, Select::LocalOnly) }>(REGISTRY, Select::LocalOnly);

/// What every conversation's instance token may call, whatever its agent's
/// grants: authenticate, report its CLI's hooks, and read about itself (its
/// rights confine these to its own agent).
pub const INSTANCE_BASE: &[&str] = &names::<{ count(REGISTRY, Select::Instance) }>(REGISTRY, Select::Instance);

/// The built-in tools an agent can be granted (`grants.tools`), beside the
/// owner's `[tools.NAME]` and the monitors' `read`/`advise`.
pub const BUILTIN_TOOLS: &[&str] = &["mail", "recall", "supervision"];

/// The methods a granted tool adds to its conversation's instance token: the
/// one place a grant and its token derive from. A name no registry entry
/// grants is an owner-defined tool: it adds `tool.invoke` (and its token a
/// `tool:NAME` invoke right).
pub fn tool_methods(tool: &str) -> Vec<&'static str> {
    let named = |m: &&console_api::registry::Method| matches!(m.grant, Grant::Tool(t) if t == tool);
    let builtin = REGISTRY.iter().any(|m| named(&m));
    REGISTRY
        .iter()
        .filter(|m| match builtin {
            true => named(m),
            false => m.grant == Grant::OwnerTool,
        })
        .map(|m| m.name)
        .collect()
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
    use std::collections::BTreeSet;

    fn set<'a>(names: impl IntoIterator<Item = &'a str>) -> BTreeSet<&'a str> {
        names.into_iter().collect()
    }

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

    /// The registry derives exactly the lists this crate declared by hand
    /// before it existed (a change here is a change of policy).
    #[test]
    fn the_derived_lists_are_the_former_declarations() {
        use Operation::*;
        use Scope::*;
        let former: &[(&str, Scope, Operation)] = &[
            ("session.authenticate", Caller, Observe),
            ("session.pair", Caller, Observe),
            ("session.pair_code", Node, Admin),
            ("node.info", Node, Observe),
            ("fleet.nodes", Node, Observe),
            ("fleet.init", Node, Admin),
            ("fleet.invite", Node, Admin),
            ("fleet.join", Node, Admin),
            ("fleet.remove", Node, Admin),
            ("agent.create", Node, Admin),
            ("agent.get", Agent, Observe),
            ("agent.list", Node, Observe),
            ("agent.update", Agent, Admin),
            ("agent.archive", Agent, Admin),
            ("agent.secret.set", Agent, Admin),
            ("agent.secret.unset", Agent, Admin),
            ("agent.secret.list", Agent, Admin),
            ("agent.login", Agent, Admin),
            ("egress.audit", Agent, Observe),
            ("conversation.start", Agent, Control),
            ("conversation.continue", Conversation, Control),
            ("conversation.pause", Conversation, Control),
            ("conversation.terminate", Conversation, Control),
            ("conversation.get", Conversation, Observe),
            ("conversation.list", Narrowest, Observe),
            ("conversation.diff", Conversation, Observe),
            ("conversation.screen", Conversation, Observe),
            ("conversation.sendMessage", Conversation, Inject),
            ("conversation.sendKeys", Conversation, Terminal),
            ("conversation.resize", Conversation, Terminal),
            ("transcript.read", Conversation, Observe),
            ("transcript.subscribe", Narrowest, Observe),
            ("terminal.subscribe", Conversation, Terminal),
            ("subscription.cancel", Caller, Observe),
            ("events.subscribe", Node, Observe),
            ("push.subscribe", Node, Observe),
            ("push.unsubscribe", Caller, Observe),
            ("push.list", Caller, Observe),
            ("mailbox.send", Agent, Message),
            ("mailbox.inbox", Agent, Observe),
            ("mailbox.outbox", Agent, Observe),
            ("mailbox.unread", Narrowest, Observe),
            ("mailbox.ack", Agent, Control),
            ("supervision.get", Narrowest, Observe),
            ("supervision.set", Node, Supervise),
            ("supervision.audit", Narrowest, Observe),
            ("supervision.status", Narrowest, Observe),
            ("supervision.nudge", Agent, Supervise),
            ("supervision.hook", Conversation, Observe),
            ("supervision.holds", Narrowest, Observe),
            ("supervision.answer", Node, Supervise),
            ("supervision.rules", Agent, Observe),
            ("supervision.learn", Node, Supervise),
            ("supervision.forget", Node, Supervise),
            ("monitor.attach", Agent, Supervise),
            ("monitor.list", Narrowest, Observe),
            ("monitor.detach", Node, Supervise),
            ("monitor.rearm", Node, Supervise),
            ("token.mint", Node, Admin),
            ("token.inspect", Caller, Observe),
            ("token.revoke", Node, Admin),
            ("tool.invoke", Tool, Invoke),
            ("tool.log", Node, Admin),
            ("recall.search", Agent, Observe),
            ("recall.stash", Agent, Invoke),
            ("recall.forget", Agent, Invoke),
            ("usage.get", Narrowest, Observe),
            ("spend.history", Node, Observe),
            ("budget.get", Agent, Observe),
            ("budget.set", Agent, Admin),
            ("budget.topup", Agent, Admin),
            ("config.set", Node, Admin),
            ("task.start", Agent, Control),
            ("task.get", Task, Observe),
            ("task.list", Narrowest, Observe),
            ("task.stop", Task, Control),
            ("task.recover", Task, Control),
            ("task.discard", Task, Control),
            ("task.resume_auto", Task, Control),
            ("task.diff", Task, Observe),
            ("task.review", Task, Observe),
            ("task.decide", Task, Observe),
        ];
        assert_eq!(TABLE.len(), former.len());
        for (m, scope, operation) in former {
            let need = Need {
                scope: *scope,
                operation: *operation,
            };
            assert_eq!(need_of(m), Some(need), "{m}");
        }
        assert_eq!(
            set(COMPANION_READ.iter().copied()),
            set([
                "node.info",
                "fleet.nodes",
                "agent.get",
                "agent.list",
                "egress.audit",
                "conversation.get",
                "conversation.list",
                "conversation.diff",
                "conversation.screen",
                "transcript.read",
                "transcript.subscribe",
                "subscription.cancel",
                "events.subscribe",
                "push.subscribe",
                "push.unsubscribe",
                "push.list",
                "mailbox.unread",
                "supervision.status",
                "supervision.audit",
                "supervision.holds",
                "supervision.rules",
                "usage.get",
                "budget.get",
                "task.get",
                "task.list",
            ])
        );
        assert_eq!(
            set(COMPANION_ACTIONS.iter().copied()),
            set(["supervision.nudge", "supervision.answer"])
        );
        assert_eq!(
            set(LOCAL_ONLY.iter().copied()),
            set([
                "agent.secret.set",
                "fleet.init",
                "fleet.invite",
                "fleet.join",
                "fleet.remove",
                "agent.login",
                "supervision.set",
                "supervision.learn",
                "supervision.forget",
                "config.set",
                "session.pair_code",
                "budget.set",
                "budget.topup",
            ])
        );
        assert_eq!(
            set(INSTANCE_BASE.iter().copied()),
            set([
                "session.authenticate",
                "token.inspect",
                "subscription.cancel",
                "supervision.hook",
                "agent.get",
                "conversation.get",
                "conversation.list",
                "transcript.read",
            ])
        );
        let tools: &[(&str, &[&str])] = &[
            (
                "mail",
                &["mailbox.send", "mailbox.inbox", "mailbox.outbox", "mailbox.ack"],
            ),
            ("recall", &["recall.search", "recall.stash", "recall.forget"]),
            (
                "supervision",
                &["supervision.status", "supervision.audit", "supervision.get"],
            ),
            ("read", &["transcript.read", "conversation.get"]),
            ("advise", &["conversation.sendMessage"]),
            ("review", &["task.diff", "task.review"]),
            ("decide", &["task.decide"]),
            ("deploy", &["tool.invoke"]),
        ];
        for (tool, methods) in tools {
            assert_eq!(set(tool_methods(tool)), set(methods.iter().copied()), "{tool}");
        }
        assert_eq!(
            acts_as("mailbox.ack").map(|a| (a.param, a.any_of)),
            Some(("agent", &[Message, Control][..]))
        );
        assert_eq!(
            acts_as("mailbox.send").map(|a| (a.param, a.any_of)),
            Some(("from", &[Message, Invoke][..]))
        );
        assert_eq!(TABLE.iter().filter(|(m, _)| acts_as(m).is_some()).count(), 2);
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
        for (m, _) in TABLE {
            let Some(a) = acts_as(m) else { continue };
            assert!(!a.any_of.contains(&Operation::Observe), "{m}: observe is read-only");
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
