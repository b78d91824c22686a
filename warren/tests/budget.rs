//! Per-agent spend-rate budgets on a real node ("wait, then ask"): a
//! budgeted fake agent reports usage (`/fake spend`, Claude Code's session
//! format, read by the spend ledger) until its bucket is empty; its CLI is
//! frozen (SIGSTOP: state `T`), `sendMessage` answers -32013 with
//! `retry_after_ms`, and it continues by itself after accrual. With a zero
//! rate it is exhausted: exactly one `event.budget.exhausted`, and a top-up
//! resumes it. `budget.set`/`budget.topup` are local-only; bad amounts are
//! -32602 naming the field and store nothing; a rebuild from the log and a
//! restart give the same `budget.get`.

mod support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{TestNode, call, call_err, cli_state, start_idle, wait_until, warren};
use warren::client::{CallError, Client};

const WAIT: Duration = Duration::from_secs(40);
/// Bundled price: $3 per million input, $15 per million output.
const MODEL: &str = "claude-sonnet-4-5-20250929";

/// One `/fake spend` step of $0.15 (10,000 output tokens).
fn spend() -> String {
    format!("/fake spend {MODEL} 0 10000")
}

async fn budget_of(c: &mut Client, agent: &str) -> Value {
    call(c, "budget.get", json!({ "agent": agent })).await
}

async fn wait_state(node: &TestNode, agent: &str, state: &str) -> Value {
    wait_until(&format!("{agent}'s budget {state}"), WAIT, || {
        let target = node.target();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let b = c.call("budget.get", json!({ "agent": agent })).await.ok()?;
            (b["state"] == state).then_some(b)
        }
    })
    .await
}

async fn transcript_has(node: &TestNode, conv: &str, text: &str) {
    wait_until(&format!("{text:?} in the transcript"), WAIT, || {
        let target = node.target();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let t = support::transcript(&mut c, conv).await;
            t.iter().any(|e| e["text"] == text).then_some(())
        }
    })
    .await
}

