//! `warren monitor`: monitor agents. `attach` is the one form: it creates the
//! monitor agent from the built-in advisor persona when it does not exist
//! (by default on the target agent's home, as seed 002 says), then attaches
//! it there with every default filled in.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, at_node, finish, items, print_unreachable, put, put_fleet, read_rules, s};

#[derive(Subcommand)]
pub enum MonitorVerb {
    /// Watch an agent (every conversation it starts) or one conversation.
    Attach {
        /// The agent to watch (`NAME`, or `NAME@NODE` on any member).
        #[arg(long, conflicts_with = "conversation", required_unless_present = "conversation")]
        target: Option<String>,
        /// One conversation to watch instead of an agent.
        #[arg(long)]
        conversation: Option<String>,
        /// Comma-separated keywords.
        #[arg(long, value_delimiter = ',', required = true)]
        keywords: Vec<String>,
        /// Keywords match only delimited (whole words).
        #[arg(long)]
        word: bool,
        #[arg(long)]
        case_sensitive: bool,
        /// Only these speakers' lines are matched (comma-separated).
        #[arg(long, value_delimiter = ',')]
        speakers: Vec<String>,
        /// The monitor reads but never advises.
        #[arg(long)]
        watch_only: bool,
        /// The monitor agent, `NAME` on this node or `NAME@NODE` (default:
        /// `monitor-TARGET` on the target's home); created when missing.
        #[arg(long)]
        monitor: Option<String>,
        /// The monitor's harness when it is created.
        #[arg(long, default_value = "claude")]
        harness: String,
        #[arg(long)]
        model: Option<String>,
        /// Fake-CLI rules for a created `fake` monitor (tests).
        #[arg(long)]
        rules_file: Option<PathBuf>,
        /// Wake->advise cycles without a human message before the breaker trips.
        #[arg(long)]
        max_cycles: Option<u64>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    List {
        #[arg(long)]
        monitor: Option<String>,
        #[arg(long)]
        target: Option<String>,
        /// Every member's attachments (each monitor shown as NAME@NODE).
        #[arg(long)]
        fleet: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    Detach {
        attachment: String,
        /// The member that holds it (default: this node).
        #[arg(long)]
        node: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Reset a tripped breaker (a human's decision).
    Rearm {
        attachment: String,
        /// The member that holds it (default: this node).
        #[arg(long)]
        node: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn print_attachment(a: &Value) {
    let target = a["target"]["agent"]
        .as_str()
        .or(a["target"]["conversation"].as_str())
        .unwrap_or("-");
    let keywords: Vec<&str> = items(&a["trigger"], "keywords")
        .filter_map(|k| k["text"].as_str())
        .collect();
    println!(
        "{}\t{} -> {}\t{}\t{}\tcycles {}\t[{}]",
        s(a, "id"),
        at_node(a, "monitor"),
        target,
        if a["inject"] == false { "watch-only" } else { "advising" },
        s(a, "state"),
        a["cycles"],
        keywords.join(", ")
    );
}

fn default_monitor_name(target: &str) -> String {
    let bare = target.split('@').next().unwrap_or(target);
    let mut name = format!("monitor-{bare}");
    name.truncate(63);
    name.trim_end_matches('-').to_string()
}

/// The member that homes the target (agent `NAME`/`NAME@NODE`, or a
/// conversation id) when it is not this node: `NAME@NODE` says so; a name or
/// id this node does not home is looked up in the fleet's list (one match).
/// `None`: this node (or not found: the attach then says so).
async fn home_of(c: &mut crate::client::Client, agent: Option<&str>, conversation: Option<&str>) -> Option<String> {
    let (method, list, key, target) = match (agent, conversation) {
        (Some(a), _) => (m::AGENT_LIST, "agents", "name", a),
        (None, Some(conv)) => (m::CONVERSATION_LIST, "conversations", "id", conv),
        (None, None) => return None,
    };
    if agent.is_some()
        && let Some((_, at)) = target.split_once('@')
    {
        return Some(at.to_string());
    }
    let named = |v: &Value| -> Vec<String> {
        items(v, list)
            .filter(|x| x[key] == target)
            .map(|x| x["node"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let local = c.call(method, json!({})).await.ok()?;
    if !named(&local).is_empty() {
        return None;
    }
    let all = c.call(method, json!({ "fleet": true })).await.ok()?;
    match named(&all).as_slice() {
        [one] if !one.is_empty() => Some(one.clone()),
        _ => None,
    }
}

pub async fn monitor(verb: MonitorVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        MonitorVerb::Attach {
            target,
            conversation,
            keywords,
            word,
            case_sensitive,
            speakers,
            watch_only,
            monitor,
            harness,
            model,
            rules_file,
            max_cycles,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let watched = target.clone().or(conversation.clone()).unwrap_or_default();
            // Where the monitor homes (`None`: this node): as `--monitor`
            // says, else the target's home.
            let (name, home) = match &monitor {
                Some(m) => match m.split_once('@') {
                    Some((n, at)) => (n.to_string(), Some(at.to_string())),
                    None => (m.clone(), None),
                },
                None => (
                    default_monitor_name(&watched),
                    home_of(&mut c, target.as_deref(), conversation.as_deref()).await,
                ),
            };
            let address = match &home {
                Some(h) => format!("{name}@{h}"),
                None => name.clone(),
            };
            if c.call(m::AGENT_GET, json!({ "agent": address })).await.is_err() {
                let mut p = json!({
                    "name": name,
                    "harness": harness,
                    "persona": node::monitors::ADVISOR_PERSONA,
                });
                put(&mut p, "node", home.clone());
                put(&mut p, "model", model);
                if let Some(rules) = read_rules(&rules_file)? {
                    p["rules"] = rules;
                }
                if let Err(e) = c.call(m::AGENT_CREATE, p).await {
                    return finish(out, Err(e), |_| {});
                }
                eprintln!("created monitor agent {address} ({harness}, the advisor persona)");
            }
            let mode = if word { "word" } else { "substring" };
            let mut trigger = json!({
                "keywords": keywords.iter().map(|k| json!({ "text": k, "mode": mode })).collect::<Vec<_>>(),
                "case_sensitive": case_sensitive,
            });
            if !speakers.is_empty() {
                trigger["speakers"] = json!(speakers);
            }
            let target = match (target, conversation) {
                (Some(a), _) => json!({ "agent": a }),
                (None, Some(conv)) => json!({ "conversation": conv }),
                (None, None) => anyhow::bail!("give --target AGENT or --conversation ID"),
            };
            let mut p = json!({ "monitor": name, "target": target, "trigger": trigger, "inject": !watch_only });
            put(&mut p, "node", home);
            if let Some(n) = max_cycles {
                p["breaker"] = json!({ "max_cycles": n });
            }
            finish(out, c.call(m::MONITOR_ATTACH, p).await, |v| {
                print_attachment(&v["attachment"])
            })
        }
        MonitorVerb::List {
            monitor,
            target,
            fleet,
            data_dir,
        } => {
            let mut p = json!({});
            put(&mut p, "monitor", monitor);
            put(&mut p, "target", target);
            put_fleet(&mut p, fleet);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MONITOR_LIST, p).await, |v| {
                for a in items(v, "attachments") {
                    print_attachment(a);
                }
                print_unreachable(v);
            })
        }
        MonitorVerb::Detach {
            attachment,
            node,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "attachment": attachment });
            put(&mut p, "node", node);
            finish(out, c.call(m::MONITOR_DETACH, p).await, |_| {
                println!("detached {attachment}")
            })
        }
        MonitorVerb::Rearm {
            attachment,
            node,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "attachment": attachment });
            put(&mut p, "node", node);
            finish(out, c.call(m::MONITOR_REARM, p).await, |v| {
                if v["rearmed"] == true {
                    println!("re-armed {attachment}")
                } else {
                    println!("{attachment} was armed already")
                }
            })
        }
    }
}
