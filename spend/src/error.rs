//! The crate's one error type: why a line, a file or a price table was refused.

/// Why something was refused. A refused line or file is counted and reported
/// (see [`crate::Problem`]); it is never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpendError {
    /// A line that is not one JSON object (cut, garbled, or not JSON at all).
    #[error("not a JSON object: {detail}")]
    InvalidJson { detail: String },
    /// A line whose bytes are not UTF-8.
    #[error("invalid UTF-8 at byte {at} of the line")]
    InvalidUtf8 { at: usize },
    /// A line longer than [`crate::MAX_LINE_BYTES`]: skipped without holding it in memory.
    #[error("line of {len} bytes or more is longer than the {max}-byte limit: skipped")]
    LineTooLong { len: u64, max: u64 },
    /// A token count below zero.
    #[error("negative token count {value} in `{field}`")]
    NegativeTokens { field: &'static str, value: i64 },
    /// A token count no single request can have.
    #[error("absurd token count {value} in `{field}` (the limit is {max})")]
    AbsurdTokens { field: &'static str, value: u64, max: u64 },
    /// Counts that contradict each other (e.g. more cached than total input).
    #[error("inconsistent token counts: {detail}")]
    Inconsistent { detail: String },
    /// A request's usage on a line of another kind than `assistant`: not
    /// counted, and said (a CLI version may have moved its requests).
    #[error("a {kind:?} line carries a request's usage: only assistant lines are counted")]
    UnexpectedUsage { kind: String },
    /// A usage line without a timestamp this crate can read.
    #[error("usage without a readable timestamp ({found:?})")]
    BadTimestamp { found: String },
    /// A compressed file that does not decode.
    #[error("cannot decompress: {detail}")]
    Decompress { detail: String },
    /// A file that could not be read (the offline scan only).
    #[error("cannot read {path}: {detail}")]
    Io { path: String, detail: String },
    /// A path that is neither a Claude config dir nor a Codex home.
    #[error(
        "{path} is neither a Claude config dir (with projects/) nor a Codex home (with sessions/ or archived_sessions/)"
    )]
    UnknownLayout { path: String },
    /// A pricing table that was refused (garbage, empty, absurd prices).
    #[error("pricing table refused: {detail}")]
    Pricing { detail: String },
    /// Saved state this version cannot use (the file is then parsed from 0).
    #[error("saved state refused: {detail}")]
    State { detail: String },
}
