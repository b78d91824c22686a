//! `warren supervision`: settings, status, holds, answers, learned rules and
//! the audit log.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, at_node, finish, items, print_unreachable, put, put_fleet, s};
use crate::client;

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
        /// Every member's holds (each agent shown as NAME@NODE).
        #[arg(long)]
        fleet: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Answer a held dialog once: approve or deny (never a standing permission).
    Answer {
        hold: String,
        #[arg(value_parser = ["approve", "deny"])]
        decision: String,
        /// With approve: also learn the held command as a rule of the agent's
        /// workspace (local only: over the Unix socket).
        #[arg(long)]
        learn: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The learned approval rules of an agent's workspace.
    Rules {
        agent: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Learn an approval rule for an agent's workspace: a command's words, a
    /// final `*` matching any further words (local only: over the Unix socket).
    Learn {
        agent: String,
        pattern: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Forget a learned approval rule (local only: over the Unix socket).
    Forget {
        agent: String,
        pattern: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Nudge an agent's live conversation once (default: its nudge text).
    Nudge {
        agent: String,
        #[arg(long)]
        conversation: Option<String>,
        #[arg(long)]
        text: Option<String>,
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
        SupervisionVerb::Holds { agent, fleet, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "agent": agent });
            put_fleet(&mut p, fleet);
            finish(out, c.call(m::SUPERVISION_HOLDS, p).await, |v| {
                for h in items(v, "holds") {
                    println!(
                        "{}\t{}\t{}\t{}",
                        s(h, "id"),
                        at_node(h, "agent"),
                        s(h, "dialog_class"),
                        s(h, "summary")
                    );
                }
                print_unreachable(v);
            })
        }
        SupervisionVerb::Answer {
            hold,
            decision,
            learn,
            data_dir,
        } => {
            let r = if learn {
                // Learning is standing authority: the local socket only.
                let p = json!({ "hold": hold, "decision": decision, "learn": true });
                client::unix_call(&client::data_dir(data_dir), m::SUPERVISION_ANSWER, p).await
            } else {
                let mut c = conn.connect(data_dir).await?;
                c.call(m::SUPERVISION_ANSWER, json!({ "hold": hold, "decision": decision }))
                    .await
            };
            finish(out, r, |v| {
                println!("{} (keys {})", s(v, "outcome"), s(v, "keys"));
                if let Some(l) = v.get("learned") {
                    println!("learned `{}` for {}", s(l, "pattern"), s(l, "workspace"));
                }
                if let Some(e) = v.get("learn_error") {
                    eprintln!("not learned: {}", e.as_str().unwrap_or_default());
                }
            })
        }
        SupervisionVerb::Rules { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c.call(m::SUPERVISION_RULES, json!({ "agent": agent })).await;
            finish(out, r, |v| {
                let rules = v.get("rules").and_then(Value::as_array).cloned().unwrap_or_default();
                println!(
                    "{}: {} learned rule(s) for {}",
                    s(v, "agent"),
                    rules.len(),
                    s(v, "workspace")
                );
                for p in rules {
                    println!("{}", p.as_str().unwrap_or_default());
                }
            })
        }
        SupervisionVerb::Learn {
            agent,
            pattern,
            data_dir,
        } => {
            let p = json!({ "agent": agent, "pattern": pattern });
            let r = client::unix_call(&client::data_dir(data_dir), m::SUPERVISION_LEARN, p).await;
            finish(out, r, |v| {
                println!("learned `{}` for {}", s(v, "pattern"), s(v, "workspace"))
            })
        }
        SupervisionVerb::Forget {
            agent,
            pattern,
            data_dir,
        } => {
            let p = json!({ "agent": agent, "pattern": pattern });
            let r = client::unix_call(&client::data_dir(data_dir), m::SUPERVISION_FORGET, p).await;
            finish(out, r, |v| {
                println!("forgot `{}` for {}", s(v, "pattern"), s(v, "workspace"))
            })
        }
        SupervisionVerb::Nudge {
            agent,
            conversation,
            text,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(
                    m::SUPERVISION_NUDGE,
                    json!({ "agent": agent, "conversation": conversation, "text": text }),
                )
                .await;
            finish(out, r, |v| println!("{} (audit {})", s(v, "outcome"), v["entry_id"]))
        }
        SupervisionVerb::Audit { agent, limit, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c
                .call(m::SUPERVISION_AUDIT, json!({ "agent": agent, "limit": limit }))
                .await;
            finish(out, r, |v| {
                for e in items(v, "entries") {
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
                    for a in items(v, "agents") {
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
            put(&mut p, "stall_mins", stall_mins);
            put(&mut p, "nudge_retries", nudge_retries);
            put(&mut p, "expect_work", expect_work);
            let r = client::unix_call(&client::data_dir(data_dir), m::SUPERVISION_SET, p).await;
            finish(out, r, pretty)
        }
    }
}
