//! The global supervision defaults at runtime on a real node: `config.set`
//! (local-only) flips the master switch and the next dialog is decided under
//! it, without a restart; the node's own defaults survive a crash and win
//! over warren.toml until cleared; bad input is refused naming its field with
//! nothing changed; `event.supervision.changed` follows both `config.set` and
//! `supervision.set`; `warren supervision get` shows a flip at once.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::supervised::{decision_after, hold_of, supervised_node};
use support::*;
use warren::client::{CallError, Client, unix_call};

/// `warren supervision get --json`'s global defaults.
fn cli_defaults(node: &TestNode) -> Value {
    let (code, out, err) = warren(&["supervision", "get", "--json"], &node.path());
    assert_eq!(code, 0, "warren supervision get: {err}{out}");
    let got: Value = serde_json::from_str(&out).expect("json");
    got["defaults"].clone()
}

/// `config.set` on the node's Unix socket.
async fn config_set(node: &TestNode, supervision: Value) -> Result<Value, console_api::RpcError> {
    match unix_call(&node.path(), "config.set", json!({ "supervision": supervision })).await {
        Ok(v) => Ok(v),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("config.set: {e}"),
    }
}

/// The next `event.supervision.changed` on `events`.
async fn changed(events: &mut Client) -> Value {
    let n = events
        .next_notification(Duration::from_secs(10))
        .await
        .expect("read")
        .expect("an event.supervision.changed within 10 s");
    assert_eq!(n.method, "event.supervision.changed", "{n:?}");
    n.params["event"].clone()
}

/// The decision and policy source of supervision's row about `subject`.
async fn decided(c: &mut Client, subject: &str) -> (String, String) {
    let row = decision_after(c, subject, 0).await;
    (
        row["decision"].as_str().unwrap_or_default().to_string(),
        row["policy_source"].as_str().unwrap_or_default().to_string(),
    )
}

