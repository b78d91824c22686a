//! `warren bench`: the figures the issues ask for, measured on this machine.
//! `store` appends durable events through the group-commit writer; the others
//! start a real node process (this binary) on a scratch data dir and drive it
//! over its WebSocket like any client.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use base64::Engine;
use console_api::methods as m;
use serde_json::{Value, json};

mod clis;
mod decisions;
mod egress;
mod latency;
mod mail;
mod monitors;
mod redaction;
mod spend;
mod task;
mod workspace;

use crate::client::{Client, Target};
use node::events::{Durability, Event};
use node::store::Store;

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Which benchmark: store | latency | redaction | rss | startup | auth | supervision |
    /// monitor | mail | recall | spend | workspace | task | egress | docker | clis | all (`all` skips docker, which needs a
    /// Docker engine, and clis, which needs the real Claude Code and Codex CLIs fetched)
    #[arg(default_value = "all")]
    which: String,
    /// Scratch directory (default: a new temp dir, removed afterwards).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Iterations for the latency benchmarks.
    #[arg(long, default_value_t = 300)]
    samples: usize,
    /// Events stored before timing start-up.
    #[arg(long, default_value_t = 1_000_000)]
    startup_events: u64,
    /// Concurrent appenders for the store benchmark.
    #[arg(long, default_value_t = 64)]
    writers: usize,
    /// Idle conversations for the RSS figure.
    #[arg(long, default_value_t = 100)]
    conversations: usize,
    /// The Claude Code CLI for `clis` (default: target/tools/claude-*/claude, from deploy/scripts/fetch-claude.sh).
    #[arg(long)]
    claude: Option<PathBuf>,
    /// The Codex CLI for `clis` (default: target/tools/codex-*/bin/codex, from deploy/scripts/fetch-codex.sh).
    #[arg(long)]
    codex: Option<PathBuf>,
}

struct Scratch {
    path: PathBuf,
    remove: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn scratch(dir: &Option<PathBuf>, name: &str) -> anyhow::Result<Scratch> {
    let base = dir.clone().unwrap_or_else(std::env::temp_dir);
    let path = base.join(format!("warren-bench-{name}-{}-{}", std::process::id(), rand_suffix()));
    std::fs::create_dir_all(&path)?;
    Ok(Scratch { path, remove: true })
}

fn rand_suffix() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0)
}

fn now_ms_f() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// Runs git in `dir` for a bench's own setup (as `bench`, new repositories on
/// `main`), failing with its words; its stdout, trimmed.
fn git(dir: &Path, args: &[&str]) -> anyhow::Result<String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@localhost",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .context("running git (the workspace and task benches need it)")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

fn summary(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (
        percentile(&v, 50.0),
        percentile(&v, 99.0),
        v.last().copied().unwrap_or(f64::NAN),
    )
}

pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    let all = args.which == "all";
    let known = [
        "all",
        "store",
        "latency",
        "redaction",
        "rss",
        "startup",
        "auth",
        "supervision",
        "monitor",
        "mail",
        "recall",
        "spend",
        "workspace",
        "task",
        "egress",
        "docker",
        "clis",
    ];
    if !known.contains(&args.which.as_str()) {
        bail!("unknown benchmark {:?}; one of {}", args.which, known.join(", "));
    }
    if all || args.which == "store" {
        bench_store(&args).await?;
    }
    if all || args.which == "latency" {
        latency::bench_latency(&args).await?;
    }
    if all || args.which == "redaction" {
        redaction::bench_redaction(&args).await?;
    }
    if all || args.which == "rss" {
        bench_rss(&args).await?;
    }
    if all || args.which == "startup" {
        bench_startup(&args).await?;
    }
    if all || args.which == "auth" {
        decisions::bench_auth(&args)?;
    }
    if all || args.which == "workspace" {
        workspace::bench_workspace(&args).await?;
    }
    if all || args.which == "task" {
        task::bench_task(&args).await?;
    }
    if all || args.which == "egress" {
        egress::bench_egress(&args).await?;
    }
    if all || args.which == "supervision" {
        decisions::bench_supervision(&args).await?;
    }
    if all || args.which == "monitor" {
        monitors::bench_monitor(&args).await?;
    }
    if all || args.which == "mail" {
        mail::bench_mail(&args).await?;
    }
    if all || args.which == "recall" {
        mail::bench_recall(&args).await?;
    }
    if all || args.which == "spend" {
        spend::bench_spend(&args)?;
    }
    if args.which == "docker" {
        bench_docker(&args).await?;
    }
    if args.which == "clis" {
        clis::bench_clis(&args).await?;
    }
    Ok(())
}

