//! Whole runs: repair rounds, parking, takeover, deadlines, restarts, and the task.get object.

mod common;

use common::{BASELINE, H, HEAD, effect_names, event_names, spec};
use tasks::decide::MIN_REPAIR_WINDOW_MS;
use tasks::messages::{ACCEPTANCE_FAILED, MAX_REPAIR_BYTES, REVIEW_REJECTED};
use tasks::state::{MAX_OUTPUT_TAIL_BYTES, TakeoverSource, Verdict};
use tasks::{Authority, CheckOutcome, DeciderSpec, Effect, Input, TaskEvent, TaskObject, TaskState};

fn repair_text(effects: &[Effect]) -> &str {
    effects
        .iter()
        .find_map(|e| match e {
            Effect::SendRepair { text } => Some(text.as_str()),
            _ => None,
        })
        .expect("a repair message")
}

#[test]
fn failed_acceptance_is_repaired_once_then_completes() {
    let mut h = H::new(spec(&["cargo test"], None));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let d = h.checks(&[false]);
    let text = repair_text(&d.effects);
    assert!(text.starts_with(ACCEPTANCE_FAILED), "{text}");
    assert!(
        text.contains("$ cargo test") && text.contains("exited with 1") && text.contains("cargo test: boom"),
        "{text}"
    );
    assert!(text.contains("Repair round 1 of 2"), "{text}");
    assert_eq!(h.task.repairs, 1);
    h.ok(Input::TurnEnded);
    let d = h.checks(&[true]);
    match d.effects.as_slice() {
        [Effect::CommitAndRecord { message, .. }] => assert_eq!(message, "task t1: Make the tests pass."),
        other => panic!("{other:?}"),
    }
    let d = h.commit_done();
    assert_eq!(event_names(&d), ["completed"]);
    assert_eq!(h.task.state(), TaskState::Completed);
    assert_eq!(h.task.head.as_deref(), Some(HEAD));
    h.assert_fold();
}

#[test]
fn a_rejection_is_a_repair_round_and_an_approval_completes() {
    let mut h = H::new(spec(&["make"], Some("rev")));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let d = h.checks(&[true]);
    assert!(matches!(d.effects.as_slice(), [Effect::StartReview { reviewer, .. }] if reviewer == "rev"));
    let d = h.verdict(Verdict::Reject, "  no test for the edge case ");
    let text = repair_text(&d.effects);
    assert!(
        text.starts_with(&format!("{REVIEW_REJECTED} no test for the edge case")),
        "{text}"
    );
    h.ok(Input::TurnEnded);
    h.checks(&[true]);
    h.verdict(Verdict::Approve, "good");
    h.commit_done();
    assert_eq!(h.task.state(), TaskState::Completed);
    let review = h.task.last_review.clone().expect("review kept");
    assert_eq!((review.agent.as_str(), review.verdict), ("rev", Verdict::Approve));
    h.assert_fold();
}

#[test]
fn review_only_task_asks_the_reviewer_at_each_turn_end() {
    let mut h = H::new(spec(&[], Some("rev")));
    h.ok(Input::Launched);
    let d = h.ok(Input::TurnEnded);
    assert_eq!(effect_names(&d), ["start_review"]);
    h.verdict(Verdict::Approve, "");
    h.commit_done();
    assert_eq!(h.task.state(), TaskState::Completed);
}

#[test]
fn a_task_that_cannot_pass_is_parked_with_one_needs_you() {
    let mut h = H::new(spec(&["make"], None));
    let mut needs_you = 0;
    let mut count = |d: &tasks::Decision| {
        needs_you += d
            .effects
            .iter()
            .filter(|e| matches!(e, Effect::RaiseNeedsYou { .. }))
            .count();
    };
    count(&h.ok(Input::Launched));
    for _ in 0..3 {
        count(&h.ok(Input::TurnEnded));
        count(&h.checks(&[false]));
    }
    assert_eq!(h.task.state(), TaskState::Parked);
    assert_eq!(h.task.repairs, 2);
    let reason = h.task.reason.clone().expect("reason");
    assert!(
        reason.contains("`make` exited with 1") && reason.contains("all 2 repair rounds used"),
        "{reason}"
    );
    for input in [Input::NodeRestarted, Input::Tick] {
        count(&h.ok(input));
    }
    assert!(h.step(Input::TurnEnded).is_err());
    assert_eq!(needs_you, 1);
    assert_eq!(h.task.checks.len(), 1, "the last round's evidence is kept");
    h.assert_fold();
}

