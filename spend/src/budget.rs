//! Per-agent spend-rate budgets (seed 002 section 5, issue 13 item 5), pure:
//! a token bucket of micro-dollars that accrues at `usd_per_hour` up to
//! `burst_usd`, is charged as each turn's usage is recorded, and decides
//! whether the agent's conversation may take its next step ("wait, then ask").
//!
//! State is a fold over [`BudgetEvent`]s ([`apply`]); the node stores one
//! event per fact and per decision, and replays them at start-up.
//!
//! Rules (decided):
//! - Amounts are integer micro-dollars; time is unix ms. The level is kept
//!   scaled by [`MS_PER_HOUR`] (micro-dollar-milliseconds per hour) so
//!   accrual is exact: no float drift, whatever the tick.
//! - Accrual never lifts the level above `burst`; a level already above it
//!   (after a top-up) stays until it is spent.
//! - A charge may take the level below zero: usage is known only after the
//!   request was made. Charges are never dropped or capped.
//! - A top-up adds exactly what was asked, even past `burst`.
//! - `set` first accrues at the old rate up to now, then changes rate and
//!   burst; when the burst shrinks the level is clamped to the new burst. A
//!   bucket set for the first time starts full.
//! - The bucket covers the next step while the level is above
//!   [`LOW_WATER_MICROS`]. Once it waits, it resumes only when the level is
//!   back to the resume level (a tenth of the burst, at least one
//!   micro-dollar), so a conversation does not flap between waiting and
//!   running on every request.
//! - When that takes longer than the max wait (or the rate is zero, or the
//!   burst is below the resume level) the bucket is exhausted: accrual will
//!   not do, a human must top up, raise the rate, or stop.

/// Micro-dollars per dollar.
pub const MICROS_PER_USD: i64 = 1_000_000;
/// Milliseconds per hour: the rate's time unit.
pub const MS_PER_HOUR: i64 = 3_600_000;
/// The next step is covered while the level is above this.
pub const LOW_WATER_MICROS: i64 = 0;
/// The default longest wait for accrual before asking a human (15 minutes).
pub const DEFAULT_MAX_WAIT_MS: u64 = 15 * 60 * 1000;
/// The largest amount (rate, burst, top-up) accepted, in dollars.
pub const MAX_USD: f64 = 1_000_000.0;

/// Dollars (as given by a client) to micro-dollars. `None` when not a finite
/// number in `0..=MAX_USD`.
pub fn usd_to_micros(usd: f64) -> Option<i64> {
    if !usd.is_finite() || !(0.0..=MAX_USD).contains(&usd) {
        return None;
    }
    Some((usd * MICROS_PER_USD as f64).round() as i64)
}

/// Micro-dollars to dollars, for display.
pub fn micros_to_usd(micros: i64) -> f64 {
    micros as f64 / MICROS_PER_USD as f64
}

/// A token bucket of micro-dollars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub micros_per_hour: i64,
    pub burst_micros: i64,
    /// The level at `at_ms`, scaled by [`MS_PER_HOUR`].
    level_scaled: i128,
    pub at_ms: u64,
}

impl Bucket {
    /// A full bucket.
    pub fn full(micros_per_hour: i64, burst_micros: i64, at_ms: u64) -> Bucket {
        Bucket {
            micros_per_hour: micros_per_hour.max(0),
            burst_micros: burst_micros.max(0),
            level_scaled: i128::from(burst_micros.max(0)) * i128::from(MS_PER_HOUR),
            at_ms,
        }
    }

    fn burst_scaled(&self) -> i128 {
        i128::from(self.burst_micros) * i128::from(MS_PER_HOUR)
    }

    /// Accrues up to `now_ms` (a time before `at_ms` changes nothing).
    pub fn accrue(&mut self, now_ms: u64) {
        if now_ms <= self.at_ms {
            return;
        }
        let dt = i128::from(now_ms - self.at_ms);
        let cap = self.burst_scaled();
        if self.level_scaled < cap {
            let gained = dt * i128::from(self.micros_per_hour);
            self.level_scaled = (self.level_scaled + gained).min(cap);
        }
        self.at_ms = now_ms;
    }

    /// The level at `now_ms`, in micro-dollars (rounded down).
    pub fn level_at(&self, now_ms: u64) -> i64 {
        let mut b = *self;
        b.accrue(now_ms);
        b.level_micros()
    }

    /// The level at `at_ms`, in micro-dollars (rounded down).
    pub fn level_micros(&self) -> i64 {
        let v = self.level_scaled.div_euclid(i128::from(MS_PER_HOUR));
        i64::try_from(v).unwrap_or(if v < 0 { i64::MIN } else { i64::MAX })
    }

