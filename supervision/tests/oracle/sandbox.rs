//! Runs one command in a bubblewrap sandbox under `strace -f`, in a fresh
//! copy of the world at the corpus's absolute paths: the root is a tmpfs with
//! `/usr` (and the host's top-level links to it) and the Rust toolchain
//! bound read-only, `/etc` rebuilt from the host's entries (read-only) plus
//! a secret, `/proc`, `/dev` and `/sys` of the sandbox, and the copy's `/w`,
//! `/home` and `/tmp` bound read-write (nothing the command does there
//! survives it). No network, its own pid, IPC and UTS namespaces, a new
//! session, dying with the test. Cargo's target directory (bound at
//! `/w/repo/target`) and go's build cache (at `/tmp/go-cache`) are shared by
//! every command so the fixture builds once. Each run
//! has a time limit, every file it writes (the trace and its output
//! included) a size limit, and its output and the worktree are searched for
//! the secrets' markers afterwards.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::common::{HOME, WORKTREE};
use crate::judge::Links;
use crate::world::{self, MARKER, World};

/// The sandbox path of the trace directory (strace writes the log there).
pub const TRACE_DIR: &str = "/run/oracle";
/// Per-command time limit.
pub const TIME_LIMIT: Duration = Duration::from_secs(30);
/// Largest file any sandboxed process may write, in KiB (`ulimit -f`).
const FILE_LIMIT_KIB: u64 = 1 << 20;
/// How much of a trace is read and judged; a longer one is a finding.
pub const TRACE_LIMIT: u64 = 16 << 20;
/// How much of stderr is kept for the report.
const TAIL: usize = 2048;

/// The system calls traced: every call that names a file, every process
/// call, and the fd-based ones that change or enter a file.
const TRACED: &str = "trace=%file,%process,fchdir,fchmod,fchown,ftruncate,fsetxattr,fremovexattr";

/// Fails loudly when a tool the tier needs is missing.
pub fn require_tools() {
    for (tool, arg) in [("bwrap", "--version"), ("strace", "-V")] {
        let ok = Command::new(tool)
            .arg(arg)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(
            ok,
            "the sandbox oracle needs `{tool}` (bubblewrap and strace): run deploy/scripts/install-oracle-tools.sh"
        );
    }
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Given to `bash -c`.
    pub script: String,
    /// Sandbox working directory.
    pub cwd: PathBuf,
}

/// What a run left behind.
pub struct Outcome {
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub trace: String,
    /// The trace was longer than [`TRACE_LIMIT`] and only its start was read.
    pub trace_cut: bool,
    pub stderr: String,
    /// Where a secret's marker turned up: `(marker, place)`.
    pub leaks: Vec<(String, String)>,
    scratch: Scratch,
}

impl Outcome {
    /// Symlinks as the sandbox saw them (read from the copy after the run).
    pub fn links(&self) -> &dyn Links {
        &self.scratch
    }
}

/// A run's copy of the world, removed when dropped.
struct Scratch {
    dir: PathBuf,
    cargo_target: PathBuf,
    etc_canary: PathBuf,
    host_roots: Vec<PathBuf>,
}

impl Scratch {
    /// The host path that holds sandbox path `p`, if the sandbox has it.
    fn host(&self, p: &Path) -> Option<PathBuf> {
        let under = |root: &str| p.strip_prefix(root).ok();
        if let Ok(rest) = p.strip_prefix(format!("{WORKTREE}/target")) {
            return Some(self.cargo_target.join(rest));
        }
        for top in ["w", "home", "tmp"] {
            if let Some(rest) = under(&format!("/{top}")) {
                return Some(self.dir.join(top).join(rest));
            }
        }
        if p == Path::new("/etc/warren-canary") {
            return Some(self.etc_canary.clone());
        }
        if under(TRACE_DIR).is_some() {
            return Some(self.dir.join("trace"));
        }
        self.host_roots
            .iter()
            .any(|r| p.starts_with(r))
            .then(|| p.to_path_buf())
    }
}

