//! The event store: one SQLite file in WAL mode holding the append-only event
//! log and the transcript projection. All writes go through one writer task
//! (`writer.rs`) with group commit; reads use a small pool of read connections.

mod mail;
pub mod push;
pub mod recall;
pub mod spend;
mod writer;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{ConnectOptions, Connection, Row};
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::events::{Durability, Event, StoredEvent};
use crate::util::now_ms;

pub use writer::WriterStats;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Db(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored event {seq} is unreadable: {reason}")]
    Corrupt { seq: u64, reason: String },
    #[error("the store's writer has stopped")]
    WriterGone,
}

/// A sequence number as SQLite's signed integer: a value past `i64::MAX`
/// (only a client's, never a stored one) reads as the largest, never wraps
/// around to a negative one.
pub fn seq_param(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// How many committed events a slow in-process listener may fall behind.
const PUBLISH_CAPACITY: usize = 16_384;
/// Bound of the writer's request queue.
const WRITER_QUEUE: usize = 4_096;

/// Handle to the store. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    reads: SqlitePool,
    /// The spend ledger's own writer (`spend.rs`): one connection.
    ledger: SqlitePool,
    writer: mpsc::Sender<writer::Job>,
    published: broadcast::Sender<Arc<StoredEvent>>,
    stats: Arc<WriterStats>,
    /// Known secret values, replaced in every event before it is queued.
    redaction: Arc<crate::redact::Redaction>,
}

impl Store {
    /// Opens (creating if missing) the store at `path`, runs migrations and
    /// starts the writer task. Must be called inside a tokio runtime.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        let base = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .busy_timeout(Duration::from_secs(10))
            .pragma("temp_store", "memory")
            .disable_statement_logging();

        let mut conn = base.clone().synchronous(SqliteSynchronous::Full).connect().await?;
        sqlx::migrate!("./migrations").run(&mut conn).await?;
        {
            let mut tx = conn.begin().await?;
            recall::backfill(&mut tx).await?;
            tx.commit().await?;
        }
        let next_seq: i64 = sqlx::query("SELECT COALESCE(MAX(seq), 0) + 1 FROM events")
            .fetch_one(&mut conn)
            .await?
            .get(0);

        let reads = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(base.clone().read_only(true))
            .await?;
        let ledger = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(base.synchronous(SqliteSynchronous::Normal))
            .await?;

