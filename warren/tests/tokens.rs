//! Capabilities on a real node: attenuated tokens (with the CLI, and with the
//! biscuit library as a third party would) narrow what a client may do, bad
//! tokens are unauthenticated with a reason, revocation bites on the very next
//! call, the companion profile reads and does nothing else, local-only methods
//! refuse the network, and a conversation's instance token carries exactly its
//! agent's grants and dies with the conversation.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;
use warren::client::{CallError, Client, Target};

fn admin_token(node: &TestNode) -> String {
    std::fs::read_to_string(node.path().join("admin.token"))
        .expect("admin token")
        .trim()
        .to_string()
}

async fn code_of(c: &mut Client, method: &str, params: Value) -> Result<Value, console_api::RpcError> {
    match c.call(method, params).await {
        Ok(v) => Ok(v),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("{method}: transport error {e}"),
    }
}

/// Two agents with a conversation each and some transcript.
async fn two_agents(node: &TestNode) -> (String, String) {
    let mut c = node.client().await;
    let a = agent_with_conversation(&mut c, "alice").await;
    let b = agent_with_conversation(&mut c, "bob").await;
    send(&mut c, &a, "hello alice").await;
    send(&mut c, &b, "hello bob").await;
    wait_event(&mut c, &a, "agent", "echo: hello alice").await;
    wait_event(&mut c, &b, "agent", "echo: hello bob").await;
    (a, b)
}

