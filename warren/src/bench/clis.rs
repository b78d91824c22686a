//! `warren bench clis`: the real Claude Code CLI and the real Codex CLI, each
//! on its own node (local PTY runtime) against the project's fake model
//! (in process, on loopback), measured the same way in the same run:
//! `conversation.sendMessage` -> the text visible on a screen fed by
//! `terminal.subscribe`, and a permission dialog first visible on that
//! screen -> gone from it (supervision approved a repo-scoped command and the
//! CLI took the answer). Needs the CLIs fetched by
//! `deploy/scripts/fetch-claude.sh` and `deploy/scripts/fetch-codex.sh`.
//! Between samples the bench waits for the turn's reply and then IDLE (a CLI
//! reads as idle for a moment between a dialog's answer and the command).

use std::net::SocketAddr;

use super::*;

#[derive(Clone, Copy, PartialEq)]
enum Real {
    Claude,
    Codex,
}

impl Real {
    fn label(self) -> &'static str {
        match self {
            Real::Claude => "Claude Code",
            Real::Codex => "Codex",
        }
    }

    fn harness(self) -> &'static str {
        match self {
            Real::Claude => "claude",
            Real::Codex => "codex",
        }
    }

    /// The node's config for this CLI at `program` against the model at `url`
    /// (as the real-CLI tests write it).
    fn config(self, program: &Path, url: &str) -> String {
        match self {
            Real::Claude => format!(
                "[supervision]\nenabled = true\n\n[harnesses.claude]\nprogram = {program:?}\n\n\
                 [harnesses.claude.env]\nANTHROPIC_BASE_URL = {url:?}\n\
                 ANTHROPIC_API_KEY = \"sk-ant-warren-bench-0123456789abcdefghij\"\nCLAUDE_CODE_MAX_RETRIES = \"0\"\n"
            ),
            Real::Codex => format!(
                "[supervision]\nenabled = true\n\n[harnesses.codex]\nprogram = {program:?}\n\n\
                 [harnesses.codex.env]\nOPENAI_BASE_URL = \"{url}/v1\"\n\
                 OPENAI_API_KEY = \"sk-warren-bench-0123456789\"\n"
            ),
        }
    }

    /// Whether the CLI's permission dialog is up: its own footer on the last
    /// non-blank row.
    fn dialog_up(self, screen: &vt100::Screen) -> bool {
        let contents = screen.contents();
        let last = contents.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
        match self {
            Real::Claude => last.contains("Esc to cancel"),
            Real::Codex => last.trim_end() == "  Press enter to confirm or esc to cancel",
        }
    }
}

/// One CLI's figures, in ms.
struct Figures {
    version: String,
    visible: Vec<f64>,
    dialogs: Vec<f64>,
}

pub(super) async fn bench_clis(args: &BenchArgs) -> anyhow::Result<()> {
    let claude = cli_path(&args.claude, "claude-", "claude", "fetch-claude.sh", "--claude")?;
    let codex = cli_path(&args.codex, "codex-", "bin/codex", "fetch-codex.sh", "--codex")?;
    let exe = std::env::current_exe()?;
    let sends = args.samples.clamp(1, 100);
    let dialogs = (args.samples / 10).clamp(30, 100);
    let mut all = vec![];
    for (cli, program) in [(Real::Claude, &claude), (Real::Codex, &codex)] {
        let f = measure(args, &exe, cli, program, sends, dialogs)
            .await
            .with_context(|| format!("{} ({})", cli.label(), program.display()))?;
        all.push((cli, f));
    }
    for (cli, f) in &all {
        let (p50, p99, max) = summary(f.visible.clone());
        println!(
            "clis   {} {}: sendMessage -> text visible on a terminal.subscribe screen of the IDLE CLI ({} samples after a warm-up turn): p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms",
            cli.label(),
            f.version,
            f.visible.len()
        );
    }
    for (cli, f) in &all {
        let (p50, p99, max) = summary(f.dialogs.clone());
        println!(
            "clis   {} {}: permission dialog visible -> gone (supervision approved `echo N > fileN.txt`, {} dialogs, includes the stability wait): p50 {p50:.0} ms, p99 {p99:.0} ms, max {max:.0} ms",
            cli.label(),
            f.version,
            f.dialogs.len()
        );
    }
    let p99 = |v: &Vec<f64>| summary(v.clone()).1;
    let (cc, cx) = (&all[0].1, &all[1].1);
    println!(
        "clis   ratio Codex p99 / Claude Code p99: send -> visible {:.2}x, dialog -> answer {:.2}x (target: within 1.2x)",
        p99(&cx.visible) / p99(&cc.visible),
        p99(&cx.dialogs) / p99(&cc.dialogs)
    );
    Ok(())
}

