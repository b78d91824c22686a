//! One-time pairing codes: `session.pair_code` (local only) issues a short
//! code valid for 60 s; `session.pair {code}` (no token needed) exchanges it,
//! once, for a token of the code's profile. The decisions are pure (`Codes`
//! takes the time as an argument); `Pairing` is the lock around them.
//!
//! A code is 8 characters of Crockford's base32 (40 bits). Only its SHA-256
//! is kept. A presented code is compared with every waiting one first, in
//! constant time, so the right code always pairs: wrong guesses are limited
//! per address (`MAX_FAILURES` a minute, then that address is told it is
//! locked out) and never lock anyone else out. Guessing stays hopeless: an
//! address gets its few tries a minute against 2^40 codes that live 60 s,
//! and unauthenticated connections are few per address
//! (`api::doors`) and short-lived.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rand::Rng;
use sha2::{Digest, Sha256};

/// How long a code is valid.
pub const CODE_TTL_MS: u64 = 60_000;
/// Codes waiting at once; issuing another drops the oldest.
pub const MAX_PENDING: usize = 8;
/// Wrong codes one address may present per window; past them it is locked
/// out for the rest of the window (a right code still pairs).
pub const MAX_FAILURES: usize = 10;
pub const FAILURE_WINDOW_MS: u64 = 60_000;
/// Addresses whose wrong guesses are remembered; more share one count.
pub const MAX_SOURCES: usize = 4096;
/// Where the guesses of addresses past `MAX_SOURCES` are counted.
const OVERFLOW: IpAddr = IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED);
/// Lifetime of a token minted by pairing.
pub const TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

/// Crockford's base32: no I, L, O, U.
const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// What a paired browser may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// The full console: `node:admin` (local-only methods still refuse the
    /// network, whatever the token).
    Console,
    /// The phone companion: read-only methods.
    Companion,
    /// The companion with its allowlisted actions (nudge, answer a hold).
    CompanionActions,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Console => "console",
            Profile::Companion => "companion",
            Profile::CompanionActions => "companion_actions",
        }
    }

    /// The token this profile gets, expiring `TOKEN_TTL` after `now`.
    pub fn mint_spec(self, now: SystemTime, issued_by: &str) -> capabilities::MintSpec {
        use capabilities::methods::{COMPANION_ACTIONS, COMPANION_READ};
        use capabilities::{Operation, Resource, Right};
        let (rights, methods) = match self {
            Profile::Console => (vec![Right::new(Resource::Node, Operation::Admin)], None),
            Profile::Companion => (
                vec![Right::new(Resource::Node, Operation::Observe)],
                Some(COMPANION_READ.iter().map(|m| m.to_string()).collect()),
            ),
            Profile::CompanionActions => (
                vec![
                    Right::new(Resource::Node, Operation::Observe),
                    Right::new(Resource::Node, Operation::Supervise),
                ],
                Some(
                    COMPANION_READ
                        .iter()
                        .chain(COMPANION_ACTIONS)
                        .map(|m| m.to_string())
                        .collect(),
                ),
            ),
        };
        capabilities::MintSpec {
            rights,
            expires_at: Some(now + TOKEN_TTL),
            methods,
            facts: vec![
                ("issued_by".into(), issued_by.to_string()),
                ("paired".into(), self.as_str().into()),
            ],
        }
    }
}

/// Why a code was not exchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PairError {
    #[error("code: unknown, used or expired (a code is valid for 60 s, once): run `warren console pair` again")]
    Refused,
    #[error(
        "too many wrong pairing codes from this address: it is locked out for {retry_after_ms} ms (a right code still pairs)"
    )]
    LockedOut { retry_after_ms: u64 },
}

struct Pending {
    hash: [u8; 32],
    profile: Profile,
    expires_at_ms: u64,
}

/// The codes waiting, and the recent wrong guesses per address.
#[derive(Default)]
pub struct Codes {
    pending: VecDeque<Pending>,
    failures: HashMap<IpAddr, VecDeque<u64>>,
}

