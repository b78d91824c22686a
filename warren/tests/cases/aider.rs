// The real aider tier, included by one test binary per runtime (aider.rs: a
// local PTY; docker_aider.rs: the `aider` guest image).

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;
use warren::client::Client;

const API_KEY: &str = "sk-warren-aider-test-0123456789";
const AGENT: &str = "ad";
/// A model litellm has prices for (its bundled table): aider reports a cost.
const MODEL: &str = "gpt-4o-mini";
/// Input tokens the fake model reports for every request.
const FAKE_INPUT_TOKENS: u64 = 42;

async fn aider_node(model: &fake_model::FakeModel) -> (TestNode, String) {
    // Local CLIs reach the model on loopback; guests reach the host by its
    // standard name (the model listens on every interface for them).
    let (program, url) = match RUNTIME {
        "docker" => (
            format!("image = {:?}\n", guest_image("aider")),
            format!("http://host.docker.internal:{}/v1", model.addr().port()),
        ),
        _ => (
            format!("program = {:?}\n", aider_bin()),
            format!("{}/v1", model.base_url()),
        ),
    };
    // aider reads any option from AIDER_* variables: the fake model answers
    // in the SEARCH/REPLACE ("diff") edit format, which also has shell commands.
    let node = TestNode::start_on(
        RUNTIME,
        &format!(
            "[supervision]\nenabled = true\n\n[harnesses.aider]\n{program}\n[harnesses.aider.env]\n\
             OPENAI_API_BASE = {url:?}\nOPENAI_API_KEY = {API_KEY:?}\nAIDER_EDIT_FORMAT = \"diff\"\n",
        ),
    );
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": AGENT, "harness": "aider", "model": MODEL }),
    )
    .await;
    let (code, out, err) = warren(&["supervision", "set", AGENT, "--enable"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    let id = started(&mut c).await;
    (node, id)
}

/// Starts the agent's conversation and waits (aider takes a few seconds to
/// start) until it is IDLE.
async fn started(c: &mut Client) -> String {
    let conv = call(c, "conversation.start", json!({ "agent": AGENT })).await["conversation"].clone();
    let id = conv["id"].as_str().expect("id").to_string();
    idle(c, &id).await;
    id
}

async fn idle(c: &mut Client, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
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

async fn screen_text(c: &mut Client, id: &str) -> String {
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

fn shown(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| format!("{} {} {}: {}", e["seq"], e["speaker"], e["kind"], e["text"]))
        .collect()
}

/// Sends `text` once aider is idle; returns the transcript seq it was
/// recorded at (as the human's message, from aider's chat history).
async fn say(c: &mut Client, id: &str, text: &str) -> u64 {
    idle(c, id).await;
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
async fn event_after(c: &mut Client, id: &str, after: u64, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
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
async fn reply_starting(c: &mut Client, id: &str, after: u64, prefix: &str) -> String {
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

/// aider's own output after seq `after` that contains `needle`.
async fn tool_output_with(c: &mut Client, id: &str, after: u64, needle: &str) -> Value {
    event_after(c, id, after, needle, |e| {
        e["speaker"] == "tool" && e["text"].as_str().is_some_and(|t| t.contains(needle))
    })
    .await
}

/// The newest audit row whose subject starts with `subject`.
async fn audit_for(c: &mut Client, id: &str, subject: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let a = call(c, "supervision.audit", json!({ "agent": AGENT })).await;
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

async fn hold_id(c: &mut Client, subject: &str) -> String {
    let holds = call(c, "supervision.holds", json!({ "agent": AGENT })).await;
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
fn row_shape(row: &Value) -> (&str, &str, bool, &str, &str, &str) {
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
async fn usage_after(c: &mut Client, id: &str, turns: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let u = call(c, "usage.get", json!({ "scope": "conversation", "id": id })).await;
        if u["turns"].as_u64() >= Some(turns) {
            return u;
        }
        assert!(Instant::now() < deadline, "usage never reached {turns} turns: {u}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_aider_is_supervised_against_a_fake_model() {
    let listen = if RUNTIME == "docker" {
        "0.0.0.0:0"
    } else {
        "127.0.0.1:0"
    };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (node, id) = aider_node(&model).await;
    let mut c = node.client().await;
    let workspace = node.path().join("agents").join(AGENT).join("workspace");

    // A plain prompt round trip, attributed: the message as the human's,
    // the reply as the agent's, both read from aider's chat history.
    let at = say(&mut c, &id, "hello there").await;
    reply_starting(&mut c, &id, at, "You said: hello there").await;
    // A message of several lines is one message (aider writes one `#### `
    // line each), and so is the reply.
    let at = say(&mut c, &id, "first line\nsecond line").await;
    let reply = reply_starting(&mut c, &id, at, "You said: first line").await;
    assert_eq!(reply, "You said: first line\nsecond line");

    // A repo-scoped shell command: approved by supervision without a human
    // (its letter and Enter, never "Don't ask again"), and it runs.
    let at = say(&mut c, &id, "run: echo hi > ran.txt").await;
    let row = audit_for(&mut c, &id, "echo hi > ran.txt").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "command_exec", true, "approve", "class_policy", "sent"),
        "{row:#}"
    );
    assert_eq!(row["keys"], json!(["y\r"]), "{row:#}");
    tool_output_with(&mut c, &id, at, "Running echo hi > ran.txt").await;
    let ran = wait_until("the command ran", Duration::from_secs(20), || {
        let path = workspace.join("ran.txt");
        async move { std::fs::read_to_string(path).ok() }
    })
    .await;
    assert_eq!(ran, "hi\n");

    // Out of the repository's scope: held; a human denies it, aider is told no.
    let at = say(&mut c, &id, "run: cat /etc/passwd").await;
    let row = audit_for(&mut c, &id, "cat /etc/passwd").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "command_exec", false, "hold", "not_repo_scoped", "held"),
        "{row:#}"
    );
    let hold = hold_id(&mut c, "cat /etc/passwd").await;
    let answered = call(
        &mut c,
        "supervision.answer",
        json!({ "hold": hold, "decision": "deny" }),
    )
    .await;
    assert_eq!(
        (answered["outcome"].as_str(), answered["keys"].as_str()),
        (Some("sent"), Some("n\r"))
    );
    tool_output_with(&mut c, &id, at, "[Yes]: n").await;

    // A new file inside the worktree is approved and written...
    let at = say(&mut c, &id, "create: notes/new.txt").await;
    let row = audit_for(&mut c, &id, "notes/new.txt").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "file_write", true, "approve", "class_policy", "sent"),
        "{row:#}"
    );
    tool_output_with(&mut c, &id, at, "Applied edit to notes/new.txt").await;
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes/new.txt")).expect("created"),
        "created by the fake model\n"
    );
    // ...one outside it is held, and denied: aider skips it.
    let at = say(&mut c, &id, "create: ../outside.txt").await;
    let row = audit_for(&mut c, &id, "../outside.txt").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "file_write", false, "hold", "not_repo_scoped", "held"),
        "{row:#}"
    );
    let hold = hold_id(&mut c, "../outside.txt").await;
    let (code, out, err) = warren(&["supervision", "answer", &hold, "deny"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    tool_output_with(&mut c, &id, at, "Skipping edits to ../outside.txt").await;
    assert!(!workspace.join("../outside.txt").exists(), "nothing written outside");

    // Spend, from what aider reported: each turn's tokens as the model
    // counted them (aider runs --no-stream), and a cost (litellm prices the model).
    let turns = model.requests();
    assert_eq!(turns, 6, "one model request per message");
    let u = usage_after(&mut c, &id, turns).await;
    assert_eq!(u["turns"], turns, "{u}");
    assert_eq!(u["tokens"]["input"], FAKE_INPUT_TOKENS * turns, "{u}");
    assert!(u["tokens"]["output"].as_u64().is_some_and(|o| o >= turns), "{u}");
    assert!(u["usd"].as_f64().is_some_and(|usd| usd > 0.0), "{u}");
    assert_eq!(u["unpriced_models"], json!([]), "{u}");
    assert_eq!(u["quota"], json!([]), "{u}");
    let (code, out, err) = warren(&["usage", "--conversation", &id, "--json"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    let cli: Value = serde_json::from_str(&out).expect("--json");
    assert_eq!(cli["tokens"], u["tokens"]);

    // Pause, then continue: aider restores its own chat history, so the
    // model sees the earlier messages in its next request.
    idle(&mut c, &id).await;
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    let at = say(&mut c, &id, "recall: what did I say?").await;
    let recalled = reply_starting(&mut c, &id, at, "Earlier you said: ").await;
    assert!(
        recalled.contains("create: ../outside.txt") && recalled.contains("hello there"),
        "{recalled}"
    );
    let humans: Vec<String> = transcript(&mut c, &id)
        .await
        .iter()
        .filter(|e| e["speaker"] == "human")
        .filter_map(|e| e["text"].as_str().map(str::to_string))
        .collect();
    assert_eq!(
        humans,
        [
            "hello there",
            "first line\nsecond line",
            "run: echo hi > ran.txt",
            "run: cat /etc/passwd",
            "create: notes/new.txt",
            "create: ../outside.txt",
            "recall: what did I say?"
        ],
        "each message once, in order, across the resume"
    );
    // The relaunch read the usage file on from where it was: no turn twice.
    let u = usage_after(&mut c, &id, 7).await;
    assert_eq!((u["turns"].as_u64(), model.requests()), (Some(7), 7), "{u}");

    // The only key the model saw is the configured one.
    let keys = model.keys_seen();
    assert!(!keys.is_empty() && keys.iter().all(|k| k == API_KEY), "{keys:?}");
}
