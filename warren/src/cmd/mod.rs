//! The client verbs: each maps to one API method, prints a short human line or
//! (with `--json`) the method's result as it is.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use crate::client::{self, CallError, Client, Target};

mod budget;
mod config;
mod console;
mod egress;
mod fleet;
pub mod hook;
mod mail;
mod monitor;
mod push;
mod recall;
mod secrets;
mod spend;
mod supervision;
mod task;
mod tokens;
mod transcript;
mod usage;
mod workspace;

pub use budget::{BudgetVerb, budget};
pub use config::{ConfigVerb, config};
pub use console::{ConsoleVerb, console};
pub use egress::{EgressVerb, egress};
pub use fleet::{FleetVerb, fleet};
pub use mail::{MailVerb, mail};
pub use monitor::{MonitorVerb, monitor};
pub use push::{PushVerb, push};
pub use recall::{RecallVerb, ToolVerb, recall, tool};
pub use spend::{SpendArgs, spend};
pub use supervision::{SupervisionVerb, supervision};
pub use task::{TaskVerb, task};
pub use tokens::{TokenVerb, token};
pub use transcript::{TranscriptVerb, transcript};
pub use usage::{UsageArgs, usage};

#[derive(Clone, Copy)]
pub struct Output {
    pub json: bool,
}

/// How a verb reaches the node.
pub struct Conn {
    url: Option<String>,
    token: Option<String>,
}

impl Conn {
    pub fn new(url: Option<String>, token: Option<String>) -> Conn {
        Conn { url, token }
    }

    pub async fn connect(self, data_dir: Option<PathBuf>) -> anyhow::Result<Client> {
        let dir = client::data_dir(data_dir);
        let target = Target::resolve(self.url, self.token, &dir)?;
        // A local node's self-signed certificate (`warren up --tls`).
        Client::connect_trusting(&target, &[node::api::tls::self_signed_paths(&dir).0]).await
    }
}

