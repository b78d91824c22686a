//! Independent review: a task's `review: {agent}` is asked, after its checks
//! pass, in a conversation of the reviewer's own (started, or continued for
//! the task's next round; the reviewer's other live conversation is paused
//! first: one live conversation per agent). Its launch mounts
//! `warren-review` and its instance token may observe the worker's
//! conversation (`node_store::folds::tasks::helper_rights_of`), nothing more:
//! it reads the diff with `task.diff` and answers with `task.review`, which
//! only the reviewer agent's own token may call. A turn that ends without a
//! verdict is reminded once; a second one fails the review (the task parks).

use std::time::Duration;

use console_api as api;
use serde_json::Value;
use tasks::messages::{review_reminder_text, review_request_text};
use tasks::state::{Stage, Verdict, VerifyStage};
use tasks::{Input, Task};

use super::Tasks;
use crate::live::turn_end;
use crate::service::{NodeError, NodeResult};

/// Which helper conversation of a task.
#[derive(Debug, Clone, Copy)]
pub(super) enum Helper {
    Reviewer,
    Decider,
}

/// How long a reviewer's turn is watched.
const REVIEW_TURN: Duration = Duration::from_secs(3600);
/// A turn whose busy spell was not seen is over once idle this long.
const SETTLE: Duration = Duration::from_millis(800);

impl Tasks {
    /// `Effect::StartReview`: beside the queue, the reviewer is asked and
    /// watched; its verdict arrives through `task.review`.
    pub(super) fn start_review(&self, task: &Task, round: u32, reviewer: String) {
        let me = self.me.clone();
        let task = task.clone();
        tokio::spawn(async move {
            let Some(t) = me.upgrade() else { return };
            if let Err(e) = t.ask_reviewer(&task, round, &reviewer).await {
                let reason = format!("the reviewer {reviewer:?} could not be asked: {e}");
                t.input(&task.id, Input::ReviewFailed { round, reason }).await;
            }
        });
    }

    async fn ask_reviewer(&self, task: &Task, round: u32, reviewer: &str) -> NodeResult<()> {
        let conversation = self.helper_conversation(task, reviewer, Helper::Reviewer).await?;
        for text in [review_request_text(task, round), review_reminder_text(task)] {
            let live = self.require_live(&conversation).await?;
            let status = live.send_turn(text, "system".into()).await?;
            drop(live);
            turn_end(status, REVIEW_TURN, SETTLE).await;
            if !self.awaits_verdict(&task.id, round).await {
                return Ok(());
            }
        }
        Err(NodeError::Conflict(
            "it ended two turns without a verdict (`warren-review approve|reject`)".into(),
        ))
    }

    /// Whether round `round` of task `id` still waits for its verdict.
    async fn awaits_verdict(&self, id: &str, round: u32) -> bool {
        let cat = self.catalog.lock().await;
        cat.tasks
            .by_id
            .get(id)
            .is_some_and(|t| t.round == round && t.stage == Stage::Verifying(VerifyStage::Review))
    }

    /// A helper's (reviewer's, decider's) conversation for this task: the
    /// one it used last for the task when it is still there (continued if
    /// paused), else a new one; the helper's other live conversation is
    /// paused first.
    pub(super) async fn helper_conversation(&self, task: &Task, agent: &str, helper: Helper) -> NodeResult<String> {
        fn slot(b: &mut super::Beside, helper: Helper) -> &mut Option<String> {
            match helper {
                Helper::Reviewer => &mut b.reviewer,
                Helper::Decider => &mut b.decider,
            }
        }
        let known = self
            .beside
            .lock()
            .ok()
            .and_then(|mut b| b.get_mut(&task.id).and_then(|b| slot(b, helper).clone()));
        let (known_state, live_other) = {
            let cat = self.catalog.lock().await;
            let state = known.as_ref().and_then(|id| cat.conversations.get(id)).map(|c| c.state);
            let live = cat.live_conversation_of(agent).map(|c| c.id.clone());
            (state, live)
        };
        if let Some(other) = live_other
            && Some(&other) != known.as_ref()
        {
            self.conversations.conversation_pause(&other).await?;
        }
        let id = match (known, known_state) {
            (Some(id), Some(api::ConversationState::Active | api::ConversationState::Starting)) => id,
            (Some(id), Some(api::ConversationState::Paused)) => {
                let p = api::ConversationContinue {
                    conversation: id,
                    fresh: false,
                };
                self.conversations.conversation_continue(p).await?.id
            }
            _ => self.conversations.conversation_start(agent).await?.id,
        };
        if let Ok(mut beside) = self.beside.lock() {
            *slot(beside.entry(task.id.clone()).or_default(), helper) = Some(id.clone());
        }
        Ok(id)
    }

    /// `task.review`: the verdict of the reviewer agent (`caller`, its
    /// instance token's agent) on the round under review.
    pub async fn task_review(&self, p: api::TaskReview, caller: Option<&str>) -> NodeResult<Value> {
        let verdict = match p.verdict.as_str() {
            "approve" => Verdict::Approve,
            "reject" => Verdict::Reject,
            other => {
                return Err(NodeError::Invalid(format!(
                    "verdict: {other:?} is neither \"approve\" nor \"reject\""
                )));
            }
        };
        let round = {
            let cat = self.catalog.lock().await;
            let may = "reviewer's own conversation gives a verdict";
            super::task_of_helper(
                &cat,
                &p.task,
                caller,
                |t| t.review.as_ref().map(|r| r.agent.as_str()),
                may,
            )?
            .round
        };
        let notes = p.notes;
        self.task_ask(&p.task, Input::ReviewVerdict { round, verdict, notes })
            .await
    }

    /// `task.diff`: the worker's change against the task's baseline.
    pub async fn task_diff(&self, id: &str) -> NodeResult<api::Diff> {
        let conversation = self
            .task_conversation(id)
            .await
            .ok_or_else(|| NodeError::NotFound(format!("task {id:?} not found")))?;
        self.conversations
            .conversation_diff(api::ConversationDiff {
                conversation,
                max_bytes: None,
            })
            .await
    }
}
