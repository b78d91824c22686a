//! The mailbox on a real node: send is a durable command authorized by the
//! sender's peers, the inbox is a projection read from a cursor, acks move the
//! cursor forward only, and mail survives `kill -9` and a rebuild.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_flows_between_permitted_peers_and_survives_a_crash() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ann", "harness": "fake", "grants": { "peers": ["ben"] } }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ben", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
    call(&mut c, "agent.create", json!({ "name": "cy", "harness": "fake" })).await;

    // Recipients need not be live.
    let first = call(
        &mut c,
        "mailbox.send",
        json!({ "from": "ann", "to": "ben", "body": "build is green", "context": "ci" }),
    )
    .await;
    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "ben", "to": "ann", "body": "thanks\nsee you" }),
    )
    .await;
    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "ben", "to": "cy", "body": "hello cy" }),
    )
    .await;
    for (from, to, body, needle) in [
        ("ann", "cy", "x", "may not message \"cy\""),
        ("cy", "ann", "x", "may not message \"ann\""),
        ("ann", "ghost", "x", "not found"),
        ("ann", "ben", "", "body: is empty"),
        ("ann", "ben", "bell \u{7}", "control character U+0007"),
    ] {
        let e = call_err(&mut c, "mailbox.send", json!({ "from": from, "to": to, "body": body })).await;
        assert!(e.message.contains(needle), "{from}->{to}: {}", e.message);
    }

    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    let msgs = inbox["messages"].as_array().expect("messages");
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0]["body"], "build is green");
    assert_eq!(msgs[0]["context"], "ci");
    assert_eq!(msgs[0]["seq"], first["seq"]);
    let cursor = inbox["cursor"].as_u64().expect("cursor");
    call(&mut c, "mailbox.ack", json!({ "agent": "ben", "cursor": cursor })).await;
    let after_ack = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert!(
        after_ack["messages"].as_array().expect("list").is_empty(),
        "acked mail is not shown again"
    );
    // Acks never move back.
    let back = call(&mut c, "mailbox.ack", json!({ "agent": "ben", "cursor": 1 })).await;
    assert_eq!(back["cursor"], cursor);

    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "ann", "to": "ben", "body": "one more" }),
    )
    .await;
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    let bodies: Vec<&str> = inbox["messages"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|m| m["body"].as_str())
        .collect();
    assert_eq!(bodies, vec!["one more"], "the ack and the unread mail survived kill -9");
    let all = call(&mut c, "mailbox.inbox", json!({ "agent": "ben", "after": 0 })).await;
    assert_eq!(all["messages"].as_array().expect("list").len(), 2);

    // The inbox is a projection: a rebuild from the log gives the same.
    node.kill9();
    let (code, _, err) = warren(&["admin", "rebuild"], &node.path());
    assert_eq!(code, 0, "{err}");
    node.restart();
    let mut c = node.client().await;
    let rebuilt = call(&mut c, "mailbox.inbox", json!({ "agent": "ben", "after": 0 })).await;
    assert_eq!(rebuilt["messages"], all["messages"]);

    // The CLI speaks it too.
    let (code, out, err) = warren(&["mail", "inbox", "ann"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("ben -> ann: thanks"), "{out}");

    // Counts only: each agent's unacknowledged mail in one call (ben acked
    // the first, "one more" waits; ann and cy never acked).
    let counts = call(&mut c, "mailbox.unread", json!({})).await;
    let by: std::collections::BTreeMap<String, u64> = counts["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            (
                a["agent"].as_str().unwrap_or("").to_string(),
                a["unread"].as_u64().unwrap_or(99),
            )
        })
        .collect();
    assert_eq!(
        by,
        [("ann".into(), 1), ("ben".into(), 1), ("cy".into(), 1)].into(),
        "{counts}"
    );
    let cursor = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await["cursor"].clone();
    call(&mut c, "mailbox.ack", json!({ "agent": "ben", "cursor": cursor })).await;
    let ben = call(&mut c, "mailbox.unread", json!({ "agent": "ben" })).await;
    assert_eq!(ben["agents"], json!([{ "agent": "ben", "unread": 0 }]));
    let e = call_err(&mut c, "mailbox.unread", json!({ "agent": "ghost" })).await;
    assert!(e.message.contains("ghost"), "{}", e.message);
    let (code, out, err) = warren(&["mail", "unread"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().any(|l| l == "cy\t1"), "{out}");
}