/// Equality of two hashes in time that does not depend on where they differ.
fn same_hash(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

fn hash(code: &str) -> [u8; 32] {
    Sha256::digest(normalize(code).as_bytes()).into()
}

/// Upper case, separators and spaces dropped, the look-alikes Crockford
/// reads as digits (`O` -> 0, `I`/`L` -> 1) folded.
pub fn normalize(code: &str) -> String {
    code.chars()
        .filter(|c| !matches!(c, '-' | ' ' | '\t'))
        .map(|c| match c.to_ascii_uppercase() {
            'O' => '0',
            'I' | 'L' => '1',
            c => c,
        })
        .collect()
}

/// A fresh code, shown as `XXXX-XXXX`.
pub fn new_code(rng: &mut impl Rng) -> String {
    let chars: String = (0..8)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("{}-{}", &chars[..4], &chars[4..])
}

impl Codes {
    /// Remembers `code` for `profile` until `now_ms + CODE_TTL_MS`.
    pub fn issue(&mut self, code: &str, profile: Profile, now_ms: u64) {
        self.expire(now_ms);
        while self.pending.len() >= MAX_PENDING {
            self.pending.pop_front();
        }
        self.pending.push_back(Pending {
            hash: hash(code),
            profile,
            expires_at_ms: now_ms + CODE_TTL_MS,
        });
    }

    /// Exchanges `code` once: its profile, and the code is gone. The code is
    /// checked first (against every waiting code, in constant time), so a
    /// right code pairs whatever `source` guessed before; a wrong one counts
    /// against `source` (an address, see `api::doors::source_key`), which is
    /// told it is locked out once past `MAX_FAILURES` in the window.
    pub fn redeem(&mut self, code: &str, source: IpAddr, now_ms: u64) -> Result<Profile, PairError> {
        self.expire(now_ms);
        let h = hash(code);
        let mut hit = None;
        for (i, p) in self.pending.iter().enumerate() {
            if same_hash(&p.hash, &h) && hit.is_none() {
                hit = Some(i);
            }
        }
        if let Some(i) = hit {
            return Ok(self.pending.remove(i).map(|p| p.profile).unwrap_or(Profile::Companion));
        }
        let source = if self.failures.contains_key(&source) || self.failures.len() < MAX_SOURCES {
            source
        } else {
            OVERFLOW
        };
        let tries = self.failures.entry(source).or_default();
        while tries
            .front()
            .is_some_and(|t| now_ms.saturating_sub(*t) >= FAILURE_WINDOW_MS)
        {
            tries.pop_front();
        }
        if tries.len() >= MAX_FAILURES {
            let oldest = tries.front().copied().unwrap_or(now_ms);
            return Err(PairError::LockedOut {
                retry_after_ms: (oldest + FAILURE_WINDOW_MS).saturating_sub(now_ms).max(1),
            });
        }
        tries.push_back(now_ms);
        Err(PairError::Refused)
    }

    fn expire(&mut self, now_ms: u64) {
        self.pending.retain(|p| p.expires_at_ms > now_ms);
        if self.failures.len() >= MAX_SOURCES {
            self.failures.retain(|_, t| {
                t.back()
                    .is_some_and(|last| now_ms.saturating_sub(*last) < FAILURE_WINDOW_MS)
            });
        }
    }
}

/// The node's codes behind a lock (held for microseconds, never across an await).
#[derive(Default)]
pub struct Pairing(Mutex<Codes>);

impl Pairing {
    /// Issues a fresh code for `profile`; returns it.
    pub fn issue(&self, profile: Profile, now_ms: u64) -> String {
        let code = new_code(&mut rand::rng());
        if let Ok(mut c) = self.0.lock() {
            c.issue(&code, profile, now_ms);
        }
        code
    }

    pub fn redeem(&self, code: &str, source: IpAddr, now_ms: u64) -> Result<Profile, PairError> {
        match self.0.lock() {
            Ok(mut c) => c.redeem(code, source, now_ms),
            Err(_) => Err(PairError::Refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[test]
    fn a_code_works_once_within_its_minute() {
        let mut c = Codes::default();
        c.issue("ABCD-EFGH", Profile::Companion, 1_000);
        assert_eq!(
            c.redeem("abcd efgh", HOME, 2_000),
            Ok(Profile::Companion),
            "case and separators"
        );
        assert_eq!(
            c.redeem("ABCD-EFGH", HOME, 2_001),
            Err(PairError::Refused),
            "single use"
        );
        c.issue("WXYZ-0123", Profile::Console, 10_000);
        assert_eq!(
            c.redeem("WXYZ-0123", HOME, 10_000 + CODE_TTL_MS),
            Err(PairError::Refused),
            "expired"
        );
        c.issue("WXYZ-0123", Profile::Console, 100_000);
        assert_eq!(
            c.redeem("wxyz-o123", HOME, 100_000 + CODE_TTL_MS - 1),
            Ok(Profile::Console),
            "O reads as 0"
        );
    }

    #[test]
    fn wrong_guesses_lock_out_their_address_and_never_the_right_code() {
        let mut c = Codes::default();
        c.issue("REAL-C0DE", Profile::Console, 0);
        for i in 0..MAX_FAILURES as u64 {
            assert_eq!(c.redeem("GUES-SSSS", ip(1), i), Err(PairError::Refused));
        }
        assert_eq!(
            c.redeem("GUES-SSSS", ip(1), 20),
            Err(PairError::LockedOut {
                retry_after_ms: FAILURE_WINDOW_MS - 20
            }),
            "the guessing address is told it is locked out"
        );
        assert_eq!(
            c.redeem("GUES-SSSS", ip(2), 21),
            Err(PairError::Refused),
            "others are not"
        );
        assert_eq!(
            c.redeem("REAL-C0DE", ip(1), 22),
            Ok(Profile::Console),
            "the right code pairs, even from there"
        );
        // After the window the address may guess again.
        assert_eq!(
            c.redeem("GUES-SSSS", ip(1), FAILURE_WINDOW_MS + 10),
            Err(PairError::Refused)
        );
    }

    #[test]
    fn the_addresses_remembered_are_bounded() {
        let mut c = Codes::default();
        for i in 0..(MAX_SOURCES as u32 + 100) {
            let addr = IpAddr::from(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            let _ = c.redeem("GUES-SSSS", addr, 1);
        }
        assert!(c.failures.len() <= MAX_SOURCES + 1);
        c.issue("REAL-C0DE", Profile::Companion, 2);
        assert_eq!(c.redeem("REAL-C0DE", HOME, 3), Ok(Profile::Companion));
    }

    #[test]
    fn hashes_compare_equal_only_when_equal() {
        let a = hash("ABCD-EFGH");
        let mut b = a;
        assert!(same_hash(&a, &b));
        b[31] ^= 1;
        assert!(!same_hash(&a, &b));
        b = a;
        b[0] ^= 0x80;
        assert!(!same_hash(&a, &b));
    }

    #[test]
    fn pending_codes_are_bounded() {
        let mut c = Codes::default();
        for i in 0..(MAX_PENDING as u64 + 2) {
            c.issue(&format!("CODE-{i:04}"), Profile::Companion, i);
        }
        assert_eq!(c.pending.len(), MAX_PENDING);
        assert_eq!(
            c.redeem("CODE-0000", HOME, 20),
            Err(PairError::Refused),
            "the oldest went"
        );
        assert!(c.redeem(&format!("CODE-{:04}", MAX_PENDING + 1), HOME, 20).is_ok());
    }

    #[test]
    fn codes_look_right() {
        let mut rng = rand::rng();
        for _ in 0..100 {
            let code = new_code(&mut rng);
            assert_eq!(code.len(), 9);
            assert_eq!(&code[4..5], "-");
            assert_eq!(normalize(&code), code.replace('-', ""), "a fresh code needs no folding");
        }
    }

    #[test]
    fn profiles_mint_what_they_say() {
        let root = capabilities::RootKey::generate();
        let v = capabilities::Verifier::new(vec![root.public()]);
        let companion = root
            .mint(&Profile::Companion.mint_spec(SystemTime::now(), "n-1"))
            .expect("mint");
        let verified = v.verify(&companion).expect("verify");
        let req = |method, operation| capabilities::Request {
            method,
            operation,
            resources: vec![capabilities::Resource::Node],
            node: "n-1",
            now: SystemTime::now(),
        };
        assert!(
            v.authorize(&verified, &req("agent.list", capabilities::Operation::Observe))
                .is_ok()
        );
        assert!(
            v.authorize(&verified, &req("agent.create", capabilities::Operation::Admin))
                .is_err()
        );
        let console = root
            .mint(&Profile::Console.mint_spec(SystemTime::now(), "n-1"))
            .expect("mint");
        let verified = v.verify(&console).expect("verify");
        assert!(
            v.authorize(&verified, &req("agent.create", capabilities::Operation::Admin))
                .is_ok()
        );
    }
}
