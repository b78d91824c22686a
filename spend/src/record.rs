//! What the parsers produce: one [`UsageRecord`] per model request, in four
//! disjoint token buckets, and [`QuotaSample`]s; and [`RecordSet`], the
//! dedupe rule that decides which records count.
//!
//! # The dedupe rule (the node's ledger applies the same one)
//!
//! Records carry a stable [`UsageRecord::key`]. A parser may emit the same key
//! more than once (Claude Code streams several lines per message, and an
//! incremental parse may see the partial line first): keep, per key, the
//! record with the greatest [`UsageRecord::rank`]; on a tie keep the one
//! already held.
//!
//! Claude records also carry their `message.id` ([`UsageRecord::message_id`]).
//! Among the kept records sharing one message id:
//! - the non-sidechain records with a `requestId` each count (distinct request
//!   ids under one message id are distinct requests, e.g. a proxy that reuses
//!   ids);
//! - if there is none, the non-sidechain record without a `requestId` counts
//!   (a missing `requestId` never disables dedupe: the key is the message id);
//! - if there is no non-sidechain record, exactly one sidechain record counts
//!   (the greatest rank): a sidechain file that replays a parent message under
//!   a new request id (`/btw` asides) never counts it twice.
//!
//! Records without a message id (Codex) count once per key.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Which CLI wrote the session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Harness {
    Claude,
    Codex,
}

impl Harness {
    pub fn as_str(self) -> &'static str {
        match self {
            Harness::Claude => "claude",
            Harness::Codex => "codex",
        }
    }
}

/// One request's tokens in disjoint buckets: every token is in exactly one of
/// `input`, `cache_read`, `cache_write_5m`, `cache_write_1h`, `output`.
/// `reasoning` is informational: it is part of `output` (and priced as output).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    /// Uncached input.
    pub input: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    /// All output, reasoning included.
    pub output: u64,
    /// The reasoning part of `output`, when the CLI says.
    pub reasoning: u64,
}

impl Tokens {
    /// Everything the request read: uncached input, cache reads and cache
    /// writes. The long-context tier is decided on this.
    pub fn prompt(&self) -> u64 {
        self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h
    }

    /// All tokens of the request (reasoning is inside `output`).
    pub fn total(&self) -> u64 {
        self.prompt() + self.output
    }

    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.cache_read += o.cache_read;
        self.cache_write_5m += o.cache_write_5m;
        self.cache_write_1h += o.cache_write_1h;
        self.output += o.output;
        self.reasoning += o.reasoning;
    }
}

/// How fast the provider was asked to answer (Anthropic's fast mode is
/// billed at its own, higher rates).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Speed {
    #[default]
    Standard,
    Fast,
}

/// One model request as the CLI recorded it. Tokens, not dollars: prices are
/// applied when a report is made ([`crate::PriceTable::cost`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// Stable across re-parses and across copies of the same request in other
    /// files: `claude:MESSAGE_ID[:REQUEST_ID]`, `codex:SESSION:EPOCH:IN:CACHED:OUT`.
    pub key: String,
    pub harness: Harness,
    /// Claude's `message.id`: the group of [`RecordSet`]'s replay rule.
    pub message_id: Option<String>,
    pub request_id: Option<String>,
    /// A Claude sidechain line (a subagent's, or a replay in an aside).
    pub sidechain: bool,
    pub session_id: String,
    /// The model id exactly as the session file names it.
    pub model: String,
    /// Unix milliseconds.
    pub timestamp_ms: i64,
    pub tokens: Tokens,
    /// Server-side web search requests made by this request.
    pub web_search_requests: u64,
    /// The request finished (Claude: the line has a `stop_reason`).
    pub complete: bool,
    /// Claude's `usage.speed`.
    #[serde(default)]
    pub speed: Speed,
    /// Claude's `usage.inference_geo` when it names a region (`us`: billed
    /// at [`crate::Price::us_inference_multiplier`]).
    #[serde(default)]
    pub inference_geo: Option<String>,
    /// Claude: the model calls within this message (two or more), each in
    /// buckets adding up to `tokens`; a long-context tier is decided per call.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations: Vec<Tokens>,
}

/// Which of two records for one key is the more complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Rank(pub bool, pub u64, pub u64, pub u64);

impl UsageRecord {
    /// Finished first, then most output, then most prompt, then most searches.
    pub fn rank(&self) -> Rank {
        Rank(
            self.complete,
            self.tokens.output,
            self.tokens.prompt(),
            self.web_search_requests,
        )
    }

    /// The record's UTC day, `YYYY-MM-DD`.
    pub fn day(&self) -> String {
        crate::time::utc_day(self.timestamp_ms)
    }
}

