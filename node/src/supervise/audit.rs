//! The audit log read back: rows folded from attempt and outcome events,
//! newest first.

use serde_json::{Value, json};
use supervision::Outcome;

use super::Supervisor;
use crate::service::NodeResult;
use node_store::events::Event;

/// Most audit rows one read returns.
const MAX_AUDIT: u32 = 200;

impl Supervisor {
    /// `supervision.audit`: newest first, at most 200, optionally for one agent
    /// and before an id.
    pub async fn supervision_audit(
        &self,
        agent: Option<&str>,
        limit: Option<u32>,
        before: Option<u64>,
    ) -> NodeResult<Value> {
        let limit = limit.unwrap_or(50).clamp(1, MAX_AUDIT) as usize;
        let mut entries = vec![];
        self.scan_audit(before.unwrap_or(u64::MAX), |a, row| {
            if agent.is_none_or(|want| want == a) {
                entries.push(row);
            }
            entries.len() < limit
        })
        .await?;
        Ok(json!({ "entries": entries }))
    }

    /// The newest audit row of each of `agents`, in one newest-first scan.
    pub(crate) async fn last_audit_rows(
        &self,
        agents: &[String],
    ) -> NodeResult<std::collections::HashMap<String, Value>> {
        let mut found = std::collections::HashMap::new();
        if agents.is_empty() {
            return Ok(found);
        }
        self.scan_audit(u64::MAX, |a, row| {
            if agents.contains(&a) {
                found.entry(a).or_insert(row);
            }
            found.len() < agents.len()
        })
        .await?;
        Ok(found)
    }

    /// Folded audit rows (agent, row) with ids below `before`, newest first,
    /// read a page at a time until `visit` returns false or the log ends.
    async fn scan_audit(&self, mut before: u64, mut visit: impl FnMut(String, Value) -> bool) -> NodeResult<()> {
        let mut fold = self.audit_fold();
        loop {
            let page = self.store().audit_before(before, 500).await?;
            if page.is_empty() {
                return Ok(());
            }
            for e in &page {
                before = e.seq;
                if let Some((agent, row)) = fold.push(e)
                    && !visit(agent, row)
                {
                    return Ok(());
                }
            }
        }
    }
}

/// How an audit event relates to the row it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    /// A whole row (holds, skips, mail, stall and nudge actions).
    Single,
    /// Written before typing; its outcome follows.
    Attempt,
    /// Completes the attempt with this seq.
    Outcome(u64),
}

/// An audit event as the wire's audit row (seed 000's columns), with its
/// agent and how it links to other events.
pub(super) fn audit_row(e: &node_store::events::StoredEvent) -> Option<(&str, Value, Link)> {
    let Event::SupervisionActed {
        agent,
        conversation,
        fields,
        pane_excerpt,
        attempt,
    } = &e.event
    else {
        return None;
    };
    let link = match attempt {
        Some(of) => Link::Outcome(*of),
        None if fields.outcome == Outcome::Attempted => Link::Attempt,
        None => Link::Single,
    };
    let mut row = serde_json::to_value(fields).unwrap_or(Value::Null);
    if let Some(obj) = row.as_object_mut() {
        obj.insert("id".into(), json!(e.seq));
        obj.insert("at".into(), json!(e.ts));
        obj.insert("agent".into(), json!(agent));
        obj.insert("conversation".into(), json!(conversation));
        obj.insert("pane_excerpt".into(), json!(pane_excerpt));
    }
    Some((agent, row, link))
}

/// Most outcomes kept waiting for their attempt while folding (an attempt is
/// written right before its outcome, so only a few are ever in flight).
const MAX_PENDING_OUTCOMES: usize = 4096;

/// Folds audit events read newest first into rows: an outcome is held back
/// until its attempt, and the pair becomes one row with the attempt's id and
/// time. An attempt with no outcome stays `attempted`.
#[derive(Default)]
pub(super) struct AuditFold {
    pub(super) outcomes: std::collections::HashMap<u64, Value>,
    /// Attempts after this seq belong to the running node: one without an
    /// outcome yet is in flight and left out (the outcome is coming).
    pub(super) run_from_seq: u64,
}

impl AuditFold {
    fn push(&mut self, e: &node_store::events::StoredEvent) -> Option<(String, Value)> {
        let (agent, row, link) = audit_row(e)?;
        let agent = agent.to_string();
        match link {
            Link::Single => Some((agent, row)),
            Link::Outcome(of) => {
                if self.outcomes.len() < MAX_PENDING_OUTCOMES {
                    self.outcomes.insert(of, row);
                }
                None
            }
            Link::Attempt => match self.outcomes.remove(&e.seq) {
                Some(mut done) => {
                    done["id"] = row["id"].clone();
                    done["at"] = row["at"].clone();
                    Some((agent, done))
                }
                None if e.seq > self.run_from_seq => None,
                None => {
                    let mut row = row;
                    let reason = row["reason"].as_str().unwrap_or_default().to_string();
                    row["reason"] = json!(format!(
                        "{reason}; no outcome recorded: the node stopped while typing, the keys may have been sent"
                    ));
                    Some((agent, row))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use node_store::events::StoredEvent;
    use supervision::{AuditDecision, AuditFields, Trigger};

    fn event(seq: u64, outcome: Outcome, attempt: Option<u64>) -> StoredEvent {
        StoredEvent {
            seq,
            ts: seq * 10,
            event: Event::SupervisionActed {
                agent: "a".into(),
                conversation: Some("c".into()),
                fields: AuditFields::for_action(Trigger::Dialog, AuditDecision::Approve, outcome, "r"),
                pane_excerpt: String::new(),
                attempt,
            },
        }
    }

    fn fold(events: &[StoredEvent]) -> Vec<(u64, u64, String)> {
        let mut f = AuditFold::default();
        events
            .iter()
            .rev()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| {
                (
                    r["id"].as_u64().unwrap_or(0),
                    r["at"].as_u64().unwrap_or(0),
                    r["outcome"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn an_attempt_and_its_outcome_are_one_row_with_the_attempts_id() {
        let rows = fold(&[
            event(1, Outcome::Held, None),
            event(2, Outcome::Attempted, None),
            event(3, Outcome::Skipped, None),
            event(4, Outcome::Sent, Some(2)),
            event(5, Outcome::Attempted, None),
            event(6, Outcome::Failed, Some(5)),
        ]);
        assert_eq!(
            rows,
            vec![
                (5, 50, "failed".to_string()),
                (3, 30, "skipped".to_string()),
                (2, 20, "sent".to_string()),
                (1, 10, "held".to_string()),
            ]
        );
    }

    #[test]
    fn an_attempt_cut_off_by_a_crash_stays_one_attempted_row() {
        // The attempt (seq 8) is older than this run (which began at seq 100).
        let mut f = AuditFold {
            run_from_seq: 100,
            ..AuditFold::default()
        };
        let rows: Vec<Value> = [event(8, Outcome::Attempted, None), event(7, Outcome::Held, None)]
            .iter()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| r)
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["outcome"], "attempted");
        assert!(
            rows[0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("keys may have been sent")),
            "{}",
            rows[0]
        );
    }

    #[test]
    fn an_attempt_of_this_run_is_left_out_until_its_outcome() {
        let mut f = AuditFold {
            run_from_seq: 7,
            ..AuditFold::default()
        };
        let rows: Vec<u64> = [event(8, Outcome::Attempted, None), event(7, Outcome::Held, None)]
            .iter()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| r["id"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(rows, vec![7]);
    }
}
