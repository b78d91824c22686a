//! What parsing one session file's lines yields, shared by every format: the
//! [`SessionParser`] trait a format implements, where a line is
//! ([`LineAt`]), and what some bytes gave ([`Parsed`], [`Stats`],
//! [`Problem`]).

use serde::{Deserialize, Serialize};

use crate::error::SpendError;
use crate::record::{Harness, QuotaSample, UsageRecord};

/// Problems kept per [`Parsed`] (all are counted in [`Stats::refused`]).
pub const MAX_PROBLEMS: usize = 16;

/// One session-file format: how one complete line becomes records.
pub trait SessionParser {
    /// What the parser carries from line to line (and from feed to feed).
    type State: Default + Clone;
    const HARNESS: Harness;
    /// One complete line, without its newline, found at byte `offset`.
    fn parse_line(&self, state: &mut Self::State, line: &[u8], at: LineAt<'_>, out: &mut Parsed);
}

/// Where a line is, for records and problems.
#[derive(Debug, Clone, Copy)]
pub struct LineAt<'a> {
    pub offset: u64,
    /// The session id the file's name gives, for lines that carry none.
    pub session_hint: &'a str,
}

/// What parsing some bytes found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Parsed {
    /// In file order. A key may repeat when a later line completes an earlier
    /// one (see [`crate::RecordSet`]).
    pub records: Vec<UsageRecord>,
    pub quota: Vec<QuotaSample>,
    pub stats: Stats,
    /// The first [`MAX_PROBLEMS`] refused lines.
    pub problems: Vec<Problem>,
}

/// Counts of what the lines were. Every line is in exactly one of
/// `usage_lines`, `skipped`, `duplicates`, `reemits`, `replayed`, `synthetic`,
/// `refused`, `other`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stats {
    /// Bytes consumed (complete lines, and too-long lines skipped).
    pub bytes: u64,
    pub lines: u64,
    /// Lines that produced a record.
    pub usage_lines: u64,
    /// Lines of kinds that carry no usage (user, system, response items...),
    /// including kinds this version does not know.
    pub skipped: u64,
    /// Claude: a line of an already-seen message that was not more complete.
    pub duplicates: u64,
    /// Codex: a `token_count` whose totals did not advance.
    pub reemits: u64,
    /// Codex: a parent's history copied into a forked session.
    pub replayed: u64,
    /// Claude: CLI-made messages (`<synthetic>`, all-zero usage): no request.
    pub synthetic: u64,
    /// Lines refused with a reason (see [`Parsed::problems`]).
    pub refused: u64,
    /// Lines that set context (Codex `session_meta`, `turn_context`) or only
    /// carried quota.
    pub other: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.bytes += o.bytes;
        self.lines += o.lines;
        self.usage_lines += o.usage_lines;
        self.skipped += o.skipped;
        self.duplicates += o.duplicates;
        self.reemits += o.reemits;
        self.replayed += o.replayed;
        self.synthetic += o.synthetic;
        self.refused += o.refused;
        self.other += o.other;
    }
}

/// A refused line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Byte offset of the line in the (decompressed) file.
    pub offset: u64,
    pub error: SpendError,
}

impl Parsed {
    /// Counts a refused line and keeps its reason if there is room.
    pub fn refuse(&mut self, offset: u64, error: SpendError) {
        self.stats.refused += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(Problem { offset, error });
        }
    }

    pub fn merge(&mut self, o: Parsed) {
        self.records.extend(o.records);
        self.quota.extend(o.quota);
        self.stats.add(&o.stats);
        for p in o.problems {
            if self.problems.len() < MAX_PROBLEMS {
                self.problems.push(p);
            }
        }
    }
}

/// The first `len` bytes of `line` as text for a problem report.
pub(crate) fn excerpt(line: &[u8], len: usize) -> String {
    String::from_utf8_lossy(&line[..line.len().min(len)]).into_owned()
}
