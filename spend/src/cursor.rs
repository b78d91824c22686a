//! Incremental parsing, pure: the [`SessionParser`] trait, a file's
//! [`FileState`] (identity, offset of the last complete line, the parser's
//! carried state) and [`FileState::feed`], which turns appended bytes into
//! [`Parsed`] output. Feeding a file in any number of pieces gives the same
//! records as feeding it whole; [`decide`] says whether a file on disk can be
//! continued or must be parsed again from 0.

use serde::{Deserialize, Serialize};

use crate::claude::{ClaudeParser, ClaudeState};
use crate::codex::{CodexParser, CodexState};
use crate::error::SpendError;
use crate::record::Harness;

pub use crate::parse::{LineAt, MAX_PROBLEMS, Parsed, Problem, SessionParser, Stats};

/// The longest line parsed. A longer one is refused with
/// [`SpendError::LineTooLong`] and skipped without being held in memory.
pub const MAX_LINE_BYTES: u64 = 4 * 1024 * 1024;

/// The most bytes of a file's head that identify it.
pub const HEAD_BYTES: u64 = 1024;

/// Saved [`FileState`]s of another version are refused (parse from 0).
pub const STATE_VERSION: u32 = 1;

/// A parser's carried state, by format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "format", rename_all = "lowercase")]
pub enum ParserState {
    Claude(ClaudeState),
    Codex(CodexState),
}

/// What identifies a file on disk between scans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
}

/// [`FileMeta`] plus a hash of the file's first `head_len` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileIdentity {
    pub meta: FileMeta,
    pub head_len: u64,
    pub head_hash: u64,
}

impl FileIdentity {
    /// `head` is the file's first `min(HEAD_BYTES, size)` bytes.
    pub fn new(meta: FileMeta, head: &[u8]) -> FileIdentity {
        let head = &head[..head.len().min(HEAD_BYTES as usize)];
        FileIdentity {
            meta,
            head_len: head.len() as u64,
            head_hash: fnv1a(head),
        }
    }
}

/// What to do with a file seen before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing changed: do not read it.
    Unchanged,
    /// Read its first `len` bytes and decide again with them.
    NeedHead { len: u64 },
    /// Feed the bytes from `from` (the saved offset) to the end.
    Append { from: u64 },
    /// Start again from 0 with a fresh state.
    Reparse { reason: &'static str },
}

/// Whether a file can be continued from `prev` (pure). `head` is its first
/// `prev.head_len` bytes when the caller has read them.
pub fn decide(prev: Option<&FileState>, now: &FileMeta, compressed: bool, head: Option<&[u8]>) -> Decision {
    let Some(prev) = prev else {
        return Decision::Reparse {
            reason: "not seen before",
        };
    };
    let Some(id) = prev.identity else {
        return Decision::Reparse {
            reason: "no saved identity",
        };
    };
    if prev.version != STATE_VERSION {
        return Decision::Reparse {
            reason: "state of another version",
        };
    }
    if id.meta.dev != now.dev || id.meta.ino != now.ino {
        return Decision::Reparse {
            reason: "replaced by another file",
        };
    }
    if now.size < id.meta.size {
        return Decision::Reparse { reason: "truncated" };
    }
    if now.size == id.meta.size && now.mtime_ns == id.meta.mtime_ns {
        return Decision::Unchanged;
    }
    if compressed {
        return Decision::Reparse {
            reason: "compressed file changed",
        };
    }
    let Some(head) = head else {
        return Decision::NeedHead { len: id.head_len };
    };
    if head.len() as u64 != id.head_len || fnv1a(head) != id.head_hash {
        return Decision::Reparse {
            reason: "rewritten (its first bytes changed)",
        };
    }
    if now.size == id.meta.size {
        return Decision::Reparse {
            reason: "rewritten in place",
        };
    }
    Decision::Append { from: prev.offset }
}

/// 64-bit FNV-1a: a stable hash for saved identities (std's hasher may change).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One file's cursor: everything needed to continue parsing it where the last
/// parse stopped. Serializable so the node can keep it in its store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileState {
    pub version: u32,
    /// Session id from the file name, for lines that carry none.
    pub session_hint: String,
    /// Set by the caller after a parse ([`FileIdentity::new`]).
    pub identity: Option<FileIdentity>,
    /// Offset just past the last line consumed (complete, or a too-long
    /// line's bytes skipped so far).
    pub offset: u64,
    /// Inside a line longer than [`MAX_LINE_BYTES`] that began here.
    pub skipping_from: Option<u64>,
    pub parser: ParserState,
}

