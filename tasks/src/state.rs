//! The task as a fold of its events: where it is in its loop, what holds it, and its evidence.

use serde::{Deserialize, Serialize};

use crate::spec::{DeciderSpec, ReviewSpec};

/// Longest output tail kept per check, in bytes (the end of the output is kept).
pub const MAX_OUTPUT_TAIL_BYTES: usize = 4 * 1024;
/// Longest review notes kept, in bytes.
pub const MAX_NOTES_BYTES: usize = 8 * 1024;
/// Longest reason or question kept, in bytes.
pub const MAX_REASON_BYTES: usize = 2 * 1024;
/// Most timeline entries kept in [`Task::phases`]; older ones are dropped and counted.
pub const MAX_PHASES: usize = 256;
/// How often a node restart may re-run one task's verification before it is parked.
pub const MAX_RESTART_RERUNS: u32 = 3;
/// How often a timed-out task may be recovered.
pub const MAX_RECOVERIES: u32 = 10;

/// The `state` of `task.get`. Completed, parked, failed and stopped are terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Created; the goal has not yet reached the worker.
    Starting,
    /// The worker has a turn (or is idle under a human takeover).
    Running,
    /// The worker waits on its budget or on a held dialog; the deadline still runs.
    Waiting,
    /// The node runs the acceptance commands, the review, or the local commit.
    Verifying,
    /// Verified and committed on the task branch; nothing pushed.
    Completed,
    /// Could not be verified within its repairs or deadline; branch and evidence kept.
    Parked,
    /// Could not start, or was discarded after its deadline.
    Failed,
    /// Stopped by `task.stop`.
    Stopped,
    /// A breaker trip, a paused conversation, or a deadline that ran out (recover or discard).
    Paused,
}

impl TaskState {
    /// Every state, in the order a task may pass through them.
    pub const ALL: [TaskState; 9] = [
        TaskState::Starting,
        TaskState::Running,
        TaskState::Waiting,
        TaskState::Verifying,
        TaskState::Completed,
        TaskState::Parked,
        TaskState::Failed,
        TaskState::Stopped,
        TaskState::Paused,
    ];

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Parked | TaskState::Failed | TaskState::Stopped
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Starting => "starting",
            TaskState::Running => "running",
            TaskState::Waiting => "waiting",
            TaskState::Verifying => "verifying",
            TaskState::Completed => "completed",
            TaskState::Parked => "parked",
            TaskState::Failed => "failed",
            TaskState::Stopped => "stopped",
            TaskState::Paused => "paused",
        }
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a task ended; the terminal subset of [`TaskState`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Completed,
    Parked,
    Failed,
    Stopped,
}

impl Ending {
    pub fn state(self) -> TaskState {
        match self {
            Ending::Completed => TaskState::Completed,
            Ending::Parked => TaskState::Parked,
            Ending::Failed => TaskState::Failed,
            Ending::Stopped => TaskState::Stopped,
        }
    }
}

/// Where the task is in its loop, before holds are considered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Starting,
    Working,
    Verifying(VerifyStage),
    Ended(Ending),
}

/// The three steps of one verification round, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyStage {
    Checks,
    Review,
    Commit,
}

/// A dialog the policy held during a task's turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldDialog {
    pub dialog: String,
    pub question: String,
    /// Whether it went to the decider (so its silence parks the task).
    pub asked_decider: bool,
}

/// What keeps the worker from going on; each is set and cleared by its own input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holds {
    /// The agent's budget is exhausted ("wait, then ask").
    pub budget: bool,
    pub dialog: Option<HeldDialog>,
    /// A monitor's breaker tripped.
    pub breaker: bool,
    /// Someone paused the worker's conversation.
    pub conversation_paused: bool,
    /// The deadline and its close-out window elapsed: only recover or discard go on.
    pub timed_out: bool,
}

impl Holds {
    pub fn paused(&self) -> bool {
        self.breaker || self.conversation_paused || self.timed_out
    }
}

/// Who took over from the automation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TakeoverSource {
    /// Keys typed into the terminal.
    Keys,
    /// A message a human sent to the conversation.
    Message,
}

/// A human took over: automatic messages to the worker stop until `task.resume_auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Takeover {
    pub source: TakeoverSource,
    pub at: u64,
}

/// One acceptance command's result, as recorded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub command: String,
    /// `None`: killed (time limit, stop) before it exited.
    pub exit_code: Option<i32>,
    pub output_tail: String,
    pub ms: u64,
    pub at: u64,
}

impl CheckRecord {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Reject,
}

/// The last review's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRecord {
    pub agent: String,
    pub verdict: Verdict,
    pub notes: String,
    pub at: u64,
}

