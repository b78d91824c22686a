// The real Claude Code CLI's cases about an agent's own things, included by
// `claude.rs` and `docker_claude.rs` after `cases/claude.rs`: its own model
// key, its own login, as a monitor, its mail and recall tools, its usage.

const KEY_A: &str = "sk-ant-agent-a-0123456789abcdefghijkl";
const KEY_B: &str = "sk-ant-agent-b-9876543210zyxwvutsrqpo";

/// `warren agent secret set AGENT NAME` with the value on stdin.
fn set_secret(node: &TestNode, agent: &str, name: &str, value: &str) -> (i32, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(EXE)
        .args(["agent", "secret", "set", agent, name])
        .env("WARREN_DATA_DIR", node.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run warren");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(format!("{value}\n").as_bytes())
        .expect("write the secret");
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code().unwrap_or(-1),
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
    )
}

/// The keys the model saw since `from` (an index into `keys_seen`).
fn keys_since(model: &fake_model::FakeModel, from: usize) -> Vec<String> {
    model.keys_seen().into_iter().skip(from).collect()
}

/// Per-agent model credentials: each agent's own key, set with `warren agent
/// secret set`, is the only key its CLI sends, across a pause and continue
/// and a node restart; no other place shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_each_agent_sends_only_its_own_key() {
    let model = stranded_model().await;
    let url = match RUNTIME {
        "docker" => format!("http://host.docker.internal:{}", model.addr().port()),
        _ => model.base_url(),
    };
    let (program, image) = match RUNTIME {
        "docker" => (String::new(), format!("image = {:?}\n", guest_image("claude"))),
        _ => (format!("program = {:?}\n", claude_bin()), String::new()),
    };
    // No node-wide key: each agent brings its own.
    let mut node = TestNode::start_logging_debug(
        RUNTIME,
        &format!(
            "[harnesses.claude]\n{program}{image}\n[harnesses.claude.env]\n\
             ANTHROPIC_BASE_URL = {url:?}\nCLAUDE_CODE_MAX_RETRIES = \"0\"\n"
        ),
    );
    let mut c = node.client().await;
    for (agent, key) in [("ka", KEY_A), ("kb", KEY_B)] {
        call(&mut c, "agent.create", json!({ "name": agent, "harness": "claude" })).await;
        let (code, out) = set_secret(&node, agent, "ANTHROPIC_API_KEY", key);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("ANTHROPIC_API_KEY of") && !out.contains(key), "{out}");
    }
    let (code, out, err) = warren(&["agent", "secret", "list", "ka"], &node.path());
    assert_eq!((code, out.trim()), (0, "ANTHROPIC_API_KEY"), "{err}");
    let file = node.path().join("secrets/ka.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).expect("secrets file").permissions().mode() & 0o777, 0o600);

    // Over the network the value may not travel.
    let e = call_err(
        &mut c,
        "agent.secret.set",
        json!({ "agent": "ka", "name": "OTHER", "value": "x" }),
    )
    .await;
    assert_eq!(e.code, -32010, "{e}");
    // Bad input names what is wrong, and stores nothing.
    let (code, out) = set_secret(&node, "ka", "MY-KEY", "x");
    assert!(code == 1 && out.contains("name: \"MY-KEY\" is not an environment variable name"), "{out}");
    let (code, out) = set_secret(&node, "ka", "BIG", &"x".repeat(1 << 20));
    assert!(code == 1 && out.contains("value: 1048576 bytes is over the limit"), "{out}");
    let (code, out) = set_secret(&node, "nobody", "K", "x");
    assert!(code == 1 && out.contains("nobody"), "{out}");
    let (_, out, _) = warren(&["agent", "secret", "list", "ka"], &node.path());
    assert_eq!(out.trim(), "ANTHROPIC_API_KEY", "nothing else stored");

    async fn phase(
        c: &mut warren::client::Client,
        model: &fake_model::FakeModel,
        agent: &str,
        text: &str,
        key: &str,
        id: Option<String>,
    ) -> String {
        let from = model.keys_seen().len();
        let id = match id {
            Some(id) => {
                call(c, "conversation.continue", json!({ "conversation": id })).await;
                id
            }
            None => conversation_id(c, agent).await,
        };
        let at = say(c, &id, text).await;
        reply_starting(c, &id, at, &format!("You said: {text}")).await;
        let seen = keys_since(model, from);
        assert!(!seen.is_empty(), "the model saw {agent}'s requests");
        assert!(seen.iter().all(|k| k == key), "{agent} sent only its own key: {seen:?}");
        id
    }
    let a = phase(&mut c, &model, "ka", "hello from a", KEY_A, None).await;
    call(&mut c, "conversation.pause", json!({ "conversation": a })).await;
    let b = phase(&mut c, &model, "kb", "hello from b", KEY_B, None).await;
    if RUNTIME == "docker" {
        // Another agent's container does not carry ka's key.
        let container = docker(&["ps", "-q", "--filter", &format!("label=warren.conversation={b}")]);
        let inspect = docker(&["inspect", container.trim()]);
        assert!(inspect.contains("warren.agent"), "inspected kb's container");
        assert!(!inspect.contains(KEY_A), "ka's key is not in kb's container");
    }
    call(&mut c, "conversation.pause", json!({ "conversation": b })).await;
    phase(&mut c, &model, "ka", "a again", KEY_A, Some(a.clone())).await;
    call(&mut c, "conversation.pause", json!({ "conversation": a })).await;
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    phase(&mut c, &model, "kb", "b after a restart", KEY_B, Some(b.clone())).await;

    // Nowhere else: not the definition, not the log, not a transcript.
    for agent in ["ka", "kb"] {
        let got = call(&mut c, "agent.get", json!({ "agent": agent })).await.to_string();
        assert!(!got.contains(KEY_A) && !got.contains(KEY_B), "{got}");
    }
    let log = node.log_at_debug();
    assert!(!log.contains(KEY_A) && !log.contains(KEY_B), "the node's log has no key");
    for id in [&a, &b] {
        let text = serde_json::to_string(&transcript(&mut c, id).await).expect("json");
        assert!(!text.contains(KEY_A) && !text.contains(KEY_B), "transcript of {id}");
    }
}