impl FileState {
    pub fn new(harness: Harness, session_hint: impl Into<String>) -> FileState {
        FileState {
            version: STATE_VERSION,
            session_hint: session_hint.into(),
            identity: None,
            offset: 0,
            skipping_from: None,
            parser: match harness {
                Harness::Claude => ParserState::Claude(ClaudeState::default()),
                Harness::Codex => ParserState::Codex(CodexState::default()),
            },
        }
    }

    pub fn harness(&self) -> Harness {
        match self.parser {
            ParserState::Claude(_) => Harness::Claude,
            ParserState::Codex(_) => Harness::Codex,
        }
    }

    /// The same file from 0: a fresh parser state, the same hint.
    pub fn restart(&self) -> FileState {
        FileState::new(self.harness(), self.session_hint.clone())
    }

    /// Saved state as JSON (for the node's store).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Saved state back; refused when it is not this version's.
    pub fn from_json(s: &str) -> Result<FileState, SpendError> {
        let st: FileState = serde_json::from_str(s).map_err(|e| SpendError::State { detail: e.to_string() })?;
        if st.version != STATE_VERSION {
            return Err(SpendError::State {
                detail: format!("version {} (this build reads {STATE_VERSION})", st.version),
            });
        }
        Ok(st)
    }

    /// Feeds the file's bytes from [`FileState::offset`] on. Consumes every
    /// complete line; a last line without its newline is left for the next
    /// feed (it may still be being written) unless it is already longer than
    /// [`MAX_LINE_BYTES`]. Returns the bytes consumed (`offset` moved by as
    /// much); the caller passes the unconsumed tail again with what follows.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Parsed) -> usize {
        let hint = std::mem::take(&mut self.session_hint);
        let n = match &mut self.parser {
            ParserState::Claude(s) => feed_lines(
                &ClaudeParser,
                s,
                &mut self.offset,
                &mut self.skipping_from,
                &hint,
                bytes,
                out,
            ),
            ParserState::Codex(s) => feed_lines(
                &CodexParser,
                s,
                &mut self.offset,
                &mut self.skipping_from,
                &hint,
                bytes,
                out,
            ),
        };
        self.session_hint = hint;
        n
    }

    /// The file will never grow (a compressed archive): its unterminated last
    /// line, if any, is parsed as a line.
    pub fn finish(&mut self, tail: &[u8], out: &mut Parsed) {
        let n = self.feed(tail, out);
        let rest = &tail[n..];
        if rest.is_empty() || self.skipping_from.is_some() {
            if let Some(from) = self.skipping_from.take() {
                let len = self.offset - from;
                out.stats.lines += 1;
                out.refuse(
                    from,
                    SpendError::LineTooLong {
                        len,
                        max: MAX_LINE_BYTES,
                    },
                );
            }
            return;
        }
        let mut with_newline = rest.to_vec();
        with_newline.push(b'\n');
        self.feed(&with_newline, out);
        // The newline was ours, not the file's.
        self.offset -= 1;
    }
}

