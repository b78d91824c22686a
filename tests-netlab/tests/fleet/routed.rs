//! Calls routed across the fleet: an agent on one member driven and watched
//! from another, a partitioned home, a stranger fleet on the same bridge, and a
//! monitor advising across members.

use super::*;

/// The error code of a failed call, and its message.
fn rpc_code(e: &warren::client::CallError) -> (i64, String) {
    match e.rpc() {
        Some(r) => (r.code, format!("{} {}", r.message, r.data.clone().unwrap_or_default())),
        None => (0, e.to_string()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_on_n3_is_created_driven_and_watched_from_n1() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2, n3) = (lab.node("n1"), lab.node("n2"), lab.node("n3"));

    // Placed on n3 from n1 (n1's local admin holds the owner key, so its
    // forwarded calls carry a token the owner key signed).
    let a = n1
        .call(
            "agent.create",
            json!({ "name": "far", "harness": "fake", "node": "n3" }),
        )
        .await
        .expect("create on n3");
    assert_eq!(a["agent"]["name"], "far");
    n3.call("agent.get", json!({ "agent": "far" }))
        .await
        .expect("homed on n3");
    let mine = n1.call("agent.list", json!({})).await.expect("n1's own list");
    assert_eq!(mine["agents"], json!([]), "far is not homed on n1");
    let e = n1
        .call("agent.get", json!({ "agent": "nobody" }))
        .await
        .expect_err("unknown");
    assert!(e.to_string().contains("nobody"), "{e}");

    // A client of n1 with the owner's token: bare names are found in the
    // fleet, NAME@NODE names one directly.
    let token = lab.owner_token(0, &["node:admin"]).expect("owner token");
    let mut c = n1.ws(&token).await.expect("ws to n1");
    let got = c.call("agent.get", json!({ "agent": "far" })).await.expect("bare name");
    assert_eq!(got["agent"]["name"], "far");
    c.call("agent.get", json!({ "agent": "far@n3" })).await.expect("far@n3");
    let conv = c
        .call("conversation.start", json!({ "agent": "far@n3" }))
        .await
        .expect("start on n3");
    let id = conv["conversation"]["id"].as_str().expect("id").to_string();
    let mut watch = n1.ws(&token).await.expect("second ws");
    let tsub = watch
        .call("transcript.subscribe", json!({ "conversation": id, "from_seq": 1 }))
        .await
        .expect("transcript.subscribe through n1");
    let tsub = tsub["subscription"].as_str().expect("sub").to_string();
    let term = watch
        .call("terminal.subscribe", json!({ "conversation": id }))
        .await
        .expect("terminal.subscribe through n1");
    let term = term["subscription"].as_str().expect("sub").to_string();
    assert_ne!(tsub, term);
    let sent = c
        .call(
            "conversation.sendMessage",
            json!({ "conversation": id, "text": "hello from n1" }),
        )
        .await
        .expect("sendMessage through n1");
    assert!(
        sent["message_id"].is_string() && sent["seq"].as_u64().is_some(),
        "{sent}"
    );
    // Both streams come through n1: the reply in the transcript, the
    // screen's bytes on the terminal.
    let (mut reply, mut screen_bytes) = (None, 0usize);
    let deadline = Instant::now() + Duration::from_secs(20);
    while reply.is_none() || screen_bytes == 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(n) = watch.next_notification(left).await.expect("read") else {
            panic!("after 20 s: reply {reply:?}, {screen_bytes} terminal bytes");
        };
        match n.method.as_str() {
            "transcript.event" if n.params["event"]["text"] == "echo: hello from n1" => {
                assert_eq!(n.params["subscription"], tsub.as_str());
                reply = Some(n.params["event"]["speaker"].clone());
            }
            "terminal.data" => {
                assert_eq!(n.params["subscription"], term.as_str());
                screen_bytes += n.params["data"].as_str().map_or(0, str::len);
            }
            _ => {}
        }
    }
    assert_eq!(reply, Some(json!("agent")));
    let read = c
        .call("transcript.read", json!({ "conversation": id }))
        .await
        .expect("read");
    assert!(read.to_string().contains("hello from n1"), "{read}");
    let paused = c
        .call("conversation.pause", json!({ "conversation": id }))
        .await
        .expect("pause");
    assert_eq!(paused["conversation"]["state"], "paused", "{paused}");
    let cont = c
        .call("conversation.continue", json!({ "conversation": id }))
        .await
        .expect("continue");
    assert_eq!(cont["conversation"]["state"], "active", "{cont}");

    // Events about far, followed from n1: a nudge sent through n1 is
    // audited on n3 and its event comes back through the fabric.
    let esub = watch
        .call(
            "events.subscribe",
            json!({ "agent": "far@n3", "kinds": ["event.supervision.acted"] }),
        )
        .await
        .expect("events.subscribe through n1");
    let esub = esub["subscription"].as_str().expect("sub").to_string();
    c.call("supervision.nudge", json!({ "agent": "far@n3", "text": "keep going" }))
        .await
        .expect("nudge through n1");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let n = watch
            .next_notification(left)
            .await
            .expect("read")
            .expect("an acted event from n3");
        if n.method == "event.supervision.acted" {
            assert_eq!(n.params["subscription"], esub.as_str());
            assert_eq!(n.params["event"]["agent"], "far", "{}", n.params);
            break;
        }
    }

    // far's live quota, as its Codex home on n3 holds it, read through n1:
    // the agent's usage and n3's; n1's own node has none.
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
        - 60_000;
    let t = spend::quota::rfc3339(at);
    let session = "019ad000-0000-7000-8000-0000000000f3";
    let rollout: String = [
        json!({"timestamp": t, "type": "session_meta", "payload": {"id": session, "timestamp": t, "cwd": "/w"}}),
        json!({"timestamp": t, "type": "turn_context", "payload": {"cwd": "/w", "model": "gpt-5-codex"}}),
        json!({"timestamp": t, "type": "event_msg", "payload": {"type": "token_count",
            "info": {"total_token_usage": {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 5, "total_tokens": 105}},
            "rate_limits": {"primary": {"used_percent": 21.0, "window_minutes": 300, "resets_in_seconds": 3600}}}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect();
    let day = spend::time::utc_day(at).replace('-', "/");
    let sessions = n3.dir.join("agents/far/home/.codex/sessions").join(day);
    std::fs::create_dir_all(&sessions).expect("mkdir");
    std::fs::write(
        sessions.join(format!("rollout-2026-12-01T10-00-00-{session}.jsonl")),
        rollout,
    )
    .expect("rollout");
    let deadline = Instant::now() + Duration::from_secs(20);
    let far_usage = loop {
        let u = c
            .call("usage.get", json!({ "scope": "agent", "id": "far@n3" }))
            .await
            .expect("far's usage through n1");
        if u["quota"].as_array().is_some_and(|q| !q.is_empty()) {
            break u;
        }
        assert!(Instant::now() < deadline, "no quota for far within 20 s: {u}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(
        (
            far_usage["quota"][0]["name"].clone(),
            far_usage["quota"][0]["used"].clone()
        ),
        (json!("codex.primary"), json!(21.0)),
        "{far_usage}"
    );
    assert_eq!(far_usage["tokens"]["input"], 100, "{far_usage}");
    let n3_usage = c
        .call("usage.get", json!({ "scope": "node", "id": "n3" }))
        .await
        .expect("n3's usage through n1");
    assert_eq!(n3_usage["quota"], far_usage["quota"], "{n3_usage}");
    let n1_usage = c
        .call("usage.get", json!({ "scope": "node" }))
        .await
        .expect("n1's own usage");
    assert_eq!(n1_usage["quota"], json!([]), "{n1_usage}");

    // One list over the fleet, each agent naming its node.
    n2.call("agent.create", json!({ "name": "near", "harness": "fake" }))
        .await
        .expect("agent on n2");
    let all = c
        .call("agent.list", json!({ "fleet": true }))
        .await
        .expect("fleet list");
    let mut names: Vec<String> = all["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            format!(
                "{}@{}",
                a["name"].as_str().unwrap_or("?"),
                a["node"].as_str().unwrap_or("?")
            )
        })
        .collect();
    names.sort();
    assert_eq!(names, ["far@n3", "near@n2"], "{all}");
    assert_eq!(all["unreachable"], json!([]));

    // A name on two members is ambiguous; an unknown node is named.
    n3.call("agent.create", json!({ "name": "near", "harness": "fake" }))
        .await
        .expect("a second near");
    let e = c
        .call("agent.get", json!({ "agent": "near" }))
        .await
        .expect_err("ambiguous");
    let (code, msg) = rpc_code(&e);
    assert_eq!(code, -32009, "{msg}");
    assert!(msg.contains("near@n2") && msg.contains("near@n3"), "{msg}");
    let e = c
        .call("agent.get", json!({ "agent": "far@nosuch" }))
        .await
        .expect_err("unknown node");
    let (code, msg) = rpc_code(&e);
    assert_eq!(code, -32004, "{msg}");
    assert!(msg.contains("nosuch"), "{msg}");

    // The home authorizes with the caller's own token: a token of n1's own
    // root is refused by n3, an owner token narrowed to another agent too.
    let n1_own = n1
        .call(
            "token.mint",
            json!({ "rights": [{ "resource": "node", "operation": "observe" }] }),
        )
        .await
        .expect("mint on n1");
    let mut own = n1.ws(n1_own["token"].as_str().expect("token")).await.expect("ws");
    own.call("agent.list", json!({})).await.expect("n1's token works on n1");
    let e = own
        .call("agent.get", json!({ "agent": "far@n3" }))
        .await
        .expect_err("n3 refuses");
    assert_eq!(rpc_code(&e).0, -32001, "{e}");
    let narrow = lab.owner_token(0, &["agent:near:observe"]).expect("narrow token");
    let mut nc = n1.ws(&narrow).await.expect("ws");
    let e = nc
        .call("agent.get", json!({ "agent": "far@n3" }))
        .await
        .expect_err("not its agent");
    assert_eq!(rpc_code(&e).0, -32003, "{e}");
    // n2's local socket holds no fleet authority.
    let e = n2
        .call("agent.get", json!({ "agent": "far@n3" }))
        .await
        .expect_err("n2 local");
    assert!(e.to_string().contains("local admin"), "{e}");
    // So does its admin token; n1's speaks for the fleet (n1 holds the owner key).
    let n2_admin = std::fs::read_to_string(n2.dir.join("admin.token")).expect("n2 admin token");
    let mut n2c = n2.ws(n2_admin.trim()).await.expect("ws n2");
    let e = n2c
        .call("agent.get", json!({ "agent": "far@n3" }))
        .await
        .expect_err("n2 admin token");
    assert_eq!(rpc_code(&e).0, -32003, "{e}");
    let n1_admin = std::fs::read_to_string(n1.dir.join("admin.token")).expect("n1 admin token");
    let mut n1c = n1.ws(n1_admin.trim()).await.expect("ws n1");
    n1c.call("agent.get", json!({ "agent": "far@n3" }))
        .await
        .expect("n1's admin token, forwarded");
}

/// Whether `node` refuses `token` at the door because it is revoked (any
/// other failure, such as a node not listening, is not that refusal).
async fn refused_as_revoked(node: &LabNode, token: &str) -> Option<()> {
    match node.ws(token).await {
        Err(e) if e.to_string().contains("revoked") => Some(()),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_for_a_partitioned_home_answer_unreachable_fast_and_revocations_reach_it_on_rejoin() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2, n3) = (lab.node("n1"), lab.node("n2"), lab.node("n3"));
    n3.call("agent.create", json!({ "name": "cut", "harness": "fake" }))
        .await
        .expect("agent on n3");
    n2.call("agent.create", json!({ "name": "fine", "harness": "fake" }))
        .await
        .expect("agent on n2");
    n1.call("agent.get", json!({ "agent": "cut@n3" }))
        .await
        .expect("reachable");
    let token = lab.owner_token(0, &["node:admin"]).expect("token");
    let ids = n1
        .call("token.inspect", json!({ "token": token }))
        .await
        .expect("inspect")["revocation_ids"]
        .clone();
    let revocation_id = ids[0].as_str().expect("id").to_string();
    for n in [n2, n3] {
        n.ws(&token)
            .await
            .expect("the token works")
            .call("node.info", json!({}))
            .await
            .expect("info");
    }

    n3.partition().expect("cut n3 off");
    wait_for("n1 sees n3 unhealthy", Duration::from_secs(10), || async {
        (health(n1).await.get("n3") == Some(&false)).then_some(())
    })
    .await
    .expect("n3 unhealthy");
    let asked = Instant::now();
    let e = n1
        .call("agent.get", json!({ "agent": "cut@n3" }))
        .await
        .expect_err("unreachable");
    let took = asked.elapsed();
    assert!(e.to_string().contains("n3"), "{e}");
    assert!(took < Duration::from_secs(1), "-32012 took {took:?}");
    eprintln!("-32012 for an agent on the partitioned n3 in {took:?}");
    n1.call("agent.get", json!({ "agent": "fine@n2" }))
        .await
        .expect("n2 unaffected");

    // Revoked on n1 while n3 is cut off: n2 refuses it within 5 s.
    n1.call("token.revoke", json!({ "revocation_id": revocation_id }))
        .await
        .expect("revoke");
    let revoked = Instant::now();
    wait_for("n2 refuses the revoked token", Duration::from_secs(5), || async {
        refused_as_revoked(n2, &token).await
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n2.log()));
    eprintln!(
        "n2 refused the revoked token {:?} after the revocation",
        revoked.elapsed()
    );

    n3.heal().expect("heal");
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let rejoined = Instant::now();
    wait_for(
        "n3 refuses the revoked token after rejoining",
        Duration::from_secs(5),
        || async { refused_as_revoked(n3, &token).await },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n3.log()));
    eprintln!("n3 refused it {:?} after it was healthy again", rejoined.elapsed());
    n1.call("agent.get", json!({ "agent": "cut@n3" }))
        .await
        .expect("n3's agents answer again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_another_fleet_on_the_same_bridge_is_refused_and_blocked() {
    let mut lab = Lab::new(&["n1", "n2", "x"]).expect("lab");
    lab.make_owner(0).expect("our owner key");
    lab.make_owner(2).expect("the other fleet's owner key");
    lab.start(0, None).expect("n1 up");
    let code = lab.nodes[0].invite().await.expect("invite");
    lab.start(1, Some(&code)).expect("n2 up");
    all_see(&lab, &["n1", "n2"], true, Duration::from_secs(20)).await;
    // x founds its own fleet and is told where n1 is (as a member's
    // saved peers would say), so it keeps dialing n1 with its certificate.
    let info = lab.node("n1").call("node.info", json!({})).await.expect("n1 info");
    let n1_addr = lab.node("n1").fabric_addr();
    let record = json!([{
        "node_id": info["node_id"], "name": "n1", "peer_id": info["peer_id"], "endpoint": "",
        "version": "0", "agents": 0, "live_conversations": 0,
        "capacity": { "cpus": 1, "memory_mb": 1, "guests": 0 },
        "addrs": [n1_addr], "sent_at": 0,
    }]);
    std::fs::write(lab.node("x").dir.join("fleet-peers.json"), record.to_string()).expect("peers file");
    lab.start(2, None).expect("x up");
    let (n1, x) = (lab.node("n1"), lab.node("x"));
    let x_peer = x.call("node.info", json!({})).await.expect("x info")["peer_id"]
        .as_str()
        .expect("peer id")
        .to_string();
    wait_for("n1 refuses and blocks x", Duration::from_secs(15), || async {
        n1.log()
            .lines()
            .any(|l| l.contains("peer refused and blocked") && l.contains(&x_peer))
            .then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}\n--- x:\n{}", n1.log(), x.log()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    let members: Vec<String> = health(n1).await.into_keys().collect();
    assert_eq!(members, ["n1", "n2"], "x is no member of ours");
    let x_view = x.call("fleet.nodes", json!({})).await.expect("x nodes");
    let x_members: Vec<&str> = x_view["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["name"].as_str())
        .collect();
    assert_eq!(x_members, ["x"], "x learned nothing of our fleet: {x_view}");
    // Blocked: however often x redials, n1 refuses it only until it is
    // blocked, and our agents stay out of its reach.
    n1.call("agent.create", json!({ "name": "ours", "harness": "fake" }))
        .await
        .expect("agent");
    let e = x
        .call("agent.get", json!({ "agent": "ours@n1" }))
        .await
        .expect_err("not its fleet");
    assert!(e.to_string().contains("n1"), "{e}");
    let e = x
        .call("agent.get", json!({ "agent": "ours" }))
        .await
        .expect_err("not found");
    assert!(e.to_string().contains("ours"), "{e}");
}

/// Transcript events of `conversation` on `node` with this speaker whose
/// text contains `needle`.
pub(super) async fn count_events(node: &LabNode, conversation: &str, speaker: &str, needle: &str) -> usize {
    let Ok(v) = node
        .call(
            "transcript.read",
            json!({ "conversation": conversation, "limit": 1000 }),
        )
        .await
    else {
        return 0;
    };
    v["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["speaker"] == speaker && e["text"].as_str().is_some_and(|t| t.contains(needle)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_monitor_on_n1_advises_an_agent_on_n2_and_resumes_after_a_partition() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));
    n2.call(
        "agent.create",
        json!({ "name": "coder", "harness": "fake", "rules": [
            { "match": "^crash (\\d+)", "actions": [{ "say": "segfault number $1" }] }
        ] }),
    )
    .await
    .expect("coder on n2");
    n1.call(
        "agent.create",
        json!({ "name": "mon", "harness": "fake", "rules": [
            { "match": "warren-read (c-[0-9a-f]+)", "actions": [{ "shell": "warren-advise {{1}} 'look at the pointer'" }] }
        ] }),
    )
    .await
    .expect("mon on n1");
    // A target the caller may not observe is refused, naming it.
    let e = n1
        .call(
            "monitor.attach",
            json!({ "monitor": "mon", "target": { "agent": "ghost@n2" }, "trigger": { "keywords": [{ "text": "x" }] } }),
        )
        .await
        .expect_err("no such agent on n2");
    assert!(e.to_string().contains("ghost"), "{e}");
    let a = n1
        .call(
            "monitor.attach",
            json!({ "monitor": "mon", "target": { "agent": "coder@n2" },
                    "trigger": { "keywords": [{ "text": "segfault" }] } }),
        )
        .await
        .expect("attach across the fleet");
    let attachment = a["attachment"]["id"].as_str().expect("id").to_string();
    let conv = n2
        .call("conversation.start", json!({ "agent": "coder" }))
        .await
        .expect("start")["conversation"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let idle = || async {
        let v = n2
            .call("conversation.get", json!({ "conversation": conv }))
            .await
            .ok()?;
        (v["conversation"]["status"] == "IDLE").then_some(())
    };
    wait_for("coder idle", Duration::from_secs(20), idle)
        .await
        .expect("idle");
    let advice = "[Advice from monitor \"mon\"]: look at the pointer";
    n2.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "crash 1" }),
    )
    .await
    .expect("send");
    wait_for("the first advice on n2", Duration::from_secs(30), || async {
        (count_events(n2, &conv, "monitor:mon", advice).await == 1).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n1:\n{}", n1.log()));

    // n2 cut off: the keyword fires there meanwhile; healed, the monitor
    // resumes from its cursor and advises once more, never twice.
    n2.partition().expect("cut n2 off");
    wait_for("n1 sees n2 unhealthy", Duration::from_secs(10), || async {
        (health(n1).await.get("n2") == Some(&false)).then_some(())
    })
    .await
    .expect("n2 unhealthy");
    wait_for("coder idle", Duration::from_secs(20), idle)
        .await
        .expect("idle");
    n2.call(
        "conversation.sendMessage",
        json!({ "conversation": conv, "text": "crash 2" }),
    )
    .await
    .expect("send while cut off");
    wait_for("segfault 2 on n2", Duration::from_secs(10), || async {
        (count_events(n2, &conv, "agent", "segfault number 2").await == 1).then_some(())
    })
    .await
    .expect("n2 answered");
    tokio::time::sleep(Duration::from_secs(2)).await;
    n2.heal().expect("heal");
    wait_for("the second advice on n2", Duration::from_secs(60), || async {
        (count_events(n2, &conv, "monitor:mon", advice).await == 2).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n--- n1:\n{}", n1.log()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        count_events(n2, &conv, "monitor:mon", advice).await,
        2,
        "no double advice"
    );
    let l = n1.call("monitor.list", json!({})).await.expect("list");
    let mine = l["attachments"]
        .as_array()
        .and_then(|v| v.iter().find(|x| x["id"] == attachment.as_str()).cloned())
        .expect("the attachment");
    let mconv = mine["monitor_conversations"][&conv]
        .as_str()
        .expect("monitor conversation");
    assert_eq!(
        count_events(n1, mconv, "system", "segfault").await,
        2,
        "one trigger message per segfault: no miss, no double"
    );
    // n1 holds exactly the attachment's delegation: the owner key's, for
    // coder only, with no expiry; detaching deletes it.
    let file = n1.dir.join("monitors").join(format!("{attachment}.token"));
    let token = std::fs::read_to_string(&file).expect("the delegation");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&file).expect("meta").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let seen = n2
        .call("token.inspect", json!({ "token": token.trim() }))
        .await
        .expect("inspect on n2");
    assert_eq!(seen["verified"], true, "n2 trusts it: {seen}");
    let blocks = seen["blocks"].to_string();
    assert!(blocks.contains("agent:coder") && !blocks.contains("time("), "{blocks}");
    n1.call("monitor.detach", json!({ "attachment": attachment }))
        .await
        .expect("detach");
    assert!(!file.exists(), "the delegation is gone with the attachment");
}