async fn assert_observes_alice_only(node: &TestNode, token: &str, a: &str, b: &str) {
    let mut t = client_with(node, token).await;
    let page = code_of(&mut t, "transcript.read", json!({ "conversation": a }))
        .await
        .expect("read alice");
    assert!(
        page["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["text"] == "hello alice")
    );
    let usage = code_of(&mut t, "usage.get", json!({ "scope": "conversation", "id": a }))
        .await
        .expect("alice's usage");
    assert_eq!(usage["turns"], 0, "the fake CLI reports no usage");
    for (method, params, needle) in [
        ("usage.get", json!({ "scope": "conversation", "id": b }), "resource"),
        (
            "conversation.sendMessage",
            json!({ "conversation": a, "text": "sneaky" }),
            "operation",
        ),
        ("transcript.read", json!({ "conversation": b }), "resource"),
        (
            "agent.create",
            json!({ "name": "mallory", "harness": "fake" }),
            "resource",
        ),
        (
            "conversation.sendKeys",
            json!({ "conversation": a, "keys": "x" }),
            "operation",
        ),
    ] {
        let e = code_of(&mut t, method, params).await.expect_err(method);
        assert_eq!(e.code, -32003, "{method}: {}", e.message);
        let failed = e
            .data
            .as_ref()
            .and_then(|d| d["failed_check"].as_str())
            .unwrap_or_default()
            .to_string();
        assert!(
            failed.starts_with("check if") && failed.contains(needle),
            "{method}: failed_check {failed:?}"
        );
        assert!(e.message.contains(&failed), "{method}: {}", e.message);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attenuated_token_observes_one_agent_and_nothing_else() {
    let node = TestNode::start();
    let (a, b) = two_agents(&node).await;
    let admin = admin_token(&node);

    // With the CLI, offline (no node involved).
    let out = std::process::Command::new(EXE)
        .args([
            "token",
            "attenuate",
            &admin,
            "--agent",
            "alice",
            "--operation",
            "observe",
        ])
        .env("WARREN_DATA_DIR", "/nonexistent")
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let narrowed = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert_observes_alice_only(&node, &narrowed, &a, &b).await;

    // As a third party would: the biscuit library, plain Datalog.
    let t = biscuit_auth::UnverifiedBiscuit::from_base64(&admin).expect("parse");
    let block = biscuit_auth::builder::BlockBuilder::new()
        .code(r#"check if resource("agent:alice"); check if operation("observe");"#)
        .expect("datalog");
    let third = t.append(block).expect("append").to_base64().expect("encode");
    assert_observes_alice_only(&node, &third, &a, &b).await;

    // node.info shows the root key third parties verify against.
    let mut c = node.client().await;
    let info = call(&mut c, "node.info", json!({})).await;
    let root = capabilities::public_key_from_hex(info["root_public_key"].as_str().expect("key")).expect("hex key");
    assert!(
        biscuit_auth::Biscuit::from_base64(&third, root).is_ok(),
        "verifiable with the published root key"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unusable_tokens_are_refused_and_revocation_bites_on_the_next_call() {
    let node = TestNode::start();
    let (a, _) = two_agents(&node).await;
    let admin = admin_token(&node);
    let expired = capabilities::attenuate(
        &admin,
        &capabilities::Restriction {
            expires_at: Some(std::time::SystemTime::now() - Duration::from_secs(5)),
            ..Default::default()
        },
    )
    .expect("attenuate");
    let foreign = capabilities::RootKey::generate().mint_admin("elsewhere").expect("mint");
    for (label, token, needle) in [
        ("expired", expired.as_str(), "expired"),
        ("another root", foreign.as_str(), "signature"),
        ("truncated", &admin[..admin.len() - 20], "malformed"),
        (
            "random base64",
            "c29tZSByYW5kb20gYnl0ZXMgdGhhdCBhcmUgbm90IGEgdG9rZW4",
            "malformed",
        ),
    ] {
        let mut anon = Client::connect(&Target {
            url: node.target().url,
            token: None,
        })
        .await
        .expect("connect");
        let e = match code_of(&mut anon, "session.authenticate", json!({ "token": token })).await {
            Err(e) => e,
            // An expired token has a good signature: it fails at its first call.
            Ok(_) => code_of(&mut anon, "agent.list", json!({})).await.expect_err(label),
        };
        assert_eq!(e.code, -32001, "{label}: {}", e.message);
        assert!(e.message.contains(needle), "{label}: {}", e.message);
    }

    // Revocation takes effect on the very next call of a live connection.
    let mut c = node.client().await;
    let minted = call(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "agent:alice", "operation": "observe" }], "ttl_secs": 600 }),
    )
    .await;
    let token = minted["token"].as_str().expect("token").to_string();
    let mut t = client_with(&node, &token).await;
    code_of(&mut t, "transcript.read", json!({ "conversation": a }))
        .await
        .expect("works before");
    code_of(&mut t, "transcript.read", json!({ "conversation": a }))
        .await
        .expect("and is cached");
    let id = minted["revocation_ids"][0].as_str().expect("id");
    let (code, _, err) = warren(&["token", "revoke", id], &node.path());
    assert_eq!(code, 0, "{err}");
    let e = code_of(&mut t, "transcript.read", json!({ "conversation": a }))
        .await
        .expect_err("revoked");
    assert_eq!(e.code, -32001);
    assert!(e.message.contains("revoked"), "{}", e.message);
    let mut fresh = Client::connect(&Target {
        url: node.target().url,
        token: None,
    })
    .await
    .expect("connect");
    let e = code_of(&mut fresh, "session.authenticate", json!({ "token": token }))
        .await
        .expect_err("revoked");
    assert_eq!(e.code, -32001);
    assert!(e.message.contains("revoked"), "{}", e.message);
    let refused = Client::connect(&Target {
        url: node.target().url,
        token: Some(token.clone()),
    })
    .await;
    assert!(
        refused
            .err()
            .expect("refused at the upgrade")
            .to_string()
            .contains("revoked")
    );
    let inspected = call(&mut c, "token.inspect", json!({ "token": token })).await;
    assert_eq!(inspected["revoked"], true);
    assert_eq!(inspected["verified"], true);
    assert!(
        inspected["blocks"][0]
            .as_str()
            .expect("block")
            .contains(r#"right("agent:alice", "observe")"#)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_companion_reads_and_does_nothing_else() {
    let node = TestNode::start();
    let (a, _) = two_agents(&node).await;
    let (code, out, err) = warren(&["token", "mint", "--companion"], &node.path());
    assert_eq!(code, 0, "{err}");
    let companion = out.trim().to_string();
    let mut t = client_with(&node, &companion).await;
    let reads = [
        ("node.info", json!({})),
        ("agent.list", json!({})),
        ("agent.get", json!({ "agent": "alice" })),
        ("conversation.list", json!({})),
        ("conversation.get", json!({ "conversation": a })),
        ("conversation.screen", json!({ "conversation": a })),
        ("transcript.read", json!({ "conversation": a })),
        ("transcript.subscribe", json!({ "conversation": a })),
        ("supervision.status", json!({})),
        ("supervision.holds", json!({})),
        ("supervision.audit", json!({})),
        ("supervision.rules", json!({ "agent": "alice" })),
        ("usage.get", json!({ "scope": "conversation", "id": a })),
        ("fleet.nodes", json!({})),
    ];
    for (method, params) in reads {
        code_of(&mut t, method, params)
            .await
            .unwrap_or_else(|e| panic!("companion {method}: {e}"));
    }
    // Fleet membership is changed only on the node itself.
    for (method, params) in [
        ("fleet.init", json!({})),
        ("fleet.invite", json!({})),
        ("fleet.join", json!({ "invite": "x" })),
        ("fleet.remove", json!({ "node": "n" })),
    ] {
        let e = code_of(&mut t, method, params).await.expect_err(method);
        assert_eq!(e.code, -32010, "companion {method}: {}", e.message);
    }
    let writes = [
        ("agent.create", json!({ "name": "x", "harness": "fake" })),
        ("agent.archive", json!({ "agent": "bob" })),
        ("conversation.start", json!({ "agent": "bob" })),
        ("conversation.pause", json!({ "conversation": a })),
        ("conversation.sendMessage", json!({ "conversation": a, "text": "hi" })),
        ("conversation.sendKeys", json!({ "conversation": a, "keys": "x" })),
        ("terminal.subscribe", json!({ "conversation": a })),
        ("token.revoke", json!({ "revocation_id": "00" })),
        ("supervision.nudge", json!({ "agent": "alice" })),
        ("supervision.answer", json!({ "hold": "h", "decision": "approve" })),
    ];
    for (method, params) in writes {
        let e = code_of(&mut t, method, params).await.expect_err(method);
        assert_eq!(e.code, -32003, "companion {method}: {}", e.message);
    }
    // With actions, nudge and answer pass authorization too (minted locally).
    let (code, out, err) = warren(&["token", "mint", "--companion", "--with-actions"], &node.path());
    assert_eq!(code, 0, "{err}");
    let mut t = client_with(&node, out.trim()).await;
    let nudged = code_of(&mut t, "supervision.nudge", json!({ "agent": "alice" }))
        .await
        .expect("the companion may nudge");
    assert_eq!(nudged["outcome"], "sent");
    let e = code_of(&mut t, "conversation.pause", json!({ "conversation": a }))
        .await
        .expect_err("still no writes");
    assert_eq!(e.code, -32003);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standing_authority_never_crosses_the_network() {
    let node = TestNode::start();
    let mut c = node.client().await;
    for (method, params) in [
        ("supervision.set", json!({ "agent": "x", "enabled": true })),
        ("supervision.learn", json!({ "agent": "x", "pattern": "cargo test" })),
        ("supervision.forget", json!({ "agent": "x", "pattern": "cargo test" })),
        (
            "supervision.answer",
            json!({ "hold": "h", "decision": "approve", "learn": true }),
        ),
        ("config.set", json!({})),
        ("session.pair_code", json!({})),
        (
            "token.mint",
            json!({ "rights": [{ "resource": "node", "operation": "admin" }] }),
        ),
        (
            "token.mint",
            json!({ "rights": [{ "resource": "agent:x", "operation": "supervise" }] }),
        ),
    ] {
        let e = call_err(&mut c, method, params.clone()).await;
        assert_eq!(e.code, -32010, "{method} {params}: {}", e.message);
        assert!(e.message.contains("local-only"), "{}", e.message);
    }
    // On the Unix socket the same mint works.
    let (code, out, err) = warren(&["token", "mint", "--right", "node:admin", "--ttl", "60"], &node.path());
    assert_eq!(code, 0, "{err}");
    let mut t = client_with(&node, out.trim()).await;
    code_of(&mut t, "agent.list", json!({}))
        .await
        .expect("a locally minted admin token works");
    // Bad mint requests name the problem.
    let e = call_err(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "planet:mars", "operation": "observe" }] }),
    )
    .await;
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("rights[0].resource"), "{}", e.message);
    let e = call_err(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "node", "operation": "fly" }] }),
    )
    .await;
    assert!(e.message.contains("rights[0].operation"), "{}", e.message);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversations_instance_token_has_its_agents_grants_and_dies_with_it() {
    let node = TestNode::start();
    let mut c = node.client().await;
    agent_with_conversation(&mut c, "other").await;
    let other = call(&mut c, "conversation.list", json!({ "agent": "other" })).await["conversations"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    call(
        &mut c,
        "agent.create",
        json!({ "name": "worker", "harness": "fake", "grants": { "peers": ["other"], "tools": ["mail", "supervision"] },
                "rules": [
                    { "match": "^leak$", "actions": [
                        { "shell": "printf %s \"$WARREN_URL\" > url.txt && printf %s \"$WARREN_TOKEN\" > token.txt" } ] },
                    { "match": "^mail$", "actions": [
                        { "shell": "warren-mail send other 'from the CLI itself' > mail.out 2>&1; echo $? > mail.code; warren-supervision status --json > status.out 2>&1; echo $? > status.code; command -v warren > which.out; echo $? > other-status.code; warren-recall search \"$(cat peer.txt)\" > read.out 2>&1; echo $? > read.code" } ] }
                ] }),
    )
    .await;
    let id = conversation_id(&mut c, "worker").await;
    send(&mut c, &id, "leak").await;
    let workspace = node.path().join("agents/worker/workspace");
    let token = wait_until("the CLI wrote its token", Duration::from_secs(15), || {
        let p = workspace.join("token.txt");
        async move { std::fs::read_to_string(p).ok().filter(|t| !t.is_empty()) }
    })
    .await;
    let url = std::fs::read_to_string(workspace.join("url.txt")).expect("url");
    assert_eq!(url, node.target().url, "the CLI is told where its node is");
    let file = node.path().join("agents/worker/home/.warren/instance.token");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&file).expect("token file").permissions().mode() & 0o777,
        0o600
    );

    let mut t = client_with(&node, &token).await;
    code_of(&mut t, "transcript.read", json!({ "conversation": id }))
        .await
        .expect("its own transcript");
    code_of(&mut t, "agent.get", json!({ "agent": "worker" }))
        .await
        .expect("its own definition");
    let e = code_of(&mut t, "transcript.read", json!({ "conversation": other }))
        .await
        .expect_err("another agent");
    assert_eq!(e.code, -32003);
    let e = code_of(
        &mut t,
        "conversation.sendMessage",
        json!({ "conversation": other, "text": "hi" }),
    )
    .await
    .expect_err("inject");
    assert_eq!(e.code, -32003);
    // Mails its permitted peer, as itself only, and no one else.
    let sent = code_of(
        &mut t,
        "mailbox.send",
        json!({ "from": "worker", "to": "other", "body": "hi peer" }),
    )
    .await
    .expect("mail to a permitted peer");
    assert!(sent["message_id"].as_str().is_some());
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "other" })).await;
    assert_eq!(inbox["messages"][0]["body"], "hi peer");
    assert_eq!(inbox["messages"][0]["from"], "worker");
    let e = code_of(
        &mut t,
        "mailbox.send",
        json!({ "from": "worker", "to": "stranger", "body": "hi" }),
    )
    .await
    .expect_err("not a peer");
    assert_eq!(e.code, -32003);
    let e = code_of(
        &mut t,
        "mailbox.send",
        json!({ "from": "other", "to": "other", "body": "forged" }),
    )
    .await
    .expect_err("as someone else");
    assert_eq!(e.code, -32003);
    assert!(e.message.contains("speaks for agent \"worker\""), "{}", e.message);

    // Only the granted tools' methods: recall was not granted.
    let e = code_of(&mut t, "recall.search", json!({ "agent": "worker", "query": "x" }))
        .await
        .expect_err("recall not granted");
    assert_eq!(e.code, -32003, "{}", e.message);

    // The CLI itself, calling its mounted tools with the token from its environment.
    std::fs::write(workspace.join("peer.txt"), &other).expect("peer id");
    send(&mut c, &id, "mail").await;
    let read_code = wait_until("the CLI's tool calls finished", Duration::from_secs(20), || {
        let p = workspace.join("read.code");
        async move { std::fs::read_to_string(p).ok().filter(|s| !s.trim().is_empty()) }
    })
    .await;
    let mail_out = std::fs::read_to_string(workspace.join("mail.out")).expect("mail.out");
    assert_eq!(
        std::fs::read_to_string(workspace.join("mail.code"))
            .expect("code")
            .trim(),
        "0",
        "{mail_out}"
    );
    let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "other", "after": 0 })).await;
    assert!(
        inbox["messages"]
            .as_array()
            .expect("list")
            .iter()
            .any(|m| m["body"] == "from the CLI itself")
    );
    let read_out = std::fs::read_to_string(workspace.join("read.out")).expect("read.out");
    assert_eq!(read_code.trim(), "127", "warren-recall is not mounted: {read_out}");
    // Its own supervision status, and not another agent's.
    let status_out = std::fs::read_to_string(workspace.join("status.out")).expect("status.out");
    assert_eq!(
        std::fs::read_to_string(workspace.join("status.code"))
            .expect("code")
            .trim(),
        "0",
        "{status_out}"
    );
    let status: Value = serde_json::from_str(&status_out).expect("status json");
    assert_eq!(status["agents"][0]["agent"], "worker");
    assert_eq!(status["agents"].as_array().expect("list").len(), 1);
    let which = std::fs::read_to_string(workspace.join("which.out")).unwrap_or_default();
    assert_ne!(
        std::fs::read_to_string(workspace.join("other-status.code"))
            .expect("code")
            .trim(),
        "0",
        "no `warren` client on the CLI's PATH: {which}"
    );
    assert!(which.is_empty(), "{which}");

    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let e = code_of(&mut t, "transcript.read", json!({ "conversation": id }))
        .await
        .expect_err("paused");
    assert_eq!(e.code, -32001, "{}", e.message);
    assert!(e.message.contains("revoked"), "{}", e.message);
}

