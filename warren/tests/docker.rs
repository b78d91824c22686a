//! Docker guests on a real engine: the gate (no engine is a failure, never a
//! skip), the hardening and labels of a conversation's container, its logs,
//! a replayed launch token refused and audited, a container killed from
//! outside, and an orphan reaped. Names are unique per run (node ids are
//! random); teardown removes each node's containers and network by label.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

#[test]
fn docker_engine_is_reachable() {
    let out = std::process::Command::new("docker")
        .args(["info", "--format", "{{.ServerVersion}}"])
        .output()
        .expect("the docker CLI must be installed: the Docker runtime's tests need a Docker engine");
    assert!(
        out.status.success() && !out.stdout.is_empty(),
        "the Docker engine must be reachable for these tests: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The node's `guest` events (refused and reaped guests), oldest first, read
/// from its store file; None while it cannot be read.
async fn guest_events(db: &std::path::Path) -> Option<Vec<Value>> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", db.display()))
        .await
        .ok()?;
    let rows: Vec<(String,)> = sqlx::query_as("SELECT body FROM events WHERE kind = 'guest' ORDER BY seq")
        .fetch_all(&pool)
        .await
        .ok()?;
    pool.close().await;
    rows.iter().map(|(b,)| serde_json::from_str(b).ok()).collect()
}

/// How many refusals `guest` records count (a record without a count is one).
fn refusals(rows: &[Value]) -> u64 {
    rows.iter()
        .filter(|r| r["what"] == "refused")
        .map(|r| r["count"].as_u64().unwrap_or(1))
        .sum()
}

/// What the guest door answered a hello: its refusal's reason, or the HTTP
/// error that turned the upgrade away.
enum Door {
    Refused(String),
    TurnedAway(String),
}

/// One hello for `conversation` with a made-up launch token at `url`.
async fn knock(url: &str, conversation: &str) -> Door {
    use futures_util::{SinkExt, StreamExt};
    let mut ws = match tokio_tungstenite::connect_async(url).await {
        Ok((ws, _)) => ws,
        Err(e) => return Door::TurnedAway(e.to_string()),
    };
    let hello = json!({
        "type": "hello", "conversation": conversation, "credential": "forged", "reconnect": false,
        "nonce": "00".repeat(32), "rows": 40, "cols": 120, "pid": 1, "version": "test",
    });
    if let Err(e) = ws
        .send(tokio_tungstenite::tungstenite::Message::Text(hello.to_string().into()))
        .await
    {
        return Door::TurnedAway(e.to_string());
    }
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t)))) => {
                let v: Value = serde_json::from_str(&t).expect("json");
                assert_eq!(v["type"], "refused", "{v}");
                return Door::Refused(v["reason"].as_str().unwrap_or_default().to_string());
            }
            Ok(Some(Ok(_))) => continue,
            Ok(other) => return Door::TurnedAway(format!("{other:?}")),
            Err(_) => panic!("the guest door neither answered nor closed"),
        }
    }
}

