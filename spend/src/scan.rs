//! The crate's only IO, for the offline scan (`warren spend scan`) and the
//! node's indexer: find the session files under a Claude config dir or a
//! Codex home, and read each from where its [`FileState`] stopped, in bounded
//! chunks, on several threads. Every decision is the pure code's:
//! [`decide`] for continue-or-reparse, [`FileState::feed`] for the bytes.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::cursor::{Decision, FileIdentity, FileMeta, FileState, HEAD_BYTES, MAX_LINE_BYTES, Parsed, decide};
use crate::error::SpendError;
use crate::record::Harness;

/// Bytes read at a time: room for a maximal line plus a read ahead.
pub const CHUNK_BYTES: usize = (MAX_LINE_BYTES as usize) * 2;

/// How deep a walk goes below a root.
const MAX_DEPTH: usize = 8;

/// A session store found at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub harness: Harness,
    /// The config dir or home the user named.
    pub dir: PathBuf,
}

/// What `path` holds, by layout: `projects/` makes it a Claude config dir;
/// `sessions/` or `archived_sessions/` a Codex home (a dir may be both).
pub fn detect(path: &Path) -> Result<Vec<Root>, SpendError> {
    if !path.is_dir() {
        return Err(SpendError::Io {
            path: path.display().to_string(),
            detail: "not a directory".into(),
        });
    }
    let mut roots = vec![];
    if path.join("projects").is_dir() {
        roots.push(Root {
            harness: Harness::Claude,
            dir: path.to_path_buf(),
        });
    }
    if path.join("sessions").is_dir() || path.join("archived_sessions").is_dir() {
        roots.push(Root {
            harness: Harness::Codex,
            dir: path.to_path_buf(),
        });
    }
    if roots.is_empty() {
        return Err(SpendError::UnknownLayout {
            path: path.display().to_string(),
        });
    }
    Ok(roots)
}

/// One session file to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionFile {
    pub path: PathBuf,
    pub harness: Harness,
    /// `.zst`: read through the decoder, never continued (always reparsed
    /// when it changes).
    pub compressed: bool,
    /// The session id its name gives.
    pub session_hint: String,
}

