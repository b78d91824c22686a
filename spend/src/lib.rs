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
//! - [`budget`] is the per-agent spend-rate bucket ("wait, then ask").
//! - [`scan`] is the only IO: walking a Claude config dir or a Codex home and
//!   reading files for the offline `warren spend scan` (and the node's indexer).
//!
//! # Indexing incrementally (the node's ledger)
//!
//! Per session file, keep its [`FileState`] (`to_json` / `from_json`). On each
//! pass, [`scan::scan_file`] (or [`scan::scan_many`]) with the saved state
//! returns a [`scan::FileScan`]: upsert each of its `parsed.records` by
//! [`UsageRecord::key`] when its [`UsageRecord::rank`] is greater than the
//! stored row's, and store the new `state` when it is `Some` (in the same
//! transaction; `None` means keep the saved one). A failed or interrupted
//! read re-emits the same keys next time, so the upsert keeps the ledger
//! consistent; rows are never deleted when a CLI removes its old files. A
//! report applies [`RecordSet`]'s rule (or the same rule in SQL: see
//! [`record`'s docs](RecordSet)) and prices the counted rows with
//! `PricingChain::standard(&live, &cached).choose().table` into
//! [`aggregate::daily`].
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod aggregate;
pub mod budget;
mod claude;
mod codex;
mod cursor;
mod error;
mod fields;
mod parse;
pub mod pricing;
pub mod quota;
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
    Bundled, CachedTable, Chosen, LiveAnswer, MAX_LIVE_BYTES, Price, PriceTable, PricingChain, PricingSource, Rates,
    Source, bundled,
};
pub use record::{Harness, QuotaSample, Rank, RecordSet, Speed, Tokens, UsageRecord};
