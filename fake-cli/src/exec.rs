//! Side effects of tools: running shell commands and applying the fake file edit.

use std::io::{self, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// Most output bytes kept from one command.
pub(crate) const MAX_OUTPUT: usize = 64 * 1024;

/// The line the fake edit appends.
pub(crate) const EDIT_LINE: &str = "edited by fake-cli";

/// What a shell command printed (stdout and stderr interleaved) and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellOutput {
    pub(crate) output: String,
    pub(crate) code: i32,
}

/// Runs `sh -c cmd` in `cwd`, capturing at most [`MAX_OUTPUT`] bytes of combined output.
pub(crate) fn run_shell(cmd: &str, cwd: &Path) -> ShellOutput {
    match try_run_shell(cmd, cwd) {
        Ok(out) => out,
        Err(e) => ShellOutput {
            output: format!("failed to run sh: {e}"),
            code: 127,
        },
    }
}

fn try_run_shell(cmd: &str, cwd: &Path) -> io::Result<ShellOutput> {
    let (mut reader, writer) = io::pipe()?;
    // The Command (holding the pipe's write ends) is dropped at the end of this block,
    // so the reader sees EOF once the child and its descendants close their copies.
    let mut child = {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(cmd)
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(writer.try_clone()?)
            .stderr(writer);
        command.spawn()?
    };
    let mut kept = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let status = child.wait()?;
    let code = status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(-1);
    Ok(ShellOutput {
        output: String::from_utf8_lossy(&kept).into_owned(),
        code,
    })
}

/// The tool line's text for a command and its output: `$ CMD` then the output
/// (trailing newlines dropped; no second line when there is no output).
pub(crate) fn tool_text(cmd: &str, output: &str) -> String {
    let output = output.trim_end_matches(['\n', '\r']);
    if output.is_empty() {
        format!("$ {cmd}")
    } else {
        format!("$ {cmd}\n{output}")
    }
}

/// Appends the fake edit's line to `path` (relative to `cwd`), creating the file if needed.
pub(crate) fn apply_edit(cwd: &Path, path: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cwd.join(path))?;
    file.write_all(format!("{EDIT_LINE}\n").as_bytes())?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_text_shapes() {
        assert_eq!(tool_text("ls", "a\nb\n"), "$ ls\na\nb");
        assert_eq!(tool_text("true", ""), "$ true");
    }

    #[test]
    fn runs_in_cwd_and_merges_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_shell("echo out; echo err >&2; touch here.txt; exit 3", dir.path());
        assert_eq!(out.code, 3);
        assert_eq!(out.output, "out\nerr\n");
        assert!(dir.path().join("here.txt").exists());
    }

    #[test]
    fn output_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let out = run_shell("head -c 200000 /dev/zero | tr '\\0' x", dir.path());
        assert_eq!(out.code, 0);
        assert_eq!(out.output.len(), MAX_OUTPUT);
    }

    #[test]
    fn edit_appends() {
        let dir = tempfile::tempdir().unwrap();
        apply_edit(dir.path(), "f.txt").unwrap();
        apply_edit(dir.path(), "f.txt").unwrap();
        let text = std::fs::read_to_string(dir.path().join("f.txt")).unwrap();
        assert_eq!(text, "edited by fake-cli\nedited by fake-cli\n");
    }
}