/// The session files under a root, sorted by path. Claude: every `*.jsonl`
/// under `projects/` (subagent files included). Codex: `rollout-*.jsonl` and
/// `rollout-*.jsonl.zst` under `sessions/` and `archived_sessions/`.
/// Symbolic links are not followed.
pub fn list(root: &Root) -> Result<Vec<SessionFile>, SpendError> {
    let mut out = vec![];
    match root.harness {
        Harness::Claude => walk(
            &root.dir.join("projects"),
            0,
            &mut |p| {
                let name = p.file_name()?.to_str()?;
                let stem = name.strip_suffix(".jsonl")?;
                Some(SessionFile {
                    path: p.to_path_buf(),
                    harness: Harness::Claude,
                    compressed: false,
                    session_hint: stem.to_string(),
                })
            },
            &mut out,
        )?,
        Harness::Codex => {
            for sub in ["sessions", "archived_sessions"] {
                let dir = root.dir.join(sub);
                if dir.is_dir() {
                    walk(&dir, 0, &mut codex_file, &mut out)?;
                }
            }
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn codex_file(p: &Path) -> Option<SessionFile> {
    let name = p.file_name()?.to_str()?;
    if !name.starts_with("rollout-") {
        return None;
    }
    let (stem, compressed) = match name.strip_suffix(".jsonl.zst") {
        Some(s) => (s, true),
        None => (name.strip_suffix(".jsonl")?, false),
    };
    // rollout-2026-11-03T10-00-00-<uuid>: the uuid is the last 36 characters.
    let hint = if stem.len() >= 36 && stem.is_char_boundary(stem.len() - 36) {
        &stem[stem.len() - 36..]
    } else {
        stem
    };
    Some(SessionFile {
        path: p.to_path_buf(),
        harness: Harness::Codex,
        compressed,
        session_hint: hint.to_string(),
    })
}

fn walk(
    dir: &Path,
    depth: usize,
    pick: &mut dyn FnMut(&Path) -> Option<SessionFile>,
    out: &mut Vec<SessionFile>,
) -> Result<(), SpendError> {
    let io = |e: std::io::Error| SpendError::Io {
        path: dir.display().to_string(),
        detail: e.to_string(),
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let ty = entry.file_type().map_err(io)?;
        let path = entry.path();
        if ty.is_dir() && depth < MAX_DEPTH {
            walk(&path, depth + 1, pick, out)?;
        } else if ty.is_file()
            && let Some(f) = pick(&path)
        {
            out.push(f);
        }
    }
    Ok(())
}

/// What one file's scan did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Unchanged,
    Appended { from: u64 },
    Parsed { reason: &'static str },
    Failed,
}

/// One file's scan: its new state and what the new bytes held.
#[derive(Debug, Clone)]
pub struct FileScan {
    /// The state to keep for next time; `None` when the file was not read
    /// (unchanged, or it failed: keep the previous state).
    pub state: Option<FileState>,
    pub parsed: Parsed,
    pub outcome: Outcome,
    /// Why the file could not be read or decoded (its state is then the
    /// previous one, or fresh).
    pub error: Option<SpendError>,
}

/// Scans one file, continuing from `prev` when [`decide`] allows. `buf` is
/// scratch space reused across files.
pub fn scan_file(f: &SessionFile, prev: Option<&FileState>, buf: &mut Vec<u8>) -> FileScan {
    let fresh = || FileState::new(f.harness, f.session_hint.clone());
    let failed = |error: SpendError| FileScan {
        state: None,
        parsed: Parsed::default(),
        outcome: Outcome::Failed,
        error: Some(error),
    };
    let io = |e: std::io::Error| SpendError::Io {
        path: f.path.display().to_string(),
        detail: e.to_string(),
    };
    let unchanged = || FileScan {
        state: None,
        parsed: Parsed::default(),
        outcome: Outcome::Unchanged,
        error: None,
    };
    // A stat answers for most files of a rescan: no open, no read.
    match std::fs::metadata(&f.path) {
        Ok(m) if prev.is_some() && decide(prev, &file_meta(&m), f.compressed, None) == Decision::Unchanged => {
            return unchanged();
        }
        Ok(_) => {}
        Err(e) => return failed(io(e)),
    }
    let file = match File::open(&f.path) {
        Ok(file) => file,
        Err(e) => return failed(io(e)),
    };
    let meta = match file.metadata() {
        Ok(m) => file_meta(&m),
        Err(e) => return failed(io(e)),
    };
    let mut decision = decide(prev, &meta, f.compressed, None);
    if let Decision::NeedHead { len } = decision {
        match read_head(&file, len) {
            Ok(head) => decision = decide(prev, &meta, f.compressed, Some(&head)),
            Err(e) => return failed(io(e)),
        }
    }
    let (mut state, from, outcome) = match (decision, prev) {
        (Decision::Unchanged, Some(_)) => return unchanged(),
        (Decision::Append { from }, Some(p)) => (p.clone(), from, Outcome::Appended { from }),
        (Decision::Reparse { reason }, _) => (fresh(), 0, Outcome::Parsed { reason }),
        _ => (
            fresh(),
            0,
            Outcome::Parsed {
                reason: "no saved state",
            },
        ),
    };
    let mut parsed = Parsed::default();
    let read = if f.compressed {
        read_compressed(&file, &mut state, &mut parsed, buf)
    } else {
        read_plain(&file, from, meta.size, &mut state, &mut parsed, buf).map_err(io)
    };
    if let Err(e) = read {
        // What was read before the failure stands; the state is not kept,
        // so the next scan starts over.
        return FileScan {
            state: None,
            parsed,
            outcome: Outcome::Failed,
            error: Some(e),
        };
    }
    match read_head(&file, HEAD_BYTES.min(meta.size)) {
        Ok(head) => state.identity = Some(FileIdentity::new(meta, &head)),
        Err(e) => return failed(io(e)),
    }
    FileScan {
        state: Some(state),
        parsed,
        outcome,
        error: None,
    }
}

fn file_meta(m: &std::fs::Metadata) -> FileMeta {
    FileMeta {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime_ns: m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()),
    }
}

fn read_head(file: &File, len: u64) -> std::io::Result<Vec<u8>> {
    let mut head = vec![0u8; len as usize];
    let mut got = 0;
    while got < head.len() {
        match file.read_at(&mut head[got..], got as u64)? {
            0 => break,
            n => got += n,
        }
    }
    head.truncate(got);
    Ok(head)
}

/// Feeds `r` to `state` through `buf`, never holding more than
/// [`CHUNK_BYTES`]. `expect` is how many bytes are likely to come: the
/// buffer starts that big (a rescan's few appended bytes need no 8 MiB) and
/// grows only when a line does not fit. Returns the unconsumed tail's length
/// (a line not yet complete).
fn pump(
    r: &mut dyn Read,
    expect: u64,
    state: &mut FileState,
    out: &mut Parsed,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let want = usize::try_from(expect)
        .unwrap_or(CHUNK_BYTES)
        .saturating_add(4096)
        .clamp(64 * 1024, CHUNK_BYTES);
    if buf.len() < want {
        buf.resize(want, 0);
    }
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            // A line longer than the buffer: make room (a line past
            // MAX_LINE_BYTES is skipped by `feed`, so this stops at CHUNK_BYTES).
            let grown = (buf.len() * 2).min(CHUNK_BYTES);
            if grown == buf.len() {
                return Err(std::io::Error::other("a line did not fit the read buffer"));
            }
            buf.resize(grown, 0);
        }
        let n = r.read(&mut buf[filled..])?;
        if n == 0 {
            return Ok(filled);
        }
        filled += n;
        let used = state.feed(&buf[..filled], out);
        buf.copy_within(used..filled, 0);
        filled -= used;
    }
}

