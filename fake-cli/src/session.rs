//! The native session file: one JSON line per transcript entry, appended and flushed as it happens.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Who a transcript entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Kind {
    User,
    Assistant,
    Tool,
    System,
}

/// One transcript entry as shown on screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) kind: Kind,
    pub(crate) text: String,
}

impl Entry {
    pub(crate) fn new(kind: Kind, text: impl Into<String>) -> Self {
        Self {
            kind,
            text: text.into(),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Record {
    ts_ms: u64,
    #[serde(rename = "type")]
    kind: Kind,
    text: String,
}

/// Why a session could not be opened.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SessionError {
    #[error("session ID already in use: {0}")]
    InUse(String),
    #[error("No conversation found with session ID: {0}")]
    NotFound(String),
    #[error("invalid session ID: {0:?} (use letters, digits, '-', '_' or '.')")]
    InvalidId(String),
    #[error("cannot open session file {}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
}

/// An open session file, positioned for appending.
pub(crate) struct SessionFile {
    file: File,
}

/// Whether `id` is safe to use as a file name.
pub(crate) fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A fresh random session id: 32 lowercase hex characters.
pub(crate) fn random_id() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The session file path for `id` in `dir`.
pub(crate) fn session_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.jsonl"))
}

/// One JSON line (with trailing newline) for an entry.
pub(crate) fn encode_record(kind: Kind, text: &str, ts_ms: u64) -> String {
    let record = Record {
        ts_ms,
        kind,
        text: text.to_string(),
    };
    // Serialising a struct of plain fields cannot fail; fall back to an empty object anyway.
    let mut line = serde_json::to_string(&record).unwrap_or_else(|_| String::from("{}"));
    line.push('\n');
    line
}

/// The entries of a session file's content; lines that do not parse are skipped.
pub(crate) fn parse_history(content: &str) -> Vec<Entry> {
    content
        .lines()
        .filter_map(|line| serde_json::from_str::<Record>(line).ok())
        .map(|r| Entry::new(r.kind, r.text))
        .collect()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl SessionFile {
    /// Creates a new, empty session file; fails if it already exists.
    pub(crate) fn create(dir: &Path, id: &str) -> Result<Self, SessionError> {
        if !valid_id(id) {
            return Err(SessionError::InvalidId(id.to_string()));
        }
        let path = session_path(dir, id);
        match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(file) => Ok(Self { file }),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(SessionError::InUse(id.to_string())),
            Err(source) => Err(SessionError::Io { path, source }),
        }
    }

    /// Opens an existing session file for appending and returns its history.
    pub(crate) fn resume(dir: &Path, id: &str) -> Result<(Self, Vec<Entry>), SessionError> {
        if !valid_id(id) {
            return Err(SessionError::NotFound(id.to_string()));
        }
        let path = session_path(dir, id);
        let content = match std::fs::read_to_string(&path) {
            Ok(content) => content,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(SessionError::NotFound(id.to_string()));
            }
            Err(source) => return Err(SessionError::Io { path, source }),
        };
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|source| SessionError::Io {
                path: path.clone(),
                source,
            })?;
        Ok((Self { file }, parse_history(&content)))
    }

    /// Appends one entry as a single write and flushes it.
    pub(crate) fn append(&mut self, kind: Kind, text: &str) -> io::Result<()> {
        let line = encode_record(kind, text, now_ms());
        self.file.write_all(line.as_bytes())?;
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_format() {
        let line = encode_record(Kind::User, "a\nb \"q\"", 1234);
        assert_eq!(
            line,
            "{\"ts_ms\":1234,\"type\":\"user\",\"text\":\"a\\nb \\\"q\\\"\"}\n"
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["type"], "user");
        assert_eq!(v["text"], "a\nb \"q\"");
    }

    #[test]
    fn history_round_trip_skips_garbage() {
        let mut content = encode_record(Kind::User, "hi", 1);
        content.push_str("garbage\n");
        content.push_str(&encode_record(Kind::Tool, "$ ls\nx", 2));
        content.push_str("{\"ts_ms\":3,\"type\":\"alien\",\"text\":\"x\"}\n");
        assert_eq!(
            parse_history(&content),
            vec![Entry::new(Kind::User, "hi"), Entry::new(Kind::Tool, "$ ls\nx")]
        );
    }

    #[test]
    fn ids() {
        let id = random_id();
        assert_eq!(id.len(), 32);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(valid_id(&id));
        assert!(valid_id("3f2a-b_c.d"));
        assert!(!valid_id(""));
        assert!(!valid_id("../x"));
        assert!(!valid_id(".hidden"));
        assert!(!valid_id("a/b"));
    }

    #[test]
    fn create_resume_and_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = SessionFile::create(dir.path(), "abc").unwrap();
        s.append(Kind::User, "hello").unwrap();
        s.append(Kind::Assistant, "echo: hello").unwrap();
        drop(s);
        assert!(matches!(
            SessionFile::create(dir.path(), "abc"),
            Err(SessionError::InUse(_))
        ));
        let (mut s, history) = SessionFile::resume(dir.path(), "abc").unwrap();
        assert_eq!(history.len(), 2);
        s.append(Kind::System, "resumed").unwrap();
        let (_, history) = SessionFile::resume(dir.path(), "abc").unwrap();
        assert_eq!(history[2], Entry::new(Kind::System, "resumed"));
        let err = SessionFile::resume(dir.path(), "nope").err().unwrap();
        assert_eq!(err.to_string(), "No conversation found with session ID: nope");
    }
}
