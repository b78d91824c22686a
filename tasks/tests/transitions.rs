//! Every transition, valid and refused, as a table: (situation, input) -> state, events, effects.

mod common;

use common::{H, HEAD, spec};
use tasks::state::{MAX_RESTART_RERUNS, TakeoverSource, Verdict};
use tasks::{Authority, CheckOutcome, DeciderSpec, Input, TaskState};

fn starting() -> H {
    H::new(spec(&["make a", "make b"], Some("rev")))
}
fn running() -> H {
    let mut h = starting();
    h.ok(Input::Launched);
    h
}
fn waiting_budget() -> H {
    let mut h = running();
    h.ok(Input::BudgetWaiting);
    h
}
fn waiting_dialog() -> H {
    let mut s = spec(&["make a", "make b"], Some("rev"));
    s.decider = Some(DeciderSpec {
        agent: "dec".into(),
        authority: Authority::Hybrid,
        timeout_secs: None,
    });
    let mut h = H::new(s);
    h.ok(Input::Launched);
    let d = h.ok(Input::DialogHeld {
        dialog: "h-1".into(),
        question: "run rm -rf build?".into(),
    });
    assert_eq!(common::effect_names(&d), ["ask_decider"]);
    h
}
fn checks() -> H {
    let mut h = running();
    h.ok(Input::TurnEnded);
    h
}
fn review() -> H {
    let mut h = checks();
    h.checks(&[true, true]);
    h
}
fn commit() -> H {
    let mut h = review();
    h.verdict(Verdict::Approve, "fine");
    h
}
fn paused() -> H {
    let mut h = running();
    h.ok(Input::BreakerTripped);
    h
}
fn timed_out() -> H {
    let mut h = running();
    h.now = h.task.deadline.expect("deadline").close_out_until;
    let d = h.ok(Input::Tick);
    assert_eq!(common::effect_names(&d), ["interrupt_worker"]);
    h
}
fn takeover() -> H {
    let mut h = running();
    h.ok(Input::HumanTookOver {
        source: TakeoverSource::Keys,
    });
    h
}
fn completed() -> H {
    let mut h = commit();
    h.commit_done();
    h
}
fn parked() -> H {
    let mut h = review();
    h.ok(Input::ReviewFailed {
        round: h.task.round,
        reason: "reviewer crashed".into(),
    });
    h
}
fn failed() -> H {
    let mut h = starting();
    h.ok(Input::LaunchFailed {
        reason: "no such program".into(),
    });
    h
}
fn stopped() -> H {
    let mut h = running();
    h.ok(Input::StopAsked);
    h
}

type Setup = fn() -> H;
type MakeInput = fn(&H) -> Input;

enum Want {
    Ok(TaskState, &'static [&'static str], &'static [&'static str]),
    Refused,
}
use Want::{Ok as Go, Refused as No};

fn results(h: &H, pass: &[bool]) -> Vec<CheckOutcome> {
    h.results(pass)
}
fn pass(h: &H) -> Input {
    Input::ChecksFinished {
        round: h.task.round,
        results: results(h, &[true, true]),
        head: Some(HEAD.into()),
    }
}
fn fail(h: &H) -> Input {
    Input::ChecksFinished {
        round: h.task.round,
        results: results(h, &[true, false]),
        head: None,
    }
}
fn approve(h: &H) -> Input {
    Input::ReviewVerdict {
        round: h.task.round,
        verdict: Verdict::Approve,
        notes: "ok".into(),
    }
}
fn reject(h: &H) -> Input {
    Input::ReviewVerdict {
        round: h.task.round,
        verdict: Verdict::Reject,
        notes: "missing test".into(),
    }
}
fn done(h: &H) -> Input {
    Input::CommitDone {
        round: h.task.round,
        head: HEAD.into(),
    }
}

use TaskState as S;