fn read_plain(
    file: &File,
    from: u64,
    size: u64,
    state: &mut FileState,
    out: &mut Parsed,
    buf: &mut Vec<u8>,
) -> std::io::Result<()> {
    let mut r = file;
    r.seek(SeekFrom::Start(from))?;
    pump(&mut r, size.saturating_sub(from), state, out, buf)?;
    Ok(())
}

fn read_compressed(file: &File, state: &mut FileState, out: &mut Parsed, buf: &mut Vec<u8>) -> Result<(), SpendError> {
    let bad = |detail: String| SpendError::Decompress { detail };
    let mut src = BufReader::new(file);
    let mut tail = vec![];
    // A .zst may hold several frames one after another.
    loop {
        match src.fill_buf() {
            Ok([]) => break,
            Ok(_) => {}
            Err(e) => return Err(bad(e.to_string())),
        }
        let mut dec = ruzstd::decoding::StreamingDecoder::new(&mut src).map_err(|e| bad(e.to_string()))?;
        let mut chained = tail.as_slice().chain(&mut dec);
        let left = pump(&mut chained, 1024 * 1024, state, out, buf).map_err(|e| bad(e.to_string()))?;
        tail = buf[..left].to_vec();
    }
    state.finish(&tail, out);
    Ok(())
}

/// One file to scan and the state it was left in, if any.
#[derive(Debug, Clone, Copy)]
pub struct Job<'a> {
    pub file: &'a SessionFile,
    pub prev: Option<&'a FileState>,
}

/// Scans `jobs` on `threads` threads; results in the order of `jobs`.
pub fn scan_many(jobs: &[Job<'_>], threads: usize) -> Vec<FileScan> {
    let next = AtomicUsize::new(0);
    let threads = threads.clamp(1, jobs.len().max(1));
    let mut done: Vec<(usize, FileScan)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut buf = Vec::new();
                    let mut mine = vec![];
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(job) = jobs.get(i) else { break };
                        mine.push((i, scan_file(job.file, job.prev, &mut buf)));
                    }
                    mine
                })
            })
            .collect();
        let mut all = vec![];
        for w in workers {
            match w.join() {
                Ok(mine) => all.extend(mine),
                // A worker's files must not vanish from the report: fail loudly.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        all
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, s)| s).collect()
}

/// Threads worth using here: the machine's cores.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
