//! `warren transcript read|follow`: a conversation's stored events, and
//! following them live.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, items, put, s};

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

pub async fn transcript(verb: TranscriptVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        TranscriptVerb::Read {
            conversation,
            after,
            limit,
            data_dir,
        } => {
            let mut p = json!({ "conversation": conversation });
            put(&mut p, "after_seq", after);
            put(&mut p, "limit", limit);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::TRANSCRIPT_READ, p).await, |v| {
                for e in items(v, "events") {
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
            put(&mut p, "conversation", conversation);
            put(&mut p, "agent", agent);
            put(&mut p, "from_seq", from_seq);
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
