//! Acceptance commands, run by the node where the worker runs (the
//! runtime's `exec`: on this host for the local runtime, in the guest for
//! Docker): each through `sh -c` in the task's worktree, as the repository's
//! owner, with an environment of its own (never the node's), bounded in time,
//! only its output's tail kept. A round stops at the first command that fails.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use node_runtime::runtime::Runtime;
use node_runtime::runtime::exec::ExecSpec;
use tasks::CheckOutcome;
use tasks::state::MAX_OUTPUT_TAIL_BYTES;

use crate::workspace::git::{Owner, run_as};

/// How long one acceptance command may run before it is killed.
pub(super) const CHECK_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Where and as whom a round's commands run.
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub(super) conversation: String,
    pub(super) dir: PathBuf,
    pub(super) owner: Owner,
    pub(super) timeout: Duration,
}

impl Place {
    /// The exec of one command: a guest runs it as the repository's owner
    /// (its CLI's user); this host as that owner when the node is root.
    fn spec(&self, in_guest: bool, command: &str) -> ExecSpec {
        let user = match in_guest {
            true => Some(self.owner),
            false => run_as(self.owner),
        };
        ExecSpec {
            conversation: self.conversation.clone(),
            dir: self.dir.clone(),
            command: command.to_string(),
            user: user.map(|o| (o.uid, o.gid)),
            env: vec![
                ("HOME".into(), self.dir.display().to_string()),
                ("LANG".into(), "C.UTF-8".into()),
                ("CI".into(), "1".into()),
            ],
            timeout: self.timeout,
            tail_bytes: MAX_OUTPUT_TAIL_BYTES,
        }
    }
}

/// Runs `commands` in order, stopping after the first that fails.
pub(super) async fn run_round(runtime: &dyn Runtime, place: &Place, commands: &[String]) -> Vec<CheckOutcome> {
    let in_guest = runtime.name() == "docker";
    let mut out = Vec::with_capacity(commands.len());
    for command in commands {
        let started = Instant::now();
        let ran = runtime.exec(place.spec(in_guest, command)).await;
        let passed = ran.exit_code == Some(0);
        out.push(CheckOutcome {
            command: command.clone(),
            exit_code: ran.exit_code,
            output_tail: ran.output_tail,
            ms: started.elapsed().as_millis() as u64,
        });
        if !passed {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_round_stops_at_the_first_failure() {
        let dir = tempfile::tempdir().expect("tmp");
        let place = Place {
            conversation: "c-1".into(),
            dir: dir.path().to_path_buf(),
            owner: crate::workspace::git::owner_of(dir.path()).expect("owner"),
            timeout: Duration::from_secs(10),
        };
        let runtime = node_runtime::runtime::local::LocalRuntime;
        let cmds = ["echo one".to_string(), "exit 3".into(), "touch never".into()];
        let out = run_round(&runtime, &place, &cmds).await;
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!((out[0].exit_code, out[0].output_tail.as_str()), (Some(0), "one\n"));
        assert_eq!(out[1].exit_code, Some(3));
        assert!(!dir.path().join("never").exists());
    }
}