    /// Takes `micros` (may go below zero).
    pub fn charge(&mut self, micros: i64, now_ms: u64) {
        self.accrue(now_ms);
        self.level_scaled -= i128::from(micros.max(0)) * i128::from(MS_PER_HOUR);
    }

    /// Adds `micros` in full (may go above the burst).
    pub fn top_up(&mut self, micros: i64, now_ms: u64) {
        self.accrue(now_ms);
        self.level_scaled += i128::from(micros.max(0)) * i128::from(MS_PER_HOUR);
    }

    /// New rate and burst, keeping what accrued at the old rate.
    pub fn set(&mut self, micros_per_hour: i64, burst_micros: i64, now_ms: u64) {
        self.accrue(now_ms);
        let shrinks = burst_micros < self.burst_micros;
        self.micros_per_hour = micros_per_hour.max(0);
        self.burst_micros = burst_micros.max(0);
        if shrinks {
            self.level_scaled = self.level_scaled.min(self.burst_scaled());
        }
    }

    /// The level a waiting bucket resumes at.
    pub fn resume_micros(&self) -> i64 {
        (self.burst_micros / 10).max(LOW_WATER_MICROS + 1)
    }

    /// Milliseconds (from `at_ms`, after accrual to it) until the level is at
    /// least `target` micro-dollars; `None` when accrual never gets there.
    fn ms_until(&self, target: i64) -> Option<u64> {
        let target_scaled = i128::from(target) * i128::from(MS_PER_HOUR);
        if self.level_scaled >= target_scaled {
            return Some(0);
        }
        if self.micros_per_hour <= 0 || target > self.burst_micros {
            return None;
        }
        let need = target_scaled - self.level_scaled;
        let rate = i128::from(self.micros_per_hour);
        u64::try_from((need + rate - 1) / rate).ok()
    }
}

/// Where an agent's budget stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Phase {
    #[default]
    Ok,
    /// Waiting for accrual; re-decided at `until_ms`.
    Waiting { until_ms: u64 },
    /// Accrual will not do: a human was asked.
    Exhausted,
}

impl Phase {
    pub fn as_str(&self) -> &'static str {
        match self {
            Phase::Ok => "ok",
            Phase::Waiting { .. } => "waiting",
            Phase::Exhausted => "exhausted",
        }
    }
}

/// What the bucket says about the next step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Ok,
    Wait { retry_after_ms: u64 },
    Exhausted,
}

/// One stored budget fact, at its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetEvent {
    pub at_ms: u64,
    pub fact: Fact,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fact {
    Set { micros_per_hour: i64, burst_micros: i64 },
    ToppedUp { micros: i64 },
    Charged { micros: i64 },
    Waiting { retry_after_ms: u64 },
    Resumed,
    Exhausted,
}

/// One agent's budget: none (never charged, never blocked), or a bucket and
/// where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BudgetState {
    pub bucket: Option<Bucket>,
    pub phase: Phase,
}

/// Folds one event into the state.
pub fn apply(s: &mut BudgetState, e: &BudgetEvent) {
    let now = e.at_ms;
    match e.fact {
        Fact::Set {
            micros_per_hour,
            burst_micros,
        } => match &mut s.bucket {
            Some(b) => b.set(micros_per_hour, burst_micros, now),
            None => s.bucket = Some(Bucket::full(micros_per_hour, burst_micros, now)),
        },
        Fact::ToppedUp { micros } => {
            if let Some(b) = &mut s.bucket {
                b.top_up(micros, now);
            }
        }
        Fact::Charged { micros } => {
            if let Some(b) = &mut s.bucket {
                b.charge(micros, now);
            }
        }
        Fact::Waiting { retry_after_ms } => {
            s.phase = Phase::Waiting {
                until_ms: now.saturating_add(retry_after_ms),
            }
        }
        Fact::Resumed => s.phase = Phase::Ok,
        Fact::Exhausted => s.phase = Phase::Exhausted,
    }
}

impl BudgetState {
    /// Whether the bucket covers the next step at `now_ms`: while running,
    /// when the level is above the low-water mark; while waiting or
    /// exhausted, once it is back to the resume level. An agent without a
    /// bucket is always `Ok`.
    pub fn decide(&self, now_ms: u64, max_wait_ms: u64) -> Decision {
        let Some(mut b) = self.bucket else {
            return Decision::Ok;
        };
        b.accrue(now_ms);
        let target = match self.phase {
            Phase::Ok if b.level_micros() > LOW_WATER_MICROS => return Decision::Ok,
            Phase::Ok => b.resume_micros(),
            Phase::Waiting { .. } | Phase::Exhausted => {
                if b.level_micros() >= b.resume_micros() {
                    return Decision::Ok;
                }
                b.resume_micros()
            }
        };
        match b.ms_until(target) {
            Some(0) => Decision::Ok,
            Some(ms) if ms <= max_wait_ms => Decision::Wait { retry_after_ms: ms },
            _ => Decision::Exhausted,
        }
    }

