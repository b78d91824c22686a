//! Authorizing a call: verify the token against the trusted roots (cached by
//! the token's text), then run the authorizer's Datalog with the call's facts
//! (`method`, `resource`, `operation`, `time`, `node`) under explicit run
//! limits. A denial names the check that failed; a run-limit hit is a counted
//! denial, never a panic.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use biscuit_auth::builder::{date, fact, string};
use biscuit_auth::error::{FailedCheck, Logic, Token as TokenError};
use biscuit_auth::{AuthorizerBuilder, AuthorizerLimits, Biscuit, PublicKey};

use crate::rights::{Operation, Resource};

/// The node's policies. Rights live in the token's authority block; blocks
/// added by attenuation can only add checks (their facts are not trusted by
/// these policies), so authority only ever narrows.
pub const POLICIES: &str = r#"
// Admin on the node allows every call.
allow if right("node", "admin");
// A right on the node covers that operation on everything the node holds.
allow if operation($op), right("node", $op);
// A right on a resource the call touches, for the call's operation.
allow if operation($op), resource($res), right($res, $op);
// The fleet-wide agent wildcard.
allow if operation($op), resource($res), $res.starts_with("agent:"), right("agent:*", $op);
deny if true;
"#;

/// Datalog run limits for one authorization. Our tokens need a few dozen
/// facts and microseconds; the time limit is generous so a busy machine never
/// turns into spurious denials, and still bounds a pathological token.
pub const LIMITS: AuthorizerLimits = AuthorizerLimits {
    max_facts: 1_000,
    max_iterations: 100,
    max_time: Duration::from_millis(25),
};

/// Limits for judging foreign tokens with foreign authorizer code.
const JUDGE_LIMITS: AuthorizerLimits = AuthorizerLimits {
    max_facts: 10_000,
    max_iterations: 1_000,
    max_time: Duration::from_secs(1),
};

/// Verified tokens kept, by their text.
const CACHE_CAPACITY: usize = 4_096;

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// The token is unusable: malformed, wrong signature, expired, revoked.
    #[error("{0}")]
    Unauthenticated(String),
    /// The token is valid but does not grant this call.
    #[error("{message}")]
    Forbidden { message: String, failed_check: String },
}

/// One call, as the authorizer sees it.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub method: &'a str,
    pub operation: Operation,
    /// Every resource the call touches (a conversation and its agent, say).
    pub resources: Vec<Resource>,
    pub node: &'a str,
    pub now: SystemTime,
}

/// Decisions kept per verified token.
const DECISIONS_PER_TOKEN: usize = 256;

/// How a token depends on time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeBound {
    /// No check mentions time.
    Never,
    /// Its only time checks are `check if time($time), $time <= T`: valid
    /// until the earliest such T.
    Until(SystemTime),
    /// It uses time in another way: every call runs the Datalog.
    Other,
}

/// A token that passed signature verification.
#[derive(Debug)]
pub struct Verified {
    pub biscuit: Biscuit,
    /// Hex revocation ids of every block: revoking any one kills the token.
    pub revocation_ids: Vec<String>,
    pub time_bound: TimeBound,
    /// The agent an instance token speaks for (`agent("NAME")` in its
    /// authority block), if it is one.
    pub agent: Option<String>,
    /// The conversation an instance token was issued for, if it is one.
    pub conversation: Option<String>,
    /// Decisions by (method, operation, resources). Sound because, within its
    /// time bound, a decision depends only on those and the token.
    decisions: Mutex<HashMap<String, Result<(), AuthError>>>,
}

impl Verified {
    fn new(biscuit: Biscuit) -> Verified {
        let revocation_ids = biscuit.revocation_identifiers().iter().map(hex::encode).collect();
        let sources: Vec<String> = (0..biscuit.block_count())
            .map(|i| biscuit.print_block_source(i).unwrap_or_else(|_| "time(".into()))
            .collect();
        let agent = sources.first().and_then(|authority| identity(authority, "agent"));
        let conversation = sources
            .first()
            .and_then(|authority| identity(authority, "conversation"));
        Verified {
            biscuit,
            revocation_ids,
            agent,
            conversation,
            time_bound: time_bound(&sources),
            decisions: Mutex::new(HashMap::new()),
        }
    }
}