/// The CLI binary: `flag`'s path, else the newest `target/tools/PREFIX*/REST`
/// under the current directory; a clear error naming the fetch script if none.
fn cli_path(given: &Option<PathBuf>, prefix: &str, rest: &str, script: &str, flag: &str) -> anyhow::Result<PathBuf> {
    let fetch = format!("run deploy/scripts/{script} (it prints the binary's path) or pass {flag} PATH");
    if let Some(p) = given {
        if !p.is_file() {
            bail!("{flag} {}: no such file; {fetch}", p.display());
        }
        return Ok(std::path::absolute(p)?);
    }
    let tools = std::env::current_dir()?.join("target/tools");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&tools)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path().join(rest))
        .filter(|p| p.is_file())
        .collect();
    found.sort();
    found
        .pop()
        .with_context(|| format!("no {}/{prefix}*/{rest}: {fetch}", tools.display()))
}

async fn measure(
    args: &BenchArgs,
    exe: &Path,
    cli: Real,
    program: &Path,
    sends: usize,
    dialogs: usize,
) -> anyhow::Result<Figures> {
    let version = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map(|o| {
            let out = String::from_utf8_lossy(&o.stdout).to_string();
            let number = out
                .split_whitespace()
                .find(|w| w.starts_with(|c: char| c.is_ascii_digit()));
            number.unwrap_or("(version unknown)").to_string()
        })
        .unwrap_or_default();
    // Its rate-limit windows stop rising at half: Codex keeps working.
    let model = fake_model::FakeModel::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let dir = scratch(&args.dir, cli.harness())?;
    std::fs::write(dir.path.join("warren.toml"), cli.config(program, &model.base_url()))?;
    let node = NodeProcess::start(exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    let agent = format!("bench-{}", cli.harness());
    let mut create = json!({ "name": agent, "harness": cli.harness() });
    if cli == Real::Codex {
        create["model"] = json!("gpt-fake");
    }
    call(&mut c, m::AGENT_CREATE, create).await?;
    client_unix(
        &dir.path,
        m::SUPERVISION_SET,
        json!({ "agent": agent, "enabled": true }),
    )
    .await?;
    let conv = call(&mut c, m::CONVERSATION_START, json!({ "agent": agent })).await?;
    let id = conv["conversation"]["id"].as_str().unwrap_or_default().to_string();
    idle(&mut c, &id, Duration::from_secs(120)).await?;
    let mut screen = Watch::start(&node, &id).await?;
    let mut sender = Client::connect(&node.target).await?;
    // One turn unmeasured: a CLI's first message after its start is slower.
    let warm = call(
        &mut sender,
        m::CONVERSATION_SEND_MESSAGE,
        json!({ "conversation": id, "text": "warm-up" }),
    )
    .await?;
    replied(&mut c, &id, warm["seq"].as_u64().unwrap_or(0)).await?;
    let mut visible = vec![];
    for i in 0..sends {
        idle(&mut c, &id, Duration::from_secs(60)).await?;
        let word = format!("visible-{i}-xyz");
        let t0 = Instant::now();
        let send = call(
            &mut sender,
            m::CONVERSATION_SEND_MESSAGE,
            json!({ "conversation": id, "text": word }),
        );
        let seen = screen.until(|s| s.contents().contains(&word), Duration::from_secs(10));
        let (sent, seen) = tokio::join!(send, seen);
        let sent = sent.with_context(|| format!("sending {word}"))?;
        seen.with_context(|| format!("{word} never showed"))?;
        visible.push(t0.elapsed().as_secs_f64() * 1000.0);
        replied(&mut c, &id, sent["seq"].as_u64().unwrap_or(0)).await?;
    }
    let mut answered = vec![];
    for i in 0..dialogs {
        idle(&mut c, &id, Duration::from_secs(60)).await?;
        let text = format!("run: echo {i} > file{i}.txt");
        let sent = call(
            &mut c,
            m::CONVERSATION_SEND_MESSAGE,
            json!({ "conversation": id, "text": text }),
        )
        .await;
        let sent = sent.with_context(|| format!("sending {text:?}"))?;
        let up = |s: &vt100::Screen| cli.dialog_up(s);
        screen.until(up, Duration::from_secs(60)).await.context("no dialog")?;
        let shown = Instant::now();
        let gone = screen.until(|s| !cli.dialog_up(s), Duration::from_secs(60)).await;
        if let Err(e) = gone {
            let audit = call(&mut c, m::SUPERVISION_AUDIT, json!({ "agent": agent })).await?;
            bail!("{text}: the dialog was not answered: {e:#}; audit: {audit}");
        }
        answered.push(shown.elapsed().as_secs_f64() * 1000.0);
        replied(&mut c, &id, sent["seq"].as_u64().unwrap_or(0)).await?;
    }
    // Every dialog was approved: every command ran.
    let workspace = dir.path.join("agents").join(&agent).join("workspace");
    let missing: Vec<String> = (0..dialogs)
        .filter(|i| std::fs::read_to_string(workspace.join(format!("file{i}.txt"))).ok() != Some(format!("{i}\n")))
        .map(|i| format!("file{i}.txt"))
        .collect();
    if !missing.is_empty() {
        bail!("approved commands did not run: {missing:?}");
    }
    Ok(Figures {
        version,
        visible,
        dialogs: answered,
    })
}

/// A screen fed by `terminal.subscribe`, started from the node's own screen
/// (the CLIs redraw relative to where their cursor is).
struct Watch {
    term: Client,
    parser: vt100::Parser,
}

impl Watch {
    async fn start(node: &NodeProcess, id: &str) -> anyhow::Result<Watch> {
        let mut term = Client::connect(&node.target).await?;
        call(&mut term, m::TERMINAL_SUBSCRIBE, json!({ "conversation": id })).await?;
        let screen = call(&mut term, m::CONVERSATION_SCREEN, json!({ "conversation": id })).await?;
        // The bytes that arrived before the screen are in it already.
        while term.next_notification(Duration::ZERO).await?.is_some() {}
        let size = |k: &str| {
            let v = screen[k].as_u64().unwrap_or(40) as u16;
            std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN)
        };
        let mut parser = vt100::Parser::new(size("rows"), size("cols"), 0);
        let mut paint = String::from("\x1b[2J");
        for (row, line) in screen["lines"].as_array().into_iter().flatten().enumerate() {
            paint.push_str(&format!("\x1b[{};1H{}", row + 1, line.as_str().unwrap_or("")));
        }
        let at = |i: usize| screen["cursor"][i].as_u64().unwrap_or(0) + 1;
        paint.push_str(&format!("\x1b[{};{}H", at(0), at(1)));
        parser.process(paint.as_bytes());
        Ok(Watch { term, parser })
    }

    /// Feeds the screen until `done` holds of it (checked after every
    /// notification), at most `within`.
    async fn until(&mut self, done: impl Fn(&vt100::Screen) -> bool, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        let b64 = base64::engine::general_purpose::STANDARD;
        while !done(self.parser.screen()) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!(
                    "not within {} s; the screen:\n{}",
                    within.as_secs(),
                    self.parser.screen().contents()
                );
            }
            if let Some(n) = self.term.next_notification(left).await?
                && let Some(data) = n.params["data"].as_str()
            {
                self.parser.process(&b64.decode(data).unwrap_or_default());
            }
        }
        Ok(())
    }
}

