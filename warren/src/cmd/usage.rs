//! `warren usage`: token use and cost as the CLIs reported them (the first
//! slice: one conversation at a time).

use std::path::PathBuf;
use std::process::ExitCode;

use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish};

#[derive(clap::Args)]
pub struct UsageArgs {
    /// The conversation whose usage to show.
    #[arg(long)]
    conversation: String,
    #[arg(long, env = "WARREN_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

pub async fn usage(args: UsageArgs, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let mut c = conn.connect(args.data_dir).await?;
    let p = json!({ "scope": "conversation", "id": args.conversation });
    finish(out, c.call(m::USAGE_GET, p).await, |v| {
        let n = |key: &str| v["tokens"][key].as_u64().unwrap_or(0);
        println!(
            "tokens: {} input, {} output, {} cache read, {} cache write ({} turns)",
            n("input"),
            n("output"),
            n("cache_read"),
            n("cache_write"),
            v["turns"].as_u64().unwrap_or(0)
        );
        let unpriced: Vec<&str> = v["unpriced_models"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let usd = v["usd"].as_f64().unwrap_or(0.0);
        if unpriced.is_empty() {
            println!("cost: ${usd:.6} (as reported by the CLI)");
        } else {
            println!(
                "cost: ${usd:.6} (as reported by the CLI; no price for {})",
                unpriced.join(", ")
            );
        }
    })
}
