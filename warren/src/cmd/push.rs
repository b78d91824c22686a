//! `warren push subscribe|unsubscribe|list`: Web Push subscriptions of the
//! calling token (needs a token: `WARREN_URL` and `WARREN_TOKEN`, or the
//! node's endpoint and admin token from its data dir). A browser subscribes
//! itself from the console ("Notify me"); this is for a relay or a script.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, finish, put};

#[derive(Subcommand)]
pub enum PushVerb {
    /// Pushes the needs-yous this token may observe to ENDPOINT.
    Subscribe {
        endpoint: String,
        /// The subscriber's P-256 public key (base64url, 65 bytes).
        #[arg(long)]
        p256dh: String,
        /// The subscriber's auth secret (base64url, 16 bytes).
        #[arg(long)]
        auth: String,
        /// Only these kinds (hold, escalation, breaker, budget, task); repeatable.
        #[arg(long = "kind")]
        kinds: Vec<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Ends one of this token's subscriptions.
    Unsubscribe {
        subscription: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// This token's subscriptions and how their deliveries went.
    List {
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

fn show_list(v: &Value) {
    for s in v["subscriptions"].as_array().into_iter().flatten() {
        let err = s["last_error"]
            .as_str()
            .map(|e| format!("  last error: {e}"))
            .unwrap_or_default();
        println!(
            "{}  {}  delivered {} failed {}{err}",
            s["subscription"].as_str().unwrap_or(""),
            s["origin"].as_str().unwrap_or(""),
            s["delivered"],
            s["failed"],
        );
    }
}

pub async fn push(verb: PushVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match verb {
        PushVerb::Subscribe {
            endpoint,
            p256dh,
            auth,
            kinds,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let mut p = json!({ "endpoint": endpoint, "keys": { "p256dh": p256dh, "auth": auth } });
            put(&mut p, "kinds", (!kinds.is_empty()).then_some(kinds));
            finish(out, c.call(m::PUSH_SUBSCRIBE, p).await, |v| {
                println!("{}", v["subscription"].as_str().unwrap_or(""));
            })
        }
        PushVerb::Unsubscribe { subscription, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let p = json!({ "subscription": subscription });
            finish(out, c.call(m::PUSH_UNSUBSCRIBE, p).await, |_| println!("unsubscribed"))
        }
        PushVerb::List { data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            finish(out, c.call(m::PUSH_LIST, json!({})).await, show_list)
        }
    }
}
