//! Property tests over arbitrary input sequences (including restarts, stale results,
//! takeovers and deadlines): completion needs passing checks and an approval after the
//! last repair; one ending at most; repairs bounded; replaying the log gives the live task.

mod common;

use common::{H, HEAD};
use proptest::prelude::*;
use tasks::state::{TakeoverSource, Verdict};
use tasks::{Authority, DeciderSpec, Effect, Input, ReviewSpec, TaskEvent, TaskSpec};

/// An input, resolved against the task when it is fed (so rounds can be current or stale).
#[derive(Debug, Clone)]
enum A {
    Launched,
    LaunchFailed,
    TurnEnded,
    WorkerExited,
    Checks {
        pass: Vec<bool>,
        stale: bool,
    },
    Verdict {
        approve: bool,
        stale: bool,
    },
    ReviewFailed,
    CommitDone {
        stale: bool,
    },
    CommitFailed,
    Takeover,
    ResumeAuto,
    Stop,
    Tick {
        ms: u64,
    },
    Recover {
        secs: u64,
    },
    Discard,
    BudgetWaiting,
    BudgetResumed,
    DialogHeld {
        id: u64,
    },
    DialogAnswered {
        id: u64,
    },
    DeciderTimedOut {
        id: u64,
    },
    Breaker,
    ConversationPaused,
    Continued,
    Restart,
    /// What the happy path would do next, with `pass` deciding checks and verdicts.
    Next {
        pass: bool,
    },
}

fn arb_input() -> impl Strategy<Value = A> {
    prop_oneof![
        40 => Just(A::Launched),
        1 => Just(A::LaunchFailed),
        48 => Just(A::TurnEnded),
        3 => Just(A::WorkerExited),
        60 => (prop::collection::vec(prop::bool::weighted(0.7), 0..4), prop::bool::weighted(0.15))
            .prop_map(|(pass, stale)| A::Checks { pass, stale }),
        36 => (prop::bool::weighted(0.6), prop::bool::weighted(0.15)).prop_map(|(approve, stale)| A::Verdict { approve, stale }),
        1 => Just(A::ReviewFailed),
        30 => prop::bool::weighted(0.2).prop_map(|stale| A::CommitDone { stale }),
        1 => Just(A::CommitFailed),
        12 => Just(A::Takeover),
        12 => Just(A::ResumeAuto),
        1 => Just(A::Stop),
        24 => prop_oneof![0u64..60_000, 0u64..1_000_000].prop_map(|ms| A::Tick { ms }),
        12 => (0u64..900).prop_map(|secs| A::Recover { secs }),
        1 => Just(A::Discard),
        12 => Just(A::BudgetWaiting),
        12 => Just(A::BudgetResumed),
        12 => (1u64..3).prop_map(|id| A::DialogHeld { id }),
        12 => (1u64..3).prop_map(|id| A::DialogAnswered { id }),
        1 => (1u64..3).prop_map(|id| A::DeciderTimedOut { id }),
        12 => Just(A::Breaker),
        6 => Just(A::ConversationPaused),
        18 => Just(A::Continued),
        18 => Just(A::Restart),
        120 => prop::bool::weighted(0.6).prop_map(|pass| A::Next { pass }),
    ]
}

fn arb_spec() -> impl Strategy<Value = TaskSpec> {
    (0usize..4, any::<bool>(), any::<bool>(), 0u32..4, 60u64..900).prop_map(|(n, review, decider, max, secs)| {
        TaskSpec {
            agent: "worker".into(),
            goal: "goal".into(),
            acceptance: (0..n).map(|i| format!("check {i}")).collect(),
            review: (review || n == 0).then(|| ReviewSpec { agent: "rev".into() }),
            decider: decider.then(|| DeciderSpec {
                agent: "dec".into(),
                authority: Authority::Hybrid,
                timeout_secs: None,
            }),
            max_repairs: Some(max),
            deadline_secs: Some(secs),
        }
    })
}

