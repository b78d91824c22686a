//! Acceptance commands, run by the node: each through `sh -c` in the task's
//! worktree, as the repository's owner when the node is root, with a small
//! environment of its own (never the node's), bounded in time, its output
//! (stdout and stderr as one stream) read to the end but only its tail kept.
//! A round stops at the first command that fails. Killing a round (a stop, a
//! pause) kills each command's whole process group.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tasks::CheckOutcome;
use tasks::state::MAX_OUTPUT_TAIL_BYTES;

use crate::workspace::git::{Owner, run_as};

/// How long one acceptance command may run before it is killed.
pub(super) const CHECK_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Where and as whom a round's commands run.
#[derive(Debug, Clone)]
pub(super) struct Place {
    pub(super) dir: PathBuf,
    pub(super) owner: Owner,
    pub(super) timeout: Duration,
}

/// Runs `commands` in order, stopping after the first that fails.
pub(super) async fn run_round(place: &Place, commands: &[String]) -> Vec<CheckOutcome> {
    let mut out = Vec::with_capacity(commands.len());
    for command in commands {
        let outcome = run_one(place, command).await;
        let passed = outcome.exit_code == Some(0);
        out.push(outcome);
        if !passed {
            break;
        }
    }
    out
}

/// One command: its exit code (`None` when killed at its time limit or not
/// started), the tail of its output, its time.
pub(super) async fn run_one(place: &Place, command: &str) -> CheckOutcome {
    let started = Instant::now();
    let (exit_code, output_tail) = match spawn(place, command) {
        Ok((child, reader)) => finish(child, reader, place.timeout).await,
        Err(e) => (None, format!("[warren: the command could not start: {e}]")),
    };
    CheckOutcome {
        command: command.to_string(),
        exit_code,
        output_tail,
        ms: started.elapsed().as_millis() as u64,
    }
}

fn spawn(place: &Place, command: &str) -> std::io::Result<(tokio::process::Child, std::io::PipeReader)> {
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(command)
        .current_dir(&place.dir)
        .env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LANG", "C.UTF-8")
        .env("HOME", &place.dir)
        .env("CI", "1")
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0);
    if let Some(o) = run_as(place.owner) {
        cmd.uid(o.uid).gid(o.gid);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let child = cmd.spawn()?;
    // `cmd` (holding the writer's copies) is dropped here, so the reader sees
    // the end once the command and everything it started have exited.
    Ok((child, reader))
}

async fn finish(
    mut child: tokio::process::Child,
    reader: std::io::PipeReader,
    timeout: Duration,
) -> (Option<i32>, String) {
    let pgid = child.id();
    let tail = tokio::task::spawn_blocking(move || read_tail(reader));
    let exit = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) => status.code(),
        Ok(Err(_)) => None,
        Err(_) => None,
    };
    // The group goes too (what the command left running would hold the pipe).
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
        unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) };
    }
    let _ = child.kill().await;
    let mut text = tail.await.unwrap_or_default();
    if exit.is_none() {
        text.push_str(&format!("\n[warren: killed after {} s]", timeout.as_secs()));
    }
    (exit, text)
}

/// Reads a stream to its end, keeping its last [`MAX_OUTPUT_TAIL_BYTES`].
fn read_tail(mut r: impl Read) -> String {
    let mut keep: Vec<u8> = Vec::with_capacity(MAX_OUTPUT_TAIL_BYTES * 2);
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                keep.extend_from_slice(&buf[..n]);
                if keep.len() > MAX_OUTPUT_TAIL_BYTES * 2 {
                    keep.drain(..keep.len() - MAX_OUTPUT_TAIL_BYTES);
                }
            }
        }
    }
    if keep.len() > MAX_OUTPUT_TAIL_BYTES {
        keep.drain(..keep.len() - MAX_OUTPUT_TAIL_BYTES);
    }
    String::from_utf8_lossy(&keep).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn place(dir: &Path, timeout: Duration) -> Place {
        Place {
            dir: dir.to_path_buf(),
            owner: crate::workspace::git::owner_of(dir).expect("owner"),
            timeout,
        }
    }

    #[tokio::test]
    async fn a_round_stops_at_the_first_failure_and_keeps_each_tail() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = place(dir.path(), Duration::from_secs(10));
        let cmds = [
            "echo one; echo two >&2".to_string(),
            "exit 3".into(),
            "touch never".into(),
        ];
        let out = run_round(&p, &cmds).await;
        assert_eq!(out.len(), 2, "{out:?}");
        assert_eq!(out[0].exit_code, Some(0));
        assert_eq!(out[0].output_tail, "one\ntwo\n", "stdout and stderr in one stream");
        assert_eq!(out[1].exit_code, Some(3));
        assert!(!dir.path().join("never").exists());
    }

    #[tokio::test]
    async fn the_node_environment_stays_out_and_the_output_is_cut_to_its_tail() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = place(dir.path(), Duration::from_secs(10));
        // SAFETY: a test-only variable, set before the command starts.
        unsafe { std::env::set_var("WARREN_CHECK_SECRET", "s3cret") };
        let out = run_one(&p, "echo \"[$WARREN_CHECK_SECRET]\"; pwd").await;
        assert!(out.output_tail.starts_with("[]\n"), "{:?}", out.output_tail);
        let out = run_one(&p, "head -c 100000 /dev/zero | tr '\\0' a; echo END").await;
        assert_eq!(out.output_tail.len(), MAX_OUTPUT_TAIL_BYTES);
        assert!(out.output_tail.ends_with("aEND\n"));
    }

    #[tokio::test]
    async fn a_command_past_its_time_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = place(dir.path(), Duration::from_millis(300));
        let started = Instant::now();
        let out = run_one(&p, "sleep 30 & echo started; sleep 30").await;
        assert_eq!(out.exit_code, None);
        assert!(out.output_tail.contains("started") && out.output_tail.contains("killed after"));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the background sleep held the pipe"
        );
    }
}
