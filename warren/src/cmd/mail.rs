//! `warren mail`: the mailbox between agents.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, at_node, finish, items, print_unreachable, put, put_fleet, s};

#[derive(Subcommand)]
pub enum MailVerb {
    /// Send mail from one agent to another (needs `message` on the recipient,
    /// and the sender's grants.peers must allow it). TO is an agent on the
    /// sender's node, or NAME@NODE for one homed on another member.
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
    /// AGENT's mail to agents on other members, newest first: delivered,
    /// pending (kept until the member takes it) or refused.
    Outbox {
        agent: String,
        #[arg(long)]
        before: Option<u64>,
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// How many messages each agent (or AGENT) has not acknowledged.
    Unread {
        agent: Option<String>,
        /// Every member's agents (each shown as NAME@NODE).
        #[arg(long)]
        fleet: bool,
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
            put(&mut p, "context", context);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_SEND, p).await, |v| {
                println!(
                    "sent {} (seq {}, {})",
                    s(v, "message_id"),
                    v.get("seq").unwrap_or(&Value::Null),
                    s(v, "state")
                )
            })
        }
        MailVerb::Outbox {
            agent,
            before,
            limit,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent });
            put(&mut p, "before", before);
            put(&mut p, "limit", limit);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_OUTBOX, p).await, |v| {
                for msg in items(v, "messages") {
                    let reason = msg.get("reason").and_then(Value::as_str).map(|r| format!(": {r}"));
                    println!(
                        "{:>5} {} -> {} {}{}",
                        msg["seq"],
                        s(msg, "message_id"),
                        s(msg, "to"),
                        s(msg, "state"),
                        reason.unwrap_or_default()
                    );
                }
            })
        }
        MailVerb::Unread { agent, fleet, data_dir } => {
            let mut p = json!({});
            put(&mut p, "agent", agent);
            put_fleet(&mut p, fleet);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_UNREAD, p).await, |v| {
                for a in items(v, "agents") {
                    println!("{}\t{}", at_node(a, "agent"), a["unread"]);
                }
                print_unreachable(v);
            })
        }
        MailVerb::Inbox {
            agent,
            after,
            limit,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent });
            put(&mut p, "after", after);
            put(&mut p, "limit", limit);
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::MAILBOX_INBOX, p).await, |v| {
                for msg in items(v, "messages") {
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
