//! Unattended tasks (seed 001) as of some point of the log: each task is its
//! `task` events folded by the `tasks` crate (`replay(log) == live`).

use std::collections::BTreeMap;

use tasks::{Task, TaskEvent};

/// Every task this node homes, by id.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tasks {
    pub by_id: BTreeMap<String, Task>,
    /// Worker conversation -> its task's id (each task has its own).
    by_conversation: BTreeMap<String, String>,
}

impl Tasks {
    /// Folds one task event at `ts`. A log the decisions could not have
    /// written (an event before its task's creation, after its end) is
    /// reported and skipped: the rest of the catalog still loads.
    pub fn apply(&mut self, ts: u64, id: &str, event: &TaskEvent) {
        let folded = match (self.by_id.get_mut(id), event) {
            (None, TaskEvent::Created(_)) => tasks::replay([(event, ts)]).map(|t| {
                self.by_conversation.insert(t.conversation.clone(), id.to_string());
                self.by_id.insert(id.to_string(), t);
            }),
            (Some(task), _) => tasks::apply(task, event, ts),
            (None, _) => {
                tracing::error!(
                    task = id,
                    kind = event.kind(),
                    "a task event before its task was created"
                );
                return;
            }
        };
        if let Err(e) = folded {
            tracing::error!(task = id, error = %e, "a task event would not fold");
        }
    }

    /// The tasks not yet ended (what a restarted node picks up again).
    pub fn open(&self) -> impl Iterator<Item = &Task> {
        self.by_id.values().filter(|t| !t.is_terminal())
    }

    /// The open tasks `agent` reviews.
    pub fn reviewed_by<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a Task> + 'a {
        self.open()
            .filter(move |t| t.review.as_ref().is_some_and(|r| r.agent == agent))
    }

    /// The open tasks whose dialogs `agent` decides.
    pub fn decided_by<'a>(&'a self, agent: &'a str) -> impl Iterator<Item = &'a Task> + 'a {
        self.open().filter(move |t| {
            t.decider
                .as_ref()
                .is_some_and(|d| d.agent == agent && d.authority.asks_decider())
        })
    }

    /// What a reviewer's or decider's instance token holds beyond its own
    /// agent: observe on each worker's conversation it reviews or decides
    /// for (its diff, its transcript).
    pub fn helper_rights_of(&self, agent: &str) -> Vec<capabilities::Right> {
        use capabilities::{Operation, Resource, Right};
        self.reviewed_by(agent)
            .chain(self.decided_by(agent))
            .map(|t| Right::new(Resource::Conversation(t.conversation.clone()), Operation::Observe))
            .collect()
    }

    /// The task working in `conversation`, if one does.
    pub fn of_conversation(&self, conversation: &str) -> Option<&Task> {
        self.by_id.get(self.by_conversation.get(conversation)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tasks::{Placement, TaskSpec};

    fn spec() -> TaskSpec {
        serde_json::from_value(serde_json::json!({
            "agent": "w", "goal": "make it pass", "acceptance": ["true"]
        }))
        .expect("spec")
    }

    #[test]
    fn a_created_task_folds_and_an_orphan_event_is_skipped() {
        let placement = Placement {
            id: "t1".into(),
            conversation: "c1".into(),
            branch: "warren/w/c1".into(),
            baseline: "0".repeat(40),
        };
        let (live, decision) = tasks::create(&spec(), placement, 1_000);
        let mut folded = Tasks::default();
        folded.apply(5, "t9", &TaskEvent::Launched);
        assert!(folded.by_id.is_empty(), "an event before creation is skipped");
        for e in &decision.events {
            folded.apply(1_000, "t1", e);
        }
        assert_eq!(folded.by_id.get("t1"), Some(&live));
        assert_eq!(folded.open().count(), 1);
        assert_eq!(folded.of_conversation("c1").map(|t| t.id.as_str()), Some("t1"));
    }
}
