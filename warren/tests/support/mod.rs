//! Helpers for the end-to-end tests: a real `warren up` process on a fresh
//! data dir, clients, and deadline-bounded waiting (no sleeps as sync).
#![allow(dead_code, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warren::bench::NodeProcess;
use warren::client::{CallError, Client, Target};

pub mod real;
pub mod stranded;
pub mod supervised;

pub const EXE: &str = env!("CARGO_BIN_EXE_warren");

/// The environment of a node that logs at `debug` (see `TestNode::log_at_debug`).
pub const DEBUG_LOG: (&str, &str) = ("RUST_LOG", "debug");

pub struct TestNode {
    pub dir: tempfile::TempDir,
    pub proc: Option<NodeProcess>,
    /// `local` or `docker`.
    pub runtime: &'static str,
    /// Added to the node's environment (kept across restarts).
    pub env: Vec<(String, String)>,
}

impl TestNode {
    pub fn start() -> TestNode {
        let dir = tempfile::tempdir().expect("tempdir");
        let proc = NodeProcess::start(Path::new(EXE), dir.path()).expect("node starts");
        TestNode {
            dir,
            proc: Some(proc),
            runtime: "local",
            env: vec![],
        }
    }

    /// Starts with a `warren.toml` written into the data dir first.
    pub fn start_with_config(toml: &str) -> TestNode {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("warren.toml"), toml).expect("write config");
        let proc = NodeProcess::start(Path::new(EXE), dir.path()).expect("node starts");
        TestNode {
            dir,
            proc: Some(proc),
            runtime: "local",
            env: vec![],
        }
    }

    /// Starts on `runtime` (`local` or `docker`) with `toml` as warren.toml.
    /// A Docker node's images are built from this test build's `warren`;
    /// unless `toml` has its own `[docker]`, it reaps orphans every second and
    /// does not wait for guests after a restart (the durable-home cases expect
    /// a crash to pause; re-adoption has its own tests).
    pub fn start_on(runtime: &'static str, toml: &str) -> TestNode {
        TestNode::start_on_with_env(runtime, toml, &[])
    }

    /// As `start_on`, logging at `debug` (kept across restarts): the node of
    /// a check that a secret never reaches the log (`log_at_debug`), so that
    /// a secret logged at any level a user may turn on fails it.
    pub fn start_logging_debug(runtime: &'static str, toml: &str) -> TestNode {
        TestNode::start_on_with_env(runtime, toml, &[DEBUG_LOG])
    }

    /// As `start_on`, with the data dir outside the system's temporary
    /// directory (under the build's own): for a CLI whose sandbox lets
    /// every command write in `/tmp` (Codex), so that the agent's home is
    /// outside what its sandbox allows.
    pub fn start_on_outside_tmp(runtime: &'static str, toml: &str) -> TestNode {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        TestNode::start_in(dir, runtime, toml, vec![])
    }

    fn start_on_with_env(runtime: &'static str, toml: &str, env: &[(&str, &str)]) -> TestNode {
        let env: Vec<(String, String)> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        TestNode::start_in(tempfile::tempdir().expect("tempdir"), runtime, toml, env)
    }

    fn start_in(dir: tempfile::TempDir, runtime: &'static str, toml: &str, env: Vec<(String, String)>) -> TestNode {
        let mut toml = toml.to_string();
        if runtime == "docker" {
            // Warm the images up once per process; the node itself then builds
            // (reuses) its own version's image on demand.
            guest_image("fake");
            if !toml.contains("[docker]") {
                toml.push_str("\n[docker]\nreap_interval_secs = 1\nreadopt_grace_secs = 0\n");
            }
        }
        std::fs::write(dir.path().join("warren.toml"), toml).expect("write config");
        let proc = NodeProcess::start_with_env(Path::new(EXE), dir.path(), runtime, &env).expect("node starts");
        TestNode {
            dir,
            proc: Some(proc),
            runtime,
            env,
        }
    }

    /// The node's log for a check that a secret never reached it. The node
    /// must log at `debug` (`start_logging_debug`, or `DEBUG_LOG` in its
    /// environment): a missing log, or one with no debug line, fails rather
    /// than reading as a clean log.
    pub fn log_at_debug(&self) -> String {
        let path = self.dir.path().join("node.log");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("the node's log {}: {e}", path.display()));
        assert!(
            text.lines().any(|l| l.contains(" DEBUG ")),
            "the node's log {} has no debug line: start the node with DEBUG_LOG",
            path.display()
        );
        text
    }

    /// A node on the Docker runtime with `toml` as warren.toml, built no
    /// image (for what needs no conversation: the node's own doors).
    pub fn start_docker_without_images(toml: &str) -> TestNode {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("warren.toml"), toml).expect("write config");
        let proc = NodeProcess::start_on(Path::new(EXE), dir.path(), "docker").expect("node starts");
        TestNode {
            dir,
            proc: Some(proc),
            runtime: "docker",
            env: vec![],
        }
    }

    /// Stops the node and starts it again on the same data dir with `env`
    /// added to its environment (to what it had).
    pub fn restart_with_env(&mut self, env: &[(&str, &str)]) {
        self.kill9();
        self.env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        self.restart();
    }

    pub fn path(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    pub fn target(&self) -> Target {
        self.proc.as_ref().expect("running").target.clone()
    }

    pub async fn client(&self) -> Client {
        Client::connect(&self.target()).await.expect("connect")
    }

    /// `kill -9` the node process.
    pub fn kill9(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.child.kill().expect("kill -9");
            p.child.wait().expect("reap");
            std::mem::forget(p);
        }
    }

    pub fn restart(&mut self) {
        assert!(self.proc.is_none(), "kill it first");
        self.proc = Some(
            NodeProcess::start_with_env(Path::new(EXE), self.dir.path(), self.runtime, &self.env)
                .expect("node restarts"),
        );
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("warren.db")
    }
}

