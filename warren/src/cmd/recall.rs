//! `warren recall` (an agent's searchable documents and history) and
//! `warren tool` (the owner's tools: run one, read who ran what).

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, items, s};

#[derive(Subcommand)]
pub enum RecallVerb {
    /// Search an agent's stashed documents and its own past transcripts
    /// (words, "a phrase", prefix*, OR), best first.
    Search {
        agent: String,
        /// The query (several words are joined).
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Stash a document into an agent's recall (the text from --text, or stdin).
    Stash {
        agent: String,
        name: String,
        #[arg(long)]
        text: Option<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Forget a stashed document.
    Forget {
        agent: String,
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn recall(verb: RecallVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        RecallVerb::Search {
            agent,
            query,
            limit,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let p = json!({ "agent": agent, "query": query.join(" "), "limit": limit.unwrap_or(10) });
            finish(out, c.call(m::RECALL_SEARCH, p).await, |v| {
                let hits: Vec<&Value> = items(v, "hits").collect();
                if hits.is_empty() {
                    println!("no hits");
                }
                for h in hits {
                    println!(
                        "{:<10} {:<24} {}",
                        s(h, "source"),
                        s(h, "ref"),
                        s(h, "snippet").replace('\n', " ")
                    );
                }
            })
        }
        RecallVerb::Stash {
            agent,
            name,
            text,
            data_dir,
        } => {
            let text = match text {
                Some(t) => t,
                None => {
                    let mut buf = String::new();
                    std::io::stdin()
                        .take(recall::MAX_DOC_BYTES as u64 + 1)
                        .read_to_string(&mut buf)?;
                    buf
                }
            };
            let mut c = conn.connect(data_dir).await?;
            let p = json!({ "agent": agent, "name": name, "text": text });
            finish(out, c.call(m::RECALL_STASH, p).await, |v| {
                println!("stashed {} ({} bytes)", s(&v["doc"], "name"), v["doc"]["bytes"])
            })
        }
        RecallVerb::Forget { agent, name, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::RECALL_FORGET, json!({ "agent": agent, "name": name })).await,
                |_| println!("forgot {name}"),
            )
        }
    }
}

#[derive(Subcommand)]
pub enum ToolVerb {
    /// Run an owner tool (`[tools.NAME]`); prints its output and exits with its code.
    Invoke {
        tool: String,
        /// Passed to the tool as arguments, literally.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Who ran which tool, newest first.
    Log {
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn tool(verb: ToolVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        ToolVerb::Invoke { tool, args, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c.call(m::TOOL_INVOKE, json!({ "tool": tool, "args": args })).await;
            let exit = r.as_ref().ok().map(|v| v["exit_code"].as_i64().unwrap_or(1));
            let shown = finish(out, r, |v| {
                print!("{}", s(v, "stdout"));
                eprint!("{}", s(v, "stderr"));
                if v["truncated"] == true {
                    eprintln!("[warren: the output was cut at the tool's limit]");
                }
                if let Some(why) = v.get("stopped").and_then(Value::as_str) {
                    eprintln!("[warren: the tool {why}]");
                }
            })?;
            Ok(match exit {
                Some(code) if shown == ExitCode::SUCCESS => ExitCode::from(code.clamp(0, 255) as u8),
                _ => shown,
            })
        }
        ToolVerb::Log { limit, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::TOOL_LOG, json!({ "limit": limit.unwrap_or(50) })).await,
                |v| {
                    for e in items(v, "entries") {
                        println!(
                            "{:>6} {:<12} {:<16} exit {:<4} {:>6} ms {}",
                            e["id"],
                            s(e, "tool"),
                            e["agent"].as_str().unwrap_or("(owner)"),
                            e["exit_code"],
                            e["duration_ms"],
                            e["args"].as_array().map(|a| a.len()).unwrap_or(0)
                        );
                    }
                },
            )
        }
    }
}
