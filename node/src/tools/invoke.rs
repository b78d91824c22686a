//! Runs an owner-defined tool for an agent: the program and its arguments
//! as argv (no shell ever sees them), a clean environment holding only the
//! variables the tool names (from the node's own), a timeout that kills the
//! tool's whole process group, and stdout/stderr cut at the tool's cap. The
//! values of the secrets it was given are blanked out of what it printed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::OwnerTool;

/// Most arguments of one invocation.
pub(crate) const MAX_ARGS: usize = 64;
/// Most bytes of all arguments together.
pub(crate) const MAX_ARGS_BYTES: usize = 64 * 1024;

/// How a tool run ended and what it printed (bounded).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRun {
    pub exit_code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    /// Output past the cap was dropped.
    pub truncated: bool,
    /// Why it was stopped (a timeout), if it did not end by itself.
    pub stopped: Option<String>,
    pub duration_ms: u64,
}

/// Checks the agent's arguments (any bytes but NUL are passed literally).
pub(crate) fn check_args(args: &[String]) -> Result<(), String> {
    if args.len() > MAX_ARGS {
        return Err(format!(
            "args: {} arguments is over the limit of {MAX_ARGS}",
            args.len()
        ));
    }
    let total: usize = args.iter().map(String::len).sum();
    if total > MAX_ARGS_BYTES {
        return Err(format!("args: {total} bytes is over the limit of {MAX_ARGS_BYTES}"));
    }
    if let Some(i) = args.iter().position(|a| a.contains('\0')) {
        return Err(format!("args[{i}]: contains a NUL byte"));
    }
    Ok(())
}

/// The command line: the tool's argv with `{args}` replaced by the agent's
/// arguments (or the arguments appended when the tool has no `{args}`).
pub(crate) fn command_line(tool: &OwnerTool, args: &[String]) -> Vec<String> {
    let mut out = vec![];
    let mut placed = false;
    for a in &tool.argv {
        if a == "{args}" {
            out.extend(args.iter().cloned());
            placed = true;
        } else {
            out.push(a.clone());
        }
    }
    if !placed {
        out.extend(args.iter().cloned());
    }
    out
}

/// Runs `tool` with `args` in `cwd`. Errors are setup problems the caller
/// can act on (a variable the node lacks, a program that is not there).
pub async fn run_tool(name: &str, tool: &OwnerTool, args: &[String], cwd: &Path) -> Result<ToolRun, String> {
    check_args(args)?;
    let argv = command_line(tool, args);
    let mut secrets = vec![];
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".into()))
        .env("LANG", "C.UTF-8")
        .current_dir(tool.cwd.as_deref().unwrap_or(cwd))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .process_group(0);
    for var in &tool.env {
        let Some(value) = std::env::var_os(var) else {
            return Err(format!(
                "[tools.{name}] needs ${var}, which is not in the node's environment: set it where `warren up` runs"
            ));
        };
        if let Some(v) = value.to_str().filter(|v| v.len() >= 4) {
            secrets.push(v.to_string());
        }
        cmd.env(var, value);
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("[tools.{name}]: cannot run {:?}: {e}", argv[0]))?;
    let pid = child.id();
    let cap = tool.max_output_bytes;
    let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(format!("[tools.{name}]: no output pipes"));
    };
    let run = async {
        let (o, e, status) = tokio::join!(capped(out, cap), capped(err, cap), child.wait());
        (o, e, status)
    };
    let limit = Duration::from_secs(tool.timeout_secs);
    let (stdout, stderr, exit_code, stopped) = match tokio::time::timeout(limit, run).await {
        Ok(((o, ot), (e, et), status)) => {
            let code = status.ok().and_then(|s| s.code());
            ((o, ot), (e, et), code, None)
        }
        Err(_) => {
            if let Some(pid) = pid {
                // The tool and everything it started.
                // SAFETY: kill(2) on a process group this node created; no memory is touched.
                unsafe {
                    libc::kill(-(pid as i32), libc::SIGKILL);
                }
            }
            let _ = child.wait().await;
            (
                (vec![], false),
                (vec![], false),
                None,
                Some(format!("timed out after {} s and was killed", tool.timeout_secs)),
            )
        }
    };
    let text = |b: &[u8]| {
        let mut s = String::from_utf8_lossy(b).into_owned();
        for secret in &secrets {
            s = s.replace(secret.as_str(), "[secret]");
        }
        s
    };
    Ok(ToolRun {
        exit_code,
        stdout: text(&stdout.0),
        stderr: text(&stderr.0),
        truncated: stdout.1 || stderr.1,
        stopped,
        duration_ms: started.elapsed().as_millis() as u64,
    })
}