        let (tx, rx) = mpsc::channel(WRITER_QUEUE);
        let (published, _) = broadcast::channel(PUBLISH_CAPACITY);
        let stats = Arc::new(WriterStats::default());
        tokio::spawn(writer::run(conn, rx, next_seq as u64, published.clone(), stats.clone()));
        Ok(Store {
            reads,
            ledger,
            writer: tx,
            published,
            stats,
            redaction: Default::default(),
        })
    }

    /// The secret values this store redacts (the node keeps them current).
    pub fn redaction(&self) -> &Arc<crate::redact::Redaction> {
        &self.redaction
    }

    /// Appends `events` atomically, stamped with the current time, and waits
    /// until they are committed with the strongest durability any of them needs.
    /// Not cancel-safe in the sense that a dropped future may still commit.
    pub async fn append(&self, events: Vec<Event>) -> Result<Vec<Arc<StoredEvent>>, StoreError> {
        let durability = if events.iter().any(|e| e.durability() == Durability::Full) {
            Durability::Full
        } else {
            Durability::Relaxed
        };
        let reply = self.enqueue(events, durability).await?;
        reply.await.map_err(|_| StoreError::WriterGone)?
    }

    /// Puts events on the writer's queue (each redacted of known secret
    /// values, see `crate::redact`) and returns the receiver of the commit
    /// result. Callers that must keep an order between appends enqueue under
    /// their own lock and await the result outside it.
    pub async fn enqueue(
        &self,
        events: Vec<Event>,
        durability: Durability,
    ) -> Result<oneshot::Receiver<Result<Vec<Arc<StoredEvent>>, StoreError>>, StoreError> {
        let (reply, rx) = oneshot::channel();
        let ts = now_ms();
        // Nothing reaches the log, a projection or a listener unredacted.
        let matcher = self.redaction.matcher();
        let job = writer::Job {
            events: events
                .into_iter()
                .map(|e| (ts, crate::redact::redact_event(&matcher, e)))
                .collect(),
            durability,
            reply,
        };
        self.writer.send(job).await.map_err(|_| StoreError::WriterGone)?;
        Ok(rx)
    }

    /// Committed events, in log order, for in-process listeners.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<StoredEvent>> {
        self.published.subscribe()
    }

    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Every catalog event (everything but transcript deltas), in order.
    pub async fn catalog_events(&self) -> Result<Vec<StoredEvent>, StoreError> {
        let rows =
            sqlx::query("SELECT seq, ts, body FROM events WHERE kind NOT IN ('transcript', 'mail_sent', 'supervision_acted', 'egress') ORDER BY seq")
                .fetch_all(&self.reads)
                .await?;
        rows.iter().map(decode_row).collect()
    }

    /// Events with seq > `after`, up to `limit`, in order (for replay).
    pub async fn events_after(&self, after: u64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query("SELECT seq, ts, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?")
            .bind(seq_param(after))
            .bind(limit as i64)
            .fetch_all(&self.reads)
            .await?;
        rows.iter().map(decode_row).collect()
    }

    /// Number of events and the highest seq.
    /// The newest seq in the log (0 when empty); cheap at any size.
    pub async fn max_seq(&self) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&self.reads)
            .await?;
        Ok(row.get::<i64, _>(0) as u64)
    }

    pub async fn log_summary(&self) -> Result<(u64, u64), StoreError> {
        let row = sqlx::query("SELECT COUNT(*), COALESCE(MAX(seq), 0) FROM events")
            .fetch_one(&self.reads)
            .await?;
        Ok((row.get::<i64, _>(0) as u64, row.get::<i64, _>(1) as u64))
    }

    /// Transcript events of `conversation` with seq >= `from`, at most `limit`.
    pub async fn transcript_from(
        &self,
        conversation: &str,
        from: u64,
        limit: u32,
    ) -> Result<Vec<console_api::TranscriptEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, ts, speaker, kind, text FROM transcript \
             WHERE conversation = ? AND seq >= ? ORDER BY seq LIMIT ?",
        )
        .bind(conversation)
        .bind(seq_param(from))
        .bind(limit as i64)
        .fetch_all(&self.reads)
        .await?;
        Ok(rows
            .iter()
            .map(|r| console_api::TranscriptEvent {
                conversation: conversation.to_string(),
                seq: r.get::<i64, _>(0) as u64,
                ts: r.get::<i64, _>(1) as u64,
                speaker: r.get(2),
                kind: r.get(3),
                text: r.get(4),
            })
            .collect())
    }

    /// Highest transcript seq of `conversation` (0 when it has none).
    pub async fn transcript_last_seq(&self, conversation: &str) -> Result<u64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) FROM transcript WHERE conversation = ?")
            .bind(conversation)
            .fetch_one(&self.reads)
            .await?;
        Ok(row.get::<i64, _>(0) as u64)
    }

    /// Supervision audit events with seq < `before`, newest first.
    pub async fn audit_before(&self, before: u64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        self.kind_before("supervision_acted", before, limit).await
    }

    /// Tool invocations with seq < `before`, newest first.
    pub async fn tools_before(&self, before: u64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        self.kind_before("tool_invoked", before, limit).await
    }

    /// An agent's egress decisions (over all its conversations), newest first.
    pub async fn egress_of(&self, agent: &str, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, ts, body FROM events WHERE kind = 'egress' AND conversation IN \
             (SELECT conversation FROM conversation_agent WHERE agent = ?) ORDER BY seq DESC LIMIT ?",
        )
        .bind(agent)
        .bind(limit as i64)
        .fetch_all(&self.reads)
        .await?;
        rows.iter().map(decode_row).collect()
    }

    /// Events of `kind` with seq < `before`, newest first. The kind is written
    /// into the SQL as a literal (a static name, never input), so SQLite
    /// uses that kind's partial index; a bound parameter would not.
    async fn kind_before(&self, kind: &'static str, before: u64, limit: u32) -> Result<Vec<StoredEvent>, StoreError> {
        let sql =
            format!("SELECT seq, ts, body FROM events WHERE kind = '{kind}' AND seq < ? ORDER BY seq DESC LIMIT ?");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(before.min(i64::MAX as u64) as i64)
            .bind(limit as i64)
            .fetch_all(&self.reads)
            .await?;
        rows.iter().map(decode_row).collect()
    }

    /// How far into the CLI's session file this conversation's transcript has
    /// read (the largest committed cursor among events after `after_seq`: the
    /// current file's), if it has read any of it.
    pub async fn transcript_cursor(&self, conversation: &str, after_seq: u64) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query("SELECT MAX(cursor) FROM transcript WHERE conversation = ? AND seq > ?")
            .bind(conversation)
            .bind(seq_param(after_seq))
            .fetch_one(&self.reads)
            .await?;
        Ok(row.get::<Option<i64>, _>(0).map(|c| c as u64))
    }

    /// The usage reports (`usage_recorded` events) of `conversation`, in order.
    pub async fn usage_of(&self, conversation: &str) -> Result<Vec<StoredEvent>, StoreError> {
        let rows = sqlx::query(
            "SELECT seq, ts, body FROM events WHERE kind = 'usage_recorded' AND conversation = ? ORDER BY seq",
        )
        .bind(conversation)
        .fetch_all(&self.reads)
        .await?;
        rows.iter().map(decode_row).collect()
    }

    /// How far into the CLI's usage file this conversation's usage has been
    /// read (the largest committed cursor), if any of it has.
    pub async fn usage_cursor(&self, conversation: &str) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query(
            "SELECT MAX(json_extract(body, '$.cursor')) FROM events \
             WHERE kind = 'usage_recorded' AND conversation = ?",
        )
        .bind(conversation)
        .fetch_one(&self.reads)
        .await?;
        Ok(row.get::<Option<i64>, _>(0).map(|c| c as u64))
    }

    /// A digest of the whole transcript projection, for replay checks.
    pub async fn transcript_digest(&self) -> Result<Vec<(String, u64, String, String, String)>, StoreError> {
        let rows =
            sqlx::query("SELECT conversation, seq, speaker, kind, text FROM transcript ORDER BY conversation, seq")
                .fetch_all(&self.reads)
                .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get::<i64, _>(1) as u64, r.get(2), r.get(3), r.get(4)))
            .collect())
    }

    /// Drops the transcript, mail and recall projections and refolds them from the
    /// event log, in one transaction. Returns the number of events replayed.
    pub async fn rebuild_transcript(path: &Path) -> Result<u64, StoreError> {
        let mut conn = SqliteConnectOptions::from_str("sqlite://")?
            .filename(path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .disable_statement_logging()
            .connect()
            .await?;
        sqlx::migrate!("./migrations").run(&mut conn).await?;
        let mut tx = conn.begin().await?;
        sqlx::query("DELETE FROM mail").execute(&mut *tx).await?;
        sqlx::query("DELETE FROM transcript").execute(&mut *tx).await?;
        recall::clear(&mut tx).await?;
        let mut after = 0u64;
        let mut count = 0u64;
        loop {
            let rows = sqlx::query(
                "SELECT seq, ts, body FROM events WHERE seq > ? AND kind IN ('transcript', 'mail_sent', 'conversation_created', 'recall_stashed', 'recall_forgot') ORDER BY seq LIMIT 5000",
            )
            .bind(seq_param(after))
            .fetch_all(&mut *tx)
            .await?;
            if rows.is_empty() {
                break;
            }
            let events: Vec<StoredEvent> = rows.iter().map(decode_row).collect::<Result<_, _>>()?;
            after = events.last().map(|e| e.seq).unwrap_or(after);
            count += events.len() as u64;
            let refs: Vec<&StoredEvent> = events.iter().collect();
            writer::insert_projection_rows(&mut tx, &refs).await?;
        }
        tx.commit().await?;
        Ok(count)
    }
}

fn decode_row(row: &sqlx::sqlite::SqliteRow) -> Result<StoredEvent, StoreError> {
    let seq = row.get::<i64, _>(0) as u64;
    let body: String = row.get(2);
    let event = serde_json::from_str(&body).map_err(|e| StoreError::Corrupt {
        seq,
        reason: e.to_string(),
    })?;
    Ok(StoredEvent {
        seq,
        ts: row.get::<i64, _>(1) as u64,
        event,
    })
}
