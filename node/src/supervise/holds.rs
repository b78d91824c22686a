//! Dialogs held for a human: the hold, its wire shape, and a human's answer.

use serde_json::{Value, json};
use supervision::{AuditFields, Decision, Meaning, Outcome, Trigger};

use super::{Supervisor, excerpt};
use crate::live::Live;
use crate::service::{NodeError, NodeResult};
use node_runtime::harness::Dialog as ScreenDialog;
use node_store::util::{new_id, now_ms};

/// Most holds kept (oldest dropped first).
const MAX_HOLDS: usize = 1024;
/// A hold's command, content and detail are each cut to this many characters.
const MAX_HOLD_TEXT: usize = 4000;

/// A dialog supervision held for a human.
#[derive(Debug, Clone)]
pub struct Held {
    pub id: String,
    pub agent: String,
    pub conversation: String,
    pub screen: ScreenDialog,
    pub dialog: supervision::Dialog,
    pub class: supervision::DialogClass,
    pub summary: String,
    pub since: u64,
    /// The definitions the agent changed that made the repository-code rule
    /// hold it: a human's approve accepts them as they are.
    pub redefined: Vec<std::path::PathBuf>,
    /// Why the policy held it (a task's decider never lifts the veto's holds).
    pub source: supervision::PolicySource,
}

/// Who answers a held dialog, as its audit row says.
#[derive(Debug, Clone, Copy)]
pub enum AnsweredBy<'a> {
    /// `supervision.answer`.
    Human,
    /// A task's decider agent (`task.decide`), with its reason.
    Decider { agent: &'a str, reason: &'a str },
}

impl AnsweredBy<'_> {
    fn says(&self, decision: &str) -> String {
        match self {
            AnsweredBy::Human => format!("a human chose {decision}"),
            AnsweredBy::Decider { agent, reason } => format!("the task's decider {agent} chose {decision}: {reason}"),
        }
    }
}

impl Held {
    pub fn to_wire(&self) -> Value {
        // What the dialog asks, so a human reads it before answering: the
        // command of a Bash dialog, the diff or text of an edit, the paths it
        // writes, and the dialog as the screen shows it (`detail`).
        let command = self.dialog.command.as_deref().map(bounded);
        let content = (!self.dialog.content.is_empty()).then(|| bounded(&self.dialog.content));
        let detail = bounded(&self.screen.lines.join("\n"));
        let cut = [&command, &content, &Some(detail.clone())]
            .iter()
            .any(|t| t.as_ref().is_some_and(|(_, cut)| *cut));
        json!({
            "id": self.id,
            "agent": self.agent,
            "conversation": self.conversation,
            "dialog_class": self.class,
            "summary": self.summary,
            "since": self.since,
            "options": self.dialog.options,
            "title": self.dialog.title,
            "command": command.map(|c| c.0),
            "content": content.map(|c| c.0),
            "paths": self.dialog.paths,
            "detail": detail.0,
            "detail_truncated": cut,
            "doubt": self.dialog.doubt,
        })
    }
}

/// At most `MAX_HOLD_TEXT` characters of a hold's text, and whether any
/// was cut.
fn bounded(text: &str) -> (String, bool) {
    let mut chars = text.char_indices();
    match chars.nth(MAX_HOLD_TEXT) {
        Some((i, _)) => (text[..i].to_string(), true),
        None => (text.to_string(), false),
    }
}

impl Supervisor {
    pub(super) async fn hold(
        &self,
        live: &Live,
        shown: &ScreenDialog,
        dialog: supervision::Dialog,
        decision: &Decision,
    ) {
        let held = Held {
            id: new_id("h-"),
            agent: live.agent.clone(),
            conversation: live.id.clone(),
            screen: shown.clone(),
            class: decision.class,
            summary: if decision.subject.is_empty() {
                shown.title.clone()
            } else {
                decision.subject.clone()
            },
            dialog,
            since: now_ms(),
            redefined: decision.redefined.clone(),
            source: decision.source,
        };
        if let Ok(mut h) = self.holds.lock() {
            if h.len() >= MAX_HOLDS
                && let Some(oldest) = h.values().min_by_key(|x| x.since).map(|x| x.id.clone())
            {
                h.remove(&oldest);
            }
            h.insert(held.id.clone(), held);
        }
        let fields = AuditFields::for_dialog(decision, Outcome::Held, None);
        self.audit(&live.agent, Some(&live.id), fields, excerpt(shown), None)
            .await;
        // One needs-you per held dialog (the episode lasts while it is on screen).
        let wire = self.holds.lock().ok().and_then(|h| {
            h.values()
                .find(|x| x.conversation == live.id && &x.screen == shown)
                .map(Held::to_wire)
        });
        if let Some(hold) = wire {
            self.publish(
                console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                json!({ "reason": decision.reason, "hold": hold }),
            );
        }
    }

