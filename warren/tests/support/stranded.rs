//! The "never stranded" scenarios, for any harness on any runtime: a wrong
//! `program` is named at `warren up` and by the launch error, and after the
//! fix the never-started conversation comes up fresh with its reference; a
//! session file deleted behind the node's back makes `continue` fail with
//! the CLI's own words, and `continue --fresh` recovers the conversation with
//! its transcript intact.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use warren::client::Client;

use super::*;

/// The launch error code (`console_api::ErrorCode::LaunchFailed`).
pub const LAUNCH_FAILED: i64 = -32014;

/// warren.toml for a CLI: with `program` set when given, else the working setup.
pub type ConfigFn = Box<dyn Fn(Option<&Path>) -> String>;

/// A CLI under test.
pub struct Cli {
    pub harness: &'static str,
    pub runtime: &'static str,
    pub config: ConfigFn,
    /// The start of the CLI's reply to a message.
    pub reply_prefix: fn(&str) -> String,
}

impl Cli {
    /// The CLI's session file(s) for `resume_ref` under the agent's home:
    /// `<ref>.jsonl` (Claude Code's layout, which the fake CLI shares), or
    /// the rollouts of the conversation's own Codex home.
    fn session_files(&self, home: &Path, resume_ref: &str) -> Vec<PathBuf> {
        match self.harness {
            "codex" => find_files(&home.join(".codex/threads").join(resume_ref).join("sessions"), &|n| {
                n.starts_with("rollout-") && n.ends_with(".jsonl")
            }),
            _ => find_files(home, &|n| n == format!("{resume_ref}.jsonl")),
        }
    }

    /// How the CLI says a resumed session is missing.
    fn missing_words(&self) -> &'static str {
        match self.harness {
            "codex" => "No saved session found with ID",
            _ => "No conversation found with session ID",
        }
    }

    async fn say_and_hear(&self, c: &mut Client, id: &str, text: &str) {
        wait_idle(c, id).await;
        send(c, id, text).await;
        let want = (self.reply_prefix)(text);
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let events = transcript(c, id).await;
            if events
                .iter()
                .any(|e| e["speaker"] == "agent" && e["text"].as_str().is_some_and(|t| t.starts_with(&want)))
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no reply starting {want:?}: {events:#?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

fn node_log(node: &TestNode) -> String {
    std::fs::read_to_string(node.path().join("node.log")).unwrap_or_default()
}

/// Rewrites the node's warren.toml (a Docker test node keeps its `[docker]`
/// test settings, as `TestNode::start_on` writes them).
fn rewrite_config(node: &TestNode, toml: &str) {
    let mut toml = toml.to_string();
    if node.runtime == "docker" && !toml.contains("[docker]") {
        toml.push_str("\n[docker]\nreap_interval_secs = 1\nreadopt_grace_secs = 0\n");
    }
    std::fs::write(node.path().join("warren.toml"), toml).expect("rewrite warren.toml");
}

/// The files under `dir` whose name `pick` accepts.
fn find_files(dir: &Path, pick: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = vec![];
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(find_files(&p, pick));
        } else if p.file_name().and_then(|n| n.to_str()).is_some_and(pick) {
            out.push(p);
        }
    }
    out
}

pub async fn a_wrong_program_is_named_and_the_fix_starts_fresh(cli: &Cli) {
    let not_a_program = tempfile::tempdir().expect("a directory to name as the program");
    let mut node = TestNode::start_on(cli.runtime, &(cli.config)(Some(not_a_program.path())));
    let setting = format!("[harnesses.{}] program", cli.harness);
    // `warren up` says so (a Docker node checks its image in the background).
    let warning = wait_until(
        "the start-up warning about the program",
        Duration::from_secs(60),
        || {
            let log = node_log(&node);
            let setting = setting.clone();
            async move {
                log.lines()
                    .find(|l| l.starts_with("warning: ") && l.contains(&setting))
                    .map(str::to_string)
            }
        },
    )
    .await;
    let dir = not_a_program.path().display().to_string();
    let name = not_a_program
        .path()
        .file_name()
        .expect("name")
        .to_string_lossy()
        .to_string();
    assert!(warning.contains(&dir) || warning.contains(&name), "{warning}");

    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "strand", "harness": cli.harness }),
    )
    .await;
    // The CLI reports the distinct code and the setting to fix.
    let (code, out, err) = warren(&["--json", "conv", "start", "strand"], &node.path());
    assert_eq!(code, 1, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    let error = &answer["error"];
    assert_eq!(error["code"], LAUNCH_FAILED, "{answer}");
    let setting_key = format!("harnesses.{}.program", cli.harness);
    assert_eq!(error["data"]["setting"], setting_key.as_str(), "{answer}");
    let message = error["message"].as_str().expect("message");
    assert!(
        message.contains("program") && message.contains("could not launch the CLI"),
        "{message}"
    );
    let (code, _, err) = warren(&["conv", "start", "strand"], &node.path());
    assert_eq!(code, 1);
    assert!(
        err.contains("error -32014") && err.contains(&format!("setting to fix: {setting_key}")),
        "{err}"
    );

    let list = call(&mut c, "conversation.list", json!({ "agent": "strand" })).await;
    let convs = list["conversations"].as_array().expect("conversations").clone();
    assert_eq!(convs.len(), 2, "each refused start is recorded: {list}");
    for conv in &convs {
        assert_eq!(conv["state"], "paused");
        assert!(
            conv["pause_reason"]
                .as_str()
                .is_some_and(|r| r.starts_with("launch failed: ")),
            "{conv}"
        );
    }
    let first = convs[0].clone();
    let id = first["id"].as_str().expect("id").to_string();

    // The fix, then `continue` of the conversation whose CLI never started.
    node.kill9();
    rewrite_config(&node, &(cli.config)(None));
    node.restart();
    let mut c = node.client().await;
    let got = call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    assert_eq!(got["conversation"]["state"], "active", "{got}");
    assert_eq!(
        got["conversation"]["resume_ref"], first["resume_ref"],
        "the same reference"
    );
    let events = transcript(&mut c, &id).await;
    assert!(
        events.iter().any(|e| e["speaker"] == "system"
            && e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("launched fresh: the CLI never wrote session"))),
        "{events:#?}"
    );
    cli.say_and_hear(&mut c, &id, "hello after the fix").await;
    assert!(!node_log(&node).contains("panicked"));
}

