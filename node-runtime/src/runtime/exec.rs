//! One command run for the node inside a conversation's runtime (a task's
//! acceptance command): through `sh -c` in a directory, as a given user, with
//! an environment of the node's choosing (never the node's own), bounded in
//! time, stdout and stderr read to the end as one stream of which only the
//! tail is kept. The local runtime runs it as a child in its own process
//! group (killed whole at the limit); a Docker guest runs it with `docker
//! exec` in the conversation's container, under `timeout` there.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use futures_util::StreamExt;

/// What to run.
#[derive(Debug, Clone)]
pub struct ExecSpec {
    pub conversation: String,
    /// The working directory (the same path inside a guest).
    pub dir: PathBuf,
    pub command: String,
    /// `(uid, gid)` to run as; `None`: as the runtime itself.
    pub user: Option<(u32, u32)>,
    /// `NAME=value` pairs: the whole environment (plus `PATH` locally).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// How much of the output's end to keep, in bytes.
    pub tail_bytes: usize,
}

/// How it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecOutcome {
    /// `None`: killed at its time limit, or it could not be run.
    pub exit_code: Option<i32>,
    pub output_tail: String,
}

/// The search path a command gets on the host.
const HOST_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// The last `cap` bytes of a stream, kept while it is read.
struct Tail {
    keep: Vec<u8>,
    cap: usize,
}

impl Tail {
    fn new(cap: usize) -> Tail {
        Tail {
            keep: Vec::with_capacity(cap.min(1 << 16) * 2),
            cap,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.keep.extend_from_slice(bytes);
        if self.keep.len() > self.cap * 2 {
            self.keep.drain(..self.keep.len() - self.cap);
        }
    }

    fn text(mut self) -> String {
        if self.keep.len() > self.cap {
            self.keep.drain(..self.keep.len() - self.cap);
        }
        String::from_utf8_lossy(&self.keep).into_owned()
    }
}

fn killed_note(timeout: Duration) -> String {
    format!("\n[warren: killed after {} s]", timeout.as_secs())
}

/// Runs `spec` on this host.
pub async fn run_local(spec: &ExecSpec) -> ExecOutcome {
    let (child, reader) = match spawn_local(spec) {
        Ok(x) => x,
        Err(e) => {
            return ExecOutcome {
                exit_code: None,
                output_tail: format!("[warren: the command could not start: {e}]"),
            };
        }
    };
    finish_local(child, reader, spec).await
}

fn spawn_local(spec: &ExecSpec) -> std::io::Result<(tokio::process::Child, std::io::PipeReader)> {
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c")
        .arg(&spec.command)
        .current_dir(&spec.dir)
        .env_clear()
        .env("PATH", HOST_PATH)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0);
    if let Some((uid, gid)) = spec.user {
        cmd.uid(uid).gid(gid);
    }
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    let child = cmd.spawn()?;
    // `cmd` (holding the writer's copies) goes here, so the reader sees the
    // end once the command and everything it started have exited.
    Ok((child, reader))
}

async fn finish_local(mut child: tokio::process::Child, reader: std::io::PipeReader, spec: &ExecSpec) -> ExecOutcome {
    let pgid = child.id();
    let cap = spec.tail_bytes;
    let tail = tokio::task::spawn_blocking(move || {
        let mut tail = Tail::new(cap);
        let mut r = reader;
        let mut buf = [0u8; 8192];
        while let Ok(n) = r.read(&mut buf) {
            if n == 0 {
                break;
            }
            tail.push(&buf[..n]);
        }
        tail.text()
    });
    let exit = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(Ok(status)) => status.code(),
        Ok(Err(_)) | Err(_) => None,
    };
    // The group goes too (what the command left running would hold the pipe).
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory is involved.
        unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) };
    }
    let _ = child.kill().await;
    let mut output_tail = tail.await.unwrap_or_default();
    if exit.is_none() {
        output_tail.push_str(&killed_note(spec.timeout));
    }
    ExecOutcome {
        exit_code: exit,
        output_tail,
    }
}

