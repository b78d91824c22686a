//! Mail across nodes: an agent on n1 writes to one homed on n3
//! (`to: "NAME@NODE"`). 1,000 messages sent while n3 is cut off for a while
//! and later killed with `kill -9` and restarted arrive exactly once and in
//! order; the sender's outbox says delivered or pending throughout. Mail to
//! an unknown member or agent, without the grant, or over the body limit is
//! refused with nothing stored on either side. A conversation's own CLI on
//! n1 writes with `warren-mail send NAME@NODE` (its instance token).

use super::*;

const MESSAGES: usize = 1000;
/// Both ends take the whole run at once (the default rate would pace it).
const FAST_MAIL: &str = "\n[mail]\nrate_per_sec = 1000.0\nburst = 2000\n";

/// `agent`'s whole inbox on `node`, oldest first.
async fn inbox(node: &LabNode, agent: &str) -> Vec<Value> {
    let mut out = vec![];
    let mut after = 0;
    loop {
        let v = node
            .call(
                "mailbox.inbox",
                json!({ "agent": agent, "after": after, "limit": 1000 }),
            )
            .await
            .unwrap_or_else(|e| panic!("inbox on {}: {e}", node.name));
        let page = v["messages"].as_array().expect("messages").clone();
        if page.is_empty() {
            return out;
        }
        after = page.last().and_then(|m| m["seq"].as_u64()).expect("a seq");
        out.extend(page);
    }
}

