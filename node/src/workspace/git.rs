//! The real `git`, run by argv with a bounded time and output, as the
//! repository's owner when the node runs as root, with no user or system
//! configuration and nothing that could run a program the agent wrote.

use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};

/// A git command that failed: what it was doing and git's own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitError {
    pub doing: String,
    pub stderr: String,
}

impl std::fmt::Display for GitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.doing, self.stderr)
    }
}

impl std::error::Error for GitError {}

impl GitError {
    pub fn new(doing: impl Into<String>, stderr: impl Into<String>) -> Self {
        Self {
            doing: doing.into(),
            stderr: stderr.into(),
        }
    }
}

/// The uid and gid that own a path (the repository's owner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    pub uid: u32,
    pub gid: u32,
}

pub fn owner_of(path: &Path) -> std::io::Result<Owner> {
    let meta = std::fs::metadata(path)?;
    Ok(Owner {
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

/// Whether the node runs as root (then git runs as the repository's owner).
pub fn node_is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The user git must run as for a repository owned by `owner`: that owner
/// when the node is root and the owner is not; else the node itself.
pub fn run_as(owner: Owner) -> Option<Owner> {
    (node_is_root() && owner.uid != 0).then_some(owner)
}

/// Chowns `path` to `owner` when git would run as that owner (so the
/// directories the node makes for it are the owner's too).
pub fn chown_for(path: &Path, owner: Owner) -> std::io::Result<()> {
    match run_as(owner) {
        Some(o) => std::os::unix::fs::chown(path, Some(o.uid), Some(o.gid)),
        None => Ok(()),
    }
}

/// The time a git call gets before it is killed.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// A clone may fetch a large history.
pub const CLONE_TIMEOUT: Duration = Duration::from_secs(300);
/// Enough of git's stderr to quote it.
const STDERR_CAP: usize = 4096;
/// What a call reads of stdout unless told otherwise.
const DEFAULT_STDOUT_CAP: usize = 1 << 20;

/// Configuration on every call so nothing in the repository (which the
/// agent can write) runs a program on the host: no hooks, no fsmonitor, no
/// pager, no external diff, no signing program.
const HARDENING: [&str; 7] = [
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "diff.external=",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    // Paths in patches as UTF-8, not octal escapes.
    "core.quotePath=false",
];

/// PATH for git: the node's own, else the usual system one.
fn path_var() -> OsString {
    std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into())
}

/// What a git call printed.
#[derive(Debug)]
pub struct Output {
    pub stdout: Vec<u8>,
    /// stdout was longer than the cap; git was stopped there.
    pub truncated: bool,
    pub success: bool,
    pub code: Option<i32>,
    pub stderr: String,
}

impl Output {
    /// stdout as text, trimmed of the newline git ends with.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout)
            .trim_end_matches(['\n', '\r'])
            .to_string()
    }
}

/// One git invocation being built.
#[derive(Debug, Clone)]
pub struct Git {
    doing: String,
    dir: Option<PathBuf>,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    user: Option<Owner>,
    timeout: Duration,
    stdout_cap: usize,
}

impl Git {
    /// `doing` names the call in errors (`git worktree add`).
    pub fn new(doing: impl Into<String>) -> Self {
        Self {
            doing: doing.into(),
            dir: None,
            args: Vec::new(),
            env: Vec::new(),
            user: None,
            timeout: DEFAULT_TIMEOUT,
            stdout_cap: DEFAULT_STDOUT_CAP,
        }
    }

    /// `git -C <dir>`.
    pub fn dir(mut self, dir: &Path) -> Self {
        self.dir = Some(dir.to_path_buf());
        self
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    pub fn envs(mut self, env: &[(OsString, OsString)]) -> Self {
        self.env.extend(env.iter().cloned());
        self
    }

    /// Runs as `owner` when the node is root and the owner is not (see
    /// [`run_as`]); else as the node.
    pub fn owner(mut self, owner: Owner) -> Self {
        self.user = run_as(owner);
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn stdout_cap(mut self, cap: usize) -> Self {
        self.stdout_cap = cap;
        self
    }

    fn fail(&self, stderr: impl Into<String>) -> GitError {
        GitError::new(self.doing.clone(), stderr)
    }

    /// Runs git and returns what it printed whatever its exit status; an
    /// error only when it could not start or ran out of time. Cancel-safe:
    /// dropping the future kills git.
    pub async fn output(self) -> Result<Output, GitError> {
        let mut cmd = tokio::process::Command::new("git");
        cmd.env_clear()
            .env("PATH", path_var())
            .env("LC_ALL", "C")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("HOME", "/nonexistent")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_OPTIONAL_LOCKS", "0");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        for c in HARDENING {
            cmd.arg("-c").arg(c);
        }
        if let Some(dir) = &self.dir {
            cmd.arg("-C").arg(dir);
        }
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0);
        if let Some(o) = self.user {
            cmd.uid(o.uid).gid(o.gid);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| self.fail(format!("could not start git: {e}")))?;
        let pid = child.id();
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(self.fail("git's output pipes were not set up"));
        };
        let cap = self.stdout_cap;
        let work = async {
            let read_out = async {
                let mut stdout = stdout;
                let (buf, truncated) = read_capped(&mut stdout, cap).await;
                if truncated {
                    // git would block on a full pipe: stop it here.
                    kill_group(pid);
                }
                (buf, truncated)
            };
            let read_err = async {
                let mut stderr = stderr;
                let (buf, more) = read_capped(&mut stderr, STDERR_CAP).await;
                if more {
                    // git may still write: keep the pipe empty.
                    drain(&mut stderr).await;
                }
                buf
            };
            let ((stdout, truncated), stderr) = tokio::join!(read_out, read_err);
            let status = child.wait().await;
            (stdout, truncated, stderr, status)
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok((stdout, truncated, stderr, status)) => {
                let status = status.map_err(|e| self.fail(format!("waiting for git: {e}")))?;
                Ok(Output {
                    stdout,
                    truncated,
                    success: status.success() || truncated,
                    code: status.code(),
                    stderr: one_line(&stderr),
                })
            }
            Err(_) => {
                kill_group(pid);
                let _ = child.wait().await;
                Err(self.fail(format!("timed out after {} s", self.timeout.as_secs())))
            }
        }
    }

    /// Runs git; a non-zero exit is an error quoting git's stderr.
    pub async fn run(self) -> Result<Output, GitError> {
        let doing = self.doing.clone();
        let out = self.output().await?;
        if out.success {
            return Ok(out);
        }
        let words = if out.stderr.is_empty() {
            match out.code {
                Some(c) => format!("git exited with status {c}"),
                None => "git was killed by a signal".to_string(),
            }
        } else {
            out.stderr
        };
        Err(GitError::new(doing, words))
    }

    /// Runs git and returns its stdout as trimmed text.
    pub async fn text(self) -> Result<String, GitError> {
        Ok(self.run().await?.text())
    }
}

