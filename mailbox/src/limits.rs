//! Per-sender rate limits: a token bucket per sending agent, decided from the
//! time it is given (milliseconds on any monotonic clock), so it is tested
//! without waiting. The node keeps one limiter in memory; a restart refills
//! every bucket, which only ever errs towards letting mail through.

use std::collections::HashMap;

use crate::MailError;

/// A sender's allowance: `burst` sends at once, refilled at `per_sec`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    pub per_sec: f64,
    pub burst: u32,
}

impl Default for RateLimit {
    /// Generous for agents, tight for a runaway loop.
    fn default() -> RateLimit {
        RateLimit {
            per_sec: 1_000.0,
            burst: 2_000,
        }
    }
}

/// Most senders tracked; beyond it the fullest buckets are forgotten (a
/// full bucket carries no information).
const MAX_SENDERS: usize = 4_096;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: u64,
}

/// The buckets of every sender.
#[derive(Debug, Clone)]
pub struct RateLimiter {
    limit: RateLimit,
    buckets: HashMap<String, Bucket>,
}

impl RateLimiter {
    pub fn new(limit: RateLimit) -> RateLimiter {
        RateLimiter {
            limit,
            buckets: HashMap::new(),
        }
    }

    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes one send from `from`'s bucket at `now_ms`, or says how long
    /// until one is there. A refused send takes nothing.
    pub fn take(&mut self, from: &str, now_ms: u64) -> Result<(), MailError> {
        let RateLimit { per_sec, burst } = self.limit;
        if self.buckets.len() >= MAX_SENDERS && !self.buckets.contains_key(from) {
            self.forget_full(now_ms);
        }
        let b = self.buckets.entry(from.to_string()).or_insert(Bucket {
            tokens: burst as f64,
            at_ms: now_ms,
        });
        let elapsed = now_ms.saturating_sub(b.at_ms) as f64 / 1000.0;
        b.tokens = (b.tokens + elapsed * per_sec).min(burst as f64);
        b.at_ms = b.at_ms.max(now_ms);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return Ok(());
        }
        let retry_after_ms = if per_sec > 0.0 {
            (((1.0 - b.tokens) / per_sec) * 1000.0).ceil() as u64
        } else {
            u64::MAX
        };
        Err(MailError::RateLimited {
            from: from.to_string(),
            limit: format!("{per_sec}/s, burst {burst}"),
            retry_after_ms,
        })
    }

    fn forget_full(&mut self, now_ms: u64) {
        let RateLimit { per_sec, burst } = self.limit;
        self.buckets.retain(|_, b| {
            let elapsed = now_ms.saturating_sub(b.at_ms) as f64 / 1000.0;
            b.tokens + elapsed * per_sec < burst as f64
        });
        if self.buckets.len() >= MAX_SENDERS {
            self.buckets.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let mut r = RateLimiter::new(RateLimit { per_sec: 2.0, burst: 3 });
        for _ in 0..3 {
            r.take("a", 0).expect("burst");
        }
        let e = r.take("a", 0).expect_err("empty");
        let MailError::RateLimited { retry_after_ms, .. } = e else {
            panic!("{e}")
        };
        assert_eq!(retry_after_ms, 500);
        r.take("b", 0).expect("buckets are per sender");
        assert!(r.take("a", 499).is_err());
        r.take("a", 500).expect("refilled");
        assert!(r.take("a", 500).is_err(), "a refused send took nothing, one token came");
        r.take("a", 10_000).expect("long idle refills");
    }

    #[test]
    fn a_zero_rate_never_refills() {
        let mut r = RateLimiter::new(RateLimit { per_sec: 0.0, burst: 1 });
        r.take("a", 0).expect("burst");
        let e = r.take("a", 1_000_000).expect_err("never");
        assert!(e.to_string().contains("over its mail rate"), "{e}");
    }

    #[test]
    fn the_number_of_senders_tracked_is_bounded() {
        let mut r = RateLimiter::new(RateLimit { per_sec: 1.0, burst: 1 });
        for i in 0..(MAX_SENDERS * 2) {
            let _ = r.take(&format!("s{i}"), 0);
        }
        assert!(r.buckets.len() <= MAX_SENDERS);
    }
}
