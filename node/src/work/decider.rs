//! A task's decider (seed 001's permission authority, `hybrid` or
//! `decider`): a dialog the supervisor holds on the worker's conversation
//! (`observe.rs` reports it to the task) is put to the decider agent in a
//! conversation of its own for this task, with the goal, the change so far
//! and the worker's recent transcript. Its launch mounts `warren-decide`
//! (`task.decide`, callable only with the decider agent's own token); a deny
//! is typed through the supervisor's verified send, an approve only inside
//! the bounds of `tasks::boundary` (a refused approve is audited and the
//! dialog stays held). No answer within `decider.timeout_secs` parks the
//! task with the question as evidence.

use std::time::Duration;

use console_api as api;
use serde_json::{Value, json};
use tasks::messages::decide_request_text;
use tasks::{HeldFacts, Input, Task};

use super::Tasks;
use super::review::Helper;
use crate::service::{NodeError, NodeResult};
use crate::supervise::{AnsweredBy, Held};

/// Most transcript entries of the worker the decider is shown.
const RECENT: u64 = 12;
/// Longest reason a decider gives (it goes into the audit log).
const MAX_REASON: usize = 2048;

impl Tasks {
    /// `Effect::AskDecider`: beside the queue, the decider is asked and its
    /// time limit armed (it parks the task when nothing answered).
    pub(super) fn ask_decider(&self, task: &Task, dialog: String, decider: String) {
        let me = self.me.clone();
        let task = task.clone();
        let limit = task.decider.as_ref().map_or(0, |d| d.timeout_ms());
        let timer = tokio::spawn({
            let (me, id, dialog) = (me.clone(), task.id.clone(), dialog.clone());
            async move {
                tokio::time::sleep(Duration::from_millis(limit)).await;
                if let Some(t) = me.upgrade() {
                    t.input(&id, Input::DeciderTimedOut { dialog }).await;
                }
            }
        });
        if let Ok(mut b) = self.beside.lock()
            && let Some(old) = b.entry(task.id.clone()).or_default().decider_timer.replace(timer)
        {
            old.abort();
        }
        tokio::spawn(async move {
            let Some(t) = me.upgrade() else { return };
            if let Err(e) = t.tell_decider(&task, &dialog, &decider).await {
                // Its time limit still runs: the task parks when it ends.
                tracing::warn!(task = %task.id, %decider, error = %e, "the decider could not be asked");
            }
        });
    }

    async fn tell_decider(&self, task: &Task, dialog: &str, decider: &str) -> NodeResult<()> {
        let Some(held) = self.supervisor.held(dialog) else {
            return Ok(()); // answered meanwhile
        };
        let change = match self.task_diff(&task.id).await {
            Ok(d) if d.files.is_empty() => "(nothing changed yet)".to_string(),
            Ok(d) => d
                .files
                .iter()
                .map(|f| format!("{} {} (+{} -{})", f.status, f.path, f.additions, f.deletions))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("(the diff could not be read: {e})"),
        };
        let recent = self.recent_transcript(&task.conversation).await;
        let text = decide_request_text(task, &dialog_text(&held), &change, &recent);
        let conversation = self.helper_conversation(task, decider, Helper::Decider).await?;
        let live = self.require_live(&conversation).await?;
        live.send_turn(text, "system".into()).await?;
        Ok(())
    }

    /// The last few entries of `conversation`'s transcript, one per line.
    async fn recent_transcript(&self, conversation: &str) -> String {
        let Ok(last) = self.store().transcript_last_seq(conversation).await else {
            return String::new();
        };
        let from = last.saturating_sub(RECENT - 1).max(1);
        let events = self
            .store()
            .transcript_from(conversation, from, RECENT as u32)
            .await
            .unwrap_or_default();
        events
            .iter()
            .map(|e| format!("{}: {}", e.speaker, e.text.chars().take(300).collect::<String>()))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `task.decide`: the decider agent's (`caller`, its instance token's
    /// agent) answer to the dialog its task holds.
    pub async fn task_decide(&self, p: api::TaskDecide, caller: Option<&str>) -> NodeResult<Value> {
        if !matches!(p.decision.as_str(), "approve" | "deny") {
            return Err(NodeError::Invalid(format!(
                "decision: {:?} is neither \"approve\" nor \"deny\"",
                p.decision
            )));
        }
        let reason = p.reason.trim();
        if reason.is_empty() {
            return Err(NodeError::Invalid("reason: say why (it is audited)".into()));
        }
        if reason.len() > MAX_REASON {
            return Err(NodeError::Invalid(format!(
                "reason: {} bytes, over the limit of {MAX_REASON}",
                reason.len()
            )));
        }
        let (dialog, base, agent) = {
            let cat = self.catalog.lock().await;
            let may = "decider's own conversation answers its dialogs";
            let decider: fn(&Task) -> Option<&str> = |t| t.decider.as_ref().map(|d| d.agent.as_str());
            let task = super::task_of_helper(&cat, &p.task, caller, decider, may)?;
            let dialog = task
                .holds
                .dialog
                .as_ref()
                .filter(|h| h.asked_decider)
                .map(|h| h.dialog.clone())
                .ok_or_else(|| NodeError::Conflict(format!("task {}: no dialog waits for its decider", task.id)))?;
            let base = cat
                .agents
                .get(&task.agent)
                .and_then(|a| a.record.workspace.as_ref())
                .map(|w| w.base.clone())
                .unwrap_or_default();
            (dialog, base, caller.unwrap_or_default().to_string())
        };
        let held = self
            .supervisor
            .held(&dialog)
            .ok_or_else(|| NodeError::Conflict(format!("task {}: dialog {dialog} is no longer held", p.task)))?;
        if p.decision == "approve"
            && let Err(why) = tasks::decider_may_approve(&facts(&held, &base))
        {
            self.supervisor.refuse_decider(&held, &agent, &why).await;
            return Err(NodeError::Forbidden(format!(
                "task {}: the decider may not approve this dialog ({why}); it was not answered and waits for a human",
                p.task
            )));
        }
        let by = AnsweredBy::Decider { agent: &agent, reason };
        let answer = self.supervisor.answer_hold(&dialog, &p.decision, false, by).await?;
        self.input(&p.task, Input::DialogAnswered { dialog }).await;
        Ok(json!({ "answer": answer }))
    }
}

/// What the dialog asks, for the decider to read: its command, its content
/// or, failing both, the dialog as the screen shows it.
fn dialog_text(held: &Held) -> String {
    let what = match (&held.dialog.command, held.dialog.content.is_empty()) {
        (Some(cmd), _) => format!("run the command: {cmd}"),
        (None, false) => format!("write:\n{}", held.dialog.content),
        (None, true) => held.screen.lines.join("\n"),
    };
    format!(
        "{} ({}, held because: {})\n{what}",
        held.summary,
        held.class,
        held.source.as_str()
    )
}

/// The held dialog as the decider's bounds read it.
fn facts<'a>(held: &'a Held, base: &'a str) -> HeldFacts<'a> {
    use supervision::Meaning;
    HeldFacts {
        source: held.source.as_str(),
        class: held.class.as_str(),
        standing_only: held.dialog.answer(Meaning::ApproveOnce).is_err(),
        command: held.dialog.command.as_deref(),
        paths: &held.dialog.paths,
        base_branch: base,
    }
}
