//! The mailbox on a real node: send is a durable command authorized by the
//! sender's peers, the inbox is a projection read from a cursor, acks move the
//! cursor forward only, and mail survives `kill -9` and a rebuild.

mod support;

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
}
