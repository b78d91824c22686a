//! Learned approvals and what nothing routine may reach: a human's approval
//! learned for a workspace, a standing-permission-only dialog, the home, git's
//! directory and changed build definitions.

use serde_json::{Value, json};

use super::support::supervised::{hold_of, wait_runs};
use super::support::*;
use super::{audit_for, json_of, supervised_node, wait_idle_or_dialog_gone};

/// The newest audit row of `sup` for `subject` with an id above `after` that
/// satisfies `want`, waiting for it.
async fn audit_row_after(c: &mut warren::client::Client, subject: &str, after: u64, want: fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let a = call(c, "supervision.audit", json!({ "agent": "sup" })).await;
        if let Some(e) = a["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["subject"] == subject && e["id"].as_u64().is_some_and(|id| id > after) && want(e))
        {
            return e.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no new audit row for {subject:?} after {after}: {a:#}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Learned approval rules (seed 000): a human approves a held command once
/// with `--learn`; from then on the same command in that workspace is
/// approved as `learned_rule`. Rules never lift an out-of-scope command or the
/// always-escalate veto, are durable, can be forgotten, and learning them is
/// local-only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_learned_from_a_human_lifts_the_same_command_later() {
    let mut node = TestNode::start_with_config("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    create_agent(&mut c, "sup").await;
    json_of(
        &["supervision", "set", "sup", "--enable", "--class", "command_exec=hold"],
        &node,
    );
    let id = conversation_id(&mut c, "sup").await;
    let held = |e: &Value| e["outcome"] == "held";

    // Held by the class policy; a human approves it and learns it.
    send(&mut c, &id, "/fake tool bash cargo build").await;
    let row = audit_row_after(&mut c, "cargo build", 0, held).await;
    assert_eq!(
        (row["decision"].as_str(), row["policy_source"].as_str()),
        (Some("hold"), Some("class_policy")),
        "{row}"
    );
    let hold = hold_of(&mut c, "cargo build").await.expect("held");
    let answered = json_of(&["supervision", "answer", &hold, "approve", "--learn"], &node);
    assert_eq!(answered["outcome"], "sent", "{answered}");
    assert_eq!(answered["learned"]["pattern"], "cargo build", "{answered}");
    assert_eq!(answered["learned"]["learned"], true);
    wait_runs(&node, &id, "cargo build", 1).await;

    // The same command again: approved by the learned rule, and it runs.
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash cargo build").await;
    let row = audit_row_after(&mut c, "cargo build", row["id"].as_u64().expect("id"), |e| {
        e["trigger"] == "dialog"
    })
    .await;
    assert_eq!(
        (
            row["decision"].as_str(),
            row["policy_source"].as_str(),
            row["outcome"].as_str()
        ),
        (Some("approve"), Some("learned_rule"), Some("sent")),
        "{row}"
    );
    wait_runs(&node, &id, "cargo build", 2).await;

    // Rules never lift an out-of-scope command (it keeps its class's hold) or the veto.
    for (pattern, message, subject, source, scoped) in [
        (
            "cat *",
            "/fake tool bash cat /etc/passwd",
            "cat /etc/passwd",
            "class_policy",
            false,
        ),
        (
            "git push *",
            "/fake tool bash git push --force",
            "git push --force",
            "always_escalate",
            false,
        ),
    ] {
        let learned = json_of(&["supervision", "learn", "sup", pattern], &node);
        assert_eq!(
            (learned["pattern"].as_str(), learned["learned"].as_bool()),
            (Some(pattern), Some(true)),
            "{learned}"
        );
        wait_idle(&mut c, &id).await;
        send(&mut c, &id, message).await;
        let row = audit_row_after(&mut c, subject, 0, held).await;
        assert_eq!(
            (
                row["decision"].as_str(),
                row["policy_source"].as_str(),
                row["repo_scoped"].as_bool()
            ),
            (Some("hold"), Some(source), Some(scoped)),
            "{row}"
        );
        let hold = hold_of(&mut c, subject).await.expect("held");
        call(
            &mut c,
            "supervision.answer",
            json!({ "hold": hold, "decision": "deny" }),
        )
        .await;
        wait_event(&mut c, &id, "agent", &format!("Permission denied: {subject}")).await;
    }
    // Learning a known rule again changes nothing.
    json_of(&["supervision", "learn", "sup", "cargo  build"], &node);

    let want = json!(["cargo build", "cat *", "git push *"]);
    let rules = call(&mut c, "supervision.rules", json!({ "agent": "sup" })).await;
    assert_eq!(rules["rules"], want, "{rules}");
    assert!(
        rules["workspace"]
            .as_str()
            .is_some_and(|w| w.ends_with("/agents/sup/workspace")),
        "{rules}"
    );
    let (code, out, err) = warren(&["supervision", "rules", "sup"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("3 learned rule(s)") && out.contains("\ngit push *\n"),
        "{out}"
    );

    // Durable: a kill -9 keeps them.
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let rules = call(&mut c, "supervision.rules", json!({ "agent": "sup" })).await;
    assert_eq!(rules["rules"], want, "after kill -9: {rules}");
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;

    // Forgotten, the command holds again.
    let forgot = json_of(&["supervision", "forget", "sup", "cargo build"], &node);
    assert_eq!(forgot["learned"], false, "{forgot}");
    let (code, _, err) = warren(&["supervision", "forget", "sup", "cargo build"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("-32004"), "forgetting twice: {err}");
    let before = call(&mut c, "supervision.audit", json!({ "agent": "sup", "limit": 1 })).await["entries"][0]["id"]
        .as_u64()
        .expect("id");
    send(&mut c, &id, "/fake tool bash cargo build").await;
    let row = audit_row_after(&mut c, "cargo build", before, held).await;
    assert_eq!(row["policy_source"], "class_policy", "{row}");

    // Over the WebSocket, learning is refused whatever the token; the hold
    // stays unanswered.
    let hold = hold_of(&mut c, "cargo build").await.expect("held");
    for (method, params) in [
        ("supervision.learn", json!({ "agent": "sup", "pattern": "cargo build" })),
        ("supervision.forget", json!({ "agent": "sup", "pattern": "cat *" })),
        (
            "supervision.answer",
            json!({ "hold": hold, "decision": "approve", "learn": true }),
        ),
    ] {
        let e = call_err(&mut c, method, params).await;
        assert_eq!(e.code, -32010, "{method}: {}", e.message);
    }
    assert_eq!(hold_of(&mut c, "cargo build").await, Some(hold.clone()), "not answered");
    let rules = call(&mut c, "supervision.rules", json!({ "agent": "sup" })).await;
    assert_eq!(rules["rules"], json!(["cat *", "git push *"]));
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    wait_idle(&mut c, &id).await;

    // A compound command cannot be learned: refused before anything is sent.
    send(&mut c, &id, "/fake tool bash cargo build && cargo test").await;
    audit_row_after(&mut c, "cargo build && cargo test", 0, held).await;
    let hold = hold_of(&mut c, "cargo build && cargo test").await.expect("held");
    let (code, _, err) = warren(&["supervision", "answer", &hold, "approve", "--learn"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("-32602") && err.contains("learn:"), "{err}");
    assert_eq!(
        hold_of(&mut c, "cargo build && cargo test").await,
        Some(hold),
        "still held"
    );

    // A bad pattern names `pattern`.
    let (code, _, err) = warren(&["supervision", "learn", "sup", "cargo build && rm x"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("-32602") && err.contains("pattern"), "{err}");
}

/// Seed 000: supervision never picks a standing permission, so a dialog whose
/// only "yes" is one ("don't ask again") holds, and a human's single-shot
/// approve has nothing to choose either; a deny still goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dialog_whose_only_yes_is_a_standing_permission_holds() {
    let (node, id) = supervised_node(true).await;
    let mut c = node.client().await;
    send(&mut c, &id, "/fake tool bash-always cargo test").await;
    let row = audit_for(&mut c, "cargo test").await;
    assert_eq!(
        (
            row["decision"].as_str(),
            row["outcome"].as_str(),
            row["policy_source"].as_str(),
            row["dialog_class"].as_str(),
            row["repo_scoped"].as_bool()
        ),
        (
            Some("hold"),
            Some("held"),
            Some("ambiguous_option"),
            Some("command_exec"),
            Some(true)
        ),
        "{row}"
    );
    assert_eq!(row["keys"], json!([]), "nothing typed");
    let hold = hold_of(&mut c, "cargo test").await.expect("held");
    let e = call_err(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "approve" }),
    )
    .await;
    assert_eq!(e.code, -32009, "{}", e.message);
    assert!(
        e.message.contains("no verified approve once answer") && e.message.contains("nothing was typed"),
        "{}",
        e.message
    );
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    wait_event(&mut c, &id, "agent", "Permission denied: cargo test").await;
}

/// The newest audit row about `subject` after row `after`, whatever it says.
async fn row_after(c: &mut warren::client::Client, subject: &str, after: u64) -> Value {
    audit_row_after(c, subject, after, |_| true).await
}

/// Nothing routine may grant standing authority or plant code: `~` and the
/// agent's home are never in scope, git's directory and a CLI's settings are
/// never written routinely, and once a routine edit changed the Makefile,
/// `make` holds for a human (whose approve accepts the change: the next
/// `make` is routine again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_routine_reaches_the_home_or_plants_code() {
    let (node, id) = supervised_node(true).await;
    let mut c = node.client().await;
    let mut last = 0;
    for (message, subject) in [
        ("/fake tool bash cat ~/notes.md", "cat ~/notes.md"),
        ("/fake edit .git/hooks/pre-commit", ".git/hooks/pre-commit"),
        ("/fake edit .claude/settings.json", ".claude/settings.json"),
        ("/fake edit .warren/instance.token", ".warren/instance.token"),
    ] {
        wait_idle_or_dialog_gone(&mut c, &id).await;
        send(&mut c, &id, message).await;
        let row = row_after(&mut c, subject, last).await;
        last = row["id"].as_u64().expect("id");
        assert_eq!(
            (row["decision"].as_str(), row["outcome"].as_str()),
            (Some("hold"), Some("held")),
            "{message}: {row}"
        );
        let hold = hold_of(&mut c, subject).await.expect("a hold");
        call(
            &mut c,
            "supervision.answer",
            json!({ "hold": hold, "decision": "deny" }),
        )
        .await;
    }

    // Repository code: routine until the agent changes what it runs.
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash make").await;
    let row = row_after(&mut c, "make", last).await;
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "{row}"
    );
    wait_runs(&node, &id, "make", 1).await;
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(&mut c, &id, "/fake edit Makefile").await;
    let row = row_after(&mut c, "Makefile", row["id"].as_u64().expect("id")).await;
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "{row}"
    );
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash make").await;
    let row = row_after(&mut c, "make", row["id"].as_u64().expect("id")).await;
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("hold"), Some("held")),
        "{row}"
    );
    assert!(
        row["reason"].as_str().is_some_and(|r| r.contains("Makefile")),
        "names the change: {row}"
    );
    let hold = hold_of(&mut c, "make").await.expect("a hold");
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "approve" }),
    )
    .await;
    wait_runs(&node, &id, "make", 2).await;
    wait_idle_or_dialog_gone(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash make").await;
    let row = row_after(&mut c, "make", row["id"].as_u64().expect("id")).await;
    let row = if row["trigger"] == "answer" {
        row_after(&mut c, "make", row["id"].as_u64().expect("id")).await
    } else {
        row
    };
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "accepted by the human: {row}"
    );
    wait_runs(&node, &id, "make", 3).await;
}

