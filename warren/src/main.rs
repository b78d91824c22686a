//! `warren`: the one binary. `warren up` runs a node; every other verb is a
//! client of a node's API (or, for `fake-cli`, the scripted test CLI).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use warren::{bench, cmd};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "warren", version, about = "A durable, supervised home for AI coding CLIs")]
struct Cli {
    /// Print machine-readable JSON.
    #[arg(long, global = true)]
    json: bool,
    /// The node's WebSocket URL (default: the local node of the data dir).
    #[arg(long, global = true, env = "WARREN_URL")]
    url: Option<String>,
    /// A biscuit token (default: the local node's admin token).
    #[arg(long, global = true, env = "WARREN_TOKEN", hide_env_values = true)]
    token: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a node in the foreground.
    Up(UpArgs),
    /// This node: identity, version, endpoint.
    Node {
        #[command(subcommand)]
        verb: cmd::NodeVerb,
    },
    /// Agents: create, get, list, update, archive.
    Agent {
        #[command(subcommand)]
        verb: cmd::AgentVerb,
    },
    /// Conversations: start, continue, pause, terminate, send, attach, ...
    #[command(alias = "conversation")]
    Conv {
        #[command(subcommand)]
        verb: cmd::ConvVerb,
    },
    /// Attributed transcripts: read a range, or follow live.
    Transcript {
        #[command(subcommand)]
        verb: cmd::TranscriptVerb,
    },
    /// Supervision: settings, status, held dialogs and their answers, the audit log, nudges, learned rules.
    Supervision {
        #[command(subcommand)]
        verb: cmd::SupervisionVerb,
    },
    /// The node's settings that change at runtime: set (local only).
    Config {
        #[command(subcommand)]
        verb: cmd::ConfigVerb,
    },
    /// Web Push subscriptions of the calling token.
    Push {
        #[command(subcommand)]
        verb: cmd::PushVerb,
    },
    /// An agent's egress: its allow-list and what its guests were refused.
    Egress {
        #[command(subcommand)]
        verb: cmd::EgressVerb,
    },
    /// An agent's spend-rate budget: get; set and topup (local only).
    Budget {
        #[command(subcommand)]
        verb: cmd::BudgetVerb,
    },
    /// The mailbox between agents: send, inbox, ack.
    Mail {
        #[command(subcommand)]
        verb: cmd::MailVerb,
    },
    /// An agent's recall: stashed documents and its own history, searched.
    Recall {
        #[command(subcommand)]
        verb: cmd::RecallVerb,
    },
    /// The owner's tools (`[tools.NAME]` in warren.toml): run one, read the log.
    Tool {
        #[command(subcommand)]
        verb: cmd::ToolVerb,
    },
    /// Monitor agents: watch other agents' transcripts, advise on keywords.
    Monitor {
        #[command(subcommand)]
        verb: cmd::MonitorVerb,
    },
    /// Unattended tasks: a goal, acceptance commands the node runs, repair
    /// rounds, a verified commit on the task's branch or a parked one.
    Task {
        #[command(subcommand)]
        verb: cmd::TaskVerb,
    },
    /// The web console: pair a browser or phone with a one-time code.
    Console {
        #[command(subcommand)]
        verb: cmd::ConsoleVerb,
    },
    /// The fleet's roots of trust.
    Fleet {
        #[command(subcommand)]
        verb: cmd::FleetVerb,
    },
    /// Token use and cost as the CLIs reported them (a conversation's).
    Usage(cmd::UsageArgs),
    /// Tokens and dollars from the CLIs' session files; `spend scan PATH...`
    /// reads a Claude config dir or Codex home offline.
    Spend(cmd::SpendArgs),
    /// Capability tokens: mint, attenuate (offline), inspect, revoke.
    Token {
        #[command(subcommand)]
        verb: cmd::TokenVerb,
    },
    /// Maintenance of a stopped node's store.
    Admin {
        #[command(subcommand)]
        verb: cmd::AdminVerb,
    },
    /// Benchmarks (durable appends, latencies, RSS, start-up).
    Bench(bench::BenchArgs),
    /// A fake model server (Anthropic Messages, OpenAI Chat Completions and
    /// OpenAI Responses) for running the real Claude Code, aider and Codex
    /// CLIs offline: `run: CMD`
    /// asks for a shell command (`run-json: "..."` for one of several
    /// lines), `create: PATH` for a new file.
    FakeModel {
        /// TCP port on 127.0.0.1 (0 = any; the address is printed).
        #[arg(long, default_value_t = 0)]
        port: u16,
    },
    /// A Docker guest's entrypoint: runs the CLI under a PTY, proxies stdio and
    /// dials the node named by its bootstrap environment.
    Guest {
        /// The CLI and its arguments (after `--`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<String>,
    },
    /// Guest images (Docker runtime), built from Debian packages by the
    /// project's scripts: no registry is needed.
    Images {
        #[command(subcommand)]
        verb: ImagesVerb,
    },
    /// What a CLI's hooks run (Claude Code): reports the hook on stdin to the
    /// node; never decides, always exits 0.
    Hook {
        /// The harness whose hook this is (claude).
        harness: String,
    },
    /// The scripted stand-in CLI used by the `fake` harness.
    FakeCli {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum ImagesVerb {
    /// Build (or reuse) the guest image of a harness with this `warren` in
    /// it; progress on stderr, the image's tag on stdout.
    Build {
        /// fake | claude | aider | codex | gemini | opencode
        harness: String,
    },
}

#[derive(clap::Args)]
struct UpArgs {
    /// Data directory (default: the user's data dir + /warren).
    #[arg(long, env = "WARREN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// TCP address of the WebSocket API, e.g. 127.0.0.1:7767 (port 0 = any).
    #[arg(long)]
    listen: Option<String>,
    /// Where conversations run.
    #[arg(long, value_enum)]
    runtime: Option<RuntimeArg>,
    /// A warren.toml to read instead of the one in the data dir.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Join the fleet of this join code (`warren fleet invite` on a member
    /// that holds the owner key) once the node is up.
    #[arg(long)]
    join: Option<String>,
    /// Serve the API over TLS with a self-signed certificate made at the
    /// first start (`<data_dir>/tls/`); its fingerprint is printed.
    #[arg(long)]
    tls: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum RuntimeArg {
    Local,
    Docker,
}

fn main() -> ExitCode {
    // The fake CLI is a plain terminal program: no runtime, no clap.
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("fake-cli") {
        let code = fake_cli::run(argv[2..].to_vec());
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    // A mounted tool (`warren-<tool>` in the conversation's tools dir) is
    // this binary under another name: the verb it stands for.
    let mut cli = match tool_argv(&argv) {
        Some(argv) => Cli::parse_from(argv),
        None => Cli::parse(),
    };
    // A client verb whose output is cut short (`warren agent list | head -1`)
    // ends quietly as other Unix tools do, killed by SIGPIPE, instead of
    // panicking on the closed pipe. The node and the guest keep ignoring it:
    // a client that goes away is theirs to notice.
    if !matches!(
        cli.command,
        Command::Up(_) | Command::Guest { .. } | Command::FakeModel { .. }
    ) {
        restore_sigpipe();
    }
    // Inside a conversation the node renews the instance token into
    // WARREN_TOKEN_FILE; the copy in WARREN_TOKEN goes stale (and is revoked
    // when a restarted node re-adopts the CLI), so the file wins.
    if let Some(token) = std::env::var_os("WARREN_TOKEN_FILE")
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
    {
        cli.token = Some(token);
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("warren: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match rt.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("warren: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A mounted tool is this binary under another name: `warren-read CONV` is
/// `warren transcript read CONV`, `warren-advise CONV TEXT` is `warren conv
/// send` (the node makes it attributed advice), `warren-mail`,
/// `warren-review VERB TASK` is `warren task review VERB TASK`,
/// `warren-decide VERB TASK REASON` is `warren task decide VERB TASK REASON`,
/// `warren-recall` and `warren-supervision` act for the conversation's own
/// agent (`WARREN_AGENT`), and any other `warren-NAME ARGS` is the owner
/// tool NAME (`warren tool invoke NAME ARGS`).
fn tool_argv(argv: &[String]) -> Option<Vec<String>> {
    let name = std::path::Path::new(argv.first()?).file_name()?.to_str()?;
    let tool = name.strip_prefix("warren-")?;
    let args = &argv[1..];
    let me = std::env::var("WARREN_AGENT").unwrap_or_default();
    let mut out: Vec<String> = vec!["warren".into()];
    let push = |out: &mut Vec<String>, words: &[&str]| out.extend(words.iter().map(|w| w.to_string()));
    match tool {
        "read" => push(&mut out, &["transcript", "read"]),
        "advise" => push(&mut out, &["conv", "send"]),
        // `warren-review diff|approve|reject TASK ...`.
        "review" => push(&mut out, &["task", "review"]),
        // `warren-decide approve|deny TASK REASON`.
        "decide" => push(&mut out, &["task", "decide"]),
        "mail" | "recall" | "supervision" => {
            // The verb, then the agent, then the rest: `warren-mail send TO
            // BODY` is `warren mail send ME TO BODY`.
            let verb = args.first().cloned().unwrap_or_else(|| "--help".into());
            out.push(tool.into());
            out.push(verb.clone());
            if !verb.starts_with('-') {
                out.push(me);
            }
            out.extend(args.iter().skip(1).cloned());
            return Some(out);
        }
        owner => {
            push(&mut out, &["tool", "invoke", owner, "--"]);
        }
    }
    out.extend(args.iter().cloned());
    Some(out)
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let out = cmd::Output { json: cli.json };
    match cli.command {
        Command::Up(args) => up(args).await.map(|_| ExitCode::SUCCESS),
        Command::FakeCli { .. } => unreachable_fake_cli(),
        Command::FakeModel { port } => fake_model::run(port).await.map(|_| ExitCode::SUCCESS),
        Command::Guest { command } => guest(command).await,
        Command::Images {
            verb: ImagesVerb::Build { harness },
        } => {
            let exe = std::env::current_exe()?;
            eprintln!(
                "building (or reusing) the {harness} guest image for this warren: {} when nothing is cached, plus about 1-2 min once for the Debian base image; reused images take a second",
                node::progress::build_estimate(&harness)
            );
            let started = std::time::Instant::now();
            let tag = node::images::build(&harness, &exe, |line| {
                eprintln!("[{:6.1} s] {line}", started.elapsed().as_secs_f64())
            })
            .await
            .map_err(|e| anyhow::anyhow!(e))?;
            eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
            println!("{tag}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Hook { harness } => Ok(ExitCode::from(cmd::hook::run(&harness).await as u8)),
        Command::Bench(args) => bench::run(args).await.map(|_| ExitCode::SUCCESS),
        Command::Admin { verb } => cmd::admin(verb, out).await,
        Command::Node { verb } => cmd::node(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Agent { verb } => cmd::agent(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Conv { verb } => cmd::conv(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Console { verb } => cmd::console(verb, out).await,
        Command::Fleet { verb } => cmd::fleet(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Supervision { verb } => cmd::supervision(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Config { verb } => cmd::config(verb, out).await,
        Command::Budget { verb } => cmd::budget(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Egress { verb } => cmd::egress(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Push { verb } => cmd::push(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Mail { verb } => cmd::mail(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Monitor { verb } => cmd::monitor(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Task { verb } => cmd::task(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Recall { verb } => cmd::recall(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Tool { verb } => cmd::tool(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Token { verb } => cmd::token(verb, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Usage(args) => cmd::usage(args, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Spend(args) => cmd::spend(args, cmd::Conn::new(cli.url, cli.token), out).await,
        Command::Transcript { verb } => cmd::transcript(verb, cmd::Conn::new(cli.url, cli.token), out).await,
    }
}

/// `warren guest -- CLI ARGS`: exits with the CLI's own exit code (directly:
/// a thread may still be blocked reading stdin).
async fn guest(mut command: Vec<String>) -> anyhow::Result<ExitCode> {
    init_logs();
    if command.first().is_some_and(|c| c == "--") {
        command.remove(0);
    }
    let Some(program) = (!command.is_empty()).then(|| command.remove(0)) else {
        anyhow::bail!("warren guest: name the CLI to run: warren guest -- CLI [ARGS]");
    };
    let code = guest::run(program, command).await?;
    std::process::exit(code);
}

fn unreachable_fake_cli() -> anyhow::Result<ExitCode> {
    anyhow::bail!("`fake-cli` must be the first argument: warren fake-cli [ARGS]")
}

async fn up(args: UpArgs) -> anyhow::Result<()> {
    init_logs();
    let flags = node::config::Overrides {
        data_dir: args.data_dir,
        listen: args.listen,
        runtime: args.runtime.map(|r| match r {
            RuntimeArg::Local => node::config::RuntimeKind::Local,
            RuntimeArg::Docker => node::config::RuntimeKind::Docker,
        }),
        tls: args.tls.then_some(node::config::TlsFlag { self_signed: true }),
    };
    let cfg = node::Config::load(args.config.as_deref(), flags)?;
    if cfg.runtime == node::config::RuntimeKind::Local {
        eprintln!("warning: conversations run as local processes (the local PTY runtime), not in Docker guests");
    }
    let self_exe = std::env::current_exe()?;
    let (up_tx, up_rx) = tokio::sync::oneshot::channel::<std::path::PathBuf>();
    if let Some(code) = args.join {
        // Once the node answers on its socket, it joins.
        tokio::spawn(async move {
            let Ok(data_dir) = up_rx.await else { return };
            match warren::client::unix_call(
                &data_dir,
                console_api::methods::FLEET_JOIN,
                serde_json::json!({ "invite": code }),
            )
            .await
            {
                Ok(v) => println!(
                    "joined fleet {} ({} members)",
                    v["fleet_id"].as_str().unwrap_or("?"),
                    v["members"]
                ),
                Err(e) => eprintln!("error: joining the fleet failed: {e}"),
            }
        });
    }
    let mut up_tx = Some(up_tx);
    let shutdown = async {
        let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(s) => s,
            Err(_) => return,
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    };
    node::server::run(
        cfg,
        self_exe,
        |s| {
            println!("warren node {} listening on {}", s.node_id, s.endpoint);
            println!("data dir:     {}", s.data_dir.display());
            println!("admin token:  {}", s.token_path.display());
            println!("local socket: {}", s.socket_path.display());
            println!(
                "console:      {} (sign in: warren console pair)",
                node::console::console_url(&s.endpoint)
            );
            if let Some((fingerprint, cert)) = &s.tls {
                println!("tls:          {} (SHA-256 {fingerprint})", cert.display());
            }
            if let Some(tx) = up_tx.take() {
                let _ = tx.send(s.data_dir.clone());
            }
        },
        shutdown,
    )
    .await
}

/// The default action for SIGPIPE (Rust ignores it at start).
fn restore_sigpipe() {
    // SAFETY: setting a signal's disposition to its default is
    // async-signal-safe and done before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn init_logs() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only for a person at a terminal: a log file stays plain text.
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