/// Reads `r` to its end, keeping the first `cap` bytes; says whether more came.
async fn capped(mut r: impl AsyncRead + Unpin, cap: usize) -> (Vec<u8>, bool) {
    let mut kept = Vec::with_capacity(cap.min(64 * 1024));
    let mut buf = [0u8; 16 * 1024];
    let mut more = false;
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => return (kept, more),
            Ok(n) => {
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
                more |= n > room;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::tools::test_tool as tool;

    #[test]
    fn arguments_take_their_place() {
        let a = vec!["x".to_string(), "; rm -rf /".to_string()];
        assert_eq!(
            command_line(&tool(&["/bin/echo", "{args}", "end"]), &a),
            ["/bin/echo", "x", "; rm -rf /", "end"]
        );
        assert_eq!(
            command_line(&tool(&["/bin/echo", "-n"]), &a),
            ["/bin/echo", "-n", "x", "; rm -rf /"]
        );
        assert!(check_args(&vec!["a".to_string(); MAX_ARGS + 1]).is_err());
        assert!(check_args(&["a\0b".to_string()]).expect_err("nul").contains("args[0]"));
        assert!(check_args(&["x".repeat(MAX_ARGS_BYTES + 1)]).is_err());
    }

    #[tokio::test]
    async fn metacharacters_are_literal_output_is_capped_and_hangs_are_killed() {
        let dir = tempfile::tempdir().expect("dir");
        let run = run_tool(
            "echo",
            &tool(&["/bin/echo"]),
            &["$(touch pwned)".into(), "; touch pwned2".into(), "`id`".into()],
            dir.path(),
        )
        .await
        .expect("runs");
        assert_eq!(run.stdout, "$(touch pwned) ; touch pwned2 `id`\n");
        assert_eq!(run.exit_code, Some(0));
        assert!(!dir.path().join("pwned").exists() && !dir.path().join("pwned2").exists());

        let flood = run_tool(
            "yes",
            &tool(&["/usr/bin/head", "-c", "5000000", "/dev/zero"]),
            &[],
            dir.path(),
        )
        .await
        .expect("runs");
        assert_eq!(flood.stdout.len(), 1000);
        assert!(flood.truncated);
        assert_eq!(flood.exit_code, Some(0), "the flood is drained, not cut off");

        let mut hang = tool(&["/bin/sleep", "30"]);
        hang.timeout_secs = 1;
        let t = Instant::now();
        let hung = run_tool("hang", &hang, &[], dir.path()).await.expect("runs");
        assert!(
            hung.stopped.as_deref().is_some_and(|s| s.contains("timed out")),
            "{hung:?}"
        );
        assert!(t.elapsed() < Duration::from_secs(10));

        let mut needs = tool(&["/bin/true"]);
        needs.env = vec!["WARREN_TEST_SURELY_UNSET_VAR".into()];
        let e = run_tool("needs", &needs, &[], dir.path())
            .await
            .expect_err("missing var");
        assert!(e.contains("WARREN_TEST_SURELY_UNSET_VAR"), "{e}");
        let e = run_tool("gone", &tool(&["/nonexistent/prog"]), &[], dir.path())
            .await
            .expect_err("no program");
        assert!(e.contains("cannot run"), "{e}");
    }
}
