//! The per-attachment circuit breaker: human-less wake->inject cycles and a
//! wake-rate backstop, as an event-sourced state machine.
//!
//! `decide_*` read a [`BreakerState`] and return the events a step produces
//! (or why it is refused); [`apply`] folds an event in. The node stores the
//! events and folds them after the commit, so `BreakerState::replay(config,
//! stored events)` is the live state. [`Breaker`] does both at once for
//! callers that need no commit in between.
//!
//! Tripped is absorbing: no wake, no injection (and, in [`crate::Watch`], no
//! evaluation) until a human re-arms it; nothing resets it on its own. A
//! `Tripped` event is produced once per trip: the node turns each one it
//! stores into `event.monitor.tripped` plus one needs-you.

use std::collections::VecDeque;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::attachment::BreakerConfig;

/// A stored fact about one attachment's breaker. Times are unix ms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BreakerEvent {
    /// The monitor was woken (a trigger message is going to it).
    Woke {
        at: u64,
    },
    /// The monitor's advice was injected into the target.
    Injected {
        at: u64,
    },
    /// A human spoke in the target conversation (stored only when it resets a
    /// non-zero cycle count).
    HumanMessage {
        at: u64,
    },
    Tripped {
        at: u64,
        reason: TripReason,
    },
    /// A human re-armed the breaker.
    Rearmed {
        at: u64,
    },
}

/// Why the breaker tripped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TripReason {
    /// `cycles` wake->inject cycles completed with no human message in the
    /// target conversation (`cycles == max_cycles`).
    Cycles { cycles: u32, max_cycles: u32 },
    /// A wake beyond `max_wakes` within `window_mins` was refused.
    Rate { max_wakes: u32, window_mins: u32 },
}

impl fmt::Display for TripReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TripReason::Cycles { cycles, max_cycles } => write!(
                f,
                "{cycles} wake->inject cycles without a human message in the target (limit {max_cycles})"
            ),
            TripReason::Rate { max_wakes, window_mins } => write!(
                f,
                "more than {max_wakes} wakes within {window_mins} minutes (rate backstop)"
            ),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tripped {
    pub at: u64,
    pub reason: TripReason,
}

/// Why a wake or an injection may not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The breaker is tripped already: nothing to store, nothing to report.
    Tripped,
    /// This wake would break the rate backstop, so the breaker trips now:
    /// store these events (one `Tripped`) and report the trip.
    Trips(Vec<BreakerEvent>),
}

/// One attachment's breaker: its thresholds and the fold of its events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerState {
    pub config: BreakerConfig,
    /// Completed wake->inject cycles since the last human message.
    pub cycles: u32,
    /// A wake happened whose cycle no injection has completed yet.
    pub wake_open: bool,
    /// The latest wakes (at most `max_wakes` of them), oldest first.
    pub recent_wakes: VecDeque<u64>,
    pub tripped: Option<Tripped>,
}

impl BreakerState {
    /// Armed, no cycles, no wakes.
    pub fn new(config: BreakerConfig) -> BreakerState {
        BreakerState {
            config,
            cycles: 0,
            wake_open: false,
            recent_wakes: VecDeque::new(),
            tripped: None,
        }
    }

