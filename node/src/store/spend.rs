//! The spend ledger's tables (`0004_spend.sql`): per session file its saved
//! `spend::FileState`, per request one row keyed by `UsageRecord::key` that
//! only a record of a greater `rank()` replaces, and the files that could not
//! be read. The ledger is a projection of the CLIs' session files, not of the
//! event log, so it has its own write connection (WAL, `synchronous=NORMAL`:
//! a lost last tick is read again from the files) beside the event writer.

use ::spend::UsageRecord;
use sqlx::Row;

use super::{Store, StoreError};
use crate::util::now_ms;

/// Most request rows one history query reads.
pub const MAX_HISTORY_ROWS: i64 = 2_000_000;

/// One request as the indexer found it.
pub struct LedgerRecord {
    pub agent: String,
    /// The conversation whose CLI session this is, when the node knows it.
    pub conversation: Option<String>,
    pub record: UsageRecord,
}

/// A file that could not be read, or had refused lines.
pub struct LedgerProblem {
    pub path: String,
    pub agent: String,
    pub refused: u64,
    pub reason: String,
}

/// What one indexing tick writes, in one transaction.
#[derive(Default)]
pub struct LedgerBatch {
    /// (path, agent, harness, state JSON).
    pub files: Vec<(String, String, String, String)>,
    pub records: Vec<LedgerRecord>,
    pub problems: Vec<LedgerProblem>,
    /// Paths read cleanly this tick: their problem rows are cleared.
    pub clean: Vec<String>,
}

impl LedgerBatch {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.records.is_empty() && self.problems.is_empty() && self.clean.is_empty()
    }
}

/// Query filter for [`Store::spend_requests`]: inclusive UTC days.
pub struct LedgerFilter<'a> {
    pub since_day: Option<&'a str>,
    pub until_day: Option<&'a str>,
    pub agent: Option<&'a str>,
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// The saved state (JSON) of every session file of `agent`, by path.
    pub async fn spend_files(&self, agent: &str) -> Result<Vec<(String, String)>, StoreError> {
        let rows = sqlx::query("SELECT path, state FROM spend_file WHERE agent = ?")
            .bind(agent)
            .fetch_all(&self.reads)
            .await?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Writes one tick's findings in one transaction. Cancel-safe: a dropped
    /// future rolls the transaction back, and the files are read again.
    pub async fn spend_write(&self, batch: &LedgerBatch) -> Result<(), StoreError> {
        let now = now_ms() as i64;
        let mut tx = self.ledger.begin().await?;
        for (path, agent, harness, state) in &batch.files {
            sqlx::query(
                "INSERT INTO spend_file (path, agent, harness, state, updated_ms) VALUES (?, ?, ?, ?, ?)
                 ON CONFLICT(path) DO UPDATE SET agent = excluded.agent, harness = excluded.harness,
                   state = excluded.state, updated_ms = excluded.updated_ms",
            )
            .bind(path)
            .bind(agent)
            .bind(harness)
            .bind(state)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for l in &batch.records {
            let r = &l.record;
            let rank = r.rank();
            let json = serde_json::to_string(r).map_err(|e| StoreError::Corrupt {
                seq: 0,
                reason: format!("a usage record would not encode: {e}"),
            })?;
            sqlx::query(
                "INSERT INTO spend_request (key, agent, harness, day, ts_ms, model, session, conversation,
                   message_id, request_id, sidechain, input, cache_read, cache_write_5m, cache_write_1h, output,
                   rank_complete, rank_output, rank_prompt, rank_web, record)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                 ON CONFLICT(key) DO UPDATE SET
                   day = excluded.day, ts_ms = excluded.ts_ms, model = excluded.model,
                   conversation = COALESCE(excluded.conversation, spend_request.conversation),
                   message_id = excluded.message_id, request_id = excluded.request_id,
                   sidechain = excluded.sidechain, input = excluded.input, cache_read = excluded.cache_read,
                   cache_write_5m = excluded.cache_write_5m, cache_write_1h = excluded.cache_write_1h,
                   output = excluded.output, rank_complete = excluded.rank_complete,
                   rank_output = excluded.rank_output, rank_prompt = excluded.rank_prompt,
                   rank_web = excluded.rank_web, record = excluded.record
                 WHERE (excluded.rank_complete, excluded.rank_output, excluded.rank_prompt, excluded.rank_web)
                     > (spend_request.rank_complete, spend_request.rank_output, spend_request.rank_prompt,
                        spend_request.rank_web)",
            )
            .bind(&r.key)
            .bind(&l.agent)
            .bind(r.harness.as_str())
            .bind(r.day())
            .bind(r.timestamp_ms)
            .bind(&r.model)
            .bind(&r.session_id)
            .bind(&l.conversation)
            .bind(&r.message_id)
            .bind(&r.request_id)
            .bind(r.sidechain)
            .bind(int(r.tokens.input))
            .bind(int(r.tokens.cache_read))
            .bind(int(r.tokens.cache_write_5m))
            .bind(int(r.tokens.cache_write_1h))
            .bind(int(r.tokens.output))
            .bind(rank.0)
            .bind(int(rank.1))
            .bind(int(rank.2))
            .bind(int(rank.3))
            .bind(json)
            .execute(&mut *tx)
            .await?;
        }
        for p in &batch.problems {
            sqlx::query(
                "INSERT INTO spend_problem (path, agent, refused, reason, updated_ms) VALUES (?, ?, ?, ?, ?)
                 ON CONFLICT(path) DO UPDATE SET agent = excluded.agent, refused = excluded.refused,
                   reason = excluded.reason, updated_ms = excluded.updated_ms",
            )
            .bind(&p.path)
            .bind(&p.agent)
            .bind(int(p.refused))
            .bind(&p.reason)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        }
        for path in &batch.clean {
            sqlx::query("DELETE FROM spend_problem WHERE path = ?")
                .bind(path)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The stored requests matching `f` as (agent, record), at most
    /// [`MAX_HISTORY_ROWS`], oldest first.
    pub async fn spend_requests(&self, f: &LedgerFilter<'_>) -> Result<Vec<(String, UsageRecord)>, StoreError> {
        let rows = sqlx::query(
            "SELECT agent, record FROM spend_request
             WHERE (?1 IS NULL OR day >= ?1) AND (?2 IS NULL OR day <= ?2) AND (?3 IS NULL OR agent = ?3)
             ORDER BY ts_ms, key LIMIT ?4",
        )
        .bind(f.since_day)
        .bind(f.until_day)
        .bind(f.agent)
        .bind(MAX_HISTORY_ROWS)
        .fetch_all(&self.reads)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let body: String = row.get(1);
            let record: UsageRecord = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
                seq: 0,
                reason: format!("a spend ledger row is unreadable: {e}"),
            })?;
            out.push((row.get(0), record));
        }
        Ok(out)
    }

    /// How many session files (of `agent`, or of every agent) are recorded as
    /// unreadable or with refused lines.
    pub async fn spend_problem_count(&self, agent: Option<&str>) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query("SELECT COUNT(*) FROM spend_problem WHERE (?1 IS NULL OR agent = ?1)")
            .bind(agent)
            .fetch_one(&self.reads)
            .await?
            .get(0);
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
