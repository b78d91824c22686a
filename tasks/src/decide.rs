//! The transition function: given a task and what the node observed, the events to record
//! and the effects the node must carry out. Invalid inputs are refused, never guessed at.

use crate::fold::{Created, DeadlinePhase, PauseCause, TaskEvent, VerifyWhy, WaitKind, WaitOn, apply};
pub use crate::io::{CheckOutcome, Decision, Effect, Input, Placement, Refused};
use crate::messages::{self, reason};
use crate::spec::{MAX_DEADLINE_SECS, TaskSpec};
use crate::state::{
    CheckRecord, Deadline, Ending, HeldDialog, MAX_NOTES_BYTES, MAX_OUTPUT_TAIL_BYTES, MAX_REASON_BYTES,
    MAX_RECOVERIES, MAX_RESTART_RERUNS, Stage, Task, Verdict, VerifyStage, bound_head, bound_tail,
};

/// A repair round is not started with less than this left of the close-out window (seed
/// 001): the findings stay on the parked candidate instead of being cut short.
pub const MIN_REPAIR_WINDOW_MS: u64 = 60_000;

/// The `created` event and the launch of a task whose spec [`crate::validate`] accepted.
pub fn create(spec: &TaskSpec, placement: Placement, now_ms: u64) -> (Task, Decision) {
    let created = Created {
        id: placement.id,
        agent: spec.agent.clone(),
        conversation: placement.conversation,
        goal: spec.goal.clone(),
        acceptance: spec.acceptance.clone(),
        review: spec.review.clone(),
        decider: spec.decider.clone(),
        max_repairs: spec.max_repairs_or_default(),
        branch: placement.branch,
        baseline: placement.baseline,
        deadline: spec
            .deadline_secs
            .map(|s| Deadline::after(now_ms, s.min(MAX_DEADLINE_SECS))),
    };
    let task = crate::fold::task_from_created(&created, now_ms);
    let effects = vec![Effect::Launch {
        text: messages::launch_text(&task),
    }];
    (
        task,
        Decision {
            events: vec![TaskEvent::Created(Box::new(created))],
            effects,
        },
    )
}

impl Task {
    /// [`decide`], then fold its events into `self`: the live path.
    pub fn step(&mut self, input: Input, now_ms: u64) -> Result<Decision, Refused> {
        let decision = decide(self, input, now_ms)?;
        for e in &decision.events {
            apply(self, e, now_ms).map_err(|err| Refused {
                state: self.state(),
                input: "apply",
                reason: format!("internal: {err}"),
            })?;
        }
        Ok(decision)
    }
}

/// A decision being built: events are applied to a scratch copy as they are emitted, so
/// later steps read the state the fold will produce.
struct Tx {
    task: Task,
    now: u64,
    input: &'static str,
    events: Vec<TaskEvent>,
    effects: Vec<Effect>,
    why: VerifyWhy,
}

impl Tx {
    fn refuse(&self, reason: impl Into<String>) -> Refused {
        Refused {
            state: self.task.state(),
            input: self.input,
            reason: reason.into(),
        }
    }

    fn emit(&mut self, e: TaskEvent) -> Result<(), Refused> {
        apply(&mut self.task, &e, self.now).map_err(|err| self.refuse(format!("internal: {err}")))?;
        self.events.push(e);
        Ok(())
    }

    fn effect(&mut self, e: Effect) {
        self.effects.push(e);
    }

    /// Automatic messages to the worker go out only without a takeover or a pause.
    fn may_message_worker(&self) -> bool {
        self.task.takeover.is_none() && !self.task.holds.paused()
    }

    fn start_verification(&mut self, why: VerifyWhy) -> Result<(), Refused> {
        let round = self.task.round + 1;
        self.emit(TaskEvent::VerificationStarted { round, why })?;
        if self.task.stage == Stage::Verifying(VerifyStage::Checks) {
            self.effect(Effect::RunChecks {
                round,
                commands: self.task.acceptance.clone(),
            });
        } else {
            self.ask_reviewer(round);
        }
        Ok(())
    }

