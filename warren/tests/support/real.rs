//! Helpers the real-CLI tiers share (a real CLI is slower to start and to
//! answer than the fake one): waiting for IDLE with the screen in the
//! failure, saying something as the human, reading replies, tool output,
//! audit rows and holds, and usage once enough turns are recorded.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warren::client::Client;

use super::{call, transcript, wait_event};

/// Waits (up to `secs`) until the conversation is IDLE.
pub async fn idle_within(c: &mut Client, id: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let v = call(c, "conversation.get", json!({ "conversation": id })).await;
        if v["conversation"]["status"] == "IDLE" {
            return;
        }
        if Instant::now() > deadline {
            panic!("{id} never became IDLE: {v}\n{}", screen_text(c, id).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The screen as text, with its status (for failure messages).
pub async fn screen_text(c: &mut Client, id: &str) -> String {
    let screen = call(c, "conversation.screen", json!({ "conversation": id })).await;
    format!(
        "screen ({}):\n{}",
        screen["status"],
        screen["lines"]
            .as_array()
            .map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"))
            .unwrap_or_default()
    )
}

pub fn shown(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{} {} {}: {}", e["seq"], e["speaker"], e["kind"], e["text"]))
        .collect()
}

/// Sends `text` once the CLI is idle; returns the transcript seq it was
/// recorded at (as the human's message, read from the CLI's own file).
pub async fn say(c: &mut Client, id: &str, text: &str) -> u64 {
    idle_within(c, id, 60).await;
    if let Err(e) = c
        .call("conversation.sendMessage", json!({ "conversation": id, "text": text }))
        .await
    {
        panic!("sendMessage {text:?}: {e}\n{}", screen_text(c, id).await);
    }
    let event = wait_event(c, id, "human", text).await;
    assert_eq!(event["kind"], "message", "{event}");
    event["seq"].as_u64().expect("seq")
}

/// The first transcript event after seq `after` that `pick` accepts.
pub async fn event_after(c: &mut Client, id: &str, after: u64, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let events = transcript(c, id).await;
        if let Some(e) = events
            .iter()
            .filter(|e| e["seq"].as_u64().is_some_and(|s| s > after))
            .find(|e| pick(e))
        {
            return e.clone();
        }
        if Instant::now() > deadline {
            panic!(
                "no {what} after {after}: {:#?}\n{}",
                shown(&events),
                screen_text(c, id).await
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The first agent reply after seq `after`; checks it starts with `prefix`.
pub async fn reply_starting(c: &mut Client, id: &str, after: u64, prefix: &str) -> String {
    let e = event_after(c, id, after, "agent reply", |e| {
        e["speaker"] == "agent" && e["kind"] == "reply"
    })
    .await;
    let text = e["text"].as_str().unwrap_or_default().to_string();
    assert!(
        text.starts_with(prefix),
        "the reply after {after} is {text:?}, not {prefix:?}..."
    );
    text
}

/// Tool output after seq `after` that contains `needle`.
pub async fn tool_output_with(c: &mut Client, id: &str, after: u64, needle: &str) -> Value {
    event_after(c, id, after, needle, |e| {
        e["speaker"] == "tool" && e["text"].as_str().is_some_and(|t| t.contains(needle))
    })
    .await
}

/// The newest audit row of `agent` whose subject starts with `subject`.
pub async fn audit_for(c: &mut Client, agent: &str, id: &str, subject: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = call(c, "supervision.audit", json!({ "agent": agent })).await;
        if let Some(e) = a["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .find(|e| e["subject"].as_str().is_some_and(|s| s.starts_with(subject)))
        {
            return e.clone();
        }
        if Instant::now() > deadline {
            panic!("no audit row for {subject:?}: {a:#}\n{}", screen_text(c, id).await);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The id of `agent`'s hold whose summary is `subject`.
pub async fn hold_id(c: &mut Client, agent: &str, subject: &str) -> String {
    let holds = call(c, "supervision.holds", json!({ "agent": agent })).await;
    holds["holds"]
        .as_array()
        .expect("holds")
        .iter()
        .find(|h| h["summary"] == subject)
        .and_then(|h| h["id"].as_str())
        .unwrap_or_else(|| panic!("no hold for {subject:?}: {holds:#}"))
        .to_string()
}

/// `(trigger, class, repo_scoped, decision, policy_source, outcome)` of a row.
pub fn row_shape(row: &Value) -> (&str, &str, bool, &str, &str, &str) {
    (
        row["trigger"].as_str().unwrap_or_default(),
        row["dialog_class"].as_str().unwrap_or_default(),
        row["repo_scoped"].as_bool().unwrap_or_default(),
        row["decision"].as_str().unwrap_or_default(),
        row["policy_source"].as_str().unwrap_or_default(),
        row["outcome"].as_str().unwrap_or_default(),
    )
}

/// `usage.get` for the conversation once it has recorded `turns` turns.
pub async fn usage_after(c: &mut Client, id: &str, turns: u64) -> Value {
    usage_once(c, id, &format!("{turns} turns"), |u| u["turns"].as_u64() >= Some(turns)).await
}

/// `usage.get` for the conversation once `ready` accepts it (`what` names
/// what is awaited).
pub async fn usage_once(c: &mut Client, id: &str, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let u = call(c, "usage.get", json!({ "scope": "conversation", "id": id })).await;
        if ready(&u) {
            return u;
        }
        assert!(Instant::now() < deadline, "usage never reached {what}: {u}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Runs git in `dir`, failing loudly; its stdout.
pub fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository `proj` with one commit on `main` in a new temp dir, and
/// for a guest, owned by an ordinary user (uid 1000: the guest runs as that
/// user) with `[workspaces] root` there (returned as extra warren.toml):
/// (the temp dir, the base commit, the extra config).
pub fn task_repo(runtime: &str) -> (tempfile::TempDir, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let repo = tmp.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo");
    git_in(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# proj\n").expect("readme");
    git_in(&repo, &["add", "-A"]);
    git_in(&repo, &["commit", "-qm", "first"]);
    let base = git_in(&repo, &["rev-parse", "HEAD"]);
    let worktrees = tmp.path().join("worktrees");
    std::fs::create_dir_all(&worktrees).expect("worktrees");
    let mut extra = String::new();
    if runtime == "docker" {
        for p in [&repo, &worktrees] {
            let st = std::process::Command::new("chown")
                .args(["-R", "1000:1000", &p.display().to_string()])
                .status()
                .expect("chown");
            assert!(st.success());
        }
        extra = format!("\n[workspaces]\nroot = {:?}\n", worktrees.display().to_string());
    }
    (tmp, base, extra)
}
