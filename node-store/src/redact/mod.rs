//! Secret redaction: the values the node knows to be secret (each agent's
//! secrets, the owner tools' environment values, every live instance token)
//! are replaced by `[redacted: NAME]` before an event carrying outside text
//! is stored (transcript deltas, mail, recall documents, audit rows, pause
//! reasons, tool arguments, guest refusals: `Store::enqueue` does it, and the
//! recall index is made from those) and before terminal bytes reach a
//! subscriber, a held dialog is answered or an event is pushed to
//! `events.subscribe`. `matcher` (one automaton over every value) and
//! `stream` (values split across reads) are pure; `Redaction` holds the
//! values by source and rebuilds the matcher when the set changes.

pub mod matcher;
pub mod stream;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use serde_json::Value;

use crate::events::Event;
pub use matcher::{MIN_SECRET_LEN, Matcher, marker};
pub use stream::StreamRedactor;

/// The name an instance token is redacted under (the variable the CLI has it in).
pub const INSTANCE_TOKEN: &str = "WARREN_TOKEN";

/// The known secret values by where they come from, and the matcher over them.
#[derive(Default)]
pub struct Redaction {
    sources: Mutex<Sources>,
    current: RwLock<Arc<Matcher>>,
}

#[derive(Default)]
struct Sources {
    /// agent -> secret name -> value.
    agents: BTreeMap<String, BTreeMap<String, String>>,
    /// An owner tool's environment variable -> its value (the node's own).
    tools: BTreeMap<String, String>,
    /// conversation -> its instance tokens and when each expires.
    tokens: HashMap<String, Vec<(String, SystemTime)>>,
    /// The (value, name) pairs the current matcher was built from.
    built: Vec<(String, String)>,
}

impl Redaction {
    /// The matcher now (cheap: an `Arc`).
    pub fn matcher(&self) -> Arc<Matcher> {
        self.current
            .read()
            .map(|m| m.clone())
            .unwrap_or_else(|_| Arc::new(Matcher::empty()))
    }

    /// `agent`'s secrets are now `secrets` (name -> value).
    pub fn set_agent_secrets(&self, agent: &str, secrets: &BTreeMap<String, String>) {
        self.update(|s| {
            if secrets.is_empty() {
                s.agents.remove(agent);
            } else {
                s.agents.insert(agent.to_string(), secrets.clone());
            }
        });
    }

    /// The owner tools' environment values (variable -> value).
    pub fn set_tool_env(&self, env: BTreeMap<String, String>) {
        self.update(|s| s.tools = env);
    }

    /// An instance token issued to `conversation`, valid until `expires`.
    pub fn add_instance_token(&self, conversation: &str, token: &str, expires: SystemTime) {
        self.update(|s| {
            s.tokens
                .entry(conversation.to_string())
                .or_default()
                .push((token.to_string(), expires));
        });
    }

    /// `conversation`'s instance tokens are revoked: nothing to hide any more.
    pub fn forget_instance_tokens(&self, conversation: &str) {
        self.update(|s| {
            s.tokens.remove(conversation);
        });
    }

    /// Changes the sources, and rebuilds the matcher if the values changed.
    fn update(&self, change: impl FnOnce(&mut Sources)) {
        let Ok(mut s) = self.sources.lock() else { return };
        change(&mut s);
        let now = SystemTime::now();
        for tokens in s.tokens.values_mut() {
            tokens.retain(|(_, expires)| *expires > now);
        }
        s.tokens.retain(|_, t| !t.is_empty());
        let mut pairs: Vec<(String, String)> = vec![];
        for secrets in s.agents.values() {
            pairs.extend(secrets.iter().map(|(n, v)| (v.clone(), n.clone())));
        }
        pairs.extend(s.tools.iter().map(|(n, v)| (v.clone(), n.clone())));
        for tokens in s.tokens.values() {
            pairs.extend(tokens.iter().map(|(t, _)| (t.clone(), INSTANCE_TOKEN.to_string())));
        }
        pairs.sort();
        pairs.dedup();
        if pairs == s.built {
            return;
        }
        match Matcher::new(pairs.iter().map(|(v, n)| (n.as_str(), v.as_str()))) {
            Ok(m) => {
                if let Ok(mut current) = self.current.write() {
                    *current = Arc::new(m);
                }
                s.built = pairs;
            }
            Err(e) => tracing::error!(error = %e, values = pairs.len(), "the secret matcher could not be built"),
        }
    }
}