    fn ask_reviewer(&mut self, round: u32) {
        if let Some(r) = &self.task.review {
            let reviewer = r.agent.clone();
            self.effect(Effect::StartReview { round, reviewer });
        }
    }

    fn commit(&mut self) -> Result<(), Refused> {
        let round = self.task.round;
        self.emit(TaskEvent::CommitStarted { round })?;
        self.effect(Effect::CommitAndRecord {
            round,
            message: messages::commit_message(&self.task),
        });
        Ok(())
    }

    fn end(&mut self, ending: Ending, why: String) -> Result<(), Refused> {
        let why = reason(why);
        self.emit(TaskEvent::Ended {
            ending,
            reason: why.clone(),
        })?;
        self.effect(Effect::StopWorker);
        if ending == Ending::Parked {
            self.effect(Effect::RaiseNeedsYou { reason: why });
        }
        Ok(())
    }

    /// A failed round: a repair if one is left and there is time for it, else parked.
    fn fail_round(&mut self, summary: String, text: impl Fn(&Task, u32, Option<u64>) -> String) -> Result<(), Refused> {
        let t = &self.task;
        let window_left = t.deadline.map(|d| d.close_out_until.saturating_sub(self.now));
        if t.fired.exceeded {
            return self.end(Ending::Parked, format!("deadline exceeded; {summary}"));
        }
        if t.repairs >= t.max_repairs {
            let why = format!("{summary}; all {} repair rounds used", t.max_repairs);
            return self.end(Ending::Parked, why);
        }
        let close_out_left = if t.in_close_out() { window_left } else { None };
        if close_out_left.is_some_and(|ms| ms < MIN_REPAIR_WINDOW_MS) {
            let why = format!("under a minute of the close-out window left for a repair; {summary}");
            return self.end(Ending::Parked, why);
        }
        let repairs = t.repairs + 1;
        let body = text(t, repairs, close_out_left);
        if t.takeover.is_some() {
            self.emit(TaskEvent::RepairHeld { repairs, text: body })
        } else {
            self.emit(TaskEvent::RepairSent {
                repairs,
                text: body.clone(),
            })?;
            self.effect(Effect::SendRepair { text: body });
            Ok(())
        }
    }

    /// After every input: verify a pending turn end, or send a held repair, once nothing
    /// (a pause, a takeover, a held dialog) stands in the way.
    fn settle(&mut self) -> Result<(), Refused> {
        let t = &self.task;
        if t.stage != Stage::Working || t.holds.paused() || t.takeover.is_some() || t.holds.dialog.is_some() {
            return Ok(());
        }
        if t.verify_pending {
            return self.start_verification(self.why);
        }
        if let Some(text) = t.held_repair.clone() {
            self.emit(TaskEvent::HeldRepairSent)?;
            self.effect(Effect::SendRepair { text });
        }
        Ok(())
    }

