//! `warren agent secret set|unset|list`: an agent's own environment secrets
//! (e.g. its model API key), given only to that agent's CLIs. Always over the
//! node's Unix socket: a secret's value never crosses the network. `set`
//! reads the value from stdin (or `--value-file`), so it is in neither the
//! shell's history nor the process list.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Output, finish, s};
use crate::client;

#[derive(Subcommand)]
pub enum SecretVerb {
    /// Set AGENT's secret NAME (an environment variable name) from stdin.
    Set {
        agent: String,
        name: String,
        /// Read the value from this file instead of stdin.
        #[arg(long)]
        value_file: Option<PathBuf>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Remove AGENT's secret NAME.
    Unset {
        agent: String,
        name: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The names of AGENT's secrets (never their values).
    List {
        agent: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// The value as given: one trailing line break (from `echo` or a file) is
/// not part of it.
fn read_value(file: Option<PathBuf>) -> anyhow::Result<String> {
    let mut raw = String::new();
    match &file {
        Some(f) => {
            raw = std::fs::read_to_string(f).map_err(|e| anyhow::anyhow!("reading {}: {e}", f.display()))?;
        }
        None => {
            std::io::stdin()
                .take(1 << 20)
                .read_to_string(&mut raw)
                .map_err(|e| anyhow::anyhow!("reading the secret from stdin: {e}"))?;
        }
    }
    let value = raw.strip_suffix('\n').unwrap_or(&raw);
    Ok(value.strip_suffix('\r').unwrap_or(value).to_string())
}

pub(super) async fn secret(verb: SecretVerb, out: Output) -> anyhow::Result<ExitCode> {
    let (method, params, data_dir) = match verb {
        SecretVerb::Set {
            agent,
            name,
            value_file,
            data_dir,
        } => {
            let value = read_value(value_file)?;
            // The node checks it too; checked here first so that a huge value
            // is refused by name, not as an oversize request.
            node::validate::secret_value(&value).map_err(|e| anyhow::anyhow!("{e}"))?;
            (
                m::AGENT_SECRET_SET,
                json!({ "agent": agent, "name": name, "value": value }),
                data_dir,
            )
        }
        SecretVerb::Unset { agent, name, data_dir } => {
            (m::AGENT_SECRET_UNSET, json!({ "agent": agent, "name": name }), data_dir)
        }
        SecretVerb::List { agent, data_dir } => (m::AGENT_SECRET_LIST, json!({ "agent": agent }), data_dir),
    };
    let r = client::unix_call(&client::data_dir(data_dir), method, params).await;
    finish(out, r, |v| match v.get("names").and_then(Value::as_array) {
        Some(names) => {
            for n in names.iter().filter_map(Value::as_str) {
                println!("{n}");
            }
        }
        None => {
            let what = if v.get("set") == Some(&json!(true)) {
                "set"
            } else {
                "removed"
            };
            println!(
                "{} of {}: {what} (takes effect at its next launch)",
                s(v, "name"),
                s(v, "agent")
            );
        }
    })
}