#[test]
fn zero_repairs_parks_at_the_first_failure() {
    let mut s = spec(&["make"], None);
    s.max_repairs = Some(0);
    let mut h = H::new(s);
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let d = h.checks(&[false]);
    assert_eq!(effect_names(&d), ["stop_worker", "raise_needs_you"]);
    assert_eq!(h.task.state(), TaskState::Parked);
}

#[test]
fn a_takeover_holds_the_repair_until_resume_auto() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    h.ok(Input::HumanTookOver {
        source: TakeoverSource::Keys,
    });
    let d = h.checks(&[false]);
    assert_eq!(event_names(&d), ["checks_finished", "repair_held"]);
    assert!(d.effects.is_empty(), "no automatic message under a takeover: {d:?}");
    assert_eq!(h.task.repairs, 1);
    let d = h.ok(Input::ResumeAuto);
    assert_eq!(event_names(&d), ["resumed_auto", "held_repair_sent"]);
    assert!(repair_text(&d.effects).starts_with(ACCEPTANCE_FAILED));
    h.assert_fold();
}

#[test]
fn after_a_takeover_the_humans_last_turn_is_verified_instead_of_the_stale_repair() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    h.ok(Input::HumanTookOver {
        source: TakeoverSource::Message,
    });
    h.checks(&[false]);
    for _ in 0..3 {
        let d = h.ok(Input::TurnEnded);
        assert!(
            d.effects.is_empty(),
            "the human's turns are not verified during the takeover"
        );
    }
    let d = h.ok(Input::ResumeAuto);
    assert_eq!(event_names(&d), ["resumed_auto", "verification_started"]);
    assert_eq!(effect_names(&d), ["run_checks"]);
    assert_eq!(h.task.held_repair, None);
    h.assert_fold();
}

#[test]
fn deadline_phases_fire_once_and_a_turn_in_flight_finishes_and_is_verified() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    let d = h.task.deadline.expect("deadline");
    assert_eq!(h.task.next_wakeup(), Some(d.warning_at));
    h.now = d.warning_at;
    let w = h.ok(Input::Tick);
    assert_eq!(
        (event_names(&w), effect_names(&w)),
        (vec!["deadline"], vec!["send_notice"])
    );
    assert!(h.ok(Input::Tick).is_noop(), "the warning is recorded once");
    assert_eq!(h.task.next_wakeup(), Some(d.at));
    h.now = d.at;
    let r = h.ok(Input::Tick);
    assert_eq!(
        (event_names(&r), effect_names(&r)),
        (vec!["deadline"], vec!["send_notice"])
    );
    assert_eq!(h.task.state(), TaskState::Running, "the turn in flight keeps its turn");
    h.advance(1000);
    h.ok(Input::TurnEnded);
    let c = h.checks(&[true]);
    assert_eq!(effect_names(&c), ["commit_and_record"]);
    h.commit_done();
    assert_eq!(h.task.state(), TaskState::Completed);
    assert_eq!(h.task.next_wakeup(), None);
    h.assert_fold();
}

#[test]
fn an_idle_worker_is_verified_as_the_close_out_opens() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.now = h.task.deadline.expect("deadline").close_out_until;
    h.ok(Input::Tick);
    // Recovered under a takeover: no nudge, so the worker sits idle with nothing pending.
    h.ok(Input::HumanTookOver {
        source: TakeoverSource::Keys,
    });
    let d = h.ok(Input::Recover { extend_secs: 600 });
    assert_eq!(event_names(&d), ["recovered"]);
    h.ok(Input::ResumeAuto);
    assert_eq!(h.task.state(), TaskState::Running);
    assert!(!h.task.turn_in_flight);
    h.now = h.task.deadline.expect("deadline").at;
    let d = h.ok(Input::Tick);
    assert_eq!(event_names(&d), ["deadline", "deadline", "verification_started"]);
    assert_eq!(effect_names(&d), ["run_checks"], "no stale warning notice either");
    h.assert_fold();
}