/// Runs `spec` in `container` with `docker exec`, killed by `timeout` inside
/// the container at its limit (the node stops waiting a little later).
pub async fn run_in_container(docker: &Docker, container: &str, spec: &ExecSpec) -> ExecOutcome {
    let failed = |what: &str, e: &dyn std::fmt::Display| ExecOutcome {
        exit_code: None,
        output_tail: format!("[warren: {what} in the guest {container}: {e}]"),
    };
    let secs = spec.timeout.as_secs().max(1).to_string();
    let cmd = vec![
        "timeout".to_string(),
        "-s".into(),
        "KILL".into(),
        secs,
        "sh".into(),
        "-c".into(),
        spec.command.clone(),
    ];
    let env: Vec<String> = spec.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let opts = CreateExecOptions {
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        env: Some(env),
        cmd: Some(cmd),
        user: spec.user.map(|(u, g)| format!("{u}:{g}")),
        working_dir: Some(spec.dir.display().to_string()),
        ..Default::default()
    };
    let exec = match docker.create_exec(container, opts).await {
        Ok(e) => e.id,
        Err(e) => return failed("the command could not be created", &e),
    };
    let started = Instant::now();
    let mut output = match docker.start_exec(&exec, Some(StartExecOptions::default())).await {
        Ok(StartExecResults::Attached { output, .. }) => output,
        Ok(StartExecResults::Detached) => return failed("the command ran detached", &"no output"),
        Err(e) => return failed("the command could not start", &e),
    };
    let mut tail = Tail::new(spec.tail_bytes);
    let read = async {
        while let Some(Ok(chunk)) = output.next().await {
            match chunk {
                LogOutput::StdOut { message } | LogOutput::StdErr { message } | LogOutput::Console { message } => {
                    tail.push(&message)
                }
                LogOutput::StdIn { .. } => {}
            }
        }
    };
    let ended = tokio::time::timeout(spec.timeout + Duration::from_secs(10), read)
        .await
        .is_ok();
    let code = match docker.inspect_exec(&exec).await {
        Ok(i) if i.running != Some(true) => i.exit_code.map(|c| c as i32),
        _ => None,
    };
    let timed_out = !ended || (code == Some(137) && started.elapsed() >= spec.timeout);
    let mut output_tail = tail.text();
    let exit_code = if timed_out { None } else { code };
    if exit_code.is_none() {
        output_tail.push_str(&killed_note(spec.timeout));
    }
    ExecOutcome { exit_code, output_tail }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dir: &std::path::Path, command: &str, timeout: Duration) -> ExecSpec {
        ExecSpec {
            conversation: "c-test".into(),
            dir: dir.to_path_buf(),
            command: command.into(),
            user: None,
            env: vec![("HOME".into(), dir.display().to_string())],
            timeout,
            tail_bytes: 4096,
        }
    }

    #[tokio::test]
    async fn stdout_and_stderr_are_one_stream_and_the_exit_code_is_kept() {
        let dir = tempfile::tempdir().expect("tmp");
        let out = run_local(&spec(
            dir.path(),
            "echo one; echo two >&2; exit 3",
            Duration::from_secs(10),
        ))
        .await;
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.output_tail, "one\ntwo\n");
    }

    #[tokio::test]
    async fn the_node_environment_stays_out_and_the_output_is_cut_to_its_tail() {
        let dir = tempfile::tempdir().expect("tmp");
        // SAFETY: a test-only variable, set before the command starts.
        unsafe { std::env::set_var("WARREN_EXEC_SECRET", "s3cret") };
        let out = run_local(&spec(
            dir.path(),
            "echo \"[$WARREN_EXEC_SECRET][$HOME]\"",
            Duration::from_secs(10),
        ))
        .await;
        assert_eq!(out.output_tail, format!("[][{}]\n", dir.path().display()));
        let out = run_local(&spec(
            dir.path(),
            "head -c 100000 /dev/zero | tr '\\0' a; echo END",
            Duration::from_secs(10),
        ))
        .await;
        assert_eq!(out.output_tail.len(), 4096);
        assert!(out.output_tail.ends_with("aEND\n"));
    }

    #[tokio::test]
    async fn a_command_past_its_time_is_killed_with_what_it_started() {
        let dir = tempfile::tempdir().expect("tmp");
        let started = Instant::now();
        let out = run_local(&spec(
            dir.path(),
            "sleep 30 & echo started; sleep 30",
            Duration::from_millis(300),
        ))
        .await;
        assert_eq!(out.exit_code, None);
        assert!(out.output_tail.contains("started") && out.output_tail.contains("killed after"));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the background sleep held the pipe"
        );
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_across_pushes() {
        let mut t = Tail::new(5);
        for chunk in ["abc", "defgh", "ij", "klmnopqrstu"] {
            t.push(chunk.as_bytes());
        }
        assert_eq!(t.text(), "qrstu");
    }
}
