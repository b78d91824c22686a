//! The mailbox's projection (`mail`, rebuilt from `mail_sent` events): an
//! agent's inbox, and the outbox of messages to agents homed on other
//! members (rows whose recipient is `NAME@NODE`, `0008_mail_remote.sql`).

use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{Store, StoreError, seq_param};

const COLUMNS: &str = "event_seq, id, ts, sender, recipient, context, body";
/// The outbox rows for one member past a seq (binds: the seq, the member's
/// name); `mail_remote` indexes them.
const PENDING_FOR: &str =
    "instr(recipient, '@') > 0 AND event_seq > ? AND substr(recipient, instr(recipient, '@') + 1) = ?";

fn message(r: &SqliteRow) -> console_api::MailMessage {
    console_api::MailMessage {
        seq: r.get::<i64, _>(0) as u64,
        id: r.get(1),
        ts: r.get::<i64, _>(2) as u64,
        from: r.get(3),
        to: r.get(4),
        context: r.get(5),
        body: r.get(6),
    }
}

impl Store {
    /// The newest message to `agent` with seq > `after`, if any.
    pub async fn newest_mail(&self, agent: &str, after: u64) -> Result<Option<u64>, StoreError> {
        let row = sqlx::query("SELECT MAX(event_seq) FROM mail WHERE recipient = ? AND event_seq > ?")
            .bind(agent)
            .bind(seq_param(after))
            .fetch_one(&self.reads)
            .await?;
        Ok(row.get::<Option<i64>, _>(0).map(|s| s as u64))
    }

    /// Messages to `agent` with seq > `after`, oldest first, at most `limit`.
    /// How many of `agent`'s messages come after `after` (unacknowledged).
    pub async fn unread_count(&self, agent: &str, after: u64) -> Result<u64, StoreError> {
        let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM mail WHERE recipient = ? AND event_seq > ?")
            .bind(agent)
            .bind(seq_param(after))
            .fetch_one(&self.reads)
            .await?;
        Ok(n as u64)
    }

    pub async fn inbox(
        &self,
        agent: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<console_api::MailMessage>, StoreError> {
        let rows = sqlx::query(
            "SELECT event_seq, id, ts, sender, recipient, context, body FROM mail \
             WHERE recipient = ? AND event_seq > ? ORDER BY event_seq LIMIT ?",
        )
        .bind(agent)
        .bind(seq_param(after))
        .bind(limit as i64)
        .fetch_all(&self.reads)
        .await?;
        Ok(rows.iter().map(message).collect())
    }

    /// The message with this id, if one is stored: (its seq, its recipient).
    pub async fn mail_by_id(&self, id: &str) -> Result<Option<(u64, String)>, StoreError> {
        let row = sqlx::query("SELECT event_seq, recipient FROM mail WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.reads)
            .await?;
        Ok(row.map(|r| (r.get::<i64, _>(0) as u64, r.get(1))))
    }

    /// Messages to agents on member `node` with seq > `after`, oldest first,
    /// at most `limit`: what is still to be handed over there.
    pub async fn outbox_pending(
        &self,
        node: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<console_api::MailMessage>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM mail WHERE {PENDING_FOR} ORDER BY event_seq LIMIT ?");
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(seq_param(after))
            .bind(node)
            .bind(limit as i64)
            .fetch_all(&self.reads)
            .await?;
        Ok(rows.iter().map(message).collect())
    }

    /// How many messages to agents on member `node` have seq > `after`.
    pub async fn outbox_pending_count(&self, node: &str, after: u64) -> Result<u64, StoreError> {
        let sql = format!("SELECT COUNT(*) FROM mail WHERE {PENDING_FOR}");
        let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind(seq_param(after))
            .bind(node)
            .fetch_one(&self.reads)
            .await?;
        Ok(n as u64)
    }

    /// The members mail was ever addressed to (node names).
    pub async fn outbox_nodes(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query(
            "SELECT DISTINCT substr(recipient, instr(recipient, '@') + 1) FROM mail WHERE instr(recipient, '@') > 0",
        )
        .fetch_all(&self.reads)
        .await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    /// `sender`'s messages to agents on other members, newest first, with
    /// seq < `before`, at most `limit`.
    pub async fn outbox_of(
        &self,
        sender: &str,
        before: u64,
        limit: u32,
    ) -> Result<Vec<console_api::MailMessage>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM mail WHERE instr(recipient, '@') > 0 AND event_seq < ? AND sender = ? \
             ORDER BY event_seq DESC LIMIT ?"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(seq_param(before))
            .bind(sender)
            .bind(limit as i64)
            .fetch_all(&self.reads)
            .await?;
        Ok(rows.iter().map(message).collect())
    }
}
