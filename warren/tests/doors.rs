//! The node's own doors, tried as an attacker on the same machine would
//! (issue 22): anonymous sockets cannot lock anyone out, a read-only token
//! cannot silence an agent's mail, nobody sends mail as an agent they hold
//! no right on, wrong pairing guesses never stop the right code, and an
//! expired or revoked bearer is refused at the door.

mod support;

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{Value, json};
use support::*;
use tokio_tungstenite::tungstenite::Message;
use warren::client::{CallError, Client, Target};

type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// The API's socket address, from its `ws://HOST:PORT/v1/ws` URL.
fn api_addr(node: &TestNode) -> SocketAddr {
    let url = node.target().url;
    let host_port = url
        .trim_start_matches("ws://")
        .split('/')
        .next()
        .expect("host:port")
        .to_string();
    host_port.parse().expect("a socket address")
}

/// Opens a WebSocket to the API without a token, from the loopback address
/// `from` (every 127.0.0.0/8 address is this host's): the upgrade's answer.
async fn anonymous_from(node: &TestNode, from: [u8; 4]) -> Result<Ws, String> {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::new(IpAddr::from(from), 0))
        .expect("bind a loopback source address");
    let tcp = socket.connect(api_addr(node)).await.map_err(|e| e.to_string())?;
    tokio_tungstenite::client_async(node.target().url, tcp)
        .await
        .map(|(ws, _)| ws)
        .map_err(|e| e.to_string())
}

/// Waits for the server to close `ws` (a close frame or the end of the
/// stream); returns the close frame's reason, if it sent one.
async fn closed_by_server(ws: &mut Ws, within: Duration) -> Option<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, ws.next()).await {
            Err(_) => panic!("the server did not close an idle anonymous socket within {within:?}"),
            Ok(None) | Ok(Some(Err(_))) => return None,
            Ok(Some(Ok(Message::Close(frame)))) => return frame.map(|f| f.reason.to_string()),
            Ok(Some(Ok(_))) => continue,
        }
    }
}

async fn anonymous(node: &TestNode) -> Client {
    Client::connect(&Target {
        url: node.target().url,
        token: None,
    })
    .await
    .expect("connect without a token")
}

async fn rpc(c: &mut Client, method: &str, params: Value) -> Result<Value, console_api::RpcError> {
    match c.call(method, params).await {
        Ok(v) => Ok(v),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("{method}: transport error {e}"),
    }
}

fn admin_token(node: &TestNode) -> String {
    std::fs::read_to_string(node.path().join("admin.token"))
        .expect("admin token")
        .trim()
        .to_string()
}

/// A token of this node's root with exactly these (resource, operation) rights.
async fn token_with(c: &mut Client, rights: &[(&str, &str)]) -> String {
    let rights: Vec<Value> = rights
        .iter()
        .map(|(r, o)| json!({ "resource": r, "operation": o }))
        .collect();
    call(c, "token.mint", json!({ "rights": rights, "ttl_secs": 3600 })).await["token"]
        .as_str()
        .expect("token")
        .to_string()
}

