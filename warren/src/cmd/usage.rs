//! `warren usage`: tokens, dollars and live quota of a conversation, an
//! agent, this node, another member (`--node NAME`), or every member of the
//! fleet (`--fleet`, one `usage.get` per member through the fabric).

use std::path::PathBuf;
use std::process::ExitCode;

use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish};

#[derive(clap::Args)]
pub struct UsageArgs {
    /// A conversation's usage.
    #[arg(long, conflicts_with_all = ["agent", "node", "fleet"])]
    conversation: Option<String>,
    /// An agent's usage (`NAME` or `NAME@NODE`).
    #[arg(long, conflicts_with_all = ["node", "fleet"])]
    agent: Option<String>,
    /// A member node's usage (default: this node's).
    #[arg(long, conflicts_with = "fleet")]
    node: Option<String>,
    /// Every member's usage, one after another.
    #[arg(long)]
    fleet: bool,
    #[arg(long, env = "WARREN_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

pub async fn usage(args: UsageArgs, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let mut c = conn.connect(args.data_dir).await?;
    if args.fleet {
        let nodes = match c.call(m::FLEET_NODES, json!({})).await {
            Ok(v) => v,
            Err(e) => return finish(out, Err(e), |_| {}),
        };
        let mut all = vec![];
        for n in nodes["nodes"].as_array().into_iter().flatten() {
            let name = n["name"].as_str().unwrap_or_default().to_string();
            let v = c.call(m::USAGE_GET, json!({"scope": "node", "id": name})).await;
            all.push((name, v));
        }
        if out.json {
            let list: Vec<Value> = all
                .into_iter()
                .map(|(name, v)| match v {
                    Ok(v) => json!({"node": name, "usage": v}),
                    Err(e) => json!({"node": name, "error": e.to_string()}),
                })
                .collect();
            println!("{}", serde_json::to_string_pretty(&json!({ "nodes": list }))?);
            return Ok(ExitCode::SUCCESS);
        }
        let mut code = ExitCode::SUCCESS;
        for (name, v) in all {
            println!("== {name}");
            match v {
                Ok(v) => print_usage(&v),
                Err(e) => {
                    println!("  unreachable: {e}");
                    code = ExitCode::FAILURE;
                }
            }
        }
        return Ok(code);
    }
    let p = match (&args.conversation, &args.agent, &args.node) {
        (Some(id), _, _) => json!({"scope": "conversation", "id": id}),
        (_, Some(a), _) => json!({"scope": "agent", "id": a}),
        (_, _, Some(n)) => json!({"scope": "node", "id": n}),
        _ => json!({"scope": "node"}),
    };
    finish(out, c.call(m::USAGE_GET, p).await, print_usage)
}

fn print_usage(v: &Value) {
    let n = |key: &str| v["tokens"][key].as_u64().unwrap_or(0);
    println!(
        "tokens: {} input, {} cache read, {} cache write, {} output",
        n("input"),
        n("cache_read"),
        n("cache_write"),
        n("output"),
    );
    let unpriced: Vec<&str> = v["unpriced_models"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let usd = v["usd"].as_f64().unwrap_or(0.0);
    let source = v["pricing"]["source"].as_str().unwrap_or("bundled");
    let as_of = v["pricing"]["as_of"].as_str().unwrap_or("");
    let mut cost = format!("cost: ${usd:.4} (prices: {source} table of {as_of})");
    if !unpriced.is_empty() {
        cost.push_str(&format!("; unpriced, not counted: {}", unpriced.join(", ")));
    }
    println!("{cost}");
    if let Some(e) = v["pricing"]["last_error"].as_str() {
        println!("  live prices unavailable: {e}");
    }
    let quota = v["quota"].as_array().cloned().unwrap_or_default();
    if quota.is_empty() {
        println!("quota: none reported");
        return;
    }
    println!("quota:");
    for q in &quota {
        let used = q["used"].as_f64().unwrap_or(0.0);
        let filled = ((used / 100.0).clamp(0.0, 1.0) * 20.0).round() as usize;
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(20 - filled));
        let window = q["window"].as_str().map(|w| format!(" {w} window")).unwrap_or_default();
        let resets = q["resets_at"]
            .as_str()
            .map(|r| format!(", resets {r}"))
            .unwrap_or_default();
        println!(
            "  {:<22} [{bar}] {used:>5.1}%{window}{resets} ({})",
            q["name"].as_str().unwrap_or("?"),
            q["agent"].as_str().unwrap_or("")
        );
    }
}
