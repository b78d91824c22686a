//! The guest door's defences, pure (the time is given): a hello's fields are
//! checked for shape and length before it is judged; hellos are rate limited
//! per address; refusals are counted and coalesced into at most one record
//! per address and window, carrying the count; and whatever a client sent is
//! cut and escaped before it is logged or stored. Anything on the host, or
//! any guest on the bridge, can reach `/guest`: none of it may grow the log.

use std::collections::HashMap;
use std::net::IpAddr;

/// Largest hello frame read (a real one is a few hundred bytes).
pub const MAX_HELLO_BYTES: usize = 4096;
/// Longest conversation id, launch token or session key a hello may carry.
pub const MAX_FIELD: usize = 128;
/// A nonce is hex, this many characters at most (the guest sends 64).
pub const MAX_NONCE: usize = 128;
/// Hellos per second each address gets, and at once.
pub const HELLOS_PER_SEC: f64 = 5.0;
pub const HELLO_BURST: f64 = 20.0;
/// Addresses tracked (rate and refusals); more share one entry.
pub const MAX_SOURCES: usize = 1024;
/// Longest client string kept in a record or a log line.
pub const MAX_SHOWN: usize = 64;
/// The shared entry of addresses past `MAX_SOURCES`.
const OVERFLOW: IpAddr = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);

/// Why a hello's fields are refused before it is judged (never echoing them).
pub fn check_hello(conversation: &str, credential: &str, nonce: &str, version: &str) -> Result<(), String> {
    let token_like = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if conversation.is_empty() || conversation.len() > MAX_FIELD || !token_like(conversation) {
        return Err(format!(
            "conversation: not a conversation id (1..={MAX_FIELD} letters, digits, '-', '_')"
        ));
    }
    if credential.is_empty() || credential.len() > MAX_FIELD || !token_like(credential) {
        return Err(format!(
            "credential: not a launch token or session key (1..={MAX_FIELD} letters, digits, '-', '_')"
        ));
    }
    if nonce.len() < 16 || nonce.len() > MAX_NONCE || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("nonce: not 16..={MAX_NONCE} hex digits"));
    }
    if version.len() > MAX_SHOWN || version.chars().any(char::is_control) {
        return Err(format!("version: over {MAX_SHOWN} bytes or not printable"));
    }
    Ok(())
}

/// A client string as it may be logged or stored: control and other
/// invisible characters escaped, cut to `max` characters with the size said.
pub fn shown(s: &str, max: usize) -> String {
    let mut chars = s.chars().flat_map(char::escape_debug);
    let head: String = chars.by_ref().take(max).collect();
    match chars.next() {
        Some(_) => format!("{head}... ({} bytes)", s.len()),
        None => head,
    }
}

/// The address an entry is kept under: its own while there is room.
fn slot<T>(map: &HashMap<IpAddr, T>, source: IpAddr) -> IpAddr {
    if map.contains_key(&source) || map.len() < MAX_SOURCES {
        source
    } else {
        OVERFLOW
    }
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: u64,
}

/// A token bucket of hellos per address.
#[derive(Debug, Default)]
pub struct HelloRate {
    buckets: HashMap<IpAddr, Bucket>,
}

impl HelloRate {
    /// Takes one hello from `source`'s bucket at `now_ms`; false when empty.
    pub fn allow(&mut self, source: IpAddr, now_ms: u64) -> bool {
        if self.buckets.len() >= MAX_SOURCES && !self.buckets.contains_key(&source) {
            // A bucket that has refilled carries no information.
            self.buckets.retain(|_, b| {
                b.tokens + now_ms.saturating_sub(b.at_ms) as f64 / 1000.0 * HELLOS_PER_SEC < HELLO_BURST
            });
        }
        let key = slot(&self.buckets, source);
        let b = self.buckets.entry(key).or_insert(Bucket {
            tokens: HELLO_BURST,
            at_ms: now_ms,
        });
        let elapsed = now_ms.saturating_sub(b.at_ms) as f64 / 1000.0;
        b.tokens = (b.tokens + elapsed * HELLOS_PER_SEC).min(HELLO_BURST);
        b.at_ms = b.at_ms.max(now_ms);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// One durable record of refused hellos from one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub source: IpAddr,
    /// Hellos refused since the previous record (at least 1).
    pub count: u64,
    /// The newest refused hello's conversation, if it was a well-formed id.
    pub conversation: String,
    /// Why the newest was refused (cut and escaped).
    pub reason: String,
}

#[derive(Debug, Default)]
struct Tally {
    last_record_ms: Option<u64>,
    pending: u64,
    conversation: String,
    reason: String,
}

/// Refusals per address: the first of a quiet address is recorded at once;
/// the rest wait and are recorded together once a window has passed since
/// that address's last record, so each address costs at most one record per
/// window however hard it knocks.
#[derive(Debug)]
pub struct Refusals {
    window_ms: u64,
    by_source: HashMap<IpAddr, Tally>,
}

impl Refusals {
    pub fn new(window_ms: u64) -> Refusals {
        Refusals {
            window_ms: window_ms.max(1),
            by_source: HashMap::new(),
        }
    }

