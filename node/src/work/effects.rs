//! Carrying out a task decision's effects, in order. What takes time (a
//! turn, a verification round, a commit) runs beside the task's queue and
//! reports back through it as an input; the rest is done in place.

use std::path::PathBuf;
use std::time::Duration;

use console_api as api;
use serde_json::json;
use tasks::{Effect, Input, Task};

use super::Tasks;
use super::checks::{self, CHECK_TIMEOUT, Place};
use crate::live::{TurnEnd, turn_end};
use crate::workspace::{git, repo};

/// A worker's turn is watched this long before it counts as over anyway
/// (deadlines bound a task's time; this only bounds a watch).
const TURN_BOUND: Duration = Duration::from_secs(24 * 3600);
/// A turn whose busy spell was not seen is over once idle this long.
const TURN_SETTLE: Duration = Duration::from_millis(800);
/// Who the node's messages to the worker are from.
const SPEAKER: &str = "system";

impl Tasks {
    pub(super) async fn carry_out(&self, task: &Task, effects: Vec<Effect>) {
        for effect in effects {
            let name = effect.name();
            tracing::debug!(task = %task.id, effect = name, "task effect");
            match effect {
                Effect::Launch { text } => self.send_turn(task, text, true),
                Effect::SendRepair { text } | Effect::SendNotice { text } => self.send_turn(task, text, false),
                Effect::RunChecks { round, commands } => self.run_checks(task, round, commands).await,
                Effect::CancelVerification { round } => self.cancel_round(&task.id, round),
                Effect::CommitAndRecord { round, message } => self.commit_task(task, round, message).await,
                Effect::StopWorker => {
                    if let Err(e) = self.conversations.conversation_pause(&task.conversation).await {
                        tracing::warn!(task = %task.id, error = %e, "the worker's conversation would not pause");
                    }
                }
                Effect::InterruptWorker => {
                    let keys = api::SendKeys {
                        conversation: task.conversation.clone(),
                        keys: "\u{1b}".into(),
                    };
                    if let Err(e) = self.send_keys(keys).await {
                        tracing::warn!(task = %task.id, error = %e, "the worker's turn could not be interrupted");
                    }
                }
                Effect::RaiseNeedsYou { reason } => {
                    tracing::warn!(task = %task.id, %reason, "a task needs a human");
                    self.publish(
                        api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                        json!({
                            "agent": task.agent,
                            "conversation": task.conversation,
                            "task": task.id,
                            "reason": reason,
                        }),
                    );
                }
                Effect::WatchWorker => {
                    if self.live(&task.conversation).is_none() {
                        self.report(
                            &task.id,
                            Input::WorkerExited {
                                reason: "the worker's conversation is not running after the node restarted".into(),
                            },
                        );
                    }
                }
                Effect::StartReview { round, reviewer } => self.start_review(task, round, reviewer),
                Effect::AskDecider { dialog, decider } => self.ask_decider(task, dialog, decider),
            }
        }
    }

    /// Reports an observation through the task's queue, from beside it.
    fn report(&self, id: &str, input: Input) {
        let me = self.me.clone();
        let id = id.to_string();
        tokio::spawn(async move {
            if let Some(t) = me.upgrade() {
                t.input(&id, input).await;
            }
        });
    }

    /// Sends the worker a message that starts a turn, then watches that turn
    /// to its end. `launch`: the goal (reports `Launched` once taken).
    fn send_turn(&self, task: &Task, text: String, launch: bool) {
        let me = self.me.clone();
        let id = task.id.clone();
        let conversation = task.conversation.clone();
        // The goal that never reached the worker failed its launch; any other
        // message, the worker.
        let undelivered = move |reason: String| match launch {
            true => Input::LaunchFailed { reason },
            false => Input::WorkerExited { reason },
        };
        tokio::spawn(async move {
            let Some(t) = me.upgrade() else { return };
            t.wake_worker(&conversation).await;
            let live = match t.require_live(&conversation).await {
                Ok(l) => l,
                Err(e) => {
                    let reason = format!("the worker's conversation is not running: {e}");
                    t.input(&id, undelivered(reason)).await;
                    return;
                }
            };
            let status = match live.send_turn(text, SPEAKER.into()).await {
                Ok(s) => s,
                Err(e) => {
                    let reason = format!("the message did not reach the worker: {e}");
                    t.input(&id, undelivered(reason)).await;
                    return;
                }
            };
            if launch {
                t.input(&id, Input::Launched).await;
            }
            drop(live);
            drop(t);
            let ended = turn_end(status, TURN_BOUND, TURN_SETTLE).await;
            let Some(t) = me.upgrade() else { return };
            let input = match ended {
                TurnEnd::Ended | TurnEnd::Bound => Input::TurnEnded,
                TurnEnd::Gone => {
                    // Paused on purpose (a human, a breaker): the task pauses
                    // first, so what the cut turn left is verified on continue.
                    if super::observe::planned_pause(&*t.catalog.lock().await, &conversation) {
                        t.input(&id, Input::ConversationPaused).await;
                    }
                    Input::WorkerExited {
                        reason: "the worker's CLI went away during its turn".into(),
                    }
                }
            };
            t.input(&id, input).await;
        });
    }