async fn unix(node: &TestNode, method: &str, params: Value) -> Result<Value, console_api::RpcError> {
    match warren::client::unix_call(&node.path(), method, params).await {
        Ok(v) => Ok(v),
        Err(CallError::Rpc(e)) => Err(e),
        Err(e) => panic!("{method}: transport error {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budgeted_agent_waits_continues_by_itself_and_asks_once_when_exhausted() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    // $144/hour = $0.04/s; a $0.20 bucket; resumes at a tenth of it.
    let agent = call(
        &mut c,
        "agent.create",
        json!({ "name": "spender", "harness": "fake", "budget": { "usd_per_hour": 144.0, "burst_usd": 0.2 } }),
    )
    .await;
    assert_eq!(agent["agent"]["name"], "spender");
    let b = budget_of(&mut c, "spender").await;
    assert_eq!(
        (b["usd_per_hour"].as_f64(), b["burst_usd"].as_f64()),
        (Some(144.0), Some(0.2))
    );
    assert_eq!(b["state"], "ok");

    let conv = start_idle(&mut c, "spender").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let session = conv["resume_ref"].as_str().expect("resume ref").to_string();
    assert_eq!(cli_state(&session).map(|s| s != 'T'), Some(true), "the CLI runs");

    let mut events = node.client().await;
    call(
        &mut events,
        "events.subscribe",
        json!({ "kinds": ["event.budget.exhausted"] }),
    )
    .await;

    // Turn one spends $0.45 against $0.20: the bucket goes empty mid-turn.
    let s = spend();
    let turn = format!("{s}\n{s}\n/fake busy 4\n{s}\n/fake busy 1\n/fake say turn one done");
    support::send(&mut c, &id, &turn).await;
    let waiting = wait_state(&node, "spender", "waiting").await;
    assert!(
        waiting["available_usd"].as_f64().expect("available") < 0.02,
        "{waiting}"
    );
    assert!(waiting["retry_after_ms"].as_u64().is_some(), "{waiting}");
    // Waiting with the CLI warm: frozen, not gone.
    wait_until("the CLI frozen", WAIT, || async {
        (cli_state(&session) == Some('T')).then_some(())
    })
    .await;
    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    assert_eq!(got["conversation"]["budget"], "waiting", "{got}");
    assert_eq!(
        got["conversation"]["state"], "active",
        "existing fields unchanged: {got}"
    );
    let e = call_err(
        &mut c,
        "conversation.sendMessage",
        json!({ "conversation": id, "text": "are you there?" }),
    )
    .await;
    assert_eq!(e.code, -32013, "{}", e.message);
    let data = e.data.clone().unwrap_or_default();
    assert_eq!(data["state"], "waiting");
    assert!(
        data["retry_after_ms"]
            .as_u64()
            .is_some_and(|ms| ms > 0 && ms <= 900_000),
        "{data}"
    );

    // It continues by itself once enough accrued, and the turn finishes.
    transcript_has(&node, &id, "turn one done").await;
    let ok = wait_state(&node, "spender", "ok").await;
    assert!(ok["available_usd"].as_f64().expect("available") > 0.0, "{ok}");
    wait_until("the CLI thawed", WAIT, || async {
        (cli_state(&session) != Some('T')).then_some(())
    })
    .await;
    support::wait_idle(&mut c, &id).await;

    // Budget changes are local-only: refused over the WebSocket.
    for (method, params) in [
        ("budget.set", json!({ "agent": "spender", "usd_per_hour": 0.0 })),
        ("budget.topup", json!({ "agent": "spender", "usd": 1.0 })),
    ] {
        let e = call_err(&mut c, method, params).await;
        assert_eq!(e.code, -32010, "{method}: {}", e.message);
    }
    // Bad input names the field and stores nothing.
    let before = budget_of(&mut c, "spender").await;
    for (method, params, field, code) in [
        (
            "budget.set",
            json!({ "agent": "spender", "usd_per_hour": -1.0 }),
            "usd_per_hour",
            -32602,
        ),
        (
            "budget.set",
            json!({ "agent": "spender", "burst_usd": 2e6 }),
            "burst_usd",
            -32602,
        ),
        ("budget.set", json!({ "agent": "spender" }), "usd_per_hour", -32602),
        ("budget.topup", json!({ "agent": "spender" }), "usd", -32602),
        (
            "budget.topup",
            json!({ "agent": "spender", "usd": "ten" }),
            "usd",
            -32602,
        ),
        (
            "budget.topup",
            json!({ "agent": "spender", "usd": 1, "extra": 1 }),
            "extra",
            -32602,
        ),
        (
            "budget.topup",
            json!({ "agent": "nobody", "usd": 1.0 }),
            "nobody",
            -32004,
        ),
    ] {
        let e = unix(&node, method, params.clone()).await.expect_err("refused");
        assert_eq!(e.code, code, "{method} {params}: {}", e.message);
        assert!(e.message.contains(field), "{method} {params}: {}", e.message);
    }
    let e = call_err(
        &mut c,
        "agent.create",
        json!({ "name": "bad", "harness": "fake", "budget": { "usd_per_hour": -3.0, "burst_usd": 1.0 } }),
    )
    .await;
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("budget.usd_per_hour"), "{}", e.message);
    assert_eq!(
        call_err(&mut c, "agent.get", json!({ "agent": "bad" })).await.code,
        -32004
    );
    let after = budget_of(&mut c, "spender").await;
    assert_eq!(
        (&before["usd_per_hour"], &before["burst_usd"]),
        (&after["usd_per_hour"], &after["burst_usd"])
    );

    // A zero rate (the CLI, over the Unix socket): accrual will not do.
    let (code, out, err) = warren(&["budget", "set", "spender", "--usd-per-hour", "0"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("$0.0000/hour"), "{out}");
    let s = spend();
    support::send(&mut c, &id, &format!("{s}\n{s}\n/fake busy 1\n/fake say turn two done")).await;
    let note = events
        .next_notification(WAIT)
        .await
        .expect("events stream")
        .expect("an event.budget.exhausted");
    assert_eq!(note.method, "event.budget.exhausted");
    let ev = note.params["event"].clone();
    assert_eq!(ev["agent"], "spender");
    assert_eq!(ev["conversation"], id.as_str());
    assert_eq!(ev["usd_per_hour"], 0.0);
    assert!(ev["available_usd"].as_f64().expect("available") <= 0.0, "{ev}");
    let ex = budget_of(&mut c, "spender").await;
    assert_eq!(ex["state"], "exhausted", "{ex}");
    wait_until("the CLI frozen", WAIT, || async {
        (cli_state(&session) == Some('T')).then_some(())
    })
    .await;
    let e = call_err(
        &mut c,
        "conversation.sendMessage",
        json!({ "conversation": id, "text": "still there?" }),
    )
    .await;
    assert_eq!(e.code, -32013);
    let data = e.data.clone().unwrap_or_default();
    assert_eq!(data["state"], "exhausted");
    assert!(data.get("retry_after_ms").is_none(), "{data}");
    // Exactly one needs-you for this exhaustion: nothing more arrives while
    // the ledger goes on ticking (every 2 s).
    let second = events
        .next_notification(Duration::from_secs(5))
        .await
        .expect("events stream");
    assert!(second.is_none(), "a second exhaustion event: {second:?}");
    assert_eq!(budget_of(&mut c, "spender").await["state"], "exhausted");

    // A human tops up: it resumes and the turn completes.
    let (code, out, err) = warren(&["budget", "topup", "spender", "1"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("ok:"), "{out}");
    transcript_has(&node, &id, "turn two done").await;
    assert_eq!(cli_state(&session).map(|s| s != 'T'), Some(true));
    support::wait_idle(&mut c, &id).await;
    let live = budget_of(&mut c, "spender").await;
    assert_eq!(live["state"], "ok");
    assert!(live["available_usd"].as_f64().expect("available") > 0.5, "{live}");
    let (code, out, _) = warren(&["budget", "get", "spender", "--json"], &node.path());
    assert_eq!(code, 0);
    let cli: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(cli["state"], "ok");

    // The state is a replay of the log: a rebuild and a restart give the
    // same answer (the rate is zero, so nothing accrues meanwhile).
    node.kill9();
    let (code, _, err) = warren(&["admin", "rebuild"], &node.path());
    assert_eq!(code, 0, "{err}");
    node.restart();
    let mut c = node.client().await;
    let replayed = budget_of(&mut c, "spender").await;
    for k in ["usd_per_hour", "burst_usd", "available_usd", "state"] {
        assert_eq!(replayed[k], live[k], "{k}: {replayed} vs {live}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_without_a_budget_are_never_charged_or_paused() {
    let node = TestNode::start();
    let mut c = node.client().await;
    support::create_agent(&mut c, "free").await;
    let conv = start_idle(&mut c, "free").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let s = spend();
    support::send(&mut c, &id, &format!("{s}\n{s}\n{s}\n/fake say free done")).await;
    transcript_has(&node, &id, "free done").await;
    // The ledger saw the spend, and nothing was charged or paused.
    wait_until("the ledger has the requests", WAIT, || {
        let target = node.target();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let u = c
                .call("usage.get", json!({ "scope": "agent", "id": "free" }))
                .await
                .ok()?;
            (u["requests"] == 3).then_some(())
        }
    })
    .await;
    let b = budget_of(&mut c, "free").await;
    assert_eq!(b["state"], "ok");
    assert_eq!(b["budgeted"], false);
    support::send(&mut c, &id, "/fake say still free").await;
}
