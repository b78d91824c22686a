//! The client verbs: each maps to one API method, prints a short human line or
//! (with `--json`) the method's result as it is.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use crate::client::{self, CallError, Client, Target};

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
        let target = Target::resolve(self.url, self.token, &client::data_dir(data_dir))?;
        Client::connect(&target).await
    }
}

#[derive(Subcommand)]
pub enum NodeVerb {
    Info {
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum AgentVerb {
    Create {
        name: String,
        #[arg(long, default_value = "fake")]
        harness: String,
        #[arg(long)]
        persona: Option<String>,
        #[arg(long)]
        model: Option<String>,
        /// Peers it may message: `all` or comma-separated names.
        #[arg(long)]
        peers: Option<String>,
        /// Tools granted, comma-separated.
        #[arg(long, value_delimiter = ',')]
        tools: Vec<String>,
        /// A JSON file of fake-CLI rules: `[{"match": REGEX, "actions": [...]}]`.
        #[arg(long)]
        rules_file: Option<PathBuf>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Get {
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    List {
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
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Archive {
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
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
    /// Resume a paused conversation with the CLI's native resume.
    Continue {
        conversation: String,
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
pub enum TranscriptVerb {
    /// Read stored events.
    Read {
        conversation: String,
        /// Events with seq > N.
        #[arg(long)]
        after: Option<u64>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Follow events live (transcript.subscribe), from --from-seq if given.
    Follow {
        conversation: Option<String>,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long)]
        from_seq: Option<u64>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum TokenVerb {
    /// Mint a token on the node. Rights with admin or supervise are minted over
    /// the local Unix socket (never over the network).
    Mint {
        /// RESOURCE:OPERATION, e.g. agent:coder:observe, node:observe, agent:*:message.
        #[arg(long = "right")]
        rights: Vec<String>,
        /// Lifetime in seconds.
        #[arg(long)]
        ttl: Option<u64>,
        /// Only these methods.
        #[arg(long = "method")]
        methods: Vec<String>,
        /// The phone companion's read-only profile.
        #[arg(long, conflicts_with = "rights")]
        companion: bool,
        /// With --companion: also supervision.nudge and supervision.answer.
        #[arg(long, requires = "companion")]
        with_actions: bool,
        /// Sign offline with this root key file (e.g. the fleet owner key from
        /// `warren fleet init`) instead of asking a node.
        #[arg(long)]
        key_file: Option<PathBuf>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Narrow a token offline (no node needed). TOKEN `-` reads stdin.
    Attenuate {
        token: String,
        #[arg(long = "agent")]
        agents: Vec<String>,
        #[arg(long = "conversation")]
        conversations: Vec<String>,
        #[arg(long = "operation")]
        operations: Vec<String>,
        #[arg(long = "method")]
        methods: Vec<String>,
        /// Expire this many seconds from now.
        #[arg(long)]
        ttl: Option<u64>,
    },
    /// Show a token's blocks as Datalog (asks the node unless --offline).
    Inspect {
        token: String,
        #[arg(long)]
        offline: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Revoke a token by one of its revocation ids (see inspect).
    Revoke {
        revocation_id: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum SupervisionVerb {
    /// Global defaults, an agent's override and its effective policy.
    Get {
        agent: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Change an agent's supervision (local only: over the Unix socket).
    Set {
        agent: String,
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
        /// CLASS=ACTION (auto_approve | auto_deny | hold | default), repeatable.
        #[arg(long = "class")]
        classes: Vec<String>,
        #[arg(long)]
        mail_mode: Option<String>,
        #[arg(long)]
        nudge_text: Option<String>,
        #[arg(long)]
        stall_mins: Option<u32>,
        #[arg(long)]
        nudge_retries: Option<u32>,
        #[arg(long)]
        expect_work: Option<bool>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Dialogs held for a human.
    Holds {
        agent: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Answer a held dialog once: approve or deny (never a standing permission).
    Answer {
        hold: String,
        #[arg(value_parser = ["approve", "deny"])]
        decision: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The audit log, newest first.
    Audit {
        agent: Option<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The master switch and each agent's opt-in.
    Status {
        agent: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn supervision(verb: SupervisionVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let pretty = |v: &Value| println!("{}", serde_json::to_string_pretty(v).unwrap_or_default());
    match verb {
        SupervisionVerb::Get { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::SUPERVISION_GET, json!({ "agent": agent })).await, pretty)
        }
        SupervisionVerb::Holds { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::SUPERVISION_HOLDS, json!({ "agent": agent })).await,
                |v| {
                    for h in v.get("holds").and_then(Value::as_array).into_iter().flatten() {
                        println!(
                            "{}\t{}\t{}\t{}",
                            s(h, "id"),
                            s(h, "agent"),
                            s(h, "dialog_class"),
                            s(h, "summary")
                        );
                    }
                },
            )
        }
        SupervisionVerb::Answer {
            hold,
            decision,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(m::SUPERVISION_ANSWER, json!({ "hold": hold, "decision": decision }))
                .await;
            finish(out, r, |v| println!("{} (keys {})", s(v, "outcome"), s(v, "keys")))
        }
        SupervisionVerb::Audit { agent, limit, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(m::SUPERVISION_AUDIT, json!({ "agent": agent, "limit": limit }))
                .await;
            finish(out, r, |v| {
                for e in v.get("entries").and_then(Value::as_array).into_iter().flatten() {
                    println!(
                        "{:>5} {} {} {} {} {} {}",
                        e["id"],
                        s(e, "agent"),
                        s(e, "trigger"),
                        s(e, "dialog_class"),
                        s(e, "decision"),
                        s(e, "outcome"),
                        s(e, "subject")
                    );
                }
            })
        }
        SupervisionVerb::Status { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::SUPERVISION_STATUS, json!({ "agent": agent })).await,
                |v| {
                    println!("master switch: {}", if v["master"] == true { "on" } else { "off" });
                    for a in v.get("agents").and_then(Value::as_array).into_iter().flatten() {
                        let state = match (a["enabled"] == true, a["opted_in"] == true) {
                            (true, _) => "supervised",
                            (false, true) => "opted in (master switch off)",
                            _ => "not supervised",
                        };
                        println!("{}\t{state}", s(a, "agent"));
                    }
                },
            )
        }
        SupervisionVerb::Set {
            agent,
            enable,
            disable,
            classes,
            mail_mode,
            nudge_text,
            stall_mins,
            nudge_retries,
            expect_work,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent });
            if enable || disable {
                p["enabled"] = json!(enable);
            }
            if !classes.is_empty() {
                let mut map = serde_json::Map::new();
                for c in classes {
                    let (class, action) = c
                        .split_once('=')
                        .ok_or_else(|| anyhow::anyhow!("--class {c:?} must look like CLASS=ACTION"))?;
                    let action = if action == "default" {
                        Value::Null
                    } else {
                        json!(action)
                    };
                    map.insert(class.to_string(), action);
                }
                p["classes"] = Value::Object(map);
            }
            for (k, v) in [
                ("mail_mode", mail_mode.map(|x| json!(x))),
                ("nudge_text", nudge_text.map(|x| json!(x))),
            ] {
                if let Some(v) = v {
                    p[k] = v;
                }
            }
            if let Some(n) = stall_mins {
                p["stall_mins"] = json!(n);
            }
            if let Some(n) = nudge_retries {
                p["nudge_retries"] = json!(n);
            }
            if let Some(w) = expect_work {
                p["expect_work"] = json!(w);
            }
            let r = client::unix_call(&client::data_dir(data_dir), m::SUPERVISION_SET, p).await;
            finish(out, r, pretty)
        }
    }
}

#[derive(Subcommand)]
pub enum MailVerb {
    /// Send mail from one agent to another (needs `message` on the recipient,
    /// and the sender's grants.peers must allow it).
    Send {
        from: String,
        to: String,
        /// The body; `-` reads stdin.
        body: String,
        #[arg(long)]
        context: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// An agent's inbox after its acknowledged cursor (or --after).
    Inbox {
        agent: String,
        #[arg(long)]
        after: Option<u64>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Acknowledge an agent's inbox up to CURSOR.
    Ack {
        agent: String,
        cursor: u64,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn mail(verb: MailVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        MailVerb::Send {
            from,
            to,
            body,
            context,
            data_dir,
        } => {
            let body = if body == "-" {
                let mut buf = String::new();
                std::io::stdin().read_to_string(&mut buf)?;
                buf
            } else {
                body
            };
            let mut p = json!({ "from": from, "to": to, "body": body });
            if let Some(c) = context {
                p["context"] = json!(c);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_SEND, p).await, |v| {
                println!(
                    "sent {} (seq {})",
                    s(v, "message_id"),
                    v.get("seq").unwrap_or(&Value::Null)
                )
            })
        }
        MailVerb::Inbox {
            agent,
            after,
            limit,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent });
            if let Some(a) = after {
                p["after"] = json!(a);
            }
            if let Some(l) = limit {
                p["limit"] = json!(l);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_INBOX, p).await, |v| {
                for msg in v.get("messages").and_then(Value::as_array).into_iter().flatten() {
                    println!(
                        "{:>5} {} -> {}: {}",
                        msg["seq"],
                        s(msg, "from"),
                        s(msg, "to"),
                        s(msg, "body")
                    );
                }
                println!("cursor {}", v.get("cursor").unwrap_or(&Value::Null));
            })
        }
        MailVerb::Ack {
            agent,
            cursor,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(m::MAILBOX_ACK, json!({ "agent": agent, "cursor": cursor }))
                .await;
            finish(out, r, |v| {
                println!("acknowledged up to {}", v.get("cursor").unwrap_or(&Value::Null))
            })
        }
    }
}

#[derive(Subcommand)]
pub enum FleetVerb {
    /// Create a fleet owner key: its private half signs tokens offline
    /// (`warren token mint --key-file`), its public half goes into each
    /// node's `trusted_roots`.
    Init {
        /// Where to write the private key (created 0600, never overwritten).
        #[arg(long, default_value = "owner.key")]
        key_file: PathBuf,
    },
}

pub fn fleet(verb: FleetVerb, out: Output) -> anyhow::Result<ExitCode> {
    let FleetVerb::Init { key_file } = verb;
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let key = capabilities::RootKey::generate();
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(&key_file)
        .with_context(|| format!("creating {} (it must not exist yet)", key_file.display()))?;
    writeln!(f, "{}", key.private_hex())?;
    if out.json {
        println!("{}", json!({ "key_file": key_file, "public_key": key.public_hex() }));
    } else {
        println!("fleet owner key written to {}", key_file.display());
        println!("public key: {}", key.public_hex());
        println!(
            "trust it on each node, in warren.toml: trusted_roots = [\"{}\"]",
            key.public_hex()
        );
    }
    Ok(ExitCode::SUCCESS)
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
fn finish(out: Output, result: Result<Value, CallError>, human: impl FnOnce(&Value)) -> anyhow::Result<ExitCode> {
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
            }
            Ok(ExitCode::from(1))
        }
        Err(CallError::Transport(e)) => Err(e),
    }
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("-")
}

fn print_agent(v: &Value) {
    let a = v.get("agent").unwrap_or(v);
    let archived = if a.get("archived").and_then(Value::as_bool) == Some(true) {
        " (archived)"
    } else {
        ""
    };
    println!("{}\t{}{}", s(a, "name"), s(a, "harness"), archived);
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
}

fn print_event(e: &Value) {
    let text = s(e, "text");
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    println!(
        "{:>5} {:<12} {}",
        e.get("seq").and_then(Value::as_u64).unwrap_or(0),
        s(e, "speaker"),
        first
    );
    for l in lines {
        println!("{:>5} {:<12} {}", "", "", l);
    }
}

pub async fn node(verb: NodeVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let NodeVerb::Info { data_dir } = verb;
    let mut c = conn.connect(data_dir).await?;
    finish(out, c.call(m::NODE_INFO, json!({})).await, |v| {
        for k in ["node_id", "version", "endpoint", "runtime", "root_public_key"] {
            println!("{k:<16} {}", s(v, k));
        }
    })
}

fn read_rules(path: &Option<PathBuf>) -> anyhow::Result<Option<Value>> {
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
            persona,
            model,
            peers,
            tools,
            rules_file,
            data_dir,
        } => {
            let mut p = json!({ "name": name, "harness": harness });
            if let Some(x) = persona {
                p["persona"] = json!(x);
            }
            if let Some(x) = model {
                p["model"] = json!(x);
            }
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
        AgentVerb::List { data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::AGENT_LIST, json!({})).await, |v| {
                for a in v.get("agents").and_then(Value::as_array).into_iter().flatten() {
                    print_agent(a);
                }
            })
        }
        AgentVerb::Update {
            name,
            persona,
            model,
            rules_file,
            data_dir,
        } => {
            let mut p = json!({ "agent": name });
            if let Some(x) = persona {
                p["persona"] = json!(x);
            }
            if let Some(x) = model {
                p["model"] = json!(x);
            }
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
    let (method, conversation, data_dir) = match verb {
        ConvVerb::Continue { conversation, data_dir } => (m::CONVERSATION_CONTINUE, conversation, data_dir),
        ConvVerb::Pause { conversation, data_dir } => (m::CONVERSATION_PAUSE, conversation, data_dir),
        ConvVerb::Terminate { conversation, data_dir } => (m::CONVERSATION_TERMINATE, conversation, data_dir),
        ConvVerb::Get { conversation, data_dir } => (m::CONVERSATION_GET, conversation, data_dir),
        other => return conv_other(other, conn, out).await,
    };
    let mut c = conn.connect(data_dir).await?;
    finish(
        out,
        c.call(method, json!({ "conversation": conversation })).await,
        print_conv,
    )
}

async fn conv_other(verb: ConvVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        ConvVerb::Start { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::CONVERSATION_START, json!({ "agent": agent })).await,
                print_conv,
            )
        }
        ConvVerb::List { agent, state, data_dir } => {
            let mut p = json!({});
            if let Some(a) = agent {
                p["agent"] = json!(a);
            }
            if let Some(st) = state {
                p["state"] = json!(st);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::CONVERSATION_LIST, p).await, |v| {
                for x in v.get("conversations").and_then(Value::as_array).into_iter().flatten() {
                    print_conv(x);
                }
            })
        }
        ConvVerb::Screen { conversation, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::CONVERSATION_SCREEN, json!({ "conversation": conversation }))
                    .await,
                |v| {
                    for l in v.get("lines").and_then(Value::as_array).into_iter().flatten() {
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
            let r = c
                .call(
                    m::CONVERSATION_SEND_MESSAGE,
                    json!({ "conversation": conversation, "text": text }),
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

pub async fn transcript(verb: TranscriptVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        TranscriptVerb::Read {
            conversation,
            after,
            limit,
            data_dir,
        } => {
            let mut p = json!({ "conversation": conversation });
            if let Some(a) = after {
                p["after_seq"] = json!(a);
            }
            if let Some(l) = limit {
                p["limit"] = json!(l);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::TRANSCRIPT_READ, p).await, |v| {
                for e in v.get("events").and_then(Value::as_array).into_iter().flatten() {
                    print_event(e);
                }
            })
        }
        TranscriptVerb::Follow {
            conversation,
            agent,
            from_seq,
            data_dir,
        } => {
            let mut p = json!({});
            if let Some(x) = conversation {
                p["conversation"] = json!(x);
            }
            if let Some(x) = agent {
                p["agent"] = json!(x);
            }
            if let Some(x) = from_seq {
                p["from_seq"] = json!(x);
            }
            let mut c = conn.connect(data_dir).await?;
            if let Err(e) = c.call(m::TRANSCRIPT_SUBSCRIBE, p).await {
                return finish(out, Err(e), |_| {});
            }
            loop {
                match c.next_notification(Duration::from_secs(3600)).await? {
                    Some(n) => {
                        let e = n.params.get("event").cloned().unwrap_or(Value::Null);
                        if out.json {
                            println!("{}", serde_json::to_string(&e)?);
                        } else {
                            print_event(&e);
                        }
                    }
                    None => continue,
                }
            }
        }
    }
}

fn read_token_arg(token: String) -> anyhow::Result<String> {
    if token == "-" {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf)?;
        Ok(buf.trim().to_string())
    } else {
        Ok(token.trim().to_string())
    }
}

pub async fn token(verb: TokenVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    use capabilities::methods::{COMPANION_ACTIONS, COMPANION_READ, LOCAL_ONLY_OPERATIONS};
    match verb {
        TokenVerb::Mint {
            rights,
            ttl,
            methods,
            companion,
            with_actions,
            key_file,
            data_dir,
        } => {
            let (rights, methods) = if companion {
                let mut rights = vec!["node:observe".to_string()];
                let mut list: Vec<String> = COMPANION_READ.iter().map(|s| s.to_string()).collect();
                if with_actions {
                    rights.push("node:supervise".into());
                    list.extend(COMPANION_ACTIONS.iter().map(|s| s.to_string()));
                }
                (rights, list)
            } else {
                (rights, methods)
            };
            if rights.is_empty() {
                anyhow::bail!("give at least one --right RESOURCE:OPERATION (or --companion)");
            }
            if let Some(key_file) = key_file {
                let hex_key = std::fs::read_to_string(&key_file)
                    .with_context(|| format!("reading the key file {}", key_file.display()))?;
                let key = capabilities::RootKey::from_private_hex(&hex_key)
                    .with_context(|| format!("{} is not a root key", key_file.display()))?;
                let rights = rights
                    .iter()
                    .map(|r| capabilities::Right::parse_cli(r).map_err(|e| anyhow::anyhow!(e)))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let token = key.mint(&capabilities::MintSpec {
                    rights,
                    expires_at: ttl.map(|t| std::time::SystemTime::now() + Duration::from_secs(t)),
                    methods: (!methods.is_empty()).then_some(methods),
                    facts: vec![],
                })?;
                let v = json!({ "token": token, "revocation_ids": capabilities::inspect_unverified(&token)?.revocation_ids });
                return finish(out, Ok(v), |v| println!("{}", s(v, "token")));
            }
            let mut specs = vec![];
            let mut needs_local = false;
            for r in &rights {
                let right = capabilities::Right::parse_cli(r).map_err(|e| anyhow::anyhow!(e))?;
                needs_local |= LOCAL_ONLY_OPERATIONS.contains(&right.operation);
                specs.push(json!({ "resource": right.resource.to_string(), "operation": right.operation.as_str() }));
            }
            let mut p = json!({ "rights": specs });
            if let Some(t) = ttl {
                p["ttl_secs"] = json!(t);
            }
            if !methods.is_empty() {
                p["methods"] = json!(methods);
            }
            let r = if needs_local {
                client::unix_call(&client::data_dir(data_dir), m::TOKEN_MINT, p).await
            } else {
                conn.connect(data_dir).await?.call(m::TOKEN_MINT, p).await
            };
            finish(out, r, |v| println!("{}", s(v, "token")))
        }
        TokenVerb::Attenuate {
            token,
            agents,
            conversations,
            operations,
            methods,
            ttl,
        } => {
            let token = read_token_arg(token)?;
            let operations = operations
                .iter()
                .map(|o| o.parse::<capabilities::Operation>().map_err(|e| anyhow::anyhow!(e)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let r = capabilities::Restriction {
                agents,
                conversations,
                operations,
                methods,
                expires_at: ttl.map(|t| std::time::SystemTime::now() + Duration::from_secs(t)),
            };
            let narrowed = capabilities::attenuate(&token, &r)?;
            if out.json {
                println!("{}", json!({ "token": narrowed }));
            } else {
                println!("{narrowed}");
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenVerb::Inspect {
            token,
            offline,
            data_dir,
        } => {
            let token = read_token_arg(token)?;
            if offline {
                let i = capabilities::inspect_unverified(&token)?;
                let v = json!({ "blocks": i.blocks, "revocation_ids": i.revocation_ids, "verified": false });
                return finish(out, Ok(v), print_inspection);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::TOKEN_INSPECT, json!({ "token": token })).await,
                print_inspection,
            )
        }
        TokenVerb::Revoke {
            revocation_id,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c.call(m::TOKEN_REVOKE, json!({ "revocation_id": revocation_id })).await;
            finish(out, r, |_| println!("revoked"))
        }
    }
}

fn print_inspection(v: &Value) {
    for (i, b) in v
        .get("blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        println!("// block {i}{}", if i == 0 { " (authority)" } else { "" });
        println!("{}", b.as_str().unwrap_or("").trim_end());
    }
    println!("// revocation ids");
    for id in v.get("revocation_ids").and_then(Value::as_array).into_iter().flatten() {
        println!("{}", id.as_str().unwrap_or(""));
    }
    if let Some(verified) = v.get("verified").and_then(Value::as_bool) {
        println!("// verified by the node: {verified}");
    }
    if v.get("revoked").and_then(Value::as_bool) == Some(true) {
        println!("// REVOKED");
    }
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        println!("// {e}");
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
