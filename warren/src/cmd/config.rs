//! `warren config set`: the node's settings that change at runtime (local
//! only: over the Unix socket). Today the global supervision defaults.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Output, finish};
use crate::client;

#[derive(Subcommand)]
pub enum ConfigVerb {
    /// Set the global supervision defaults (local only): a JSON object of
    /// warren.toml's `[supervision]` fields, e.g. '{"enabled": true}'; the
    /// fields given replace the defaults in force. `null` clears the node's
    /// own defaults (warren.toml's apply again).
    Set {
        #[arg(long, value_name = "JSON")]
        supervision: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

pub async fn config(verb: ConfigVerb, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        ConfigVerb::Set { supervision, data_dir } => {
            let given: Value =
                serde_json::from_str(&supervision).map_err(|e| anyhow::anyhow!("--supervision: not JSON: {e}"))?;
            let p = json!({ "supervision": given });
            let r = client::unix_call(&client::data_dir(data_dir), m::CONFIG_SET, p).await;
            finish(out, r, |v| {
                println!("{}", serde_json::to_string_pretty(v).unwrap_or_default())
            })
        }
    }
}
