//! The spend ledger's tables (`0004_spend.sql`): per session file its saved
//! `spend::FileState`, per request one row keyed by `UsageRecord::key` that
//! only a record of a greater `rank()` replaces, and the files that could not
//! be read. The ledger is a projection of the CLIs' session files, not of the
//! event log, so it has its own write connection (WAL, `synchronous=NORMAL`:
//! a lost last tick is read again from the files) beside the event writer.

use ::spend::{Harness, QuotaSample, UsageRecord};
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

/// A quota sample as the indexer (or the screen) found it.
pub struct LedgerQuota {
    pub agent: String,
    pub conversation: Option<String>,
    pub sample: QuotaSample,
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
    /// Quota samples the files held.
    pub quota: Vec<LedgerQuota>,
}

impl LedgerBatch {
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.records.is_empty()
            && self.problems.is_empty()
            && self.clean.is_empty()
            && self.quota.is_empty()
    }
}

/// A request row the write inserted or upgraded: what it held before (none
/// for a new key) and what it holds now. Charging a budget the difference
/// charges each request once, however often it was re-read or upgraded.
pub struct LedgerChange {
    pub agent: String,
    pub conversation: Option<String>,
    pub before: Option<UsageRecord>,
    pub after: UsageRecord,
}

/// Query filter for [`Store::spend_requests`]: inclusive UTC days.
pub struct LedgerFilter<'a> {
    pub since_day: Option<&'a str>,
    pub until_day: Option<&'a str>,
    pub agent: Option<&'a str>,
    pub conversation: Option<&'a str>,
}