/// Docker guests: `conversation.start` -> IDLE for the fake image, beside
/// `docker run` of a trivial container (the floor); then 20 concurrent
/// guests: the node's RSS and each guest process's RSS.
async fn bench_docker(args: &BenchArgs) -> anyhow::Result<()> {
    let samples = args.samples.clamp(5, 50);
    let exe = std::env::current_exe()?;
    let image = node::images::build("fake", &exe, |_| {})
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    // The floor: a trivial container, created, started, waited for, removed.
    let mut floor = vec![];
    for _ in 0..samples {
        let t = Instant::now();
        let out = Command::new("docker")
            .args(["run", "--rm", "--entrypoint", "/bin/true", &image])
            .output()
            .context("docker run")?;
        if !out.status.success() {
            bail!("docker run failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        floor.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let dir = scratch(&args.dir, "docker")?;
    let node = NodeProcess::start_on(&exe, &dir.path, "docker")?;
    let mut c = Client::connect(&node.target).await?;
    let mut starts = vec![];
    for i in 0..samples {
        let name = format!("start-{i}");
        call(&mut c, m::AGENT_CREATE, json!({ "name": name, "harness": "fake" })).await?;
        let t = Instant::now();
        let v = call(&mut c, m::CONVERSATION_START, json!({ "agent": name })).await?;
        let id = v["conversation"]["id"].as_str().unwrap_or_default().to_string();
        wait_idle_fast(&mut c, &id).await?;
        starts.push(t.elapsed().as_secs_f64() * 1000.0);
        call(&mut c, m::CONVERSATION_TERMINATE, json!({ "conversation": id })).await?;
    }
    let (fp50, fp99, _) = summary(floor);
    let (sp50, sp99, smax) = summary(starts);
    println!(
        "docker conversation.start -> IDLE (fake image, {samples} samples): p50 {sp50:.0} ms, p99 {sp99:.0} ms, max {smax:.0} ms; \
         floor `docker run --rm IMAGE /bin/true`: p50 {fp50:.0} ms, p99 {fp99:.0} ms; ratio p50 {:.2}x",
        sp50 / fp50
    );

    let before = rss_kib(node.pid())?;
    let mut ids = vec![];
    let mut tasks = vec![];
    for i in 0..20 {
        let target = node.target.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(&target).await?;
            let name = format!("many-{i}");
            call(&mut c, m::AGENT_CREATE, json!({ "name": name, "harness": "fake" })).await?;
            let v = call(&mut c, m::CONVERSATION_START, json!({ "agent": name })).await?;
            let id = v["conversation"]["id"].as_str().unwrap_or_default().to_string();
            wait_idle(&mut c, &id).await?;
            anyhow::Ok(id)
        }));
    }
    for t in tasks {
        ids.push(t.await??);
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(node.pid())?;
    let mut guests = vec![];
    for id in &ids {
        let out = Command::new("docker")
            .args(["ps", "-q", "--filter", &format!("label=warren.conversation={id}")])
            .output()?;
        let cid = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let out = Command::new("docker")
            .args(["inspect", "--format", "{{.State.Pid}}", &cid])
            .output()?;
        let pid: u32 = String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .context("guest pid")?;
        guests.push(rss_kib(pid)? as f64 / 1024.0);
    }
    let (gp50, _, gmax) = summary(guests);
    println!(
        "docker 20 concurrent idle guests: node RSS {:.1} MB (before {:.1} MB); guest process RSS p50 {gp50:.1} MB, max {gmax:.1} MB",
        after as f64 / 1024.0,
        before as f64 / 1024.0
    );
    for id in &ids {
        call(&mut c, m::CONVERSATION_TERMINATE, json!({ "conversation": id })).await?;
    }
    let node_id = std::fs::read_to_string(dir.path.join("node.id"))?.trim().to_string();
    drop(node);
    let _ = Command::new("docker")
        .args(["network", "rm", &format!("warren-{node_id}")])
        .output();
    Ok(())
}

/// Like `wait_idle`, polling every 5 ms (start-up latency is the figure).
async fn wait_idle_fast(c: &mut Client, conv: &str) -> anyhow::Result<()> {
    wait_idle_every(c, conv, Duration::from_millis(5)).await
}

/// Durable appends/s: many writers, one event per append, each awaited until
/// committed. Group commit turns concurrent appends into shared commits.
async fn bench_store(args: &BenchArgs) -> anyhow::Result<()> {
    for (label, durability) in [
        ("synchronous=FULL", Durability::Full),
        ("synchronous=NORMAL", Durability::Relaxed),
    ] {
        let dir = scratch(&args.dir, "store")?;
        let store = Store::open(&dir.path.join("bench.db")).await?;
        let writers = args.writers.max(1);
        let per_writer = 64_000 / writers;
        let started = Instant::now();
        let mut tasks = vec![];
        for w in 0..writers {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0..per_writer {
                    let e = Event::Transcript {
                        conversation: format!("c-{w}"),
                        seq: i as u64 + 1,
                        speaker: "agent".into(),
                        kind: "reply".into(),
                        text: format!("bench line {i} of writer {w}"),
                        cursor: None,
                    };
                    let rx = store.enqueue(vec![e], durability).await?;
                    rx.await.map_err(|_| anyhow::anyhow!("writer gone"))??;
                }
                anyhow::Ok(())
            }));
        }
        for t in tasks {
            t.await??;
        }
        let secs = started.elapsed().as_secs_f64();
        let n = (writers * per_writer) as f64;
        let commits = store.stats().commits.load(std::sync::atomic::Ordering::Relaxed);
        println!(
            "store  durable appends ({label}, {writers} concurrent writers): {:.0} events/s ({} events in {:.2} s, {} commits, {:.1} events/commit)",
            n / secs,
            n,
            secs,
            commits,
            n / commits.max(1) as f64
        );
    }
    Ok(())
}

