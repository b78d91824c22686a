//! Whether a verified token is still usable at a time, asked where a token
//! is presented (the upgrade's bearer, `session.authenticate`) rather than
//! at its first call: an expired token is refused at the door.

use std::time::SystemTime;

use biscuit_auth::AuthorizerBuilder;
use biscuit_auth::builder::{date, fact};
use biscuit_auth::error::{Logic, Token as TokenError};

use crate::authz::{AuthError, LIMITS, TimeBound, Verified, rule_of};

/// `Ok` while `token` can still be used at `now`; `Unauthenticated` naming
/// the expiry once a check on time alone fails. The canonical expiry
/// (`check if time($time), $time <= T`) is read from the token's time bound;
/// any other use of time is run as Datalog with only the time known, and
/// only checks that mention nothing but `time` can fail it (the others
/// depend on the call and are judged there).
pub fn usable_at(token: &Verified, now: SystemTime) -> Result<(), AuthError> {
    match token.time_bound {
        TimeBound::Never => Ok(()),
        TimeBound::Until(t) if now > t => Err(AuthError::Unauthenticated("the token has expired".into())),
        TimeBound::Until(_) => Ok(()),
        TimeBound::Other => other_time_checks(token, now),
    }
}

fn other_time_checks(token: &Verified, now: SystemTime) -> Result<(), AuthError> {
    let built = AuthorizerBuilder::new()
        .code("allow if true;")
        .and_then(|b| b.fact(fact("time", &[date(&now)])))
        .map(|b| b.set_limits(LIMITS))
        .and_then(|b| b.build(&token.biscuit));
    let failed = match built.and_then(|mut a| a.authorize()) {
        Ok(_) => return Ok(()),
        Err(TokenError::FailedLogic(Logic::Unauthorized { checks, .. } | Logic::NoMatchingPolicy { checks })) => checks,
        // A run limit or another failure decides nothing here: the call's
        // own authorization will.
        Err(_) => return Ok(()),
    };
    match failed.iter().map(rule_of).find(|rule| only_time(rule)) {
        Some(rule) => Err(AuthError::Unauthenticated(format!("the token has expired ({rule})"))),
        None => Ok(()),
    }
}

/// True when every predicate a rule's body names is `time` (expressions'
/// methods such as `.starts_with(` are not predicates).
pub(crate) fn only_time(rule: &str) -> bool {
    let body = rule
        .trim_start()
        .strip_prefix("check if")
        .or_else(|| rule.trim_start().strip_prefix("check all"))
        .or_else(|| rule.trim_start().strip_prefix("reject if"))
        .unwrap_or(rule);
    let bytes = body.as_bytes();
    let mut names = vec![];
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'"' {
            // Skip a string literal.
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b':') {
                i += 1;
            }
            let preceded = start > 0 && matches!(bytes[start - 1], b'.' | b'$');
            if !preceded && bytes.get(i) == Some(&b'(') {
                names.push(&body[start..i]);
            }
            continue;
        }
        i += 1;
    }
    !names.is_empty() && names.iter().all(|n| *n == "time")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_checks_on_time_alone_are_expiry() {
        for yes in [
            "check if time($time), $time <= 2026-01-01T00:00:00Z",
            "check if time($t), $t < 2026-01-01T00:00:00Z",
            "check all time($t), $t.to_string().starts_with(\"2\")",
        ] {
            assert!(only_time(yes), "{yes}");
        }
        for no in [
            "check if method(\"agent.get\")",
            "check if time($t), $t <= 2026-01-01T00:00:00Z or method(\"node.info\")",
            "check if resource(\"time(\")",
            "check if true",
        ] {
            assert!(!only_time(no), "{no}");
        }
    }

    #[test]
    fn a_token_past_its_expiry_is_unusable_and_one_before_it_is_fine() {
        let root = crate::RootKey::generate();
        let v = crate::Verifier::new(vec![root.public()]);
        let now = SystemTime::now();
        let spec = |expires_at| crate::MintSpec {
            rights: vec![crate::Right::new(crate::Resource::Node, crate::Operation::Observe)],
            expires_at,
            ..Default::default()
        };
        let fresh = v
            .verify(&root.mint(&spec(Some(now + Duration::from_secs(60)))).expect("mint"))
            .expect("verify");
        assert!(usable_at(&fresh, now).is_ok());
        let stale = v
            .verify(&root.mint(&spec(Some(now - Duration::from_secs(60)))).expect("mint"))
            .expect("verify");
        assert!(matches!(usable_at(&stale, now), Err(AuthError::Unauthenticated(m)) if m.contains("expired")));
        let forever = v.verify(&root.mint(&spec(None)).expect("mint")).expect("verify");
        assert!(usable_at(&forever, now).is_ok());
    }

    #[test]
    fn other_uses_of_time_are_judged_by_running_them() {
        let root = crate::RootKey::generate();
        let v = crate::Verifier::new(vec![root.public()]);
        let admin = root.mint_admin("n").expect("mint");
        let with = |code: &str| {
            let b = biscuit_auth::Biscuit::from_base64(&admin, root.public()).expect("parse");
            let block = biscuit_auth::builder::BlockBuilder::new().code(code).expect("datalog");
            let t = b.append(block).expect("append").to_base64().expect("encode");
            v.verify(&t).expect("verify")
        };
        let past = with("check if time($t), $t < 2001-01-01T00:00:00Z;");
        assert_eq!(past.time_bound, TimeBound::Other);
        assert!(usable_at(&past, SystemTime::now()).is_err());
        let future = with("check if time($t), $t < 2999-01-01T00:00:00Z;");
        assert!(usable_at(&future, SystemTime::now()).is_ok());
        // Time or a method: still usable for that method, so not expired.
        let either = with("check if time($t), $t < 2001-01-01T00:00:00Z or method(\"node.info\");");
        assert!(usable_at(&either, SystemTime::now()).is_ok());
    }
}
