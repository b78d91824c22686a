//! Shared scenario helpers for the capability tests: a tiny fixed world (node
//! `n-test`, agents a and b, conversation ca of a and cb of b) and the request
//! each method makes in it.
#![allow(dead_code, unreachable_pub)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capabilities::methods::{Scope, TABLE, need_of};
use capabilities::{AuthError, Request, Resource, Verified, Verifier};

pub const NODE: &str = "n-test";

/// 2026-06-01T00:00:00Z
pub fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_780_272_000)
}

/// The places a call can act on: (label, resources).
pub fn places() -> Vec<(&'static str, Vec<Resource>)> {
    vec![
        ("node", vec![Resource::Node]),
        ("agent a", vec![Resource::Agent("a".into())]),
        ("agent b", vec![Resource::Agent("b".into())]),
        (
            "conversation ca",
            vec![Resource::Conversation("ca".into()), Resource::Agent("a".into())],
        ),
        (
            "conversation cb",
            vec![Resource::Conversation("cb".into()), Resource::Agent("b".into())],
        ),
        ("tool t", vec![Resource::Tool("t".into())]),
    ]
}

/// Every (method, place) a token can be asked about, as the node would build it.
pub fn calls() -> Vec<(String, &'static str, Vec<Resource>)> {
    let mut out = vec![];
    for (method, need) in TABLE {
        for (label, resources) in places() {
            let fits = match need.scope {
                Scope::Caller => false,
                Scope::Node => label == "node",
                Scope::Agent => label.starts_with("agent"),
                Scope::Conversation | Scope::Task => label.starts_with("conversation"),
                Scope::Narrowest => !label.starts_with("tool"),
                Scope::Tool => label.starts_with("tool"),
            };
            if fits {
                out.push((method.to_string(), label, resources));
            }
        }
    }
    out
}

pub fn request<'a>(method: &'a str, resources: Vec<Resource>, at: SystemTime) -> Request<'a> {
    Request {
        method,
        operation: need_of(method).expect("known method").operation,
        resources,
        node: NODE,
        now: at,
    }
}

/// "allow", "deny" or "unauthenticated".
pub fn outcome(v: &Verifier, token: &Verified, method: &str, resources: Vec<Resource>, at: SystemTime) -> &'static str {
    match v.authorize(token, &request(method, resources, at)) {
        Ok(()) => "allow",
        Err(AuthError::Forbidden { .. }) => "deny",
        Err(AuthError::Unauthenticated(_)) => "unauthenticated",
    }
}