/// A `warren up` child process on a scratch data dir.
pub struct NodeProcess {
    pub child: Child,
    pub target: Target,
}

impl NodeProcess {
    /// A node on the local PTY runtime.
    pub fn start(exe: &Path, data_dir: &Path) -> anyhow::Result<NodeProcess> {
        NodeProcess::start_on(exe, data_dir, "local")
    }

    /// A node on `runtime` (`local` or `docker`).
    pub fn start_on(exe: &Path, data_dir: &Path, runtime: &str) -> anyhow::Result<NodeProcess> {
        NodeProcess::start_with_env(exe, data_dir, runtime, &[])
    }

    /// A node on `runtime` with these variables added to its environment
    /// (e.g. a secret an owner tool takes from the node's environment).
    pub fn start_with_env(
        exe: &Path,
        data_dir: &Path,
        runtime: &str,
        env: &[(String, String)],
    ) -> anyhow::Result<NodeProcess> {
        NodeProcess::start_listening_with_env(exe, data_dir, runtime, "127.0.0.1:0", env)
    }

    /// A node on `runtime` listening on `listen` (a fixed port survives a
    /// restart, as a browser reconnecting needs).
    pub fn start_listening(exe: &Path, data_dir: &Path, runtime: &str, listen: &str) -> anyhow::Result<NodeProcess> {
        NodeProcess::start_listening_with_env(exe, data_dir, runtime, listen, &[])
    }

    fn start_listening_with_env(
        exe: &Path,
        data_dir: &Path,
        runtime: &str,
        listen: &str,
        env: &[(String, String)],
    ) -> anyhow::Result<NodeProcess> {
        let _ = std::fs::remove_file(node::server::endpoint_path(data_dir));
        // A scratch node prices offline unless its config names a pricing
        // endpoint: tests and benchmarks never reach out to the internet.
        let config = data_dir.join("warren.toml");
        let toml = std::fs::read_to_string(&config).unwrap_or_default();
        if !toml.contains("[pricing]") {
            std::fs::write(&config, format!("{toml}\n[pricing]\nurl = \"\"\n"))
                .with_context(|| format!("write {}", config.display()))?;
        }
        // The node's log goes to `node.log` in its data dir (appended across
        // restarts), so a node that fails to start says why.
        let log_path = data_dir.join("node.log");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("open {}", log_path.display()))?;
        let mut child = Command::new(exe)
            .args(["up", "--listen", listen, "--runtime", runtime, "--data-dir"])
            .arg(data_dir)
            .env("RUST_LOG", "warn")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .context("starting the node")?;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(t) = Target::resolve(None, None, data_dir) {
                return Ok(NodeProcess { child, target: t });
            }
            if let Some(status) = child.try_wait()? {
                let text = std::fs::read_to_string(&log_path).unwrap_or_default();
                let tail: String = text
                    .lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .collect::<Vec<_>>()
                    .join("\n");
                bail!("the node exited ({status}) before it listened:\n{tail}");
            }
            if Instant::now() > deadline {
                bail!("the node did not start within 60 s");
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn call(c: &mut Client, method: &str, p: Value) -> anyhow::Result<Value> {
    c.call(method, p).await.map_err(|e| anyhow::anyhow!("{method}: {e}"))
}

async fn wait_idle(c: &mut Client, conv: &str) -> anyhow::Result<()> {
    wait_idle_every(c, conv, Duration::from_millis(20)).await
}

async fn wait_idle_every(c: &mut Client, conv: &str, every: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = call(c, m::CONVERSATION_GET, json!({ "conversation": conv })).await?;
        if v["conversation"]["status"] == "IDLE" {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("conversation {conv} did not become IDLE");
        }
        tokio::time::sleep(every).await;
    }
}

fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .context("no VmRSS")
}