fn resolve(h: &mut H, a: &A) -> Input {
    use tasks::state::{Stage, VerifyStage};
    let a = &match (a, h.task.stage) {
        (A::Next { .. }, Stage::Starting) => A::Launched,
        (A::Next { .. }, Stage::Working) if h.task.holds.paused() => A::Continued,
        (A::Next { .. }, Stage::Working) => A::TurnEnded,
        (A::Next { pass }, Stage::Verifying(VerifyStage::Checks)) => A::Checks {
            pass: vec![*pass],
            stale: false,
        },
        (A::Next { pass }, Stage::Verifying(VerifyStage::Review)) => A::Verdict {
            approve: *pass,
            stale: false,
        },
        (A::Next { .. }, Stage::Verifying(VerifyStage::Commit)) => A::CommitDone { stale: false },
        (A::Next { .. }, Stage::Ended(_)) => A::Tick { ms: 1000 },
        (other, _) => other.clone(),
    };
    let round = |stale: bool| {
        if stale {
            h.task.round.saturating_sub(1)
        } else {
            h.task.round
        }
    };
    match a.clone() {
        A::Launched => Input::Launched,
        A::LaunchFailed => Input::LaunchFailed { reason: "x".into() },
        A::TurnEnded => Input::TurnEnded,
        A::WorkerExited => Input::WorkerExited { reason: "x".into() },
        A::Checks { pass, stale } => {
            // Results for however many commands the mask covers (the rest: a pass).
            let n = h.task.acceptance.len();
            let mut mask: Vec<bool> = pass.iter().copied().chain(std::iter::repeat(true)).take(n).collect();
            if pass.len() < n && pass.last() == Some(&false) {
                mask.truncate(pass.len());
            }
            Input::ChecksFinished {
                round: round(stale),
                results: h.results(&mask),
                head: Some(HEAD.into()),
            }
        }
        A::Verdict { approve, stale } => Input::ReviewVerdict {
            round: round(stale),
            verdict: if approve { Verdict::Approve } else { Verdict::Reject },
            notes: "n".into(),
        },
        A::ReviewFailed => Input::ReviewFailed {
            round: round(false),
            reason: "x".into(),
        },
        A::CommitDone { stale } => Input::CommitDone {
            round: round(stale),
            head: HEAD.into(),
        },
        A::CommitFailed => Input::CommitFailed {
            round: round(false),
            reason: "x".into(),
        },
        A::Takeover => Input::HumanTookOver {
            source: TakeoverSource::Keys,
        },
        A::ResumeAuto => Input::ResumeAuto,
        A::Stop => Input::StopAsked,
        A::Tick { ms } => {
            h.advance(ms);
            Input::Tick
        }
        A::Recover { secs } => Input::Recover { extend_secs: secs },
        A::Discard => Input::Discard,
        A::BudgetWaiting => Input::BudgetWaiting,
        A::BudgetResumed => Input::BudgetResumed,
        A::DialogHeld { id } => Input::DialogHeld {
            dialog: format!("h-{id}"),
            question: "q".into(),
        },
        A::DialogAnswered { id } => Input::DialogAnswered {
            dialog: format!("h-{id}"),
        },
        A::DeciderTimedOut { id } => Input::DeciderTimedOut {
            dialog: format!("h-{id}"),
        },
        A::Breaker => Input::BreakerTripped,
        A::ConversationPaused => Input::ConversationPaused,
        A::Continued => Input::Continued,
        A::Restart => Input::NodeRestarted,
        A::Next { .. } => Input::Tick,
    }
}

fn is_ending(e: &TaskEvent) -> bool {
    matches!(e, TaskEvent::Completed { .. } | TaskEvent::Ended { .. })
}

