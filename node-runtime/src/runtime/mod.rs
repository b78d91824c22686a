//! The runtime seam: how the node runs a CLI under a PTY. The contract (launch,
//! write bytes, render the screen, resize, alive, close, status, raw byte
//! subscription) is shaped so a remote guest can serve it over a connection:
//! every operation that may cross a network is async, and the screen is a
//! snapshot value.

pub mod cells;
pub mod docker;
pub mod exec;
pub mod guest_gate;
pub mod guest_link;
pub mod local;
pub mod seccomp;
pub mod signals;

use std::path::PathBuf;
use std::sync::Arc;

use console_api::Status;
use futures_util::future::BoxFuture;
use tokio::sync::{broadcast, watch};

#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    #[error("could not launch {program}: {reason}")]
    Launch { program: String, reason: String },
    /// The node's setup stops the launch: `setting` (dotted, e.g.
    /// `harnesses.claude.program`) is what to fix.
    #[error("{reason}")]
    Setup { setting: String, reason: String },
    #[error("the process has exited")]
    Exited,
    #[error("terminal i/o failed: {0}")]
    Io(String),
}

/// A rendered terminal screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScreenSnapshot {
    pub rows: u16,
    pub cols: u16,
    pub lines: Vec<String>,
    /// (row, col)
    pub cursor: (u16, u16),
    /// The cells as styled runs (`Session::styled_screen` only).
    pub styled: Option<console_api::ScreenCells>,
    /// The CLI's own last word on its state, beside the screen (Codex's
    /// OSC 7501: `idle`, `working`, `blocked`), if it gives one.
    pub cli_state: Option<String>,
}

impl ScreenSnapshot {
    pub fn text(&self) -> String {
        self.lines.join("\n")
    }
}

/// The screen of a terminal emulator (an empty one if its lock is poisoned).
pub fn snapshot(parser: &std::sync::Mutex<signals::Terminal>) -> ScreenSnapshot {
    snapshot_of(parser, None)
}

/// The screen with its cells as styled runs (at most `cells::MAX_RUNS`).
pub fn styled_snapshot(parser: &std::sync::Mutex<signals::Terminal>) -> ScreenSnapshot {
    snapshot_of(parser, Some(cells::MAX_RUNS))
}

fn snapshot_of(parser: &std::sync::Mutex<signals::Terminal>, max_runs: Option<usize>) -> ScreenSnapshot {
    match parser.lock() {
        Ok(p) => {
            let s = p.screen();
            let (rows, cols) = s.size();
            let (rows, cols) = (rows.get(), cols.get());
            ScreenSnapshot {
                rows,
                cols,
                lines: s.rows(0, cols).collect(),
                cursor: s.cursor_position(),
                styled: max_runs.map(|n| cells::styled(s, n)),
                cli_state: p.callbacks().state.clone(),
            }
        }
        Err(_) => ScreenSnapshot {
            rows: 0,
            cols: 0,
            lines: vec![],
            cursor: (0, 0),
            styled: None,
            cli_state: None,
        },
    }
}

/// Derives BUSY / IDLE / DIALOG from a screen (the harness adapter's job).
pub type StatusFn = Arc<dyn Fn(&ScreenSnapshot) -> Status + Send + Sync>;

/// What to run.
#[derive(Clone)]
pub struct LaunchSpec {
    pub conversation: String,
    pub agent: String,
    pub harness: String,
    /// The guest image, when configured (`[harnesses.NAME] image`); else a
    /// container runtime builds or picks the harness's own.
    pub image: Option<String>,
    /// Directories the CLI reads and writes (the agent's home and workspace):
    /// a container runtime mounts them at the same paths.
    pub mounts: Vec<PathBuf>,
    /// More paths a container runtime mounts at the same paths, as they are
    /// (never re-owned): a repository's worktree and git directory, and
    /// read-only ones over parts of them (`read_only`).
    pub extra_mounts: Vec<ExtraMount>,
    /// The uid and gid the CLI runs as in a container (a repository's
    /// owner); None: the runtime's own unprivileged user.
    pub run_as: Option<(u32, u32)>,
    /// The agent's container limits (unset: the runtime's defaults).
    pub resources: console_api::Resources,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The whole environment: runtimes start the CLI with a clean one.
    pub env: Vec<(String, String)>,
    pub rows: u16,
    pub cols: u16,
    pub status: StatusFn,
}

/// One more bind mount of a container runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraMount {
    pub path: PathBuf,
    pub read_only: bool,
}

/// Raw PTY output chunks.
pub type Chunk = Arc<[u8]>;

