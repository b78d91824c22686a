//! The node's spend ledger on a real node: session files written into an
//! agent's home (as Claude Code would, under `<home>/.claude/projects/`, and a
//! Codex home under `<home>/.codex`) are indexed in the background;
//! `spend.history`, `warren spend` and `usage.get` at agent and node scope
//! answer from the ledger with the bundled prices; an append adds only the new
//! request; a deleted file's requests stay; bad days are -32602.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::{TestNode, call, call_err, create_agent, wait_until};
use warren::client::Client;

const WAIT: Duration = Duration::from_secs(30);

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../spend/tests/fixtures")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read fixture dir") {
        let e = e.expect("entry");
        let dest = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).expect("copy fixture");
        }
    }
}

fn projects_of(node: &TestNode, agent: &str) -> PathBuf {
    node.path().join("agents").join(agent).join("home/.claude/projects")
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// One complete Claude Code assistant line of Sonnet 4.5 on 2026-11-20.
fn line(session: &str, msg: &str, input: u64, output: u64) -> String {
    json!({
        "parentUuid": null, "isSidechain": false, "userType": "external", "cwd": "/w/repo",
        "sessionId": session, "version": "2.1.3", "type": "assistant",
        "message": {
            "id": msg, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn", "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": output, "service_tier": "standard"},
        },
        "uuid": format!("u-{msg}"), "timestamp": "2026-11-20T09:00:00.000Z", "requestId": format!("req_{msg}"),
    })
    .to_string()
        + "\n"
}

fn offline_scan(dir: &Path) -> Value {
    let out = std::process::Command::new(support::EXE)
        .args(["spend", "scan", dir.to_str().expect("utf-8"), "--json"])
        .env_remove("WARREN_URL")
        .env_remove("WARREN_TOKEN")
        .output()
        .expect("run warren spend scan");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("scan JSON")
}

/// Polls `spend.history` with `params` until `want` holds; returns the answer.
async fn history_until(node: &TestNode, what: &str, params: Value, want: impl Fn(&Value) -> bool) -> Value {
    support::call_until(node, what, WAIT, "spend.history", params, want).await
}

fn rows(v: &Value) -> Vec<Value> {
    v["days"].as_array().cloned().unwrap_or_default()
}

fn requests(v: &Value) -> u64 {
    rows(v).iter().filter_map(|r| r["requests"].as_u64()).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_indexes_homed_session_files_and_keeps_them() {
    let mut node = TestNode::start();
    let mut c = node.client().await;
    create_agent(&mut c, "ada").await;
    create_agent(&mut c, "bob").await;
    create_agent(&mut c, "cody").await;

    // ada: the spend crate's Claude fixture home (13 counted requests, one
    // unparseable file, one model without a price).
    let claude_home = node.path().join("agents/ada/home/.claude");
    copy_dir(&fixture("claude-home/projects"), &claude_home.join("projects"));
    let all = json!({"since_day": "2000-01-01", "agent": "ada"});
    let h = history_until(&node, "ada's fixture requests in the ledger", all, |h| {
        requests(h) == 13 && h["unparseable_files"] == 1
    })
    .await;
    assert_eq!(h["pricing"]["source"], "bundled");
    assert_eq!(h["unpriced_models"], json!(["claude-nova-9"]));
    assert!(rows(&h).iter().all(|r| r["agent"] == "ada"), "{h}");
    // Sonnet 4.5: B1 (with 1-hour writes) + B5, by hand (dollars per million).
    let s45: Vec<Value> = rows(&h)
        .into_iter()
        .filter(|r| r["model"] == "claude-sonnet-4-5-20250929")
        .collect();
    let cache_read: u64 = s45.iter().filter_map(|r| r["cache_read"].as_u64()).sum();
    let cw1h: u64 = s45.iter().filter_map(|r| r["cache_write_1h"].as_u64()).sum();
    let usd: f64 = s45.iter().filter_map(|r| r["usd"].as_f64()).sum();
    assert_eq!((cache_read, cw1h), (20_100, 4000));
    close(
        usd,
        (3.0 * 3.0 + 20_000.0 * 0.3 + 1000.0 * 3.75 + 4000.0 * 6.0 + 150.0 * 15.0) / 1e6
            + (7.0 * 3.0 + 100.0 * 0.3 + 60.0 * 15.0) / 1e6,
    );
    // The node's numbers are the offline scan's, row by row.
    let offline = offline_scan(&claude_home);
    close(h["usd"].as_f64().expect("usd"), offline["usd"].as_f64().expect("usd"));
    let strip = |v: &Value| {
        rows(v)
            .into_iter()
            .map(|mut r| {
                r["agent"] = Value::Null;
                r
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&h), strip(&offline));
    assert_eq!(h["unparseable_files"], offline["unparseable_files"]);

    // `warren spend` asks the node and rolls up the same rows.
    let (code, out, err) = support::warren(
        &[
            "spend",
            "--since",
            "2000-01-01",
            "--agent",
            "ada",
            "--by",
            "model",
            "--json",
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{err}{out}");
    let cli: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("no JSON ({e}): {out}"));
    close(cli["usd"].as_f64().expect("usd"), h["usd"].as_f64().expect("usd"));
    let by_s45 = cli["by"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["label"] == "claude-sonnet-4-5-20250929"))
        .unwrap_or_else(|| panic!("no Sonnet 4.5 in {}", cli["by"]))
        .clone();
    assert_eq!(by_s45["requests"], 2);
    close(by_s45["usd"].as_f64().expect("usd"), usd);
    let (code, out, err) = support::warren(&["spend", "--since", "2000-01-01", "--by", "agent"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    assert!(
        out.contains("ada") && out.contains('█') && out.contains("claude-nova-9"),
        "{out}"
    );
    let (code, out, err) = support::warren(&["spend", "--since", "01/01/2026"], &node.path());
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("since_day"), "{err}");

    // cody: a Codex home (rollouts, archived `.zst`s, a fork, re-emits):
    // 7 counted requests and 2 unparseable files, as the offline scan says.
    let codex_home = node.path().join("agents/cody/home/.codex");
    copy_dir(&fixture("codex-home"), &codex_home);
    let offline = offline_scan(&codex_home);
    assert_eq!(
        (offline["requests"].as_u64(), offline["unparseable_files"].as_u64()),
        (Some(7), Some(2))
    );
    let cody = history_until(
        &node,
        "cody's Codex requests in the ledger",
        json!({"since_day": "2000-01-01", "agent": "cody"}),
        |h| requests(h) == 7 && h["unparseable_files"] == 2,
    )
    .await;
    assert_eq!(strip(&cody), strip(&offline));
    close(
        cody["usd"].as_f64().expect("usd"),
        offline["usd"].as_f64().expect("usd"),
    );

    // bob: a file of one request, then one appended: only the new one adds.
    let dir = projects_of(&node, "bob").join("-w-repo");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let session = "55555555-5555-4555-8555-555555555555";
    let file = dir.join(format!("{session}.jsonl"));
    std::fs::write(&file, line(session, "msg_B1", 1000, 100)).expect("write");
    let day = json!({"since_day": "2026-11-20", "until_day": "2026-11-20", "agent": "bob"});
    let seen = |what: &'static str, want: u64| {
        let day = day.clone();
        let node = &node;
        async move { history_until(node, what, day, |h| requests(h) == want).await }
    };
    let one = seen("bob's first request", 1).await;
    close(one["usd"].as_f64().expect("usd"), (1000.0 * 3.0 + 100.0 * 15.0) / 1e6);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new().append(true).open(&file).expect("open");
        f.write_all(line(session, "msg_B2", 2000, 200).as_bytes())
            .expect("append");
    }
    let two = seen("bob's appended request", 2).await;
    let r = &rows(&two)[0];
    assert_eq!((r["input"].as_u64(), r["output"].as_u64()), (Some(3000), Some(300)));
    let bob_usd = (3000.0 * 3.0 + 300.0 * 15.0) / 1e6;
    close(two["usd"].as_f64().expect("usd"), bob_usd);

    // The CLI deletes its old session file; a later file is indexed (so a
    // tick has passed since) and the deleted file's requests are still there.
    std::fs::remove_file(&file).expect("rm");
    let later = "66666666-6666-4666-8666-666666666666";
    std::fs::write(dir.join(format!("{later}.jsonl")), line(later, "msg_C1", 10, 10)).expect("write");
    let three = seen("bob's later file", 3).await;
    close(
        three["usd"].as_f64().expect("usd"),
        bob_usd + (10.0 * 3.0 + 10.0 * 15.0) / 1e6,
    );

    // usage.get: the agent's sums and the node's sum of both agents.
    let bob = call(&mut c, "usage.get", json!({"scope": "agent", "id": "bob"})).await;
    assert_eq!(
        bob["tokens"],
        json!({"input": 3010, "cache_read": 0, "cache_write": 0, "output": 310})
    );
    close(bob["usd"].as_f64().expect("usd"), three["usd"].as_f64().expect("usd"));
    let ada = call(&mut c, "usage.get", json!({"scope": "agent", "id": "ada"})).await;
    close(ada["usd"].as_f64().expect("usd"), h["usd"].as_f64().expect("usd"));
    assert_eq!(ada["unpriced_models"], json!(["claude-nova-9"]));
    let whole = call(&mut c, "usage.get", json!({"scope": "node"})).await;
    let cody = call(&mut c, "usage.get", json!({"scope": "agent", "id": "cody"})).await;
    close(
        whole["usd"].as_f64().expect("usd"),
        ada["usd"].as_f64().expect("usd") + bob["usd"].as_f64().expect("usd") + cody["usd"].as_f64().expect("usd"),
    );
    assert_eq!(whole["requests"], 13 + 3 + 7);
    let sum = |k: &str| {
        [&ada, &bob, &cody]
            .iter()
            .map(|v| v["tokens"][k].as_u64().unwrap_or(0))
            .sum::<u64>()
    };
    for k in ["input", "cache_read", "cache_write", "output"] {
        assert_eq!(whole["tokens"][k].as_u64(), Some(sum(k)), "{k}");
    }
    let e = call_err(&mut c, "usage.get", json!({"scope": "agent", "id": "nobody"})).await;
    assert_eq!(e.code, -32004, "{}", e.message);

    // A conversation's CLI session (its resume reference is the session id)
    // is that conversation's usage.
    let conv = support::start_idle(&mut c, "bob").await;
    let (cid, sid) = (
        conv["id"].as_str().expect("id").to_string(),
        conv["resume_ref"].as_str().expect("resume_ref").to_string(),
    );
    let other = projects_of(&node, "bob").join("-w-other");
    std::fs::create_dir_all(&other).expect("mkdir");
    std::fs::write(other.join("session-of-conv.jsonl"), line(&sid, "msg_D1", 100, 20)).expect("write");
    let per_conv = wait_until("the conversation's request in the ledger", WAIT, || {
        let target = node.target();
        let cid = cid.clone();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let v = c
                .call("usage.get", json!({"scope": "conversation", "id": cid}))
                .await
                .ok()?;
            (v["requests"] == 1).then_some(v)
        }
    })
    .await;
    assert_eq!(
        per_conv["tokens"],
        json!({"input": 100, "cache_read": 0, "cache_write": 0, "output": 20})
    );
    close(
        per_conv["usd"].as_f64().expect("usd"),
        (100.0 * 3.0 + 20.0 * 15.0) / 1e6,
    );
    let whole = call(&mut c, "usage.get", json!({"scope": "node"})).await;
    assert_eq!(whole["requests"], 13 + 3 + 7 + 1);

    // A node killed (-9) and restarted keeps the ledger (the deleted file's requests too) and
    // continues each file from its saved state: one more line adds one.
    drop(c);
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    let again = call(&mut c, "usage.get", json!({"scope": "node"})).await;
    assert_eq!(again["requests"], whole["requests"]);
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(format!("{later}.jsonl")))
            .expect("open");
        f.write_all(line(later, "msg_C2", 10, 10).as_bytes()).expect("append");
    }
    // bob's day: B1, B2, C1, the conversation's D1, and now C2.
    let five = history_until(&node, "bob's request after the restart", day.clone(), |h| {
        requests(h) == 5
    })
    .await;
    close(
        five["usd"].as_f64().expect("usd"),
        bob_usd + 2.0 * (10.0 * 3.0 + 10.0 * 15.0) / 1e6 + (100.0 * 3.0 + 20.0 * 15.0) / 1e6,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_days_are_refused_naming_the_field() {
    let node = TestNode::start();
    let mut c = node.client().await;
    for (params, field) in [
        (json!({"since_day": "2026-1-1"}), "since_day"),
        (json!({"since_day": "2026-01-01", "until_day": "tomorrow"}), "until_day"),
        (json!({"since_day": "2026-02-30T00:00:00Z"}), "since_day"),
    ] {
        let e = call_err(&mut c, "spend.history", params.clone()).await;
        assert_eq!(e.code, -32602, "{params}");
        assert!(e.message.contains(field), "{params}: {}", e.message);
    }
    let e = call_err(&mut c, "spend.history", json!({})).await;
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("since_day"), "{}", e.message);
    // A node with no session files answers an empty history.
    let h = call(&mut c, "spend.history", json!({"since_day": "2026-01-01"})).await;
    assert_eq!((rows(&h).len(), h["unparseable_files"].as_u64()), (0, Some(0)));
}
