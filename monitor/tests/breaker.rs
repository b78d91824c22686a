//! The circuit breaker: human-less ping-pong, the human reset, the rate
//! backstop, absorbing trips, rearm, replay.

use monitor::{Breaker, BreakerConfig, BreakerEvent, BreakerState, Refused, TripReason, apply};

const MIN: u64 = 60_000;

fn config(max_cycles: u32, max_wakes: u32, window_mins: u32) -> BreakerConfig {
    BreakerConfig {
        max_cycles,
        max_wakes,
        window_mins,
    }
}

fn tripped_events(events: &[BreakerEvent]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e, BreakerEvent::Tripped { .. }))
        .count()
}

#[test]
fn a_ping_pong_trips_after_exactly_max_cycles() {
    for max in [1, 2, 5, 7] {
        let mut b = Breaker::new(config(max, 1000, 10));
        let mut log = vec![];
        for cycle in 1..=max {
            let now = u64::from(cycle) * 1000;
            log.extend(b.on_wake(now).expect("wake allowed"));
            let events = b.on_inject(now + 1).expect("inject allowed");
            let trips = tripped_events(&events);
            log.extend(events);
            assert_eq!(trips == 1, cycle == max, "max {max}: cycle {cycle}");
            assert_eq!(b.state().cycles, cycle);
        }
        let tripped = b.state().tripped.expect("tripped");
        assert_eq!(
            tripped.reason,
            TripReason::Cycles {
                cycles: max,
                max_cycles: max
            }
        );
        assert_eq!(b.on_wake(1_000_000), Err(Refused::Tripped), "no more wakes");
        assert_eq!(b.on_inject(1_000_000), Err(Refused::Tripped), "no more injects");
        assert_eq!(tripped_events(&log), 1, "reported once");
        assert_eq!(&BreakerState::replay(b.state().config, &log), b.state());
    }
}

#[test]
fn a_human_message_in_between_resets_the_count() {
    let mut b = Breaker::new(config(5, 1000, 10));
    let mut now = 0;
    let cycle = |b: &mut Breaker, now: &mut u64| {
        *now += 1000;
        b.on_wake(*now).unwrap();
        b.on_inject(*now + 1).unwrap()
    };
    for _ in 0..4 {
        assert_eq!(tripped_events(&cycle(&mut b, &mut now)), 0);
    }
    assert_eq!(b.state().cycles, 4);
    assert_eq!(b.on_human_message(now), vec![BreakerEvent::HumanMessage { at: now }]);
    assert_eq!(b.state().cycles, 0);
    assert!(b.on_human_message(now).is_empty(), "nothing to reset: nothing stored");
    for i in 1..=5 {
        let trips = tripped_events(&cycle(&mut b, &mut now));
        assert_eq!(trips == 1, i == 5, "after the reset, cycle {i}");
    }
    assert!(b.is_tripped());
}

#[test]
fn only_a_wake_then_an_inject_is_a_cycle() {
    let mut b = Breaker::new(config(2, 1000, 10));
    b.on_inject(1).unwrap(); // advice with no wake (a human-continued monitor conversation)
    assert_eq!(b.state().cycles, 0);
    b.on_wake(2).unwrap();
    b.on_wake(3).unwrap(); // a wake that stayed silent, then another
    assert_eq!(b.state().cycles, 0, "silent wakes complete no cycle");
    b.on_inject(4).unwrap();
    b.on_inject(5).unwrap(); // a second advice within the same wake
    assert_eq!(b.state().cycles, 1);
    b.on_wake(6).unwrap();
    let events = b.on_inject(7).unwrap();
    assert_eq!(tripped_events(&events), 1);
    assert_eq!(b.state().cycles, 2);
}

#[test]
fn the_rate_backstop() {
    let mut b = Breaker::new(config(100, 3, 10));
    for t in [0, MIN, 2 * MIN] {
        assert_eq!(b.on_wake(t), Ok(vec![BreakerEvent::Woke { at: t }]));
    }
    // a 4th wake within 10 minutes of the first trips instead of waking
    match b.on_wake(9 * MIN) {
        Err(Refused::Trips(events)) => assert_eq!(
            events,
            vec![BreakerEvent::Tripped {
                at: 9 * MIN,
                reason: TripReason::Rate {
                    max_wakes: 3,
                    window_mins: 10
                }
            }]
        ),
        other => panic!("expected a trip, got {other:?}"),
    }
    assert!(b.is_tripped());
    assert_eq!(b.on_wake(100 * MIN), Err(Refused::Tripped), "reported once");
    // a slower pace never trips
    let mut b = Breaker::new(config(100, 3, 10));
    for i in 0..100 {
        assert!(b.on_wake(i * 4 * MIN).is_ok(), "wake {i}");
    }
    // exactly the window apart: the first wake has left it
    let mut b = Breaker::new(config(100, 3, 10));
    for t in [0, 1, 2, 10 * MIN] {
        assert!(b.on_wake(t).is_ok(), "{t}");
    }
    assert!(b.state().recent_wakes.len() <= 3, "history is bounded");
}

#[test]
fn tripped_is_absorbing_until_rearm() {
    let mut b = Breaker::new(config(1, 1000, 10));
    b.on_wake(1).unwrap();
    let events = b.on_inject(2).unwrap();
    assert_eq!(tripped_events(&events), 1);
    let tripped = b.state().tripped.unwrap();
    assert_eq!(tripped.at, 2);
    assert!(b.on_human_message(3).is_empty(), "a human message is not a rearm");
    assert!(b.is_tripped());
    assert_eq!(b.on_wake(4), Err(Refused::Tripped));
    assert_eq!(b.on_inject(5), Err(Refused::Tripped));
    assert_eq!(b.rearm(6), vec![BreakerEvent::Rearmed { at: 6 }]);
    assert!(!b.is_tripped());
    assert_eq!(b.state(), &BreakerState::new(config(1, 1000, 10)), "counts reset");
    assert!(b.rearm(7).is_empty(), "rearming an armed breaker does nothing");
    b.on_wake(8).unwrap();
    assert_eq!(
        tripped_events(&b.on_inject(9).unwrap()),
        1,
        "trips again, reported again"
    );
}

#[test]
fn decide_then_apply_is_the_same_as_the_breaker() {
    let c = config(3, 4, 10);
    let mut state = BreakerState::new(c);
    for e in state.decide_wake(1).unwrap() {
        apply(&mut state, &e);
    }
    for e in state.decide_inject(2).unwrap() {
        apply(&mut state, &e);
    }
    let mut b = Breaker::new(c);
    b.on_wake(1).unwrap();
    b.on_inject(2).unwrap();
    assert_eq!(&state, b.state());
    // the state and the events round-trip through JSON (the node stores them)
    let json = serde_json::to_string(&state).unwrap();
    assert_eq!(serde_json::from_str::<BreakerState>(&json).unwrap(), state);
    let e = BreakerEvent::Tripped {
        at: 5,
        reason: TripReason::Cycles {
            cycles: 3,
            max_cycles: 3,
        },
    };
    let v = serde_json::to_value(&e).unwrap();
    assert_eq!(
        v,
        serde_json::json!({ "kind": "tripped", "at": 5, "reason": { "kind": "cycles", "cycles": 3, "max_cycles": 3 } })
    );
    assert_eq!(serde_json::from_value::<BreakerEvent>(v).unwrap(), e);
    assert_eq!(
        TripReason::Rate {
            max_wakes: 20,
            window_mins: 10
        }
        .to_string(),
        "more than 20 wakes within 10 minutes (rate backstop)"
    );
}