    /// Counts a refused hello; returns the record to write now, if any.
    pub fn refused(&mut self, source: IpAddr, conversation: &str, reason: &str, now_ms: u64) -> Option<Refused> {
        if self.by_source.len() >= MAX_SOURCES && !self.by_source.contains_key(&source) {
            self.forget_idle(now_ms);
        }
        let key = slot(&self.by_source, source);
        let window = self.window_ms;
        let t = self.by_source.entry(key).or_default();
        t.conversation = if check_hello(conversation, "x", "0000000000000000", "").is_ok() {
            conversation.to_string()
        } else {
            String::new()
        };
        t.reason = shown(reason, 2 * MAX_SHOWN);
        let quiet = t.last_record_ms.is_none_or(|at| now_ms.saturating_sub(at) >= window);
        if quiet && t.pending == 0 {
            t.last_record_ms = Some(now_ms);
            return Some(Refused {
                source: key,
                count: 1,
                conversation: t.conversation.clone(),
                reason: t.reason.clone(),
            });
        }
        t.pending += 1;
        None
    }

    /// The records whose window has passed (each address's waiting count).
    pub fn due(&mut self, now_ms: u64) -> Vec<Refused> {
        let window = self.window_ms;
        let mut out = vec![];
        for (source, t) in self.by_source.iter_mut() {
            let passed = t.last_record_ms.is_none_or(|at| now_ms.saturating_sub(at) >= window);
            if t.pending > 0 && passed {
                out.push(Refused {
                    source: *source,
                    count: t.pending,
                    conversation: t.conversation.clone(),
                    reason: t.reason.clone(),
                });
                t.pending = 0;
                t.last_record_ms = Some(now_ms);
            }
        }
        self.forget_idle(now_ms);
        out
    }

