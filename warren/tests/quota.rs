//! Live quota on a real node: a Codex rollout's `rate_limits` (written into
//! an agent's Codex home, as Codex writes them) and a Claude-style
//! usage-limit screen (the fake CLI's, under supervision) become `usage.get`
//! quota metrics at conversation, agent and node scope, with their windows
//! and reset times; `warren usage` shows them; a window that has reset is
//! not shown.

mod support;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use support::{TestNode, call, conversation_id, create_agent, warren};

const WAIT: Duration = Duration::from_secs(30);

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() as i64
}

fn stamp(ms: i64) -> String {
    spend::quota::rfc3339(ms).replace('Z', ".000Z")
}

/// A Codex rollout observed at `at_ms`: one turn, then its rate limits.
fn rollout(session: &str, at_ms: i64, primary: f64, resets_in_secs: i64) -> String {
    let t = stamp(at_ms);
    [
        json!({"timestamp": t, "type": "session_meta", "payload": {"id": session, "timestamp": t, "cwd": "/w/repo", "originator": "codex_cli_rs", "cli_version": "0.63.0"}}),
        json!({"timestamp": t, "type": "turn_context", "payload": {"cwd": "/w/repo", "model": "gpt-5-codex"}}),
        json!({"timestamp": t, "type": "event_msg", "payload": {"type": "token_count",
            "info": {"total_token_usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 50, "reasoning_output_tokens": 10, "total_tokens": 1050},
                     "last_token_usage": {"input_tokens": 1000, "cached_input_tokens": 400, "output_tokens": 50, "reasoning_output_tokens": 10, "total_tokens": 1050}},
            "rate_limits": {"primary": {"used_percent": primary, "window_minutes": 300, "resets_in_seconds": resets_in_secs},
                            "secondary": {"used_percent": 12.0, "window_minutes": 10080, "resets_in_seconds": 500_000}}}}),
    ]
    .iter()
    .map(|l| format!("{l}\n"))
    .collect()
}

fn write_rollout(node: &TestNode, agent: &str, session: &str, body: &str) {
    let day = spend::time::utc_day(now_ms()).replace('-', "/");
    let dir = node
        .path()
        .join("agents")
        .join(agent)
        .join("home/.codex/sessions")
        .join(day);
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(format!("rollout-2026-12-01T10-00-00-{session}.jsonl")), body).expect("write rollout");
}

async fn quota_until(node: &TestNode, params: Value, what: &str, want: impl Fn(&[Value]) -> bool) -> Value {
    support::call_until(node, what, WAIT, "usage.get", params, |u| {
        u["quota"].as_array().is_some_and(|q| want(q))
    })
    .await
}

fn named<'q>(quota: &'q Value, name: &str) -> Option<&'q Value> {
    quota["quota"].as_array()?.iter().find(|q| q["name"] == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_rate_limits_and_the_claude_limit_screen_are_quota_metrics() {
    let node = TestNode::start_with_config("[supervision]\nenabled = true\n");
    let mut c = node.client().await;
    create_agent(&mut c, "cody").await;
    create_agent(&mut c, "old").await;

    // Codex: the newest rate limits of its rollout, 5-hour and weekly.
    let at = now_ms() - 60_000;
    write_rollout(
        &node,
        "cody",
        "019ad000-0000-7000-8000-00000000c0de",
        &rollout("019ad000-0000-7000-8000-00000000c0de", at, 37.5, 3600),
    );
    // Another agent whose 5-hour window reset an hour ago: not shown.
    let stale = now_ms() - 6 * 3_600_000;
    write_rollout(
        &node,
        "old",
        "019ad000-0000-7000-8000-0000000001d0",
        &rollout("019ad000-0000-7000-8000-0000000001d0", stale, 99.0, 5 * 3600),
    );
    let u = quota_until(
        &node,
        json!({"scope": "agent", "id": "cody"}),
        "cody's rate limits",
        |q| q.len() == 2,
    )
    .await;
    let p = named(&u, "codex.primary").expect("primary");
    assert_eq!(
        (
            p["used"].clone(),
            p["limit"].clone(),
            p["unit"].clone(),
            p["window"].clone(),
            p["agent"].clone()
        ),
        (json!(37.5), json!(100), json!("percent"), json!("5h"), json!("cody")),
        "{u:#}"
    );
    assert_eq!(p["resets_at"], spend::quota::rfc3339(at + 3_600_000), "{u:#}");
    let s = named(&u, "codex.secondary").expect("secondary");
    assert_eq!(
        (s["used"].clone(), s["window"].clone()),
        (json!(12.0), json!("7d")),
        "{u:#}"
    );
    // The stale agent's tokens count, its reset window does not.
    let old = quota_until(&node, json!({"scope": "agent", "id": "old"}), "old's usage", |_| true).await;
    let old_secondary = named(&old, "codex.secondary").cloned();
    assert!(
        named(&old, "codex.primary").is_none(),
        "a reset window is not shown: {old:#}"
    );
    assert!(old_secondary.is_some(), "its weekly window has not reset: {old:#}");
    // The node: every agent's current windows.
    let n = call(&mut c, "usage.get", json!({"scope": "node"})).await;
    let names: Vec<(String, String)> = n["quota"]
        .as_array()
        .expect("quota")
        .iter()
        .map(|q| {
            (
                q["agent"].as_str().unwrap_or("").into(),
                q["name"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert_eq!(names.len(), 3, "{n:#}");
    assert!(names.contains(&("cody".into(), "codex.primary".into())), "{n:#}");

    // Claude-style: the fake CLI's usage-limit screen, seen by supervision
    // (held as a decision for a human), is the conversation's quota.
    create_agent(&mut c, "lim").await;
    let (code, out, err) = warren(&["supervision", "set", "lim", "--enable"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    let id = conversation_id(&mut c, "lim").await;
    support::send(&mut c, &id, "/fake limit").await;
    let u = quota_until(
        &node,
        json!({"scope": "conversation", "id": id}),
        "the usage-limit screen as quota",
        |q| q.iter().any(|q| q["name"] == "claude.usage_limit"),
    )
    .await;
    let l = named(&u, "claude.usage_limit").expect("limit");
    assert_eq!(
        (l["used"].clone(), l["agent"].clone()),
        (json!(100.0), json!("lim")),
        "{u:#}"
    );
    // "resets 3pm (UTC)": the next 15:00 UTC.
    let resets = l["resets_at"].as_str().expect("a reset time");
    assert!(resets.ends_with("T15:00:00Z"), "{resets}");
    assert!(resets > spend::quota::rfc3339(now_ms()).as_str(), "{resets} is ahead");
    let a = call(&mut c, "usage.get", json!({"scope": "agent", "id": "lim"})).await;
    assert!(named(&a, "claude.usage_limit").is_some(), "{a:#}");

    // The CLI shows the same, with bars.
    let (code, out, err) = warren(&["usage", "--agent", "cody"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("codex.primary") && out.contains("37.5%") && out.contains("5h window"),
        "{out}"
    );
    let (code, out, err) = warren(&["usage", "--json"], &node.path());
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["quota"].as_array().map(Vec::len), Some(4), "{v:#}");
}