/// Whether an event carries text from outside the node's own decisions: a
/// CLI's output, what humans and agents send, a dialog read off a screen, a
/// tool's arguments, a client's hello. Those are redacted. The others record
/// the owner's decisions and the node's own state (names, paths, models,
/// rules, keys) that the catalog folds and must read back exactly; an
/// owner's value that happens to equal a secret is not rewritten there.
/// (Exhaustive: a new kind of event must be placed.)
pub fn carries_outside_text(e: &Event) -> bool {
    match e {
        Event::Transcript { .. }
        | Event::MailSent { .. }
        | Event::SupervisionActed { .. }
        | Event::ConversationPaused { .. }
        | Event::ToolInvoked { .. }
        | Event::RecallStashed { .. }
        | Event::Guest { .. }
        // A guest names the destination (a secret may hide in a host name).
        | Event::Egress { .. }
        // Check output tails, repair texts and review notes.
        | Event::Task { .. } => true,
        Event::AgentCreated { .. }
        | Event::AgentUpdated { .. }
        | Event::AgentArchived { .. }
        | Event::ConversationCreated { .. }
        | Event::ConversationLaunched { .. }
        | Event::ConversationContinued { .. }
        | Event::ConversationArchived { .. }
        | Event::WorkspaceLeased { .. }
        | Event::MailAcked { .. }
        | Event::MailDelivered { .. }
        // A refusal's reason is the member's words about a name and a size.
        | Event::MailForwarded { .. }
        | Event::SupervisionSet { .. }
        | Event::SupervisionDefaults { .. }
        | Event::ApprovalRule { .. }
        | Event::DefinitionsAccepted { .. }
        | Event::TokenRevoked { .. }
        | Event::AgentSecret { .. }
        | Event::FleetJoined { .. }
        | Event::FleetMember { .. }
        | Event::FleetRemoved { .. }
        | Event::FleetInvite { .. }
        | Event::FleetInviteUsed { .. }
        | Event::GuestAttached { .. }
        | Event::InstanceTokenIssued { .. }
        | Event::UsageRecorded { .. }
        | Event::MonitorAttached { .. }
        | Event::MonitorDetached { .. }
        | Event::MonitorBreaker { .. }
        | Event::MonitorCursor { .. }
        | Event::MonitorConversation { .. }
        | Event::RecallForgot { .. }
        | Event::BudgetSet { .. }
        | Event::BudgetToppedUp { .. }
        | Event::BudgetCharged { .. }
        | Event::BudgetWaiting { .. }
        | Event::BudgetResumed { .. }
        | Event::BudgetExhausted { .. } => false,
    }
}

/// `e` with every known secret value in its text replaced, if it carries
/// text from outside (`carries_outside_text`). A transcript delta's text is
/// redacted directly (the hot path); another event in every string it holds.
pub fn redact_event(m: &Matcher, e: Event) -> Event {
    if m.is_empty() || !carries_outside_text(&e) {
        return e;
    }
    match e {
        Event::Transcript {
            conversation,
            seq,
            speaker,
            kind,
            text,
            cursor,
        } => Event::Transcript {
            text: match m.redact_str(&text) {
                std::borrow::Cow::Borrowed(_) => text,
                std::borrow::Cow::Owned(t) => t,
            },
            conversation,
            seq,
            speaker,
            kind,
            cursor,
        },
        other => {
            let Ok(mut v) = serde_json::to_value(&other) else {
                return other;
            };
            if !redact_value(m, &mut v) {
                return other;
            }
            match serde_json::from_value(v) {
                Ok(e) => e,
                Err(err) => {
                    // Not expected: an event reads back as it was written.
                    tracing::error!(kind = other.kind(), error = %err, "a redacted event did not read back");
                    other
                }
            }
        }
    }
}