    /// The state after these events, from armed.
    pub fn replay<'e>(config: BreakerConfig, events: impl IntoIterator<Item = &'e BreakerEvent>) -> BreakerState {
        let mut state = BreakerState::new(config);
        for e in events {
            apply(&mut state, e);
        }
        state
    }

    pub fn is_tripped(&self) -> bool {
        self.tripped.is_some()
    }

    /// Wakes within the window ending at `now`.
    pub fn wakes_within_window(&self, now: u64) -> usize {
        let window = self.config.window_ms();
        self.recent_wakes
            .iter()
            .filter(|&&t| now.saturating_sub(t) < window)
            .count()
    }

    /// May the monitor be woken now? Refused when tripped, and trips (rate
    /// backstop) when `max_wakes` wakes already fall within the window.
    pub fn decide_wake(&self, now: u64) -> Result<Vec<BreakerEvent>, Refused> {
        if self.is_tripped() {
            return Err(Refused::Tripped);
        }
        if self.wakes_within_window(now) >= self.config.max_wakes as usize {
            return Err(Refused::Trips(vec![BreakerEvent::Tripped {
                at: now,
                reason: TripReason::Rate {
                    max_wakes: self.config.max_wakes,
                    window_mins: self.config.window_mins,
                },
            }]));
        }
        Ok(vec![BreakerEvent::Woke { at: now }])
    }

    /// May the monitor's advice be injected now? Refused when tripped. The
    /// first injection after a wake completes a cycle; the one that brings
    /// the count to `max_cycles` is still delivered and trips the breaker
    /// (the events then end with `Tripped`). Further injections within the
    /// same wake complete no new cycle.
    pub fn decide_inject(&self, now: u64) -> Result<Vec<BreakerEvent>, Refused> {
        if self.is_tripped() {
            return Err(Refused::Tripped);
        }
        let mut events = vec![BreakerEvent::Injected { at: now }];
        let cycles = self.cycles.saturating_add(1);
        if self.wake_open && cycles >= self.config.max_cycles {
            events.push(BreakerEvent::Tripped {
                at: now,
                reason: TripReason::Cycles {
                    cycles,
                    max_cycles: self.config.max_cycles,
                },
            });
        }
        Ok(events)
    }

    /// A human message in the target conversation resets the cycle count.
    /// Produces an event only when that changes something (and never while
    /// tripped: only a re-arm clears a trip).
    pub fn decide_human_message(&self, now: u64) -> Vec<BreakerEvent> {
        if self.is_tripped() || self.cycles == 0 {
            return Vec::new();
        }
        vec![BreakerEvent::HumanMessage { at: now }]
    }

    /// A human re-arms a tripped breaker: counts and wake history reset.
    /// Nothing to do when armed.
    pub fn decide_rearm(&self, now: u64) -> Vec<BreakerEvent> {
        if self.is_tripped() {
            vec![BreakerEvent::Rearmed { at: now }]
        } else {
            Vec::new()
        }
    }
}

/// Fold one event into the state.
pub fn apply(state: &mut BreakerState, event: &BreakerEvent) {
    match *event {
        BreakerEvent::Woke { at } => {
            state.recent_wakes.push_back(at);
            while state.recent_wakes.len() > state.config.max_wakes as usize {
                state.recent_wakes.pop_front();
            }
            state.wake_open = true;
        }
        BreakerEvent::Injected { .. } => {
            if state.wake_open {
                state.cycles = state.cycles.saturating_add(1);
                state.wake_open = false;
            }
        }
        BreakerEvent::HumanMessage { .. } => state.cycles = 0,
        BreakerEvent::Tripped { at, reason } => {
            state.tripped = Some(Tripped { at, reason });
            state.wake_open = false;
        }
        BreakerEvent::Rearmed { .. } => {
            state.cycles = 0;
            state.wake_open = false;
            state.recent_wakes.clear();
            state.tripped = None;
        }
    }
}

/// A [`BreakerState`] that applies its own decisions at once. Each method
/// returns the events to store (the node reports every `Tripped` among them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Breaker {
    state: BreakerState,
}

impl Breaker {
    pub fn new(config: BreakerConfig) -> Breaker {
        Breaker {
            state: BreakerState::new(config),
        }
    }

    pub fn from_state(state: BreakerState) -> Breaker {
        Breaker { state }
    }

    pub fn state(&self) -> &BreakerState {
        &self.state
    }

    pub fn is_tripped(&self) -> bool {
        self.state.is_tripped()
    }

    pub fn on_wake(&mut self, now: u64) -> Result<Vec<BreakerEvent>, Refused> {
        match self.state.decide_wake(now) {
            Ok(events) => Ok(self.fold(events)),
            Err(Refused::Trips(events)) => Err(Refused::Trips(self.fold(events))),
            Err(Refused::Tripped) => Err(Refused::Tripped),
        }
    }

    pub fn on_inject(&mut self, now: u64) -> Result<Vec<BreakerEvent>, Refused> {
        let events = self.state.decide_inject(now)?;
        Ok(self.fold(events))
    }

    pub fn on_human_message(&mut self, now: u64) -> Vec<BreakerEvent> {
        let events = self.state.decide_human_message(now);
        self.fold(events)
    }

    pub fn rearm(&mut self, now: u64) -> Vec<BreakerEvent> {
        let events = self.state.decide_rearm(now);
        self.fold(events)
    }

    fn fold(&mut self, events: Vec<BreakerEvent>) -> Vec<BreakerEvent> {
        for e in &events {
            apply(&mut self.state, e);
        }
        events
    }
}