/// The instance token of `agent`'s live conversation (from its home).
fn instance_token(node: &TestNode, agent: &str) -> String {
    std::fs::read_to_string(node.path().join(format!("agents/{agent}/home/.warren/instance.token")))
        .expect("instance token")
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_sockets_cannot_lock_anyone_out_and_are_closed_after_the_deadline() {
    let node = TestNode::start_with_config(
        "[limits]\nmax_connections = 16\nmax_anonymous_connections = 6\nmax_anonymous_per_source = 2\nauth_deadline_ms = 1500\n",
    );
    // A browser-like client: no bearer, then session.authenticate at once.
    let mut signed_in = anonymous(&node).await;
    rpc(
        &mut signed_in,
        "session.authenticate",
        json!({ "token": admin_token(&node) }),
    )
    .await
    .expect("authenticate");

    // Fill the anonymous pool: two per source, six in all.
    let mut idle = vec![];
    for source in [[127, 0, 0, 1], [127, 0, 0, 2], [127, 0, 0, 3]] {
        for _ in 0..2 {
            idle.push(
                anonymous_from(&node, source)
                    .await
                    .expect("an anonymous socket is admitted"),
            );
        }
        let Err(e) = anonymous_from(&node, source).await else {
            panic!("a third anonymous socket from one address is refused");
        };
        assert!(e.contains("503"), "{e}");
    }
    let Err(e) = anonymous_from(&node, [127, 0, 0, 4]).await else {
        panic!("the anonymous pool is full");
    };
    assert!(e.contains("503"), "{e}");

    // The admin (a bearer on the upgrade) still gets in and is answered.
    let mut admin = node.client().await;
    call(&mut admin, "node.info", json!({})).await;

    // Idle anonymous sockets are closed after the deadline, saying why; the
    // client that authenticated in time is not.
    let started = Instant::now();
    for ws in idle.iter_mut() {
        if let Some(reason) = closed_by_server(ws, Duration::from_secs(10)).await {
            assert!(reason.contains("authenticate"), "{reason}");
        }
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    rpc(&mut signed_in, "node.info", json!({}))
        .await
        .expect("an authenticated connection outlives the deadline");
    // Their slots are free again.
    let ws = wait_until("the anonymous pool has room again", Duration::from_secs(10), || async {
        anonymous_from(&node, [127, 0, 0, 4]).await.ok()
    })
    .await;
    drop(ws);
    call(&mut admin, "node.info", json!({})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_cannot_ack_mail_and_acks_are_clamped_to_the_inbox() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ann", "harness": "fake", "grants": { "peers": ["ben"], "tools": ["mail"] } }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ben", "harness": "fake", "grants": { "tools": ["mail"] } }),
    )
    .await;
    let send = |body: &'static str| json!({ "from": "ann", "to": "ben", "body": body });
    call(&mut c, "mailbox.send", send("one")).await;
    let second = call(&mut c, "mailbox.send", send("two")).await["seq"]
        .as_u64()
        .expect("seq");
    let unread = |v: &Value| {
        v["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["body"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };

    // A read-only token reads the inbox and cannot silence it.
    let observer = token_with(&mut c, &[("agent:ben", "observe")]).await;
    let mut o = client_with(&node, &observer).await;
    rpc(&mut o, "mailbox.inbox", json!({ "agent": "ben" }))
        .await
        .expect("observe reads the inbox");
    let e = rpc(&mut o, "mailbox.ack", json!({ "agent": "ben", "cursor": second }))
        .await
        .expect_err("observe cannot ack");
    assert_eq!(e.code, -32003, "{}", e.message);
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert_eq!(unread(&inbox), ["one", "two"], "nothing was acked");

    // Another agent's instance token (ann may message ben) cannot ack ben's mail.
    let ann = conversation_id(&mut c, "ann").await;
    let ann_token = instance_token(&node, "ann");
    let mut a = client_with(&node, &ann_token).await;
    let e = rpc(&mut a, "mailbox.ack", json!({ "agent": "ben", "cursor": second }))
        .await
        .expect_err("ann speaks for ann only");
    assert_eq!(e.code, -32003, "{}", e.message);
    call(&mut c, "conversation.pause", json!({ "conversation": ann })).await;

    // The far future is clamped to the inbox's last message: later mail is
    // still shown, and the admin can ack it.
    let acked = call(
        &mut c,
        "mailbox.ack",
        json!({ "agent": "ben", "cursor": i64::MAX as u64 }),
    )
    .await;
    assert_eq!(acked["cursor"].as_u64(), Some(second), "clamped to the last seq");
    let third = call(&mut c, "mailbox.send", send("three")).await["seq"]
        .as_u64()
        .expect("seq");
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert_eq!(unread(&inbox), ["three"], "mail after a huge ack is not hidden");
    // 2^64-1 does not wrap around to "everything unread".
    let acked = call(&mut c, "mailbox.ack", json!({ "agent": "ben", "cursor": u64::MAX })).await;
    assert_eq!(acked["cursor"].as_u64(), Some(third));
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert!(unread(&inbox).is_empty(), "{inbox}");
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben", "after": u64::MAX })).await;
    assert!(
        unread(&inbox).is_empty(),
        "an `after` past the end shows nothing: {inbox}"
    );

    // Rights that may ack: message or control on the agent, or its own token.
    call(&mut c, "mailbox.send", send("four")).await;
    let fifth = call(&mut c, "mailbox.send", send("five")).await["seq"]
        .as_u64()
        .expect("seq");
    let messenger = token_with(&mut c, &[("agent:ben", "message")]).await;
    let mut m = client_with(&node, &messenger).await;
    let acked = rpc(&mut m, "mailbox.ack", json!({ "agent": "ben", "cursor": fifth - 1 }))
        .await
        .expect("message on ben may ack");
    assert_eq!(acked["cursor"].as_u64(), Some(fifth - 1));
    let controller = token_with(&mut c, &[("agent:ben", "control")]).await;
    let mut k = client_with(&node, &controller).await;
    rpc(&mut k, "mailbox.ack", json!({ "agent": "ben", "cursor": fifth - 1 }))
        .await
        .expect("control on ben may ack");
    conversation_id(&mut c, "ben").await;
    let mut own = client_with(&node, &instance_token(&node, "ben")).await;
    let acked = rpc(&mut own, "mailbox.ack", json!({ "agent": "ben", "cursor": u64::MAX }))
        .await
        .expect("ben's own instance token may ack");
    assert_eq!(acked["cursor"].as_u64(), Some(fifth));

    // A restart keeps the clamped cursor: new mail is shown.
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert_eq!(inbox["acked"].as_u64(), Some(fifth));
    call(&mut c, "mailbox.send", send("six")).await;
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert_eq!(unread(&inbox), ["six"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_from_an_agent_needs_a_right_on_that_agent() {
    let node = TestNode::start();
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ann", "harness": "fake", "grants": { "peers": ["ben"], "tools": ["mail"] } }),
    )
    .await;
    call(&mut c, "agent.create", json!({ "name": "ben", "harness": "fake" })).await;
    let bodies = |v: &Value| {
        v["messages"]
            .as_array()
            .expect("messages")
            .iter()
            .map(|m| m["body"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
    };

    // May message ben, holds nothing on ann: cannot send as ann.
    let to_ben = token_with(&mut c, &[("agent:ben", "message")]).await;
    let mut t = client_with(&node, &to_ben).await;
    let e = rpc(
        &mut t,
        "mailbox.send",
        json!({ "from": "ann", "to": "ben", "body": "forged" }),
    )
    .await
    .expect_err("a right on the sender is needed");
    assert_eq!(e.code, -32003, "{}", e.message);
    assert!(e.message.contains("ann"), "{}", e.message);

    // A right on the sender too (message, or invoke) does.
    let both = token_with(&mut c, &[("agent:ben", "message"), ("agent:ann", "invoke")]).await;
    let mut t = client_with(&node, &both).await;
    rpc(
        &mut t,
        "mailbox.send",
        json!({ "from": "ann", "to": "ben", "body": "for ann" }),
    )
    .await
    .expect("invoke on ann and message on ben");

    // Ann's own instance token sends as ann.
    conversation_id(&mut c, "ann").await;
    let mut own = client_with(&node, &instance_token(&node, "ann")).await;
    rpc(
        &mut own,
        "mailbox.send",
        json!({ "from": "ann", "to": "ben", "body": "from ann herself" }),
    )
    .await
    .expect("the sender's own token");
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "ben" })).await;
    assert_eq!(
        bodies(&inbox),
        ["for ann", "from ann herself"],
        "the forged one was not stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_pairing_guesses_lock_out_their_source_and_never_the_right_code() {
    let node = TestNode::start();
    let issued = warren::client::unix_call(&node.path(), "session.pair_code", json!({}))
        .await
        .expect("a code");
    let code = issued["code"].as_str().expect("code").to_string();

    let mut guesser = anonymous(&node).await;
    let mut refused = 0;
    let mut locked = None;
    for i in 0..14 {
        let e = rpc(&mut guesser, "session.pair", json!({ "code": format!("0000-{i:04}") }))
            .await
            .expect_err("a wrong code");
        match e.code {
            -32001 => refused += 1,
            -32029 => locked = Some(e),
            other => panic!("unexpected {other}: {}", e.message),
        }
    }
    assert!(refused >= 10, "the first guesses are plainly wrong ({refused})");
    let locked = locked.expect("an address over its limit is told it is locked out");
    assert!(locked.message.contains("locked out"), "{}", locked.message);
    assert!(
        locked
            .data
            .as_ref()
            .is_some_and(|d| d["retry_after_ms"].as_u64().is_some())
    );

    // Another address is not locked out by them.
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::new(IpAddr::from([127, 0, 0, 9]), 0))
        .expect("bind");
    let tcp = socket.connect(api_addr(&node)).await.expect("connect");
    let (mut other, _) = tokio_tungstenite::client_async(node.target().url, tcp)
        .await
        .expect("upgrade");
    use futures_util::SinkExt;
    other
        .send(Message::Text(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "session.pair", "params": { "code": "1111-1111" } })
                .to_string()
                .into(),
        ))
        .await
        .expect("send");
    let answer = loop {
        match other.next().await.expect("an answer").expect("a frame") {
            Message::Text(t) => break serde_json::from_str::<Value>(&t).expect("json"),
            _ => continue,
        }
    };
    assert_eq!(answer["error"]["code"], -32001, "{answer}");

    // The right code still pairs, from the locked-out address itself.
    let paired = rpc(&mut guesser, "session.pair", json!({ "code": code }))
        .await
        .expect("the right code pairs");
    let token = paired["token"].as_str().expect("token");
    let mut console = anonymous(&node).await;
    rpc(&mut console, "session.authenticate", json!({ "token": token }))
        .await
        .expect("the paired token signs in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_or_revoked_bearer_is_refused_at_the_door() {
    let node = TestNode::start();
    let mut c = node.client().await;
    let expired = capabilities::attenuate(
        &admin_token(&node),
        &capabilities::Restriction {
            expires_at: Some(std::time::SystemTime::now() - Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .expect("attenuate");
    let minted = call(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "node", "operation": "observe" }], "ttl_secs": 600 }),
    )
    .await;
    let revoked = minted["token"].as_str().expect("token").to_string();
    let id = minted["revocation_ids"][0].as_str().expect("id");
    call(&mut c, "token.revoke", json!({ "revocation_id": id })).await;

    for (label, token, needle) in [("expired", &expired, "expired"), ("revoked", &revoked, "revoked")] {
        // On the upgrade: 401, naming why.
        let refused = Client::connect(&Target {
            url: node.target().url,
            token: Some(token.clone()),
        })
        .await;
        let msg = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains("401") && msg.contains(needle), "{label}: {msg:?}");
        // By session.authenticate: -32001, and the connection stays anonymous.
        let mut anon = anonymous(&node).await;
        let e = rpc(&mut anon, "session.authenticate", json!({ "token": token }))
            .await
            .expect_err(label);
        assert_eq!(e.code, -32001, "{label}: {}", e.message);
        assert!(e.message.contains(needle), "{label}: {}", e.message);
        let e = rpc(&mut anon, "node.info", json!({}))
            .await
            .expect_err("still anonymous");
        assert_eq!(e.code, -32001);
    }
    call(&mut c, "node.info", json!({})).await;
}
