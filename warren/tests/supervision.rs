//! Supervision settings on a real node: `[supervision]` in warren.toml is the
//! master switch and the defaults, per-agent overrides are stored as events and
//! merged field by field, the two-key lock shows in the effective policy, and
//! `supervision.set` is local-only.

#[path = "supervision/learned.rs"]
mod learned;
mod support;

use serde_json::{Value, json};
use support::supervised::supervised_node;
use support::*;

fn json_of(args: &[&str], node: &TestNode) -> Value {
    let mut full = args.to_vec();
    full.push("--json");
    let (code, out, err) = warren(&full, &node.path());
    assert_eq!(code, 0, "warren {args:?}: {err}{out}");
    serde_json::from_str(&out).expect("json")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overrides_merge_over_the_defaults_and_both_keys_must_be_on() {
    let mut node = TestNode::start_with_config(
        "[supervision]\nenabled = true\nstall_mins = 7\n[supervision.classes]\nnetwork_access = \"auto_deny\"\n",
    );
    let mut c = node.client().await;
    create_agent(&mut c, "sup").await;
    create_agent(&mut c, "free").await;

    let status = call(&mut c, "supervision.status", json!({})).await;
    assert_eq!(status["master"], true);
    assert!(
        status["agents"]
            .as_array()
            .expect("list")
            .iter()
            .all(|a| a["enabled"] == false),
        "no agent opted in yet"
    );

    let set = json_of(
        &[
            "supervision",
            "set",
            "sup",
            "--enable",
            "--class",
            "command_exec=hold",
            "--nudge-retries",
            "4",
        ],
        &node,
    );
    assert_eq!(set["effective"]["enabled"], true);
    let got = call(&mut c, "supervision.get", json!({ "agent": "sup" })).await;
    let eff = &got["effective"];
    assert_eq!(eff["classes"]["command_exec"], "hold", "the agent's class override");
    assert_eq!(
        eff["classes"]["file_write"], "auto_approve",
        "a class it did not mention keeps the default"
    );
    assert_eq!(eff["classes"]["network_access"], "auto_deny", "from warren.toml");
    assert_eq!(eff["stall_mins"], 7, "from warren.toml");
    assert_eq!(eff["nudge_retries"], 4);
    assert_eq!(got["defaults"]["enabled"], true);

    // A second set changes only what it names; `default` resets a class.
    json_of(&["supervision", "set", "sup", "--class", "command_exec=default"], &node);
    let got = call(&mut c, "supervision.get", json!({ "agent": "sup" })).await;
    assert_eq!(got["effective"]["classes"]["command_exec"], "auto_approve");
    assert_eq!(got["effective"]["nudge_retries"], 4, "kept from the earlier set");

    let status = call(&mut c, "supervision.status", json!({ "agent": "sup" })).await;
    assert_eq!(status["agents"][0]["enabled"], true);

    // Bad input names the field; over the network it is refused outright.
    let (code, _, err) = warren(&["supervision", "set", "sup", "--class", "teleport=hold"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("classes.teleport"), "{err}");
    let (code, _, err) = warren(
        &["supervision", "set", "sup", "--class", "deletion=maybe"],
        &node.path(),
    );
    assert_eq!(code, 1);
    assert!(err.contains("not auto_approve, auto_deny or hold"), "{err}");
    let e = call_err(&mut c, "supervision.set", json!({ "agent": "sup", "enabled": false })).await;
    assert_eq!(e.code, -32010);

    // Overrides are durable; with the master switch off nothing is supervised.
    node.kill9();
    std::fs::write(node.path().join("warren.toml"), "[supervision]\nenabled = false\n").expect("config");
    node.restart();
    let mut c = node.client().await;
    let got = call(&mut c, "supervision.get", json!({ "agent": "sup" })).await;
    assert_eq!(got["agent"]["enabled"], true, "the opt-in survived the crash");
    assert_eq!(got["effective"]["enabled"], false, "but the master switch is off");
    assert_eq!(got["effective"]["nudge_retries"], 4);
}

async fn audit_for(c: &mut warren::client::Client, subject: &str) -> Value {
    let subject = subject.to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let a = call(c, "supervision.audit", json!({ "agent": "sup" })).await;
        if let Some(e) = a["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["subject"] == subject.as_str())
        {
            return e.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no audit row for {subject:?}: {a:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routine_commands_are_approved_and_the_rest_held_for_a_human() {
    let (node, id) = supervised_node(true).await;
    let mut c = node.client().await;

    // Repo-scoped and routine: approved without a human, and it really runs.
    send(&mut c, &id, "/fake tool bash ls -a").await;
    let row = audit_for(&mut c, "ls -a").await;
    assert_eq!(
        (
            row["trigger"].as_str(),
            row["dialog_class"].as_str(),
            row["repo_scoped"].as_bool()
        ),
        (Some("dialog"), Some("command_exec"), Some(true))
    );
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "{row}"
    );
    assert_eq!(row["policy_source"], "class_policy");
    assert_eq!(row["keys"], json!(["1"]));
    wait_event(&mut c, &id, "agent", "Ran: ls -a (exit 0)").await;
    // The issue's own example: `cargo test` is routine (it fails here: no Cargo.toml).
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash cargo test").await;
    let row = audit_for(&mut c, "cargo test").await;
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "{row}"
    );
    assert_eq!(
        (row["dialog_class"].as_str(), row["repo_scoped"].as_bool()),
        (Some("command_exec"), Some(true))
    );
    wait_until("cargo test ran", std::time::Duration::from_secs(30), || {
        let target = node.target();
        let id = id.clone();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            transcript(&mut c, &id).await.into_iter().find(|e| {
                e["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Ran: cargo test (exit"))
            })
        }
    })
    .await;

    // Held: the veto, out of scope, a decision prompt.
    for (message, subject, source) in [
        (
            "/fake tool bash git push --force",
            "git push --force",
            "always_escalate",
        ),
        ("/fake tool bash cat /etc/passwd", "cat /etc/passwd", "not_repo_scoped"),
    ] {
        wait_idle_or_dialog_gone(&mut c, &id).await;
        send(&mut c, &id, message).await;
        let row = audit_for(&mut c, subject).await;
        assert_eq!(
            (row["decision"].as_str(), row["outcome"].as_str()),
            (Some("hold"), Some("held")),
            "{row}"
        );
        assert_eq!(row["policy_source"], source, "{row}");
        let holds = call(&mut c, "supervision.holds", json!({ "agent": "sup" })).await;
        let hold = holds["holds"]
            .as_array()
            .expect("holds")
            .iter()
            .find(|h| h["summary"] == subject)
            .cloned()
            .expect("listed");
        // A human denies it (single-shot), through verified send.
        let answered = call(
            &mut c,
            "supervision.answer",
            json!({ "hold": hold["id"], "decision": "deny" }),
        )
        .await;
        assert_eq!(answered["outcome"], "sent");
        wait_event(&mut c, &id, "agent", &format!("Permission denied: {subject}")).await;
    }

    // A human approves a held command and it runs.
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(
        &mut c,
        &id,
        "/fake tool bash touch /tmp/warren-supervision-approved-by-a-human",
    )
    .await;
    let subject = "touch /tmp/warren-supervision-approved-by-a-human";
    let row = audit_for(&mut c, subject).await;
    assert_eq!(row["decision"], "hold");
    let holds = call(&mut c, "supervision.holds", json!({})).await;
    let hold = holds["holds"]
        .as_array()
        .expect("holds")
        .iter()
        .find(|h| h["summary"] == subject)
        .cloned()
        .expect("listed");
    let (code, out, err) = warren(
        &["supervision", "answer", hold["id"].as_str().expect("id"), "approve"],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}{out}");
    wait_event(&mut c, &id, "agent", &format!("Ran: {subject} (exit 0)")).await;
    let _ = std::fs::remove_file("/tmp/warren-supervision-approved-by-a-human");
    let e = call_err(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold["id"], "decision": "approve" }),
    )
    .await;
    assert_eq!(e.code, -32004, "a hold is answered once");

    // A decision prompt always holds.
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(&mut c, &id, "/fake ask Which database? | PostgreSQL | SQLite").await;
    let row = audit_for(&mut c, "☐ Question").await;
    assert_eq!(
        (row["decision"].as_str(), row["policy_source"].as_str()),
        (Some("hold"), Some("decision_prompt")),
        "{row}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_master_switch_off_everything_holds() {
    let (node, id) = supervised_node(false).await;
    let mut c = node.client().await;
    send(&mut c, &id, "/fake tool bash ls").await;
    let row = audit_for(&mut c, "ls").await;
    assert_eq!(
        (row["decision"].as_str(), row["policy_source"].as_str()),
        (Some("hold"), Some("supervision_off")),
        "{row}"
    );
    let status = call(&mut c, "supervision.status", json!({ "agent": "sup" })).await;
    assert_eq!(status["master"], false);
    assert_eq!(status["agents"][0]["last"]["subject"], "ls", "the last audit row");
}

/// Waits until no dialog is showing (the previous one was answered).
async fn wait_idle_or_dialog_gone(c: &mut warren::client::Client, id: &str) {
    wait_idle(c, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_is_announced_and_a_hold_needs_you_once() {
    let (node, id) = supervised_node(true).await;
    let mut c = node.client().await;
    let mut events = node.client().await;
    call(&mut events, "events.subscribe", json!({})).await;
    let e = call_err(&mut events, "events.subscribe", json!({ "kinds": ["event.weather"] })).await;
    assert!(e.message.contains("unknown event kind"), "{}", e.message);

    send(&mut c, &id, "/fake tool bash git push --force").await;
    audit_for(&mut c, "git push --force").await;
    // The hold stays on screen a while: still exactly one needs-you.
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    let holds = call(&mut c, "supervision.holds", json!({})).await;
    let hold = holds["holds"][0]["id"].as_str().expect("held").to_string();
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash ls -a").await;
    audit_for(&mut c, "ls -a").await;

    let mut acted = vec![];
    let mut needs_you = 0;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while acted.len() < 3 && std::time::Instant::now() < deadline {
        let Some(n) = events
            .next_notification(std::time::Duration::from_secs(5))
            .await
            .expect("read")
        else {
            break;
        };
        match n.method.as_str() {
            "event.supervision.acted" => acted.push(n.params["event"].clone()),
            "event.supervision.needs_you" => {
                needs_you += 1;
                assert_eq!(n.params["event"]["hold"]["id"], hold.as_str());
            }
            other => panic!("unexpected {other}"),
        }
    }
    let kinds: Vec<(&str, &str)> = acted
        .iter()
        .map(|a| {
            (
                a["decision"].as_str().unwrap_or(""),
                a["outcome"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![("hold", "held"), ("deny", "sent"), ("approve", "sent")],
        "{acted:#?}"
    );
    assert_eq!(needs_you, 1, "exactly one needs-you for the held dialog");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_agent_is_nudged_twice_then_escalated_once() {
    let node = TestNode::start_with_config(
        "[supervision]\nenabled = true\nnudge_retries = 2\nstall_secs = 1\nnudge_interval_secs = 1\n",
    );
    let mut c = node.client().await;
    // An agent that ignores nudges (its rule swallows them).
    call(
        &mut c,
        "agent.create",
        json!({ "name": "sup", "harness": "fake",
                "rules": [{ "match": "Check your warren mail", "actions": [] }] }),
    )
    .await;
    json_of(
        &["supervision", "set", "sup", "--enable", "--expect-work", "true"],
        &node,
    );
    let mut events = node.client().await;
    call(
        &mut events,
        "events.subscribe",
        json!({ "kinds": ["event.supervision.needs_you"] }),
    )
    .await;
    let id = conversation_id(&mut c, "sup").await;

    let rows = wait_until("nudge, nudge, escalation", std::time::Duration::from_secs(30), || {
        let target = node.target();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let a = c.call("supervision.audit", json!({ "agent": "sup" })).await.ok()?;
            let rows = a["entries"].as_array()?.clone();
            rows.iter().any(|r| r["decision"] == "escalate").then_some(rows)
        }
    })
    .await;
    // Nothing more after the escalation (it is latched).
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let a = call(&mut c, "supervision.audit", json!({ "agent": "sup" })).await;
    let all: Vec<(String, String)> = a["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .rev()
        .map(|r| {
            (
                r["decision"].as_str().unwrap_or("").to_string(),
                r["outcome"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(
        all,
        vec![
            ("nudge".to_string(), "sent".to_string()),
            ("nudge".to_string(), "sent".to_string()),
            ("escalate".to_string(), "held".to_string())
        ],
        "{rows:#?}"
    );
    assert!(
        a["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .all(|r| r["trigger"] == "stall")
    );
    // The nudges reached the CLI, attributed to the platform.
    let events_seen: Vec<_> = transcript(&mut c, &id).await;
    let nudges = events_seen
        .iter()
        .filter(|e| e["speaker"] == "system" && e["text"] == "Check your warren mail and act on it.")
        .count();
    assert_eq!(nudges, 2);
    // Exactly one needs-you.
    let first = events
        .next_notification(std::time::Duration::from_secs(5))
        .await
        .expect("read");
    assert_eq!(first.expect("a needs-you").method, "event.supervision.needs_you");
    let second = events
        .next_notification(std::time::Duration::from_millis(500))
        .await
        .expect("read");
    assert!(second.is_none(), "only one needs-you: {second:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_nudge_is_typed_once_and_audited() {
    let (node, id) = supervised_node(false).await;
    let mut c = node.client().await;
    let (code, out, err) = warren(
        &["supervision", "nudge", "sup", "--text", "please check the failing test"],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("sent"), "{out}");
    wait_event(&mut c, &id, "system", "please check the failing test").await;
    wait_event(&mut c, &id, "agent", "echo: please check the failing test").await;
    let a = call(&mut c, "supervision.audit", json!({ "agent": "sup", "limit": 1 })).await;
    let row = &a["entries"][0];
    assert_eq!(
        (
            row["trigger"].as_str(),
            row["decision"].as_str(),
            row["outcome"].as_str()
        ),
        (Some("manual_nudge"), Some("nudge"), Some("sent"))
    );
    let e = call_err(&mut c, "supervision.nudge", json!({ "agent": "ghost" })).await;
    assert_eq!(e.code, -32004);
    let e = call_err(
        &mut c,
        "supervision.nudge",
        json!({ "agent": "sup", "text": "bad \u{1b}" }),
    )
    .await;
    assert_eq!(e.code, -32602);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mail_wakes_a_supervised_agent_once_per_batch() {
    let node = TestNode::start_with_config("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "boss", "harness": "fake", "grants": { "peers": "all" } }),
    )
    .await;
    // It can read its own inbox (the mail tool): mail wakes it with the nudge.
    call(
        &mut c,
        "agent.create",
        json!({ "name": "sup", "harness": "fake", "grants": { "tools": ["mail"] } }),
    )
    .await;
    json_of(&["supervision", "set", "sup", "--enable"], &node);
    let id = conversation_id(&mut c, "sup").await;

    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "boss", "to": "sup", "body": "please rebase" }),
    )
    .await;
    wait_event(&mut c, &id, "system", "Check your warren mail and act on it.").await;
    // One nudge for the batch, however long it stays unread.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let events = transcript(&mut c, &id).await;
    let nudges = events
        .iter()
        .filter(|e| e["speaker"] == "system" && e["text"] == "Check your warren mail and act on it.")
        .count();
    assert_eq!(nudges, 1, "one wake per batch of mail");
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "sup" })).await;
    let mail_rows: Vec<_> = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|r| r["trigger"] == "mail")
        .collect();
    assert_eq!(mail_rows.len(), 1, "{audit:#}");
    assert_eq!(
        (mail_rows[0]["decision"].as_str(), mail_rows[0]["outcome"].as_str()),
        (Some("nudge"), Some("sent"))
    );

    // full_body delivers the messages themselves.
    json_of(&["supervision", "set", "sup", "--mail-mode", "full_body"], &node);
    call(
        &mut c,
        "mailbox.send",
        json!({ "from": "boss", "to": "sup", "body": "and run the tests" }),
    )
    .await;
    let delivered = wait_until(
        "the mail body is typed into the CLI",
        std::time::Duration::from_secs(15),
        || {
            let target = node.target();
            let id = id.clone();
            async move {
                let mut c = warren::client::Client::connect(&target).await.ok()?;
                transcript(&mut c, &id).await.into_iter().find(|e| {
                    e["speaker"] == "system" && e["text"].as_str().is_some_and(|t| t.contains("and run the tests"))
                })
            }
        },
    )
    .await;
    let text = delivered["text"].as_str().expect("text");
    assert!(
        text.contains("[WARREN MAIL id=") && text.contains("from=boss]"),
        "{text}"
    );
}

/// Every audit row of agent `sup`, newest first, paging with `before`.
async fn all_audit_rows(c: &mut warren::client::Client) -> Vec<Value> {
    let mut rows: Vec<Value> = vec![];
    loop {
        let mut params = json!({ "agent": "sup", "limit": 200 });
        if let Some(last) = rows.last() {
            params["before_id"] = last["id"].clone();
        }
        let page = call(c, "supervision.audit", params).await["entries"]
            .as_array()
            .cloned()
            .expect("entries");
        if page.is_empty() {
            return rows;
        }
        rows.extend(page);
    }
}

/// 200 dialogs approved one after another, with the node killed (-9) in the
/// middle of one: afterwards every attempted action has exactly one audit row,
/// none twice, and every command that ran has its row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_of_200_dialogs_with_a_kill_keeps_one_audit_row_per_action() {
    const DIALOGS: usize = 200;
    const KILL_AT: usize = 100;
    let (mut node, id) = supervised_node(true).await;
    let mut c = node.client().await;
    for i in 0..DIALOGS {
        let subject = format!("echo soak-{i}");
        if i == KILL_AT {
            // Kill while the dialog is on screen, stabilising or being answered.
            send(&mut c, &id, &format!("/fake tool bash {subject}")).await;
            tokio::time::sleep(std::time::Duration::from_millis(260)).await;
            node.kill9();
            node.restart();
            c = node.client().await;
            call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
            wait_idle(&mut c, &id).await;
            continue;
        }
        send(&mut c, &id, &format!("/fake tool bash {subject}")).await;
        let row = audit_for(&mut c, &subject).await;
        assert_eq!(row["outcome"], "sent", "{row}");
        wait_idle(&mut c, &id).await;
    }

    let rows = all_audit_rows(&mut c).await;
    let mut ids: Vec<u64> = rows.iter().map(|r| r["id"].as_u64().expect("id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), rows.len(), "audit row ids are unique");
    let ran: Vec<String> = transcript(&mut c, &id)
        .await
        .iter()
        .filter_map(|e| e["text"].as_str()?.strip_prefix("Ran: ").map(str::to_string))
        .collect();
    for i in 0..DIALOGS {
        let subject = format!("echo soak-{i}");
        let mine: Vec<&Value> = rows.iter().filter(|r| r["subject"] == subject.as_str()).collect();
        let did_run = ran.iter().any(|r| r.starts_with(&format!("{subject} (exit")));
        if i == KILL_AT {
            assert!(mine.len() <= 1, "dialog {i}: {mine:#?}");
            if did_run {
                assert_eq!(mine.len(), 1, "the killed dialog ran but has no audit row");
                let outcome = mine[0]["outcome"].as_str();
                assert!(matches!(outcome, Some("sent" | "attempted")), "{:#}", mine[0]);
            }
            continue;
        }
        assert_eq!(mine.len(), 1, "dialog {i}: exactly one row: {mine:#?}");
        assert_eq!(mine[0]["outcome"], "sent", "{:#}", mine[0]);
        assert!(did_run, "dialog {i} was approved, so it ran");
    }
    assert!(
        rows.iter()
            .all(|r| r["subject"].as_str().is_some_and(|s| s.starts_with("echo soak-"))),
        "no stray rows"
    );
}