/// Waits for IDLE within `within`; the error carries the screen.
async fn idle(c: &mut Client, id: &str, within: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let v = call(c, m::CONVERSATION_GET, json!({ "conversation": id })).await?;
        if v["conversation"]["status"] == "IDLE" {
            return Ok(());
        }
        if Instant::now() > deadline {
            let status = &v["conversation"]["status"];
            bail!(
                "{id} not IDLE within {} s ({status})\n{}",
                within.as_secs(),
                screen_text(c, id).await
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for the agent's reply after transcript seq `after`: the turn's end.
async fn replied(c: &mut Client, id: &str, after: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let read = json!({ "conversation": id, "after_seq": after, "limit": 1000 });
        let v = call(c, m::TRANSCRIPT_READ, read).await?;
        let events = v["events"].as_array().cloned().unwrap_or_default();
        if events.iter().any(|e| e["speaker"] == "agent" && e["kind"] == "reply") {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "no reply after transcript seq {after} within 60 s\n{}",
                screen_text(c, id).await
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn screen_text(c: &mut Client, id: &str) -> String {
    match call(c, m::CONVERSATION_SCREEN, json!({ "conversation": id })).await {
        Ok(s) => {
            let lines = s["lines"].as_array().cloned().unwrap_or_default();
            let lines: Vec<&str> = lines.iter().filter_map(Value::as_str).collect();
            format!("the node's screen ({}):\n{}", s["status"], lines.join("\n"))
        }
        Err(e) => format!("(no screen: {e})"),
    }
}
