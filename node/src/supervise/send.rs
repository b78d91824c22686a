//! Verified send and the audit discipline of every action supervision takes:
//! an `attempted` row before the keys, its outcome after; and a human's nudge.

use serde_json::{Value, json};
use supervision::{Answer, AuditFields, Meaning, Outcome, Trigger};

use super::audit::{AuditFold, Link, audit_row};
use super::{Supervisor, capture, excerpt};
use crate::live::Live;
use crate::service::{NodeError, NodeResult};
use node_runtime::harness::Dialog as ScreenDialog;
use node_store::events::Event;

/// How many times, and how far apart, verified send reads the screen again
/// when it does not show the expected dialog: a terminal caught mid-redraw
/// (a CLI repaints its dialog region row by row) settles within this.
const RECHECKS: u32 = 8;
const RECHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(75);

/// The dialog on screen, when it is the one `expected` is: drawn exactly
/// the same, or read the same (the same title, question, command, content,
/// paths, options, template answers and doubt) though drawn differently (a
/// repaint, a row wrapped at another width). Anything else is refused with
/// why, after a few reads spaced for a repaint to settle.
async fn still_shown(
    live: &Live,
    expected: &ScreenDialog,
    workspace: &std::path::Path,
) -> Result<ScreenDialog, &'static str> {
    let mut why = "the dialog is no longer on screen";
    for attempt in 0..RECHECKS {
        if attempt > 0 {
            tokio::time::sleep(RECHECK_EVERY).await;
        }
        match capture(live) {
            None => why = "the dialog is no longer on screen",
            Some(now) if &now == expected => return Ok(now),
            Some(now) => {
                if reads_the_same(live, &now, expected, workspace) {
                    return Ok(now);
                }
                // Where, not what: a screen's rows can hold a secret.
                let first_differing_row = expected.lines.iter().zip(&now.lines).position(|(a, b)| a != b);
                tracing::debug!(
                    conversation = %live.id,
                    rows_before = expected.lines.len(),
                    rows_after = now.lines.len(),
                    ?first_differing_row,
                    cols = now.cols,
                    "the dialog on screen is not the one decided on"
                );
                why = "the dialog changed before sending";
            }
        }
    }
    Err(why)
}

/// Whether two captures of a dialog are the same dialog drawn differently
/// (a repaint, rows wrapped at another width): the adapter reads the same
/// title, question, command, content, paths, options, template answers and
/// doubt from both.
pub(super) fn reads_the_same(live: &Live, a: &ScreenDialog, b: &ScreenDialog, workspace: &std::path::Path) -> bool {
    let read = |d: &ScreenDialog| live.harness.supervision_dialog(d, workspace, None);
    a == b || read(a) == read(b)
}

impl Supervisor {
    /// Types `answer`'s keys only if the dialog on screen is still `expected`
    /// (drawn the same, or read the same: `still_shown`) and its template,
    /// read again from the screen, still says those keys choose `meaning`
    /// (for a digit, the option of that number is the template's approve-once
    /// or deny option; Escape only ever denies), and writes the action's one audit row. A send is recorded durably as
    /// `attempted` before the first key is typed and completed with its outcome
    /// after, so a crash at any point leaves exactly one row for it.
    pub(crate) async fn verified_send(
        &self,
        live: &Live,
        expected: &ScreenDialog,
        meaning: Meaning,
        answer: &Answer,
        fields: impl Fn(Outcome, Option<&str>) -> AuditFields,
    ) -> (Outcome, Option<String>) {
        let pane = excerpt(expected);
        let workspace = live.workspace.clone();
        let skip = match still_shown(live, expected, &workspace).await {
            Err(why) => Some(why.to_string()),
            Ok(now) => {
                let fresh = live.harness.supervision_dialog(&now, &workspace, None);
                match fresh.answer(meaning) {
                    Ok(a) if a == answer => None,
                    Ok(_) => Some(format!("the keys no longer {} on this dialog", meaning.as_str())),
                    Err(e) => Some(format!("the keys were not verified to {}: {e}", meaning.as_str())),
                }
            }
        };
        if let Some(why) = skip {
            let why = why.as_str();
            self.audit(
                &live.agent,
                Some(&live.id),
                fields(Outcome::Skipped, Some(why)),
                pane,
                None,
            )
            .await;
            return (Outcome::Skipped, Some(why.to_string()));
        }
        let write = async {
            match live.session.write(answer.keys.as_bytes().to_vec()).await {
                Ok(()) => (Outcome::Sent, None),
                Err(e) => (Outcome::Failed, Some(format!("terminal write failed: {e}"))),
            }
        };
        let (outcome, why, _) = self.audited(live, pane, &fields, write).await;
        (outcome, why)
    }