/// A quota metric a CLI reported (Codex's `rate_limits`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaSample {
    pub harness: Harness,
    pub session_id: String,
    /// `primary` (Codex's 5-hour window) or `secondary` (weekly).
    pub name: String,
    /// When the CLI observed it, Unix ms.
    pub observed_ms: i64,
    pub used_percent: f64,
    pub window_minutes: Option<u64>,
    /// When the window resets, Unix ms.
    pub resets_at_ms: Option<i64>,
}

/// The dedupe rule over records from any number of files, in memory (see the
/// module doc). Order-independent except for exact rank ties.
#[derive(Debug, Default, Clone)]
pub struct RecordSet {
    by_key: HashMap<String, UsageRecord>,
}

impl RecordSet {
    pub fn new() -> RecordSet {
        RecordSet::default()
    }

    /// Keeps `r` if its key is new or it outranks the record held for it.
    /// True when the set changed.
    pub fn insert(&mut self, r: UsageRecord) -> bool {
        match self.by_key.get_mut(&r.key) {
            Some(held) if held.rank() >= r.rank() => false,
            Some(held) => {
                *held = r;
                true
            }
            None => {
                self.by_key.insert(r.key.clone(), r);
                true
            }
        }
    }

    /// Distinct keys held (before the replay rule).
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The records that count, sorted by (timestamp, key) so reports are
    /// deterministic.
    pub fn counted(&self) -> Vec<&UsageRecord> {
        let mut out: Vec<&UsageRecord> = Vec::with_capacity(self.by_key.len());
        let mut groups: HashMap<&str, Vec<&UsageRecord>> = HashMap::new();
        for r in self.by_key.values() {
            match &r.message_id {
                Some(m) => groups.entry(m.as_str()).or_default().push(r),
                None => out.push(r),
            }
        }
        for (_, group) in groups {
            if group.len() == 1 {
                out.extend(group);
                continue;
            }
            let with_request: Vec<&UsageRecord> = group
                .iter()
                .copied()
                .filter(|r| !r.sidechain && r.request_id.is_some())
                .collect();
            if !with_request.is_empty() {
                out.extend(with_request);
            } else if let Some(r) = group.iter().copied().find(|r| !r.sidechain) {
                out.push(r);
            } else if let Some(r) = group
                .iter()
                .copied()
                .max_by(|a, b| a.rank().cmp(&b.rank()).then(b.key.cmp(&a.key)))
            {
                out.push(r);
            }
        }
        out.sort_by(|a, b| a.timestamp_ms.cmp(&b.timestamp_ms).then_with(|| a.key.cmp(&b.key)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(key: &str, msg: Option<&str>, req: Option<&str>, sidechain: bool, output: u64) -> UsageRecord {
        UsageRecord {
            key: key.into(),
            harness: Harness::Claude,
            message_id: msg.map(Into::into),
            request_id: req.map(Into::into),
            sidechain,
            session_id: "s".into(),
            model: "m".into(),
            timestamp_ms: 0,
            tokens: Tokens {
                output,
                ..Tokens::default()
            },
            web_search_requests: 0,
            complete: false,
            speed: Speed::Standard,
            inference_geo: None,
            iterations: vec![],
        }
    }

    #[test]
    fn a_key_keeps_its_most_complete_record() {
        let mut set = RecordSet::new();
        assert!(set.insert(rec("k", Some("m"), Some("r"), false, 1)));
        assert!(set.insert(rec("k", Some("m"), Some("r"), false, 90)));
        assert!(
            !set.insert(rec("k", Some("m"), Some("r"), false, 5)),
            "a partial never replaces"
        );
        let c = set.counted();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].tokens.output, 90);
    }

    #[test]
    fn sidechain_replay_under_a_new_request_id_is_not_counted() {
        let mut set = RecordSet::new();
        set.insert(rec("claude:m1:rB", Some("m1"), Some("rB"), true, 10));
        set.insert(rec("claude:m1:rA", Some("m1"), Some("rA"), false, 10));
        set.insert(rec("claude:m2:rC", Some("m2"), Some("rC"), true, 7));
        let c = set.counted();
        let keys: Vec<&str> = c.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["claude:m1:rA", "claude:m2:rC"]);
    }

    #[test]
    fn two_replays_without_their_parent_count_once() {
        let mut set = RecordSet::new();
        set.insert(rec("claude:m1:rB", Some("m1"), Some("rB"), true, 10));
        set.insert(rec("claude:m1:rC", Some("m1"), Some("rC"), true, 10));
        assert_eq!(set.counted().len(), 1);
    }

    #[test]
    fn a_line_without_request_id_merges_into_the_one_with_it() {
        let mut set = RecordSet::new();
        set.insert(rec("claude:m1", Some("m1"), None, false, 10));
        set.insert(rec("claude:m1:rA", Some("m1"), Some("rA"), false, 10));
        assert_eq!(set.counted().len(), 1);
        // Two different request ids under one message id are two requests.
        set.insert(rec("claude:m1:rZ", Some("m1"), Some("rZ"), false, 3));
        assert_eq!(set.counted().len(), 2);
    }
}
