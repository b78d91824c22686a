//! The recall read model in SQLite (FTS5): which agent each conversation
//! belongs to, each transcript line indexed into its agent's recall as it is
//! committed, and stashed documents. Every row carries its agent and every
//! search filters on it, so one agent's rows never answer another's query.

use sqlx::{QueryBuilder, Row, Sqlite};

use super::{Store, StoreError};
use crate::events::{Event, StoredEvent};

/// The `conversation_agent` rows of new conversations.
pub(crate) async fn insert_conversation_agents(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    events: &[&StoredEvent],
) -> Result<(), StoreError> {
    for e in events {
        if let Event::ConversationCreated { id, agent, .. } = &e.event {
            sqlx::query("INSERT OR REPLACE INTO conversation_agent (conversation, agent) VALUES (?, ?)")
                .bind(id)
                .bind(agent)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Copies the transcript rows just written into `recall`, in one statement
/// per batch (the rows are the batch's seq range).
pub(crate) async fn index_transcript_rows(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    events: &[&StoredEvent],
) -> Result<(), StoreError> {
    let mut seqs = events
        .iter()
        .filter(|e| matches!(&e.event, Event::Transcript { text, .. } if !text.is_empty()))
        .map(|e| e.seq);
    let Some(first) = seqs.next() else {
        return Ok(());
    };
    let last = seqs.next_back().unwrap_or(first);
    sqlx::query(
        "INSERT INTO recall (rowid, akey, source, ref, text) \
         SELECT t.event_seq, lower(hex(ca.agent)) || ' ktranscript', 'transcript', t.conversation || '#' || t.seq, t.text \
         FROM transcript t JOIN conversation_agent ca ON ca.conversation = t.conversation \
         WHERE t.event_seq BETWEEN ? AND ? AND t.text != ''",
    )
    .bind(first as i64)
    .bind(last as i64)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// Stashes (replacing a document of the same name) and forgets documents.
pub(crate) async fn apply_documents(
    tx: &mut sqlx::Transaction<'_, Sqlite>,
    events: &[&StoredEvent],
) -> Result<(), StoreError> {
    for e in events {
        let (agent, name) = match &e.event {
            Event::RecallStashed { agent, name, .. } | Event::RecallForgot { agent, name } => (agent, name),
            _ => continue,
        };
        let old: Option<i64> = sqlx::query_scalar("SELECT recall_id FROM recall_doc WHERE agent = ? AND name = ?")
            .bind(agent)
            .bind(name)
            .fetch_optional(&mut **tx)
            .await?;
        if let Some(id) = old {
            sqlx::query("DELETE FROM recall WHERE rowid = ?")
                .bind(id)
                .execute(&mut **tx)
                .await?;
            sqlx::query("DELETE FROM recall_doc WHERE agent = ? AND name = ?")
                .bind(agent)
                .bind(name)
                .execute(&mut **tx)
                .await?;
        }
        if let Event::RecallStashed { text, .. } = &e.event {
            sqlx::query("INSERT INTO recall (rowid, akey, source, ref, text) VALUES (?, ?, 'doc', ?, ?)")
                .bind(e.seq as i64)
                .bind(format!("{} kdoc", akey(agent)))
                .bind(name)
                .bind(text)
                .execute(&mut **tx)
                .await?;
            sqlx::query("INSERT INTO recall_doc (agent, name, recall_id, bytes, ts) VALUES (?, ?, ?, ?, ?)")
                .bind(agent)
                .bind(name)
                .bind(e.seq as i64)
                .bind(text.len() as i64)
                .bind(e.ts as i64)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Empties the recall read model (before a rebuild refolds it).
pub(crate) async fn clear(tx: &mut sqlx::Transaction<'_, Sqlite>) -> Result<(), StoreError> {
    for table in ["recall", "recall_doc", "conversation_agent"] {
        let mut q: QueryBuilder<Sqlite> = QueryBuilder::new("DELETE FROM ");
        q.push(table);
        q.build().execute(&mut **tx).await?;
    }
    Ok(())
}

/// Transcript lines a search ranks at most: the agent's newest matches.
pub const TRANSCRIPT_CANDIDATES: i64 = 2_000;

/// One hit of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub source: String,
    pub reference: String,
    /// The row's whole text (the caller cuts the snippet).
    pub text: String,
    pub score: f64,
}

/// An agent's name as one FTS5 token (hex: names may hold `-` and `_`,
/// which the tokenizer would split on).
fn akey(agent: &str) -> String {
    hex::encode(agent.as_bytes())
}

impl Store {
    /// The best `limit` rows of `agent`'s recall for the FTS5 expression
    /// `fts` (already made safe by `recall::fts_query`), best first, with
    /// their text. Ranking reads only the index (the agent and the source are
    /// indexed tokens; only the rowid and bm25 are selected), over all of the
    /// agent's matching documents and its newest [`TRANSCRIPT_CANDIDATES`]
    /// matching transcript lines, so a word that is everywhere in years of
    /// history costs the same as a rare one. The winners' rows are read last.
    pub async fn recall_search(&self, agent: &str, fts: &str, limit: u32) -> Result<Vec<Hit>, StoreError> {
        let key = akey(agent);
        let docs: Vec<(i64, f64)> = sqlx::query_as(
            "SELECT rowid, bm25(recall, 0.0, 0.0, 0.0, 1.0) AS score FROM recall \
             WHERE recall MATCH ? ORDER BY score LIMIT ?",
        )
        .bind(format!("akey : (\"{key}\" \"kdoc\") AND text : ({fts})"))
        .bind(limit as i64)
        .fetch_all(&self.reads)
        .await?;
        let lines: Vec<(i64, f64)> = sqlx::query_as(
            "SELECT id, score FROM (SELECT rowid AS id, bm25(recall, 0.0, 0.0, 0.0, 1.0) AS score FROM recall \
             WHERE recall MATCH ? ORDER BY rowid DESC LIMIT ?) ORDER BY score LIMIT ?",
        )
        .bind(format!("akey : (\"{key}\" \"ktranscript\") AND text : ({fts})"))
        .bind(TRANSCRIPT_CANDIDATES)
        .bind(limit as i64)
        .fetch_all(&self.reads)
        .await?;
        let mut top: Vec<(i64, f64)> = docs.into_iter().chain(lines).collect();
        top.sort_by(|a, b| a.1.total_cmp(&b.1));
        top.truncate(limit as usize);
        let mut out = Vec::with_capacity(top.len());
        for (id, score) in top {
            let row = sqlx::query("SELECT source, ref, text FROM recall WHERE rowid = ?")
                .bind(id)
                .fetch_optional(&self.reads)
                .await?;
            if let Some(r) = row {
                out.push(Hit {
                    source: r.get(0),
                    reference: r.get(1),
                    text: r.get(2),
                    score,
                });
            }
        }
        Ok(out)
    }

    /// Bytes the recall index's tables take (SQLite's dbstat).
    pub async fn recall_index_bytes(&self) -> Result<i64, StoreError> {
        let n: Option<i64> = sqlx::query_scalar("SELECT SUM(pgsize) FROM dbstat WHERE name LIKE 'recall%'")
            .fetch_one(&self.reads)
            .await?;
        Ok(n.unwrap_or(0))
    }

    /// Whether `agent` has a stashed document named `name`.
    pub async fn recall_has_doc(&self, agent: &str, name: &str) -> Result<bool, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM recall_doc WHERE agent = ? AND name = ?")
            .bind(agent)
            .bind(name)
            .fetch_one(&self.reads)
            .await?;
        Ok(n > 0)
    }

    /// `agent`'s stashed documents: (name, bytes, ts), by name.
    pub async fn recall_docs(&self, agent: &str) -> Result<Vec<(String, u64, u64)>, StoreError> {
        let rows = sqlx::query("SELECT name, bytes, ts FROM recall_doc WHERE agent = ? ORDER BY name LIMIT 1000")
            .bind(agent)
            .fetch_all(&self.reads)
            .await?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get::<i64, _>(1) as u64, r.get::<i64, _>(2) as u64))
            .collect())
    }
}