pub async fn a_deleted_session_fails_resume_and_continue_fresh_recovers(cli: &Cli) {
    let node = TestNode::start_on(cli.runtime, &(cli.config)(None));
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "keeper", "harness": cli.harness }),
    )
    .await;
    let conv = start_idle(&mut c, "keeper").await;
    let id = conv["id"].as_str().expect("id").to_string();
    let old_ref = conv["resume_ref"].as_str().expect("resume_ref").to_string();
    cli.say_and_hear(&mut c, &id, "remember this").await;
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let before = transcript(&mut c, &id).await;

    // Behind the node's back.
    let home = node.path().join("agents/keeper/home");
    let files = cli.session_files(&home, &old_ref);
    assert_eq!(
        files.len(),
        1,
        "one session file for {old_ref} under {}",
        home.display()
    );
    std::fs::remove_file(&files[0]).expect("delete the session file");

    let e = call_err(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    assert_eq!(e.code, LAUNCH_FAILED, "{e}");
    assert!(e.message.contains("resume failed: "), "{e}");
    assert!(e.message.contains(cli.missing_words()), "the CLI's words: {e}");
    assert!(e.message.contains("--fresh"), "says the way out: {e}");

    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await["conversation"].clone();
    assert_eq!(got["state"], "paused");
    let reason = got["pause_reason"].as_str().expect("pause_reason");
    assert!(
        reason.starts_with(&format!("resume failed: {}", cli.missing_words())),
        "{got}"
    );
    assert!(got["exit_code"].as_i64().is_some_and(|c| c != 0), "{got}");
    assert!(
        got["last_lines"]
            .as_array()
            .is_some_and(|l| l.iter().any(|l| l.as_str().is_some_and(|l| l.contains(&old_ref)))),
        "{got}"
    );
    let list = call(&mut c, "conversation.list", json!({ "agent": "keeper" })).await;
    assert_eq!(list["conversations"][0]["pause_reason"], reason);
    let events = transcript(&mut c, &id).await;
    assert!(
        events
            .iter()
            .any(|e| e["speaker"] == "system" && e["text"] == format!("paused: {reason}")),
        "{events:#?}"
    );
    let (code, out, _) = warren(&["conv", "get", &id], &node.path());
    assert_eq!(code, 0);
    assert!(out.contains("resume failed: "), "{out}");

    // A plain continue fails the same way again; --fresh recovers.
    let (code, out, err) = warren(&["conv", "continue", &id, "--fresh"], &node.path());
    assert_eq!(code, 0, "{out}{err}");
    let got = call(&mut c, "conversation.get", json!({ "conversation": id })).await["conversation"].clone();
    assert_eq!(got["state"], "active", "{got}");
    assert_ne!(got["resume_ref"], old_ref.as_str(), "a new CLI session");
    let after = transcript(&mut c, &id).await;
    assert_eq!(&after[..before.len()], &before[..], "the transcript is intact");
    assert!(
        after.iter().any(|e| e["speaker"] == "system"
            && e["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("continued fresh: the CLI's own context was not restored"))),
        "{after:#?}"
    );
    cli.say_and_hear(&mut c, &id, "start over").await;
    // The new session's lines are read from its own file, from its start.
    let last = transcript(&mut c, &id).await;
    assert!(
        last.iter()
            .any(|e| e["speaker"] == "human" && e["text"] == "start over"),
        "{last:#?}"
    );
}

pub async fn a_harness_without_an_adapter_is_refused(runtime: &'static str) {
    let node = TestNode::start_on(runtime, "");
    let mut c = node.client().await;
    let e = call_err(&mut c, "agent.create", json!({ "name": "cx", "harness": "gemini" })).await;
    assert_eq!(e.code, -32602, "{e}");
    assert!(e.message.starts_with("harness: "), "{e}");
    assert!(e.message.contains("no gemini adapter"), "{e}");
    let (code, _, err) = warren(&["agent", "create", "cx", "--harness", "gemini"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("harness: ") && err.contains("gemini"), "{err}");
    let list = call(&mut c, "agent.list", json!({})).await;
    assert_eq!(
        list["agents"].as_array().map(Vec::len),
        Some(0),
        "nothing stored: {list}"
    );
}