async fn state_of(node: &TestNode, id: &str) -> Value {
    let mut c = node.client().await;
    call(&mut c, "conversation.get", json!({ "conversation": id })).await["conversation"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_runs_in_a_hardened_labelled_container() {
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    // The agent's definition carries its container limits (the CLI's flags).
    let (code, out, err) = warren(
        &[
            "agent",
            "create",
            "boxed",
            "--memory-mb",
            "512",
            "--cpus",
            "0.5",
            "--pids",
            "128",
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}{out}");
    let (code, _, err) = warren(&["agent", "create", "greedy", "--cpus", "0"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("resources.cpus"), "{err}");
    let id = conversation_id(&mut c, "boxed").await;
    let info = call(&mut c, "node.info", json!({})).await;
    assert_eq!(info["runtime"], "docker");

    let ct = inspect(&id);
    let labels = &ct["Config"]["Labels"];
    assert_eq!(labels["warren.conversation"], id.as_str());
    assert_eq!(labels["warren.agent"], "boxed");
    assert_eq!(labels["warren.node"], node.node_id().as_str());
    let host = &ct["HostConfig"];
    assert_eq!(host["SecurityOpt"], json!(["no-new-privileges"]));
    assert_eq!(host["CapDrop"], json!(["ALL"]));
    assert_eq!(host["PidsLimit"], 128, "from the agent's definition");
    assert_eq!(host["Memory"], 512 * 1024 * 1024);
    assert_eq!(host["NanoCpus"], 500_000_000);
    assert_eq!(host["ReadonlyRootfs"], true);
    assert_eq!(ct["Config"]["User"], "10001:10001", "a non-root user");
    assert!(
        ct["NetworkSettings"]["Ports"].as_object().is_none_or(|p| p.is_empty()),
        "no port into the container"
    );
    // The CLI never sees the launch token; the guest does.
    assert!(!env_of(&ct, "WARREN_LAUNCH_TOKEN").is_empty());

    send(&mut c, &id, "hello container").await;
    wait_event(&mut c, &id, "agent", "echo: hello container").await;
    // `docker logs` shows the CLI's own output (the guest is a stdio proxy).
    let name = ct["Name"].as_str().expect("name").trim_start_matches('/').to_string();
    let logs = wait_until("the reply in docker logs", Duration::from_secs(10), || {
        let out = std::process::Command::new("docker")
            .args(["logs", &name])
            .output()
            .expect("docker logs");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        async move { text.contains("echo: hello container").then_some(text) }
    })
    .await;
    assert!(logs.contains("hello container"));

    // Pause removes the container; continue makes a new one.
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    wait_until("the container is gone", Duration::from_secs(15), || {
        let left = docker(&["ps", "-aq", "--filter", &format!("label=warren.conversation={id}")]);
        async move { left.trim().is_empty().then_some(()) }
    })
    .await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "still here").await;
    wait_event(&mut c, &id, "agent", "echo: still here").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_launch_token_is_refused_and_audited() {
    use futures_util::{SinkExt, StreamExt};
    // Refusals from one address are recorded at most once per window, with
    // a count (a short window here, so the second is seen soon).
    let node = TestNode::start_on("docker", "[limits]\nguest_refusal_record_secs = 1\n");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "replay").await;
    let ct = inspect(&id);
    let url = env_of(&ct, "WARREN_NODE_URL");
    let token = env_of(&ct, "WARREN_LAUNCH_TOKEN");

    // Present the used token again, as a guest would.
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str())
        .await
        .expect("dial the guest endpoint");
    let hello = json!({
        "type": "hello", "conversation": id, "credential": token, "reconnect": false,
        "nonce": "00".repeat(32), "rows": 40, "cols": 120, "pid": 1, "version": "test",
    });
    ws.send(tokio_tungstenite::tungstenite::Message::Text(hello.to_string().into()))
        .await
        .expect("send hello");
    let answer = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("an answer")
        .expect("a frame")
        .expect("ok frame");
    let answer: Value = serde_json::from_str(answer.to_text().expect("text")).expect("json");
    assert_eq!(answer["type"], "refused", "{answer}");
    assert!(
        answer["reason"].as_str().is_some_and(|r| r.contains("replay")),
        "{answer}"
    );

    // An unknown conversation with a made-up token: refused too.
    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.expect("dial");
    let mut forged = hello.clone();
    forged["conversation"] = json!("c-nope");
    forged["credential"] = json!("forged");
    ws.send(tokio_tungstenite::tungstenite::Message::Text(forged.to_string().into()))
        .await
        .expect("send");
    let answer = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .expect("an answer")
        .expect("a frame")
        .expect("ok frame");
    assert!(answer.to_text().expect("text").contains("refused"));

    // Both refusals are in the event log (the first at once, the second in
    // the next window's record); the real guest still works.
    let db = node.db();
    let rows = wait_until("two guest refusals recorded", Duration::from_secs(10), || {
        let db = db.clone();
        async move {
            let rows = guest_events(&db).await?;
            (refusals(&rows) >= 2).then_some(rows)
        }
    })
    .await;
    assert_eq!(rows.iter().filter(|r| r["what"] == "refused").count(), 2, "{rows:?}");
    let first = &rows[0];
    assert_eq!(
        (first["what"].as_str(), first["conversation"].as_str()),
        (Some("refused"), Some(id.as_str()))
    );
    assert!(
        first["reason"].as_str().is_some_and(|r| r.contains("replay")),
        "{first}"
    );
    send(&mut c, &id, "unharmed").await;
    wait_event(&mut c, &id, "agent", "echo: unharmed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_container_killed_from_outside_leaves_a_paused_resumable_conversation() {
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "victim").await;
    send(&mut c, &id, "before").await;
    wait_event(&mut c, &id, "agent", "echo: before").await;
    let ct = inspect(&id);
    docker(&["kill", ct["Id"].as_str().expect("id")]);
    let paused = wait_until("the conversation is paused", Duration::from_secs(15), || {
        let node = &node;
        let id = id.clone();
        async move {
            let conv = state_of(node, &id).await;
            (conv["state"] == "paused").then_some(conv)
        }
    })
    .await;
    assert!(paused["resume_ref"].as_str().is_some(), "{paused}");
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "after").await;
    wait_event(&mut c, &id, "agent", "echo: after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_orphan_container_is_reaped_and_audited() {
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    // The node is up (and has reaped once); now an orphan appears: a container
    // labelled for this node that no live conversation owns.
    call(&mut c, "node.info", json!({})).await;
    let image = guest_image("fake");
    let orphan = docker(&[
        "run",
        "-d",
        "--label",
        &format!("warren.node={}", node.node_id()),
        "--label",
        "warren.conversation=c-orphan",
        "--entrypoint",
        "sleep",
        &image,
        "600",
    ]);
    let orphan = orphan.trim().to_string();
    assert!(!orphan.is_empty(), "the orphan started");
    wait_until("the orphan is reaped", Duration::from_secs(20), || {
        let left = docker(&["ps", "-aq", "--filter", "label=warren.conversation=c-orphan"]);
        async move { left.trim().is_empty().then_some(()) }
    })
    .await;
    let db = node.db();
    let orphan_id = orphan.clone();
    wait_until("the reaping is in the event log", Duration::from_secs(10), || {
        let db = db.clone();
        let orphan = orphan_id.clone();
        async move {
            guest_events(&db)
                .await?
                .iter()
                .any(|e| {
                    e["what"] == "reaped"
                        && e["conversation"] == "c-orphan"
                        && e["reason"].as_str().is_some_and(|r| r.contains(&orphan))
                })
                .then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_node_readopts_its_running_guest() {
    let mut node = TestNode::start_on("docker", "[docker]\nreap_interval_secs = 1\nreadopt_grace_secs = 20\n");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "survivor").await;
    send(&mut c, &id, "before").await;
    wait_event(&mut c, &id, "agent", "echo: before").await;
    let container = inspect(&id)["Id"].clone();
    // The token lives in the guest's tmpfs (see docker_egress.rs).
    let cid = container.as_str().expect("id").to_string();
    let token_of = |cid: String| async move {
        let (ok, out, _) = docker_status(&["exec", &cid, "cat", "/run/warren-secrets/instance.token"]);
        ok.then(|| out.trim().to_string()).filter(|t| !t.is_empty())
    };
    let old_token = wait_until("the guest's token", Duration::from_secs(10), || token_of(cid.clone())).await;

    node.kill9();
    node.restart();
    let mut c = node.client().await;
    // The node waits up to readopt_grace_secs (20) for the guest, counted
    // from its own start: wait longer than that for the outcome.
    wait_event_within(
        &mut c,
        &id,
        "system",
        "re-adopted: the guest came back after the node restarted",
        Duration::from_secs(45),
    )
    .await;
    // The CLI got a fresh instance token in its token file; the last run's is revoked.
    let fresh = wait_until("a fresh token in the guest", Duration::from_secs(10), || {
        let (read, old) = (token_of(cid.clone()), old_token.clone());
        async move { read.await.filter(|t| *t != old) }
    })
    .await;
    let url = node.target().url;
    let old = warren::client::Client::connect(&warren::client::Target {
        url: url.clone(),
        token: Some(old_token),
    })
    .await
    .err()
    .map(|e| format!("{e:#}"))
    .unwrap_or_default();
    assert!(old.contains("revoked"), "{old:?}");
    let mut cli = warren::client::Client::connect(&warren::client::Target {
        url,
        token: Some(fresh),
    })
    .await
    .expect("the fresh token works");
    call(&mut cli, "conversation.get", json!({ "conversation": id })).await;
    let conv = state_of(&node, &id).await;
    assert_eq!(conv["state"], "active", "{conv}");
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "after").await;
    wait_event(&mut c, &id, "agent", "echo: after").await;
    assert_eq!(inspect(&id)["Id"], container, "the same container, never restarted");
    let events = transcript(&mut c, &id).await;
    assert!(
        events
            .iter()
            .filter_map(|e| e["text"].as_str())
            .all(|t| !t.starts_with("paused")),
        "no pause: {events:#?}"
    );
    let humans: Vec<&str> = events
        .iter()
        .filter(|e| e["speaker"] == "human")
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert_eq!(humans, vec!["before", "after"], "each message once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_that_does_not_come_back_in_time_leaves_a_paused_conversation() {
    let mut node = TestNode::start_on("docker", "[docker]\nreap_interval_secs = 1\nreadopt_grace_secs = 2\n");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "frozen").await;
    let container = inspect(&id)["Id"].as_str().expect("id").to_string();
    node.kill9();
    // Frozen: its guest cannot dial back.
    docker(&["pause", &container]);
    node.restart();
    let paused = wait_until("paused after the grace period", Duration::from_secs(20), || {
        let node = &node;
        let id = id.clone();
        async move {
            let conv = state_of(node, &id).await;
            (conv["state"] == "paused").then_some(conv)
        }
    })
    .await;
    assert!(
        paused["pause_reason"]
            .as_str()
            .is_some_and(|r| r.contains("did not come back")),
        "{paused}"
    );
    wait_until("the frozen container is reaped", Duration::from_secs(20), || {
        let left = docker(&["ps", "-aq", "--filter", &format!("label=warren.conversation={id}")]);
        async move { left.trim().is_empty().then_some(()) }
    })
    .await;
    let mut c = node.client().await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "thawed").await;
    wait_event(&mut c, &id, "agent", "echo: thawed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_at_the_guest_door_cost_a_bounded_record_and_log_line() {
    let node = TestNode::start_docker_without_images("[limits]\nguest_refusal_record_secs = 3\n");
    let url = node.target().url.replace(console_api::WS_PATH, "/guest");
    let log = node.path().join("node.log");
    let log_before = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);

    // Hellos with a 900 KiB conversation id: refused without echoing it.
    let huge = "x".repeat(900 * 1024);
    for _ in 0..5 {
        match knock(&url, &huge).await {
            Door::Refused(reason) => assert!(reason.len() < 300, "{} bytes of reason", reason.len()),
            Door::TurnedAway(e) => panic!("the first hellos are answered: {e}"),
        }
    }
    // 300 small ones as fast as they go: a source over its rate is turned
    // away at the upgrade.
    let mut turned_away = 0;
    for i in 0..300 {
        match knock(&url, &format!("c-{i:016x}")).await {
            Door::Refused(reason) => assert!(reason.len() < 300, "{reason}"),
            Door::TurnedAway(e) => {
                assert!(e.contains("429"), "{e}");
                turned_away += 1;
            }
        }
    }
    assert!(turned_away > 200, "only {turned_away} of 300 were turned away");

    // Every refusal is counted, in a few small records.
    let db = node.db();
    let rows = wait_until("all 305 refusals counted", Duration::from_secs(20), || {
        let db = db.clone();
        async move {
            let rows = guest_events(&db).await?;
            (refusals(&rows) == 305).then_some(rows)
        }
    })
    .await;
    assert!(rows.len() <= 3, "{} records for one address: {rows:?}", rows.len());
    let bytes: usize = rows.iter().map(|r| r.to_string().len()).sum();
    assert!(bytes < 4096, "{bytes} bytes of guest records");
    assert!(rows.iter().all(|r| r["source"] == "127.0.0.1"), "{rows:?}");
    let logged = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0) - log_before;
    assert!(logged < 16 * 1024, "{logged} bytes logged");

    // The node keeps serving.
    let mut c = node.client().await;
    call(&mut c, "node.info", json!({})).await;
}