/// (a): the round that was committed had all checks passing and (when asked) an
/// approval, both after the last repair round.
fn assert_completion_was_earned(h: &H) {
    let log: Vec<&TaskEvent> = h.log.iter().map(|(e, _)| e).collect();
    let Some(done) = log.iter().position(|e| matches!(e, TaskEvent::Completed { .. })) else {
        return;
    };
    let committed = log[..done].iter().rev().find_map(|e| match e {
        TaskEvent::CommitStarted { round } => Some(*round),
        _ => None,
    });
    let round = committed.expect("a commit was started before completion");
    let last_repair = log[..done]
        .iter()
        .rposition(|e| matches!(e, TaskEvent::RepairSent { .. } | TaskEvent::RepairHeld { .. }));
    let after = &log[last_repair.map_or(0, |i| i + 1)..done];
    if !h.task.acceptance.is_empty() {
        let passed = after.iter().any(|e| match e {
            TaskEvent::ChecksFinished { round: r, checks, .. } => {
                *r == round && checks.len() == h.task.acceptance.len() && checks.iter().all(|c| c.exit_code == Some(0))
            }
            _ => false,
        });
        assert!(passed, "completed without passing checks in round {round}: {log:#?}");
    }
    if h.task.review.is_some() {
        let approved = after
            .iter()
            .any(|e| matches!(e, TaskEvent::ReviewVerdict { round: r, verdict: Verdict::Approve, .. } if *r == round));
        assert!(approved, "completed without an approval in round {round}: {log:#?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_for_any_sequence(spec in arb_spec(), inputs in prop::collection::vec(arb_input(), 0..80)) {
        let mut h = H::new(spec);
        let mut ended = false;
        for a in &inputs {
            let input = resolve(&mut h, a);
            let was_terminal = h.task.is_terminal();
            let r = h.step(input);
            if was_terminal {
                // (b) after an ending, nothing is recorded or done.
                prop_assert!(r.as_ref().map_or(true, |d| d.is_noop()), "{:?}", r);
            }
            if let Ok(d) = &r {
                // (d) repairs stay within max_repairs.
                prop_assert!(h.task.repairs <= h.task.max_repairs);
                // No automatic message to the worker while a human has it.
                if h.task.takeover.is_some() {
                    prop_assert!(!d.effects.iter().any(|e| matches!(e, Effect::SendRepair { .. } | Effect::SendNotice { .. })), "{:?}", d);
                }
                let endings = d.events.iter().filter(|e| is_ending(e)).count();
                prop_assert!(endings <= 1);
                if endings == 1 {
                    prop_assert!(!ended, "a second ending");
                    prop_assert!(is_ending(d.events.last().expect("events")), "the ending is the last event");
                    ended = true;
                }
            }
        }
        // (b)/(c) at most one ending, hence at most one completion, in the whole log.
        let endings = h.log.iter().filter(|(e, _)| is_ending(e)).count();
        prop_assert!(endings <= 1);
        prop_assert_eq!(endings == 1, h.task.is_terminal());
        let repairs = h.log.iter().filter(|(e, _)| matches!(e, TaskEvent::RepairSent { .. } | TaskEvent::RepairHeld { .. })).count();
        prop_assert!(repairs as u32 <= h.task.max_repairs);
        assert_completion_was_earned(&h);
        // (e) fold == live, through JSON.
        h.assert_fold();
    }

    /// (a) sharpened: only worker-side inputs (turns, exits, takeovers, restarts, time)
    /// and failing or absent verdicts can never complete a task.
    #[test]
    fn worker_side_inputs_alone_never_complete(spec in arb_spec(), inputs in prop::collection::vec(arb_input(), 0..80)) {
        let mut h = H::new(spec);
        for a in &inputs {
            let a = match a {
                A::Checks { pass, stale } => A::Checks { pass: pass.iter().map(|_| false).chain([false]).collect(), stale: *stale },
                A::Verdict { stale, .. } => A::Verdict { approve: false, stale: *stale },
                A::Next { .. } => A::Next { pass: false },
                other => other.clone(),
            };
            let input = resolve(&mut h, &a);
            let _ = h.step(input);
            prop_assert!(!matches!(h.task.state(), tasks::TaskState::Completed));
        }
        h.assert_fold();
    }
}
