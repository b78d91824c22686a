//! Helpers for tests of supervision on a real node with the fake CLI: a
//! supervised agent `sup`, its audit rows, holds and runs.

use serde_json::{Value, json};
use warren::client::Client;

use super::{TestNode, call, conversation_id, create_agent, transcript, wait_until, warren};

/// A node with the master switch `master`, agent `sup` opted in, and its
/// live conversation's id.
pub async fn supervised_node(master: bool) -> (TestNode, String) {
    let node = TestNode::start_with_config(&format!("[supervision]\nenabled = {master}\n"));
    let mut c = node.client().await;
    create_agent(&mut c, "sup").await;
    let (code, _, err) = warren(&["supervision", "set", "sup", "--enable"], &node.path());
    assert_eq!(code, 0, "supervision set: {err}");
    let id = conversation_id(&mut c, "sup").await;
    (node, id)
}

/// The first audit row of `sup` about `subject` newer than `after` (by id).
pub async fn row_after(c: &mut Client, subject: &str, after: u64) -> Value {
    row_after_where(c, subject, after, |_| true).await
}

/// The first row of supervision's own decision (not a human's answer) about
/// `subject` newer than `after`.
pub async fn decision_after(c: &mut Client, subject: &str, after: u64) -> Value {
    row_after_where(c, subject, after, |e| e["trigger"] != "answer").await
}

async fn row_after_where(c: &mut Client, subject: &str, after: u64, want: fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let a = call(c, "supervision.audit", json!({ "agent": "sup" })).await;
        if let Some(e) = a["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .filter(|e| e["subject"] == subject && e["id"].as_u64().is_some_and(|id| id > after) && want(e))
            .min_by_key(|e| e["id"].as_u64())
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

/// The id of `sup`'s hold whose summary is `subject`.
pub async fn hold_of(c: &mut Client, subject: &str) -> Option<String> {
    let holds = call(c, "supervision.holds", json!({ "agent": "sup" })).await;
    holds["holds"]
        .as_array()
        .expect("holds")
        .iter()
        .find(|h| h["summary"] == subject)
        .and_then(|h| h["id"].as_str())
        .map(str::to_string)
}

/// How many times the transcript says `Ran: {command} (exit`.
pub async fn runs_of(c: &mut Client, id: &str, command: &str) -> usize {
    let prefix = format!("Ran: {command} (exit");
    transcript(c, id)
        .await
        .iter()
        .filter(|e| e["text"].as_str().is_some_and(|t| t.starts_with(&prefix)))
        .count()
}

/// Waits until `command` ran `n` times in conversation `id`.
pub async fn wait_runs(node: &TestNode, id: &str, command: &str, n: usize) {
    wait_until(
        &format!("{command} ran {n} time(s)"),
        std::time::Duration::from_secs(30),
        || {
            let target = node.target();
            let id = id.to_string();
            let command = command.to_string();
            async move {
                let mut c = Client::connect(&target).await.ok()?;
                (runs_of(&mut c, &id, &command).await >= n).then_some(())
            }
        },
    )
    .await;
}
