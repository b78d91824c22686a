//! `warren token` and `warren fleet`: capability tokens and the fleet's roots of trust.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, items, put, s};
use crate::client;

#[derive(Subcommand)]
pub enum TokenVerb {
    /// Mint a token on the node. Rights with admin or supervise are minted over
    /// the local Unix socket (never over the network).
    Mint {
        /// RESOURCE:OPERATION, e.g. agent:coder:observe, node:observe, agent:*:message.
        #[arg(long = "right")]
        rights: Vec<String>,
        /// Lifetime in seconds.
        #[arg(long)]
        ttl: Option<u64>,
        /// Only these methods.
        #[arg(long = "method")]
        methods: Vec<String>,
        /// The phone companion's read-only profile.
        #[arg(long, conflicts_with = "rights")]
        companion: bool,
        /// With --companion: also supervision.nudge and supervision.answer.
        #[arg(long, requires = "companion")]
        with_actions: bool,
        /// Sign offline with this root key file (e.g. the fleet owner key from
        /// `warren fleet init`) instead of asking a node.
        #[arg(long)]
        key_file: Option<PathBuf>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Narrow a token offline (no node needed). TOKEN `-` reads stdin.
    Attenuate {
        token: String,
        #[arg(long = "agent")]
        agents: Vec<String>,
        #[arg(long = "conversation")]
        conversations: Vec<String>,
        #[arg(long = "operation")]
        operations: Vec<String>,
        #[arg(long = "method")]
        methods: Vec<String>,
        /// Expire this many seconds from now.
        #[arg(long)]
        ttl: Option<u64>,
    },
    /// Show a token's blocks as Datalog (asks the node unless --offline).
    Inspect {
        token: String,
        #[arg(long)]
        offline: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Revoke a token by one of its revocation ids (see inspect).
    Revoke {
        revocation_id: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn read_token_arg(token: String) -> anyhow::Result<String> {
    if token == "-" {
        let mut buf = String::new();
        std::io::stdin().read_to_string(&mut buf)?;
        Ok(buf.trim().to_string())
    } else {
        Ok(token.trim().to_string())
    }
}

pub async fn token(verb: TokenVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    use capabilities::methods::{COMPANION_ACTIONS, COMPANION_READ, LOCAL_ONLY_OPERATIONS};
    match verb {
        TokenVerb::Mint {
            rights,
            ttl,
            methods,
            companion,
            with_actions,
            key_file,
            data_dir,
        } => {
            let (rights, methods) = if companion {
                let mut rights = vec!["node:observe".to_string()];
                let mut list: Vec<String> = COMPANION_READ.iter().map(|s| s.to_string()).collect();
                if with_actions {
                    rights.push("node:supervise".into());
                    list.extend(COMPANION_ACTIONS.iter().map(|s| s.to_string()));
                }
                (rights, list)
            } else {
                (rights, methods)
            };
            if rights.is_empty() {
                anyhow::bail!("give at least one --right RESOURCE:OPERATION (or --companion)");
            }
            if let Some(key_file) = key_file {
                let hex_key = std::fs::read_to_string(&key_file)
                    .with_context(|| format!("reading the key file {}", key_file.display()))?;
                let key = capabilities::RootKey::from_private_hex(&hex_key)
                    .with_context(|| format!("{} is not a root key", key_file.display()))?;
                let rights = rights
                    .iter()
                    .map(|r| capabilities::Right::parse_cli(r).map_err(|e| anyhow::anyhow!(e)))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                let token = key.mint(&capabilities::MintSpec {
                    rights,
                    expires_at: ttl.map(|t| std::time::SystemTime::now() + Duration::from_secs(t)),
                    methods: (!methods.is_empty()).then_some(methods),
                    facts: vec![],
                })?;
                let v = json!({ "token": token, "revocation_ids": capabilities::inspect_unverified(&token)?.revocation_ids });
                return finish(out, Ok(v), |v| println!("{}", s(v, "token")));
            }
            let mut specs = vec![];
            let mut needs_local = false;
            for r in &rights {
                let right = capabilities::Right::parse_cli(r).map_err(|e| anyhow::anyhow!(e))?;
                needs_local |= LOCAL_ONLY_OPERATIONS.contains(&right.operation);
                specs.push(json!({ "resource": right.resource.to_string(), "operation": right.operation.as_str() }));
            }
            let mut p = json!({ "rights": specs });
            put(&mut p, "ttl_secs", ttl);
            if !methods.is_empty() {
                p["methods"] = json!(methods);
            }
            let r = if needs_local {
                client::unix_call(&client::data_dir(data_dir), m::TOKEN_MINT, p).await
            } else {
                conn.connect(data_dir).await?.call(m::TOKEN_MINT, p).await
            };
            finish(out, r, |v| println!("{}", s(v, "token")))
        }
        TokenVerb::Attenuate {
            token,
            agents,
            conversations,
            operations,
            methods,
            ttl,
        } => {
            let token = read_token_arg(token)?;
            let operations = operations
                .iter()
                .map(|o| o.parse::<capabilities::Operation>().map_err(|e| anyhow::anyhow!(e)))
                .collect::<anyhow::Result<Vec<_>>>()?;
            let r = capabilities::Restriction {
                agents,
                conversations,
                operations,
                methods,
                expires_at: ttl.map(|t| std::time::SystemTime::now() + Duration::from_secs(t)),
            };
            let narrowed = capabilities::attenuate(&token, &r)?;
            if out.json {
                println!("{}", json!({ "token": narrowed }));
            } else {
                println!("{narrowed}");
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenVerb::Inspect {
            token,
            offline,
            data_dir,
        } => {
            let token = read_token_arg(token)?;
            if offline {
                let i = capabilities::inspect_unverified(&token)?;
                let v = json!({ "blocks": i.blocks, "revocation_ids": i.revocation_ids, "verified": false });
                return finish(out, Ok(v), print_inspection);
            }
            let mut c = conn.connect(data_dir).await?;
            finish(
                out,
                c.call(m::TOKEN_INSPECT, json!({ "token": token })).await,
                print_inspection,
            )
        }
        TokenVerb::Revoke {
            revocation_id,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let r = c.call(m::TOKEN_REVOKE, json!({ "revocation_id": revocation_id })).await;
            finish(out, r, |_| println!("revoked"))
        }
    }
}

fn print_inspection(v: &Value) {
    for (i, b) in v
        .get("blocks")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        println!("// block {i}{}", if i == 0 { " (authority)" } else { "" });
        println!("{}", b.as_str().unwrap_or("").trim_end());
    }
    println!("// revocation ids");
    for id in items(v, "revocation_ids") {
        println!("{}", id.as_str().unwrap_or(""));
    }
    if let Some(verified) = v.get("verified").and_then(Value::as_bool) {
        println!("// verified by the node: {verified}");
    }
    if v.get("revoked").and_then(Value::as_bool) == Some(true) {
        println!("// REVOKED");
    }
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        println!("// {e}");
    }
}

/// `warren fleet init` with no node running: only a new owner key file.
pub(super) fn fleet_init(key_file: PathBuf, dir: &std::path::Path, out: Output) -> anyhow::Result<ExitCode> {
    let key = capabilities::RootKey::generate();
    write_key_file(&key_file, &key)?;
    if out.json {
        println!(
            "{}",
            json!({ "running_node": false, "key_file": key_file, "public_key": key.public_hex() })
        );
    } else {
        println!(
            "no node is running at {}: only the owner key was made (a node holding it founds the fleet when it starts)",
            dir.display()
        );
        println!("fleet owner key written to {}", key_file.display());
        println!("public key: {}", key.public_hex());
        println!(
            "trust it on each node, in warren.toml: trusted_roots = [\"{}\"]",
            key.public_hex()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes a new owner key file (0600, never over an existing one), making
/// its directory (0700) as a first `warren up` would.
pub(super) fn write_key_file(key_file: &std::path::Path, key: &capabilities::RootKey) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    // The usual place is the node's data dir, which a first `warren up` has
    // not made yet: create it as the node would (0700).
    if let Some(dir) = key_file.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .create_new(true)
        .write(true)
        .mode(0o600)
        .open(key_file)
        .with_context(|| format!("creating {} (it must not exist yet)", key_file.display()))?;
    writeln!(f, "{}", key.private_hex())?;
    Ok(())
}
