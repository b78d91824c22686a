//! Params of the unattended tasks' methods (`task.*`). Like every params
//! struct, they refuse unknown fields.

use serde::{Deserialize, Serialize};

/// `task.get`, `task.stop`, `task.discard`, `task.resume_auto`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRef {
    pub task: String,
}

/// `task.list`: narrowed by agent and state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskList {
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
}

/// `task.review`: `approve` or `reject`, with notes for the worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskReview {
    pub task: String,
    pub verdict: String,
    #[serde(default)]
    pub notes: String,
}

/// `task.decide`: the decider's `approve` or `deny` of the dialog its task
/// holds, with its reason (audited).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskDecide {
    pub task: String,
    pub decision: String,
    #[serde(default)]
    pub reason: String,
}

/// `task.recover`: `extend_secs` more before the deadline; none: close out at once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecover {
    pub task: String,
    #[serde(default)]
    pub extend_secs: Option<u64>,
}