fn feed_lines<P: SessionParser>(
    parser: &P,
    state: &mut P::State,
    offset: &mut u64,
    skipping_from: &mut Option<u64>,
    hint: &str,
    bytes: &[u8],
    out: &mut Parsed,
) -> usize {
    let mut pos = 0usize;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        let newline = memchr::memchr(b'\n', rest);
        if let Some(from) = *skipping_from {
            match newline {
                None => {
                    pos = bytes.len();
                    break;
                }
                Some(i) => {
                    pos += i + 1;
                    *skipping_from = None;
                    let len = *offset + pos as u64 - 1 - from;
                    out.stats.lines += 1;
                    out.refuse(
                        from,
                        SpendError::LineTooLong {
                            len,
                            max: MAX_LINE_BYTES,
                        },
                    );
                    continue;
                }
            }
        }
        let line_at = *offset + pos as u64;
        match newline {
            None => {
                if rest.len() as u64 > MAX_LINE_BYTES {
                    *skipping_from = Some(line_at);
                    pos = bytes.len();
                }
                break;
            }
            Some(i) => {
                let line = strip_cr(&rest[..i]);
                pos += i + 1;
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                out.stats.lines += 1;
                if i as u64 > MAX_LINE_BYTES {
                    out.refuse(
                        line_at,
                        SpendError::LineTooLong {
                            len: i as u64,
                            max: MAX_LINE_BYTES,
                        },
                    );
                    continue;
                }
                let at = LineAt {
                    offset: line_at,
                    session_hint: hint,
                };
                parser.parse_line(state, line, at, out);
            }
        }
    }
    *offset += pos as u64;
    out.stats.bytes += pos as u64;
    pos
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(size: u64, mtime_ns: i64) -> FileMeta {
        FileMeta {
            dev: 1,
            ino: 2,
            size,
            mtime_ns,
        }
    }

    fn saved(size: u64, head: &[u8], offset: u64) -> FileState {
        let mut st = FileState::new(Harness::Claude, "s");
        st.identity = Some(FileIdentity::new(meta(size, 10), head));
        st.offset = offset;
        st
    }

    #[test]
    fn decide_continues_only_the_same_grown_file() {
        let st = saved(100, b"head", 90);
        assert_eq!(
            decide(None, &meta(5, 0), false, None),
            Decision::Reparse {
                reason: "not seen before"
            }
        );
        assert_eq!(decide(Some(&st), &meta(100, 10), false, None), Decision::Unchanged);
        assert_eq!(
            decide(Some(&st), &meta(150, 11), false, None),
            Decision::NeedHead { len: 4 }
        );
        assert_eq!(
            decide(Some(&st), &meta(150, 11), false, Some(b"head")),
            Decision::Append { from: 90 }
        );
        assert_eq!(
            decide(Some(&st), &meta(150, 11), false, Some(b"HEAD")),
            Decision::Reparse {
                reason: "rewritten (its first bytes changed)"
            }
        );
        assert_eq!(
            decide(Some(&st), &meta(50, 11), false, None),
            Decision::Reparse { reason: "truncated" }
        );
        assert_eq!(
            decide(Some(&st), &meta(100, 12), false, Some(b"head")),
            Decision::Reparse {
                reason: "rewritten in place"
            }
        );
        assert_eq!(
            decide(Some(&st), &meta(150, 11), true, None),
            Decision::Reparse {
                reason: "compressed file changed"
            }
        );
        let moved = FileMeta {
            ino: 3,
            ..meta(150, 11)
        };
        assert_eq!(
            decide(Some(&st), &moved, false, None),
            Decision::Reparse {
                reason: "replaced by another file"
            }
        );
    }

    #[test]
    fn state_round_trips_and_other_versions_are_refused() {
        let st = saved(100, b"head", 90);
        assert_eq!(FileState::from_json(&st.to_json()), Ok(st.clone()));
        let mut old = st;
        old.version = 0;
        assert!(matches!(
            FileState::from_json(&old.to_json()),
            Err(SpendError::State { .. })
        ));
        assert!(FileState::from_json("garbage").is_err());
    }

    #[test]
    fn an_unterminated_line_waits_and_a_long_one_is_skipped_in_bounded_pieces() {
        let mut st = FileState::new(Harness::Claude, "s");
        let mut out = Parsed::default();
        assert_eq!(st.feed(b"{\"type\":\"user\"}\n{\"type\":\"us", &mut out), 16);
        assert_eq!((st.offset, out.stats.lines, out.stats.skipped), (16, 1, 1));

        // A line of 6 MiB fed in 1 MiB pieces: never held, refused once.
        let mut st = FileState::new(Harness::Claude, "s");
        let mut out = Parsed::default();
        let piece = vec![b'x'; 1024 * 1024];
        let mut fed = 0usize;
        let mut pending: Vec<u8> = vec![];
        for _ in 0..6 {
            pending.extend_from_slice(&piece);
            let n = st.feed(&pending, &mut out);
            pending.drain(..n);
            fed += n;
            assert!(pending.len() as u64 <= MAX_LINE_BYTES + 1024 * 1024);
        }
        pending.extend_from_slice(b"\n{\"type\":\"user\"}\n");
        fed += st.feed(&pending, &mut out);
        assert_eq!(fed as u64, 6 * 1024 * 1024 + 17);
        assert_eq!(out.stats.refused, 1);
        assert_eq!(out.stats.lines, 2);
        assert_eq!(
            out.problems[0].error,
            SpendError::LineTooLong {
                len: 6 * 1024 * 1024,
                max: MAX_LINE_BYTES
            }
        );
    }
}