#[test]
fn a_failure_in_the_close_out_repairs_with_the_time_left_or_parks_under_a_minute() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    let d = h.task.deadline.expect("deadline");
    h.now = d.at;
    h.ok(Input::Tick);
    h.ok(Input::TurnEnded);
    let r = h.checks(&[false]);
    let text = repair_text(&r.effects);
    assert!(text.contains("close-out window remain"), "{text}");
    h.now = d.close_out_until - MIN_REPAIR_WINDOW_MS + 1;
    h.ok(Input::TurnEnded);
    h.checks(&[false]);
    assert_eq!(h.task.state(), TaskState::Parked);
    assert!(
        h.task.reason.as_deref().is_some_and(|r| r.contains("close-out")),
        "{:?}",
        h.task.reason
    );
    h.assert_fold();
}

#[test]
fn a_round_running_when_the_window_closes_finishes_and_decides_the_task() {
    for pass in [true, false] {
        let mut h = H::new(spec(&["make"], None));
        h.ok(Input::Launched);
        h.ok(Input::TurnEnded);
        h.now = h.task.deadline.expect("deadline").close_out_until;
        let t = h.ok(Input::Tick);
        assert_eq!(event_names(&t), ["deadline", "deadline", "deadline"]);
        assert!(t.effects.is_empty(), "nothing to interrupt or announce: {t:?}");
        assert_eq!(h.task.state(), TaskState::Verifying);
        h.checks(&[pass]);
        if pass {
            h.commit_done();
            assert_eq!(h.task.state(), TaskState::Completed);
        } else {
            assert_eq!(h.task.state(), TaskState::Parked);
            assert!(
                h.task
                    .reason
                    .as_deref()
                    .is_some_and(|r| r.starts_with("deadline exceeded"))
            );
        }
        h.assert_fold();
    }
}

#[test]
fn recover_gives_a_new_deadline_whose_phases_fire_again() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.now = h.task.deadline.expect("deadline").close_out_until + 5;
    h.ok(Input::Tick);
    assert_eq!(
        (h.task.state(), h.task.reason.as_deref()),
        (TaskState::Paused, Some("deadline exceeded"))
    );
    h.advance(60_000);
    h.ok(Input::Recover { extend_secs: 600 });
    let d = h.task.deadline.expect("new deadline");
    assert_eq!(d.at, h.now + 600_000);
    assert_eq!(h.task.reason, None);
    h.now = d.close_out_until;
    let t = h.ok(Input::Tick);
    assert_eq!(effect_names(&t), ["interrupt_worker"]);
    assert_eq!(h.task.state(), TaskState::Paused);
    h.ok(Input::Discard);
    assert_eq!(h.task.state(), TaskState::Failed);
    h.assert_fold();
}

#[test]
fn kill_during_verification_ends_in_exactly_one_completion() {
    let mut h = H::new(spec(&["make"], Some("rev")));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let old = h.task.round;
    let d = h.ok(Input::NodeRestarted);
    assert_eq!(effect_names(&d), ["run_checks"]);
    let stale = Input::ChecksFinished {
        round: old,
        results: h.results(&[true]),
        head: None,
    };
    assert!(h.step(stale).is_err(), "the interrupted round's result is stale");
    h.checks(&[true]);
    h.verdict(Verdict::Approve, "");
    h.ok(Input::NodeRestarted);
    let round = h.task.round;
    h.ok(Input::CommitDone {
        round,
        head: HEAD.into(),
    });
    assert!(
        h.step(Input::CommitDone {
            round,
            head: HEAD.into()
        })
        .is_err()
    );
    let completions = h
        .log
        .iter()
        .filter(|(e, _)| matches!(e, TaskEvent::Completed { .. }))
        .count();
    assert_eq!(completions, 1);
    h.assert_fold();
}

#[test]
fn a_breaker_cancels_the_round_and_continuing_runs_it_again() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let old = h.task.round;
    h.ok(Input::BreakerTripped);
    assert!(
        h.step(Input::ChecksFinished {
            round: old,
            results: h.results(&[true]),
            head: None
        })
        .is_err()
    );
    let d = h.ok(Input::Continued);
    assert_eq!(event_names(&d), ["continued", "verification_started"]);
    assert_eq!(h.task.round, old + 1);
    h.assert_fold();
}

