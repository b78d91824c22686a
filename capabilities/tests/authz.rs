//! Authorization end to end on real biscuits: attenuation narrows (with our
//! helper and with the biscuit library directly, as a third party would),
//! denials name the failed check, bad tokens are unauthenticated, and any
//! chain of attenuations allows a subset of what its parent allows.

mod support;

use std::time::Duration;

use biscuit_auth::builder::BlockBuilder;
use capabilities::methods::TABLE;
use capabilities::{
    AuthError, MintSpec, Operation, Resource, Restriction, Right, RootKey, Verifier, attenuate, inspect_unverified,
};
use proptest::prelude::*;
use support::*;

fn conv_a() -> Vec<Resource> {
    vec![Resource::Conversation("ca".into()), Resource::Agent("a".into())]
}
fn conv_b() -> Vec<Resource> {
    vec![Resource::Conversation("cb".into()), Resource::Agent("b".into())]
}

#[test]
fn admin_allows_every_call() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let t = v.verify(&root.mint_admin(NODE).expect("mint")).expect("verify");
    for (method, place, resources) in calls() {
        assert_eq!(
            outcome(&v, &t, &method, resources, now()),
            "allow",
            "{method} on {place}"
        );
    }
}

fn assert_observe_a_only(v: &Verifier, token: &str) {
    let t = v.verify(token).expect("verify");
    assert_eq!(outcome(v, &t, "transcript.read", conv_a(), now()), "allow");
    assert_eq!(
        outcome(v, &t, "agent.get", vec![Resource::Agent("a".into())], now()),
        "allow"
    );
    for (method, resources, needle) in [
        ("conversation.sendMessage", conv_a(), "operation"),
        ("transcript.read", conv_b(), "resource"),
        ("agent.create", vec![Resource::Node], "resource"),
        ("conversation.sendKeys", conv_a(), "operation"),
    ] {
        match v.authorize(&t, &request(method, resources, now())) {
            Err(AuthError::Forbidden { message, failed_check }) => {
                assert!(
                    failed_check.starts_with("check if") && failed_check.contains(needle),
                    "{method}: {failed_check}"
                );
                assert!(message.contains(&failed_check), "{message}");
            }
            other => panic!("{method} should be forbidden, got {other:?}"),
        }
    }
}

