//! `warren budget`: an agent's spend-rate bucket. `get` reads it (any
//! connection); `set` and `topup` are local-only (the Unix socket).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, put, s};
use crate::client;

#[derive(Subcommand)]
pub enum BudgetVerb {
    /// The agent's rate, burst, what is available now, and its state
    /// (ok | waiting | exhausted).
    Get {
        agent: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Set the rate and/or burst (local only: over the Unix socket). The
    /// accrued level is kept.
    Set {
        agent: String,
        #[arg(long)]
        usd_per_hour: Option<f64>,
        #[arg(long)]
        burst_usd: Option<f64>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Add exactly USD to the bucket (local only: over the Unix socket).
    Topup {
        agent: String,
        usd: f64,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn show(v: &Value) {
    let usd = |k: &str| v.get(k).and_then(Value::as_f64);
    match (usd("usd_per_hour"), usd("burst_usd"), usd("available_usd")) {
        (Some(rate), Some(burst), Some(avail)) => {
            let mut line = format!(
                "{}: ${avail:.4} of ${burst:.4} available, ${rate:.4}/hour",
                s(v, "state")
            );
            if let Some(ms) = v.get("retry_after_ms").and_then(Value::as_u64) {
                line.push_str(&format!(", continues in {:.1} s", ms as f64 / 1000.0));
            }
            println!("{line}");
        }
        _ => println!("no budget (never charged, never paused)"),
    }
}

pub async fn budget(verb: BudgetVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        BudgetVerb::Get { agent, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::BUDGET_GET, json!({ "agent": agent })).await, show)
        }
        BudgetVerb::Set {
            agent,
            usd_per_hour,
            burst_usd,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent });
            put(&mut p, "usd_per_hour", usd_per_hour);
            put(&mut p, "burst_usd", burst_usd);
            let r = client::unix_call(&client::data_dir(data_dir), m::BUDGET_SET, p).await;
            finish(out, r, show)
        }
        BudgetVerb::Topup { agent, usd, data_dir } => {
            let p = json!({ "agent": agent, "usd": usd });
            let r = client::unix_call(&client::data_dir(data_dir), m::BUDGET_TOPUP, p).await;
            finish(out, r, show)
        }
    }
}