#[test]
fn the_decider_is_asked_only_in_hybrid_or_decider_authority_and_never_under_a_takeover() {
    for (authority, takeover, asks) in [
        (Authority::Hybrid, false, true),
        (Authority::Decider, false, true),
        (Authority::Policy, false, false),
        (Authority::Hybrid, true, false),
    ] {
        let mut s = spec(&["make"], None);
        s.decider = Some(DeciderSpec {
            agent: "dec".into(),
            authority,
            timeout_secs: None,
        });
        let mut h = H::new(s);
        h.ok(Input::Launched);
        if takeover {
            h.ok(Input::HumanTookOver {
                source: TakeoverSource::Keys,
            });
        }
        let d = h.ok(Input::DialogHeld {
            dialog: "h-4".into(),
            question: "git push --force?".into(),
        });
        assert_eq!(
            d.effects.iter().any(|e| matches!(e, Effect::AskDecider { .. })),
            asks,
            "{authority:?} {takeover}"
        );
        assert_eq!(h.step(Input::DeciderTimedOut { dialog: "h-4".into() }).is_ok(), asks);
    }
}

#[test]
fn evidence_is_bounded() {
    let cmds: Vec<String> = (0..100).map(|i| format!("check {i}")).collect();
    let refs: Vec<&str> = cmds.iter().map(String::as_str).collect();
    let mut h = H::new(spec(&refs, None));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    let results: Vec<CheckOutcome> = cmds
        .iter()
        .map(|c| CheckOutcome {
            command: c.clone(),
            exit_code: Some(2),
            output_tail: "é".repeat(10_000),
            ms: 1,
        })
        .collect();
    let d = h.ok(Input::ChecksFinished {
        round: h.task.round,
        results,
        head: None,
    });
    assert!(
        h.task
            .checks
            .iter()
            .all(|c| c.output_tail.len() <= MAX_OUTPUT_TAIL_BYTES)
    );
    let text = repair_text(&d.effects);
    assert!(text.len() <= MAX_REPAIR_BYTES, "{} bytes", text.len());
    assert!(text.contains("more failed commands not shown"), "cut with a count");
    assert!(text.contains("Repair round 1"), "the footer survives the cut");
}

#[test]
fn task_get_object_has_the_api_fields() {
    let mut h = H::new(spec(&["make"], Some("rev")));
    h.ok(Input::Launched);
    h.ok(Input::TurnEnded);
    h.checks(&[true]);
    h.verdict(Verdict::Approve, "fine");
    let v = serde_json::to_value(TaskObject::from(&h.task)).expect("encode");
    for key in [
        "id",
        "agent",
        "conversation",
        "goal",
        "state",
        "branch",
        "baseline",
        "head",
        "repairs",
        "max_repairs",
        "checks",
        "review",
        "deadline",
        "phases",
        "created_at",
        "human_takeover",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert!(v.get("ended_at").is_none() && v.get("reason").is_none(), "{v}");
    assert_eq!(v["state"], "verifying");
    assert_eq!(v["baseline"], BASELINE);
    assert_eq!(v["head"], HEAD);
    assert_eq!(v["checks"][0]["command"], "make");
    assert_eq!(v["checks"][0]["exit_code"], 0);
    assert_eq!(v["review"]["verdict"], "approve");
    assert_eq!(v["review"]["agent"], "rev");
    let phases: Vec<&str> = v["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .filter_map(|p| p["phase"].as_str())
        .collect();
    assert_eq!(
        phases,
        [
            "started",
            "running",
            "verifying",
            "checks_passed",
            "reviewing",
            "review_approved",
            "committing"
        ]
    );
    h.commit_done();
    let v = serde_json::to_value(TaskObject::from(&h.task)).expect("encode");
    assert_eq!(v["state"], "completed");
    assert!(v["ended_at"].is_u64());
}

#[test]
fn waiting_and_paused_say_why() {
    let mut h = H::new(spec(&["make"], None));
    h.ok(Input::Launched);
    h.ok(Input::DialogHeld {
        dialog: "h-1".into(),
        question: "allow curl?".into(),
    });
    let o = TaskObject::from(&h.task);
    assert_eq!(
        (o.state, o.reason.as_deref()),
        (TaskState::Waiting, Some("a dialog is held: allow curl?"))
    );
    h.ok(Input::BreakerTripped);
    let o = TaskObject::from(&h.task);
    assert_eq!(
        (o.state, o.reason.as_deref()),
        (TaskState::Paused, Some("a monitor's breaker tripped"))
    );
}
