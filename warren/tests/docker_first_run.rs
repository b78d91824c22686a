//! The first run as a new user sees it: with no guest image of the fake
//! harness on the engine, `warren up` says what the first conversation will
//! build, and the first `conversation.start` reports each build step with its
//! elapsed time through `request.progress` notifications (and `warren conv
//! start` prints them). The guest images are removed first (the Debian base
//! and the build cache are kept, so the rebuild takes seconds, not minutes).
//! Needs a Docker engine: without one this fails.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::json;
use support::*;

/// Removes every tag of the fake guest image, keeping its layers (`--no-prune`).
fn remove_fake_images() {
    let ids = docker(&["images", "warren/guest-fake", "--format", "{{.Repository}}:{{.Tag}}"]);
    for tag in ids.split_whitespace() {
        docker(&["rmi", "--no-prune", tag]);
    }
    assert!(
        docker(&["images", "-q", "warren/guest-fake"]).trim().is_empty(),
        "the fake guest image is still there"
    );
}

/// A Docker node that builds its images on demand (not warmed up first).
fn cold_node() -> TestNode {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("warren.toml"),
        "[docker]\nreap_interval_secs = 1\nreadopt_grace_secs = 0\n",
    )
    .expect("config");
    let proc = warren::bench::NodeProcess::start_on(Path::new(EXE), dir.path(), "docker").expect("node starts");
    TestNode {
        env: vec![],
        dir,
        proc: Some(proc),
        runtime: "docker",
    }
}

fn node_log(node: &TestNode) -> String {
    std::fs::read_to_string(node.path().join("node.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_conversation_reports_its_image_build_step_by_step() {
    // Through the API: progress notifications carry the request's id.
    remove_fake_images();
    let node = cold_node();
    wait_until(
        "warren up says what a first run builds",
        Duration::from_secs(30),
        || {
            let log = node_log(&node);
            async move {
                log.lines()
                    .any(|l| l.starts_with("note: the first fake conversation builds its guest image"))
                    .then_some(())
            }
        },
    )
    .await;
    let mut c = node.client().await;
    call(&mut c, "agent.create", json!({ "name": "first", "harness": "fake" })).await;
    let conv = call(&mut c, "conversation.start", json!({ "agent": "first" })).await;
    assert_eq!(conv["conversation"]["status"], "IDLE", "{conv}");
    let mut notes = vec![];
    while let Some(n) = c
        .next_notification(Duration::from_millis(100))
        .await
        .expect("notification")
    {
        if n.method == "request.progress" {
            notes.push(n.params);
        }
    }
    assert!(notes.len() >= 3, "progress: {notes:#?}");
    // The client's first request was agent.create (id 1); start is id 2.
    assert!(notes.iter().all(|n| n["id"] == 2), "{notes:#?}");
    let messages: Vec<&str> = notes.iter().filter_map(|n| n["message"].as_str()).collect();
    assert!(
        messages[0].starts_with("building (or reusing) the fake guest image for this warren (about 15 s"),
        "{messages:#?}"
    );
    assert!(
        messages.iter().any(|m| m.starts_with("fake image: ")),
        "build steps: {messages:#?}"
    );
    assert!(
        messages
            .last()
            .is_some_and(|m| m.starts_with("fake guest image ready: warren/guest-fake:")),
        "{messages:#?}"
    );
    let elapsed: Vec<u64> = notes.iter().filter_map(|n| n["elapsed_ms"].as_u64()).collect();
    assert_eq!(elapsed.len(), notes.len());
    assert!(
        elapsed.windows(2).all(|w| w[0] <= w[1]),
        "elapsed times only grow: {elapsed:?}"
    );
    drop(c);
    drop(node);

    // Through the CLI: the person running `warren conv start` sees them.
    remove_fake_images();
    let node = cold_node();
    let (code, out, err) = warren(&["agent", "create", "again", "--harness", "fake"], &node.path());
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = warren(&["conv", "start", "again"], &node.path());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("IDLE"), "{out}");
    let progress: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with('[') && l.contains(" s] "))
        .collect();
    assert!(
        progress
            .iter()
            .any(|l| l.contains("building (or reusing) the fake guest image")),
        "{err}"
    );
    assert!(progress.iter().any(|l| l.contains("fake image: ")), "{err}");
}