    /// Records each deadline phase now due, in order, with what it sets in motion.
    fn fire_due_phases(&mut self) -> Result<(), Refused> {
        let Some(d) = self.task.deadline else { return Ok(()) };
        if !self.task.fired.warning && self.now >= d.warning_at {
            self.emit(TaskEvent::Deadline {
                phase: DeadlinePhase::Warning,
            })?;
            // A node that was away may find later phases due too: then no stale notice.
            let current = self.now < d.at;
            if current && self.task.stage == Stage::Working && self.task.turn_in_flight && self.may_message_worker() {
                let text = messages::warning_text(d.at.saturating_sub(self.now));
                self.effect(Effect::SendNotice { text });
            }
        }
        if !self.task.fired.reached && self.now >= d.at {
            self.emit(TaskEvent::Deadline {
                phase: DeadlinePhase::Reached,
            })?;
            let t = &self.task;
            if t.stage == Stage::Working && self.may_message_worker() && t.holds.dialog.is_none() {
                if t.turn_in_flight {
                    // A turn in flight keeps its turn; its end is verified. No notice
                    // when the window is already over too.
                    let left = d.close_out_until.saturating_sub(self.now);
                    if left > 0 {
                        self.effect(Effect::SendNotice {
                            text: messages::close_out_text(left),
                        });
                    }
                } else if !t.verify_pending && t.held_repair.is_none() {
                    self.start_verification(VerifyWhy::CloseOut)?;
                }
            }
        }
        if !self.task.fired.exceeded && self.now >= d.close_out_until {
            let interrupt = self.task.turn_in_flight && !matches!(self.task.stage, Stage::Verifying(_));
            if self.task.holds.dialog.is_some() {
                // Interrupting the turn dismisses its dialog.
                self.emit(TaskEvent::WaitEnded { on: WaitKind::Dialog })?;
            }
            self.emit(TaskEvent::Deadline {
                phase: DeadlinePhase::Exceeded,
            })?;
            if interrupt {
                self.effect(Effect::InterruptWorker);
            }
        }
        Ok(())
    }
}

