//! The task's events (what the node stores in its log) and the fold that rebuilds a [`Task`].
//!
//! Every change to a task is one of these events; [`crate::decide()`] only ever changes a
//! task by applying them, so replaying the log gives back exactly the live task.

use serde::{Deserialize, Serialize};

use crate::spec::{DeciderSpec, ReviewSpec};
use crate::state::{
    CheckRecord, Deadline, Ending, Fired, HeldDialog, Holds, MAX_PHASES, PhaseName, PhaseRecord, ReviewRecord, Stage,
    Takeover, TakeoverSource, Task, Verdict, VerifyStage,
};

/// The first event of every task: what `task.start` fixed for its whole life.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Created {
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
    pub deadline: Option<Deadline>,
}

/// Why a verification round started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VerifyWhy {
    /// The worker's turn ended (or it exited).
    TurnEnded,
    /// The worker had a turn while the last round ran, so that round saw a moving tree.
    TurnDuringVerification,
    /// The node restarted while verifying: the checks run again.
    Restart,
    /// The close-out window opened on an idle worker.
    CloseOut,
    /// A turn that ended under a pause, a takeover or a held dialog, verified now.
    Deferred,
}

/// What a task waits on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case")]
pub enum WaitOn {
    Budget,
    Dialog(HeldDialog),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitKind {
    Budget,
    Dialog,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseCause {
    Breaker,
    Conversation,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeadlinePhase {
    Warning,
    Reached,
    Exceeded,
}

/// One recorded change to a task. Stored by the node, folded by [`apply`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TaskEvent {
    Created(Box<Created>),
    /// The goal reached the worker: its first turn is in flight.
    Launched,
    TurnEnded,
    WorkerExited {
        reason: String,
    },
    VerificationStarted {
        round: u32,
        why: VerifyWhy,
    },
    /// A pause stopped the round; it runs again when the task goes on.
    VerificationCancelled {
        round: u32,
    },
    ChecksFinished {
        round: u32,
        checks: Vec<CheckRecord>,
        head: Option<String>,
    },
    ReviewStarted {
        round: u32,
    },
    ReviewVerdict {
        round: u32,
        verdict: Verdict,
        notes: String,
    },
    CommitStarted {
        round: u32,
    },
    RepairSent {
        repairs: u32,
        text: String,
    },
    /// A repair round a human takeover keeps from the worker until `resume_auto`.
    RepairHeld {
        repairs: u32,
        text: String,
    },
    HeldRepairSent,
    /// The node sent the idle worker a message that starts a turn (after a recover).
    Nudged,
    /// Recorded once: the local commit boundary was reached at `head`.
    Completed {
        head: String,
    },
    /// Parked, failed or stopped (never completed: see [`TaskEvent::Completed`]).
    Ended {
        ending: Ending,
        reason: String,
    },
    WaitStarted(WaitOn),
    WaitEnded {
        on: WaitKind,
    },
    Paused {
        by: PauseCause,
    },
    Continued,
    HumanTakeover {
        source: TakeoverSource,
    },
    ResumedAuto,
    Deadline {
        phase: DeadlinePhase,
    },
    Recovered {
        deadline: Deadline,
    },
    Restarted,
}

impl TaskEvent {
    /// The snake_case name the event is stored under.
    pub fn kind(&self) -> &'static str {
        match self {
            TaskEvent::Created(_) => "created",
            TaskEvent::Launched => "launched",
            TaskEvent::TurnEnded => "turn_ended",
            TaskEvent::WorkerExited { .. } => "worker_exited",
            TaskEvent::VerificationStarted { .. } => "verification_started",
            TaskEvent::VerificationCancelled { .. } => "verification_cancelled",
            TaskEvent::ChecksFinished { .. } => "checks_finished",
            TaskEvent::ReviewStarted { .. } => "review_started",
            TaskEvent::ReviewVerdict { .. } => "review_verdict",
            TaskEvent::CommitStarted { .. } => "commit_started",
            TaskEvent::RepairSent { .. } => "repair_sent",
            TaskEvent::RepairHeld { .. } => "repair_held",
            TaskEvent::HeldRepairSent => "held_repair_sent",
            TaskEvent::Nudged => "nudged",
            TaskEvent::Completed { .. } => "completed",
            TaskEvent::Ended { .. } => "ended",
            TaskEvent::WaitStarted(_) => "wait_started",
            TaskEvent::WaitEnded { .. } => "wait_ended",
            TaskEvent::Paused { .. } => "paused",
            TaskEvent::Continued => "continued",
            TaskEvent::HumanTakeover { .. } => "human_takeover",
            TaskEvent::ResumedAuto => "resumed_auto",
            TaskEvent::Deadline { .. } => "deadline",
            TaskEvent::Recovered { .. } => "recovered",
            TaskEvent::Restarted => "restarted",
        }
    }
}

/// A log that does not fold: it does not start with `created`, or goes on after the end.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("a task's log must start with a created event, not {0}")]
    NotCreatedFirst(&'static str),
    #[error("a second created event for task {0}")]
    CreatedTwice(String),
    #[error("event {event} after task {task} ended")]
    AfterEnd { task: String, event: &'static str },
    #[error("empty event log")]
    Empty,
}

/// The task a `created` event starts, at `ts` (ms).
pub fn task_from_created(c: &Created, ts: u64) -> Task {
    Task {
        id: c.id.clone(),
        agent: c.agent.clone(),
        conversation: c.conversation.clone(),
        goal: c.goal.clone(),
        acceptance: c.acceptance.clone(),
        review: c.review.clone(),
        decider: c.decider.clone(),
        max_repairs: c.max_repairs,
        branch: c.branch.clone(),
        baseline: c.baseline.clone(),
        head: None,
        stage: Stage::Starting,
        holds: Holds::default(),
        takeover: None,
        turn_in_flight: false,
        verify_pending: false,
        held_repair: None,
        round: 0,
        repairs: 0,
        restart_reruns: 0,
        recoveries: 0,
        checks: Vec::new(),
        last_review: None,
        deadline: c.deadline,
        fired: Fired::default(),
        phases: vec![PhaseRecord {
            phase: PhaseName::Started,
            at: ts,
        }],
        phases_dropped: 0,
        reason: None,
        created_at: ts,
        ended_at: None,
    }
}

/// Rebuilds a task from its log of `(event, ts)`.
pub fn replay<'a>(events: impl IntoIterator<Item = (&'a TaskEvent, u64)>) -> Result<Task, FoldError> {
    let mut it = events.into_iter();
    let mut task = match it.next() {
        Some((TaskEvent::Created(c), ts)) => task_from_created(c, ts),
        Some((other, _)) => return Err(FoldError::NotCreatedFirst(other.kind())),
        None => return Err(FoldError::Empty),
    };
    for (event, ts) in it {
        apply(&mut task, event, ts)?;
    }
    Ok(task)
}

