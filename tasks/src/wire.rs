//! The `task.get` object (API.md "Tasks"), built from a [`Task`]. The lead may move this
//! struct into `console-api`; [`TaskObject::from`] is the mapping either way.

use serde::{Deserialize, Serialize};

use crate::state::{CheckRecord, Deadline, PhaseRecord, ReviewRecord, Task, TaskState};

/// `{id, agent, conversation, goal, state, reason?, branch, baseline, head, repairs,
/// max_repairs, checks, review?, deadline?, phases, created_at, ended_at?}`, plus
/// `human_takeover` (automatic messages are stopped until `task.resume_auto`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskObject {
    pub id: String,
    pub agent: String,
    pub conversation: String,
    pub goal: String,
    pub state: TaskState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    pub branch: String,
    pub baseline: String,
    /// The last head the node recorded; the baseline until then.
    pub head: String,
    pub repairs: u32,
    pub max_repairs: u32,
    /// The last verification round's checks.
    pub checks: Vec<CheckRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewRecord>,
    /// ms since the epoch: `{warning_at, at, close_out_until}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline: Option<Deadline>,
    pub phases: Vec<PhaseRecord>,
    pub human_takeover: bool,
    pub created_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
}

impl From<&Task> for TaskObject {
    fn from(t: &Task) -> TaskObject {
        let state = t.state();
        let reason = match state {
            TaskState::Waiting => Some(match &t.holds.dialog {
                Some(d) => format!("a dialog is held: {}", d.question),
                None => "the agent's budget is exhausted".to_string(),
            }),
            TaskState::Paused if t.reason.is_none() => Some(
                if t.holds.breaker {
                    "a monitor's breaker tripped"
                } else {
                    "the conversation is paused"
                }
                .to_string(),
            ),
            _ => t.reason.clone(),
        };
        TaskObject {
            id: t.id.clone(),
            agent: t.agent.clone(),
            conversation: t.conversation.clone(),
            goal: t.goal.clone(),
            state,
            reason,
            branch: t.branch.clone(),
            baseline: t.baseline.clone(),
            head: t.head.clone().unwrap_or_else(|| t.baseline.clone()),
            repairs: t.repairs,
            max_repairs: t.max_repairs,
            checks: t.checks.clone(),
            review: t.last_review.clone(),
            deadline: t.deadline,
            phases: t.phases.clone(),
            human_takeover: t.takeover.is_some(),
            created_at: t.created_at,
            ended_at: t.ended_at,
        }
    }
}
