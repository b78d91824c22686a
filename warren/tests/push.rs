//! Web Push from a real node: a held dialog is POSTed to the subscription's
//! endpoint (a local push service stand-in, so `[push] allow_private`),
//! encrypted for the subscriber and signed with the node's VAPID key, both
//! checked by an independent implementation (Python's `cryptography`, from
//! the py-libp2p tools venv: `deploy/scripts/fetch-py-libp2p.sh`); the
//! push's `answer_token` answers that one hold and nothing else; retries on
//! 503, drops the subscription on 410; an exhausted budget reaches the
//! subscriptions that want that kind only; and bad subscriptions are
//! refused with the field named, nothing stored.

#[path = "push/oracle.rs"]
mod oracle;
mod support;

use std::time::{Duration, SystemTime};

use fake_model::push::{FakePush, Pushed};
use oracle::{open, oracle, subscription};
use serde_json::json;
use support::*;

/// A fake push service on 127.0.0.1 (what a browser's vendor runs).
async fn push_service() -> FakePush {
    FakePush::start("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("fake push service")
}

/// The next POST to `path`, within 20 s.
async fn next_to(sink: &mut FakePush, path: &str) -> Pushed {
    sink.next_to(path, Duration::from_secs(20))
        .await
        .unwrap_or_else(|| panic!("no push POSTed to {path} within 20 s"))
}

/// The node's admin token narrowed to observing.
fn reader_token(node: &TestNode) -> String {
    capabilities::attenuate(
        &admin_token(node),
        &capabilities::Restriction {
            operations: vec![capabilities::Operation::Observe],
            ..Default::default()
        },
    )
    .expect("narrow")
}

fn admin_token(node: &TestNode) -> String {
    std::fs::read_to_string(node.path().join("admin.token"))
        .expect("admin token")
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_is_pushed_encrypted_and_signed_and_its_answer_token_answers_it_only() {
    let node = TestNode::start_with_config("[supervision]\nenabled = true\n[push]\nallow_private = true\n");
    let mut c = node.client().await;
    create_agent(&mut c, "sup").await;
    let (code, _, err) = warren(&["supervision", "set", "sup", "--enable"], &node.path());
    assert_eq!(code, 0, "supervision set: {err}");
    let id = conversation_id(&mut c, "sup").await;
    let info = call(&mut c, "node.info", json!({})).await;
    let vapid = info["vapid_public_key"]
        .as_str()
        .expect("node.info names its VAPID key")
        .to_string();

    let mut sink = push_service().await;
    let keys = oracle("keys", None);
    let sub = call(&mut c, "push.subscribe", subscription(&sink.url("/push/admin"), &keys)).await;
    assert_eq!(sub["vapid_public_key"], vapid.as_str());
    // A read-only token's subscription gets the hold without an answer token.
    let reader = reader_token(&node);
    let mut ro = client_with(&node, &reader).await;
    let ro_keys = oracle("keys", None);
    call(
        &mut ro,
        "push.subscribe",
        subscription(&sink.url("/push/reader"), &ro_keys),
    )
    .await;
    let listed = call(&mut c, "push.list", json!({})).await;
    let subs = listed["subscriptions"].as_array().expect("subscriptions");
    assert_eq!(subs.len(), 1, "each token lists its own: {listed}");
    assert_eq!(subs[0]["subscription"], sub["subscription"]);
    assert_eq!(
        subs[0]["origin"],
        sink.url(""),
        "the origin, not the endpoint's secret path"
    );

    // The push service is briefly down: the node retries.
    sink.answer("/push/admin", &[503]);
    let asked = SystemTime::now();
    send(&mut c, &id, "/fake tool bash git push --force").await;
    let first = next_to(&mut sink, "/push/admin").await;
    let again = next_to(&mut sink, "/push/admin").await;
    let hold = wait_until("the hold", Duration::from_secs(20), || {
        let target = node.target();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let h = call(&mut c, "supervision.holds", json!({ "agent": "sup" })).await;
            h["holds"][0]["id"].as_str().map(str::to_string)
        }
    })
    .await;
    for p in [&first, &again] {
        assert_eq!(p.header("content-encoding"), Some("aes128gcm"));
        assert_eq!(p.header("urgency"), Some("high"), "a hold is urgent");
        let ttl: u64 = p.header("ttl").expect("TTL").parse().expect("TTL number");
        assert!(
            (60..=900).contains(&ttl),
            "a hold's push lives at most as long as its answer: {ttl}"
        );
        let opened = open(p, &keys);
        assert_eq!(opened["header"]["alg"], "ES256");
        assert_eq!(opened["k"], vapid.as_str(), "signed with the key node.info publishes");
        assert_eq!(
            opened["claims"]["aud"],
            sink.url(""),
            "the JWT's audience is the push service's origin"
        );
        let exp = opened["claims"]["exp"].as_u64().expect("exp");
        let now = asked.duration_since(SystemTime::UNIX_EPOCH).expect("clock").as_secs();
        assert!(exp > now && exp <= now + 24 * 3600, "exp within a day: {exp}");
        assert!(
            opened["claims"]["sub"]
                .as_str()
                .is_some_and(|s| s.starts_with("mailto:"))
        );
        let pl = &opened["payload"];
        assert_eq!(pl["kind"], "hold", "{pl}");
        assert_eq!(
            (pl["agent"].as_str(), pl["conversation"].as_str()),
            (Some("sup"), Some(id.as_str()))
        );
        assert_eq!(pl["hold"]["id"], hold.as_str());
        assert_eq!(pl["hold"]["summary"], "git push --force");
        assert!(
            pl["title"].as_str().is_some_and(|t| t.contains("git push --force")),
            "{pl}"
        );
        assert!(pl["node"].is_string() && pl["at"].is_u64(), "{pl}");
    }
    assert_ne!(first.body, again.body, "each attempt is encrypted afresh");
    let to_reader = next_to(&mut sink, "/push/reader").await;
    let ro_payload = &open(&to_reader, &ro_keys)["payload"];
    assert_eq!(ro_payload["hold"]["id"], hold.as_str());
    assert!(
        ro_payload.get("answer_token").is_none(),
        "a read-only token cannot answer: {ro_payload}"
    );

    // The answer token answers that hold and nothing else.
    let answer = open(&again, &keys)["payload"]["answer_token"]
        .as_str()
        .expect("an answer token for a token that may answer")
        .to_string();
    let mut phone = client_with(&node, &answer).await;
    let e = call_err(&mut phone, "supervision.holds", json!({})).await;
    assert_eq!(e.code, -32003, "{e:?}");
    let e = call_err(&mut phone, "agent.list", json!({})).await;
    assert_eq!(e.code, -32003, "{e:?}");
    let e = call_err(
        &mut phone,
        "supervision.answer",
        json!({ "hold": "h-another", "decision": "approve" }),
    )
    .await;
    assert_eq!(e.code, -32003, "another hold: {e:?}");
    let expired = capabilities::answer_only(&admin_token(&node), &hold, SystemTime::now() - Duration::from_secs(1))
        .expect("narrow");
    // An expired token is refused at the door, before any call.
    let refused = warren::client::Client::connect(&warren::client::Target {
        url: node.target().url,
        token: Some(expired),
    })
    .await
    .err()
    .expect("an expired answer token is refused");
    assert!(refused.to_string().contains("expired"), "{refused}");
    assert!(
        support::supervised::hold_of(&mut c, "git push --force").await.is_some(),
        "still held"
    );
    call(
        &mut phone,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    let e = call_err(
        &mut phone,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    assert_eq!(e.code, -32004, "answered already: {e:?}");

    // The reader's token is revoked: its subscription gets nothing more.
    let ids = call(&mut c, "token.inspect", json!({ "token": reader })).await["revocation_ids"].clone();
    let last = ids
        .as_array()
        .and_then(|a| a.last())
        .and_then(|v| v.as_str())
        .expect("an id")
        .to_string();
    call(&mut c, "token.revoke", json!({ "revocation_id": last })).await;

    // The push service says the subscription is gone: it is dropped.
    wait_idle(&mut c, &id).await;
    sink.answer("/push/admin", &[410]);
    send(&mut c, &id, "/fake tool bash git push --force origin main").await;
    next_to(&mut sink, "/push/admin").await;
    assert!(
        sink.next_to("/push/reader", Duration::from_secs(2)).await.is_none(),
        "a revoked token's subscription was pushed to"
    );
    wait_until("the gone subscription dropped", Duration::from_secs(10), || {
        let target = node.target();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let l = call(&mut c, "push.list", json!({})).await;
            l["subscriptions"]
                .as_array()
                .is_some_and(|s| s.is_empty())
                .then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_subscriptions_are_refused_by_name_and_each_token_is_bounded() {
    let strict = TestNode::start();
    let mut c = strict.client().await;
    let keys = oracle("keys", None);
    for (endpoint, want) in [
        ("http://127.0.0.1:9/p", "not https"),
        ("https://127.0.0.1:9/p", "not a public address"),
        ("https://[::1]/p", "not a public address"),
        ("https://10.1.2.3/p", "not a public address"),
        ("https://localhost:9/p", "localhost resolves"),
        ("ftp://push.example.net/p", "not an https:// URL"),
    ] {
        let e = call_err(&mut c, "push.subscribe", subscription(endpoint, &keys)).await;
        assert_eq!(e.code, -32602, "{endpoint}: {e:?}");
        assert!(e.message.contains(want), "{endpoint}: {}", e.message);
    }

    let node = TestNode::start_with_config("[push]\nallow_private = true\n");
    let mut c = node.client().await;
    let url = "http://127.0.0.1:9/p";
    let short_key = json!({ "endpoint": url, "keys": { "p256dh": "BAAA", "auth": keys["auth"] } });
    let short_auth = json!({ "endpoint": url, "keys": { "p256dh": keys["p256dh"], "auth": "AAAA" } });
    let off_curve =
        json!({ "endpoint": url, "keys": { "p256dh": format!("B{}", "A".repeat(86)), "auth": keys["auth"] } });
    let mut bad_kind = subscription(url, &keys);
    bad_kind["kinds"] = json!(["hold", "lunch"]);
    for (params, want) in [
        (short_key, "keys.p256dh: 3 bytes"),
        (short_auth, "keys.auth: 3 bytes"),
        (off_curve, "keys.p256dh: not a point"),
        (bad_kind, "kinds: unknown kind \"lunch\""),
        (json!({ "endpoint": url }), "keys"),
    ] {
        let e = call_err(&mut c, "push.subscribe", params.clone()).await;
        assert_eq!(e.code, -32602, "{params}: {e:?}");
        assert!(e.message.contains(want), "{params}: {}", e.message);
    }
    assert_eq!(call(&mut c, "push.list", json!({})).await["subscriptions"], json!([]));

    // 1,000 subscriptions from one token: 16 are kept, the rest refused.
    let mut kept = vec![];
    for i in 0..1000 {
        match c
            .call(
                "push.subscribe",
                subscription(&format!("http://127.0.0.1:9/p{i}"), &keys),
            )
            .await
        {
            Ok(v) => kept.push(v["subscription"].as_str().expect("id").to_string()),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("already has 16 push subscriptions"), "{i}: {e}");
            }
        }
    }
    assert_eq!(kept.len(), 16);
    let listed = call(&mut c, "push.list", json!({})).await;
    assert_eq!(listed["subscriptions"].as_array().map(Vec::len), Some(16));
    // Subscribing an endpoint again replaces it rather than adding one.
    call(&mut c, "push.subscribe", subscription("http://127.0.0.1:9/p0", &keys)).await;
    let listed = call(&mut c, "push.list", json!({})).await;
    assert_eq!(listed["subscriptions"].as_array().map(Vec::len), Some(16));

    // Another token cannot end them; its owner can.
    let reader = reader_token(&node);
    let mut other = client_with(&node, &reader).await;
    let e = call_err(&mut other, "push.unsubscribe", json!({ "subscription": kept[1] })).await;
    assert_eq!(e.code, -32004, "{e:?}");
    call(&mut c, "push.unsubscribe", json!({ "subscription": kept[1] })).await;
    let listed = call(&mut c, "push.list", json!({})).await;
    assert_eq!(listed["subscriptions"].as_array().map(Vec::len), Some(15));
    // The same through the CLI (the node's endpoint and admin token).
    let (code, out, err) = warren(&["push", "list"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.lines().count(), 15, "{out}");
    let (code, _, err) = warren(&["push", "unsubscribe", &kept[2]], &node.path());
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = warren(
        &[
            "push",
            "subscribe",
            "http://127.0.0.1:9/cli",
            "--p256dh",
            "BAAA",
            "--auth",
            "AAAA",
        ],
        &node.path(),
    );
    assert_eq!(code, 1);
    assert!(err.contains("keys.p256dh"), "{err}");
    // The node kept serving throughout.
    call(&mut c, "node.info", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exhausted_budget_is_pushed_to_the_subscriptions_that_want_it() {
    let node = TestNode::start_with_config("[push]\nallow_private = true\n");
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "spender", "harness": "fake", "budget": { "usd_per_hour": 144.0, "burst_usd": 0.2 } }),
    )
    .await;
    let conv = start_idle(&mut c, "spender").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let mut sink = push_service().await;
    let keys = oracle("keys", None);
    call(&mut c, "push.subscribe", subscription(&sink.url("/all"), &keys)).await;
    let mut holds_only = subscription(&sink.url("/holds"), &keys);
    holds_only["kinds"] = json!(["hold"]);
    call(&mut c, "push.subscribe", holds_only).await;

    // A zero rate: accrual will not do, a human must act.
    let (code, _, err) = warren(&["budget", "set", "spender", "--usd-per-hour", "0"], &node.path());
    assert_eq!(code, 0, "{err}");
    let spend = "/fake spend claude-sonnet-4-5-20250929 0 10000";
    send(&mut c, &id, &format!("{spend}\n{spend}\n/fake busy 1\n/fake say done")).await;
    let pushed = next_to(&mut sink, "/all").await;
    assert_eq!(pushed.header("urgency"), Some("normal"));
    let payload = &open(&pushed, &keys)["payload"];
    assert_eq!(payload["kind"], "budget", "{payload}");
    assert_eq!(
        (payload["agent"].as_str(), payload["conversation"].as_str()),
        (Some("spender"), Some(id.as_str()))
    );
    assert!(
        payload.get("answer_token").is_none() && payload.get("hold").is_none(),
        "{payload}"
    );
    assert!(
        sink.next_to("/holds", Duration::from_secs(2)).await.is_none(),
        "a holds-only subscription was pushed a budget"
    );
}