/// The wall-clock budget, in ms since the epoch: warn, reach, then close out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadline {
    pub warning_at: u64,
    pub at: u64,
    /// End of the close-out window: a turn in flight finishes and is verified until then.
    pub close_out_until: u64,
}

impl Deadline {
    /// The deadline `secs` after `from_ms`: the warning 10% before it (10 s to 5 min), the
    /// close-out window 10% after it (2 to 15 min), so a repair round still fits.
    pub fn after(from_ms: u64, secs: u64) -> Deadline {
        let total = secs.saturating_mul(1000);
        let at = from_ms.saturating_add(total);
        let warning = (total / 10).clamp(10_000, 300_000).min(total);
        let grace = (total / 10).clamp(120_000, 900_000);
        Deadline {
            warning_at: at - warning,
            at,
            close_out_until: at.saturating_add(grace),
        }
    }
}

/// The three deadline phases, each recorded once per deadline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fired {
    pub warning: bool,
    pub reached: bool,
    pub exceeded: bool,
}

/// A timeline entry of `task.get`'s `phases`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PhaseName {
    Started,
    Running,
    Verifying,
    ChecksPassed,
    ChecksFailed,
    Reviewing,
    ReviewApproved,
    ReviewRejected,
    Committing,
    Repair,
    RepairHeld,
    Waiting,
    Paused,
    Continued,
    HumanTakeover,
    ResumedAuto,
    DeadlineWarning,
    DeadlineReached,
    DeadlineExceeded,
    Recovered,
    Restarted,
    Completed,
    Parked,
    Failed,
    Stopped,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PhaseRecord {
    pub phase: PhaseName,
    pub at: u64,
}

/// A task: built by [`crate::fold::apply`] from its events, never changed any other way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    pub agent: String,
    pub conversation: String,
    pub goal: String,
    pub acceptance: Vec<String>,
    pub review: Option<ReviewSpec>,
    pub decider: Option<DeciderSpec>,
    pub max_repairs: u32,
    pub branch: String,
    pub baseline: String,
    /// The last head the node reported (checks or the commit); `None` until then.
    pub head: Option<String>,
    pub stage: Stage,
    pub holds: Holds,
    pub takeover: Option<Takeover>,
    /// The worker has a turn the node is waiting on.
    pub turn_in_flight: bool,
    /// A turn ended (or the worker exited) and the result is not yet verified.
    pub verify_pending: bool,
    /// A repair message a human takeover kept from being sent.
    pub held_repair: Option<String>,
    /// Verification rounds started; results name the round they belong to.
    pub round: u32,
    pub repairs: u32,
    pub restart_reruns: u32,
    pub recoveries: u32,
    /// The last round's checks (earlier rounds are in the event log).
    pub checks: Vec<CheckRecord>,
    pub last_review: Option<ReviewRecord>,
    pub deadline: Option<Deadline>,
    pub fired: Fired,
    pub phases: Vec<PhaseRecord>,
    pub phases_dropped: u64,
    /// Why the task ended, or why it is paused by its deadline.
    pub reason: Option<String>,
    pub created_at: u64,
    pub ended_at: Option<u64>,
}

impl Task {
    /// The `state` of `task.get`: an ending wins, then verification (which holds do not
    /// stop), then a pause, then a start, then a wait.
    pub fn state(&self) -> TaskState {
        match self.stage {
            Stage::Ended(e) => e.state(),
            Stage::Verifying(_) => TaskState::Verifying,
            _ if self.holds.paused() => TaskState::Paused,
            Stage::Starting => TaskState::Starting,
            Stage::Working if self.holds.budget || self.holds.dialog.is_some() => TaskState::Waiting,
            Stage::Working => TaskState::Running,
        }
    }

    pub fn is_terminal(&self) -> bool {
        matches!(self.stage, Stage::Ended(_))
    }

    /// When the node should next feed [`crate::Input::Tick`]: the next deadline phase not
    /// yet recorded, or `None` when none is due (no deadline, ended, or all fired).
    pub fn next_wakeup(&self) -> Option<u64> {
        if self.is_terminal() {
            return None;
        }
        let d = self.deadline?;
        if !self.fired.warning {
            Some(d.warning_at)
        } else if !self.fired.reached {
            Some(d.at)
        } else if !self.fired.exceeded {
            Some(d.close_out_until)
        } else {
            None
        }
    }

    /// Whether the close-out window is open (deadline reached, not yet exceeded).
    pub fn in_close_out(&self) -> bool {
        self.fired.reached && !self.fired.exceeded
    }
}

/// Cuts `s` to at most `max` bytes, keeping the start, on a char boundary.
pub(crate) fn bound_head(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// Cuts `s` to at most `max` bytes, keeping the end, on a char boundary.
pub(crate) fn bound_tail(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut start = s.len() - max;
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].to_string()
}
