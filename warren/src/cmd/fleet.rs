//! `warren fleet`: founding (`init`), join codes (`invite`), joining
//! (`join`) and the members (`nodes`). `init`, `invite` and `join` are
//! local-only: they go over the node's Unix socket.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::json;

use super::{Conn, Output, finish, s};
use crate::client;

#[derive(Subcommand)]
pub enum FleetVerb {
    /// Found a fleet. With the local node running, at once (no restart): it
    /// makes the fleet owner key in its data dir (or uses --key-file's), and
    /// is the fleet's first member. With no node running, only write a new
    /// owner key to --key-file: a node holding it (`DATA_DIR/owner.key` or
    /// `[fleet] owner_key`) founds the fleet when it starts. The key's private
    /// half signs tokens offline (`warren token mint --key-file`) and
    /// membership certificates; its public half can go into other nodes'
    /// `trusted_roots`.
    Init {
        /// The owner key file. Running node: it is given to the node (a new
        /// one is made here first when the file does not exist). No node
        /// running: where the new key is written (default ./owner.key;
        /// created 0600, never overwritten).
        #[arg(long)]
        key_file: Option<PathBuf>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
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
        FleetVerb::Init { key_file, data_dir } => init(key_file, &client::data_dir(data_dir), out).await,
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

/// `warren fleet init`: on the running node when one answers on the data
/// dir's socket, else offline (the key file only). The output says which.
async fn init(key_file: Option<PathBuf>, dir: &std::path::Path, out: Output) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let socket = dir.join("warren.sock");
    if tokio::net::UnixStream::connect(&socket).await.is_err() {
        let key_file = key_file.unwrap_or_else(|| PathBuf::from("owner.key"));
        return super::tokens::fleet_init(key_file, dir, out);
    }
    // The key to give the node: the file's, or a new one written there once
    // the node took it.
    let (params, new_key) = match &key_file {
        Some(f) if f.exists() => {
            let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
            (json!({ "owner_key": text.trim() }), None)
        }
        Some(_) => {
            let key = capabilities::RootKey::generate();
            (json!({ "owner_key": key.private_hex() }), Some(key))
        }
        None => (json!({}), None),
    };
    let r = client::unix_call(dir, m::FLEET_INIT, params).await;
    if let (Ok(_), Some(key), Some(f)) = (&r, &new_key, &key_file) {
        super::tokens::write_key_file(f, key)?;
    }
    let r = r.map(|mut v| {
        v["running_node"] = json!(true);
        if let Some(f) = &key_file {
            v["key_file"] = json!(f);
        }
        v
    });
    finish(out, r, |v| {
        println!(
            "fleet {} founded on the running node ({}): {} member(s), no restart needed",
            s(v, "fleet_id"),
            dir.display(),
            v["members"]
        );
        let held = if v["wrote_owner_key"] == true {
            "written to"
        } else {
            "in"
        };
        println!(
            "owner key {held} {} (public key {})",
            s(v, "owner_key_file"),
            s(v, "public_key")
        );
        if let Some(f) = &key_file {
            println!("also in {} (keep it safe: it signs the fleet's tokens)", f.display());
        }
        println!("add a node: `warren fleet invite` here, then `warren fleet join CODE` there");
    })
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
