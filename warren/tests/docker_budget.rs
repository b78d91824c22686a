//! Budgets on the Docker runtime: a guest's CLI is frozen in place (the
//! guest protocol's `freeze`: SIGSTOP of the CLI's process group inside the
//! container, the guest itself and its link to the node keep running) while
//! its agent's bucket waits, and thawed by itself after accrual. Needs a
//! Docker engine: without one this fails.

mod support;

use std::time::Duration;

use serde_json::json;
use support::{TestNode, call, cli_state, docker, start_idle, wait_until};
use warren::client::Client;

const WAIT: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_cli_is_frozen_while_its_budget_waits_and_thawed_after() {
    let node = TestNode::start_on("docker", "");
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "boxed", "harness": "fake", "budget": { "usd_per_hour": 144.0, "burst_usd": 0.2 } }),
    )
    .await;
    let conv = start_idle(&mut c, "boxed").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let session = conv["resume_ref"].as_str().expect("resume ref").to_string();
    let ps = docker(&["ps", "--filter", &format!("label=warren.conversation={id}"), "-q"]);
    assert!(!ps.trim().is_empty(), "the conversation runs in a container");
    assert!(cli_state(&session).is_some_and(|s| s != 'T'), "the CLI runs");
    let s = "/fake spend claude-sonnet-4-5-20250929 0 10000";
    support::send(
        &mut c,
        &id,
        &format!("{s}\n{s}\n{s}\n/fake busy 3\n/fake say boxed done"),
    )
    .await;
    wait_until("the guest's CLI frozen for its budget", WAIT, || async {
        (cli_state(&session) == Some('T')).then_some(())
    })
    .await;
    let b = call(&mut c, "budget.get", json!({ "agent": "boxed" })).await;
    assert_eq!(b["state"], "waiting", "{b}");
    // It thaws by itself and the turn finishes in the same container.
    wait_until("the turn finished after accrual", WAIT, || {
        let target = node.target();
        let id = id.clone();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let t = support::transcript(&mut c, &id).await;
            t.iter().any(|e| e["text"] == "boxed done").then_some(())
        }
    })
    .await;
    assert!(cli_state(&session).is_some_and(|s| s != 'T'), "thawed");
    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    assert_eq!(got["conversation"]["state"], "active", "{got}");
}