/// Redacts every string in `v` (not object keys); true if any changed. For
/// answers and notifications made from what the node holds in memory (a
/// hold's dialog, an event's payload).
pub fn redact_value(m: &Matcher, v: &mut Value) -> bool {
    match v {
        Value::String(s) => match m.redact_str(s) {
            std::borrow::Cow::Owned(r) => {
                *s = r;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        },
        Value::Array(items) => items.iter_mut().fold(false, |any, i| redact_value(m, i) | any),
        Value::Object(map) => map.values_mut().fold(false, |any, i| redact_value(m, i) | any),
        _ => false,
    }
}

/// A screen as read by a client: its lines and styled runs redacted (a run
/// holding a value grows by the marker; a value cut across runs of
/// different styles is not seen, the lines still are).
pub fn redact_screen(m: &Matcher, screen: &mut console_api::Screen) {
    if m.is_empty() {
        return;
    }
    for line in &mut screen.lines {
        if let std::borrow::Cow::Owned(r) = m.redact_str(line) {
            *line = r;
        }
    }
    if let Some(cells) = &mut screen.cells {
        for run in cells.rows.iter_mut().flatten() {
            if let std::borrow::Cow::Owned(r) = m.redact_str(&run.text) {
                run.text = r;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_matcher_follows_the_sources() {
        let r = Redaction::default();
        assert!(r.matcher().is_empty());
        let secrets = BTreeMap::from([("API_KEY".to_string(), "sk-live-123456".to_string())]);
        r.set_agent_secrets("a", &secrets);
        r.set_tool_env(BTreeMap::from([("VAULT".to_string(), "vault-987654".to_string())]));
        let later = SystemTime::now() + Duration::from_secs(600);
        r.add_instance_token("c-1", "EoQBtoken-abcdef", later);
        let m = r.matcher();
        assert_eq!(
            m.redact_str("sk-live-123456 vault-987654 EoQBtoken-abcdef"),
            "[redacted: API_KEY] [redacted: VAULT] [redacted: WARREN_TOKEN]"
        );
        // The same set again builds nothing new.
        r.set_agent_secrets("a", &secrets);
        assert!(Arc::ptr_eq(&m, &r.matcher()));
        r.forget_instance_tokens("c-1");
        r.set_agent_secrets("a", &BTreeMap::new());
        assert_eq!(
            r.matcher().redact_str("sk-live-123456 EoQBtoken-abcdef"),
            "sk-live-123456 EoQBtoken-abcdef"
        );
        // An expired token is dropped at the next change.
        r.add_instance_token("c-2", "EoQBold-token-xyz", SystemTime::now() - Duration::from_secs(1));
        assert_eq!(r.matcher().len(), 1, "only the tool's value");
    }

    #[test]
    fn events_are_redacted_in_every_string() {
        let m = Matcher::new([("K", "sk-live-123456")]).expect("matcher");
        let t = redact_event(
            &m,
            Event::Transcript {
                conversation: "c-1".into(),
                seq: 1,
                speaker: "tool".into(),
                kind: "tool".into(),
                text: "$ env\nK=sk-live-123456".into(),
                cursor: Some(7),
            },
        );
        assert!(matches!(&t, Event::Transcript { text, cursor: Some(7), .. } if text == "$ env\nK=[redacted: K]"));
        let mail = redact_event(
            &m,
            Event::MailSent {
                id: "m-1".into(),
                from: "a".into(),
                to: "b".into(),
                context: Some("ctx sk-live-123456".into()),
                body: "the key is sk-live-123456".into(),
            },
        );
        assert_eq!(
            mail,
            Event::MailSent {
                id: "m-1".into(),
                from: "a".into(),
                to: "b".into(),
                context: Some("ctx [redacted: K]".into()),
                body: "the key is [redacted: K]".into(),
            }
        );
        // The owner's own decisions read back exactly.
        let archived = Event::AgentArchived {
            name: "sk-live-123456".into(),
        };
        assert_eq!(redact_event(&m, archived.clone()), archived);
    }
}
