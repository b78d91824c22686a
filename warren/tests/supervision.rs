//! Supervision settings on a real node: `[supervision]` in warren.toml is the
//! master switch and the defaults, per-agent overrides are stored as events and
//! merged field by field, the two-key lock shows in the effective policy, and
//! `supervision.set` is local-only.

mod support;

use serde_json::{Value, json};
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