/// All of `agent`'s mail from the start, paged.
async fn whole_inbox(c: &mut warren::client::Client, agent: &str) -> Vec<serde_json::Value> {
    let mut out = vec![];
    let mut after = 0u64;
    loop {
        let page = call(
            c,
            "mailbox.inbox",
            json!({ "agent": agent, "after": after, "limit": 1000 }),
        )
        .await;
        let msgs = page["messages"].as_array().expect("list").clone();
        if msgs.is_empty() {
            return out;
        }
        after = page["cursor"].as_u64().expect("cursor");
        out.extend(msgs);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_from_eight_senders_survives_kill_9_exactly_once_and_in_order() {
    const SENDERS: usize = 8;
    const EACH: usize = 1_250;
    let mut node = TestNode::start();
    let mut c = node.client().await;
    call(&mut c, "agent.create", json!({ "name": "inbox", "harness": "fake" })).await;
    for i in 0..SENDERS {
        call(
            &mut c,
            "agent.create",
            json!({ "name": format!("s{i}"), "harness": "fake", "grants": { "peers": ["inbox"] } }),
        )
        .await;
    }
    let acked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut senders = vec![];
    for i in 0..SENDERS {
        let mut client = node.client().await;
        let acked = acked.clone();
        senders.push(tokio::spawn(async move {
            // (n, seq) of every acknowledged send; stops at the first failure.
            let mut mine: Vec<(usize, u64)> = vec![];
            for n in 0..EACH {
                let p = json!({ "from": format!("s{i}"), "to": "inbox", "body": format!("s{i}-{n}") });
                match client.call("mailbox.send", p).await {
                    Ok(v) => {
                        mine.push((n, v["seq"].as_u64().expect("seq")));
                        acked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
            mine
        }));
    }
    // kill -9 in the middle of the burst.
    wait_until("half the burst was acknowledged", Duration::from_secs(120), || {
        let acked = acked.clone();
        async move { (acked.load(std::sync::atomic::Ordering::Relaxed) >= SENDERS * EACH / 2).then_some(()) }
    })
    .await;
    node.kill9();
    let mut sent: Vec<Vec<(usize, u64)>> = vec![];
    for s in senders {
        sent.push(s.await.expect("sender"));
    }
    let total: usize = sent.iter().map(Vec::len).sum();
    assert!(
        (SENDERS * EACH / 2..SENDERS * EACH).contains(&total),
        "killed mid-burst: {total} acknowledged"
    );

    node.restart();
    let mut c = node.client().await;
    let inbox = whole_inbox(&mut c, "inbox").await;
    // Strictly increasing seqs: no duplicates, one global order.
    assert!(inbox.windows(2).all(|w| w[0]["seq"].as_u64() < w[1]["seq"].as_u64()));
    let by_seq: std::collections::HashMap<u64, &str> = inbox
        .iter()
        .map(|m| (m["seq"].as_u64().expect("seq"), m["body"].as_str().expect("body")))
        .collect();
    for (i, mine) in sent.iter().enumerate() {
        for (n, seq) in mine {
            let want = format!("s{i}-{n}");
            assert_eq!(
                by_seq.get(seq).copied(),
                Some(want.as_str()),
                "acknowledged send {want} at seq {seq}"
            );
        }
        // Each sender's messages in the order it sent them (any unacknowledged
        // tail that committed comes after its acknowledged ones).
        let order: Vec<usize> = inbox
            .iter()
            .filter_map(|m| m["body"].as_str()?.strip_prefix(&format!("s{i}-"))?.parse().ok())
            .collect();
        assert!(
            order.windows(2).all(|w| w[0] + 1 == w[1]),
            "s{i}'s mail is in order, gapless"
        );
        assert!(
            order.len() >= mine.len() && order.len() <= mine.len() + 1,
            "s{i}: {} stored, {} acknowledged",
            order.len(),
            mine.len()
        );
    }
    // Replay equals the live projection.
    node.kill9();
    let (code, _, err) = warren(&["admin", "rebuild"], &node.path());
    assert_eq!(code, 0, "{err}");
    node.restart();
    let mut c = node.client().await;
    assert_eq!(whole_inbox(&mut c, "inbox").await, inbox);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_mail_is_refused_and_changes_nothing() {
    let node = TestNode::start_with_config("[mail]\nrate_per_sec = 0.5\nburst = 3\n");
    let mut c = node.client().await;
    call(&mut c, "agent.create", json!({ "name": "to", "harness": "fake" })).await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "from", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
    let big = "x".repeat(64 * 1024 + 1);
    for (to, body, code, needle) in [
        ("to", big.as_str(), -32602, "over the limit"),
        ("to", "esc \u{1b}[2J", -32602, "U+001B"),
        ("ghost", "hi", -32004, "ghost"),
    ] {
        let e = call_err(
            &mut c,
            "mailbox.send",
            json!({ "from": "from", "to": to, "body": body }),
        )
        .await;
        assert_eq!(e.code, code, "{}", e.message);
        assert!(e.message.contains(needle), "{}", e.message);
    }
    for n in 0..3 {
        call(
            &mut c,
            "mailbox.send",
            json!({ "from": "from", "to": "to", "body": format!("m{n}") }),
        )
        .await;
    }
    let e = call_err(
        &mut c,
        "mailbox.send",
        json!({ "from": "from", "to": "to", "body": "one too many" }),
    )
    .await;
    assert_eq!(e.code, -32029, "{}", e.message);
    assert!(e.message.contains("over its mail rate"), "{}", e.message);
    assert!(
        e.data
            .as_ref()
            .and_then(|d| d["retry_after_ms"].as_u64())
            .is_some_and(|ms| ms > 0),
        "{e:?}"
    );
    let inbox = whole_inbox(&mut c, "to").await;
    let bodies: Vec<&str> = inbox.iter().filter_map(|m| m["body"].as_str()).collect();
    assert_eq!(bodies, ["m0", "m1", "m2"], "nothing refused was stored");
}
