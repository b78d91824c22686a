//! `warren hook claude`: the command Claude Code runs for its hooks. It reads
//! the hook's JSON from stdin and reports it to the node as the conversation's
//! own CLI (`supervision.hook`, with the instance token). It never decides:
//! it prints nothing and exits 0 whatever happens, within a few seconds, so a
//! node problem never wedges the CLI.

use std::io::Read;
use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, Target};

/// Largest hook payload read from stdin.
const MAX_PAYLOAD: u64 = 1024 * 1024;
/// How long the report may take before the hook gives up.
const REPORT_WITHIN: Duration = Duration::from_secs(3);

/// Reports the hook on stdin; the exit code is always 0.
pub async fn run(harness: &str) -> i32 {
    if harness != "claude" {
        eprintln!("warren hook: no hooks for harness {harness:?} (known: claude)");
        return 0;
    }
    let mut text = String::new();
    if std::io::stdin().take(MAX_PAYLOAD).read_to_string(&mut text).is_err() {
        return 0;
    }
    if let Err(e) = tokio::time::timeout(REPORT_WITHIN, report(&text)).await {
        tracing::debug!(error = %e, "hook report timed out");
    }
    0
}

async fn report(text: &str) -> Option<()> {
    let event: Value = serde_json::from_str(text).ok()?;
    let conversation = std::env::var("WARREN_CONVERSATION").ok()?;
    let url = std::env::var("WARREN_URL").ok()?;
    // The renewed token is in the file; the one in the environment may be stale.
    let token = std::env::var("WARREN_TOKEN_FILE")
        .ok()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| t.trim().to_string())
        .or_else(|| std::env::var("WARREN_TOKEN").ok())?;
    let mut c = Client::connect(&Target {
        url,
        token: Some(token),
    })
    .await
    .ok()?;
    let _ = c
        .call(
            console_api::methods::SUPERVISION_HOOK,
            json!({ "conversation": conversation, "event": event }),
        )
        .await;
    c.close().await;
    Some(())
}