    /// Delivers `text` through the conversation's message queue with the
    /// same audit discipline as verified send. Returns the outcome, the reason
    /// it was not sent, and the row's id.
    pub(super) async fn audited_message(
        &self,
        live: &Live,
        text: String,
        fields: impl Fn(Outcome, Option<&str>) -> AuditFields,
    ) -> (Outcome, Option<String>, Option<u64>) {
        let send = async {
            match live.send_message(text, crate::live::NUDGE_SPEAKER.to_string()).await {
                Ok(_) => (Outcome::Sent, None),
                Err(e) => (Outcome::Skipped, Some(e.to_string())),
            }
        };
        self.audited(live, String::new(), &fields, send).await
    }

    /// The audit discipline of every send: an `attempted` row committed
    /// (FULL) before `send` runs, its outcome after, one row in all; nothing
    /// is sent that could not be recorded. Returns the outcome, why it was
    /// not sent, and the row's id.
    async fn audited(
        &self,
        live: &Live,
        pane: String,
        fields: &impl Fn(Outcome, Option<&str>) -> AuditFields,
        send: impl std::future::Future<Output = (Outcome, Option<String>)>,
    ) -> (Outcome, Option<String>, Option<u64>) {
        let mut attempted = fields(Outcome::Sent, None);
        attempted.outcome = Outcome::Attempted;
        let Some(attempt) = self
            .audit(&live.agent, Some(&live.id), attempted, pane.clone(), None)
            .await
        else {
            return (Outcome::Failed, Some("the audit log could not be written".into()), None);
        };
        let (outcome, why) = send.await;
        self.audit(
            &live.agent,
            Some(&live.id),
            fields(outcome, why.as_deref()),
            pane,
            Some(attempt),
        )
        .await;
        (outcome, why, Some(attempt))
    }

    /// A fold of the audit log that leaves out this run's attempts whose
    /// outcome is not written yet.
    pub(super) fn audit_fold(&self) -> AuditFold {
        AuditFold {
            run_from_seq: self.run_from_seq,
            ..AuditFold::default()
        }
    }

    /// Writes one audit event and announces the row it completes
    /// (`event.supervision.acted`; an attempt is announced with its outcome).
    /// Returns the event's seq.
    pub(crate) async fn audit(
        &self,
        agent: &str,
        conversation: Option<&str>,
        fields: AuditFields,
        pane: String,
        attempt: Option<u64>,
    ) -> Option<u64> {
        let e = Event::SupervisionActed {
            agent: agent.to_string(),
            conversation: conversation.map(str::to_string),
            fields,
            pane_excerpt: pane,
            attempt,
        };
        match self.store().append(vec![e]).await {
            Ok(stored) => {
                let first = stored.first()?;
                if let Some((_, mut row, link)) = audit_row(first) {
                    match link {
                        Link::Attempt => {}
                        Link::Single => self.publish(console_api::methods::EVENT_SUPERVISION_ACTED, row),
                        Link::Outcome(of) => {
                            row["id"] = json!(of);
                            self.publish(console_api::methods::EVENT_SUPERVISION_ACTED, row);
                        }
                    }
                }
                Some(first.seq)
            }
            Err(e) => {
                tracing::error!(error = %e, "could not write the supervision audit row");
                None
            }
        }
    }

    /// `supervision.nudge`: a human's one-off nudge, typed as one message when
    /// the CLI is idle (the message queue's wait), audited as `manual_nudge`.
    pub async fn supervision_nudge(
        &self,
        agent: &str,
        conversation: Option<&str>,
        text: Option<String>,
    ) -> NodeResult<Value> {
        let policy = self.supervision_policy(agent).await;
        let id = match conversation {
            Some(c) => {
                if self.conversation_agent(c).await.as_deref() != Some(agent) {
                    return Err(NodeError::NotFound(format!(
                        "conversation {c:?} of agent {agent:?} not found"
                    )));
                }
                c.to_string()
            }
            None => self
                .live_conversation_of_agent(agent)
                .await?
                .ok_or_else(|| NodeError::Conflict(format!("agent {agent:?} has no live conversation to nudge")))?,
        };
        let text = text.unwrap_or(policy.nudge_text);
        node_store::validate::message_text(&text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let live = self
            .live(&id)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {id} has no running CLI")))?;
        let reason_of = |why: Option<&str>| match why {
            None => "a human asked for a nudge".to_string(),
            Some(e) => format!("nudge not sent: {e}"),
        };
        let (outcome, why, entry) = self
            .audited_message(&live, text.clone(), |outcome, why| {
                let mut fields = AuditFields::for_action(
                    Trigger::ManualNudge,
                    supervision::AuditDecision::Nudge,
                    outcome,
                    reason_of(why),
                );
                fields.subject = Some(text.chars().take(120).collect());
                if outcome == Outcome::Sent {
                    fields.keys = vec![text.clone()];
                }
                fields
            })
            .await;
        let reason = reason_of(why.as_deref());
        Ok(json!({ "outcome": outcome.as_str(), "entry_id": entry, "reason": reason }))
    }
}
