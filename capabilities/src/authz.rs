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

/// A token that passed signature verification.
#[derive(Debug)]
pub struct Verified {
    pub biscuit: Biscuit,
    /// Hex revocation ids of every block: revoking any one kills the token.
    pub revocation_ids: Vec<String>,
}

/// Verifies and authorizes tokens for one node.
pub struct Verifier {
    roots: Vec<PublicKey>,
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
            roots,
            cache: Mutex::new(HashMap::new()),
            limit_hits: AtomicU64::new(0),
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
        for root in &self.roots {
            match Biscuit::from_base64(token, *root) {
                Ok(biscuit) => {
                    let revocation_ids = biscuit.revocation_identifiers().iter().map(hex::encode).collect();
                    return Ok(Verified {
                        biscuit,
                        revocation_ids,
                    });
                }
                Err(e) => last = describe_format(&e),
            }
        }
        Err(AuthError::Unauthenticated(last))
    }

    /// Runs the policies for `req` against a verified token.
    pub fn authorize(&self, token: &Verified, req: &Request<'_>) -> Result<(), AuthError> {
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

fn rule_of(c: &FailedCheck) -> &str {
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