fn phase(task: &mut Task, phase: PhaseName, at: u64) {
    if task.phases.len() >= MAX_PHASES {
        task.phases.remove(0);
        task.phases_dropped += 1;
    }
    task.phases.push(PhaseRecord { phase, at });
}

/// Folds one event into the task at `ts` (ms). Mechanical: [`crate::decide()`] has already
/// judged the event valid; this refuses only what no log may hold.
pub fn apply(task: &mut Task, event: &TaskEvent, ts: u64) -> Result<(), FoldError> {
    if let TaskEvent::Created(_) = event {
        return Err(FoldError::CreatedTwice(task.id.clone()));
    }
    if task.is_terminal() {
        return Err(FoldError::AfterEnd {
            task: task.id.clone(),
            event: event.kind(),
        });
    }
    match event {
        TaskEvent::Created(_) => {}
        TaskEvent::Launched => {
            task.stage = Stage::Working;
            task.turn_in_flight = true;
            phase(task, PhaseName::Running, ts);
        }
        TaskEvent::TurnEnded | TaskEvent::WorkerExited { .. } => {
            task.turn_in_flight = false;
            task.verify_pending = true;
        }
        TaskEvent::VerificationStarted { round, .. } => {
            task.round = *round;
            task.verify_pending = false;
            task.held_repair = None;
            phase(task, PhaseName::Verifying, ts);
            if task.acceptance.is_empty() {
                task.stage = Stage::Verifying(VerifyStage::Review);
                phase(task, PhaseName::Reviewing, ts);
            } else {
                task.stage = Stage::Verifying(VerifyStage::Checks);
            }
        }
        TaskEvent::VerificationCancelled { .. } => {
            task.stage = Stage::Working;
            task.verify_pending = true;
        }
        TaskEvent::ChecksFinished { checks, head, .. } => {
            let passed = checks.len() == task.acceptance.len() && checks.iter().all(CheckRecord::passed);
            task.checks = checks.clone();
            if head.is_some() {
                task.head = head.clone();
            }
            phase(
                task,
                if passed {
                    PhaseName::ChecksPassed
                } else {
                    PhaseName::ChecksFailed
                },
                ts,
            );
        }
        TaskEvent::ReviewStarted { .. } => {
            task.stage = Stage::Verifying(VerifyStage::Review);
            phase(task, PhaseName::Reviewing, ts);
        }
        TaskEvent::ReviewVerdict { verdict, notes, .. } => {
            let agent = task.review.as_ref().map(|r| r.agent.clone()).unwrap_or_default();
            task.last_review = Some(ReviewRecord {
                agent,
                verdict: *verdict,
                notes: notes.clone(),
                at: ts,
            });
            let name = match verdict {
                Verdict::Approve => PhaseName::ReviewApproved,
                Verdict::Reject => PhaseName::ReviewRejected,
            };
            phase(task, name, ts);
        }
        TaskEvent::CommitStarted { .. } => {
            task.stage = Stage::Verifying(VerifyStage::Commit);
            phase(task, PhaseName::Committing, ts);
        }
        TaskEvent::RepairSent { repairs, .. } => {
            task.repairs = *repairs;
            task.stage = Stage::Working;
            task.turn_in_flight = true;
            phase(task, PhaseName::Repair, ts);
        }
        TaskEvent::RepairHeld { repairs, text } => {
            task.repairs = *repairs;
            task.stage = Stage::Working;
            task.turn_in_flight = false;
            task.held_repair = Some(text.clone());
            phase(task, PhaseName::RepairHeld, ts);
        }
        TaskEvent::HeldRepairSent => {
            task.held_repair = None;
            task.turn_in_flight = true;
            phase(task, PhaseName::Repair, ts);
        }
        TaskEvent::Nudged => task.turn_in_flight = true,
        TaskEvent::Completed { head } => {
            task.head = Some(head.clone());
            end(task, Ending::Completed, None, ts);
        }
        TaskEvent::Ended { ending, reason } => end(task, *ending, Some(reason.clone()), ts),
        TaskEvent::WaitStarted(on) => {
            match on {
                WaitOn::Budget => task.holds.budget = true,
                WaitOn::Dialog(d) => task.holds.dialog = Some(d.clone()),
            }
            phase(task, PhaseName::Waiting, ts);
        }
        TaskEvent::WaitEnded { on } => {
            match on {
                WaitKind::Budget => task.holds.budget = false,
                WaitKind::Dialog => task.holds.dialog = None,
            }
            phase(task, PhaseName::Continued, ts);
        }
        TaskEvent::Paused { by } => {
            match by {
                PauseCause::Breaker => task.holds.breaker = true,
                PauseCause::Conversation => task.holds.conversation_paused = true,
            }
            phase(task, PhaseName::Paused, ts);
        }
        TaskEvent::Continued => {
            task.holds.breaker = false;
            task.holds.conversation_paused = false;
            phase(task, PhaseName::Continued, ts);
        }
        TaskEvent::HumanTakeover { source } => {
            task.takeover = Some(Takeover {
                source: *source,
                at: ts,
            });
            phase(task, PhaseName::HumanTakeover, ts);
        }
        TaskEvent::ResumedAuto => {
            task.takeover = None;
            phase(task, PhaseName::ResumedAuto, ts);
        }
        TaskEvent::Deadline { phase: p } => {
            let name = match p {
                DeadlinePhase::Warning => {
                    task.fired.warning = true;
                    PhaseName::DeadlineWarning
                }
                DeadlinePhase::Reached => {
                    task.fired.reached = true;
                    PhaseName::DeadlineReached
                }
                DeadlinePhase::Exceeded => {
                    task.fired.exceeded = true;
                    task.holds.timed_out = true;
                    task.reason = Some("deadline exceeded".to_string());
                    if !matches!(task.stage, Stage::Verifying(_)) {
                        // The node interrupts the turn: nothing is in flight any more.
                        task.turn_in_flight = false;
                    }
                    PhaseName::DeadlineExceeded
                }
            };
            phase(task, name, ts);
        }
        TaskEvent::Recovered { deadline } => {
            task.deadline = Some(*deadline);
            task.fired = Fired::default();
            task.holds.timed_out = false;
            task.recoveries += 1;
            task.reason = None;
            phase(task, PhaseName::Recovered, ts);
        }
        TaskEvent::Restarted => {
            if matches!(task.stage, Stage::Verifying(_)) {
                task.restart_reruns += 1;
            }
            phase(task, PhaseName::Restarted, ts);
        }
    }
    Ok(())
}

fn end(task: &mut Task, ending: Ending, reason: Option<String>, ts: u64) {
    task.stage = Stage::Ended(ending);
    task.reason = reason;
    task.turn_in_flight = false;
    task.ended_at = Some(ts);
    let name = match ending {
        Ending::Completed => PhaseName::Completed,
        Ending::Parked => PhaseName::Parked,
        Ending::Failed => PhaseName::Failed,
        Ending::Stopped => PhaseName::Stopped,
    };
    phase(task, name, ts);
}
