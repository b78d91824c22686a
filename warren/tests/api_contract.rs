//! The API under stress and abuse, on a real node process: concurrent senders
//! never interleave, subscriptions catch up without gap or duplicate, bad input
//! gets a clear error and changes nothing stored, slow subscribers are cut off.

mod support;

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use futures_util::future::join_all;
use serde_json::{Value, json};
use support::*;
use warren::client::Client;

/// Events count and last seq, read straight from the SQLite file.
async fn store_fingerprint(node: &TestNode) -> (i64, i64, i64) {
    use sqlx::{ConnectOptions, Row};
    let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(node.db())
        .read_only(true)
        .connect()
        .await
        .expect("open the store read-only");
    let row = sqlx::query("SELECT COUNT(*), COALESCE(MAX(seq), 0), (SELECT COUNT(*) FROM transcript) FROM events")
        .fetch_one(&mut conn)
        .await
        .expect("query");
    (row.get(0), row.get(1), row.get(2))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_senders_never_interleave_and_subscribers_see_no_gap() {
    let node = TestNode::start();
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "target").await;

    // A subscriber from seq 1 that joins while messages are flowing.
    let mut follower = node.client().await;

    let senders = 8;
    let per_sender = 20;
    let mut tasks = vec![];
    for s in 0..senders {
        let target = node.target();
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&target).await.expect("connect");
            let mut sent = vec![];
            for i in 0..per_sender {
                // Every third message spans lines: one bracketed paste.
                let text = if i % 3 == 0 {
                    format!("sender {s} message {i:02} first line\nsender {s} message {i:02} second line")
                } else {
                    format!("sender {s} message {i:02} {}", "x".repeat(40 + s * 7))
                };
                c.call("conversation.sendMessage", json!({ "conversation": id, "text": text }))
                    .await
                    .unwrap_or_else(|e| panic!("sender {s} message {i}: {e}"));
                sent.push(text);
            }
            sent
        }));
    }
    // Join after the first messages went out.
    wait_until("some messages delivered", Duration::from_secs(30), || {
        let target = node.target();
        let id = id.clone();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let page = c
                .call("transcript.read", json!({ "conversation": id, "limit": 1000 }))
                .await
                .ok()?;
            (page["events"].as_array()?.len() > 10).then_some(())
        }
    })
    .await;
    call(
        &mut follower,
        "transcript.subscribe",
        json!({ "conversation": id, "from_seq": 1 }),
    )
    .await;

    let mut sent_by: Vec<Vec<String>> = vec![];
    for t in join_all(tasks).await {
        sent_by.push(t.expect("sender task"));
    }
    let all_sent: HashSet<String> = sent_by.iter().flatten().cloned().collect();
    assert_eq!(all_sent.len(), senders * per_sender);

    // Wait for the last reply of every message.
    let events = wait_until("every reply recorded", Duration::from_secs(60), || {
        let target = node.target();
        let id = id.clone();
        let want = senders * per_sender;
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let events = transcript(&mut c, &id).await;
            let replies = events.iter().filter(|e| e["speaker"] == "agent").count();
            (replies >= want).then_some(events)
        }
    })
    .await;

    let humans: Vec<String> = events
        .iter()
        .filter(|e| e["speaker"] == "human")
        .map(|e| e["text"].as_str().expect("text").to_string())
        .collect();
    assert_eq!(humans.len(), senders * per_sender, "none lost, none split");
    for h in &humans {
        assert!(
            all_sent.contains(h),
            "a delivered message is not one that was sent (interleaved?): {h:?}"
        );
        assert!(
            events
                .iter()
                .any(|e| e["speaker"] == "agent" && e["text"] == format!("echo: {h}").as_str())
        );
    }
    assert_eq!(
        humans.iter().collect::<HashSet<_>>().len(),
        humans.len(),
        "no message delivered twice"
    );
    // Each sender's messages arrive in its own order.
    for (s, sent) in sent_by.iter().enumerate() {
        let order: Vec<&String> = humans.iter().filter(|h| sent.contains(h)).collect();
        assert_eq!(order, sent.iter().collect::<Vec<_>>(), "sender {s} order");
    }

    // The follower saw 1..=max exactly once each, across the stored/live seam.
    let max = events.last().expect("events")["seq"].as_u64().expect("seq");
    let mut seen = vec![];
    while seen.last().copied() != Some(max) {
        let n = follower
            .next_notification(Duration::from_secs(10))
            .await
            .expect("read")
            .unwrap_or_else(|| panic!("follower stalled after {:?}", seen.last()));
        assert_eq!(n.method, "transcript.event");
        seen.push(n.params["event"]["seq"].as_u64().expect("seq"));
    }
    assert_eq!(
        seen,
        (1..=max).collect::<Vec<_>>(),
        "no gap and no duplicate at the seam"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_named_errors_and_changes_nothing() {
    let node = TestNode::start();
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "solid").await;
    send(&mut c, &id, "settle").await;
    wait_event(&mut c, &id, "agent", "echo: settle").await;
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let before = store_fingerprint(&node).await;
    let catalog_before = (
        call(&mut c, "agent.list", json!({})).await,
        call(&mut c, "conversation.list", json!({})).await,
    );

    // Malformed JSON.
    c.send_raw("{\"jsonrpc\": \"2.0\", \"method\": ".into())
        .await
        .expect("send");
    let r = c.read_response().await.expect("answer");
    let e = r.error.expect("error");
    assert_eq!(e.code, -32700);
    assert!(e.message.contains("parse error"), "{}", e.message);
    // Not an object.
    c.send_raw("[1, 2]".into()).await.expect("send");
    assert_eq!(
        c.read_response().await.expect("answer").error.expect("error").code,
        -32600
    );
    // Over the frame limit (1 MiB by default).
    c.send_raw(format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"node.info\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(1_100_000)
    ))
    .await
    .expect("send");
    let e = c.read_response().await.expect("answer").error.expect("error");
    assert_eq!(e.code, -32600);
    assert!(e.message.contains("over the limit of 1048576 bytes"), "{}", e.message);

    let cases: Vec<(&str, Value, i64, &str)> = vec![
        ("agent.explode", json!({}), -32601, "unknown method \"agent.explode\""),
        ("agent.get", json!({ "agent": 42 }), -32602, "agent"),
        (
            "agent.create",
            json!({ "name": "ok-name", "harness": "fake", "persona": ["no"] }),
            -32602,
            "persona",
        ),
        (
            "agent.create",
            json!({ "name": "Bad Name", "harness": "fake" }),
            -32602,
            "name",
        ),
        (
            "agent.create",
            json!({ "name": "fine", "harness": "notepad" }),
            -32602,
            "unknown harness",
        ),
        (
            "agent.create",
            json!({ "name": "solid", "harness": "fake" }),
            -32009,
            "already exists",
        ),
        (
            "agent.create",
            json!({ "name": "big", "harness": "fake", "persona": "p".repeat(20_000) }),
            -32602,
            "persona",
        ),
        (
            "agent.get",
            json!({ "agent": "ghost" }),
            -32004,
            "agent \"ghost\" not found",
        ),
        ("conversation.start", json!({ "agent": "ghost" }), -32004, "not found"),
    ];
    // `grants.egress`: host[:port] patterns only, ports 1..=65535, no
    // wildcard for everything, at most 10,000 entries.
    let many: Vec<String> = (0..10_001).map(|i| format!("h{i}.example.com")).collect();
    let mut cases = cases;
    for bad in [
        json!(["not a host"]),
        json!(["example.com:0"]),
        json!(["example.com:70000"]),
        json!(["*"]),
        json!(["*.com:443"]),
        json!(["10.0.0.0/8"]),
        json!(many),
    ] {
        let grants = json!({ "egress": bad });
        cases.push((
            "agent.create",
            json!({ "name": "walled", "harness": "fake", "grants": grants }),
            -32602,
            "grants.egress",
        ));
        cases.push((
            "agent.update",
            json!({ "agent": "solid", "grants": grants }),
            -32602,
            "grants.egress",
        ));
    }
    let more: Vec<(&str, Value, i64, &str)> = vec![
        (
            "conversation.get",
            json!({ "conversation": "c-missing" }),
            -32004,
            "not found",
        ),
        (
            "conversation.pause",
            json!({ "conversation": id }),
            -32009,
            "cannot pause a conversation that is paused",
        ),
        (
            "conversation.sendMessage",
            json!({ "conversation": id, "text": "esc \u{1b}[2J" }),
            -32602,
            "control character U+001B",
        ),
        (
            "conversation.sendMessage",
            json!({ "conversation": id, "text": "c1 \u{9b}" }),
            -32602,
            "control character U+009B",
        ),
        (
            "conversation.sendMessage",
            json!({ "conversation": id, "text": "z".repeat(70_000) }),
            -32602,
            "over the limit",
        ),
        (
            "conversation.sendMessage",
            json!({ "conversation": id }),
            -32602,
            "text",
        ),
        (
            "transcript.read",
            json!({ "conversation": id, "limit": 0 }),
            -32602,
            "limit",
        ),
        (
            "transcript.read",
            json!({ "conversation": id, "after_seq": "one" }),
            -32602,
            "after_seq",
        ),
        (
            "subscription.cancel",
            json!({ "subscription": "s-404" }),
            -32004,
            "not found",
        ),
    ];
    cases.extend(more);
    for (method, params, code, needle) in cases {
        let e = call_err(&mut c, method, params.clone()).await;
        assert_eq!(e.code, code, "{method} {params}: {}", e.message);
        assert!(
            e.message.contains(needle),
            "{method}: message {:?} should name {needle:?}",
            e.message
        );
    }

    // No token, and a forged one.
    let mut anon = Client::connect(&warren::client::Target {
        url: node.target().url,
        token: None,
    })
    .await
    .expect("connect");
    let e = call_err(&mut anon, "agent.list", json!({})).await;
    assert_eq!(e.code, -32001);
    let e = call_err(&mut anon, "session.authenticate", json!({ "token": "Zm9yZ2Vk" })).await;
    assert_eq!(e.code, -32001);
    assert!(e.message.contains("token refused"), "{}", e.message);
    let forged = Client::connect(&warren::client::Target {
        url: node.target().url,
        token: Some("bm90IGEgYmlzY3VpdA".into()),
    })
    .await;
    let msg = forged.err().expect("a forged bearer token is refused").to_string();
    assert!(msg.contains("401") && msg.contains("token refused"), "{msg}");

    // Still serving, nothing stored changed.
    call(&mut c, "node.info", json!({})).await;
    assert_eq!(
        store_fingerprint(&node).await,
        before,
        "the event log and projections are unchanged"
    );
    let catalog_after = (
        call(&mut c, "agent.list", json!({})).await,
        call(&mut c, "conversation.list", json!({})).await,
    );
    assert_eq!(catalog_after, catalog_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_subscriber_is_cut_off_and_does_not_slow_the_node() {
    let node = TestNode::start_with_config("[limits]\noutbound_queue = 8\n");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "loud").await;
    call(
        &mut c,
        "conversation.resize",
        json!({ "conversation": id, "rows": 200, "cols": 1000 }),
    )
    .await;

    // A client with a tiny receive window that subscribes and never reads.
    let url = node.target().url;
    let addr: std::net::SocketAddr = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .expect("addr")
        .parse()
        .expect("addr");
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("rcvbuf");
    let stream = socket.connect(addr).await.expect("connect");
    let mut req =
        tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(url.as_str()).expect("req");
    let token = node.target().token.expect("token");
    req.headers_mut()
        .insert("Authorization", format!("Bearer {token}").parse().expect("header"));
    let (mut slow, _) = tokio_tungstenite::client_async(req, stream).await.expect("upgrade");
    use futures_util::{SinkExt, StreamExt};
    slow.send(tokio_tungstenite::tungstenite::Message::Text(
        json!({"jsonrpc": "2.0", "id": 1, "method": "terminal.subscribe", "params": {"conversation": id}})
            .to_string()
            .into(),
    ))
    .await
    .expect("subscribe");

    // Flood the terminal: big screens redrawn many times.
    let big = "w".repeat(50_000);
    let mut worst = Duration::ZERO;
    for _ in 0..6 {
        send(&mut c, &id, &big).await;
        let t = std::time::Instant::now();
        call(&mut c, "node.info", json!({})).await;
        worst = worst.max(t.elapsed());
    }
    send(&mut c, &id, "/fake busy 2").await;
    wait_idle(&mut c, &id).await;
    assert!(
        worst < Duration::from_secs(2),
        "other clients kept being served (worst node.info {worst:?})"
    );

    // Now read: after whatever was buffered, the node closed with a reason.
    let mut reason = None;
    let read_all = async {
        while let Some(msg) = slow.next().await {
            match msg {
                Ok(tokio_tungstenite::tungstenite::Message::Close(Some(f))) => {
                    reason = Some(f.reason.to_string());
                    break;
                }
                Ok(_) => continue,
                Err(_) => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read_all)
        .await
        .expect("the slow client's stream ends");
    let reason = reason.expect("a close frame with a reason");
    assert!(reason.contains("too slow"), "close reason: {reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transcript_subscription_by_agent_and_cancel() {
    let node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "watched").await;
    let mut sub = node.client().await;
    let s = call(&mut sub, "transcript.subscribe", json!({ "agent": "watched" })).await;
    let sub_id = s["subscription"].as_str().expect("id").to_string();
    let id = conversation_id(&mut c, "watched").await;
    send(&mut c, &id, "ping").await;
    let mut got = BTreeMap::new();
    while !got.contains_key("echo: ping") {
        let n = sub
            .next_notification(Duration::from_secs(10))
            .await
            .expect("read")
            .expect("an event");
        assert_eq!(n.params["subscription"], sub_id.as_str());
        assert_eq!(n.params["event"]["conversation"], id.as_str());
        got.insert(
            n.params["event"]["text"].as_str().expect("text").to_string(),
            n.params["event"]["speaker"].clone(),
        );
    }
    assert_eq!(got["ping"], "human");
    call(&mut sub, "subscription.cancel", json!({ "subscription": sub_id })).await;
    send(&mut c, &id, "after cancel").await;
    wait_event(&mut c, &id, "agent", "echo: after cancel").await;
    let n = sub.next_notification(Duration::from_millis(300)).await.expect("read");
    assert!(n.is_none(), "no events after cancel: {n:?}");
    let e = call_err(
        &mut sub,
        "transcript.subscribe",
        json!({ "agent": "watched", "conversation": id }),
    )
    .await;
    assert_eq!(e.code, -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_message_waits_for_idle_within_a_bound() {
    let node = TestNode::start_with_config("[limits]\nsend_idle_timeout_ms = 400\n");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "busy").await;
    send(&mut c, &id, "/fake busy 3").await;
    let e = call_err(
        &mut c,
        "conversation.sendMessage",
        json!({ "conversation": id, "text": "too soon" }),
    )
    .await;
    assert_eq!(e.code, -32029);
    assert!(
        e.message.contains("did not become IDLE within 400 ms (status BUSY)"),
        "{}",
        e.message
    );
    assert!(
        e.data.as_ref().and_then(|d| d["retry_after_ms"].as_u64()).is_some(),
        "{e:?}"
    );
    // Once the turn ends the same message goes through.
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "in time").await;
    wait_event(&mut c, &id, "agent", "echo: in time").await;
    let events = transcript(&mut c, &id).await;
    assert!(
        !events.iter().any(|e| e["text"] == "too soon"),
        "the refused message was never typed"
    );
}

/// A retried `sendMessage` with the same idempotency key gets the first
/// call's result and types nothing; a different key, or none, types again; a
/// bad key is refused naming the field. `warren conv send` sets a key of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_send_with_its_idempotency_key_types_nothing() {
    let node = TestNode::start();
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "once").await;
    let keyed = |text: &str, key: &str| json!({ "conversation": id, "text": text, "idempotency_key": key });
    let first = call(&mut c, "conversation.sendMessage", keyed("hello once", "k-1")).await;
    let again = call(&mut c, "conversation.sendMessage", keyed("hello once", "k-1")).await;
    assert_eq!(first, again, "the retry gets the first call's result");
    wait_event(&mut c, &id, "agent", "echo: hello once").await;
    wait_idle(&mut c, &id).await;
    let other = call(&mut c, "conversation.sendMessage", keyed("hello once", "k-2")).await;
    assert_ne!(other["message_id"], first["message_id"]);
    wait_idle(&mut c, &id).await;
    for bad in ["", "a\u{7}b"] {
        let e = call_err(&mut c, "conversation.sendMessage", keyed("x", bad)).await;
        assert_eq!(e.code, -32602, "{bad:?}: {e:?}");
        assert!(e.message.contains("idempotency_key"), "{}", e.message);
    }
    let long = "k".repeat(129);
    let e = call_err(&mut c, "conversation.sendMessage", keyed("x", &long)).await;
    assert!(e.message.contains("idempotency_key"), "{}", e.message);
    let (code, out, err) = warren(&["conv", "send", &id, "from the cli"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    wait_event(&mut c, &id, "agent", "echo: from the cli").await;
    wait_idle(&mut c, &id).await;
    let typed = |text: &str, events: &[Value]| {
        events
            .iter()
            .filter(|e| e["speaker"] != "agent" && e["text"] == text)
            .count()
    };
    let events = transcript(&mut c, &id).await;
    assert_eq!(typed("hello once", &events), 2, "k-1 once, k-2 once: {events:?}");
    assert_eq!(typed("from the cli", &events), 1);
    assert_eq!(typed("x", &events), 0, "refused keys type nothing");
}

/// Every method of the registry reaches its family's dispatch arm (never
/// -32601), and each arm reads the params type the registry declares (this
/// test node is a debug build: a mismatch answers -32603 naming both); an
/// unknown one answers -32601.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_registered_method_is_dispatched() {
    use console_api::methods::REGISTRY;
    use warren::client::{CallError, unix_call};
    let node = TestNode::start();
    let dir = node.path();
    let mut served = 0;
    for method in REGISTRY.iter().filter(|m| m.served) {
        match unix_call(&dir, method.name, json!({})).await {
            Ok(_) => {}
            Err(CallError::Rpc(e)) => {
                assert_ne!(e.code, -32601, "{} is not dispatched: {}", method.name, e.message);
                assert!(!e.message.contains("method registry"), "{}: {}", method.name, e.message);
            }
            Err(e) => panic!("{}: {e}", method.name),
        }
        served += 1;
    }
    assert_eq!(served, console_api::methods::ALL.len());
    assert_eq!(served, REGISTRY.len(), "every registered method is served");
    match unix_call(&dir, "agent.explode", json!({})).await {
        Err(CallError::Rpc(e)) => assert_eq!(
            (e.code, e.message.as_str()),
            (-32601, "unknown method \"agent.explode\"")
        ),
        other => panic!("agent.explode: {other:?}"),
    }
}