async fn bench_rss(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "rss")?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    let before = rss_kib(node.pid())?;
    let mut ids = vec![];
    for i in 0..args.conversations {
        let name = format!("idle-{i}");
        call(&mut c, m::AGENT_CREATE, json!({ "name": name, "harness": "fake" })).await?;
        let v = call(&mut c, m::CONVERSATION_START, json!({ "agent": name })).await?;
        ids.push(v["conversation"]["id"].as_str().unwrap_or_default().to_string());
    }
    for id in &ids {
        wait_idle(&mut c, id).await?;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_kib(node.pid())?;
    println!(
        "rss    node process with {} idle live fake-CLI conversations: {:.1} MB (empty node {:.1} MB)",
        ids.len(),
        after as f64 / 1024.0,
        before as f64 / 1024.0
    );
    Ok(())
}

async fn bench_startup(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "startup")?;
    {
        // Seed the store: a few agents and conversations, the rest transcript deltas.
        let store = Store::open(&node::server::db_path(&dir.path)).await?;
        let mut catalog = vec![];
        for a in 0..20 {
            catalog.push(Event::AgentCreated {
                agent: node::events::AgentRecord {
                    name: format!("agent-{a}"),
                    harness: "fake".into(),
                    persona: None,
                    model: None,
                    grants: node::events::GrantsRecord {
                        tools: vec![],
                        peers: None,
                        recall: false,
                        egress: vec![],
                    },
                    rules: vec![],
                    resources: None,
                    workspace: None,
                },
            });
            for k in 0..5 {
                let id = format!("c-{a}-{k}");
                catalog.push(Event::ConversationCreated {
                    id: id.clone(),
                    agent: format!("agent-{a}"),
                    resume_ref: Some(format!("r-{a}-{k}")),
                    login: false,
                });
                catalog.push(Event::ConversationLaunched {
                    id: id.clone(),
                    resumed: false,
                });
                catalog.push(Event::ConversationPaused {
                    id,
                    planned: true,
                    reason: "bench".into(),
                    exit: None,
                });
            }
        }
        let mut written = catalog.len() as u64;
        store.append(catalog).await?;
        let started = Instant::now();
        let mut seqs = vec![0u64; 100];
        while written < args.startup_events {
            let n = (args.startup_events - written).min(5_000);
            let batch: Vec<Event> = (0..n)
                .map(|i| {
                    let c = ((written + i) % 100) as usize;
                    seqs[c] += 1;
                    Event::Transcript {
                        conversation: format!("c-{}-{}", c / 5, c % 5),
                        seq: seqs[c],
                        speaker: if i % 2 == 0 { "human" } else { "agent" }.into(),
                        kind: "message".into(),
                        text: format!("seeded transcript line {} with some ordinary text in it", written + i),
                        cursor: None,
                    }
                })
                .collect();
            let rx = store.enqueue(batch, Durability::Relaxed).await?;
            rx.await.map_err(|_| anyhow::anyhow!("writer gone"))??;
            written += n;
        }
        println!(
            "        (seeded {} events in {:.1} s)",
            written,
            started.elapsed().as_secs_f64()
        );
    }
    let exe = std::env::current_exe()?;
    let mut times = vec![];
    for _ in 0..3 {
        let t0 = Instant::now();
        let node = NodeProcess::start(&exe, &dir.path)?;
        let addr = node
            .target
            .url
            .trim_start_matches("ws://")
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string();
        loop {
            if healthz(&addr).await {
                break;
            }
            if t0.elapsed() > Duration::from_secs(60) {
                bail!("no /healthz within 60 s");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        times.push(t0.elapsed().as_secs_f64());
        drop(node);
    }
    let (p50, _, max) = summary(times);
    println!(
        "start  process start -> /healthz answering with {} events stored: median {p50:.2} s, max {max:.2} s (3 runs)",
        args.startup_events
    );
    Ok(())
}

async fn client_unix(data_dir: &Path, method: &str, params: Value) -> anyhow::Result<Value> {
    crate::client::unix_call(data_dir, method, params)
        .await
        .map_err(|e| anyhow::anyhow!("{method}: {e}"))
}

/// One plain HTTP/1.1 GET /healthz; true on a 200.
pub async fn healthz(addr: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(addr).await else {
        return false;
    };
    let req = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return false;
    }
    let mut buf = vec![];
    let _ = tokio::time::timeout(Duration::from_secs(2), s.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).starts_with("HTTP/1.1 200")
}