async fn write_quota(tx: &mut sqlx::SqliteConnection, samples: &[LedgerQuota]) -> Result<(), StoreError> {
    for q in samples {
        let s = &q.sample;
        sqlx::query(
            "INSERT INTO spend_quota (agent, harness, session, conversation, name, observed_ms, used_percent,
               window_minutes, resets_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
             ON CONFLICT(agent, session, name) DO UPDATE SET harness = excluded.harness,
               conversation = COALESCE(excluded.conversation, spend_quota.conversation),
               observed_ms = excluded.observed_ms, used_percent = excluded.used_percent,
               window_minutes = excluded.window_minutes, resets_at_ms = excluded.resets_at_ms
             WHERE excluded.observed_ms >= spend_quota.observed_ms",
        )
        .bind(&q.agent)
        .bind(s.harness.as_str())
        .bind(&s.session_id)
        .bind(&q.conversation)
        .bind(&s.name)
        .bind(s.observed_ms)
        .bind(s.used_percent)
        .bind(s.window_minutes.map(int))
        .bind(s.resets_at_ms)
        .execute(&mut *tx)
        .await?;
    }
    Ok(())
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

    /// Writes one tick's findings in one transaction, and returns the
    /// request rows it inserted or upgraded (in batch order). Cancel-safe: a
    /// dropped future rolls the transaction back, and the files are read again.
    pub async fn spend_write(&self, batch: &LedgerBatch) -> Result<Vec<LedgerChange>, StoreError> {
        let now = now_ms() as i64;
        let mut changes = Vec::new();
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
            let held: Option<String> = sqlx::query_scalar("SELECT record FROM spend_request WHERE key = ?")
                .bind(&r.key)
                .fetch_optional(&mut *tx)
                .await?;
            // A row that no longer decodes is treated as replaced in full.
            let before = held.and_then(|h| serde_json::from_str::<UsageRecord>(&h).ok());
            if before.as_ref().is_none_or(|b| rank > b.rank()) {
                changes.push(LedgerChange {
                    agent: l.agent.clone(),
                    conversation: l.conversation.clone(),
                    before: before.clone(),
                    after: r.clone(),
                });
            }
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
        write_quota(&mut tx, &batch.quota).await?;
        tx.commit().await?;
        Ok(changes)
    }

    /// The stored requests matching `f` as (agent, record), at most
    /// [`MAX_HISTORY_ROWS`], oldest first.
    pub async fn spend_requests(&self, f: &LedgerFilter<'_>) -> Result<Vec<(String, UsageRecord)>, StoreError> {
        let rows = sqlx::query(
            "SELECT agent, record FROM spend_request
             WHERE (?1 IS NULL OR day >= ?1) AND (?2 IS NULL OR day <= ?2) AND (?3 IS NULL OR agent = ?3)
               AND (?5 IS NULL OR conversation = ?5)
             ORDER BY ts_ms, key LIMIT ?4",
        )
        .bind(f.since_day)
        .bind(f.until_day)
        .bind(f.agent)
        .bind(MAX_HISTORY_ROWS)
        .bind(f.conversation)
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

    /// The cached live price table (JSON) and when it was fetched.
    pub async fn pricing_cached(&self) -> Result<Option<(String, u64)>, StoreError> {
        let row = sqlx::query("SELECT table_json, fetched_ms FROM pricing_cache WHERE id = 1")
            .fetch_optional(&self.reads)
            .await?;
        Ok(row.map(|r| (r.get(0), u64::try_from(r.get::<i64, _>(1)).unwrap_or(0))))
    }

    /// Keeps `table_json` as the last good live table.
    pub async fn pricing_cache(&self, table_json: &str, fetched_ms: u64) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO pricing_cache (id, table_json, fetched_ms) VALUES (1, ?, ?)
             ON CONFLICT(id) DO UPDATE SET table_json = excluded.table_json, fetched_ms = excluded.fetched_ms",
        )
        .bind(table_json)
        .bind(int(fetched_ms))
        .execute(&self.ledger)
        .await?;
        Ok(())
    }

    /// Keeps each quota sample that is newer than the one held for its agent,
    /// session and window (samples the node saw on a screen).
    pub async fn quota_write(&self, samples: &[LedgerQuota]) -> Result<(), StoreError> {
        let mut tx = self.ledger.begin().await?;
        write_quota(&mut tx, samples).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The quota samples of an agent or a conversation (or all), newest first.
    pub async fn quota_samples(&self, f: &LedgerFilter<'_>) -> Result<Vec<LedgerQuota>, StoreError> {
        let rows = sqlx::query(
            "SELECT agent, harness, session, conversation, name, observed_ms, used_percent, window_minutes,
                    resets_at_ms
             FROM spend_quota WHERE (?1 IS NULL OR agent = ?1) AND (?2 IS NULL OR conversation = ?2)
             ORDER BY observed_ms DESC LIMIT 1000",
        )
        .bind(f.agent)
        .bind(f.conversation)
        .fetch_all(&self.reads)
        .await?;
        Ok(rows
            .iter()
            .map(|r| LedgerQuota {
                agent: r.get(0),
                conversation: r.get(3),
                sample: QuotaSample {
                    harness: if r.get::<String, _>(1) == "codex" {
                        Harness::Codex
                    } else {
                        Harness::Claude
                    },
                    session_id: r.get(2),
                    name: r.get(4),
                    observed_ms: r.get(5),
                    used_percent: r.get(6),
                    window_minutes: r.get::<Option<i64>, _>(7).map(|m| u64::try_from(m).unwrap_or(0)),
                    resets_at_ms: r.get(8),
                },
            })
            .collect())
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

#[cfg(test)]
mod tests {
    use ::spend::{Speed, Tokens};

    use super::*;

    fn rec(key: &str, complete: bool, output: u64) -> UsageRecord {
        UsageRecord {
            key: key.into(),
            harness: Harness::Claude,
            message_id: Some(format!("m-{key}")),
            request_id: Some(format!("r-{key}")),
            sidechain: false,
            session_id: "s".into(),
            model: "claude-sonnet-4-5-20250929".into(),
            // 2026-11-20T09:00:00Z
            timestamp_ms: 1_795_165_200_000,
            tokens: Tokens {
                input: 10,
                output,
                ..Tokens::default()
            },
            web_search_requests: 0,
            complete,
            speed: Speed::Standard,
            inference_geo: None,
            iterations: vec![],
        }
    }

    fn batch(records: Vec<UsageRecord>) -> LedgerBatch {
        LedgerBatch {
            records: records
                .into_iter()
                .map(|record| LedgerRecord {
                    agent: "ada".into(),
                    conversation: None,
                    record,
                })
                .collect(),
            ..LedgerBatch::default()
        }
    }

    #[tokio::test]
    async fn a_row_is_replaced_only_by_a_greater_rank_and_filters_apply() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("w.db")).await.expect("open");
        let all = LedgerFilter {
            since_day: None,
            until_day: None,
            agent: None,
            conversation: None,
        };
        let outputs = |rows: Vec<(String, UsageRecord)>| -> Vec<(String, u64, bool)> {
            rows.into_iter()
                .map(|(_, r)| (r.key, r.tokens.output, r.complete))
                .collect()
        };
        // A streamed partial line, then its complete line: the complete wins.
        let first = store
            .spend_write(&batch(vec![rec("a", false, 1)]))
            .await
            .expect("write");
        assert_eq!(first.len(), 1);
        assert!(first[0].before.is_none());
        let upgraded = store
            .spend_write(&batch(vec![rec("a", true, 200)]))
            .await
            .expect("write");
        assert_eq!(upgraded.len(), 1, "the upgrade is a change");
        assert_eq!(upgraded[0].before.as_ref().map(|b| b.tokens.output), Some(1));
        assert_eq!(upgraded[0].after.tokens.output, 200);
        assert_eq!(
            outputs(store.spend_requests(&all).await.expect("read")),
            [("a".into(), 200, true)]
        );
        // A re-read of the partial line (or a smaller one) never replaces it.
        let reread = store
            .spend_write(&batch(vec![rec("a", false, 1), rec("a", true, 150)]))
            .await
            .expect("write");
        assert!(reread.is_empty(), "a re-read changes nothing, so charges nothing");
        assert_eq!(
            outputs(store.spend_requests(&all).await.expect("read")),
            [("a".into(), 200, true)]
        );
        // Day and agent filters.
        store.spend_write(&batch(vec![rec("b", true, 5)])).await.expect("write");
        let day = |since: &'static str, agent: Option<&'static str>| LedgerFilter {
            since_day: Some(since),
            until_day: Some("2026-11-20"),
            agent,
            conversation: None,
        };
        assert_eq!(
            store
                .spend_requests(&day("2026-11-20", None))
                .await
                .expect("read")
                .len(),
            2
        );
        assert_eq!(
            store
                .spend_requests(&day("2026-11-21", None))
                .await
                .expect("read")
                .len(),
            0
        );
        assert_eq!(
            store
                .spend_requests(&day("2026-11-01", Some("bob")))
                .await
                .expect("read")
                .len(),
            0
        );
        // Problems are counted per file and cleared by a clean read.
        let problem = LedgerBatch {
            problems: vec![LedgerProblem {
                path: "/x.jsonl".into(),
                agent: "ada".into(),
                refused: 2,
                reason: "not a JSON object".into(),
            }],
            ..LedgerBatch::default()
        };
        store.spend_write(&problem).await.expect("write");
        store.spend_write(&problem).await.expect("write");
        assert_eq!(store.spend_problem_count(Some("ada")).await.expect("count"), 1);
        assert_eq!(store.spend_problem_count(Some("bob")).await.expect("count"), 0);
        let clean = LedgerBatch {
            clean: vec!["/x.jsonl".into()],
            ..LedgerBatch::default()
        };
        store.spend_write(&clean).await.expect("write");
        assert_eq!(store.spend_problem_count(None).await.expect("count"), 0);
    }
}
