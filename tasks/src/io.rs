//! What goes into [`crate::decide()`] and comes out of it: the inputs the node observes,
//! the effects it must carry out, and the refusal of an input a task cannot take.

use crate::fold::TaskEvent;
use crate::state::{TakeoverSource, TaskState, Verdict};

/// One acceptance command's result as the node reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckOutcome {
    pub command: String,
    /// `None`: killed before it exited (its time limit, or a stop).
    pub exit_code: Option<i32>,
    /// The end of its output; cut to [`crate::state::MAX_OUTPUT_TAIL_BYTES`] here.
    pub output_tail: String,
    pub ms: u64,
}

/// What the node observed or was asked, in the order it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// The goal reached the worker (after [`Effect::Launch`]).
    Launched,
    LaunchFailed {
        reason: String,
    },
    /// The harness said the worker's turn ended.
    TurnEnded,
    /// The worker's process went away without a turn end.
    WorkerExited {
        reason: String,
    },
    /// All commands of `round`, in order; fewer only when the node stopped at a failure.
    ChecksFinished {
        round: u32,
        results: Vec<CheckOutcome>,
        head: Option<String>,
    },
    ReviewVerdict {
        round: u32,
        verdict: Verdict,
        notes: String,
    },
    /// The reviewer could not give a verdict (its conversation failed or timed out).
    ReviewFailed {
        round: u32,
        reason: String,
    },
    CommitDone {
        round: u32,
        head: String,
    },
    CommitFailed {
        round: u32,
        reason: String,
    },
    HumanTookOver {
        source: TakeoverSource,
    },
    ResumeAuto,
    StopAsked,
    /// Time passed: fires the deadline phases now due (see [`crate::Task::next_wakeup`]).
    Tick,
    /// `task.recover {extend_secs}`; an absent `extend_secs` is 0: close out at once.
    Recover {
        extend_secs: u64,
    },
    Discard,
    BudgetWaiting,
    BudgetResumed,
    /// The policy held a dialog of the worker's.
    DialogHeld {
        dialog: String,
        question: String,
    },
    DialogAnswered {
        dialog: String,
    },
    DeciderTimedOut {
        dialog: String,
    },
    BreakerTripped,
    ConversationPaused,
    /// The breaker was reset or the conversation resumed.
    Continued,
    /// The node started again and found this task not ended in its log.
    NodeRestarted,
}

impl Input {
    pub fn name(&self) -> &'static str {
        match self {
            Input::Launched => "launched",
            Input::LaunchFailed { .. } => "launch_failed",
            Input::TurnEnded => "turn_ended",
            Input::WorkerExited { .. } => "worker_exited",
            Input::ChecksFinished { .. } => "checks_finished",
            Input::ReviewVerdict { .. } => "review_verdict",
            Input::ReviewFailed { .. } => "review_failed",
            Input::CommitDone { .. } => "commit_done",
            Input::CommitFailed { .. } => "commit_failed",
            Input::HumanTookOver { .. } => "human_took_over",
            Input::ResumeAuto => "resume_auto",
            Input::StopAsked => "stop",
            Input::Tick => "tick",
            Input::Recover { .. } => "recover",
            Input::Discard => "discard",
            Input::BudgetWaiting => "budget_waiting",
            Input::BudgetResumed => "budget_resumed",
            Input::DialogHeld { .. } => "dialog_held",
            Input::DialogAnswered { .. } => "dialog_answered",
            Input::DeciderTimedOut { .. } => "decider_timed_out",
            Input::BreakerTripped => "breaker_tripped",
            Input::ConversationPaused => "conversation_paused",
            Input::Continued => "continued",
            Input::NodeRestarted => "node_restarted",
        }
    }
}

/// What the node must do after recording a decision's events (in this order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send the goal as the worker's first message (idempotent per task: a restart may repeat it).
    Launch { text: String },
    /// Run the acceptance commands in the worktree; answer with [`Input::ChecksFinished`].
    RunChecks { round: u32, commands: Vec<String> },
    /// Stop the checks, review or commit of `round`; its results will be refused.
    CancelVerification { round: u32 },
    /// Ask the reviewer (start or continue its conversation); answer with [`Input::ReviewVerdict`].
    StartReview { round: u32, reviewer: String },
    /// Commit what is uncommitted on the task branch with `message`, after checking the
    /// baseline is still an ancestor of HEAD; answer with [`Input::CommitDone`] or
    /// [`Input::CommitFailed`]. Idempotent: nothing to commit records the current head.
    CommitAndRecord { round: u32, message: String },
    /// A repair round: starts with `Acceptance failed:` or `Review rejected:`.
    SendRepair { text: String },
    /// A deadline notice or a nudge to go on; never sent under a human takeover.
    SendNotice { text: String },
    /// Show the held dialog to the decider's conversation.
    AskDecider { dialog: String, decider: String },
    /// The deadline ran out: end the worker's turn, keep the conversation and worktree.
    InterruptWorker,
    /// Parked, failed or stopped: stop the worker's conversation; the branch stays.
    StopWorker,
    /// Raise a needs-you (once per task: only parking raises it).
    RaiseNeedsYou { reason: String },
    /// After a restart: make sure the worker's conversation is observed again, and report
    /// [`Input::WorkerExited`] if it is gone.
    WatchWorker,
}

impl Effect {
    pub fn name(&self) -> &'static str {
        match self {
            Effect::Launch { .. } => "launch",
            Effect::RunChecks { .. } => "run_checks",
            Effect::CancelVerification { .. } => "cancel_verification",
            Effect::StartReview { .. } => "start_review",
            Effect::CommitAndRecord { .. } => "commit_and_record",
            Effect::SendRepair { .. } => "send_repair",
            Effect::SendNotice { .. } => "send_notice",
            Effect::AskDecider { .. } => "ask_decider",
            Effect::InterruptWorker => "interrupt_worker",
            Effect::StopWorker => "stop_worker",
            Effect::RaiseNeedsYou { .. } => "raise_needs_you",
            Effect::WatchWorker => "watch_worker",
        }
    }
}

/// The events to record and the effects to carry out for one input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub events: Vec<TaskEvent>,
    pub effects: Vec<Effect>,
}

impl Decision {
    pub fn is_noop(&self) -> bool {
        self.events.is_empty() && self.effects.is_empty()
    }
}

/// An input the task cannot take in its state; nothing is recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{input} refused while the task is {state}: {reason}")]
pub struct Refused {
    pub state: TaskState,
    pub input: &'static str,
    pub reason: String,
}

/// Where the node put a new task: its id, the conversation on the agent's workspace, and
/// that workspace's branch and baseline commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub id: String,
    pub conversation: String,
    pub branch: String,
    pub baseline: String,
}
