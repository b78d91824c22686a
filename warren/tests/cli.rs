//! The `warren` binary as a person uses it: verbs against a running node,
//! `--json`, exit codes, the data dir's private files, the Unix socket, one
//! node per data dir, and `conv attach` under a real terminal.

mod support;

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::*;

fn json_out(args: &[&str], node: &TestNode) -> Value {
    let mut full = args.to_vec();
    full.push("--json");
    let (code, out, err) = warren(&full, &node.path());
    assert_eq!(code, 0, "warren {args:?} failed: {err}{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("warren {args:?} printed no JSON ({e}): {out}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verbs_drive_a_node_through_the_cli() {
    let node = TestNode::start();
    let created = json_out(
        &["agent", "create", "coder", "--harness", "fake", "--persona", "terse"],
        &node,
    );
    assert_eq!(created["agent"]["persona"], "terse");
    let listed = json_out(&["agent", "list"], &node);
    assert_eq!(listed["agents"][0]["name"], "coder");

    let conv = json_out(&["conv", "start", "coder"], &node);
    let id = conv["conversation"]["id"].as_str().expect("id").to_string();
    let mut c = node.client().await;
    wait_idle(&mut c, &id).await;

    let (code, out, err) = warren(&["conv", "send", &id, "hello from the cli"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("delivered m-"), "{out}");
    wait_event(&mut c, &id, "agent", "echo: hello from the cli").await;
    let page = json_out(&["transcript", "read", &id], &node);
    let texts: Vec<&str> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["text"].as_str())
        .collect();
    assert!(texts.contains(&"hello from the cli"), "{texts:?}");

    // Human output of a read lists speaker and text.
    let (_, out, _) = warren(&["transcript", "read", &id], &node.path());
    assert!(
        out.lines()
            .any(|l| l.contains("human") && l.contains("hello from the cli")),
        "{out}"
    );

    // Errors: exit 1 with the code and the message.
    let (code, _, err) = warren(&["agent", "get", "ghost"], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("error -32004") && err.contains("ghost"), "{err}");
    let (code, out, _) = warren(&["agent", "get", "ghost", "--json"], &node.path());
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).expect("json error");
    assert_eq!(v["error"]["code"], -32004);

    // WARREN_URL and WARREN_TOKEN reach the node from anywhere.
    let target = node.target();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(EXE)
        .args(["conv", "get", &id, "--json"])
        .env("WARREN_URL", &target.url)
        .env("WARREN_TOKEN", target.token.expect("token"))
        .env("WARREN_DATA_DIR", elsewhere.path())
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["conversation"]["id"], id.as_str());

    // Raw keys with escapes reach the terminal.
    let (code, _, err) = warren(&["conv", "keys", &id, r"typed\r"], &node.path());
    assert_eq!(code, 0, "{err}");
    let e = wait_event(&mut c, &id, "human", "typed").await;
    assert_eq!(e["kind"], "terminal_input");

    let paused = json_out(&["conv", "pause", &id], &node);
    assert_eq!(paused["conversation"]["state"], "paused");
    let (code, _, err) = warren(&["conv", "pause", &id], &node.path());
    assert_eq!(code, 1);
    assert!(err.contains("-32009"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_data_dir_keeps_its_secrets_private_and_one_node() {
    let node = TestNode::start();
    let dir = node.path();
    for (file, mode) in [
        ("admin.token", 0o600),
        ("root.key", 0o600),
        ("warren.sock", 0o600),
        ("", 0o700),
    ] {
        let path = dir.join(file);
        let m = std::fs::metadata(&path).expect("exists").permissions().mode() & 0o777;
        assert_eq!(m, mode, "{} has mode {m:o}", path.display());
    }
    // A second node on the same data dir refuses to start, naming why.
    let out = std::process::Command::new(EXE)
        .args(["up", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("another warren node is using the data dir"), "{err}");
    // `--runtime docker` with no engine to reach: a clear error, not a silent
    // fallback to local processes.
    let other = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(EXE)
        .args(["up", "--listen", "127.0.0.1:0", "--runtime", "docker", "--data-dir"])
        .arg(other.path())
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--runtime docker: ") && err.contains("Docker engine"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_unix_socket_answers_newline_json_as_local_admin() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let node = TestNode::start();
    let stream = tokio::net::UnixStream::connect(node.path().join("warren.sock"))
        .await
        .expect("connect");
    let (r, mut w) = stream.into_split();
    let mut lines = BufReader::new(r).lines();
    let mut ask = async |line: String| -> Value {
        w.write_all(format!("{line}\n").as_bytes()).await.expect("write");
        let answer = lines.next_line().await.expect("read").expect("a line");
        serde_json::from_str(&answer).expect("json")
    };
    let v = ask(
        json!({"jsonrpc": "2.0", "id": 1, "method": "agent.create", "params": {"name": "local", "harness": "fake"}})
            .to_string(),
    )
    .await;
    assert_eq!(v["result"]["agent"]["name"], "local", "{v}");
    let v = ask("{nope".into()).await;
    assert_eq!(v["error"]["code"], -32700);
    let v = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "node.info"}).to_string()).await;
    assert!(v["result"]["root_public_key"].as_str().expect("key").len() >= 64);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"node.info\",\"params\":{{\"x\":\"{}\"}}}}",
        "y".repeat(2_000_000)
    );
    let v = ask(big).await;
    assert_eq!(v["error"]["code"], -32600);
    assert!(v["error"]["message"].as_str().expect("msg").contains("over the limit"));
    let v =
        ask(json!({"jsonrpc": "2.0", "id": 4, "method": "agent.get", "params": {"agent": "local"}}).to_string()).await;
    assert_eq!(v["id"], 4, "the socket keeps serving after an oversize line: {v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_is_an_interactive_terminal_with_a_detach_key() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let node = TestNode::start();
    let mut c = node.client().await;
    let id = agent_with_conversation(&mut c, "tty").await;

    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 30,
            cols: 100,
            pixel_width: 0,
            pixel_height: 0,
        })
        .expect("pty");
    let mut cmd = CommandBuilder::new(EXE);
    cmd.args(["conv", "attach", &id]);
    cmd.env("WARREN_DATA_DIR", node.path());
    let mut child = pair.slave.spawn_command(cmd).expect("spawn attach");
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().expect("reader");
    let mut writer = pair.master.take_writer().expect("writer");
    let screen = Arc::new(Mutex::new(vt100::Parser::new(
        std::num::NonZeroU16::new(30).expect("rows"),
        std::num::NonZeroU16::new(100).expect("cols"),
        0,
    )));
    let s2 = screen.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut p) = s2.lock() {
                p.process(&buf[..n]);
            }
        }
    });
    let contents = || screen.lock().map(|p| p.screen().contents()).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !contents().contains("Welcome to Fake Code") {
        assert!(
            Instant::now() < deadline,
            "attach never showed the CLI:\n{}",
            contents()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    writer.write_all(b"typed in attach\r").expect("type");
    writer.flush().expect("flush");
    wait_event(&mut c, &id, "agent", "echo: typed in attach").await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while !contents().contains("echo: typed in attach") {
        assert!(
            Instant::now() < deadline,
            "the reply never reached the attached terminal:\n{}",
            contents()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    writer.write_all(&[0x1d]).expect("ctrl-]");
    writer.flush().expect("flush");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "attach exited with {status:?}");
            break;
        }
        assert!(Instant::now() < deadline, "ctrl-] did not detach");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Detaching leaves the conversation running.
    let v = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    assert_eq!(v["conversation"]["state"], "active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_rules_script_its_fake_cli() {
    let node = TestNode::start();
    let rules = node.path().join("rules.json");
    std::fs::write(
        &rules,
        json!([{ "match": "^deploy (\\w+)$", "actions": [
            { "say": "deploying $1" },
            { "shell": "echo shipped > shipped.txt && echo done" }
        ] }])
        .to_string(),
    )
    .expect("write rules");
    let rules_arg = rules.display().to_string();
    json_out(&["agent", "create", "scripted", "--rules-file", &rules_arg], &node);
    let mut c = node.client().await;
    let id = conversation_id(&mut c, "scripted").await;
    send(&mut c, &id, "deploy prod").await;
    wait_event(&mut c, &id, "agent", "deploying prod").await;
    let tool = wait_until("the rule's shell command is recorded", Duration::from_secs(15), || {
        let target = node.target();
        let id = id.clone();
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            transcript(&mut c, &id)
                .await
                .into_iter()
                .find(|e| e["speaker"] == "tool")
        }
    })
    .await;
    assert!(tool["text"].as_str().expect("text").contains("done"), "{tool}");
    let shipped = node.path().join("agents/scripted/workspace/shipped.txt");
    assert_eq!(
        std::fs::read_to_string(&shipped)
            .expect("the command ran in the workspace")
            .trim(),
        "shipped"
    );
    // Messages no rule matches get the default echo.
    send(&mut c, &id, "status?").await;
    wait_event(&mut c, &id, "agent", "echo: status?").await;

    // A rule with a broken regex is refused at the API, naming the problem.
    std::fs::write(&rules, r#"[{"match": "(unclosed", "actions": []}]"#).expect("write");
    let (code, _, err) = warren(
        &["agent", "update", "scripted", "--rules-file", &rules_arg],
        &node.path(),
    );
    assert_eq!(code, 1);
    assert!(err.contains("-32602") && err.contains("not a valid regex"), "{err}");
}

/// A client verb whose reader goes away ends as Unix tools do (killed by
/// SIGPIPE), never with a panic; the node's log is plain text (no terminal
/// colours) when it is not a terminal; the help says what the verbs do now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_pipe_plain_logs_and_true_help() {
    use std::os::unix::process::ExitStatusExt;
    let node = TestNode::start();
    let mut c = node.client().await;
    for name in ["a1", "a2", "a3"] {
        create_agent(&mut c, name).await;
    }
    // A pipe whose reading end is closed before the verb writes.
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = std::process::Command::new(support::EXE)
        .args(["agent", "list", "--data-dir"])
        .arg(node.path())
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .expect("run warren");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "no panic on a closed pipe: {stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}: {stderr}", out.status);

    let log = std::fs::read(node.path().join("node.log")).expect("the node's log");
    assert!(!log.is_empty(), "the node logged something");
    assert!(!log.contains(&0x1b), "no ANSI escapes in a log file");

    let (code, help, _) = warren(&["--help"], &node.path());
    assert_eq!(code, 0);
    assert!(!help.contains("issue"), "the help names no issue: {help}");
    let (code, help, _) = warren(&["agent", "create", "--help"], &node.path());
    assert_eq!(code, 0);
    assert!(help.starts_with("Create an agent"), "{help}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warren_up_on_the_local_runtime_says_it_does_not_isolate() {
    let node = TestNode::start();
    let log = std::fs::read_to_string(node.path().join("node.log")).expect("node.log");
    let line = log
        .lines()
        .find(|l| l.contains("the local runtime does not isolate"))
        .unwrap_or_else(|| panic!("no isolation note at start-up:\n{log}"));
    assert!(line.contains("network"), "{line}");
}