    /// Drops the hold of `conversation` for this exact dialog, if any.
    pub(super) fn drop_hold_of(&self, conversation: &str, shown: &ScreenDialog) {
        if let Ok(mut h) = self.holds.lock() {
            h.retain(|_, x| !(x.conversation == conversation && &x.screen == shown));
        }
    }

    /// Whether a dialog with this hold id is held here.
    pub fn is_held(&self, hold: &str) -> bool {
        self.holds.lock().is_ok_and(|h| h.contains_key(hold))
    }

    /// The hold `id`, if it is still held.
    pub fn held(&self, id: &str) -> Option<Held> {
        self.holds.lock().ok()?.get(id).cloned()
    }

    /// The oldest dialog held on `conversation`, if any.
    pub fn hold_of(&self, conversation: &str) -> Option<Held> {
        let h = self.holds.lock().ok()?;
        h.values()
            .filter(|x| x.conversation == conversation)
            .min_by_key(|x| x.since)
            .cloned()
    }

    /// Whether the task working in `conversation` has its decider answer
    /// every dialog (`authority: decider`; not under a human's takeover):
    /// what the policy would approve is held for the decider instead.
    pub(super) async fn decider_answers_all(&self, conversation: &str) -> bool {
        let cat = self.catalog.lock().await;
        cat.tasks
            .of_conversation(conversation)
            .filter(|t| !t.is_terminal() && t.takeover.is_none())
            .and_then(|t| t.decider.as_ref())
            .is_some_and(|d| d.authority == tasks::Authority::Decider)
    }

    /// Audits a task decider's approve that its bounds refused (nothing typed).
    pub async fn refuse_decider(&self, held: &Held, agent: &str, why: &str) {
        let mut fields = AuditFields::for_action(
            Trigger::Answer,
            supervision::AuditDecision::Approve,
            Outcome::Skipped,
            format!("refused: the task's decider {agent} may not approve this dialog: {why}"),
        );
        fields.dialog_class = Some(held.class);
        fields.subject = Some(held.summary.clone());
        self.audit(
            &held.agent,
            Some(&held.conversation),
            fields,
            excerpt(&held.screen),
            None,
        )
        .await;
    }

    /// Drops the holds of a conversation whose CLI is gone.
    pub(crate) fn drop_holds(&self, conversation: &str) {
        if let Ok(mut h) = self.holds.lock() {
            h.retain(|_, x| x.conversation != conversation);
        }
    }

    /// `supervision.holds`.
    pub fn supervision_holds(&self, agent: Option<&str>) -> Value {
        let mut holds: Vec<Value> = self
            .holds
            .lock()
            .map(|h| {
                let mut v: Vec<&Held> = h.values().filter(|x| agent.is_none_or(|a| a == x.agent)).collect();
                v.sort_by_key(|x| x.since);
                v.into_iter().map(Held::to_wire).collect()
            })
            .unwrap_or_default();
        holds.truncate(MAX_HOLDS);
        json!({ "holds": holds })
    }

    /// `supervision.answer`: a human's single-shot approve or deny of a held
    /// dialog, by meaning: the keys are the held dialog's template answer
    /// (approve once: its plain yes; deny: its no, or Escape), never an
    /// option picked by its words on screen, and never a standing permission.
    /// A dialog whose template gives no such answer is refused (-32009) and
    /// nothing is typed. Sent through verified send. With `learn` (an
    /// approve; the caller checked it is local), the held command becomes a
    /// learned rule of the agent's workspace once the answer is sent; a
    /// command that cannot be learned is refused before anything is sent.
    pub async fn supervision_answer(&self, hold: &str, decision: &str, learn: bool) -> NodeResult<Value> {
        self.answer_hold(hold, decision, learn, AnsweredBy::Human).await
    }