fn valid_head(head: &str) -> bool {
    matches!(head.len(), 40 | 64) && head.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Decides what `input` at `now_ms` does to `task`. Pure: the caller records the events
/// (then folds them with [`apply`], or uses [`Task::step`]) and carries out the effects.
pub fn decide(task: &Task, input: Input, now_ms: u64) -> Result<Decision, Refused> {
    if task.is_terminal() {
        return match input {
            // Late clock ticks and restarts find nothing to do in an ended task.
            Input::Tick | Input::NodeRestarted => Ok(Decision::default()),
            _ => Err(Refused {
                state: task.state(),
                input: input.name(),
                reason: format!("task {} already ended", task.id),
            }),
        };
    }
    let mut tx = Tx {
        task: task.clone(),
        now: now_ms,
        input: input.name(),
        events: vec![],
        effects: vec![],
        why: VerifyWhy::Deferred,
    };
    step_input(&mut tx, input)?;
    tx.settle()?;
    Ok(Decision {
        events: tx.events,
        effects: tx.effects,
    })
}

fn step_input(tx: &mut Tx, input: Input) -> Result<(), Refused> {
    let stage = tx.task.stage;
    let verifying = matches!(stage, Stage::Verifying(_));
    match input {
        Input::Launched => {
            if stage != Stage::Starting {
                return Err(tx.refuse("the task was already launched"));
            }
            tx.emit(TaskEvent::Launched)
        }
        Input::LaunchFailed { reason } => {
            if stage != Stage::Starting {
                return Err(tx.refuse("the task was already launched"));
            }
            tx.end(Ending::Failed, format!("launch failed: {reason}"))
        }
        Input::TurnEnded | Input::WorkerExited { .. } if stage == Stage::Starting => {
            if let Input::WorkerExited { reason } = input {
                return tx.end(
                    Ending::Failed,
                    format!("the worker exited before its first turn: {reason}"),
                );
            }
            Err(tx.refuse("the goal has not reached the worker yet"))
        }
        Input::TurnEnded if verifying => {
            // The tree moved under the round: its result would not describe what gets committed.
            let round = tx.task.round;
            tx.emit(TaskEvent::TurnEnded)?;
            tx.effect(Effect::CancelVerification { round });
            tx.start_verification(VerifyWhy::TurnDuringVerification)
        }
        Input::WorkerExited { .. } if verifying => Ok(()),
        Input::TurnEnded | Input::WorkerExited { .. } => {
            if tx.task.verify_pending && !tx.task.turn_in_flight {
                return Ok(());
            }
            tx.why = VerifyWhy::TurnEnded;
            if tx.task.holds.dialog.is_some() {
                // The turn is over, so whatever held it was settled at the terminal.
                tx.emit(TaskEvent::WaitEnded { on: WaitKind::Dialog })?;
            }
            match input {
                Input::WorkerExited { reason } => tx.emit(TaskEvent::WorkerExited {
                    reason: bound_head(&reason, MAX_REASON_BYTES),
                }),
                _ => tx.emit(TaskEvent::TurnEnded),
            }
        }
        Input::ChecksFinished { round, results, head } => {
            if stage != Stage::Verifying(VerifyStage::Checks) {
                return Err(tx.refuse("no acceptance checks are running"));
            }
            if round != tx.task.round {
                return Err(tx.refuse(format!(
                    "results of round {round}, but round {} is running",
                    tx.task.round
                )));
            }
            checks_finished(tx, results, head)
        }
        Input::ReviewVerdict { round, verdict, notes } => {
            expect_round(tx, VerifyStage::Review, round)?;
            let notes = bound_head(&notes, MAX_NOTES_BYTES);
            tx.emit(TaskEvent::ReviewVerdict {
                round,
                verdict,
                notes: notes.clone(),
            })?;
            match verdict {
                Verdict::Approve => tx.commit(),
                Verdict::Reject => tx.fail_round(messages::review_summary(&notes), |t, n, left| {
                    messages::review_rejected_text(t, &notes, n, left)
                }),
            }
        }
        Input::ReviewFailed { round, reason } => {
            expect_round(tx, VerifyStage::Review, round)?;
            tx.end(Ending::Parked, format!("the review failed: {reason}"))
        }
        Input::CommitDone { round, head } => {
            expect_round(tx, VerifyStage::Commit, round)?;
            if !valid_head(&head) {
                return Err(tx.refuse(format!("head {:?} is not a full commit hash", bound_head(&head, 80))));
            }
            tx.emit(TaskEvent::Completed { head })?;
            // Done: the worker stops like any ended task's (its worktree and branch stay).
            tx.effect(Effect::StopWorker);
            Ok(())
        }
        Input::CommitFailed { round, reason } => {
            expect_round(tx, VerifyStage::Commit, round)?;
            tx.end(Ending::Parked, format!("the local commit failed: {reason}"))
        }
        Input::HumanTookOver { source } => {
            if tx.task.takeover.is_some() {
                return Ok(());
            }
            tx.emit(TaskEvent::HumanTakeover { source })
        }
        Input::ResumeAuto => {
            if tx.task.takeover.is_none() {
                return Err(tx.refuse("no human takeover to resume from"));
            }
            tx.emit(TaskEvent::ResumedAuto)
        }
        Input::StopAsked => {
            // A stop wins over a round not yet finalized: its results will be refused.
            if verifying {
                tx.effect(Effect::CancelVerification { round: tx.task.round });
            }
            tx.end(Ending::Stopped, "stopped by task.stop".to_string())
        }
        Input::Tick => tx.fire_due_phases(),
        Input::Recover { extend_secs } => recover(tx, extend_secs),
        Input::Discard => {
            if !tx.task.holds.timed_out || verifying {
                return Err(tx.refuse("only a task whose deadline ran out can be discarded"));
            }
            tx.end(Ending::Failed, "discarded after its deadline ran out".to_string())
        }
        Input::BudgetWaiting => {
            if tx.task.holds.budget {
                return Ok(());
            }
            tx.emit(TaskEvent::WaitStarted(WaitOn::Budget))
        }
        Input::BudgetResumed => {
            if !tx.task.holds.budget {
                return Err(tx.refuse("the task is not waiting on its budget"));
            }
            tx.emit(TaskEvent::WaitEnded { on: WaitKind::Budget })
        }
        Input::DialogHeld { dialog, question } => dialog_held(tx, dialog, question),
        Input::DialogAnswered { dialog } => {
            held_dialog(tx, dialog)?;
            tx.emit(TaskEvent::WaitEnded { on: WaitKind::Dialog })
        }
        Input::DeciderTimedOut { dialog } => {
            let held = held_dialog(tx, dialog)?;
            if !held.asked_decider {
                return Err(tx.refuse("the held dialog was not sent to a decider"));
            }
            tx.end(
                Ending::Parked,
                format!("the decider did not answer in time: {}", held.question),
            )
        }
        Input::BreakerTripped | Input::ConversationPaused => {
            let by = if input == Input::BreakerTripped {
                PauseCause::Breaker
            } else {
                PauseCause::Conversation
            };
            let set = match by {
                PauseCause::Breaker => tx.task.holds.breaker,
                PauseCause::Conversation => tx.task.holds.conversation_paused,
            };
            if set {
                return Ok(());
            }
            if verifying {
                let round = tx.task.round;
                tx.effect(Effect::CancelVerification { round });
                tx.emit(TaskEvent::VerificationCancelled { round })?;
            }
            tx.emit(TaskEvent::Paused { by })
        }
        Input::Continued => {
            if !tx.task.holds.breaker && !tx.task.holds.conversation_paused {
                return Err(tx.refuse("neither a breaker nor a paused conversation holds the task"));
            }
            tx.emit(TaskEvent::Continued)
        }
        Input::NodeRestarted => restarted(tx),
    }
}

fn expect_round(tx: &Tx, stage: VerifyStage, round: u32) -> Result<(), Refused> {
    if tx.task.stage != Stage::Verifying(stage) {
        let what = match stage {
            VerifyStage::Checks => "no acceptance checks are running",
            VerifyStage::Review => "no review is running",
            VerifyStage::Commit => "no commit is running",
        };
        return Err(tx.refuse(what));
    }
    if round != tx.task.round {
        return Err(tx.refuse(format!(
            "an answer for round {round}, but round {} is running",
            tx.task.round
        )));
    }
    Ok(())
}

fn checks_finished(tx: &mut Tx, results: Vec<CheckOutcome>, head: Option<String>) -> Result<(), Refused> {
    let want = &tx.task.acceptance;
    if results.len() > want.len() {
        return Err(tx.refuse(format!("{} results for {} commands", results.len(), want.len())));
    }
    if let Some(i) = results.iter().zip(want).position(|(r, c)| &r.command != c) {
        return Err(tx.refuse(format!("result {i} is not for acceptance[{i}]")));
    }
    if results.len() < want.len() && results.last().is_none_or(|r| r.exit_code == Some(0)) {
        return Err(tx.refuse("results stop early without a failure"));
    }
    if let Some(h) = &head
        && !valid_head(h)
    {
        return Err(tx.refuse(format!("head {:?} is not a full commit hash", bound_head(h, 80))));
    }
    let now = tx.now;
    let checks: Vec<CheckRecord> = results
        .into_iter()
        .map(|r| CheckRecord {
            command: r.command,
            exit_code: r.exit_code,
            output_tail: bound_tail(&r.output_tail, MAX_OUTPUT_TAIL_BYTES),
            ms: r.ms,
            at: now,
        })
        .collect();
    let passed = checks.len() == tx.task.acceptance.len() && checks.iter().all(CheckRecord::passed);
    let round = tx.task.round;
    tx.emit(TaskEvent::ChecksFinished {
        round,
        checks: checks.clone(),
        head,
    })?;
    if !passed {
        let summary = messages::checks_summary(&checks);
        return tx.fail_round(summary, |t, n, left| {
            messages::acceptance_failed_text(t, &checks, n, left)
        });
    }
    if tx.task.review.is_some() {
        tx.emit(TaskEvent::ReviewStarted { round })?;
        tx.ask_reviewer(round);
        Ok(())
    } else {
        tx.commit()
    }
}

fn recover(tx: &mut Tx, extend_secs: u64) -> Result<(), Refused> {
    let t = &tx.task;
    if !t.holds.timed_out || matches!(t.stage, Stage::Verifying(_)) {
        return Err(tx.refuse("only a task whose deadline ran out can be recovered"));
    }
    if extend_secs > MAX_DEADLINE_SECS {
        return Err(tx.refuse(format!(
            "extend_secs {extend_secs} is over the maximum of {MAX_DEADLINE_SECS}"
        )));
    }
    if t.recoveries >= MAX_RECOVERIES {
        return Err(tx.refuse(format!("already recovered {MAX_RECOVERIES} times; discard it")));
    }
    tx.emit(TaskEvent::Recovered {
        deadline: Deadline::after(tx.now, extend_secs),
    })?;
    // extend 0 reaches the deadline at once: straight into the close-out.
    tx.fire_due_phases()?;
    let t = &tx.task;
    if t.stage == Stage::Starting {
        tx.effect(Effect::Launch {
            text: messages::launch_text(t),
        });
    } else if t.stage == Stage::Working
        && !t.turn_in_flight
        && !t.verify_pending
        && t.held_repair.is_none()
        && t.holds.dialog.is_none()
        && tx.may_message_worker()
    {
        tx.emit(TaskEvent::Nudged)?;
        tx.effect(Effect::SendNotice {
            text: messages::recovered_text(extend_secs),
        });
    }
    Ok(())
}

fn dialog_held(tx: &mut Tx, dialog: String, question: String) -> Result<(), Refused> {
    if !matches!(tx.task.stage, Stage::Starting | Stage::Working) {
        return Err(tx.refuse("the worker has no turn that could hold a dialog"));
    }
    if let Some(held) = &tx.task.holds.dialog {
        if held.dialog == dialog {
            return Ok(());
        }
        return Err(tx.refuse(format!("dialog {} is already held", held.dialog)));
    }
    // Under a takeover the human at the terminal answers, not the decider.
    let decider = tx
        .task
        .decider
        .as_ref()
        .filter(|d| d.authority.asks_decider() && tx.task.takeover.is_none())
        .map(|d| d.agent.clone());
    let question = bound_head(&question, MAX_REASON_BYTES);
    let held = HeldDialog {
        dialog: dialog.clone(),
        question,
        asked_decider: decider.is_some(),
    };
    tx.emit(TaskEvent::WaitStarted(WaitOn::Dialog(held)))?;
    if let Some(decider) = decider {
        tx.effect(Effect::AskDecider { dialog, decider });
    }
    Ok(())
}

fn held_dialog(tx: &Tx, dialog: String) -> Result<HeldDialog, Refused> {
    match &tx.task.holds.dialog {
        Some(h) if h.dialog == dialog => Ok(h.clone()),
        Some(h) => Err(tx.refuse(format!("dialog {dialog} is not the held one ({})", h.dialog))),
        None => Err(tx.refuse("no dialog is held")),
    }
}

/// A restart: a round in flight runs again (at most [`MAX_RESTART_RERUNS`] times), a
/// commit in flight is asked for again, a start is launched again.
fn restarted(tx: &mut Tx) -> Result<(), Refused> {
    tx.emit(TaskEvent::Restarted)?;
    match tx.task.stage {
        Stage::Starting => {
            let text = messages::launch_text(&tx.task);
            tx.effect(Effect::Launch { text });
        }
        Stage::Working => {
            tx.effect(Effect::WatchWorker);
            if let (Some(h), Some(d)) = (&tx.task.holds.dialog, &tx.task.decider)
                && h.asked_decider
            {
                let (dialog, decider) = (h.dialog.clone(), d.agent.clone());
                tx.effect(Effect::AskDecider { dialog, decider });
            }
        }
        Stage::Verifying(stage) => {
            if tx.task.restart_reruns > MAX_RESTART_RERUNS {
                let why = format!(
                    "verification was interrupted by {} node restarts",
                    tx.task.restart_reruns
                );
                return tx.end(Ending::Parked, why);
            }
            if stage == VerifyStage::Commit {
                let round = tx.task.round;
                tx.effect(Effect::CommitAndRecord {
                    round,
                    message: messages::commit_message(&tx.task),
                });
            } else {
                tx.start_verification(VerifyWhy::Restart)?;
            }
        }
        Stage::Ended(_) => {}
    }
    Ok(())
}