    /// A worker whose CLI is not running (the node restarted, or it left
    /// between turns) is continued before the task tells it something: the
    /// task only does while nothing (a human's pause, a breaker) holds it.
    async fn wake_worker(&self, conversation: &str) {
        if self.live(conversation).is_some() || super::observe::planned_pause(&*self.catalog.lock().await, conversation)
        {
            return;
        }
        let p = api::ConversationContinue {
            conversation: conversation.to_string(),
            fresh: false,
        };
        if let Err(e) = self.conversations.conversation_continue(p).await {
            tracing::warn!(%conversation, error = %e, "the worker's conversation could not be continued");
        }
    }

    /// Where the task's commands and git run: its worktree, as its owner.
    async fn place_of(&self, task: &Task) -> Result<Place, String> {
        let dir = {
            let cat = self.catalog.lock().await;
            cat.conversations
                .get(&task.conversation)
                .and_then(|c| c.workspace.as_ref())
                .map(|w| PathBuf::from(&w.path))
        }
        .ok_or_else(|| format!("conversation {} has no worktree", task.conversation))?;
        let owner = git::owner_of(&dir).map_err(|e| format!("the worktree {}: {e}", dir.display()))?;
        Ok(Place {
            conversation: task.conversation.clone(),
            dir,
            owner,
            timeout: CHECK_TIMEOUT,
        })
    }

    /// A verification round's acceptance commands, beside the queue.
    async fn run_checks(&self, task: &Task, round: u32, commands: Vec<String>) {
        // In a guest, the checks need the worker's own (after a restart the
        // last run's container is an orphan about to be removed).
        if self.runtime.exec_in_guest() {
            self.wake_worker(&task.conversation).await;
        }
        let place = self.place_of(task).await;
        let me = self.me.clone();
        let id = task.id.clone();
        let runtime = self.runtime.clone();
        let handle = tokio::spawn(async move {
            let (results, head) = match place {
                Ok(place) => {
                    let results = checks::run_round(&*runtime, &place, &commands).await;
                    let head = repo::head(&place.dir, place.owner).await.ok();
                    (results, head)
                }
                Err(reason) => (
                    vec![tasks::CheckOutcome {
                        command: commands.first().cloned().unwrap_or_default(),
                        exit_code: None,
                        output_tail: format!("[warren: {reason}]"),
                        ms: 0,
                    }],
                    None,
                ),
            };
            if let Some(t) = me.upgrade() {
                t.input(&id, Input::ChecksFinished { round, results, head }).await;
            }
        });
        if let Ok(mut beside) = self.beside.lock() {
            let b = beside.entry(task.id.clone()).or_default();
            if let Some((_, old)) = b.verification.replace((round, handle)) {
                old.abort();
            }
        }
    }

    fn cancel_round(&self, id: &str, round: u32) {
        if let Ok(mut beside) = self.beside.lock()
            && let Some(b) = beside.get_mut(id)
            && b.verification.as_ref().is_some_and(|(r, _)| *r == round)
            && let Some((_, h)) = b.verification.take()
        {
            h.abort();
        }
    }

    /// The local commit boundary: what is uncommitted goes onto the task
    /// branch as the agent; the head is recorded. Nothing is pushed.
    async fn commit_task(&self, task: &Task, round: u32, message: String) {
        let place = self.place_of(task).await;
        let me = self.me.clone();
        let (id, agent, branch, baseline) = (
            task.id.clone(),
            task.agent.clone(),
            task.branch.clone(),
            task.baseline.clone(),
        );
        tokio::spawn(async move {
            let done = match place {
                Ok(p) => {
                    let email = format!("{agent}@warren.localhost");
                    repo::commit_task(&p.dir, p.owner, &branch, &baseline, &message, (&agent, &email))
                        .await
                        .map_err(|e| e.to_string())
                }
                Err(reason) => Err(reason),
            };
            let input = match done {
                Ok(head) => Input::CommitDone { round, head },
                Err(reason) => Input::CommitFailed { round, reason },
            };
            if let Some(t) = me.upgrade() {
                t.input(&id, input).await;
            }
        });
    }
}