impl TestNode {
    /// This node's id (`node.id` in its data dir).
    pub fn node_id(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("node.id"))
            .expect("node.id")
            .trim()
            .to_string()
    }
}

impl Drop for TestNode {
    /// Idempotent teardown: the node process, then (Docker) every container
    /// and the network labelled with this node's id.
    fn drop(&mut self) {
        drop(self.proc.take());
        if self.runtime == "docker" {
            let id = self.node_id();
            docker_cleanup(&id);
        }
    }
}

/// Removes the containers and network of node `id` (absent is fine).
pub fn docker_cleanup(id: &str) {
    let label = format!("label=warren.node={id}");
    let ids = docker(&["ps", "-aq", "--filter", &label]);
    for c in ids.split_whitespace() {
        // A removal the node (or an exited guest's auto-remove) began first
        // is as good as ours; anything else fails the test.
        let (ok, out, err) = docker_status(&["rm", "-f", c]);
        assert!(
            ok || err.contains("already in progress") || err.contains("No such container"),
            "docker rm -f {c} failed: {err}{out}"
        );
    }
    // The node removes its network itself when it stops: absent is fine.
    let (_, out, err) = docker_status(&["network", "rm", &format!("warren-{id}")]);
    assert!(
        !err.contains("has active endpoints"),
        "the node's network is still in use after cleanup: {out}{err}"
    );
}

/// Runs the docker CLI; returns stdout. A failing command fails the test
/// with docker's own words (an empty stdout is never read as "none").
pub fn docker(args: &[&str]) -> String {
    let (ok, out, err) = docker_status(args);
    assert!(ok, "docker {args:?} failed: {err}{out}");
    out
}