    /// Answers hold `hold` as `by` (see `supervision_answer`).
    pub async fn answer_hold(&self, hold: &str, decision: &str, learn: bool, by: AnsweredBy<'_>) -> NodeResult<Value> {
        let held = self
            .holds
            .lock()
            .ok()
            .and_then(|h| h.get(hold).cloned())
            .ok_or_else(|| NodeError::NotFound(format!("hold {hold:?} not found")))?;
        let (meaning, verdict) = match decision {
            "approve" => (Meaning::ApproveOnce, supervision::AuditDecision::Approve),
            "deny" => (Meaning::Deny, supervision::AuditDecision::Deny),
            other => {
                return Err(NodeError::Invalid(format!(
                    "decision: {other:?} is not approve or deny"
                )));
            }
        };
        let answer = held.dialog.answer(meaning).cloned().map_err(|why| {
            NodeError::Conflict(format!(
                "hold {hold}: no verified {} answer ({why}); nothing was typed",
                meaning.as_str()
            ))
        })?;
        let learning = if learn {
            Some(self.check_learn(&held, decision).await?)
        } else {
            None
        };
        let keys = answer.keys.clone();
        let live = self
            .live(&held.conversation)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {} has no running CLI", held.conversation)))?;
        let (outcome, why) = self
            .verified_send(&live, &held.screen, meaning, &answer, |outcome, why| {
                let mut fields = AuditFields::for_action(
                    Trigger::Answer,
                    verdict,
                    outcome,
                    why.map_or_else(|| by.says(decision), str::to_string),
                );
                fields.dialog_class = Some(held.class);
                fields.subject = Some(held.summary.clone());
                if outcome == Outcome::Sent {
                    fields.keys = vec![keys.clone()];
                }
                fields
            })
            .await;
        if let Ok(mut h) = self.holds.lock() {
            h.remove(hold);
        }
        match outcome {
            Outcome::Sent => {
                if verdict == supervision::AuditDecision::Approve {
                    live.accept_changed(&held.redefined);
                    if !held.redefined.is_empty() {
                        let who = match by {
                            AnsweredBy::Human => "human via supervision.answer".to_string(),
                            AnsweredBy::Decider { agent, .. } => format!("task decider {agent} via task.decide"),
                        };
                        self.accept_definitions(&live.workspace, &held.redefined, &who).await;
                    }
                }
                let mut answer = json!({ "outcome": "sent", "keys": keys });
                if let Some(pattern) = learning {
                    // The answer is sent: a failure to learn does not undo it.
                    match self
                        .supervision_learn(&held.agent, &pattern, true, "human via supervision.answer")
                        .await
                    {
                        Ok(learned) => answer["learned"] = learned,
                        Err(e) => answer["learn_error"] = json!(e.to_string()),
                    }
                }
                Ok(answer)
            }
            _ => Err(NodeError::Conflict(format!(
                "hold {hold} was not answered: {}",
                why.unwrap_or_else(|| "the send failed".into())
            ))),
        }
    }

    /// The pattern `supervision.answer {learn: true}` would learn from `held`,
    /// checked against the workspace's rules (valid, under the limit) before
    /// anything is sent. Errors name `learn`.
    async fn check_learn(&self, held: &Held, decision: &str) -> NodeResult<String> {
        if decision != "approve" {
            return Err(NodeError::Invalid("learn: only an approve can be learned".into()));
        }
        if held.class != supervision::DialogClass::CommandExec {
            return Err(NodeError::Invalid(format!(
                "learn: only a command_exec dialog can be learned (this one is {})",
                held.class
            )));
        }
        let command = held
            .dialog
            .command
            .as_deref()
            .ok_or_else(|| NodeError::Invalid("learn: the held dialog shows no command to learn".into()))?;
        let pattern =
            node_store::validate::pattern_of_command(command).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let cat = self.catalog.lock().await;
        cat.decide_approval_rule(&self.rules_workspace(&held.agent), &pattern, true, "")
            .map_err(|e| match NodeError::from(e) {
                NodeError::Conflict(m) => NodeError::Conflict(format!("learn: {m}")),
                other => other,
            })?;
        Ok(pattern)
    }
}