/// The value of a one-string identity fact (`name("value");`) in a block.
fn identity(source: &str, name: &str) -> Option<String> {
    let prefix = format!("{name}(\"");
    source.lines().find_map(|l| {
        l.trim()
            .strip_prefix(&prefix)
            .and_then(|rest| rest.strip_suffix("\");"))
            .filter(|v| !v.contains('"'))
            .map(str::to_string)
    })
}

/// Reads the time dependence of a token from its blocks' Datalog.
pub fn time_bound(sources: &[String]) -> TimeBound {
    const CANONICAL: &str = "check if time($time), $time <= ";
    let mut until: Option<SystemTime> = None;
    for src in sources {
        let mut rest = src.as_str();
        while let Some(i) = rest.find("time(") {
            let at = &rest[i.saturating_sub(9)..];
            if !at.starts_with(CANONICAL) || i < 9 {
                return TimeBound::Other;
            }
            let after = &at[CANONICAL.len()..];
            let end = after.find(';').unwrap_or(after.len());
            let Some(t) = parse_rfc3339_utc(after[..end].trim()) else {
                return TimeBound::Other;
            };
            until = Some(until.map_or(t, |u| u.min(t)));
            rest = &after[end..];
        }
    }
    until.map_or(TimeBound::Never, TimeBound::Until)
}

/// `YYYY-MM-DDTHH:MM:SSZ` (as biscuit prints dates) to a time.
fn parse_rfc3339_utc(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' || b[16] != b':' || b[19] != b'Z'
    {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r).and_then(|x| x.parse::<i64>().ok());
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days from the civil date (proleptic Gregorian), 1970-01-01 = 0.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs)
        .ok()
        .map(|s| std::time::UNIX_EPOCH + Duration::from_secs(s))
}

/// Verifies and authorizes tokens for one node.
pub struct Verifier {
    /// Grows when the node joins a fleet (its root is trusted from then on).
    roots: std::sync::RwLock<Vec<PublicKey>>,
    cache: Mutex<HashMap<String, Arc<Verified>>>,
    limit_hits: AtomicU64,
}

fn base() -> &'static AuthorizerBuilder {
    static BASE: OnceLock<AuthorizerBuilder> = OnceLock::new();
    BASE.get_or_init(|| {
        AuthorizerBuilder::new()
            .code(POLICIES)
            .map(|b| b.set_limits(LIMITS))
            .unwrap_or_default()
    })
}

impl Verifier {
    /// Trusts tokens signed by any of `roots`.
    pub fn new(roots: Vec<PublicKey>) -> Verifier {
        Verifier {
            roots: std::sync::RwLock::new(roots),
            cache: Mutex::new(HashMap::new()),
            limit_hits: AtomicU64::new(0),
        }
    }

    /// Trusts tokens signed by `root` too (e.g. the fleet root, once a member).
    pub fn trust(&self, root: PublicKey) {
        if let Ok(mut r) = self.roots.write()
            && !r.contains(&root)
        {
            r.push(root);
        }
    }

    /// Stops trusting tokens signed by `root` (this node left that fleet);
    /// tokens already verified under it are forgotten.
    pub fn distrust(&self, root: PublicKey) {
        if let Ok(mut r) = self.roots.write() {
            r.retain(|k| *k != root);
        }
        if let Ok(mut c) = self.cache.lock() {
            c.clear();
        }
    }

    /// How many authorizations hit the Datalog run limits (each a denial).
    pub fn limit_hits(&self) -> u64 {
        self.limit_hits.load(Ordering::Relaxed)
    }