/// Runs the docker CLI: whether it succeeded, stdout and stderr.
pub fn docker_status(args: &[&str]) -> (bool, String, String) {
    let out = std::process::Command::new("docker")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("docker {args:?}: {e} (is the docker CLI installed?)"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// `docker inspect` of the only container of `conversation`.
pub fn inspect(conversation: &str) -> Value {
    let id = docker(&[
        "ps",
        "-q",
        "--filter",
        &format!("label=warren.conversation={conversation}"),
    ]);
    let id = id.trim();
    assert!(!id.is_empty(), "no running container for {conversation}");
    let text = docker(&["inspect", id]);
    let v: Value = serde_json::from_str(&text).expect("inspect json");
    v[0].clone()
}

pub fn env_of(container: &Value, name: &str) -> String {
    container["Config"]["Env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(Value::as_str)
        .find_map(|e| e.strip_prefix(&format!("{name}=")))
        .unwrap_or_else(|| panic!("{name} not in the container's env"))
        .to_string()
}

/// A live conversation's instance token: in its agent's home on the local
/// runtime, in its guest's tmpfs on Docker (read with `docker exec`).
pub fn instance_token(node: &TestNode, runtime: &str, agent: &str, conversation: &str) -> String {
    let token = if runtime == "docker" {
        let label = format!("label=warren.conversation={conversation}");
        let id = docker(&["ps", "-q", "--filter", &label]);
        docker(&["exec", id.trim(), "cat", "/run/warren-secrets/instance.token"])
    } else {
        let file = node.path().join(format!("agents/{agent}/home/.warren/instance.token"));
        std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
    };
    token.trim().to_string()
}

/// A client of `node` with `token` instead of its admin token.
pub async fn client_with(node: &TestNode, token: &str) -> Client {
    Client::connect(&Target {
        url: node.target().url,
        token: Some(token.to_string()),
    })
    .await
    .expect("connect with token")
}

pub async fn call(c: &mut Client, method: &str, params: Value) -> Value {
    match c.call(method, params.clone()).await {
        Ok(v) => v,
        Err(e) => panic!("{method} {params} failed: {e}"),
    }
}

/// Calls and expects an error answer; returns it.
pub async fn call_err(c: &mut Client, method: &str, params: Value) -> console_api::RpcError {
    match c.call(method, params.clone()).await {
        Ok(v) => panic!("{method} {params} should have failed, got {v}"),
        Err(CallError::Rpc(e)) => e,
        Err(e) => panic!("{method}: transport error {e}"),
    }
}

/// Polls `check` until it returns Some, or panics naming `what` at the deadline.
pub async fn wait_until<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out waiting for: {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub async fn create_agent(c: &mut Client, name: &str) {
    call(c, "agent.create", json!({ "name": name, "harness": "fake" })).await;
}

/// Starts a conversation and waits until its CLI is IDLE; returns its object.
pub async fn start_idle(c: &mut Client, agent: &str) -> Value {
    let conv = call(c, "conversation.start", json!({ "agent": agent })).await["conversation"].clone();
    let id = conv["id"].as_str().expect("id").to_string();
    wait_idle(c, &id).await;
    conv
}

/// Creates a fake-harness agent and starts its conversation; returns the id.
pub async fn agent_with_conversation(c: &mut Client, name: &str) -> String {
    create_agent(c, name).await;
    conversation_id(c, name).await
}

/// Starts (or gets) `agent`'s live conversation, waits for IDLE, returns its id.
pub async fn conversation_id(c: &mut Client, agent: &str) -> String {
    start_idle(c, agent).await["id"].as_str().expect("id").to_string()
}

/// `conversation.sendMessage`.
pub async fn send(c: &mut Client, id: &str, text: &str) -> Value {
    call(
        c,
        "conversation.sendMessage",
        json!({ "conversation": id, "text": text }),
    )
    .await
}

pub async fn wait_idle(c: &mut Client, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = call(c, "conversation.get", json!({ "conversation": id })).await;
        if v["conversation"]["status"] == "IDLE" {
            return;
        }
        assert!(Instant::now() < deadline, "{id} never became IDLE: {v}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// All transcript events of a conversation.
pub async fn transcript(c: &mut Client, id: &str) -> Vec<Value> {
    let mut out = vec![];
    let mut from = 1u64;
    loop {
        let page = call(
            c,
            "transcript.read",
            json!({ "conversation": id, "from_seq": from, "limit": 1000 }),
        )
        .await;
        let events = page["events"].as_array().cloned().unwrap_or_default();
        if events.is_empty() {
            return out;
        }
        from = page["next_seq"].as_u64().expect("next_seq");
        out.extend(events);
    }
}

/// Waits until the transcript holds an event with this speaker and text.
pub async fn wait_event(c: &mut Client, id: &str, speaker: &str, text: &str) -> Value {
    wait_event_within(c, id, speaker, text, Duration::from_secs(20)).await
}

/// As `wait_event`, for something with a deadline of its own (a wait for it
/// must outlast that deadline, or a slow machine fails what still works).
pub async fn wait_event_within(c: &mut Client, id: &str, speaker: &str, text: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let events = transcript(c, id).await;
        if let Some(e) = events.iter().find(|e| e["speaker"] == speaker && e["text"] == text) {
            return e.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no {speaker} event {text:?} in transcript: {:#?}",
            events
                .iter()
                .map(|e| format!("{} {} {}", e["seq"], e["speaker"], e["text"]))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Runs the `warren` binary with args; returns (status, stdout, stderr).
pub fn warren(args: &[&str], data_dir: &Path) -> (i32, String, String) {
    let out = std::process::Command::new(EXE)
        .args(args)
        .env("WARREN_DATA_DIR", data_dir)
        .env_remove("WARREN_URL")
        .env_remove("WARREN_TOKEN")
        .output()
        .expect("run warren");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

/// The real Claude Code CLI: `WARREN_CLAUDE_BIN`, else fetched (once, cached
/// under target/tools) by the project's own script. Never skips: a missing
/// binary fails the test with the script's error.
pub fn claude_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("WARREN_CLAUDE_BIN") {
        return PathBuf::from(p);
    }
    fetched_tool("fetch-claude.sh")
}

/// Runs `deploy/scripts/SCRIPT` (idempotent, cached under target/tools) and
/// returns the path it prints last; its error fails the test.
fn fetched_tool(script: &str) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/scripts")
        .join(script);
    let out = std::process::Command::new("bash")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    PathBuf::from(stdout.lines().last().expect("the script prints the tool's path").trim())
}

/// The real Codex CLI: `WARREN_CODEX_BIN`, else fetched (once, cached
/// under target/tools) by the project's own script. Never skips.
pub fn codex_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("WARREN_CODEX_BIN") {
        return PathBuf::from(p);
    }
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| fetched_tool("fetch-codex.sh")).clone()
}

/// The aider CLI: `WARREN_AIDER_BIN`, else installed (once, in a venv under
/// target/tools, pinned like the aider image) by the project's own script.
/// Never skips: a missing CLI fails the test with the script's error.
pub fn aider_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("WARREN_AIDER_BIN") {
        return PathBuf::from(p);
    }
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| fetched_tool("fetch-aider.sh")).clone()
}

/// The guest image of `harness` built by the project's script from this test
/// build's `warren` (reused while the binary is unchanged); once per process.
pub fn guest_image(harness: &str) -> String {
    static BUILT: std::sync::Mutex<Vec<(String, String)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, tag)) = built.iter().find(|(h, _)| h == harness) {
        return tag.clone();
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/images/build.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .args([harness, "--warren-bin", EXE])
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", script.display()));
    assert!(
        out.status.success(),
        "{} {harness} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .expect("the script prints the tag")
        .trim()
        .to_string();
    let tag = node::images::tag(harness, &version);
    built.push((harness.to_string(), tag.clone()));
    tag
}

/// The process state letter (`/proc/PID/stat`; seen from the host for a
/// guest too: a container's processes are the host kernel's) of the fake
/// CLI whose command line names `session` (the conversation's resume
/// reference), never the guest process that runs it.
pub fn cli_state(session: &str) -> Option<char> {
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(cmdline) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let words: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_cli = words.contains(&b"fake-cli".as_slice())
            && words.contains(&session.as_bytes())
            && !words.contains(&b"guest".as_slice());
        if !is_cli {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // `pid (comm) S ...`: the state follows the last `)`.
        return stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next());
    }
    None
}

/// Calls `method` with `params` on a fresh connection to `node` until its
/// answer satisfies `want` (within `within`); returns that answer.
pub async fn call_until(
    node: &TestNode,
    what: &str,
    within: Duration,
    method: &str,
    params: Value,
    want: impl Fn(&Value) -> bool,
) -> Value {
    let want = &want;
    wait_until(what, within, || {
        let target = node.target();
        let params = params.clone();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let v = c.call(method, params).await.ok()?;
            want(&v).then_some(v)
        }
    })
    .await
}
