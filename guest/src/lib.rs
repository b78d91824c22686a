//! `warren guest`: the entrypoint of a conversation's container. It runs the
//! CLI under a PTY it owns, copies every byte of output to its own stdout (so
//! `docker logs` shows the CLI), and, when bootstrapped through the
//! environment, dials back to the node over a WebSocket to stream the screen
//! and take requests. Without the bootstrap variables it is a plain PTY proxy.

pub mod bootstrap;
pub mod dns;
pub mod forward;
mod link;
pub mod proto;
mod pty;
pub mod relay;
mod term;

use std::sync::Arc;

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// The signature crate of [`proto::sign_welcome`], re-exported so the node
/// uses the same version.
pub use ed25519_dalek;

/// The guest's environment as UTF-8 pairs; variables that are not UTF-8
/// cannot be bootstrap variables and still reach the CLI untouched.
fn env_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// Runs the guest: spawns `program args` under a PTY, proxies stdio, dials
/// the node if bootstrapped. Returns the CLI's exit code (75 if the node
/// refused the guest). The caller should exit the process with it promptly:
/// a thread may still be blocked reading stdin.
pub async fn run(program: String, args: Vec<String>) -> anyhow::Result<i32> {
    // Installed before the CLI starts, so no SIGTERM is missed.
    let sigterm = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let vars = env_vars();
    let boot = bootstrap::Bootstrap::from_env_vars(&vars)?;
    let tty = term::stdin_is_tty();
    let size = match tty.then(term::terminal_size).flatten() {
        Some(size) => size,
        None => bootstrap::pty_size(&vars)?,
    };
    // The ways out of a guest with no network, open before the CLI starts.
    if let Some((_, spec)) = vars.iter().find(|(k, _)| k == forward::FORWARD) {
        forward::start(spec).await?;
    }
    if let Some((_, egress)) = vars.iter().find(|(k, _)| k == dns::DNS)
        && let Err(e) = dns::start(egress).await
    {
        // Lookups then fail at once (nothing answers on 127.0.0.1).
        tracing::warn!("the guest's resolver could not start: {e}");
    }
    let pty = pty::Pty::spawn(&program, &args, size, &bootstrap::BOOTSTRAP_VARS)?;
    let _raw = if tty {
        let raw = term::RawMode::enable().context("cannot put the terminal in raw mode")?;
        term::forward_stdin(pty.clone()).context("cannot start the stdin thread")?;
        tokio::spawn(term::follow_window_size(pty.clone()));
        Some(raw)
    } else {
        None
    };
    tokio::spawn(stop_on_sigterm(sigterm, pty.clone()));
    Ok(match boot {
        Some(boot) => link::run(boot, pty).await,
        None => pty.wait().await,
    })
}

/// `docker stop` sends SIGTERM, which PID 1 would otherwise ignore: hang up
/// the CLI instead, so the guest reports its exit and ends promptly.
async fn stop_on_sigterm(mut sigterm: Signal, pty: Arc<pty::Pty>) {
    if sigterm.recv().await.is_some() {
        pty.terminate().await;
    }
}
