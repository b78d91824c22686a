//! The repository-code rule remembers, per workspace and durably, what
//! defines the code a command runs: a Makefile changed by any route (here
//! written straight to disk, as a tool or a copy would) holds `make` in this
//! conversation, in the next one and after a `kill -9` of the node, until a
//! human approves a run; then it is routine again until it changes again.

mod support;

use serde_json::json;
use support::supervised::{decision_after, hold_of, supervised_node, wait_runs};
use support::{call, send, wait_idle};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_definition_holds_runs_across_conversations_and_restarts_until_a_human_accepts_it() {
    let (mut node, id) = supervised_node(true).await;
    let workspace = node.path().join("agents/sup/workspace");
    let mut c = node.client().await;

    // Nothing changed since the first launch: `make` is routine.
    send(&mut c, &id, "/fake tool bash make").await;
    let row = decision_after(&mut c, "make", 0).await;
    assert_eq!(
        (row["decision"].as_str(), row["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "{row}"
    );
    wait_runs(&node, &id, "make", 1).await;

    // A Makefile appears by a route supervision never saw.
    std::fs::write(workspace.join("Makefile"), "all:\n\t@echo planted\n").expect("write Makefile");
    wait_idle(&mut c, &id).await;
    send(&mut c, &id, "/fake tool bash make").await;
    let held = decision_after(&mut c, "make", row["id"].as_u64().expect("id")).await;
    assert_eq!(
        (held["decision"].as_str(), held["outcome"].as_str()),
        (Some("hold"), Some("held")),
        "{held}"
    );
    assert!(
        held["reason"].as_str().is_some_and(|r| r.contains("Makefile")),
        "the reason names the change: {held}"
    );
    let hold = hold_of(&mut c, "make").await.expect("a hold");
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;

    // The next conversation of the agent remembers it.
    wait_idle(&mut c, &id).await;
    call(&mut c, "conversation.terminate", json!({ "conversation": id })).await;
    let next = call(&mut c, "conversation.start", json!({ "agent": "sup" })).await;
    let next = next["conversation"]["id"].as_str().expect("id").to_string();
    wait_idle(&mut c, &next).await;
    send(&mut c, &next, "/fake tool bash make").await;
    let again = decision_after(&mut c, "make", held["id"].as_u64().expect("id")).await;
    assert_eq!(
        (again["decision"].as_str(), again["conversation"].as_str()),
        (Some("hold"), Some(next.as_str())),
        "a new conversation: {again}"
    );
    let hold = hold_of(&mut c, "make").await.expect("a hold");
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;

    // So does the node after a kill -9.
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    call(&mut c, "conversation.continue", json!({ "conversation": next })).await;
    wait_idle(&mut c, &next).await;
    send(&mut c, &next, "/fake tool bash make").await;
    let after_crash = decision_after(&mut c, "make", again["id"].as_u64().expect("id")).await;
    assert_eq!(after_crash["decision"], "hold", "after kill -9: {after_crash}");

    // A human's approve accepts the Makefile as it is: make runs, and the
    // next make is routine.
    let hold = hold_of(&mut c, "make").await.expect("a hold");
    call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "approve" }),
    )
    .await;
    wait_runs(&node, &next, "make", 1).await;
    wait_idle(&mut c, &next).await;
    send(&mut c, &next, "/fake tool bash make").await;
    let routine = decision_after(&mut c, "make", after_crash["id"].as_u64().expect("id")).await;
    assert_eq!(
        (routine["decision"].as_str(), routine["outcome"].as_str()),
        (Some("approve"), Some("sent")),
        "accepted by the human: {routine}"
    );
    wait_runs(&node, &next, "make", 2).await;

    // Changed again: held again.
    std::fs::write(workspace.join("Makefile"), "all:\n\t@echo changed again\n").expect("write Makefile");
    wait_idle(&mut c, &next).await;
    send(&mut c, &next, "/fake tool bash make").await;
    let changed = decision_after(&mut c, "make", routine["id"].as_u64().expect("id")).await;
    assert_eq!(changed["decision"], "hold", "changed again: {changed}");
}