#[rustfmt::skip]
fn table() -> Vec<(&'static str, Setup, &'static str, MakeInput, Want)> {
    vec![
        // starting
        ("starting", starting, "launched", |_| Input::Launched, Go(S::Running, &["launched"], &[])),
        ("starting", starting, "launch failed", |_| Input::LaunchFailed { reason: "x".into() }, Go(S::Failed, &["ended"], &["stop_worker"])),
        ("starting", starting, "turn ended", |_| Input::TurnEnded, No),
        ("starting", starting, "worker exited", |_| Input::WorkerExited { reason: "x".into() }, Go(S::Failed, &["ended"], &["stop_worker"])),
        ("starting", starting, "checks", |h| pass(h), No),
        ("starting", starting, "verdict", |h| approve(h), No),
        ("starting", starting, "commit done", |h| done(h), No),
        ("starting", starting, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["stop_worker"])),
        ("starting", starting, "restart", |_| Input::NodeRestarted, Go(S::Starting, &["restarted"], &["launch"])),
        ("starting", starting, "dialog held", |_| Input::DialogHeld { dialog: "h-1".into(), question: "trust?".into() }, Go(S::Starting, &["wait_started"], &[])),
        ("starting", starting, "recover", |_| Input::Recover { extend_secs: 60 }, No),
        ("starting", starting, "discard", |_| Input::Discard, No),
        ("starting", starting, "continued", |_| Input::Continued, No),
        ("starting", starting, "resume auto", |_| Input::ResumeAuto, No),
        ("starting", starting, "budget resumed", |_| Input::BudgetResumed, No),
        ("starting", starting, "tick early", |_| Input::Tick, Go(S::Starting, &[], &[])),
        // running
        ("running", running, "turn ended", |_| Input::TurnEnded, Go(S::Verifying, &["turn_ended", "verification_started"], &["run_checks"])),
        ("running", running, "worker exited", |_| Input::WorkerExited { reason: "exit 0".into() }, Go(S::Verifying, &["worker_exited", "verification_started"], &["run_checks"])),
        ("running", running, "launched again", |_| Input::Launched, No),
        ("running", running, "launch failed", |_| Input::LaunchFailed { reason: "x".into() }, No),
        ("running", running, "checks", |h| pass(h), No),
        ("running", running, "verdict", |h| approve(h), No),
        ("running", running, "review failed", |h| Input::ReviewFailed { round: h.task.round, reason: "x".into() }, No),
        ("running", running, "commit done", |h| done(h), No),
        ("running", running, "commit failed", |h| Input::CommitFailed { round: h.task.round, reason: "x".into() }, No),
        ("running", running, "takeover", |_| Input::HumanTookOver { source: TakeoverSource::Message }, Go(S::Running, &["human_takeover"], &[])),
        ("running", running, "resume auto", |_| Input::ResumeAuto, No),
        ("running", running, "budget waiting", |_| Input::BudgetWaiting, Go(S::Waiting, &["wait_started"], &[])),
        ("running", running, "budget resumed", |_| Input::BudgetResumed, No),
        ("running", running, "breaker", |_| Input::BreakerTripped, Go(S::Paused, &["paused"], &[])),
        ("running", running, "conv paused", |_| Input::ConversationPaused, Go(S::Paused, &["paused"], &[])),
        ("running", running, "continued", |_| Input::Continued, No),
        ("running", running, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["stop_worker"])),
        ("running", running, "tick early", |_| Input::Tick, Go(S::Running, &[], &[])),
        ("running", running, "restart", |_| Input::NodeRestarted, Go(S::Running, &["restarted"], &["watch_worker"])),
        ("running", running, "dialog held", |_| Input::DialogHeld { dialog: "h-7".into(), question: "q".into() }, Go(S::Waiting, &["wait_started"], &[])),
        ("running", running, "dialog answered", |_| Input::DialogAnswered { dialog: "h-7".into() }, No),
        ("running", running, "decider timeout", |_| Input::DeciderTimedOut { dialog: "h-7".into() }, No),
        ("running", running, "recover", |_| Input::Recover { extend_secs: 60 }, No),
        ("running", running, "discard", |_| Input::Discard, No),
        // waiting on the budget: verification still runs (it spends no tokens)
        ("budget", waiting_budget, "resumed", |_| Input::BudgetResumed, Go(S::Running, &["wait_ended"], &[])),
        ("budget", waiting_budget, "waiting again", |_| Input::BudgetWaiting, Go(S::Waiting, &[], &[])),
        ("budget", waiting_budget, "turn ended", |_| Input::TurnEnded, Go(S::Verifying, &["turn_ended", "verification_started"], &["run_checks"])),
        ("budget", waiting_budget, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["stop_worker"])),
        // waiting on a held dialog the decider was asked about
        ("dialog", waiting_dialog, "answered", |_| Input::DialogAnswered { dialog: "h-1".into() }, Go(S::Running, &["wait_ended"], &[])),
        ("dialog", waiting_dialog, "other answered", |_| Input::DialogAnswered { dialog: "h-2".into() }, No),
        ("dialog", waiting_dialog, "same held again", |_| Input::DialogHeld { dialog: "h-1".into(), question: "q".into() }, Go(S::Waiting, &[], &[])),
        ("dialog", waiting_dialog, "second dialog", |_| Input::DialogHeld { dialog: "h-2".into(), question: "q".into() }, No),
        ("dialog", waiting_dialog, "decider timeout", |_| Input::DeciderTimedOut { dialog: "h-1".into() }, Go(S::Parked, &["ended"], &["stop_worker", "raise_needs_you"])),
        ("dialog", waiting_dialog, "other timeout", |_| Input::DeciderTimedOut { dialog: "h-3".into() }, No),
        ("dialog", waiting_dialog, "turn ended", |_| Input::TurnEnded, Go(S::Verifying, &["wait_ended", "turn_ended", "verification_started"], &["run_checks"])),
        ("dialog", waiting_dialog, "worker exited", |_| Input::WorkerExited { reason: "killed".into() }, Go(S::Verifying, &["wait_ended", "worker_exited", "verification_started"], &["run_checks"])),
        ("dialog", waiting_dialog, "restart", |_| Input::NodeRestarted, Go(S::Waiting, &["restarted"], &["watch_worker", "ask_decider"])),
        // verifying: checks
        ("checks", checks, "pass", |h| pass(h), Go(S::Verifying, &["checks_finished", "review_started"], &["start_review"])),
        ("checks", checks, "fail", |h| fail(h), Go(S::Running, &["checks_finished", "repair_sent"], &["send_repair"])),
        ("checks", checks, "stale round", |h| Input::ChecksFinished { round: h.task.round - 1, results: results(h, &[true, true]), head: None }, No),
        ("checks", checks, "future round", |h| Input::ChecksFinished { round: h.task.round + 1, results: results(h, &[true, true]), head: None }, No),
        ("checks", checks, "too many results", |h| { let mut r = results(h, &[true, true]); r.push(r[0].clone()); Input::ChecksFinished { round: h.task.round, results: r, head: None } }, No),
        ("checks", checks, "stopped early on a failure", |h| Input::ChecksFinished { round: h.task.round, results: results(h, &[false]), head: None }, Go(S::Running, &["checks_finished", "repair_sent"], &["send_repair"])),
        ("checks", checks, "stopped early on a pass", |h| Input::ChecksFinished { round: h.task.round, results: results(h, &[true]), head: None }, No),
        ("checks", checks, "no results", |h| Input::ChecksFinished { round: h.task.round, results: vec![], head: None }, No),
        ("checks", checks, "wrong command", |h| { let mut r = results(h, &[true, true]); r.swap(0, 1); Input::ChecksFinished { round: h.task.round, results: r, head: None } }, No),
        ("checks", checks, "killed counts as failed", |h| { let mut r = results(h, &[true, true]); r[1].exit_code = None; Input::ChecksFinished { round: h.task.round, results: r, head: None } }, Go(S::Running, &["checks_finished", "repair_sent"], &["send_repair"])),
        ("checks", checks, "bad head", |h| Input::ChecksFinished { round: h.task.round, results: results(h, &[true, true]), head: Some("main".into()) }, No),
        ("checks", checks, "verdict", |h| approve(h), No),
        ("checks", checks, "commit done", |h| done(h), No),
        ("checks", checks, "turn ended", |_| Input::TurnEnded, Go(S::Verifying, &["turn_ended", "verification_started"], &["cancel_verification", "run_checks"])),
        ("checks", checks, "worker exited", |_| Input::WorkerExited { reason: "x".into() }, Go(S::Verifying, &[], &[])),
        ("checks", checks, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["cancel_verification", "stop_worker"])),
        ("checks", checks, "breaker", |_| Input::BreakerTripped, Go(S::Paused, &["verification_cancelled", "paused"], &["cancel_verification"])),
        ("checks", checks, "restart", |_| Input::NodeRestarted, Go(S::Verifying, &["restarted", "verification_started"], &["run_checks"])),
        ("checks", checks, "takeover", |_| Input::HumanTookOver { source: TakeoverSource::Keys }, Go(S::Verifying, &["human_takeover"], &[])),
        ("checks", checks, "dialog held", |_| Input::DialogHeld { dialog: "h-1".into(), question: "q".into() }, No),
        ("checks", checks, "budget waiting", |_| Input::BudgetWaiting, Go(S::Verifying, &["wait_started"], &[])),
        ("checks", checks, "launched", |_| Input::Launched, No),
        ("checks", checks, "recover", |_| Input::Recover { extend_secs: 0 }, No),
        // verifying: review
        ("review", review, "approve", |h| approve(h), Go(S::Verifying, &["review_verdict", "commit_started"], &["commit_and_record"])),
        ("review", review, "reject", |h| reject(h), Go(S::Running, &["review_verdict", "repair_sent"], &["send_repair"])),
        ("review", review, "stale verdict", |h| Input::ReviewVerdict { round: h.task.round - 1, verdict: Verdict::Approve, notes: String::new() }, No),
        ("review", review, "review failed", |h| Input::ReviewFailed { round: h.task.round, reason: "x".into() }, Go(S::Parked, &["ended"], &["stop_worker", "raise_needs_you"])),
        ("review", review, "checks", |h| pass(h), No),
        ("review", review, "commit done", |h| done(h), No),
        ("review", review, "restart", |_| Input::NodeRestarted, Go(S::Verifying, &["restarted", "verification_started"], &["run_checks"])),
        // verifying: commit
        ("commit", commit, "done", |h| done(h), Go(S::Completed, &["completed"], &["stop_worker"])),
        ("commit", commit, "done bad head", |h| Input::CommitDone { round: h.task.round, head: "HEAD".into() }, No),
        ("commit", commit, "done stale", |h| Input::CommitDone { round: h.task.round - 1, head: HEAD.into() }, No),
        ("commit", commit, "failed", |h| Input::CommitFailed { round: h.task.round, reason: "baseline is not an ancestor".into() }, Go(S::Parked, &["ended"], &["stop_worker", "raise_needs_you"])),
        ("commit", commit, "verdict", |h| approve(h), No),
        ("commit", commit, "restart", |_| Input::NodeRestarted, Go(S::Verifying, &["restarted"], &["commit_and_record"])),
        ("commit", commit, "turn ended", |_| Input::TurnEnded, Go(S::Verifying, &["turn_ended", "verification_started"], &["cancel_verification", "run_checks"])),
        // paused by a breaker
        ("paused", paused, "continued", |_| Input::Continued, Go(S::Running, &["continued"], &[])),
        ("paused", paused, "tripped again", |_| Input::BreakerTripped, Go(S::Paused, &[], &[])),
        ("paused", paused, "conv paused too", |_| Input::ConversationPaused, Go(S::Paused, &["paused"], &[])),
        ("paused", paused, "turn ended", |_| Input::TurnEnded, Go(S::Paused, &["turn_ended"], &[])),
        ("paused", paused, "recover", |_| Input::Recover { extend_secs: 60 }, No),
        ("paused", paused, "discard", |_| Input::Discard, No),
        ("paused", paused, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["stop_worker"])),
        // paused because the deadline and its close-out ran out
        ("timed out", timed_out, "recover 600", |_| Input::Recover { extend_secs: 600 }, Go(S::Running, &["recovered", "nudged"], &["send_notice"])),
        ("timed out", timed_out, "recover 0", |_| Input::Recover { extend_secs: 0 }, Go(S::Verifying, &["recovered", "deadline", "deadline", "verification_started"], &["run_checks"])),
        ("timed out", timed_out, "recover too far", |_| Input::Recover { extend_secs: u64::MAX }, No),
        ("timed out", timed_out, "discard", |_| Input::Discard, Go(S::Failed, &["ended"], &["stop_worker"])),
        ("timed out", timed_out, "continued", |_| Input::Continued, No),
        ("timed out", timed_out, "late turn end", |_| Input::TurnEnded, Go(S::Paused, &["turn_ended"], &[])),
        ("timed out", timed_out, "tick", |_| Input::Tick, Go(S::Paused, &[], &[])),
        ("timed out", timed_out, "stop", |_| Input::StopAsked, Go(S::Stopped, &["ended"], &["stop_worker"])),
        // a human took over
        ("takeover", takeover, "turn ended", |_| Input::TurnEnded, Go(S::Running, &["turn_ended"], &[])),
        ("takeover", takeover, "resume", |_| Input::ResumeAuto, Go(S::Running, &["resumed_auto"], &[])),
        ("takeover", takeover, "again", |_| Input::HumanTookOver { source: TakeoverSource::Keys }, Go(S::Running, &[], &[])),
        ("takeover", takeover, "dialog held", |_| Input::DialogHeld { dialog: "h-1".into(), question: "q".into() }, Go(S::Waiting, &["wait_started"], &[])),
    ]
}

