// The real Codex tier, included by one test binary per runtime (codex.rs: a
// local PTY).

use std::time::Duration;

use serde_json::{Value, json};
use support::real::*;
use support::*;

const API_KEY: &str = "sk-warren-codex-test-0123456789";
const AGENT: &str = "cx";
const MODEL: &str = "gpt-fake";

async fn codex_node(model: &fake_model::FakeModel) -> (TestNode, String) {
    let (program, url) = match RUNTIME {
        "docker" => (
            format!("image = {:?}\n", guest_image("codex")),
            format!("http://host.docker.internal:{}/v1", model.addr().port()),
        ),
        _ => (
            format!("program = {:?}\n", codex_bin()),
            format!("{}/v1", model.base_url()),
        ),
    };
    let node = TestNode::start_on_outside_tmp(
        RUNTIME,
        &format!(
            "[supervision]\nenabled = true\n\n[harnesses.codex]\n{program}\n[harnesses.codex.env]\n\
             OPENAI_BASE_URL = {url:?}\nOPENAI_API_KEY = {API_KEY:?}\n",
        ),
    );
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": AGENT, "harness": "codex", "model": MODEL }),
    )
    .await;
    let (code, out, err) = warren(&["supervision", "set", AGENT, "--enable"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    let conv = call(&mut c, "conversation.start", json!({ "agent": AGENT })).await["conversation"].clone();
    let id = conv["id"].as_str().expect("id").to_string();
    idle_within(&mut c, &id, 60).await;
    (node, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_is_supervised_against_a_fake_model() {
    let listen = if RUNTIME == "docker" {
        "0.0.0.0:0"
    } else {
        "127.0.0.1:0"
    };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (node, id) = codex_node(&model).await;
    let mut c = node.client().await;
    let workspace = node.path().join("agents").join(AGENT).join("workspace");

    // A plain prompt round trip, attributed from Codex's rollout.
    let at = say(&mut c, &id, "hello there").await;
    reply_starting(&mut c, &id, at, "You said: hello there").await;

    // A repo-scoped command Codex wants to run outside its sandbox:
    // approved by supervision (`y`, never the standing `p`), and it runs.
    let at = say(&mut c, &id, "run: echo hi > ran.txt").await;
    let row = audit_for(&mut c, AGENT, &id, "echo hi > ran.txt").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "command_exec", true, "approve", "class_policy", "sent"),
        "{row:#}"
    );
    assert_eq!(row["keys"], json!(["y"]), "{row:#}");
    let ran = wait_until("the command ran", Duration::from_secs(30), || {
        let path = workspace.join("ran.txt");
        async move { std::fs::read_to_string(path).ok() }
    })
    .await;
    assert_eq!(ran, "hi\n");
    reply_starting(&mut c, &id, at, "Tool finished").await;

    // Out of the repository's scope: held; a human denies it and Codex is
    // told no (Esc, its "tell Codex what to do differently").
    let at = say(&mut c, &id, "run: cat /etc/hostname").await;
    let row = audit_for(&mut c, AGENT, &id, "cat /etc/hostname").await;
    assert_eq!(
        row_shape(&row),
        ("dialog", "command_exec", false, "hold", "not_repo_scoped", "held"),
        "{row:#}"
    );
    let hold = hold_id(&mut c, AGENT, "cat /etc/hostname").await;
    let answered = call(&mut c, "supervision.answer", json!({ "hold": hold, "decision": "deny" })).await;
    assert_eq!(
        (answered["outcome"].as_str(), answered["keys"].as_str()),
        (Some("sent"), Some("\u{1b}"))
    );
    // Codex records the refused call as aborted by the user (it never ran).
    tool_output_with(&mut c, &id, at, "aborted by user").await;
    idle_within(&mut c, &id, 60).await;

    // A new file inside the worktree: Codex writes it inside its own sandbox
    // (bubblewrap; in a guest under the node's seccomp profile), no dialog.
    let at = say(&mut c, &id, "create: notes/new.txt").await;
    let made = wait_until("the sandboxed write", Duration::from_secs(30), || {
        let path = workspace.join("notes/new.txt");
        async move { std::fs::read_to_string(path).ok() }
    })
    .await;
    assert_eq!(made, "created by the fake model\n");
    reply_starting(&mut c, &id, at, "Tool finished").await;
    // Outside it, the sandbox refuses the write.
    let home = node.path().join("agents").join(AGENT).join("home");
    let at = say(&mut c, &id, &format!("create: {}/escaped.txt", home.display())).await;
    tool_output_with(&mut c, &id, at, "escaped.txt: Read-only file system").await;
    assert!(!home.join("escaped.txt").exists(), "nothing written outside the worktree");
    idle_within(&mut c, &id, 60).await;

    // Spend and quota from Codex's rollout: every main-loop request the fake
    // model answered, token for token; the windows from its headers.
    let sent: Vec<_> = model.usage_sent().into_iter().filter(|u| u.tools).collect();
    assert!(sent.len() >= 4, "{sent:?}");
    let want = sent.len() as u64;
    let u = usage_once(&mut c, &id, "every request", |u| u["requests"].as_u64() >= Some(want)).await;
    assert_eq!(u["requests"], sent.len() as u64, "{u}");
    let input: u64 = sent.iter().map(|s| s.input).sum();
    let cached: u64 = sent.iter().map(|s| s.cache_read).sum();
    let output: u64 = sent.iter().map(|s| s.output).sum();
    assert_eq!(u["tokens"]["input"], input, "{u}");
    assert_eq!(u["tokens"]["cache_read"], cached, "{u}");
    assert_eq!(u["tokens"]["output"], output, "{u}");
    let limits = model.limits_sent().expect("rate limits sent");
    let quota = u["quota"].as_array().expect("quota");
    let window = |name: &str| {
        quota
            .iter()
            .find(|q| q["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {u:#}"))
            .clone()
    };
    let primary: Value = window("codex.primary");
    assert_eq!((primary["window"].as_str(), primary["unit"].as_str()), (Some("5h"), Some("percent")), "{primary}");
    let used = primary["used"].as_f64().expect("used");
    assert!(used > 0.0 && used <= limits.primary_used_percent, "{primary} against {limits:?}");
    let secondary = window("codex.secondary");
    assert_eq!(secondary["window"], "7d", "{secondary}");
    let (code, out, err) = warren(&["usage", "--conversation", &id], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("codex.primary") && out.contains("codex.secondary"), "{out}");

    // Pause, then continue: `codex resume` reopens Codex's own session, so
    // the model sees the earlier messages.
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    idle_within(&mut c, &id, 60).await;
    let at = say(&mut c, &id, "recall: what did I say?").await;
    let recalled = reply_starting(&mut c, &id, at, "Earlier you said: ").await;
    assert!(recalled.contains("hello there") && recalled.contains("run: echo hi > ran.txt"), "{recalled}");
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
            "run: echo hi > ran.txt",
            "run: cat /etc/hostname",
            "create: notes/new.txt",
            &format!("create: {}/escaped.txt", home.display()),
            "recall: what did I say?"
        ],
        "each message once, in order, across the resume"
    );
}