    /// Parses and verifies `token` (cached by its text).
    pub fn verify(&self, token: &str) -> Result<Arc<Verified>, AuthError> {
        let token = token.trim();
        if let Some(v) = self.cache.lock().ok().and_then(|c| c.get(token).cloned()) {
            return Ok(v);
        }
        let v = Arc::new(self.verify_uncached(token)?);
        if let Ok(mut c) = self.cache.lock() {
            if c.len() >= CACHE_CAPACITY {
                c.clear();
            }
            c.insert(token.to_string(), v.clone());
        }
        Ok(v)
    }

    /// Parses and verifies without the cache (for benchmarks and inspection).
    pub fn verify_uncached(&self, token: &str) -> Result<Verified, AuthError> {
        if token.is_empty() {
            return Err(AuthError::Unauthenticated("the token is empty".into()));
        }
        let mut last = String::from("no trusted root key is configured");
        let roots = self.roots.read().map(|r| r.clone()).unwrap_or_default();
        for root in &roots {
            match Biscuit::from_base64(token, *root) {
                Ok(biscuit) => return Ok(Verified::new(biscuit)),
                Err(e) => last = describe_format(&e),
            }
        }
        Err(AuthError::Unauthenticated(last))
    }

    /// Decides `req` for a verified token: from the token's decision cache
    /// when its time bound allows, else by running the Datalog.
    pub fn authorize(&self, token: &Verified, req: &Request<'_>) -> Result<(), AuthError> {
        let key = match token.time_bound {
            TimeBound::Other => return self.run_datalog(token, req),
            TimeBound::Until(t) if req.now > t => {
                return Err(AuthError::Unauthenticated("the token has expired".into()));
            }
            TimeBound::Until(_) | TimeBound::Never => {
                let mut key = format!("{}|{}|{}", req.method, req.operation.as_str(), req.node);
                for r in &req.resources {
                    key.push('|');
                    key.push_str(&r.to_string());
                }
                key
            }
        };
        if let Some(d) = token.decisions.lock().ok().and_then(|d| d.get(&key).cloned()) {
            return d;
        }
        let decision = self.run_datalog(token, req);
        let limited =
            matches!(&decision, Err(AuthError::Forbidden { failed_check, .. }) if failed_check == "run limits");
        if !limited && let Ok(mut d) = token.decisions.lock() {
            if d.len() >= DECISIONS_PER_TOKEN {
                d.clear();
            }
            d.insert(key, decision.clone());
        }
        decision
    }

    /// Runs the policies for `req` against a verified token.
    pub fn run_datalog(&self, token: &Verified, req: &Request<'_>) -> Result<(), AuthError> {
        let mut b = base()
            .clone()
            .fact(fact("method", &[string(req.method)]))
            .and_then(|b| b.fact(fact("operation", &[string(req.operation.as_str())])))
            .and_then(|b| b.fact(fact("time", &[date(&req.now)])))
            .and_then(|b| b.fact(fact("node", &[string(req.node)])))
            .map_err(|e| internal(&e))?;
        for r in &req.resources {
            b = b
                .fact(fact("resource", &[string(&r.to_string())]))
                .map_err(|e| internal(&e))?;
        }
        let mut authorizer = match b.build(&token.biscuit) {
            Ok(a) => a,
            Err(e) => return Err(self.judge(e)),
        };
        match authorizer.authorize() {
            Ok(_) => Ok(()),
            Err(e) => Err(self.judge(e)),
        }
    }

    fn judge(&self, e: TokenError) -> AuthError {
        match e {
            TokenError::FailedLogic(logic) => judge_logic(logic),
            TokenError::RunLimit(limit) => {
                self.limit_hits.fetch_add(1, Ordering::Relaxed);
                AuthError::Forbidden {
                    message: format!("authorization stopped at its run limits ({limit}): denied"),
                    failed_check: "run limits".into(),
                }
            }
            other => AuthError::Forbidden {
                message: format!("authorization failed: {other}"),
                failed_check: other.to_string(),
            },
        }
    }
}

fn internal(e: &TokenError) -> AuthError {
    AuthError::Forbidden {
        message: format!("could not build the authorizer: {e}"),
        failed_check: "authorizer".into(),
    }
}