/// Seed 000, "Supervision-off equals today's behavior": with the master
/// switch off, a confirmed learned rule still approves the routine command it
/// covers, through verified send, audited as `legacy_rule`; a command no rule
/// covers, or one out of scope, still waits for a human.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_supervision_off_the_learned_rule_path_still_answers() {
    let (node, id) = supervised_node(false).await;
    let mut c = node.client().await;
    json_of(&["supervision", "learn", "sup", "cargo build"], &node);
    json_of(&["supervision", "learn", "sup", "cat *"], &node);

    send(&mut c, &id, "/fake tool bash cargo build").await;
    let row = audit_row_after(&mut c, "cargo build", 0, |e| e["outcome"] != "attempted").await;
    assert_eq!(
        (
            row["trigger"].as_str(),
            row["decision"].as_str(),
            row["policy_source"].as_str(),
            row["outcome"].as_str()
        ),
        (Some("legacy_rule"), Some("approve"), Some("learned_rule"), Some("sent")),
        "{row}"
    );
    wait_runs(&node, &id, "cargo build", 1).await;
    assert!(hold_of(&mut c, "cargo build").await.is_none(), "answered, not held");

    for (message, subject) in [
        ("/fake tool bash cargo test", "cargo test"),
        ("/fake tool bash cat /etc/passwd", "cat /etc/passwd"),
    ] {
        wait_idle_or_dialog_gone(&mut c, &id).await;
        send(&mut c, &id, message).await;
        let row = audit_row_after(&mut c, subject, 0, |e| e["outcome"] == "held").await;
        assert_eq!(
            (row["trigger"].as_str(), row["policy_source"].as_str()),
            (Some("dialog"), Some("supervision_off")),
            "{row}"
        );
        let hold = hold_of(&mut c, subject).await.expect("held for a human");
        json_of(&["supervision", "answer", &hold, "deny"], &node);
    }
}
