//! Monitor agents on a real node with fake CLIs (rules files): a keyword in
//! the target's attributed transcript wakes the monitor with a structured
//! trigger message, its rule runs `warren-advise`, and the advice lands in the
//! target as speaker `monitor:NAME` with the platform's prefix; a watch-only
//! monitor has no `warren-advise` and its token cannot inject; a ping-pong
//! trips the breaker after exactly `max_cycles` cycles, pauses both sides,
//! survives `kill -9`, and only a re-arm resets it; bad attachments are
//! refused naming the problem.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::*;

const RUNTIME: &str = "local";

include!("cases/monitors.rs");

/// How many times the target holds this advice, as speaker `monitor:mon`.
async fn advice_count(c: &mut warren::client::Client, target: &str, advice: &str) -> usize {
    transcript(c, target)
        .await
        .iter()
        .filter(|e| e["speaker"] == "monitor:mon" && e["text"] == advice)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_attachments_are_refused_naming_the_problem_and_nothing_is_stored() {
    let node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "coder").await;
    create_agent(&mut c, "mon").await;
    let many: Vec<Value> = (0..10_001).map(|i| json!({ "text": format!("k{i}") })).collect();
    let cases = [
        (json!({ "keywords": [] }), None, "keywords"),
        (json!({ "keywords": [{ "text": "" }] }), None, "keywords[0]"),
        (
            json!({ "keywords": [{ "text": "x".repeat(10_000) }] }),
            None,
            "keywords[0]",
        ),
        (json!({ "keywords": many }), None, "keywords"),
        (
            json!({ "keywords": [{ "text": "a" }], "speakers": ["robot"] }),
            None,
            "speakers",
        ),
        (json!({ "keywords": [{ "text": "a" }] }), Some("ghost"), "ghost"),
        (json!({ "keywords": [{ "text": "a" }] }), Some("mon"), "itself"),
    ];
    for (trigger, target, needle) in cases {
        let e = call_err(
            &mut c,
            "monitor.attach",
            json!({ "monitor": "mon", "target": { "agent": target.unwrap_or("coder") }, "trigger": trigger }),
        )
        .await;
        assert!(
            e.code == -32602 || e.code == -32004,
            "{needle}: {} {}",
            e.code,
            e.message
        );
        assert!(e.message.contains(needle), "{needle}: {}", e.message);
    }
    let e = call_err(
        &mut c,
        "monitor.attach",
        json!({ "monitor": "nobody", "target": { "agent": "coder" }, "trigger": { "keywords": [{ "text": "a" }] } }),
    )
    .await;
    assert_eq!(e.code, -32004, "{}", e.message);
    let l = call(&mut c, "monitor.list", json!({})).await;
    assert_eq!(l["attachments"], json!([]), "nothing was stored");
    let e = call_err(&mut c, "monitor.detach", json!({ "attachment": "ma-nope" })).await;
    assert_eq!(e.code, -32004);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_cli_command_creates_the_monitor_and_attaches_it() {
    let node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "coder").await;
    let dir = node.path();
    let (code, out, err) = warren(
        &[
            "monitor",
            "attach",
            "--target",
            "coder",
            "--keywords",
            "segfault,panic",
            "--word",
            "--harness",
            "fake",
            "--max-cycles",
            "2",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("created monitor agent monitor-coder"), "{err}");
    assert!(out.contains("monitor-coder -> coder") && out.contains("armed"), "{out}");
    let agent = call(&mut c, "agent.get", json!({ "agent": "monitor-coder" })).await;
    assert!(
        agent["agent"]["persona"]
            .as_str()
            .is_some_and(|p| p.contains("monitor")),
        "the advisor persona: {agent}"
    );
    let l = call(&mut c, "monitor.list", json!({ "monitor": "monitor-coder" })).await;
    let a = &l["attachments"][0];
    assert_eq!(a["trigger"]["keywords"][1]["text"], "panic");
    assert_eq!(a["trigger"]["keywords"][0]["mode"], "word");
    assert_eq!(a["breaker"]["max_cycles"], 2);
    // A second attach reuses the monitor; a watch-only one says so.
    let (code, out, err) = warren(
        &[
            "monitor",
            "attach",
            "--target",
            "coder",
            "--keywords",
            "oom",
            "--watch-only",
            "--harness",
            "fake",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(!err.contains("created"), "{err}");
    assert!(out.contains("watch-only"), "{out}");
    let id = a["id"].as_str().expect("id");
    let (code, out, _) = warren(&["monitor", "detach", id], &dir);
    assert_eq!(code, 0);
    assert!(out.contains("detached"), "{out}");
    let (code, out, _) = warren(&["monitor", "list"], &dir);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archiving_the_target_conversation_archives_its_monitor_conversation() {
    let node = TestNode::start();
    let mut c = node.client().await;
    coder_and_monitor(
        &mut c,
        json!([
            { "match": "^crash", "actions": [{ "say": "segfault" }] }
        ]),
        None,
    )
    .await;
    let a = attach(
        &mut c,
        json!({ "monitor": "mon", "target": { "agent": "coder" }, "inject": false,
                "trigger": { "keywords": [{ "text": "segfault" }] } }),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_string();
    let target = conversation_id(&mut c, "coder").await;
    send(&mut c, &target, "crash").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let mconv = loop {
        let l = call(&mut c, "monitor.list", json!({})).await;
        let mine = l["attachments"]
            .as_array()
            .and_then(|v| v.iter().find(|a| a["id"] == id.as_str()));
        if let Some(m) = mine.and_then(|a| a["monitor_conversations"][&target].as_str()) {
            break m.to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the monitor never woke: {l}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    call(&mut c, "conversation.terminate", json!({ "conversation": target })).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let v = call(&mut c, "conversation.get", json!({ "conversation": mconv })).await;
        if v["conversation"]["state"] == "archived" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the monitor conversation stayed: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_message_resets_the_cycle_count() {
    let node = TestNode::start();
    let mut c = node.client().await;
    coder_and_monitor(
        &mut c,
        json!([
            { "match": "^crash", "actions": [{ "say": "segfault" }] },
            { "match": "Advice from monitor", "actions": [{ "say": "noted" }] }
        ]),
        Some(advising_rules("check it")),
    )
    .await;
    let a = attach(
        &mut c,
        json!({ "monitor": "mon", "target": { "agent": "coder" },
                "trigger": { "keywords": [{ "text": "segfault" }] }, "breaker": { "max_cycles": 2 } }),
    )
    .await;
    let id = a["id"].as_str().expect("id").to_string();
    let target = conversation_id(&mut c, "coder").await;
    let advice = "[Advice from monitor \"mon\"]: check it";
    for round in 1..=3 {
        wait_idle(&mut c, &target).await;
        // Each "crash" is a human's message: the count starts over.
        send(&mut c, &target, "crash").await;
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let n = advice_count(&mut c, &target, advice).await;
            if n == round {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: {n} pieces of advice"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        wait_event(&mut c, &target, "agent", "noted").await;
    }
    let l = call(&mut c, "monitor.list", json!({})).await;
    let a = &l["attachments"][0];
    assert_eq!(a["id"], id.as_str());
    assert_eq!(a["state"], "armed", "three cycles, each after a human message: {a}");
    assert_eq!(a["cycles"], 1, "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attaching_to_a_target_the_caller_may_not_observe_is_forbidden() {
    let node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "coder").await;
    create_agent(&mut c, "other").await;
    create_agent(&mut c, "mon").await;
    // supervise on the node, observe on `other` only (minted on the socket).
    let (code, out, err) = warren(
        &[
            "token",
            "mint",
            "--right",
            "node:supervise",
            "--right",
            "agent:other:observe",
            "--ttl",
            "600",
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let target = warren::client::Target {
        url: node.target().url,
        token: Some(out.lines().next().expect("token").trim().to_string()),
    };
    let mut narrow = warren::client::Client::connect(&target).await.expect("connect");
    let spec = |agent: &str| json!({ "monitor": "mon", "target": { "agent": agent }, "trigger": { "keywords": [{ "text": "x" }] } });
    let e = call_err(&mut narrow, "monitor.attach", spec("coder")).await;
    assert_eq!(e.code, -32003, "{}", e.message);
    assert!(e.message.contains("agent:coder"), "{}", e.message);
    call(&mut narrow, "monitor.attach", spec("other")).await;
    let l = call(&mut c, "monitor.list", json!({})).await;
    assert_eq!(l["attachments"].as_array().map(Vec::len), Some(1));
}
