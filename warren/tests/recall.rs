//! Recall on a real node: documents stashed by the owner (or the agent) and
//! the agent's own transcript lines are found by word and by phrase, ranked
//! by bm25 with snippets; another agent's rows never answer; bad queries
//! are refused with a reason; the index is a read model a rebuild refolds.

mod support;

use serde_json::{Value, json};
use support::*;

fn refs(v: &Value) -> Vec<String> {
    v["hits"]
        .as_array()
        .expect("hits")
        .iter()
        .map(|h| {
            format!(
                "{}:{}",
                h["source"].as_str().unwrap_or(""),
                h["ref"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_finds_documents_and_history_ranked_and_only_its_own() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "ada", "harness": "fake", "grants": { "recall": true } }),
    )
    .await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "bob", "harness": "fake", "grants": { "recall": true } }),
    )
    .await;
    let stash = |agent: &str, name: &str, text: &str| json!({ "agent": agent, "name": name, "text": text });
    call(
        &mut c,
        "recall.stash",
        stash(
            "ada",
            "runbook.md",
            "To rotate the signing key, run the rotation playbook and page the on-call.",
        ),
    )
    .await;
    call(
        &mut c,
        "recall.stash",
        stash(
            "ada",
            "notes.md",
            "The signing key lives in the vault. Rotation is rare; rotation needs two people.",
        ),
    )
    .await;
    call(
        &mut c,
        "recall.stash",
        stash("bob", "secret-plans.md", "Bob's rotation schedule for the signing key."),
    )
    .await;

    // Its own transcript history: a line the fake CLI said back.
    let id = start_idle(&mut c, "ada").await["id"].as_str().expect("id").to_string();
    send(&mut c, &id, "the flaky integration test is in payments").await;
    wait_event(&mut c, &id, "agent", "echo: the flaky integration test is in payments").await;

    // A word finds both documents, ranked: the one that says it twice first.
    let hits = call(&mut c, "recall.search", json!({ "agent": "ada", "query": "rotation" })).await;
    assert_eq!(refs(&hits), ["doc:notes.md", "doc:runbook.md"], "{hits:#}");
    let first = &hits["hits"][0];
    assert!(
        first["snippet"]
            .as_str()
            .is_some_and(|s| s.contains("[Rotation]") || s.contains("[rotation]")),
        "{first}"
    );
    assert!(
        first["score"].as_f64() <= hits["hits"][1]["score"].as_f64(),
        "bm25: lower is better"
    );
    // A phrase finds the transcript line (in the human's and the agent's lines).
    let hits = call(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "\"flaky integration test\"" }),
    )
    .await;
    let found = refs(&hits);
    assert!(
        !found.is_empty() && found.iter().all(|r| r.starts_with(&format!("transcript:{id}#"))),
        "{hits:#}"
    );
    let hits = call(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "\"integration flaky\"" }),
    )
    .await;
    assert!(refs(&hits).is_empty(), "a phrase is in order: {hits:#}");
    // Another agent's documents are never returned.
    let hits = call(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "schedule OR Bob" }),
    )
    .await;
    assert!(refs(&hits).is_empty(), "{hits:#}");
    let hits = call(&mut c, "recall.search", json!({ "agent": "bob", "query": "rotation" })).await;
    assert_eq!(refs(&hits), ["doc:secret-plans.md"]);

    // Bad input is refused with a reason; nothing changes.
    for (q, needle) in [("\"unclosed", "not closed"), ("&& ||", "no words")] {
        let e = call_err(&mut c, "recall.search", json!({ "agent": "ada", "query": q })).await;
        assert_eq!(e.code, -32602, "{}", e.message);
        assert!(e.message.contains(needle), "{}", e.message);
    }
    let e = call_err(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "w ".repeat(5_000) }),
    )
    .await;
    assert!(e.message.contains("over the limit"), "{}", e.message);
    let e = call_err(&mut c, "recall.stash", stash("ada", "x", "bad \u{1b}[2J")).await;
    assert!(e.message.contains("U+001B"), "{}", e.message);
    let e = call_err(&mut c, "recall.forget", json!({ "agent": "ada", "name": "nope.md" })).await;
    assert_eq!(e.code, -32004, "{}", e.message);
    // The agent's instance token: its own recall only.
    let token = std::fs::read_to_string(node.path().join("agents/ada/home/.warren/instance.token")).expect("token");
    let mut t = client_with(&node, token.trim()).await;
    let own = call(&mut t, "recall.search", json!({ "agent": "ada", "query": "vault" })).await;
    assert_eq!(refs(&own), ["doc:notes.md"]);
    call(
        &mut t,
        "recall.stash",
        stash("ada", "mine.md", "kept by ada herself: the quokka protocol"),
    )
    .await;
    assert_eq!(
        call_err(&mut t, "recall.search", json!({ "agent": "bob", "query": "rotation" }))
            .await
            .code,
        -32003
    );
    assert_eq!(
        call_err(&mut t, "recall.stash", stash("bob", "x.md", "planted"))
            .await
            .code,
        -32003
    );

    // Replacing and forgetting.
    call(
        &mut c,
        "recall.stash",
        stash("ada", "runbook.md", "Now it says: call the locksmith."),
    )
    .await;
    assert_eq!(
        refs(&call(&mut c, "recall.search", json!({ "agent": "ada", "query": "rotation" })).await),
        ["doc:notes.md"]
    );
    call(&mut c, "recall.forget", json!({ "agent": "ada", "name": "notes.md" })).await;
    assert!(refs(&call(&mut c, "recall.search", json!({ "agent": "ada", "query": "rotation" })).await).is_empty());

    // A rebuild from the log gives the same answers.
    let before = call(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "locksmith OR quokka OR flaky" }),
    )
    .await;
    node.kill9();
    let (code, _, err) = warren(&["admin", "rebuild"], &node.path());
    assert_eq!(code, 0, "{err}");
    node.restart();
    let mut c = node.client().await;
    let after = call(
        &mut c,
        "recall.search",
        json!({ "agent": "ada", "query": "locksmith OR quokka OR flaky" }),
    )
    .await;
    assert_eq!(refs(&after), refs(&before));
    assert!(refs(&after).len() >= 3, "{after:#}");

    // The CLI.
    let (code, out, err) = warren(&["recall", "search", "ada", "locksmith"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("runbook.md") && out.contains("[locksmith]"), "{out}");
    let (code, _, err) = warren(
        &["recall", "stash", "ada", "cli.md", "--text", "zebra crossing"],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}");
    let (code, out, _) = warren(&["recall", "search", "ada", "zebra"], &node.path());
    assert!(code == 0 && out.contains("cli.md"), "{out}");
    let (code, _, err) = warren(&["recall", "forget", "ada", "cli.md"], &node.path());
    assert_eq!(code, 0, "{err}");
}
