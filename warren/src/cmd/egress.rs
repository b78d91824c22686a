//! `warren egress audit AGENT`: an agent's allow-list (`grants.egress`) and
//! what its guests' egress proxy refused (and, sampled, allowed), newest first.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, put};

#[derive(Subcommand)]
pub enum EgressVerb {
    /// The allow-list and the recorded decisions, newest first.
    Audit {
        agent: String,
        /// How many decisions (1..=1000; default 100).
        #[arg(long)]
        limit: Option<u32>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn show(v: &Value) {
    let grants: Vec<&str> = v["egress"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if grants.is_empty() {
        println!("allow-list: none (the node and the model endpoint only)");
    } else {
        println!("allow-list: {}", grants.join(", "));
    }
    for e in v["entries"].as_array().into_iter().flatten() {
        let verdict = if e["allowed"].as_bool() == Some(true) {
            "allowed"
        } else {
            "refused"
        };
        let count = e["count"]
            .as_u64()
            .filter(|n| *n > 1)
            .map(|n| format!(" x{n}"))
            .unwrap_or_default();
        println!(
            "{}  {verdict}{count}  {}:{}  {}  ({})",
            e["at"].as_u64().unwrap_or(0),
            e["dest"].as_str().unwrap_or(""),
            e["port"].as_u64().unwrap_or(0),
            e["rule"].as_str().unwrap_or(""),
            e["conversation"].as_str().unwrap_or(""),
        );
    }
}

pub async fn egress(verb: EgressVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        EgressVerb::Audit { agent, limit, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "agent": agent });
            put(&mut p, "limit", limit);
            finish(out, c.call(m::EGRESS_AUDIT, p).await, show)
        }
    }
}