impl Links for Scratch {
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        fs::read_link(self.host(p)?).ok()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// The sandbox: the world's template and everything bound into each run.
pub struct Sandbox {
    world: World,
    runs: PathBuf,
    cargo_target: PathBuf,
    go_cache: PathBuf,
    /// Bound read-only at the same paths: the Rust toolchain.
    toolchain: Vec<PathBuf>,
    cargo_bin: Option<PathBuf>,
    rustup_home: Option<PathBuf>,
    next: AtomicUsize,
}

impl Sandbox {
    /// Builds the world under `dir` (cargo's target and go's build cache are
    /// kept there across runs). Each run's copy lives in memory
    /// (`/dev/shm`) when the machine has it: copying and removing a world
    /// there is much faster than on disk.
    pub fn new(dir: &Path) -> io::Result<Sandbox> {
        let world = world::build(&dir.join("template"))?;
        let shm = Path::new("/dev/shm");
        // Copies left by earlier test processes that are gone.
        for entry in fs::read_dir(shm).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("warren-oracle-")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
        let runs = if shm.is_dir() {
            shm.join(format!("warren-oracle-{}", std::process::id()))
        } else {
            dir.join("runs")
        };
        if runs.exists() {
            fs::remove_dir_all(&runs)?;
        }
        fs::create_dir_all(&runs)?;
        let cargo_target = dir.join("cargo-target");
        fs::create_dir_all(&cargo_target)?;
        let go_cache = dir.join("go-cache");
        fs::create_dir_all(&go_cache)?;
        fs::write(cargo_target.join("log.txt"), "a build log\n")?;
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| "/root".into());
        let env_dir = |k: &str, default: &str| std::env::var_os(k).map_or_else(|| home.join(default), PathBuf::from);
        let rustup_home = Some(env_dir("RUSTUP_HOME", ".rustup")).filter(|p| p.is_dir());
        let cargo_bin = Some(env_dir("CARGO_HOME", ".cargo").join("bin")).filter(|p| p.is_dir());
        let toolchain = rustup_home.iter().chain(cargo_bin.iter()).cloned().collect();
        Ok(Sandbox {
            world,
            runs,
            cargo_target,
            go_cache,
            toolchain,
            cargo_bin,
            rustup_home,
            next: AtomicUsize::new(0),
        })
    }

    /// Directories bound read-only from the host (the toolchain's).
    pub fn toolchain(&self) -> &[PathBuf] {
        &self.toolchain
    }

