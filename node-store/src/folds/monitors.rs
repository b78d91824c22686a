//! Monitor attachments as this node's log records them: each attachment's
//! normalized spec (it lives in the monitor agent's definition), its breaker
//! events (replayed into the breaker's state), the highest seq that fired per
//! target conversation, and the monitor's conversation per target
//! conversation. A pure fold over `monitor_*` events.

use std::collections::BTreeMap;

use crate::events::Event;

#[derive(Debug, Clone, PartialEq)]
pub struct AttachmentEntry {
    pub spec: monitor::AttachmentSpec,
    pub attached_at: u64,
    pub breaker: Vec<monitor::BreakerEvent>,
    /// Target conversation -> highest seq that fired.
    pub fired: BTreeMap<String, u64>,
    /// Target conversation -> the monitor's conversation for it.
    pub conversations: BTreeMap<String, String>,
}

/// Breaker events kept per attachment (older ones are folded away: what
/// matters is the trip state, the cycle count and the recent wakes).
const MAX_BREAKER_EVENTS: usize = 4096;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct MonitorState {
    /// Attached (not detached) attachments by id.
    pub attachments: BTreeMap<String, AttachmentEntry>,
}

impl MonitorState {
    pub fn apply(&mut self, ts: u64, e: &Event) {
        match e {
            Event::MonitorAttached { attachment, spec } => {
                self.attachments.insert(
                    attachment.clone(),
                    AttachmentEntry {
                        spec: spec.clone(),
                        attached_at: ts,
                        breaker: vec![],
                        fired: BTreeMap::new(),
                        conversations: BTreeMap::new(),
                    },
                );
            }
            Event::MonitorDetached { attachment } => {
                self.attachments.remove(attachment);
            }
            Event::MonitorBreaker { attachment, event } => {
                if let Some(a) = self.attachments.get_mut(attachment) {
                    if a.breaker.len() >= MAX_BREAKER_EVENTS {
                        // Keep the trip (if any) meaningful: drop from the front.
                        a.breaker.drain(..MAX_BREAKER_EVENTS / 2);
                    }
                    a.breaker.push(event.clone());
                }
            }
            Event::MonitorCursor {
                attachment,
                conversation,
                seq,
            } => {
                if let Some(a) = self.attachments.get_mut(attachment) {
                    let s = a.fired.entry(conversation.clone()).or_default();
                    *s = (*s).max(*seq);
                }
            }
            Event::MonitorConversation {
                attachment,
                target,
                conversation,
            } => {
                if let Some(a) = self.attachments.get_mut(attachment) {
                    a.conversations.insert(target.clone(), conversation.clone());
                }
            }
            _ => {}
        }
    }

    /// The rights a monitor agent's conversations carry for its targets:
    /// observe, and inject where it advises.
    pub fn rights_of(&self, monitor: &str) -> Vec<capabilities::Right> {
        use capabilities::{Operation, Resource, Right};
        let mut rights = vec![];
        for (_, a) in self.of_monitor(monitor) {
            let resource = match (&a.spec.target.agent, &a.spec.target.conversation) {
                (Some(agent), _) => Resource::Agent(agent.clone()),
                (None, Some(c)) => Resource::Conversation(c.clone()),
                (None, None) => continue,
            };
            rights.push(Right::new(resource.clone(), Operation::Observe));
            if a.spec.inject.unwrap_or(true) {
                rights.push(Right::new(resource, Operation::Inject));
            }
        }
        rights
    }

    /// The attachments of one monitor agent.
    pub fn of_monitor<'a>(&'a self, monitor: &'a str) -> impl Iterator<Item = (&'a String, &'a AttachmentEntry)> + 'a {
        self.attachments.iter().filter(move |(_, a)| a.spec.monitor == monitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(monitor: &str) -> monitor::AttachmentSpec {
        serde_json::from_value(serde_json::json!({
            "monitor": monitor, "target": {"agent": "t"},
            "trigger": {"keywords": [{"text": "segfault"}]}
        }))
        .expect("spec")
    }

    #[test]
    fn attachments_fold_from_their_events() {
        let mut s = MonitorState::default();
        s.apply(
            5,
            &Event::MonitorAttached {
                attachment: "ma-1".into(),
                spec: spec("m"),
            },
        );
        s.apply(
            6,
            &Event::MonitorCursor {
                attachment: "ma-1".into(),
                conversation: "c-1".into(),
                seq: 7,
            },
        );
        s.apply(
            7,
            &Event::MonitorCursor {
                attachment: "ma-1".into(),
                conversation: "c-1".into(),
                seq: 3,
            },
        );
        s.apply(
            8,
            &Event::MonitorBreaker {
                attachment: "ma-1".into(),
                event: monitor::BreakerEvent::Woke { at: 8 },
            },
        );
        s.apply(
            9,
            &Event::MonitorConversation {
                attachment: "ma-1".into(),
                target: "c-1".into(),
                conversation: "c-m".into(),
            },
        );
        let a = &s.attachments["ma-1"];
        assert_eq!(a.attached_at, 5);
        assert_eq!(a.fired["c-1"], 7, "the cursor only moves forward");
        assert_eq!(a.breaker.len(), 1);
        assert_eq!(a.conversations["c-1"], "c-m");
        assert_eq!(s.of_monitor("m").count(), 1);
        assert_eq!(s.of_monitor("other").count(), 0);
        // Events of an unknown attachment change nothing; detaching removes it.
        s.apply(
            10,
            &Event::MonitorCursor {
                attachment: "ma-x".into(),
                conversation: "c".into(),
                seq: 1,
            },
        );
        s.apply(
            11,
            &Event::MonitorDetached {
                attachment: "ma-1".into(),
            },
        );
        assert!(s.attachments.is_empty());
    }
}
