//! `warren fleet`: the owner key (`init`), join codes (`invite`), joining
//! (`join`) and the members (`nodes`). `invite` and `join` are local-only:
//! they go over the node's Unix socket.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::json;

use super::{Conn, Output, finish, s};
use crate::client;

#[derive(Subcommand)]
pub enum FleetVerb {
    /// Create a fleet owner key: its private half signs tokens offline
    /// (`warren token mint --key-file`) and, on the node that holds it
    /// (`DATA_DIR/owner.key` or `[fleet] owner_key`), membership certificates;
    /// its public half goes into each node's `trusted_roots`.
    Init {
        /// Where to write the private key (created 0600, never overwritten).
        #[arg(long, default_value = "owner.key")]
        key_file: PathBuf,
    },
    /// Print a single-use join code (on a node that holds the owner key).
    Invite {
        /// How long the code is valid: 90s, 10m, 1h, 2d (at most 7d).
        #[arg(long, default_value = "1h")]
        ttl: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Join the fleet of a join code (the running local node).
    Join {
        code: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Remove a member fleet-wide (on the node holding the owner key).
    Remove {
        /// Its node id or name.
        node: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Every member: health, last seen, endpoint, agents, capacity.
    Nodes {
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// `90s`, `10m`, `1h`, `2d` (or plain seconds) in seconds.
pub(crate) fn parse_ttl(text: &str) -> anyhow::Result<u64> {
    let t = text.trim();
    let (num, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("--ttl {text:?}: use e.g. 90s, 10m, 1h or 2d"))?;
    let factor = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => anyhow::bail!("--ttl {text:?}: the unit is s, m, h or d"),
    };
    Ok(n * factor)
}

pub async fn fleet(verb: FleetVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        FleetVerb::Init { key_file } => super::tokens::fleet_init(key_file, out),
        FleetVerb::Invite { ttl, data_dir } => {
            let p = json!({ "ttl_secs": parse_ttl(&ttl)? });
            let r = client::unix_call(&client::data_dir(data_dir), m::FLEET_INVITE, p).await;
            finish(out, r, |v| println!("{}", s(v, "invite")))
        }
        FleetVerb::Join { code, data_dir } => {
            let r = client::unix_call(&client::data_dir(data_dir), m::FLEET_JOIN, json!({ "invite": code })).await;
            finish(out, r, |v| {
                println!(
                    "joined fleet {} as {} ({} members)",
                    s(v, "fleet_id"),
                    s(v, "node_id"),
                    v["members"]
                )
            })
        }
        FleetVerb::Remove { node, data_dir } => {
            let r = client::unix_call(&client::data_dir(data_dir), m::FLEET_REMOVE, json!({ "node": node })).await;
            finish(out, r, |v| println!("removed {} from the fleet", s(v, "node_id")))
        }
        FleetVerb::Nodes { data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::FLEET_NODES, json!({})).await, |v| {
                println!(
                    "{:<20} {:<16} {:<8} {:>6} {:>5} ENDPOINT",
                    "NODE", "NAME", "HEALTH", "AGENTS", "LIVE"
                );
                for n in v["nodes"].as_array().into_iter().flatten() {
                    let health = if n["healthy"] == true { "healthy" } else { "down" };
                    let num = |k: &str| n[k].as_u64().map_or("-".to_string(), |x| x.to_string());
                    println!(
                        "{:<20} {:<16} {:<8} {:>6} {:>5} {}",
                        s(n, "node_id"),
                        n["name"].as_str().unwrap_or("-"),
                        health,
                        num("agents"),
                        num("live_conversations"),
                        n["endpoint"].as_str().unwrap_or("-"),
                    );
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ttls() {
        assert_eq!(super::parse_ttl("90s").ok(), Some(90));
        assert_eq!(super::parse_ttl("1h").ok(), Some(3600));
        assert_eq!(super::parse_ttl("2d").ok(), Some(172_800));
        assert_eq!(super::parse_ttl("45").ok(), Some(45));
        assert!(super::parse_ttl("1y").is_err());
        assert!(super::parse_ttl("h").is_err());
    }
}