/// `warren agent login`: the CLI's own login flow runs in the agent's guest
/// against its durable home, for a person to attach to; supervision stays out
/// of it, it is local-only, and a CLI without a login says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_login_runs_the_cli_s_own_login_flow() {
    let model = stranded_model().await;
    let (node, _) = claude_node(&model).await;
    let mut c = node.client().await;
    match warren::client::unix_call(&node.path(), "agent.login", json!({ "agent": "cc" })).await {
        Err(warren::client::CallError::Rpc(e)) => {
            assert_eq!(e.code, -32009, "{e}");
            assert!(e.message.contains("pause it before logging in"), "{e}");
        }
        other => panic!("a live conversation first: {other:?}"),
    }
    let live = call(&mut c, "conversation.list", json!({ "agent": "cc" })).await;
    let id = live["conversations"][0]["id"].as_str().expect("id").to_string();
    call(&mut c, "conversation.pause", json!({ "conversation": id })).await;
    let before = call(&mut c, "supervision.audit", json!({ "agent": "cc" })).await["entries"]
        .as_array()
        .map(Vec::len);

    let e = call_err(&mut c, "agent.login", json!({ "agent": "cc" })).await;
    assert_eq!(e.code, -32010, "local only: {e}");
    let v = warren::client::unix_call(&node.path(), "agent.login", json!({ "agent": "cc" }))
        .await
        .unwrap_or_else(|e| panic!("agent.login: {e:?}"));
    let login = v["conversation"]["id"].as_str().expect("id").to_string();
    wait_until("Claude Code's login screen", std::time::Duration::from_secs(30), || {
        let target = node.target();
        let login = login.clone();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let s = c.call("conversation.screen", json!({ "conversation": login })).await.ok()?;
            let text = s["lines"].as_array()?.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n");
            text.contains("Select login method").then_some(())
        }
    })
    .await;
    // Its home is the agent's: the CLI keeps its config there.
    assert!(node.path().join("agents/cc/home/.claude/.claude.json").is_file());
    call(&mut c, "conversation.terminate", json!({ "conversation": login })).await;
    let after = call(&mut c, "supervision.audit", json!({ "agent": "cc" })).await["entries"]
        .as_array()
        .map(Vec::len);
    assert_eq!(before, after, "supervision did not act on the login screen");
    let holds = call(&mut c, "supervision.holds", json!({ "agent": "cc" })).await;
    assert_eq!(holds["holds"].as_array().map(Vec::len), Some(0), "{holds}");

    // A CLI without a login of its own.
    call(&mut c, "agent.create", json!({ "name": "plain", "harness": "fake" })).await;
    let (code, _, err) = warren(&["agent", "login", "plain"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("has no login of its own") && err.contains("agent secret set"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_as_a_monitor_advises_with_no_human_approving() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    // `cc` (Claude Code, supervised) becomes the monitor of a fake coder.
    let (node, _) = claude_node(&model).await;
    let mut c = node.client().await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "coder", "harness": "fake", "rules": [
            { "match": "^crash", "actions": [{ "say": "Program received signal SIGSEGV: segfault" }] }
        ] }),
    )
    .await;
    call(
        &mut c,
        "monitor.attach",
        json!({ "monitor": "cc", "target": { "agent": "coder" },
                "trigger": { "keywords": [{ "text": "segfault", "mode": "word" }] } }),
    )
    .await;
    let target = conversation_id(&mut c, "coder").await;
    send(&mut c, &target, "crash").await;
    let advice = format!("[Advice from monitor \"cc\"]: {}", fake_model::MONITOR_ADVICE);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let events = transcript(&mut c, &target).await;
        if events.iter().any(|e| e["speaker"] == "monitor:cc" && e["text"] == advice.as_str()) {
            break;
        }
        let holds = call(&mut c, "supervision.holds", json!({})).await;
        assert!(
            std::time::Instant::now() < deadline,
            "no advice from the Claude Code monitor within 120 s; holds: {holds}; target: {events:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // Claude Code itself ran the tool, in the monitor's own conversation.
    let l = call(&mut c, "monitor.list", json!({ "monitor": "cc" })).await;
    let mconv = l["attachments"][0]["monitor_conversations"][&target]
        .as_str()
        .expect("the monitor's conversation")
        .to_string();
    // (Its output is in the CLI's session file once the command returned.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mine = loop {
        let mine = transcript(&mut c, &mconv).await;
        let ran = mine
            .iter()
            .any(|e| e["speaker"] == "tool" && e["text"].as_str().is_some_and(|t| t.contains("delivered")));
        if ran {
            break mine;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "warren-advise's output in the monitor's transcript: {mine:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    // The trigger message is the node's (`system`), not a human's, though
    // Claude Code stores the pasted block wrapped.
    let trigger = mine
        .iter()
        .find(|e| e["text"].as_str().is_some_and(|t| t.starts_with("[Trigger]")))
        .unwrap_or_else(|| panic!("the trigger message: {mine:#?}"));
    assert_eq!(trigger["speaker"], "system", "{trigger}");
    // Nobody approved anything: no hold, no approval in the audit.
    let holds = call(&mut c, "supervision.holds", json!({})).await;
    assert_eq!(holds["holds"], json!([]), "{holds}");
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "cc" })).await;
    assert!(
        !audit["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["subject"].as_str().is_some_and(|s| s.contains("warren-advise"))),
        "the tool ran without a dialog: {audit}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_runs_its_mail_and_recall_tools_with_no_dialog() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (node, _) = claude_node(&model).await;
    let mut c = node.client().await;
    call(&mut c, "agent.create", json!({ "name": "bee", "harness": "fake" })).await;
    call(
        &mut c,
        "agent.create",
        json!({ "name": "tooly", "harness": "claude",
                "grants": { "tools": ["mail", "recall"], "peers": ["bee"] } }),
    )
    .await;
    let (code, out, err) = warren(&["supervision", "set", "tooly", "--enable"], &node.path());
    assert_eq!(code, 0, "{err}{out}");
    call(
        &mut c,
        "recall.stash",
        json!({ "agent": "tooly", "name": "ops.md", "text": "The quokka protocol is kept in room seven." }),
    )
    .await;
    let id = conversation_id(&mut c, "tooly").await;

    say(&mut c, &id, "run: warren-mail send bee 'hello from claude code'").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let inbox = call(&mut c, "mailbox.inbox", json!({ "agent": "bee" })).await;
        if inbox["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["from"] == "tooly" && m["body"] == "hello from claude code"))
        {
            break;
        }
        let holds = call(&mut c, "supervision.holds", json!({})).await;
        assert!(
            std::time::Instant::now() < deadline,
            "no mail from Claude Code within 60 s; holds: {holds}\n{}",
            screen_text(&mut c, &id).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    say(&mut c, &id, "run: warren-recall search quokka").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let events = transcript(&mut c, &id).await;
        if events.iter().any(|e| {
            e["speaker"] == "tool" && e["text"].as_str().is_some_and(|t| t.contains("ops.md") && t.contains("[quokka]"))
        }) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no recall output within 60 s: {events:#?}\n{}",
            screen_text(&mut c, &id).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // Nobody approved anything: no hold, and supervision never saw a dialog for them.
    let holds = call(&mut c, "supervision.holds", json!({})).await;
    assert_eq!(holds["holds"], json!([]), "{holds}");
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "tooly" })).await;
    assert!(
        !audit["entries"].as_array().into_iter().flatten().any(|e| e["subject"]
            .as_str()
            .is_some_and(|s| s.contains("warren-mail") || s.contains("warren-recall"))),
        "the tools ran without a dialog: {audit}"
    );
}

/// What the fake model's replies to the CLI's main loop reported (requests
/// that offered tools; the session header, when sent, is the CLI session).
fn main_loop_usage(model: &fake_model::FakeModel, session: &str) -> Vec<fake_model::SentUsage> {
    model
        .usage_sent()
        .into_iter()
        .filter(|u| u.tools && u.session.as_deref().is_none_or(|s| s == session))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_usage_in_warren_equals_what_the_model_reported() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (node, id) = claude_node(&model).await;
    let mut c = node.client().await;
    // A text turn, then a tool turn (two model messages: the tool call, then
    // the answer after its result).
    let at = say(&mut c, &id, "hello usage").await;
    reply_starting(&mut c, &id, at, "You said: hello usage").await;
    let at = say(&mut c, &id, "run: echo counted > ./counted.txt").await;
    reply_starting(&mut c, &id, at, "Tool finished:").await;
    wait_idle(&mut c, &id).await;

    let conv = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    let session = conv["conversation"]["resume_ref"]
        .as_str()
        .or(conv["resume_ref"].as_str())
        .unwrap_or_else(|| panic!("the conversation has its CLI session: {conv:#}"))
        .to_string();
    let sent = main_loop_usage(&model, &session);
    assert!(sent.len() >= 3, "at least three model messages: {sent:#?}");
    let sum = |f: fn(&fake_model::SentUsage) -> u64| sent.iter().map(f).sum::<u64>();
    let want = json!({
        "input": sum(|u| u.input),
        "cache_read": sum(|u| u.cache_read),
        "cache_write": sum(|u| u.cache_write_5m + u.cache_write_1h),
        "output": sum(|u| u.output),
    });
    // The ledger reads the session file every 2 s.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let usage = loop {
        let u = call(&mut c, "usage.get", json!({ "scope": "conversation", "id": id })).await;
        if u["tokens"] == want && u["requests"] == json!(sent.len()) {
            break u;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "warren's usage {u:#} is not what the model sent: {want} over {} messages {sent:#?}",
            sent.len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    };
    // Per bucket, per day: the 5-minute and 1-hour cache writes apart.
    let today = spend::time::utc_day(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis() as i64,
    );
    let h = call(&mut c, "spend.history", json!({ "since_day": today, "agent": "cc" })).await;
    let rows = h["days"].as_array().expect("days");
    let total = |k: &str| rows.iter().map(|r| r[k].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!(
        (total("cache_write_5m"), total("cache_write_1h"), total("requests")),
        (
            sum(|u| u.cache_write_5m),
            sum(|u| u.cache_write_1h),
            sent.len() as u64
        ),
        "{h:#}"
    );
    let models: std::collections::BTreeSet<&str> = sent.iter().map(|u| u.model.as_str()).collect();
    let row_models: std::collections::BTreeSet<&str> = rows.iter().filter_map(|r| r["model"].as_str()).collect();
    assert_eq!(models, row_models, "{h:#}");
    // Priced from a named table, or flagged unpriced: never a silent $0.
    assert!(h["pricing"]["source"].is_string(), "{h:#}");
    for r in rows {
        assert_eq!(r["priced"] == true, r["usd"].as_f64().is_some_and(|d| d > 0.0), "{r}");
    }
    // Dollars by hand: the pinned CLI's default model is Opus 5.5, bundled at
    // $4 in, $20 out, $5 5-minute writes, $8 1-hour writes, $0.20 reads (per
    // million); the fake endpoint is not configured, so the bundled table.
    assert_eq!(row_models, ["claude-opus-5-5"].into(), "the CLI's model changed: price it here");
    let by_hand = (sum(|u| u.input) as f64 * 4.0
        + sum(|u| u.output) as f64 * 20.0
        + sum(|u| u.cache_write_5m) as f64 * 5.0
        + sum(|u| u.cache_write_1h) as f64 * 8.0
        + sum(|u| u.cache_read) as f64 * 0.2)
        / 1e6;
    assert!((usage["usd"].as_f64().unwrap_or(0.0) - by_hand).abs() < 1e-12, "{usage} vs {by_hand}");
    assert_eq!(h["pricing"]["source"], "bundled", "{h:#}");
    assert_eq!(usage["usd"].as_f64().unwrap_or(0.0) > 0.0, rows.iter().any(|r| r["priced"] == true));
}