/// A running CLI under a PTY.
pub trait Session: Send + Sync {
    /// Writes raw bytes to the terminal's input.
    fn write(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), RuntimeError>>;
    fn resize(&self, rows: u16, cols: u16) -> BoxFuture<'_, Result<(), RuntimeError>>;
    /// Ends the process (hang-up, then kill) and waits for it.
    fn close(&self) -> BoxFuture<'_, ()>;
    fn screen(&self) -> ScreenSnapshot;
    /// The screen with its cells as styled runs (`ScreenSnapshot::styled`).
    fn styled_screen(&self) -> ScreenSnapshot;
    fn status(&self) -> Status;
    fn alive(&self) -> bool;
    /// Flips to `true` once the process has exited (and its output is read).
    fn exited(&self) -> watch::Receiver<bool>;
    /// The process's exit code once it has exited, where the runtime knows it.
    fn exit_code(&self) -> Option<i32>;
    /// Raw output from now on. A receiver that falls behind sees `Lagged`.
    fn subscribe(&self) -> broadcast::Receiver<Chunk>;
    /// Process id where the runtime has one (diagnostics).
    fn pid(&self) -> Option<u32>;

    /// Freezes (`true`) or thaws (`false`) the CLI with everything it started
    /// (its process group: SIGSTOP / SIGCONT): a conversation waiting for its
    /// budget keeps its CLI warm, making no requests, and thaws in place.
    fn freeze(&self, frozen: bool) -> BoxFuture<'_, Result<(), RuntimeError>>;

    /// Puts a per-conversation secret (file `name`) where only the running
    /// CLI finds it: a guest's tmpfs ([`Runtime::secrets_dir`]). A runtime
    /// without one has nowhere to put it.
    fn hand_secret(&self, name: &str, _value: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let name = name.to_string();
        Box::pin(async move {
            Err(RuntimeError::Io(format!(
                "this session has no secrets directory for {name}"
            )))
        })
    }

    /// Types `text` as it is (no Enter).
    fn send_text(&self, text: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.write(text.as_bytes().to_vec())
    }

    fn send_enter(&self) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.write(b"\r".to_vec())
    }

    /// Ctrl + `key` (e.g. 'c' -> 0x03).
    fn send_ctrl(&self, key: char) -> BoxFuture<'_, Result<(), RuntimeError>> {
        self.write(vec![ctrl_byte(key)])
    }
}

/// The control byte of a key: `'c'` -> 0x03, `'['` -> ESC.
pub fn ctrl_byte(key: char) -> u8 {
    (key.to_ascii_uppercase() as u8) & 0x1f
}

/// Starts sessions.
pub trait Runtime: Send + Sync {
    fn name(&self) -> &'static str;
    fn launch(&self, spec: LaunchSpec) -> BoxFuture<'_, Result<Arc<dyn Session>, RuntimeError>>;

    /// True when a CLI can outlive the node and be re-adopted (guests).
    fn can_adopt(&self) -> bool {
        false
    }

    /// Where the CLI finds its per-conversation secrets when they never
    /// touch the host's disk (a guest's tmpfs, filled over the guest link
    /// with `Session::hand_secret`); None: in the agent's home, on the host.
    fn secrets_dir(&self) -> Option<&'static str> {
        None
    }

    /// Re-adopts the CLI of `spec.conversation` left running by the node's
    /// previous run: waits up to `grace` for it to come back with the session
    /// key hashing to `key_hash`.
    fn adopt(
        &self,
        spec: LaunchSpec,
        _key_hash: String,
        _grace: std::time::Duration,
    ) -> BoxFuture<'_, Result<Arc<dyn Session>, RuntimeError>> {
        Box::pin(async move {
            Err(RuntimeError::Launch {
                program: spec.program.display().to_string(),
                reason: format!("the {} runtime cannot re-adopt a CLI", self.name()),
            })
        })
    }

    /// True when `exec` runs in the conversation's own guest, which must
    /// then be running (a container runtime).
    fn exec_in_guest(&self) -> bool {
        false
    }

    /// Runs one command for the node where the conversation's CLI runs (a
    /// task's acceptance command): on this host by default.
    fn exec(&self, spec: exec::ExecSpec) -> BoxFuture<'_, exec::ExecOutcome> {
        Box::pin(async move { exec::run_local(&spec).await })
    }

    /// Removes what this runtime left running for conversations not in `live`
    /// (container runtimes: orphans of a crash). Returns (what, conversation).
    fn reap<'a>(&'a self, _live: &'a [String]) -> BoxFuture<'a, Vec<(String, String)>> {
        Box::pin(async { Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ctrl_bytes() {
        assert_eq!(super::ctrl_byte('c'), 0x03);
        assert_eq!(super::ctrl_byte('C'), 0x03);
        assert_eq!(super::ctrl_byte('['), 0x1b);
        assert_eq!(super::ctrl_byte(']'), 0x1d);
    }
}