#[test]
fn fleet_init_makes_the_data_dir_a_first_run_has_not_made_yet() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let data_dir = dir.path().join("share/warren");
    let key_file = data_dir.join("owner.key");
    // No node runs on that data dir: the key file only.
    let out = std::process::Command::new(EXE)
        .args(["fleet", "init", "--key-file"])
        .arg(&key_file)
        .env("WARREN_DATA_DIR", &data_dir)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(
        std::fs::metadata(&key_file).expect("key").permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(
        std::fs::metadata(&data_dir).expect("dir").permissions().mode() & 0o777,
        0o700
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_trust_the_fleet_owner_key_they_are_configured_with() {
    let dir = tempfile::tempdir().expect("tempdir");
    let key_file = dir.path().join("owner.key");
    let out = std::process::Command::new(EXE)
        .args(["fleet", "init", "--json", "--key-file"])
        .arg(&key_file)
        .env("WARREN_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let init: Value = serde_json::from_slice(&out.stdout).expect("json");
    let public = init["public_key"].as_str().expect("public key").to_string();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&key_file).expect("key").permissions().mode() & 0o777,
        0o600
    );
    // A second init never overwrites the key.
    let again = std::process::Command::new(EXE)
        .args(["fleet", "init", "--key-file"])
        .arg(&key_file)
        .env("WARREN_DATA_DIR", dir.path())
        .output()
        .expect("run");
    assert!(!again.status.success());

    // A token signed offline by the owner key.
    let out = std::process::Command::new(EXE)
        .args(["token", "mint", "--right", "node:observe", "--ttl", "300", "--key-file"])
        .arg(&key_file)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let owner_token = String::from_utf8_lossy(&out.stdout).trim().to_string();

    let trusting = TestNode::start_with_config(&format!("trusted_roots = [\"{public}\"]\n"));
    let mut t = client_with(&trusting, &owner_token).await;
    code_of(&mut t, "agent.list", json!({}))
        .await
        .expect("the configured owner root is trusted");
    let e = code_of(&mut t, "agent.create", json!({ "name": "x", "harness": "fake" }))
        .await
        .expect_err("observe only");
    assert_eq!(e.code, -32003);

    let stranger = TestNode::start();
    let refused = Client::connect(&Target {
        url: stranger.target().url,
        token: Some(owner_token),
    })
    .await;
    assert!(
        refused
            .err()
            .expect("an unconfigured node refuses it")
            .to_string()
            .contains("signature")
    );
}

/// A node killed with `kill -9` never revoked the instance tokens of the
/// conversations it ran; the restarted node does (they were recorded), so a
/// token left in an agent's home is dead even though the CLI never paused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_tokens_of_a_crashed_run_are_revoked_on_restart() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    agent_with_conversation(&mut c, "crashy").await;
    let token_file = node.path().join("agents/crashy/home/.warren/instance.token");
    let old = std::fs::read_to_string(&token_file)
        .expect("instance token")
        .trim()
        .to_string();
    let url = node.target().url;
    let mut as_cli = Client::connect(&Target {
        url: url.clone(),
        token: Some(old.clone()),
    })
    .await
    .expect("the instance token works while its CLI runs");
    call(&mut as_cli, "agent.get", json!({ "agent": "crashy" })).await;

    node.kill9();
    node.restart();
    let url = node.target().url;
    let refused = Client::connect(&Target { url, token: Some(old) })
        .await
        .err()
        .map(|e| format!("{e:#}"))
        .unwrap_or_default();
    assert!(
        refused.contains("revoked"),
        "the old instance token is refused: {refused:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_tokens_event_subscription_ends_at_the_next_event() {
    let node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "alice").await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "bob", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
    let minted = call(
        &mut c,
        "token.mint",
        json!({ "rights": [{ "resource": "node", "operation": "observe" }, { "resource": "node", "operation": "terminal" }], "ttl_secs": 600 }),
    )
    .await;
    let token = minted["token"].as_str().expect("token").to_string();
    let mut watcher = client_with(&node, &token).await;
    call(
        &mut watcher,
        "events.subscribe",
        json!({ "kinds": ["event.mail.arrived"] }),
    )
    .await;
    // A transcript follower on another connection ends the same way.
    let conv = call(&mut c, "conversation.start", json!({ "agent": "alice" })).await["conversation"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    wait_idle(&mut c, &conv).await;
    let mut reader = client_with(&node, &token).await;
    call(&mut reader, "transcript.subscribe", json!({ "conversation": conv })).await;
    // And a terminal follower.
    let mut screen = client_with(&node, &token).await;
    call(&mut screen, "terminal.subscribe", json!({ "conversation": conv })).await;
    let mail = json!({ "to": "alice", "from": "bob", "body": "one" });
    call(&mut c, "mailbox.send", mail.clone()).await;
    let first = watcher
        .next_notification(Duration::from_secs(10))
        .await
        .expect("read")
        .expect("the first mail's event");
    assert_eq!(first.method, "event.mail.arrived");

    let id = minted["revocation_ids"][0].as_str().expect("id");
    let (code, _, err) = warren(&["token", "revoke", id], &node.path());
    assert_eq!(code, 0, "{err}");
    call(&mut c, "mailbox.send", mail).await;
    match watcher.next_notification(Duration::from_secs(5)).await {
        Ok(Some(n)) => panic!("a revoked token was sent {}: {}", n.method, n.params),
        Ok(None) => panic!("the revoked token's connection is still open"),
        // Cut off (its close reason says revoked, when the close frame
        // arrives before the reset).
        Err(_) => {}
    }
    send(&mut c, &conv, "after the revocation").await;
    loop {
        match reader.next_notification(Duration::from_secs(5)).await {
            Ok(Some(n))
                if n.params["event"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("after the revocation")) =>
            {
                panic!("a revoked token was sent the transcript: {}", n.params)
            }
            // What the subscription caught up on before the revocation.
            Ok(Some(_)) => continue,
            Ok(None) => panic!("the revoked token's transcript follower is still open"),
            Err(_) => break,
        }
    }
    loop {
        match screen.next_notification(Duration::from_secs(5)).await {
            Ok(Some(n)) => {
                let data = n.params["data"].as_str().unwrap_or_default();
                let bytes =
                    base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains("after the revocation"),
                    "a revoked token was sent the terminal"
                );
            }
            Ok(None) => panic!("the revoked token's terminal follower is still open"),
            Err(_) => break,
        }
    }
}