/// git's stderr on one line (it reads inside a JSON error): its lines
/// joined with "; ", blank ones dropped.
fn one_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// Reads at most `cap` bytes; `true` when there was more.
async fn read_capped<R: AsyncRead + Unpin>(r: &mut R, cap: usize) -> (Vec<u8>, bool) {
    let mut buf = Vec::with_capacity(cap.min(64 * 1024));
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match r.read(&mut chunk).await {
            Ok(0) | Err(_) => return (buf, false),
            Ok(n) => {
                let room = cap - buf.len();
                if n > room {
                    buf.extend_from_slice(&chunk[..room]);
                    return (buf, true);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

async fn drain<R: AsyncRead + Unpin>(r: &mut R) {
    let mut sink = [0u8; 8192];
    while let Ok(n) = r.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}

/// Kills git and anything it started (its own process group).
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill has no memory preconditions; the group is git's own.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

/// `-c`-style overrides (as `GIT_CONFIG_COUNT` env entries) that blank every
/// filter driver the repository's configuration names, so checking files in
/// or out never runs a program the agent could have configured.
/// `extra` pairs are added to the same entries (the env holds one list).
pub async fn filter_overrides(
    dir: &Path,
    owner: Owner,
    extra: &[(&str, &str)],
) -> Result<Vec<(OsString, OsString)>, GitError> {
    let out = Git::new("git config")
        .dir(dir)
        .owner(owner)
        .args(["config", "-z", "--name-only", "--get-regexp", r"^filter\."])
        .output()
        .await?;
    // Exit 1: no filter configured.
    if !out.success && out.code != Some(1) {
        return Err(GitError::new("git config", out.stderr));
    }
    let names = filter_names(&out.stdout);
    let mut pairs: Vec<(String, String)> = extra.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    for name in &names {
        for (var, value) in [("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")] {
            pairs.push((format!("filter.{name}.{var}"), value.to_string()));
        }
    }
    Ok(config_env(&pairs))
}

/// The driver names in `git config -z --name-only` output of `filter.*` keys.
fn filter_names(out: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for key in out.split(|b| *b == 0).filter(|k| !k.is_empty()) {
        let key = String::from_utf8_lossy(key);
        let Some(rest) = key.strip_prefix("filter.") else {
            continue;
        };
        let Some((name, _var)) = rest.rsplit_once('.') else {
            continue;
        };
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` for `pairs` (no `=` parsing, so any
/// subsection name passes whole).
pub fn config_env(pairs: &[(String, String)]) -> Vec<(OsString, OsString)> {
    if pairs.is_empty() {
        return Vec::new();
    }
    let mut env = vec![("GIT_CONFIG_COUNT".into(), pairs.len().to_string().into())];
    for (i, (k, v)) in pairs.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}").into(), k.into()));
        env.push((format!("GIT_CONFIG_VALUE_{i}").into(), v.into()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_names_from_config_keys() {
        let out = b"filter.lfs.clean\0filter.lfs.smudge\0filter.a.b c.process\0";
        assert_eq!(filter_names(out), vec!["lfs".to_string(), "a.b c".to_string()]);
        assert!(filter_names(b"").is_empty());
    }

    #[tokio::test]
    async fn runs_git_and_quotes_its_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        let err = Git::new("git rev-parse")
            .dir(dir.path())
            .args(["rev-parse", "HEAD"])
            .run()
            .await
            .expect_err("not a repo");
        assert_eq!(err.doing, "git rev-parse");
        assert!(err.stderr.contains("not a git repository"), "{err}");
    }

    #[tokio::test]
    async fn stdout_is_cut_at_the_cap() {
        let out = Git::new("git help")
            .args(["help", "-a"])
            .stdout_cap(100)
            .run()
            .await
            .expect("help runs");
        assert!(out.truncated);
        assert_eq!(out.stdout.len(), 100);
    }

    #[tokio::test]
    async fn a_slow_git_is_killed_at_the_timeout() {
        let started = std::time::Instant::now();
        let err = Git::new("git slow")
            .args(["-c", "alias.slow=!sleep 20", "slow"])
            .timeout(Duration::from_millis(300))
            .run()
            .await
            .expect_err("killed");
        assert!(err.stderr.contains("timed out"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn stderr_reads_on_one_line() {
        assert_eq!(
            one_line(b"fatal: a\nfatal: b\n\nPlease\n"),
            "fatal: a; fatal: b; Please"
        );
    }

    #[test]
    fn config_env_numbers_the_pairs() {
        let env = config_env(&[("a.b".into(), "1".into()), ("c.d".into(), "".into())]);
        let env: Vec<(String, String)> = env
            .into_iter()
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect();
        assert_eq!(env[0], ("GIT_CONFIG_COUNT".into(), "2".into()));
        assert_eq!(env[3], ("GIT_CONFIG_KEY_1".into(), "c.d".into()));
        assert_eq!(env[4], ("GIT_CONFIG_VALUE_1".into(), "".into()));
    }
}