/// Denies the hold about `subject` and waits for the CLI to be idle again.
async fn deny(c: &mut Client, id: &str, subject: &str) {
    let hold = hold_of(c, subject).await.expect("held");
    call(c, "supervision.answer", json!({ "hold": hold, "decision": "deny" })).await;
    wait_idle(c, id).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_master_switch_flips_at_runtime_and_stays_flipped() {
    // warren.toml: the master switch off; `sup` opted in.
    let (mut node, id) = supervised_node(false).await;
    let mut c = node.client().await;
    let mut events = node.client().await;
    call(
        &mut events,
        "events.subscribe",
        json!({ "kinds": ["event.supervision.changed"] }),
    )
    .await;

    send(&mut c, &id, "/fake tool bash ls").await;
    assert_eq!(decided(&mut c, "ls").await, ("hold".into(), "supervision_off".into()));
    deny(&mut c, &id, "ls").await;

    // Read-modify-write: the whole defaults as read, the switch flipped.
    let mut defaults = cli_defaults(&node);
    assert_eq!(defaults["enabled"], false);
    defaults["enabled"] = json!(true);
    let set = config_set(&node, defaults.clone()).await.expect("config.set");
    assert_eq!(
        (set["supervision"]["enabled"].clone(), set["overridden"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(
        cli_defaults(&node),
        defaults,
        "warren supervision get shows the flip at once"
    );
    let ev = changed(&mut events).await;
    assert_eq!(
        (ev["agent"].clone(), ev["defaults"].clone()),
        (Value::Null, defaults.clone())
    );
    let status = call(&mut c, "supervision.status", json!({ "agent": "sup" })).await;
    assert_eq!(
        (status["master"].clone(), status["agents"][0]["enabled"].clone()),
        (json!(true), json!(true))
    );

    // The next dialog is decided under the new switch: approved, and it runs.
    send(&mut c, &id, "/fake tool bash ls -a").await;
    assert_eq!(
        decided(&mut c, "ls -a").await,
        ("approve".into(), "class_policy".into())
    );
    wait_event(&mut c, &id, "agent", "Ran: ls -a (exit 0)").await;
    wait_idle(&mut c, &id).await;

    // `supervision.set` announces its change too, with the agent's policy.
    let (code, _, err) = warren(&["supervision", "set", "sup", "--nudge-retries", "3"], &node.path());
    assert_eq!(code, 0, "{err}");
    let ev = changed(&mut events).await;
    assert_eq!(ev["agent"], "sup");
    assert_eq!(ev["override"]["nudge_retries"], 3);
    assert_eq!(
        (
            ev["effective"]["enabled"].clone(),
            ev["effective"]["nudge_retries"].clone()
        ),
        (json!(true), json!(3))
    );

    // The node's own defaults survive a crash and win over warren.toml (still off).
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    assert_eq!(cli_defaults(&node), defaults, "the flip survived the crash");
    let got = call(&mut c, "supervision.get", json!({ "agent": "sup" })).await;
    assert_eq!(got["effective"]["enabled"], true);

    // Flipped back off: a conversation's next dialog holds again.
    let id = conversation_id(&mut c, "sup").await;
    config_set(&node, json!({ "enabled": false }))
        .await
        .expect("config.set");
    assert_eq!(cli_defaults(&node)["enabled"], false);
    send(&mut c, &id, "/fake tool bash ls -l").await;
    assert_eq!(
        decided(&mut c, "ls -l").await,
        ("hold".into(), "supervision_off".into())
    );
    deny(&mut c, &id, "ls -l").await;

    // Cleared: warren.toml's defaults apply again.
    config_set(&node, json!({ "enabled": true, "stall_mins": 9 }))
        .await
        .expect("config.set");
    let cleared = config_set(&node, Value::Null).await.expect("config.set null");
    assert_eq!(cleared["overridden"], false);
    let shown = cli_defaults(&node);
    assert_eq!(
        (shown["enabled"].clone(), shown["stall_mins"].clone()),
        (json!(false), json!(20))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_defaults_are_refused_naming_the_field_and_nothing_changes() {
    let node = TestNode::start_with_config("[supervision]\nenabled = false\nstall_mins = 7\n");
    let mut c = node.client().await;
    let before = cli_defaults(&node);
    assert_eq!(before["stall_mins"], 7, "warren.toml is the initial value");
    for (given, names) in [
        (
            json!({ "enabled": true, "classes": { "teleport": "hold" } }),
            "supervision.classes.teleport",
        ),
        (
            json!({ "enabled": true, "classes": { "deletion": "maybe" } }),
            "supervision.classes.deletion",
        ),
        (
            json!({ "enabled": true, "mail_mode": "carrier_pigeon" }),
            "supervision.mail_mode",
        ),
        (json!({ "enabled": "yes" }), "supervision.enabled"),
        (
            json!({ "enabled": true, "stall_mins": 0 }),
            "stall_mins must be at least 1",
        ),
        (
            json!({ "enabled": true, "master": true }),
            "supervision.master: unknown field",
        ),
        (json!(true), "supervision: expected an object"),
    ] {
        let e = config_set(&node, given.clone()).await.expect_err("refused");
        assert_eq!(e.code, -32602, "{given}: {}", e.message);
        assert!(e.message.contains(names), "{given}: {}", e.message);
        assert_eq!(cli_defaults(&node), before, "{given}: nothing stored");
    }
    let e = unix_call(&node.path(), "config.set", json!({ "logging": {} })).await;
    match e {
        Err(CallError::Rpc(e)) => assert!(e.message.contains("logging"), "{}", e.message),
        other => panic!("an unknown setting: {other:?}"),
    }
    // The CLI says what was wrong and fails.
    let (code, _, err) = warren(
        &["config", "set", "--supervision", r#"{"classes": {"teleport": "hold"}}"#],
        &node.path(),
    );
    assert_eq!(code, 1);
    assert!(err.contains("supervision.classes.teleport"), "{err}");

    // Over the network it is refused outright, with nothing changed.
    let e = call_err(&mut c, "config.set", json!({ "supervision": { "enabled": true } })).await;
    assert_eq!(e.code, -32010, "{}", e.message);
    assert_eq!(cli_defaults(&node), before);

    // The CLI verb sets them on the Unix socket.
    let (code, out, err) = warren(
        &["config", "set", "--supervision", r#"{"enabled": true}"#, "--json"],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}{out}");
    let shown = cli_defaults(&node);
    assert_eq!(
        (shown["enabled"].clone(), shown["stall_mins"].clone()),
        (json!(true), json!(7))
    );
}