/// The real CLI for the "never stranded" scenarios, against `model`.
fn stranded_codex(model: &fake_model::FakeModel) -> support::stranded::Cli {
    let url = match RUNTIME {
        "docker" => format!("http://host.docker.internal:{}/v1", model.addr().port()),
        _ => format!("{}/v1", model.base_url()),
    };
    support::stranded::Cli {
        harness: "codex",
        runtime: RUNTIME,
        config: Box::new(move |program| {
            let program = match (program, RUNTIME) {
                (Some(p), _) => format!("program = {:?}\n", p.display().to_string()),
                (None, "docker") => String::new(),
                (None, _) => format!("program = {:?}\n", codex_bin()),
            };
            let image = match RUNTIME {
                "docker" => format!("image = {:?}\n", guest_image("codex")),
                _ => String::new(),
            };
            format!(
                "[harnesses.codex]\n{program}{image}\n[harnesses.codex.env]\n\
                 OPENAI_BASE_URL = {url:?}\nOPENAI_API_KEY = {API_KEY:?}\n",
            )
        }),
        reply_prefix: |text| format!("You said: {text}"),
    }
}

async fn stranded_model() -> fake_model::FakeModel {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_a_wrong_program_is_named_and_the_fix_starts_fresh() {
    let model = stranded_model().await;
    support::stranded::a_wrong_program_is_named_and_the_fix_starts_fresh(&stranded_codex(&model)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_a_deleted_rollout_fails_resume_and_continue_fresh_recovers() {
    let model = stranded_model().await;
    support::stranded::a_deleted_session_fails_resume_and_continue_fresh_recovers(&stranded_codex(&model)).await;
}

/// Waits for the start-up warning line that contains every one of `words`.
async fn warning_with(node: &TestNode, words: &[&str]) -> String {
    let log = node.path().join("node.log");
    wait_until(&format!("a start-up warning with {words:?}"), Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let words: Vec<String> = words.iter().map(|w| w.to_string()).collect();
        async move {
            text.lines()
                .find(|l| l.starts_with("warning: ") && words.iter().all(|w| l.contains(w.as_str())))
                .map(str::to_string)
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_bad_settings_are_named() {
    // A model endpoint that refuses (a port nothing listens on), a missing
    // program, and a Codex home the node would not own.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let program = match RUNTIME {
        "docker" => format!("image = {:?}\n", guest_image("codex")),
        _ => "program = \"/nonexistent/bin/codex\"\n".to_string(),
    };
    let node = TestNode::start_on(
        RUNTIME,
        &format!(
            "[harnesses.codex]\n{program}\n[harnesses.codex.env]\n\
             OPENAI_BASE_URL = \"http://127.0.0.1:{port}/v1\"\nOPENAI_API_KEY = {API_KEY:?}\nCODEX_HOME = \"/nonexistent/codex-home\"\n",
        ),
    );
    let endpoint = warning_with(&node, &["[harnesses.codex.env] OPENAI_BASE_URL", &format!("127.0.0.1:{port}")]).await;
    assert!(endpoint.contains("did not accept a connection"), "{endpoint}");
    let home = warning_with(&node, &["[harnesses.codex.env] CODEX_HOME"]).await;
    assert!(home.contains("remove it"), "{home}");
    if RUNTIME != "docker" {
        warning_with(&node, &["[harnesses.codex] program", "/nonexistent/bin/codex"]).await;
    }

    let mut c = node.client().await;
    call(&mut c, "agent.create", json!({ "name": AGENT, "harness": "codex" })).await;
    let (code, out, err) = warren(&["--json", "conv", "start", AGENT], &node.path());
    assert_eq!(code, 1, "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(answer["error"]["code"], -32014, "{answer}");
    assert_eq!(answer["error"]["data"]["setting"], "harnesses.codex.env.CODEX_HOME", "{answer}");
}

// An unattended task with the real Codex CLI as its worker: the first attempt
// (a sandboxed write) fails acceptance, the repair message's `run:` line is an
// escalation supervision approves, the checks pass, and the task completes
// with a commit on its branch. Codex's rollout reports each turn's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_codex_works_a_task_repaired_once_to_a_commit() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (tmp, base, extra) = task_repo(RUNTIME);
    let repo = tmp.path().join("proj");
    let (program, url) = match RUNTIME {
        "docker" => (
            format!("image = {:?}\n", guest_image("codex")),
            format!("http://host.docker.internal:{}/v1", model.addr().port()),
        ),
        _ => (format!("program = {:?}\n", codex_bin()), format!("{}/v1", model.base_url())),
    };
    let node = TestNode::start_on_outside_tmp(
        RUNTIME,
        &format!(
            "[supervision]\nenabled = true\n\n[harnesses.codex]\n{program}\n[harnesses.codex.env]\n\
             OPENAI_BASE_URL = {url:?}\nOPENAI_API_KEY = {API_KEY:?}\n{extra}",
        ),
    );
    let mut c = node.client().await;
    let agent = json!({ "name": AGENT, "harness": "codex", "workspace": { "repo": repo.display().to_string() } });
    call(&mut c, "agent.create", agent).await;
    let (code, out, err) = warren(&["supervision", "set", AGENT, "--enable"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    let check = "grep -q fixed notes.txt || { echo 'run: echo fixed >> notes.txt'; exit 1; }";
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": AGENT, "goal": "Write the notes.\ncreate: notes.txt", "acceptance": [check] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("task id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(180);
    let done = loop {
        let t = call(&mut c, "task.get", json!({ "task": id })).await["task"].clone();
        if matches!(t["state"].as_str(), Some("completed" | "parked" | "failed" | "stopped")) {
            break t;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the task did not end: {t:#}\n{}",
            screen_text(&mut c, &conv).await
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(done["state"], "completed", "{done:#}");
    assert_eq!(done["repairs"], 1, "one repair round: {done:#}");
    let head = done["head"].as_str().expect("head");
    let branch = done["branch"].as_str().expect("branch");
    assert_eq!(git_in(&repo, &["rev-parse", branch]), head);
    assert_eq!(
        git_in(&repo, &["show", &format!("{head}:notes.txt")]),
        "created by the fake model\nfixed"
    );
    assert_eq!(git_in(&repo, &["rev-parse", "main"]), base, "the base branch is untouched");
}
