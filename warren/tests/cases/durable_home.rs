// The durable-home suite, included by one test binary per runtime
// (durable_home.rs: local PTYs; docker_durable_home.rs: Docker guests).

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};
use support::*;

fn seqs(events: &[Value]) -> Vec<u64> {
    events.iter().map(|e| e["seq"].as_u64().expect("seq")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_conversation_and_transcript_survive_kill_9() {
    let mut node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    create_agent(&mut c, "coder").await;
    let conv = start_idle(&mut c, "coder").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let resume_ref = conv["resume_ref"].as_str().expect("resume_ref").to_string();
    assert_eq!(conv["state"], "active");

    // One live conversation per agent: a second start returns the live one.
    let again = call(&mut c, "conversation.start", json!({ "agent": "coder" })).await;
    assert_eq!(again["conversation"]["id"], id.as_str());

    let sent = send(&mut c, &id, "hello home").await;
    assert!(sent["message_id"].as_str().is_some());
    let human = wait_event(&mut c, &id, "human", "hello home").await;
    assert_eq!(human["kind"], "message");
    let reply = wait_event(&mut c, &id, "agent", "echo: hello home").await;
    assert!(
        reply["seq"].as_u64() > human["seq"].as_u64(),
        "the reply comes after the message"
    );

    // A message that is still being answered when the node dies.
    send(&mut c, &id, "/fake busy 30").await;
    let before = transcript(&mut c, &id).await;
    node.kill9();
    // A line the CLI wrote to its own session file that the node never read
    // (here: written while the node is down) is recorded once on resume.
    let session_file = node
        .path()
        .join(format!("agents/coder/home/.fake-cli/sessions/{resume_ref}.jsonl"));
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&session_file)
        .expect("session file");
    use std::io::Write;
    writeln!(
        f,
        r#"{{"ts_ms":1,"type":"assistant","text":"written while the node was down"}}"#
    )
    .expect("append");
    drop(f);

    node.restart();
    let mut c = node.client().await;
    let agent = call(&mut c, "agent.get", json!({ "agent": "coder" })).await;
    assert_eq!(agent["agent"]["harness"], "fake");
    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await["conversation"].clone();
    assert_eq!(
        got["state"], "paused",
        "a conversation live at the crash comes back paused: {got}"
    );
    assert_eq!(
        got["resume_ref"],
        resume_ref.as_str(),
        "the pause keeps the resume reference"
    );
    assert!(got["pause_reason"].as_str().expect("reason").contains("node restarted"));
    let after_restart = transcript(&mut c, &id).await;
    assert_eq!(
        &after_restart[..before.len()],
        &before[..],
        "every stored transcript line is as it was"
    );

    // Sending to a paused conversation is a conflict, not a crash.
    let err = call_err(
        &mut c,
        "conversation.sendMessage",
        json!({ "conversation": id, "text": "x" }),
    )
    .await;
    assert_eq!(err.code, -32009);

    let resumed = call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    assert_eq!(resumed["conversation"]["state"], "active");
    assert_eq!(resumed["conversation"]["launches"], 2);
    wait_idle(&mut c, &id).await;
    wait_event(&mut c, &id, "system", &format!("resumed: fake --resume {resume_ref}")).await;
    // The fake CLI itself reports that it resumed its own session file.
    wait_event(&mut c, &id, "system", "resumed").await;
    let screen = call(&mut c, "conversation.screen", json!({ "conversation": id })).await;
    let text = screen["lines"]
        .as_array()
        .expect("lines")
        .iter()
        .map(|l| l.as_str().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("echo: hello home"),
        "the resumed CLI shows its history:\n{text}"
    );

    send(&mut c, &id, "after the crash").await;
    wait_event(&mut c, &id, "agent", "echo: after the crash").await;
    wait_event(&mut c, &id, "agent", "written while the node was down").await;
    let all = transcript(&mut c, &id).await;
    let expected: Vec<u64> = (1..=all.len() as u64).collect();
    assert_eq!(seqs(&all), expected, "transcript seqs run 1..n with no gap");
    for text in ["echo: hello home", "written while the node was down", "hello home"] {
        assert_eq!(
            all.iter().filter(|e| e["text"] == text).count(),
            1,
            "{text:?} recorded exactly once"
        );
    }

    // Still one live conversation per agent; continue of another paused one is refused.
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let second = start_idle(&mut c, "coder").await;
    assert_ne!(
        second["id"],
        id.as_str(),
        "a paused conversation is not live: start makes a new one"
    );
    let err = call_err(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    assert_eq!(err.code, -32009);
    assert!(
        err.message.contains("already has a live conversation"),
        "{}",
        err.message
    );
    let live = call(
        &mut c,
        "conversation.list",
        json!({ "agent": "coder", "state": "active" }),
    )
    .await;
    assert_eq!(live["conversations"].as_array().expect("list").len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_the_log_reproduces_the_live_projections() {
    let mut node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    for name in ["alpha", "beta", "gamma"] {
        create_agent(&mut c, name).await;
    }
    call(
        &mut c,
        "agent.update",
        json!({ "agent": "beta", "persona": "careful", "model": "m-1" }),
    )
    .await;
    call(&mut c, "agent.archive", json!({ "agent": "gamma" })).await;
    let a = conversation_id(&mut c, "alpha").await;
    let b = conversation_id(&mut c, "beta").await;
    for i in 0..5 {
        call(
            &mut c,
            "conversation.sendMessage",
            json!({ "conversation": a, "text": format!("a{i}\nsecond line") }),
        )
        .await;
        call(
            &mut c,
            "conversation.sendMessage",
            json!({ "conversation": b, "text": format!("b{i}") }),
        )
        .await;
    }
    wait_event(&mut c, &b, "agent", "echo: b4").await;
    call(&mut c, "conversation.pause", json!({ "conversation": a })).await;
    call(&mut c, "conversation.terminate", json!({ "conversation": b })).await;

    let agents = call(&mut c, "agent.list", json!({})).await["agents"].clone();
    let convs = call(&mut c, "conversation.list", json!({})).await["conversations"].clone();
    let mut live_transcripts = BTreeMap::new();
    for id in [&a, &b] {
        live_transcripts.insert(id.clone(), transcript(&mut c, id).await);
    }
    node.kill9();

    let (code, out, err) = warren(&["admin", "rebuild", "--json"], &node.path());
    assert_eq!(code, 0, "rebuild failed: {err}");
    let report: Value = serde_json::from_str(&out).expect("rebuild --json");
    assert_eq!(
        report["catalog"]["agents"], agents,
        "replayed agents equal the live ones"
    );
    let strip = |v: &Value| {
        let mut v = v.clone();
        for c in v.as_array_mut().expect("list") {
            c.as_object_mut().expect("obj").remove("status");
        }
        v
    };
    assert_eq!(
        strip(&report["catalog"]["conversations"]),
        strip(&convs),
        "replayed catalog equals the live one"
    );

    // The rebuilt transcript table serves exactly what the live one served.
    node.restart();
    let mut c = node.client().await;
    for (id, events) in &live_transcripts {
        let now = transcript(&mut c, id).await;
        assert_eq!(&now[..events.len()], &events[..], "transcript of {id} after rebuild");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cli_that_exits_leaves_a_paused_resumable_conversation() {
    let node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "quitter").await;
    send(&mut c, &id, "remember me").await;
    wait_event(&mut c, &id, "agent", "echo: remember me").await;
    send(&mut c, &id, "/fake exit").await;
    let paused = wait_until("the exit is recorded as a pause", Duration::from_secs(15), || {
        let target = node.target();
        let id = id.clone();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let v = c.call("conversation.get", json!({ "conversation": id })).await.ok()?;
            (v["conversation"]["state"] == "paused").then_some(v)
        }
    })
    .await;
    // How it left: the exit code and its last words (the resume hint).
    let reason = paused["conversation"]["pause_reason"].as_str().expect("pause_reason");
    assert!(reason.starts_with("the CLI exited (exit code 0): "), "{paused}");
    assert!(reason.contains("Resume this session with:"), "{paused}");
    assert_eq!(paused["conversation"]["exit_code"], 0, "{paused}");
    wait_event(&mut c, &id, "system", &format!("paused: {reason}")).await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "back").await;
    wait_event(&mut c, &id, "agent", "echo: back").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_pauses_live_conversations_and_records_why() {
    let mut node = TestNode::start_on(RUNTIME, "");
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "polite").await;
    let mut p = node.proc.take().expect("running");
    // SAFETY: sending SIGTERM to our own child.
    unsafe { libc::kill(p.child.id() as i32, libc::SIGTERM) };
    let status = p.child.wait().expect("the node exits on SIGTERM");
    assert!(status.success(), "clean exit: {status:?}");
    std::mem::forget(p);
    node.restart();
    let mut c = node.client().await;
    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    assert_eq!(got["conversation"]["state"], "paused");
    assert_eq!(got["conversation"]["pause_reason"], "node stopped");
    wait_event(&mut c, &id, "system", "paused: node stopped").await;
}