    /// Forgets addresses with nothing waiting whose window has passed.
    fn forget_idle(&mut self, now_ms: u64) {
        let window = self.window_ms;
        self.by_source
            .retain(|_, t| t.pending > 0 || t.last_record_ms.is_some_and(|at| now_ms.saturating_sub(at) < window));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn hello_fields_are_checked_by_shape_and_length() {
        let nonce = "ab".repeat(32);
        assert!(check_hello("c-0123456789abcdef", &"f".repeat(64), &nonce, "0.1.0").is_ok());
        assert!(check_hello("c-1", "gk-0123456789abcdef", &nonce, "").is_ok());
        let huge = "x".repeat(900 * 1024);
        for (conv, cred, n, v, field) in [
            (huge.as_str(), "t", nonce.as_str(), "", "conversation"),
            ("", "t", &nonce, "", "conversation"),
            ("c-1\u{1b}[2J", "t", &nonce, "", "conversation"),
            ("c-1", "", &nonce, "", "credential"),
            ("c-1", &huge, &nonce, "", "credential"),
            ("c-1", "t t", &nonce, "", "credential"),
            ("c-1", "t", "xyz", "", "nonce"),
            ("c-1", "t", &"a".repeat(200), "", "nonce"),
            ("c-1", "t", &nonce, &huge, "version"),
            ("c-1", "t", &nonce, "a\nb", "version"),
        ] {
            let e = check_hello(conv, cred, n, v).expect_err(field);
            assert!(e.starts_with(field), "{e}");
            assert!(e.len() < 120, "never echoes the field: {e}");
        }
    }

    #[test]
    fn client_strings_are_cut_and_escaped() {
        assert_eq!(shown("c-1", 64), "c-1");
        assert_eq!(shown("a\u{1b}[2Jb\n", 64), "a\\u{1b}[2Jb\\n");
        let cut = shown(&"x".repeat(900 * 1024), 64);
        assert!(
            cut.starts_with(&"x".repeat(64)) && cut.ends_with("(921600 bytes)"),
            "{cut}"
        );
        assert!(cut.len() < 100);
    }

    #[test]
    fn each_address_gets_a_burst_then_the_rate() {
        let mut r = HelloRate::default();
        let allowed = (0..100).filter(|_| r.allow(ip(1), 0)).count();
        assert_eq!(allowed, HELLO_BURST as usize);
        assert!(r.allow(ip(2), 0), "another address has its own");
        assert!(!r.allow(ip(1), 100));
        assert!(r.allow(ip(1), 200), "one back after 1/5 s");
    }

    #[test]
    fn addresses_tracked_are_bounded() {
        let mut r = HelloRate::default();
        let mut f = Refusals::new(60_000);
        for i in 0..(MAX_SOURCES as u32 * 3) {
            let a = IpAddr::from(std::net::Ipv4Addr::from(0x7f00_0000 + i));
            for _ in 0..30 {
                r.allow(a, 0);
            }
            f.refused(a, "c-1", "no", 0);
            f.refused(a, "c-1", "no", 0);
        }
        assert!(r.buckets.len() <= MAX_SOURCES + 1);
        assert!(f.by_source.len() <= MAX_SOURCES + 1);
    }

    #[test]
    fn refusals_are_one_record_per_address_and_window_with_the_count() {
        let mut f = Refusals::new(60_000);
        let first = f
            .refused(ip(1), "c-1", "no launch is waiting for c-1", 0)
            .expect("the first at once");
        assert_eq!((first.count, first.conversation.as_str()), (1, "c-1"));
        for i in 0..299 {
            assert_eq!(
                f.refused(ip(1), &"x".repeat(900 * 1024), "hello too large", 10 + i),
                None
            );
        }
        assert!(
            f.refused(ip(2), "c-2", "no", 20).is_some(),
            "another address is its own"
        );
        assert!(f.due(59_999).is_empty(), "not before the window has passed");
        let later = f.due(60_000);
        assert_eq!(later.len(), 1);
        assert_eq!(later[0].count, 299);
        assert_eq!(later[0].conversation, "", "an ill-formed id is not kept");
        assert!(later[0].reason.len() < 200);
        // Quiet again: the next window's first refusal waits for the window.
        assert_eq!(f.refused(ip(1), "c-1", "no", 60_001), None);
        assert_eq!(f.due(120_000).iter().map(|r| r.count).sum::<u64>(), 1);
        // A long-quiet address is recorded at once again.
        assert!(f.refused(ip(1), "c-1", "no", 500_000).is_some());
    }

    proptest::proptest! {
        /// However refusals arrive, each is counted exactly once and an
        /// address gets at most one record per window.
        #[test]
        fn every_refusal_counted_once(times in proptest::collection::vec((0u8..3, 0u64..2_000), 0..200)) {
            let mut f = Refusals::new(100);
            let mut times = times;
            times.sort_by_key(|(_, t)| *t);
            let mut records: Vec<(IpAddr, u64, u64)> = vec![];
            for (who, t) in &times {
                if let Some(r) = f.refused(ip(*who), "c-1", "no", *t) {
                    records.push((r.source, r.count, *t));
                }
                for r in f.due(*t) {
                    records.push((r.source, r.count, *t));
                }
            }
            for r in f.due(u64::MAX / 2) {
                records.push((r.source, r.count, u64::MAX / 2));
            }
            proptest::prop_assert_eq!(records.iter().map(|r| r.1).sum::<u64>(), times.len() as u64);
            for who in 0..3u8 {
                let at: Vec<u64> = records.iter().filter(|r| r.0 == ip(who)).map(|r| r.2).collect();
                for pair in at.windows(2) {
                    proptest::prop_assert!(pair[1] - pair[0] >= 100, "{:?}", at);
                }
            }
        }
    }
}
