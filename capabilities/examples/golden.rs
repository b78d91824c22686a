//! Writes the golden token fixtures (`tests/golden/tokens.json`): tokens of
//! every kind the node issues, each with its allow/deny outcome for every
//! method and place, as judged by this version. `tests/golden.rs` checks that
//! committed tokens keep those outcomes. Run after a deliberate change:
//! `cargo run -p capabilities --example golden > capabilities/tests/golden/tokens.json`
//!
//! When methods are added, extend instead (the committed tokens and their
//! outcomes stay; only calls without one get one):
//! `cargo run -p capabilities --example golden -- --extend capabilities/tests/golden/tokens.json`

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, UNIX_EPOCH};

use capabilities::methods::{COMPANION_ACTIONS, COMPANION_READ};
use capabilities::{MintSpec, Operation, Resource, Restriction, Right, RootKey, Verifier, attenuate};
use serde_json::{Map, Value, json};
use support::*;

/// Adds the outcome of every call that has none to the committed tokens,
/// judged by this version; rewrites the file.
fn extend(path: &str) {
    let text = std::fs::read_to_string(path).expect("read the golden file");
    let mut doc: Value = serde_json::from_str(&text).expect("golden json");
    let root = capabilities::public_key_from_hex(doc["root_public_key"].as_str().expect("key")).expect("key");
    let v = Verifier::new(vec![root]);
    let mut added = 0;
    for t in doc["tokens"].as_array_mut().expect("tokens") {
        let verified = v.verify(t["token"].as_str().expect("token")).expect("verify");
        let outcomes = t["outcomes"].as_object_mut().expect("outcomes");
        for (method, place, resources) in calls() {
            let key = format!("{method} @ {place}");
            if !outcomes.contains_key(&key) {
                outcomes.insert(key, json!(outcome(&v, &verified, &method, resources, now())));
                added += 1;
            }
        }
    }
    std::fs::write(path, serde_json::to_string_pretty(&doc).expect("json") + "\n").expect("write");
    eprintln!("added {added} outcomes");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--extend") {
        extend(args.get(2).expect("--extend FILE"));
        return;
    }
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");
    let companion = |actions: bool| {
        let mut rights = vec![Right::new(Resource::Node, Operation::Observe)];
        let mut methods: Vec<String> = COMPANION_READ.iter().map(|s| s.to_string()).collect();
        if actions {
            rights.push(Right::new(Resource::Node, Operation::Supervise));
            methods.extend(COMPANION_ACTIONS.iter().map(|s| s.to_string()));
        }
        root.mint(&MintSpec {
            rights,
            methods: Some(methods),
            ..MintSpec::default()
        })
        .expect("mint")
    };
    let tokens = vec![
        ("admin", admin.clone()),
        (
            "admin attenuated to observe agent a",
            attenuate(
                &admin,
                &Restriction {
                    agents: vec!["a".into()],
                    operations: vec![Operation::Observe],
                    ..Restriction::default()
                },
            )
            .expect("attenuate"),
        ),
        (
            "admin attenuated to conversation ca, terminal",
            attenuate(
                &admin,
                &Restriction {
                    conversations: vec!["ca".into()],
                    operations: vec![Operation::Terminal],
                    ..Restriction::default()
                },
            )
            .expect("attenuate"),
        ),
        ("companion", companion(false)),
        ("companion with actions", companion(true)),
        (
            "instance token of agent a (peer b), valid until 2030",
            root.mint(&MintSpec {
                rights: vec![
                    Right::new(Resource::Agent("a".into()), Operation::Observe),
                    Right::new(Resource::Agent("b".into()), Operation::Message),
                ],
                expires_at: Some(UNIX_EPOCH + Duration::from_secs(1_893_456_000)),
                facts: vec![("agent".into(), "a".into()), ("conversation".into(), "ca".into())],
                ..MintSpec::default()
            })
            .expect("mint"),
        ),
        (
            "admin that expired on 2026-01-01",
            attenuate(
                &admin,
                &Restriction {
                    expires_at: Some(UNIX_EPOCH + Duration::from_secs(1_767_225_600)),
                    ..Restriction::default()
                },
            )
            .expect("attenuate"),
        ),
    ];
    let mut out = vec![];
    for (name, token) in tokens {
        let t = v.verify(&token).expect("verify");
        let mut outcomes = Map::new();
        for (method, place, resources) in calls() {
            outcomes.insert(
                format!("{method} @ {place}"),
                json!(outcome(&v, &t, &method, resources, now())),
            );
        }
        out.push(json!({ "name": name, "token": token, "outcomes": Value::Object(outcomes) }));
    }
    let doc = json!({
        "about": "Golden tokens: each token's outcome for every method and place at 2026-06-01T00:00:00Z on node n-test. Regenerate only after a deliberate change (see examples/golden.rs).",
        "root_public_key": root.public_hex(),
        "tokens": out,
    });
    println!("{}", serde_json::to_string_pretty(&doc).expect("json"));
}
