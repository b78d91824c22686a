//! Committed golden tokens keep their committed allow/deny outcomes for every
//! method and place (the fixtures come from `examples/golden.rs`).

mod support;

use capabilities::{Verifier, public_key_from_hex};
use serde_json::Value;
use support::*;

#[test]
fn golden_tokens_keep_their_outcomes() {
    let text = include_str!("golden/tokens.json");
    let doc: Value = serde_json::from_str(text).expect("golden json");
    let root = public_key_from_hex(doc["root_public_key"].as_str().expect("key")).expect("key");
    let v = Verifier::new(vec![root]);
    let mut checked = 0;
    let mut changed = vec![];
    for t in doc["tokens"].as_array().expect("tokens") {
        let name = t["name"].as_str().expect("name");
        let verified = v
            .verify(t["token"].as_str().expect("token"))
            .expect("golden tokens verify");
        let outcomes = t["outcomes"].as_object().expect("outcomes");
        for (method, place, resources) in calls() {
            let key = format!("{method} @ {place}");
            let want = outcomes
                .get(&key)
                .and_then(Value::as_str)
                .unwrap_or("(no golden outcome)");
            let got = outcome(&v, &verified, &method, resources.clone(), now());
            // The decision cache answers exactly what the Datalog answers.
            let again = outcome(&v, &verified, &method, resources.clone(), now());
            let datalog = match v.run_datalog(&verified, &request(&method, resources, now())) {
                Ok(()) => "allow",
                Err(capabilities::AuthError::Forbidden { .. }) => "deny",
                Err(capabilities::AuthError::Unauthenticated(_)) => "unauthenticated",
            };
            assert_eq!((got, again), (datalog, datalog), "{name}: {key}");
            checked += 1;
            if want != got {
                changed.push(format!("{name}: {key}: golden {want}, now {got}"));
            }
        }
        assert_eq!(
            outcomes.len(),
            calls().len(),
            "{name}: golden outcomes cover every call"
        );
    }
    assert!(
        changed.is_empty(),
        "{} outcomes changed:\n{}",
        changed.len(),
        changed.join("\n")
    );
    assert_eq!(
        checked,
        7 * calls().len(),
        "every golden token was checked against every call"
    );
}
