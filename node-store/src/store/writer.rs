//! The store's single writer: group commit. It takes every request waiting in
//! its queue, writes them in one transaction with multi-row INSERTs, commits
//! once (FULL if any request needs it, else NORMAL), then answers each request
//! and publishes the committed events in log order.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sqlx::{Connection, QueryBuilder, Sqlite, SqliteConnection};
use tokio::sync::{broadcast, mpsc, oneshot};

use super::StoreError;
use crate::events::{Durability, Event, StoredEvent};

/// Most events written in one transaction.
const MAX_BATCH: usize = 8_192;
/// Rows per INSERT statement (SQLite binds at most 32766 variables).
const ROWS_PER_STATEMENT: usize = 256;

pub(super) struct Job {
    pub events: Vec<(u64, Event)>,
    pub durability: Durability,
    pub reply: oneshot::Sender<Result<Vec<Arc<StoredEvent>>, StoreError>>,
}

/// Counters of the writer, for benchmarks and diagnostics.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub commits: AtomicU64,
    pub events: AtomicU64,
}

pub(super) async fn run(
    mut conn: SqliteConnection,
    mut rx: mpsc::Receiver<Job>,
    mut next_seq: u64,
    published: broadcast::Sender<Arc<StoredEvent>>,
    stats: Arc<WriterStats>,
) {
    let mut full_sync = true;
    while let Some(first) = rx.recv().await {
        let mut jobs = vec![first];
        let mut count = jobs[0].events.len();
        while count < MAX_BATCH {
            match rx.try_recv() {
                Ok(job) => {
                    count += job.events.len();
                    jobs.push(job);
                }
                Err(_) => break,
            }
        }
        let want_full = jobs.iter().any(|j| j.durability == Durability::Full);
        if want_full != full_sync {
            let pragma = if want_full {
                "PRAGMA synchronous = FULL"
            } else {
                "PRAGMA synchronous = NORMAL"
            };
            if let Err(e) = sqlx::query(pragma).execute(&mut conn).await {
                tracing::error!(error = %e, "could not set synchronous mode");
            } else {
                full_sync = want_full;
            }
        }

        let mut seq = next_seq;
        let mut batches: Vec<Vec<Arc<StoredEvent>>> = Vec::with_capacity(jobs.len());
        let mut replies = Vec::with_capacity(jobs.len());
        for job in jobs {
            let stored = job
                .events
                .into_iter()
                .map(|(ts, event)| {
                    let e = Arc::new(StoredEvent { seq, ts, event });
                    seq += 1;
                    e
                })
                .collect();
            batches.push(stored);
            replies.push(job.reply);
        }
        let all: Vec<&StoredEvent> = batches.iter().flatten().map(|e| e.as_ref()).collect();
        match write(&mut conn, &all).await {
            Ok(()) => {
                next_seq = seq;
                stats.commits.fetch_add(1, Ordering::Relaxed);
                stats.events.fetch_add(all.len() as u64, Ordering::Relaxed);
                for (batch, reply) in batches.into_iter().zip(replies) {
                    for event in &batch {
                        // No listener is fine; a lagging listener notices on its side.
                        let _ = published.send(event.clone());
                    }
                    let _ = reply.send(Ok(batch));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, events = all.len(), "commit failed; nothing of this batch is stored");
                let msg = e.to_string();
                for reply in replies {
                    let _ = reply.send(Err(StoreError::Db(sqlx::Error::Protocol(msg.clone()))));
                }
            }
        }
    }
}

async fn write(conn: &mut SqliteConnection, events: &[&StoredEvent]) -> Result<(), StoreError> {
    let mut tx = conn.begin().await?;
    for chunk in events.chunks(ROWS_PER_STATEMENT) {
        let mut bodies = Vec::with_capacity(chunk.len());
        for e in chunk {
            bodies.push(serde_json::to_string(&e.event).map_err(|err| StoreError::Corrupt {
                seq: e.seq,
                reason: err.to_string(),
            })?);
        }
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("INSERT INTO events (seq, ts, kind, conversation, body) ");
        q.push_values(chunk.iter().zip(bodies), |mut row, (e, body)| {
            row.push_bind(e.seq as i64)
                .push_bind(e.ts as i64)
                .push_bind(e.event.kind())
                .push_bind(e.event.conversation().map(str::to_owned))
                .push_bind(body);
        });
        q.build().execute(&mut *tx).await?;
    }
    insert_projection_rows(&mut tx, events).await?;
    tx.commit().await?;
    Ok(())
}

/// Folds transcript, mail and recall events into their projection tables.
pub(super) async fn insert_projection_rows(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    events: &[&StoredEvent],
) -> Result<(), StoreError> {
    super::recall::insert_conversation_agents(tx, events).await?;
    insert_transcript_rows(tx, events).await?;
    super::recall::index_transcript_rows(tx, events).await?;
    super::recall::apply_documents(tx, events).await?;
    let mail: Vec<&StoredEvent> = events
        .iter()
        .copied()
        .filter(|e| matches!(e.event, Event::MailSent { .. }))
        .collect();
    for chunk in mail.chunks(ROWS_PER_STATEMENT) {
        let mut q: QueryBuilder<Sqlite> =
            QueryBuilder::new("INSERT INTO mail (event_seq, id, ts, sender, recipient, context, body) ");
        q.push_values(chunk, |mut row, e| {
            if let Event::MailSent {
                id,
                from,
                to,
                context,
                body,
            } = &e.event
            {
                row.push_bind(e.seq as i64)
                    .push_bind(id.clone())
                    .push_bind(e.ts as i64)
                    .push_bind(from.clone())
                    .push_bind(to.clone())
                    .push_bind(context.clone())
                    .push_bind(body.clone());
            }
        });
        q.build().execute(&mut **tx).await?;
    }
    Ok(())
}

/// Folds transcript events into the `transcript` projection table.
async fn insert_transcript_rows(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    events: &[&StoredEvent],
) -> Result<(), StoreError> {
    let rows: Vec<&StoredEvent> = events
        .iter()
        .copied()
        .filter(|e| matches!(e.event, Event::Transcript { .. }))
        .collect();
    for chunk in rows.chunks(ROWS_PER_STATEMENT) {
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new(
            "INSERT INTO transcript (conversation, seq, ts, speaker, kind, text, event_seq, cursor) ",
        );
        q.push_values(chunk, |mut row, e| {
            if let Event::Transcript {
                conversation,
                seq,
                speaker,
                kind,
                text,
                cursor,
            } = &e.event
            {
                row.push_bind(conversation.clone())
                    .push_bind(*seq as i64)
                    .push_bind(e.ts as i64)
                    .push_bind(speaker.clone())
                    .push_bind(kind.clone())
                    .push_bind(text.clone())
                    .push_bind(e.seq as i64)
                    .push_bind(cursor.map(|c| c as i64));
            }
        });
        q.build().execute(&mut **tx).await?;
    }
    Ok(())
}