    /// The environment a CLI's command sees: the agent's home, the instance
    /// token, and tool caches pointed into the sandbox's `/tmp` (so a tool's
    /// own cache is not a write into the home).
    fn env(&self) -> Vec<(String, String)> {
        let mut path = Vec::new();
        if let Some(bin) = &self.cargo_bin {
            path.push(bin.display().to_string());
        }
        path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from));
        let mut env: Vec<(String, String)> = [
            ("HOME", HOME),
            ("USER", "agent"),
            ("LOGNAME", "agent"),
            ("SHELL", "/bin/bash"),
            ("LANG", "C.UTF-8"),
            ("TERM", "dumb"),
            ("TMPDIR", "/tmp"),
            ("CARGO_HOME", "/tmp/cargo-home"),
            ("CARGO_TERM_COLOR", "never"),
            ("CARGO_NET_OFFLINE", "true"),
            ("GOCACHE", "/tmp/go-cache"),
            ("GOPATH", "/tmp/go"),
            ("GOPROXY", "off"),
            ("GOTOOLCHAIN", "local"),
            ("GOTELEMETRY", "off"),
            ("npm_config_cache", "/tmp/npm-cache"),
            ("npm_config_update_notifier", "false"),
            ("npm_config_fund", "false"),
            ("npm_config_audit", "false"),
            ("npm_config_offline", "true"),
            ("WARREN_TOKEN_FILE", "/home/agents/a1/.warren/instance.token"),
            ("WARREN_URL", "ws://127.0.0.1:9/api"),
            ("WARREN_AGENT", "a1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        env.push(("PATH".into(), path.join(":")));
        env.push(("WARREN_TOKEN".into(), world::token_marker()));
        if let Some(r) = &self.rustup_home {
            env.push(("RUSTUP_HOME".into(), r.display().to_string()));
        }
        env
    }

    fn bwrap_args(&self, scratch: &Path, cwd: &Path) -> io::Result<Vec<String>> {
        let mut a: Vec<String> = [
            "--die-with-parent",
            "--new-session",
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        .map(String::from)
        .to_vec();
        let mut push = |xs: &[&str]| a.extend(xs.iter().map(|x| x.to_string()));
        // The host's top-level links into /usr (/bin, /lib, /lib64, /sbin).
        for entry in fs::read_dir("/")? {
            let entry = entry?;
            if let Ok(target) = fs::read_link(entry.path()) {
                let name = format!("/{}", entry.file_name().to_string_lossy());
                push(&["--symlink", &target.to_string_lossy(), &name]);
            }
        }
        push(&["--tmpfs", "/etc"]);
        for entry in fs::read_dir("/etc")? {
            let entry = entry?;
            let host = entry.path();
            let name = host.to_string_lossy().into_owned();
            if let Ok(target) = fs::read_link(&host) {
                push(&["--symlink", &target.to_string_lossy(), &name]);
            } else {
                push(&["--ro-bind", &name, &name]);
            }
        }
        push(&[
            "--ro-bind",
            &self.world.etc_canary.to_string_lossy(),
            "/etc/warren-canary",
            "--remount-ro",
            "/etc",
        ]);
        for t in &self.toolchain {
            let t = t.to_string_lossy();
            push(&["--ro-bind", &t, &t]);
        }
        let s = |p: &str| scratch.join(p).to_string_lossy().into_owned();
        push(&[
            "--ro-bind",
            "/sys",
            "/sys",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--bind",
            &s("w"),
            "/w",
            "--bind",
            &s("home"),
            "/home",
            "--bind",
            &s("tmp"),
            "/tmp",
            "--bind",
            &self.cargo_target.to_string_lossy(),
            &format!("{WORKTREE}/target"),
            "--bind",
            &self.go_cache.to_string_lossy(),
            "/tmp/go-cache",
            "--bind",
            &s("trace"),
            TRACE_DIR,
            "--chdir",
            &cwd.to_string_lossy(),
            "--clearenv",
        ]);
        for (k, v) in self.env() {
            push(&["--setenv", &k, &v]);
        }
        Ok(a)
    }

    /// Runs `job` and returns what it left (the copy stays until the outcome
    /// is dropped, so the judge can read its symlinks).
    pub fn run(&self, job: &Job) -> io::Result<Outcome> {
        let n = self.next.fetch_add(1, Ordering::SeqCst);
        let dir = self.runs.join(n.to_string());
        let scratch = Scratch {
            dir: dir.clone(),
            cargo_target: self.cargo_target.clone(),
            etc_canary: self.world.etc_canary.clone(),
            host_roots: ["/usr", "/etc", "/bin", "/lib", "/lib64", "/sbin"]
                .iter()
                .map(PathBuf::from)
                .chain(self.toolchain.iter().cloned())
                .collect(),
        };
        fs::create_dir_all(dir.join("trace"))?;
        fs::create_dir_all(dir.join("out"))?;
        for top in ["w", "home", "tmp"] {
            let status = Command::new("cp")
                .arg("-a")
                .arg(self.world.root.join(top))
                .arg(dir.join(top))
                .status()?;
            if !status.success() {
                return Err(io::Error::other(format!("copying the world's {top} failed")));
            }
        }
        let mut cmd = Command::new("/bin/bash");
        cmd.arg("-c")
            .arg(format!("ulimit -f {FILE_LIMIT_KIB} && exec \"$@\""))
            .arg("oracle-limits")
            .arg("bwrap")
            .args(self.bwrap_args(&dir, &job.cwd)?)
            .args([
                "--",
                "/usr/bin/strace",
                "-f",
                "-qq",
                "-y",
                "-s",
                "4096",
                "--seccomp-bpf",
            ])
            .args(["-o", &format!("{TRACE_DIR}/trace"), "-e", TRACED, "-e", "signal=none"])
            .args(["/bin/bash", "-c", &job.script])
            .stdin(Stdio::null())
            .stdout(fs::File::create(dir.join("out/stdout"))?)
            .stderr(fs::File::create(dir.join("out/stderr"))?);
        let started = Instant::now();
        let wall = SystemTime::now();
        let mut child = cmd.spawn()?;
        let mut timed_out = false;
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break Some(status);
            }
            if started.elapsed() > TIME_LIMIT {
                timed_out = true;
                child.kill()?;
                let _ = child.wait()?;
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        let elapsed = started.elapsed();
        let (trace, trace_cut) = read_capped(&dir.join("trace/trace"), TRACE_LIMIT)?;
        let stdout = fs::read(dir.join("out/stdout")).unwrap_or_default();
        let stderr = fs::read(dir.join("out/stderr")).unwrap_or_default();
        let mut leaks = Vec::new();
        for (name, bytes) in [("stdout", &stdout), ("stderr", &stderr)] {
            for m in markers(bytes) {
                leaks.push((m, name.to_string()));
            }
        }
        let canaries: Vec<PathBuf> = world::canaries()
            .iter()
            .map(|c| dir.join(c.path.strip_prefix("/").unwrap_or(&c.path)))
            .collect();
        let mut places = Vec::new();
        for top in ["w/repo", "home", "tmp"] {
            scan(&dir.join(top), None, &mut |p, b| {
                if !canaries.iter().any(|c| p.starts_with(c)) {
                    for m in markers(b) {
                        places.push((m, p.strip_prefix(&dir).unwrap_or(p).display().to_string()));
                    }
                }
            });
        }
        scan(&self.cargo_target, Some(wall), &mut |p, b| {
            for m in markers(b) {
                places.push((m, format!("the cargo target: {}", p.display())));
            }
        });
        leaks.extend(places);
        Ok(Outcome {
            exit: status.and_then(|s| s.code()),
            timed_out,
            elapsed,
            trace,
            trace_cut,
            stderr: tail(&stderr),
            leaks,
            scratch,
        })
    }
}

fn read_capped(path: &Path, cap: u64) -> io::Result<(String, bool)> {
    let Ok(f) = fs::File::open(path) else {
        return Ok((String::new(), false));
    };
    let len = f.metadata()?.len();
    let mut buf = Vec::new();
    f.take(cap).read_to_end(&mut buf)?;
    Ok((String::from_utf8_lossy(&buf).into_owned(), len > cap))
}

fn tail(b: &[u8]) -> String {
    let from = b.len().saturating_sub(TAIL);
    String::from_utf8_lossy(&b[from..]).into_owned()
}

/// Every secret marker in `b` (the marker text up to a non-name byte).
fn markers(b: &[u8]) -> Vec<String> {
    let m = MARKER.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i + m.len() <= b.len() {
        if &b[i..i + m.len()] == m {
            let end = b[i..]
                .iter()
                .position(|c| !(c.is_ascii_alphanumeric() || *c == b'-'))
                .map_or(b.len(), |e| i + e);
            let found = String::from_utf8_lossy(&b[i..end]).into_owned();
            if !out.contains(&found) {
                out.push(found);
            }
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// Calls `f` with every regular file (up to 8 MiB; changed since `since`
/// when given) under `dir`, symlinks not followed.
fn scan(dir: &Path, since: Option<SystemTime>, f: &mut dyn FnMut(&Path, &[u8])) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let p = entry.path();
        let Ok(meta) = fs::symlink_metadata(&p) else { continue };
        let fresh = since.is_none_or(|t| meta.modified().is_ok_and(|m| m >= t));
        if meta.is_dir() {
            scan(&p, since, f);
        } else if meta.is_file()
            && fresh
            && meta.len() <= 8 << 20
            && let Ok(b) = fs::read(&p)
        {
            f(&p, &b);
        }
    }
}