#[test]
fn attenuating_to_observe_one_agent() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");
    let narrowed = attenuate(
        &admin,
        &Restriction {
            agents: vec!["a".into()],
            operations: vec![Operation::Observe],
            ..Restriction::default()
        },
    )
    .expect("attenuate");
    assert_observe_a_only(&v, &narrowed);
    // The new block is plain Datalog that any biscuit tool can read.
    let blocks = inspect_unverified(&narrowed).expect("inspect").blocks;
    assert_eq!(blocks.len(), 2);
    assert!(blocks[0].contains(r#"right("node", "admin")"#), "{}", blocks[0]);
    assert!(
        blocks[1].contains(r#"check if resource($resource), {"agent:a"}.contains($resource)"#),
        "{}",
        blocks[1]
    );
}

#[test]
fn a_third_party_block_built_with_the_biscuit_library_is_honoured() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");
    // What another biscuit implementation would do: parse, append Datalog, serialize.
    let t = biscuit_auth::UnverifiedBiscuit::from_base64(&admin).expect("parse");
    let block = BlockBuilder::new()
        .code(r#"check if resource("agent:a"); check if operation("observe");"#)
        .expect("datalog");
    let narrowed = t.append(block).expect("append").to_base64().expect("encode");
    assert_observe_a_only(&v, &narrowed);
}

#[test]
fn unusable_tokens_are_unauthenticated_with_a_reason() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");

    let expired = attenuate(
        &admin,
        &Restriction {
            expires_at: Some(now() - Duration::from_secs(60)),
            ..Restriction::default()
        },
    )
    .expect("attenuate");
    let t = v.verify(&expired).expect("the signature is fine");
    match v.authorize(&t, &request("node.info", vec![Resource::Node], now())) {
        Err(AuthError::Unauthenticated(m)) => assert!(m.contains("expired"), "{m}"),
        other => panic!("expected expiry, got {other:?}"),
    }

    let other_root = RootKey::generate();
    let foreign = other_root.mint_admin(NODE).expect("mint");
    let half = &admin[..admin.len() / 2];
    for (label, token, needle) in [
        ("another root", foreign.as_str(), "signature"),
        ("truncated", half, "malformed"),
        (
            "random base64",
            "aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSB0b2tlbg",
            "malformed",
        ),
        ("not base64", "!!!", "base64"),
        ("empty", "", "empty"),
    ] {
        match v.verify(token) {
            Err(AuthError::Unauthenticated(m)) => assert!(m.contains(needle), "{label}: {m}"),
            other => panic!("{label}: expected unauthenticated, got {other:?}"),
        }
    }
}

#[test]
fn minted_rights_methods_and_identity() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let token = root
        .mint(&MintSpec {
            rights: vec![
                Right::new(Resource::Agent("a".into()), Operation::Observe),
                Right::new(Resource::AllAgents, Operation::Message),
            ],
            expires_at: Some(now() + Duration::from_secs(600)),
            methods: Some(vec!["transcript.read".into(), "mailbox.send".into()]),
            facts: vec![("conversation".into(), "ca".into())],
        })
        .expect("mint");
    let t = v.verify(&token).expect("verify");
    assert_eq!(outcome(&v, &t, "transcript.read", conv_a(), now()), "allow");
    assert_eq!(
        outcome(&v, &t, "conversation.get", conv_a(), now()),
        "deny",
        "not in the method list"
    );
    assert_eq!(outcome(&v, &t, "transcript.read", conv_b(), now()), "deny");
    assert_eq!(
        outcome(&v, &t, "mailbox.send", vec![Resource::Agent("b".into())], now()),
        "allow",
        "agent:* wildcard"
    );
    assert_eq!(
        outcome(&v, &t, "transcript.read", conv_a(), now() + Duration::from_secs(601)),
        "unauthenticated",
        "past its expiry"
    );
}

#[derive(Debug, Clone)]
struct Step(Restriction);

fn restriction() -> impl Strategy<Value = Step> {
    let agents = proptest::sample::subsequence(vec!["a", "b", "z"], 0..=2);
    let convs = proptest::sample::subsequence(vec!["ca", "cb"], 0..=1);
    let ops = proptest::sample::subsequence(Operation::ALL.to_vec(), 0..=3);
    let methods: Vec<&'static str> = TABLE.iter().map(|(m, _)| *m).collect();
    let methods = proptest::sample::subsequence(methods, 0..=6);
    let expiry = proptest::option::of(-120i64..120);
    (agents, convs, ops, methods, expiry).prop_filter_map("empty", |(a, c, o, m, e)| {
        let r = Restriction {
            agents: a.into_iter().map(String::from).collect(),
            conversations: c.into_iter().map(String::from).collect(),
            operations: o,
            methods: m.into_iter().map(String::from).collect(),
            expires_at: e.map(|s| {
                if s < 0 {
                    now() - Duration::from_secs(s.unsigned_abs())
                } else {
                    now() + Duration::from_secs(s as u64)
                }
            }),
        };
        (!r.is_empty()).then_some(Step(r))
    })
}

