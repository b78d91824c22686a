//! Spend: exact token and dollar accounting from the AI CLIs' own session
//! files (seed 002, issue 13).
//!
//! - [`SessionParser`]s, one per format ([`ClaudeParser`], [`CodexParser`]),
//!   turn lines into [`UsageRecord`]s: one per model request, in four disjoint
//!   token buckets ([`Tokens`]), with a stable dedupe key; Codex rate limits
//!   become [`QuotaSample`]s.
//! - [`FileState`] is a file's cursor: [`FileState::feed`] parses appended
//!   bytes only, and [`decide`] says when a file must be parsed again from 0.
//! - [`RecordSet`] is the dedupe rule over records from many files.
//! - [`PriceTable`], [`PricingSource`] and [`PricingChain`] price records at
//!   query time; [`aggregate::daily`] makes `spend.history` rows.
//! - [`scan`] is the only IO: walking a Claude config dir or a Codex home and
//!   reading files for the offline `warren spend scan` (and the node's indexer).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod aggregate;
mod claude;
mod codex;
mod cursor;
mod error;
mod fields;
pub mod pricing;
mod record;
pub mod scan;
pub mod time;

pub use aggregate::{By, DayRow, Days, Rollup, Summary, daily, rollup};
pub use claude::{ClaudeParser, ClaudeState, SEEN_PER_FILE};
pub use codex::{CodexParser, CodexState, FORK_REPLAY_WINDOW_MS, UNKNOWN_MODEL};
pub use cursor::{
    Decision, FileIdentity, FileMeta, FileState, HEAD_BYTES, LineAt, MAX_LINE_BYTES, MAX_PROBLEMS, Parsed, ParserState,
    Problem, STATE_VERSION, SessionParser, Stats, decide, fnv1a,
};
pub use error::SpendError;
pub use fields::{MAX_TOKENS_CUMULATIVE, MAX_TOKENS_PER_REQUEST};
pub use pricing::{
    Bundled, CachedTable, Chosen, LiveAnswer, Price, PriceTable, PricingChain, PricingSource, Rates, Source,
};
pub use record::{Harness, QuotaSample, Rank, RecordSet, Tokens, UsageRecord};
