// The real aider tier, included by one test binary per runtime (aider.rs: a
// local PTY; docker_aider.rs: the `aider` guest image).

use std::time::Duration;

use serde_json::{Value, json};
use support::real::*;
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
    idle_within(c, &id, 60).await;
    id
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
    let row = audit_for(&mut c, AGENT, &id, "echo hi > ran.txt").await;
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
    let row = audit_for(&mut c, AGENT, &id, "cat /etc/passwd").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "command_exec", false, "hold", "not_repo_scoped", "held"),
        "{row:#}"
    );
    let hold = hold_id(&mut c, AGENT, "cat /etc/passwd").await;
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
    let row = audit_for(&mut c, AGENT, &id, "notes/new.txt").await;
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
    let row = audit_for(&mut c, AGENT, &id, "../outside.txt").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "file_write", false, "hold", "not_repo_scoped", "held"),
        "{row:#}"
    );
    let hold = hold_id(&mut c, AGENT, "../outside.txt").await;
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
    idle_within(&mut c, &id, 60).await;
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