#[test]
fn transition_table() {
    let mut failures = vec![];
    for (situation, setup, what, make, want) in table() {
        let mut h = setup();
        let input = make(&h);
        let got = h.step(input);
        let ok = match (&want, &got) {
            (Go(state, events, effects), Ok(d)) => {
                h.task.state() == *state && common::event_names(d) == *events && common::effect_names(d) == *effects
            }
            (No, Err(_)) => true,
            _ => false,
        };
        if !ok {
            let got = got.map(|d| (h.task.state(), common::event_names(&d), common::effect_names(&d)));
            failures.push(format!("{situation} / {what}: got {got:?}"));
        }
        h.assert_fold();
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn every_input(h: &H) -> Vec<Input> {
    let r = h.task.round;
    vec![
        Input::Launched,
        Input::LaunchFailed { reason: "x".into() },
        Input::TurnEnded,
        Input::WorkerExited { reason: "x".into() },
        pass(h),
        fail(h),
        approve(h),
        reject(h),
        Input::ReviewFailed {
            round: r,
            reason: "x".into(),
        },
        done(h),
        Input::CommitFailed {
            round: r,
            reason: "x".into(),
        },
        Input::HumanTookOver {
            source: TakeoverSource::Keys,
        },
        Input::ResumeAuto,
        Input::StopAsked,
        Input::Tick,
        Input::Recover { extend_secs: 0 },
        Input::Discard,
        Input::BudgetWaiting,
        Input::BudgetResumed,
        Input::DialogHeld {
            dialog: "h-1".into(),
            question: "q".into(),
        },
        Input::DialogAnswered { dialog: "h-1".into() },
        Input::DeciderTimedOut { dialog: "h-1".into() },
        Input::BreakerTripped,
        Input::ConversationPaused,
        Input::Continued,
        Input::NodeRestarted,
    ]
}

#[test]
fn an_ended_task_refuses_everything_but_late_ticks_and_restarts() {
    for (name, setup) in [
        ("completed", completed as Setup),
        ("parked", parked),
        ("failed", failed),
        ("stopped", stopped),
    ] {
        let proto = setup();
        assert!(proto.task.state().is_terminal(), "{name}");
        for input in every_input(&proto) {
            let mut h = setup();
            let before = h.task.clone();
            let what = input.name();
            match h.step(input) {
                Ok(d) => {
                    assert!(matches!(what, "tick" | "node_restarted"), "{name}: {what} accepted");
                    assert!(d.is_noop(), "{name}: {what} did something: {d:?}");
                }
                Err(e) => assert_eq!(e.state, before.state(), "{name}: {what}"),
            }
            assert_eq!(h.task, before, "{name}: {what} changed an ended task");
        }
    }
}

#[test]
fn every_situation_takes_every_input_without_panicking_and_folds() {
    let setups: [Setup; 14] = [
        starting,
        running,
        waiting_budget,
        waiting_dialog,
        checks,
        review,
        commit,
        paused,
        timed_out,
        takeover,
        completed,
        parked,
        failed,
        stopped,
    ];
    for setup in setups {
        for input in every_input(&setup()) {
            let mut h = setup();
            let _ = h.step(input);
            h.assert_fold();
        }
    }
}

#[test]
fn restarts_rerun_a_round_a_bounded_number_of_times() {
    let mut h = checks();
    for i in 1..=MAX_RESTART_RERUNS {
        let d = h.ok(Input::NodeRestarted);
        assert_eq!(common::effect_names(&d), ["run_checks"], "restart {i}");
    }
    let d = h.ok(Input::NodeRestarted);
    assert_eq!(h.task.state(), TaskState::Parked);
    assert_eq!(common::effect_names(&d), ["stop_worker", "raise_needs_you"]);
    h.assert_fold();
}

#[test]
fn the_deadline_dismisses_a_held_dialog_with_the_turn() {
    let mut h = waiting_dialog();
    h.now = h.task.deadline.expect("deadline").close_out_until;
    let d = h.ok(Input::Tick);
    assert_eq!(
        common::event_names(&d),
        ["deadline", "deadline", "wait_ended", "deadline"]
    );
    assert_eq!(common::effect_names(&d), ["interrupt_worker"]);
    assert_eq!((h.task.state(), h.task.holds.dialog.clone()), (TaskState::Paused, None));
    assert!(
        h.step(Input::DeciderTimedOut { dialog: "h-1".into() }).is_err(),
        "nothing is held any more"
    );
    h.assert_fold();
}
