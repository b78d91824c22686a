//! One-time pairing codes: `session.pair_code` (local only) issues a short
//! code valid for 60 s; `session.pair {code}` (no token needed) exchanges it,
//! once, for a token of the code's profile. The decisions are pure (`Codes`
//! takes the time as an argument); `Pairing` is the lock around them.
//!
//! A code is 8 characters of Crockford's base32 (40 bits). Only its SHA-256
//! is kept, and wrong guesses are rate limited node-wide, so the 60 s window
//! leaves nothing worth guessing.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use rand::Rng;
use sha2::{Digest, Sha256};

/// How long a code is valid.
pub const CODE_TTL_MS: u64 = 60_000;
/// Codes waiting at once; issuing another drops the oldest.
pub const MAX_PENDING: usize = 8;
/// Wrong codes the node answers per window before it answers busy.
pub const MAX_FAILURES: usize = 10;
pub const FAILURE_WINDOW_MS: u64 = 60_000;
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
    #[error("too many wrong pairing codes: try again in {retry_after_ms} ms")]
    TooMany { retry_after_ms: u64 },
}

struct Pending {
    hash: [u8; 32],
    profile: Profile,
    expires_at_ms: u64,
}

/// The codes waiting, and the recent wrong guesses.
#[derive(Default)]
pub struct Codes {
    pending: VecDeque<Pending>,
    failures: VecDeque<u64>,
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

    /// Exchanges `code` once: its profile, and the code is gone.
    pub fn redeem(&mut self, code: &str, now_ms: u64) -> Result<Profile, PairError> {
        self.expire(now_ms);
        while self
            .failures
            .front()
            .is_some_and(|t| now_ms.saturating_sub(*t) >= FAILURE_WINDOW_MS)
        {
            self.failures.pop_front();
        }
        if self.failures.len() >= MAX_FAILURES {
            let oldest = self.failures.front().copied().unwrap_or(now_ms);
            return Err(PairError::TooMany {
                retry_after_ms: (oldest + FAILURE_WINDOW_MS).saturating_sub(now_ms).max(1),
            });
        }
        let h = hash(code);
        match self.pending.iter().position(|p| p.hash == h) {
            Some(i) => Ok(self.pending.remove(i).map(|p| p.profile).unwrap_or(Profile::Companion)),
            None => {
                self.failures.push_back(now_ms);
                Err(PairError::Refused)
            }
        }
    }

    fn expire(&mut self, now_ms: u64) {
        self.pending.retain(|p| p.expires_at_ms > now_ms);
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

    pub fn redeem(&self, code: &str, now_ms: u64) -> Result<Profile, PairError> {
        match self.0.lock() {
            Ok(mut c) => c.redeem(code, now_ms),
            Err(_) => Err(PairError::Refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_works_once_within_its_minute() {
        let mut c = Codes::default();
        c.issue("ABCD-EFGH", Profile::Companion, 1_000);
        assert_eq!(
            c.redeem("abcd efgh", 2_000),
            Ok(Profile::Companion),
            "case and separators"
        );
        assert_eq!(c.redeem("ABCD-EFGH", 2_001), Err(PairError::Refused), "single use");
        c.issue("WXYZ-0123", Profile::Console, 10_000);
        assert_eq!(
            c.redeem("WXYZ-0123", 10_000 + CODE_TTL_MS),
            Err(PairError::Refused),
            "expired"
        );
        c.issue("WXYZ-0123", Profile::Console, 100_000);
        assert_eq!(
            c.redeem("wxyz-o123", 100_000 + CODE_TTL_MS - 1),
            Ok(Profile::Console),
            "O reads as 0"
        );
    }

    #[test]
    fn wrong_guesses_are_rate_limited_without_burning_real_codes() {
        let mut c = Codes::default();
        c.issue("REAL-C0DE", Profile::Console, 0);
        for i in 0..MAX_FAILURES as u64 {
            assert_eq!(c.redeem("GUES-SSSS", i), Err(PairError::Refused));
        }
        match c.redeem("REAL-C0DE", 20) {
            Err(PairError::TooMany { retry_after_ms }) => assert_eq!(retry_after_ms, FAILURE_WINDOW_MS - 20),
            other => panic!("{other:?}"),
        }
        // After the window the real code (issued later) still works.
        c.issue("REAL-C0DE", Profile::Console, FAILURE_WINDOW_MS + 5);
        assert_eq!(c.redeem("REAL-C0DE", FAILURE_WINDOW_MS + 10), Ok(Profile::Console));
    }

    #[test]
    fn pending_codes_are_bounded() {
        let mut c = Codes::default();
        for i in 0..(MAX_PENDING as u64 + 2) {
            c.issue(&format!("CODE-{i:04}"), Profile::Companion, i);
        }
        assert_eq!(c.pending.len(), MAX_PENDING);
        assert_eq!(c.redeem("CODE-0000", 20), Err(PairError::Refused), "the oldest went");
        assert!(c.redeem(&format!("CODE-{:04}", MAX_PENDING + 1), 20).is_ok());
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