/// n1's outbox of `agent`: (message id, state) newest first.
async fn outbox(n1: &LabNode, agent: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut before: Option<u64> = None;
    loop {
        let mut p = json!({ "agent": agent, "limit": 1000 });
        if let Some(b) = before {
            p["before"] = json!(b);
        }
        let v = n1.call("mailbox.outbox", p).await.expect("mailbox.outbox");
        let page = v["messages"].as_array().expect("messages").clone();
        if page.is_empty() {
            return out;
        }
        before = v["next_before"].as_u64();
        out.extend(page.iter().map(|m| {
            (
                m["message_id"].as_str().unwrap_or_default().to_string(),
                m["state"].as_str().unwrap_or_default().to_string(),
            )
        }));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_crosses_nodes_exactly_once_in_order_through_a_partition_and_a_kill() {
    let mut lab = Lab::new(&["n1", "n2", "n3"]).expect("lab");
    lab.configure(0, FAST_MAIL).expect("n1's config");
    lab.configure(2, FAST_MAIL).expect("n3's config");
    found(&mut lab, 3).await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n3) = (lab.node("n1"), lab.node("n3"));
    n3.call("agent.create", json!({ "name": "bob", "harness": "fake" }))
        .await
        .expect("bob on n3");
    n1.call(
        "agent.create",
        json!({ "name": "alice", "harness": "fake", "grants": { "peers": ["bob@n3", "zed@n3", "bob@n9"] } }),
    )
    .await
    .expect("alice on n1");
    n1.call(
        "agent.create",
        json!({ "name": "carol", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await
    .expect("carol on n1");

    // Refused, each with its reason, and nothing kept on either side.
    let send = |from: &str, to: &str, body: String| {
        let p = json!({ "from": from, "to": to, "body": body });
        async move { n1.call("mailbox.send", p).await }
    };
    let refusals = [
        ("alice", "bob@n9", "hi".to_string(), "\"n9\" is not a member"),
        ("alice", "zed@n3", "hi".to_string(), "no agent \"zed\" on node n3"),
        ("carol", "bob@n3", "hi".to_string(), "covers this node's agents only"),
        ("alice", "bob@n3", "x".repeat(64 * 1024 + 1), "over the limit"),
        ("alice", "bob@n3", "esc \u{1b}[2J".to_string(), "U+001B"),
        ("alice", "Bob@n3", "hi".to_string(), "is not an agent name"),
    ];
    for (from, to, body, why) in refusals {
        let e = send(from, to, body).await.expect_err(to).to_string();
        assert!(e.contains(why), "{from} -> {to}: {e}");
    }
    assert!(outbox(n1, "alice").await.is_empty(), "refused mail is not kept");
    assert!(inbox(n3, "bob").await.is_empty(), "nor stored at the recipient");

    // A thousand messages; n3 is cut off for the second hundred after 300
    // and killed for the second hundred after 600.
    let started = Instant::now();
    let (mut delivered, mut pending) = (0, 0);
    for i in 0..MESSAGES {
        match i {
            300 => lab.node("n3").partition().expect("cut n3 off"),
            400 => lab.node("n3").heal().expect("heal n3"),
            600 => lab.node_mut("n3").kill9(),
            700 => {
                let at = lab.index("n3");
                lab.start(at, None).expect("n3 restarts");
            }
            _ => {}
        }
        let v = lab
            .node("n1")
            .call(
                "mailbox.send",
                json!({ "from": "alice", "to": "bob@n3", "body": format!("message {i}") }),
            )
            .await
            .unwrap_or_else(|e| panic!("send {i}: {e}\n{}", lab.node("n1").log()));
        match v["state"].as_str() {
            Some("delivered") => delivered += 1,
            Some("pending") => pending += 1,
            other => panic!("send {i} answered state {other:?}: {v}"),
        }
    }
    eprintln!(
        "{MESSAGES} sends in {:.1} s: {delivered} delivered at once, {pending} kept pending",
        started.elapsed().as_secs_f64()
    );
    assert!(
        pending > 0,
        "the partition and the kill left nothing pending: were they real?"
    );
    assert!(delivered > 0, "nothing was delivered at once");

    let (n1, n3) = (lab.node("n1"), lab.node("n3"));
    let waited = wait_for("all the mail on n3", Duration::from_secs(60), || async {
        let got = inbox(n3, "bob").await;
        (got.len() >= MESSAGES).then_some(got)
    })
    .await;
    let got = match waited {
        Ok(got) => got,
        Err(e) => panic!(
            "{e}: {} of {MESSAGES}\n{}\n---- n3\n{}",
            inbox(n3, "bob").await.len(),
            n1.log(),
            n3.log()
        ),
    };
    eprintln!(
        "all {MESSAGES} stored on n3 {:.1} s after the first send",
        started.elapsed().as_secs_f64()
    );
    let bodies: Vec<&str> = got.iter().map(|m| m["body"].as_str().unwrap_or_default()).collect();
    let want: Vec<String> = (0..MESSAGES).map(|i| format!("message {i}")).collect();
    assert_eq!(bodies, want, "every message exactly once, in order");
    assert!(
        got.iter().all(|m| m["from"] == "alice@n1" && m["to"] == "bob"),
        "{:?}",
        got.first()
    );

    // The sender's outbox: every message delivered, none pending.
    let states = wait_for("n1's outbox all delivered", Duration::from_secs(10), || async {
        let o = outbox(n1, "alice").await;
        o.iter().all(|(_, s)| s == "delivered").then_some(o)
    })
    .await
    .expect("outbox settled");
    assert_eq!(states.len(), MESSAGES);
    let ids: Vec<&str> = got.iter().map(|m| m["id"].as_str().unwrap_or_default()).collect();
    let mut sent: Vec<&str> = states.iter().map(|(id, _)| id.as_str()).collect();
    sent.reverse();
    assert_eq!(ids, sent, "n3 stored n1's message ids, in n1's order");

    // The CLI of a conversation on n1 writes with its own instance token.
    n1.call(
        "agent.create",
        json!({ "name": "dave", "harness": "fake", "grants": { "peers": ["bob@n3"], "tools": ["mail"] },
                "rules": [{ "match": "^write bob$", "actions": [
                    { "shell": "warren-mail send bob@n3 'from the CLI on n1' > sent.out 2>&1; warren-mail outbox >> sent.out 2>&1" } ] }] }),
    )
    .await
    .expect("dave on n1");
    let conv = n1.idle_conversation("dave").await.expect("dave's conversation");
    n1.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "write bob" }),
    )
    .await
    .expect("sendMessage");
    let from_cli = wait_for("the CLI's mail on n3", Duration::from_secs(20), || async {
        inbox(n3, "bob")
            .await
            .into_iter()
            .find(|m| m["body"] == "from the CLI on n1")
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n1.log()));
    assert_eq!(from_cli["from"], "dave@n1", "{from_cli}");
}
