//! Unattended tasks (seed 001) with a real node (local runtime), real git
//! repositories and the fake CLI running real shell commands in its
//! worktree: a failed acceptance repaired once and completed with a commit
//! on the task branch (the base untouched), a task that cannot pass parked
//! with its branch, `kill -9` during verification ending in exactly one
//! completion, the bad input refused with nothing stored, a decider answering
//! held dialogs inside its bounds, and the CLI.

mod support;
mod workspace;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::{TestNode, call, call_err, wait_until, warren};
use warren::client::Client;
use workspace::{git, make_repo, workspace_of};

include!("cases/tasks.rs");

/// A local node with `config` and a repository `proj` in a temp dir.
fn rig(config: &str) -> (tempfile::TempDir, std::path::PathBuf, String, TestNode) {
    let node = TestNode::start_with_config(config);
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    let base = make_repo(&repo, &[("README", "proj\n")]);
    (tmp, repo, base, node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_acceptance_is_repaired_once_and_completes_with_a_commit_on_its_branch() {
    let (_tmp, repo, base, node) = rig("");
    let mut c = node.client().await;
    worker(&mut c, "w", &repo, "echo wrong > answer.txt", "echo right > answer.txt").await;

    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK write the right answer", "acceptance": ["grep -qx right answer.txt"] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();
    assert_eq!(t["agent"], "w");
    assert_eq!(t["baseline"], base);
    assert_eq!(t["branch"], format!("warren/w/{conv}"));

    let done = wait_state(&node, &id, "completed", Duration::from_secs(90)).await;
    assert_eq!(done["repairs"], 1, "one repair round: {done:#}");
    let checks = done["checks"].as_array().expect("checks");
    assert_eq!(checks.last().expect("a check")["exit_code"], 0, "{done:#}");
    let head = done["head"].as_str().expect("head").to_string();
    let branch = done["branch"].as_str().expect("branch");
    assert_eq!(
        git(&repo, &["rev-parse", branch]),
        head,
        "the recorded head is the branch's"
    );
    assert_eq!(
        git(&repo, &["show", &format!("{head}:answer.txt")]),
        "right",
        "the verified work is committed"
    );
    let msg = git(&repo, &["log", "-1", "--format=%s%n%an", &head]);
    assert!(
        msg.starts_with(&format!("task {id}: TASK write the right answer")),
        "{msg}"
    );
    assert!(msg.ends_with("\nw"), "committed as the agent: {msg}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), base, "the base branch is untouched");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the main checkout is clean");

    // The worker was told what failed, in the words the API promises.
    let lines = support::transcript(&mut c, &conv).await;
    let repair = lines
        .iter()
        .filter_map(|e| e["text"].as_str())
        .find(|t| t.starts_with("Acceptance failed:"))
        .expect("a repair message in the transcript");
    assert!(
        repair.contains("grep -qx right answer.txt") && repair.contains("exit"),
        "{repair}"
    );

    // Exactly one completion in the log; the list finds it by state.
    let kinds = task_events(&node.db(), Some(&id)).await;
    assert_eq!(kinds.iter().filter(|k| *k == "completed").count(), 1, "{kinds:?}");
    let listed = call(&mut c, "task.list", json!({ "state": "completed" })).await;
    assert_eq!(listed["tasks"].as_array().map(Vec::len), Some(1), "{listed}");
    let none = call(&mut c, "task.list", json!({ "agent": "nobody" })).await;
    assert_eq!(none["tasks"], json!([]));

    // The CLI reads it.
    let (code, out, err) = warren(&["task", "get", &id], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("completed") && out.contains("exit 0"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_task_input_is_refused_naming_the_field_and_nothing_is_stored() {
    let (_tmp, repo, _base, node) = rig("");
    let mut c = node.client().await;
    worker(&mut c, "w", &repo, "true", "true").await;
    call(&mut c, "agent.create", json!({ "name": "plain", "harness": "fake" })).await;
    let ok = json!({ "agent": "w", "goal": "TASK g", "acceptance": ["true"] });
    let with = |k: &str, v: Value| {
        let mut p = ok.clone();
        p[k] = v;
        p
    };
    let many: Vec<String> = (0..101).map(|i| format!("test {i}")).collect();
    let cases: Vec<(Value, &str)> = vec![
        (with("agent", json!("plain")), "agent"),
        (with("agent", json!("ghost")), "agent"),
        (with("goal", json!("  ")), "goal"),
        (with("acceptance", json!([])), "acceptance"),
        (with("acceptance", json!(many)), "acceptance"),
        (with("max_repairs", json!(21)), "max_repairs"),
        (with("deadline_secs", json!(59)), "deadline_secs"),
        (with("review", json!({ "agent": "w" })), "review"),
        (with("review", json!({ "agent": "ghost" })), "review"),
        (with("bogus", json!(1)), "bogus"),
    ];
    for (params, field) in cases {
        let e = call_err(&mut c, "task.start", params.clone()).await;
        assert_eq!(e.code, -32602, "{params}: {e:?}");
        assert!(
            e.message.contains(field),
            "{params}: the error names {field}: {}",
            e.message
        );
    }
    assert_eq!(call(&mut c, "task.list", json!({})).await["tasks"], json!([]));
    assert!(task_events(&node.db(), None).await.is_empty(), "nothing stored");
    let convs = call(&mut c, "conversation.list", json!({})).await;
    assert_eq!(convs["conversations"], json!([]), "no conversation was started");
    let e = call_err(&mut c, "task.list", json!({ "state": "done" })).await;
    assert!(e.message.contains("state"), "{e:?}");
    let e = call_err(&mut c, "task.get", json!({ "task": "t-nope" })).await;
    assert_eq!(e.code, -32004, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_worker_pauses_its_task_and_a_continue_lets_it_finish() {
    let (_tmp, repo, _base, node) = rig("");
    let mut c = node.client().await;
    let rules = json!([
        { "match": "^TASK", "actions": [{ "busy": 3 }, { "shell": "echo wrong > answer.txt" }] },
        { "match": "^Acceptance failed:", "actions": [{ "shell": "echo right > answer.txt" }] },
    ]);
    agent(&mut c, "w", &repo, rules).await;
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK answer", "acceptance": ["grep -qx right answer.txt"] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();
    wait_state(&node, &id, "running", Duration::from_secs(30)).await;
    // A human (or a monitor's breaker) pauses the worker mid-turn.
    call(&mut c, "conversation.pause", json!({ "conversation": conv })).await;
    let paused = wait_state(&node, &id, "paused", Duration::from_secs(30)).await;
    assert!(
        paused["reason"].as_str().is_some_and(|r| r.contains("paused")),
        "{paused:#}"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    let still = call(&mut c, "task.get", json!({ "task": id })).await["task"].clone();
    assert_eq!(still["state"], "paused", "nothing moves while paused: {still:#}");
    assert_eq!(still["checks"], json!([]), "{still:#}");
    // Continued: what the interrupted turn left is verified, repaired, committed.
    call(&mut c, "conversation.continue", json!({ "conversation": conv })).await;
    let done = wait_state(&node, &id, "completed", Duration::from_secs(60)).await;
    assert!(done["repairs"].as_u64().is_some_and(|r| r >= 1), "{done:#}");
    let head = done["head"].as_str().expect("head");
    assert_eq!(git(&repo, &["show", &format!("{head}:answer.txt")]), "right");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_that_does_not_answer_in_time_parks_the_task_with_the_question() {
    let (_tmp, repo, _base, node) = rig("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    let rules = json!([{ "match": "^TASK", "actions": [{ "tool_bash": "ls -la /tmp" }] }]);
    supervised_agent(&mut c, &node, "w", &repo, rules).await;
    // The decider hears the question and says nothing.
    call(
        &mut c,
        "agent.create",
        json!({ "name": "mute", "harness": "fake", "rules": [{ "match": "^Decide", "actions": [] }] }),
    )
    .await;
    let (code, out, err) = warren(
        &[
            "task",
            "start",
            "w",
            "TASK list",
            "--accept",
            "true",
            "--decider",
            "mute",
            "--decider-timeout",
            "10s",
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = out.split_whitespace().next().expect("the task id first").to_string();
    let waiting = wait_state(&node, &id, "waiting", Duration::from_secs(30)).await;
    assert!(
        waiting["reason"].as_str().is_some_and(|r| r.contains("ls -la /tmp")),
        "{waiting:#}"
    );
    let parked = wait_state(&node, &id, "parked", Duration::from_secs(40)).await;
    let reason = parked["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("did not answer in time") && reason.contains("ls -la /tmp"),
        "{parked:#}"
    );
    // Nobody answered it: no answer row in the audit log.
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "w" })).await;
    let answers: Vec<&Value> = audit["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|r| r["trigger"] == "answer")
        .collect();
    assert!(answers.is_empty(), "{answers:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_authority_decider_even_a_routine_dialog_is_the_deciders() {
    let (_tmp, repo, _base, node) = rig("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    // A read in the worktree: the policy alone would approve it.
    let rules = json!([{ "match": "^TASK", "actions": [{ "tool_bash": "cat README" }] }]);
    supervised_agent(&mut c, &node, "w", &repo, rules).await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "dec", "harness": "fake", "rules": [{ "match": "^Decide for task (t-\\S+):",
                "actions": [{ "shell": "warren-decide approve {{1}} reading the readme" }] }] }),
    )
    .await;
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK read", "acceptance": ["true"],
                "decider": { "agent": "dec", "authority": "decider" } }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    wait_state(&node, &id, "completed", Duration::from_secs(60)).await;
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "w" })).await;
    let rows = audit["entries"].as_array().expect("entries");
    let held = rows
        .iter()
        .find(|r| r["subject"] == "cat README" && r["outcome"] == "held")
        .unwrap_or_else(|| panic!("held for the decider: {rows:#?}"));
    assert!(
        held["reason"]
            .as_str()
            .is_some_and(|r| r.contains("authority: decider")),
        "{held}"
    );
    assert!(
        rows.iter().any(|r| r["subject"] == "cat README"
            && r["outcome"] == "sent"
            && r["reason"].as_str().is_some_and(|r| r.contains("decider dec"))),
        "answered by the decider: {rows:#?}"
    );
}