#[derive(Subcommand)]
pub enum NodeVerb {
    /// What a node says about itself: this one, or a member's (`NODE`).
    Info {
        node: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// An agent's container limits (Docker runtime).
#[derive(clap::Args)]
pub struct ResourceArgs {
    /// Memory limit of its containers, MiB.
    #[arg(long)]
    memory_mb: Option<u64>,
    /// CPU limit of its containers (e.g. 0.5).
    #[arg(long)]
    cpus: Option<f64>,
    /// Process limit of its containers.
    #[arg(long)]
    pids: Option<i64>,
}

impl ResourceArgs {
    /// Sets `resources` in `p` when any limit was given.
    fn put_into(self, p: &mut Value) {
        if self.memory_mb.is_some() || self.cpus.is_some() || self.pids.is_some() {
            let mut r = json!({});
            put(&mut r, "memory_mb", self.memory_mb);
            put(&mut r, "cpus", self.cpus);
            put(&mut r, "pids", self.pids);
            p["resources"] = r;
        }
    }
}

#[derive(Subcommand)]
pub enum AgentVerb {
    /// Create an agent: a durable definition (harness, persona, model,
    /// grants, limits) whose conversations run that CLI.
    Create {
        /// `NAME`, or `NAME@NODE` to place it on a member of the fleet.
        name: String,
        #[arg(long, default_value = "fake")]
        harness: String,
        /// The member to place it on (it stays pinned there); same as NAME@NODE.
        #[arg(long)]
        node: Option<String>,
        #[arg(long)]
        persona: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// Peers it may message: `all` (this node's agents) or comma-separated
        /// names, `NAME@NODE` for an agent homed on another member.
        #[arg(long)]
        peers: Option<String>,
        /// Tools granted, comma-separated.
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// A JSON file of fake-CLI rules: `[{"match": REGEX, "actions": [...]}]`.
        #[arg(long)]
        rules_file: Option<PathBuf>,
        #[command(flatten)]
        resources: ResourceArgs,
        #[command(flatten)]
        workspace: workspace::RepoArgs,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Get {
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    List {
        /// Every member's agents (each shown as NAME@NODE).
        #[arg(long)]
        fleet: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Update {
        name: String,
        #[arg(long)]
        persona: Option<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        rules_file: Option<PathBuf>,
        #[command(flatten)]
        resources: ResourceArgs,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Archive {
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Run the CLI's own login flow for AGENT in its guest (an interactive
    /// terminal; what the CLI stores lands in the agent's home). Ctrl-]
    /// detaches; the session ends when the CLI exits.
    Login {
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// An agent's own secrets (e.g. its model API key): set, unset, list.
    Secret {
        #[command(subcommand)]
        verb: secrets::SecretVerb,
    },
}

#[derive(Subcommand)]
pub enum ConvVerb {
    /// Start a conversation for AGENT (or get its live one).
    Start {
        agent: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Resume a paused conversation with the CLI's native resume (or start
    /// the CLI fresh when it never wrote the session).
    Continue {
        conversation: String,
        /// Start the CLI fresh in the same conversation, keeping the
        /// transcript: its own context is not restored.
        #[arg(long)]
        fresh: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Pause {
        conversation: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Terminate {
        conversation: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Get {
        conversation: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    List {
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        state: Option<String>,
        /// Every member's conversations.
        #[arg(long)]
        fleet: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Its worktree's changes against the baseline: committed and not.
    Diff {
        conversation: String,
        /// Cut the patch at this many bytes (the file list stays whole).
        #[arg(long)]
        max_bytes: Option<u64>,
        /// Only the changed files and their +/- counts.
        #[arg(long)]
        stat: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Print the conversation's screen.
    Screen {
        conversation: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Send a whole message (atomic; waits for IDLE). TEXT `-` reads stdin.
    Send {
        conversation: String,
        text: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Send raw keystrokes. Escapes: \r \n \t \e \xNN.
    Keys {
        conversation: String,
        keys: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Resize {
        conversation: String,
        rows: u16,
        cols: u16,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Interactive terminal on the conversation; detach with Ctrl-] (or --detach-key).
    Attach {
        conversation: String,
        /// A control key to detach with, e.g. `ctrl-]` or `ctrl-q`.
        #[arg(long, default_value = "ctrl-]")]
        detach_key: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum AdminVerb {
    /// Refold the projections from the event log (the node must be stopped).
    Rebuild {
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// Prints a call's outcome; RPC errors exit 1 with their code and message.
pub(crate) fn finish(
    out: Output,
    result: Result<Value, CallError>,
    human: impl FnOnce(&Value),
) -> anyhow::Result<ExitCode> {
    match result {
        Ok(v) => {
            if out.json {
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else {
                human(&v);
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(CallError::Rpc(e)) => {
            if out.json {
                println!("{}", serde_json::to_string_pretty(&json!({ "error": e }))?);
            } else {
                eprintln!("error {}: {}", e.code, e.message);
                if let Some(setting) = e.data.as_ref().and_then(|d| d.get("setting")).and_then(Value::as_str) {
                    eprintln!("  setting to fix: {setting}");
                }
            }
            Ok(ExitCode::from(1))
        }
        Err(CallError::Transport(e)) => Err(e),
    }
}

/// Sets `p[key]` when `value` is given.
pub(crate) fn put<T: serde::Serialize>(p: &mut Value, key: &str, value: Option<T>) {
    if let Some(v) = value {
        p[key] = json!(v);
    }
}

/// The elements of the array `v[k]` (none when it is absent).
pub(crate) fn items<'a>(v: &'a Value, k: &str) -> impl Iterator<Item = &'a Value> {
    v.get(k).and_then(Value::as_array).into_iter().flatten()
}

pub(crate) fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("-")
}

/// `NAME@NODE` for an item of a fleet-wide list (`node` names its member),
/// else the bare value of `key`.
pub(crate) fn at_node(v: &Value, key: &str) -> String {
    match v.get("node").and_then(Value::as_str) {
        Some(n) => format!("{}@{n}", s(v, key)),
        None => s(v, key).to_string(),
    }
}

/// Asks for every member's items when `fleet`.
pub(crate) fn put_fleet(p: &mut Value, fleet: bool) {
    if fleet {
        p["fleet"] = json!(true);
    }
}

fn print_agent(v: &Value) {
    let a = v.get("agent").unwrap_or(v);
    let archived = if a.get("archived").and_then(Value::as_bool) == Some(true) {
        " (archived)"
    } else {
        ""
    };
    println!("{}\t{}{}", at_node(a, "name"), s(a, "harness"), archived);
    workspace::print_agent_workspace(a);
}

/// Members a fleet-wide list could not ask, on stderr.
pub(crate) fn print_unreachable(v: &Value) {
    for u in items(v, "unreachable") {
        eprintln!("node {} did not answer: {}", s(u, "node"), s(u, "reason"));
    }
}

/// A long request's progress (e.g. a first run building a guest image), on
/// stderr with the time since the request began.
fn print_progress(p: &Value) {
    let secs = p.get("elapsed_ms").and_then(Value::as_u64).unwrap_or(0) as f64 / 1000.0;
    eprintln!("[{secs:6.1} s] {}", s(p, "message"));
}

fn print_conv(v: &Value) {
    let c = v.get("conversation").unwrap_or(v);
    let reason = c
        .get("pause_reason")
        .and_then(Value::as_str)
        .map(|r| format!("\t({r})"))
        .unwrap_or_default();
    println!(
        "{}\t{}\t{}\t{}{}",
        s(c, "id"),
        s(c, "agent"),
        s(c, "state"),
        s(c, "status"),
        reason
    );
    workspace::print_conv_workspace(c);
}

pub async fn node(verb: NodeVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let NodeVerb::Info { node, data_dir } = verb;
    let mut c = conn.connect(data_dir).await?;
    let mut p = json!({});
    put(&mut p, "node", node);
    finish(out, c.call(m::NODE_INFO, p).await, |v| {
        for k in ["name", "node_id", "version", "endpoint", "runtime", "root_public_key"] {
            println!("{k:<16} {}", s(v, k));
        }
        let cap = &v["capacity"];
        println!(
            "{:<16} {} CPUs, {} MiB, {} live",
            "capacity", cap["cpus"], cap["memory_mb"], cap["guests"]
        );
        println!("{:<16} {}", "prices", s(&v["pricing"], "source"));
        for w in items(v, "harness_warnings") {
            println!("{:<16} {}", "warning", w.as_str().unwrap_or_default());
        }
    })
}

pub(crate) fn read_rules(path: &Option<PathBuf>) -> anyhow::Result<Option<Value>> {
    match path {
        None => Ok(None),
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            let v: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", p.display()))?;
            // Accept either the list or the fake CLI's `{"rules": [...]}` file.
            Ok(Some(v.get("rules").cloned().unwrap_or(v)))
        }
    }
}

pub async fn agent(verb: AgentVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        AgentVerb::Create {
            name,
            harness,
            node,
            persona,
            model,
            peers,
            tools,
            rules_file,
            resources,
            workspace,
            data_dir,
        } => {
            let (name, node) = match name.rsplit_once('@') {
                Some((n, at)) if node.is_none() => (n.to_string(), Some(at.to_string())),
                Some(_) => anyhow::bail!("give the node once: NAME@NODE or --node NODE"),
                None => (name, node),
            };
            let mut p = json!({ "name": name, "harness": harness });
            put(&mut p, "node", node);
            resources.put_into(&mut p);
            put(&mut p, "persona", persona);
            put(&mut p, "model", model);
            let mut grants = json!({});
            if let Some(peers) = peers {
                grants["peers"] = if peers == "all" {
                    json!("all")
                } else {
                    json!(peers.split(',').map(str::trim).collect::<Vec<_>>())
                };
            }
            if !tools.is_empty() {
                grants["tools"] = json!(tools);
            }
            p["grants"] = grants;
            if let Some(rules) = read_rules(&rules_file)? {
                p["rules"] = rules;
            }
            workspace.put_into(&mut p)?;
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::AGENT_CREATE, p).await, print_agent)
        }
        AgentVerb::Get { name, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::AGENT_GET, json!({ "agent": name })).await, |v| {
                println!(
                    "{}",
                    serde_json::to_string_pretty(v.get("agent").unwrap_or(v)).unwrap_or_default()
                )
            })
        }
        AgentVerb::List { fleet, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({});
            put_fleet(&mut p, fleet);
            finish(out, c.call(m::AGENT_LIST, p).await, |v| {
                for a in items(v, "agents") {
                    print_agent(a);
                }
                print_unreachable(v);
            })
        }
        AgentVerb::Update {
            name,
            persona,
            model,
            rules_file,
            resources,
            data_dir,
        } => {
            let mut p = json!({ "agent": name });
            resources.put_into(&mut p);
            put(&mut p, "persona", persona);
            put(&mut p, "model", model);
            if let Some(rules) = read_rules(&rules_file)? {
                p["rules"] = rules;
            }
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::AGENT_UPDATE, p).await, print_agent)
        }
        AgentVerb::Archive { name, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::AGENT_ARCHIVE, json!({ "agent": name })).await,
                print_agent,
            )
        }
        AgentVerb::Secret { verb } => secrets::secret(verb, out).await,
        AgentVerb::Login { name, data_dir } => {
            let r = client::unix_call(
                &client::data_dir(data_dir.clone()),
                m::AGENT_LOGIN,
                json!({ "agent": name }),
            )
            .await;
            let conv = match r {
                Ok(v) => v["conversation"]["id"].as_str().unwrap_or_default().to_string(),
                Err(e) => return finish(out, Err(e), |_| {}),
            };
            eprintln!("login session {conv} for {name}: the CLI's own login screen follows (Ctrl-] detaches)");
            let c = conn.connect(data_dir).await?;
            crate::attach::run(c, &conv, crate::attach::parse_detach_key("ctrl-]")?).await?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Turns `\r`, `\n`, `\t`, `\e`, `\\` and `\xNN` into their bytes.
pub fn unescape_keys(s: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('r') => out.push('\r'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('e') => out.push('\x1b'),
            Some('\\') => out.push('\\'),
            Some('x') => {
                let hex: String = chars.by_ref().take(2).collect();
                let b = u8::from_str_radix(&hex, 16).with_context(|| format!("bad escape \\x{hex}"))?;
                out.push(char::from(b));
            }
            Some(other) => anyhow::bail!("unknown escape \\{other} (use \\r \\n \\t \\e \\\\ \\xNN)"),
            None => anyhow::bail!("a trailing backslash"),
        }
    }
    Ok(out)
}

pub async fn conv(verb: ConvVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let (method, params, data_dir) = match verb {
        ConvVerb::Continue {
            conversation,
            fresh,
            data_dir,
        } => {
            let mut p = json!({ "conversation": conversation });
            if fresh {
                p["fresh"] = json!(true);
            }
            (m::CONVERSATION_CONTINUE, p, data_dir)
        }
        ConvVerb::Pause { conversation, data_dir } => {
            (m::CONVERSATION_PAUSE, json!({ "conversation": conversation }), data_dir)
        }
        ConvVerb::Terminate { conversation, data_dir } => (
            m::CONVERSATION_TERMINATE,
            json!({ "conversation": conversation }),
            data_dir,
        ),
        ConvVerb::Get { conversation, data_dir } => {
            (m::CONVERSATION_GET, json!({ "conversation": conversation }), data_dir)
        }
        other => return conv_other(other, conn, out).await,
    };
    let mut c = conn.connect(data_dir).await?;
    c.on_progress(print_progress);
    finish(out, c.call(method, params).await, print_conv)
}

async fn conv_other(verb: ConvVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        ConvVerb::Start { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            c.on_progress(print_progress);
            finish(
                out,
                c.call(m::CONVERSATION_START, json!({ "agent": agent })).await,
                print_conv,
            )
        }
        ConvVerb::List {
            agent,
            state,
            fleet,
            data_dir,
        } => {
            let mut p = json!({});
            put(&mut p, "agent", agent);
            put(&mut p, "state", state);
            put_fleet(&mut p, fleet);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::CONVERSATION_LIST, p).await, |v| {
                for x in items(v, "conversations") {
                    print_conv(x);
                }
                print_unreachable(v);
            })
        }
        ConvVerb::Diff {
            conversation,
            max_bytes,
            stat,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "conversation": conversation });
            put(&mut p, "max_bytes", max_bytes);
            finish(out, c.call(m::CONVERSATION_DIFF, p).await, |v| {
                workspace::print_diff(v, stat)
            })
        }
        ConvVerb::Screen { conversation, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::CONVERSATION_SCREEN, json!({ "conversation": conversation }))
                    .await,
                |v| {
                    for l in items(v, "lines") {
                        println!("{}", l.as_str().unwrap_or(""));
                    }
                    println!("[{}]", s(v, "status"));
                },
            )
        }
        ConvVerb::Send {
            conversation,
            text,
            data_dir,
        } => {
            let text = if text == "-" {
                let mut buf = String::new();
                std::io::stdin().read_to_string(&mut buf)?;
                buf.trim_end_matches('\n').to_string()
            } else {
                text
            };
            let mut c = conn.connect(data_dir).await?;
            // One key per invocation: should this call reach the node twice,
            // the message is typed once.
            let key = node::util::new_id("send-");
            let r = c
                .call(
                    m::CONVERSATION_SEND_MESSAGE,
                    json!({ "conversation": conversation, "text": text, "idempotency_key": key }),
                )
                .await;
            finish(out, r, |v| {
                println!(
                    "delivered {} (seq {})",
                    s(v, "message_id"),
                    v.get("seq").unwrap_or(&Value::Null)
                )
            })
        }
        ConvVerb::Keys {
            conversation,
            keys,
            data_dir,
        } => {
            let keys = unescape_keys(&keys)?;
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(
                    m::CONVERSATION_SEND_KEYS,
                    json!({ "conversation": conversation, "keys": keys }),
                )
                .await;
            finish(out, r, |_| {})
        }
        ConvVerb::Resize {
            conversation,
            rows,
            cols,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(
                    m::CONVERSATION_RESIZE,
                    json!({ "conversation": conversation, "rows": rows, "cols": cols }),
                )
                .await;
            finish(out, r, |_| {})
        }
        ConvVerb::Attach {
            conversation,
            detach_key,
            data_dir,
        } => {
            let key = crate::attach::parse_detach_key(&detach_key)?;
            let c = conn.connect(data_dir).await?;
            crate::attach::run(c, &conversation, key).await?;
            Ok(ExitCode::SUCCESS)
        }
        ConvVerb::Continue { .. } | ConvVerb::Pause { .. } | ConvVerb::Terminate { .. } | ConvVerb::Get { .. } => {
            anyhow::bail!("handled by conv()")
        }
    }
}

pub async fn admin(verb: AdminVerb, out: Output) -> anyhow::Result<ExitCode> {
    let AdminVerb::Rebuild { data_dir } = verb;
    let data_dir = client::data_dir(data_dir);
    let report = node::server::rebuild(&data_dir).await?;
    if out.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "rebuilt from {} events: {} agents, {} conversations, {} transcript events",
            report["events"], report["agents"], report["conversations"], report["transcript_events"]
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_escapes() {
        assert_eq!(unescape_keys(r"1\r").expect("ok"), "1\r");
        assert_eq!(unescape_keys(r"\e[A\x03").expect("ok"), "\x1b[A\x03");
        assert!(unescape_keys(r"\q").is_err());
        assert!(unescape_keys(r"\xZZ").is_err());
    }
}