fn base_token() -> impl Strategy<Value = Vec<Right>> {
    let right = (0usize..5, proptest::sample::select(Operation::ALL.to_vec())).prop_map(|(r, op)| {
        let res = match r {
            0 => Resource::Node,
            1 => Resource::AllAgents,
            2 => Resource::Agent("a".into()),
            3 => Resource::Agent("b".into()),
            _ => Resource::Conversation("ca".into()),
        };
        Right::new(res, op)
    });
    proptest::collection::vec(right, 1..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any chain of attenuations allows a subset of what its parent allows,
    /// over every method and every place it can act on.
    #[test]
    fn attenuation_never_widens(rights in base_token(), chain in proptest::collection::vec(restriction(), 1..4)) {
        let root = RootKey::generate();
        let v = Verifier::new(vec![root.public()]);
        let mut token = root.mint(&MintSpec { rights, ..MintSpec::default() }).expect("mint");
        let calls = calls();
        let mut allowed: Vec<bool> = {
            let t = v.verify(&token).expect("verify");
            calls.iter().map(|(m, _, r)| outcome(&v, &t, m, r.clone(), now()) == "allow").collect()
        };
        for Step(r) in chain {
            token = attenuate(&token, &r).expect("attenuate");
            let t = v.verify(&token).expect("verify");
            for (i, (m, place, res)) in calls.iter().enumerate() {
                let now_allowed = outcome(&v, &t, m, res.clone(), now()) == "allow";
                prop_assert!(!now_allowed || allowed[i], "{} on {} became allowed after {:?}", m, place, r);
                allowed[i] = now_allowed;
            }
        }
    }
}

#[test]
fn a_runaway_token_hits_the_run_limits_and_is_a_counted_denial() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");
    // A block whose rule multiplies facts past the limit (60 x 60 pairs).
    let t = biscuit_auth::UnverifiedBiscuit::from_base64(&admin).expect("parse");
    let facts: String = (0..60).map(|i| format!("f({i}); ")).collect();
    let block = BlockBuilder::new()
        .code(format!("{facts} g($a, $b) <- f($a), f($b); check if g(0, 0);"))
        .expect("datalog");
    let runaway = t.append(block).expect("append").to_base64().expect("encode");
    let verified = v.verify(&runaway).expect("verify");
    match v.authorize(&verified, &request("node.info", vec![Resource::Node], now())) {
        Err(AuthError::Forbidden { message, .. }) => assert!(message.contains("run limits"), "{message}"),
        other => panic!("expected a run-limit denial, got {other:?}"),
    }
    assert_eq!(v.limit_hits(), 1);
    // Not cached: the next call runs (and is counted) again.
    let _ = v.authorize(&verified, &request("node.info", vec![Resource::Node], now()));
    assert_eq!(v.limit_hits(), 2);
}

#[test]
fn an_answer_token_answers_its_one_hold_until_it_expires() {
    let root = RootKey::generate();
    let v = Verifier::new(vec![root.public()]);
    let admin = root.mint_admin(NODE).expect("mint");
    let until = now() + Duration::from_secs(900);
    let token = capabilities::answer_only(&admin, "h-1", until).expect("narrow");
    let t = v.verify(&token).expect("verify");
    let hold = |id: &str| vec![Resource::Node, Resource::Hold(id.into())];
    assert_eq!(outcome(&v, &t, "supervision.answer", hold("h-1"), now()), "allow");
    assert_eq!(outcome(&v, &t, "supervision.answer", hold("h-2"), now()), "deny");
    // Without a hold the call touches none: denied.
    assert_eq!(
        outcome(&v, &t, "supervision.answer", vec![Resource::Node], now()),
        "deny"
    );
    for (method, place, resources) in calls() {
        if method != "supervision.answer" {
            assert_eq!(
                outcome(&v, &t, &method, resources, now()),
                "deny",
                "{method} on {place}"
            );
        }
    }
    let later = until + Duration::from_secs(1);
    assert_eq!(
        outcome(&v, &t, "supervision.answer", hold("h-1"), later),
        "unauthenticated"
    );

    // It narrows: a read-only token stays unable to answer.
    let reader = attenuate(
        &admin,
        &Restriction {
            operations: vec![Operation::Observe],
            ..Default::default()
        },
    )
    .expect("narrow");
    let r = v
        .verify(&capabilities::answer_only(&reader, "h-1", until).expect("narrow"))
        .expect("verify");
    assert_eq!(outcome(&v, &r, "supervision.answer", hold("h-1"), now()), "deny");
    assert!(capabilities::answer_only(&admin, "a\"b", until).is_err());
}