    /// The fact to record at `now_ms`, if the decision changes where the
    /// budget stands (a wait that is still a wait past its time is recorded
    /// again, with the new time). `None`: nothing to record.
    pub fn step(&self, now_ms: u64, max_wait_ms: u64) -> Option<Fact> {
        let d = self.decide(now_ms, max_wait_ms);
        match (self.phase, d) {
            (Phase::Ok, Decision::Ok) | (Phase::Exhausted, Decision::Exhausted) => None,
            (Phase::Waiting { .. } | Phase::Exhausted, Decision::Ok) => Some(Fact::Resumed),
            (Phase::Waiting { until_ms }, Decision::Wait { retry_after_ms }) => {
                (now_ms >= until_ms).then_some(Fact::Waiting { retry_after_ms })
            }
            (_, Decision::Wait { retry_after_ms }) => Some(Fact::Waiting { retry_after_ms }),
            (_, Decision::Exhausted) => Some(Fact::Exhausted),
        }
    }

    /// The level now, in micro-dollars (`0` without a bucket).
    pub fn available_micros(&self, now_ms: u64) -> i64 {
        self.bucket.map(|b| b.level_at(now_ms)).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H: u64 = MS_PER_HOUR as u64;

    fn ev(at_ms: u64, fact: Fact) -> BudgetEvent {
        BudgetEvent { at_ms, fact }
    }

    fn replay(events: &[BudgetEvent]) -> BudgetState {
        let mut s = BudgetState::default();
        for e in events {
            apply(&mut s, e);
        }
        s
    }

    #[test]
    fn dollars_are_checked() {
        assert_eq!(usd_to_micros(1.5), Some(1_500_000));
        assert_eq!(usd_to_micros(0.0), Some(0));
        assert_eq!(usd_to_micros(MAX_USD), Some(1_000_000_000_000));
        for bad in [-0.01, f64::NAN, f64::INFINITY, MAX_USD + 1.0] {
            assert_eq!(usd_to_micros(bad), None, "{bad}");
        }
    }

    #[test]
    fn accrues_at_the_rate_up_to_the_burst() {
        // $3/hour, $1 burst, empty at 0.
        let mut b = Bucket::full(3_000_000, 1_000_000, 0);
        b.charge(1_000_000, 0);
        assert_eq!(b.level_at(H / 6), 500_000); // 10 minutes: 50 cents
        assert_eq!(b.level_at(H), 1_000_000); // capped
        // Many tiny accruals add up exactly (no rounding loss).
        let mut c = Bucket::full(3_000_000, 1_000_000, 0);
        c.charge(1_000_000, 0);
        for t in 1..=600_000u64 {
            c.accrue(t);
        }
        assert_eq!(c.level_micros(), 500_000);
    }

    #[test]
    fn a_top_up_counts_in_full_and_a_shrinking_burst_clamps() {
        let mut b = Bucket::full(0, 1_000_000, 0);
        b.top_up(5_000_000, 10);
        assert_eq!(b.level_micros(), 6_000_000);
        b.set(1_000_000, 2_000_000, 20);
        assert_eq!(b.level_micros(), 6_000_000, "a growing burst keeps the level");
        b.set(1_000_000, 500_000, 30);
        assert_eq!(b.level_micros(), 500_000, "a shrinking burst clamps it");
    }

    #[test]
    fn decisions_table() {
        let max = DEFAULT_MAX_WAIT_MS;
        // (rate $/h, burst $, charged $, phase) -> decision
        let cases: &[(i64, i64, i64, Phase, Decision)] = &[
            (3_000_000, 1_000_000, 0, Phase::Ok, Decision::Ok),
            (3_000_000, 1_000_000, 999_999, Phase::Ok, Decision::Ok),
            // Empty: resumes at a tenth of the burst, 100_000 at $3/h = 2 min.
            (
                3_000_000,
                1_000_000,
                1_000_000,
                Phase::Ok,
                Decision::Wait {
                    retry_after_ms: 120_000,
                },
            ),
            // Waiting with some level but under the resume level: still waits.
            (
                3_000_000,
                1_000_000,
                950_000,
                Phase::Waiting { until_ms: 0 },
                Decision::Wait { retry_after_ms: 60_000 },
            ),
            (0, 1_000_000, 1_000_000, Phase::Ok, Decision::Exhausted),
            // $0.01/h for a $1 burst: far too slow.
            (10_000, 1_000_000, 1_000_000, Phase::Ok, Decision::Exhausted),
            // A zero burst never accrues.
            (3_000_000, 0, 1, Phase::Ok, Decision::Exhausted),
            (0, 1_000_000, 0, Phase::Exhausted, Decision::Ok),
        ];
        for &(rate, burst, charged, phase, want) in cases {
            let mut b = Bucket::full(rate, burst, 0);
            b.charge(charged, 0);
            let s = BudgetState { bucket: Some(b), phase };
            assert_eq!(s.decide(0, max), want, "{rate} {burst} {charged} {phase:?}");
        }
        assert_eq!(BudgetState::default().decide(0, max), Decision::Ok);
    }

    #[test]
    fn waits_then_resumes_then_a_zero_rate_is_exhausted_once() {
        let max = DEFAULT_MAX_WAIT_MS;
        let mut s = BudgetState::default();
        apply(
            &mut s,
            &ev(
                0,
                Fact::Set {
                    micros_per_hour: 36_000_000,
                    burst_micros: 50_000,
                },
            ),
        );
        apply(&mut s, &ev(0, Fact::Charged { micros: 70_000 }));
        let wait = s.step(0, max);
        // -20_000 to 5_000 at $0.01/s: 2.5 s.
        assert_eq!(wait, Some(Fact::Waiting { retry_after_ms: 2_500 }));
        apply(&mut s, &ev(0, wait.expect("wait")));
        assert_eq!(s.step(1_000, max), None, "not yet re-decided");
        assert_eq!(s.step(2_500, max), Some(Fact::Resumed));
        apply(&mut s, &ev(2_500, Fact::Resumed));
        apply(
            &mut s,
            &ev(
                3_000,
                Fact::Set {
                    micros_per_hour: 0,
                    burst_micros: 50_000,
                },
            ),
        );
        apply(&mut s, &ev(3_000, Fact::Charged { micros: 100_000 }));
        assert_eq!(s.step(3_000, max), Some(Fact::Exhausted));
        apply(&mut s, &ev(3_000, Fact::Exhausted));
        assert_eq!(s.step(1_000_000, max), None, "one exhaustion per episode");
        apply(&mut s, &ev(4_000, Fact::ToppedUp { micros: 1_000_000 }));
        assert_eq!(s.step(4_000, max), Some(Fact::Resumed));
    }

    fn arb_fact() -> impl Strategy<Value = Fact> {
        prop_oneof![
            (0i64..100_000_000, 0i64..10_000_000).prop_map(|(r, b)| Fact::Set {
                micros_per_hour: r,
                burst_micros: b
            }),
            (0i64..10_000_000).prop_map(|m| Fact::ToppedUp { micros: m }),
            (0i64..10_000_000).prop_map(|m| Fact::Charged { micros: m }),
            (0u64..1_000_000).prop_map(|r| Fact::Waiting { retry_after_ms: r }),
            Just(Fact::Resumed),
            Just(Fact::Exhausted),
        ]
    }

    fn arb_events() -> impl Strategy<Value = Vec<BudgetEvent>> {
        prop::collection::vec((0u64..100_000, arb_fact()), 0..40).prop_map(|v| {
            let mut t = 0;
            v.into_iter()
                .map(|(dt, fact)| {
                    t += dt;
                    ev(t, fact)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn replay_equals_live(events in arb_events(), cut in 0usize..40) {
            // Live: state kept across a restart at `cut` (folded in two
            // halves); replay: folded at once.
            let cut = cut.min(events.len());
            let mut live = replay(&events[..cut]);
            for e in &events[cut..] {
                apply(&mut live, e);
            }
            prop_assert_eq!(live, replay(&events));
        }

        #[test]
        fn accrual_never_lifts_the_level_above_the_burst(events in arb_events(), later in 0u64..10_000_000) {
            let s = replay(&events);
            if let Some(b) = s.bucket {
                let before = b.level_micros();
                let after = b.level_at(b.at_ms + later);
                prop_assert!(after >= before);
                prop_assert!(after <= before.max(b.burst_micros));
            }
        }

        #[test]
        fn charges_are_never_lost(events in arb_events(), charges in prop::collection::vec(0i64..5_000_000, 0..10)) {
            // Charging at one instant takes exactly the sum, however the
            // level stood (no cap below zero).
            let s = replay(&events);
            if let Some(mut b) = s.bucket {
                let t = b.at_ms;
                let before = b.level_micros();
                for c in &charges {
                    b.charge(*c, t);
                }
                prop_assert_eq!(b.level_micros(), before - charges.iter().sum::<i64>());
            }
        }

        #[test]
        fn a_wait_is_never_longer_than_the_max(events in arb_events(), now in 0u64..10_000_000, max in 0u64..2_000_000) {
            let s = replay(&events);
            if let Decision::Wait { retry_after_ms } = s.decide(now, max) {
                prop_assert!(retry_after_ms > 0 && retry_after_ms <= max);
            }
        }
    }
}