pub(crate) fn rule_of(c: &FailedCheck) -> &str {
    match c {
        FailedCheck::Block(b) => &b.rule,
        FailedCheck::Authorizer(a) => &a.rule,
    }
}

fn judge_logic(logic: Logic) -> AuthError {
    let checks = match &logic {
        Logic::Unauthorized { checks, .. } | Logic::NoMatchingPolicy { checks } => checks.clone(),
        _ => vec![],
    };
    // An expiry check failing means the token is no longer usable at all.
    if let Some(expired) = checks.iter().find(|c| rule_of(c).contains("time($time)")) {
        return AuthError::Unauthenticated(format!("the token has expired ({})", rule_of(expired)));
    }
    if let Some(first) = checks.first() {
        let rule = rule_of(first).to_string();
        return AuthError::Forbidden {
            message: format!("forbidden: the token's check failed: {rule}"),
            failed_check: rule,
        };
    }
    match logic {
        Logic::Unauthorized { .. } | Logic::NoMatchingPolicy { .. } => AuthError::Forbidden {
            message: "forbidden: the token grants no right for this call".into(),
            failed_check: "no right for this resource and operation".into(),
        },
        other => AuthError::Forbidden {
            message: format!("forbidden: {other}"),
            failed_check: other.to_string(),
        },
    }
}

fn describe_format(e: &TokenError) -> String {
    match e {
        TokenError::Base64(_) => "the token is not valid base64url".into(),
        TokenError::Format(f) => {
            let s = f.to_string();
            if s.to_lowercase().contains("signature") {
                format!("the token's signature does not verify against this node's trusted roots ({s})")
            } else {
                format!("the token is malformed or truncated ({s})")
            }
        }
        other => format!("the token cannot be read ({other})"),
    }
}

/// Judges a standard biscuit given as raw bytes with an authorizer given as
/// Datalog source, under this crate's run limits: the path by which tokens
/// from other biscuit implementations are read. Returns the index of the
/// allow policy that matched, or biscuit's own error.
pub fn judge_raw(token: &[u8], root: PublicKey, authorizer_code: &str) -> Result<usize, TokenError> {
    let biscuit = Biscuit::from(token, root)?;
    let mut authorizer = AuthorizerBuilder::new()
        .code(authorizer_code)?
        .set_limits(JUDGE_LIMITS)
        .build(&biscuit)?;
    authorizer.authorize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds_are_read_only_from_the_canonical_expiry_check() {
        let until = |s: &str| TimeBound::Until(parse_rfc3339_utc(s).expect("date"));
        assert_eq!(time_bound(&[r#"right("node", "admin");"#.into()]), TimeBound::Never);
        assert_eq!(
            time_bound(&[
                "check if time($time), $time <= 2026-11-30T06:49:15Z;\n".into(),
                "check if time($time), $time <= 2026-01-01T00:00:00Z;".into()
            ]),
            until("2026-01-01T00:00:00Z")
        );
        for other in [
            "check if time($t), $t <= 2026-01-01T00:00:00Z;",
            "check if time($time), $time < 2026-01-01T00:00:00Z;",
            "allowed(true) <- time($time);",
            "check if time($time), $time <= 2026-01-01T00:00:00+01:00;",
        ] {
            assert_eq!(time_bound(&[other.into()]), TimeBound::Other, "{other}");
        }
    }

    #[test]
    fn rfc3339_dates() {
        let t = parse_rfc3339_utc("2026-06-01T00:00:00Z").expect("date");
        assert_eq!(
            t.duration_since(std::time::UNIX_EPOCH).expect("after").as_secs(),
            1_780_272_000
        );
        let t = parse_rfc3339_utc("1970-01-01T00:00:01Z").expect("date");
        assert_eq!(t.duration_since(std::time::UNIX_EPOCH).expect("after").as_secs(), 1);
        assert!(parse_rfc3339_utc("2026-13-01T00:00:00Z").is_none());
        assert!(parse_rfc3339_utc("yesterday").is_none());
    }
}
