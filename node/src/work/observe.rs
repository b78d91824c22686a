//! What a task hears about its worker's conversation besides its turns: a
//! planned pause (a human's `conversation.pause`, a monitor's breaker trip)
//! pauses the task and a continue lets it go on (a CLI that left, or a
//! restart, is no pause: the task continues its worker when it next tells
//! it something); a budget that
//! holds the conversation (waiting or exhausted) makes the task wait; a
//! dialog the supervisor holds on it makes the task wait (and goes to its
//! decider), and its answer lets it go on. One watch per open task, reading
//! the catalog, the live conversation and the supervisor's holds twice a
//! second, reporting each change once through the task's queue.

use std::sync::Weak;
use std::time::Duration;

use ::spend::budget::Phase;
use node_store::catalog::{Catalog, PLANNED_PAUSE};
use tasks::Input;

use super::Tasks;

/// How often a task's worker is looked at.
const EVERY: Duration = Duration::from_millis(500);

impl Tasks {
    /// Starts the watch of task `id` on its worker's `conversation`.
    pub(super) fn observe(&self, id: &str, conversation: &str) {
        tokio::spawn(observe(self.me.clone(), id.to_string(), conversation.to_string()));
    }
}

async fn observe(me: Weak<Tasks>, id: String, conversation: String) {
    // What it was when the watch began is no news (after a restart the
    // worker's CLI is gone and its conversation paused: the task resumes it
    // when it next has something to tell it).
    let mut paused: Option<bool> = None;
    let mut waiting = false;
    // The hold last reported as held (each is reported once).
    let mut reported: Option<String> = None;
    loop {
        tokio::time::sleep(EVERY).await;
        let Some(t) = me.upgrade() else { return };
        let (now_paused, task_holds) = {
            let cat = t.catalog.lock().await;
            let Some(task) = cat.tasks.by_id.get(&id).filter(|task| !task.is_terminal()) else {
                return;
            };
            let holds = task.holds.dialog.as_ref().map(|d| d.dialog.clone());
            (planned_pause(&cat, &conversation), holds)
        };
        // The task's held dialog was answered (or went away with its screen).
        if let Some(dialog) = &task_holds
            && !t.supervisor.is_held(dialog)
        {
            t.input(&id, Input::DialogAnswered { dialog: dialog.clone() }).await;
        } else if task_holds.is_none()
            && let Some(held) = t.supervisor.hold_of(&conversation)
            && reported.as_ref() != Some(&held.id)
        {
            reported = Some(held.id.clone());
            let question = held.summary.clone();
            t.input(
                &id,
                Input::DialogHeld {
                    dialog: held.id,
                    question,
                },
            )
            .await;
        }
        if paused.is_some_and(|was| was != now_paused) {
            let input = if now_paused {
                Input::ConversationPaused
            } else {
                Input::Continued
            };
            t.input(&id, input).await;
        }
        paused = Some(now_paused);
        let now_waiting = t.live(&conversation).is_some_and(|l| l.budget_phase() != Phase::Ok);
        if now_waiting != waiting {
            waiting = now_waiting;
            let input = if waiting {
                Input::BudgetWaiting
            } else {
                Input::BudgetResumed
            };
            t.input(&id, input).await;
        }
    }
}

/// Whether `conversation` was paused on purpose (not by its CLI leaving or a
/// restart), or archived.
pub(super) fn planned_pause(cat: &Catalog, conversation: &str) -> bool {
    cat.conversations.get(conversation).is_some_and(|c| {
        c.state == console_api::ConversationState::Archived
            || (c.state == console_api::ConversationState::Paused && c.pause_reason.as_deref() == Some(PLANNED_PAUSE))
    })
}
