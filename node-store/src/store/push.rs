//! Web Push subscriptions (`0007_push.sql`), written on the ledger's
//! connection: one row per push endpoint, bounded per owner and in all.

use sqlx::Row;

use super::{Store, StoreError};

/// One subscription as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRow {
    pub id: String,
    /// Who made it: the revocation id of its token's last block.
    pub owner: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
    /// JSON array of the needs-you kinds wanted (empty: all).
    pub kinds: String,
    /// The token its deliveries are authorized with.
    pub token: String,
    pub created_ms: u64,
}

/// Why a subscription was not added.
#[derive(Debug, PartialEq, Eq)]
pub enum PushAdd {
    /// Added; `replaced`: the ids of the endpoint's earlier subscriptions.
    Added { replaced: Vec<String> },
    /// The owner has `per_owner` already.
    OwnerFull,
    /// The node has `total` already.
    NodeFull,
}

impl Store {
    /// Adds `row` unless its owner or the node is at its bound; an endpoint
    /// subscribed again replaces its old row, whoever made it (a browser
    /// renewing its keys, or paired again with a new token: the endpoint is
    /// the browser's, and only the browser knows it).
    pub async fn push_add(&self, row: &PushRow, per_owner: u32, total: u32) -> Result<PushAdd, StoreError> {
        let mut tx = self.ledger.begin().await?;
        let replaced: Vec<String> = sqlx::query("DELETE FROM push_subscriptions WHERE endpoint = ? RETURNING id")
            .bind(&row.endpoint)
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        let count = |sql: &'static str| sqlx::query(sql);
        let mine: i64 = count("SELECT count(*) FROM push_subscriptions WHERE owner = ?")
            .bind(&row.owner)
            .fetch_one(&mut *tx)
            .await?
            .get(0);
        if mine >= i64::from(per_owner) {
            return Ok(PushAdd::OwnerFull);
        }
        let all: i64 = count("SELECT count(*) FROM push_subscriptions")
            .fetch_one(&mut *tx)
            .await?
            .get(0);
        if all >= i64::from(total) {
            return Ok(PushAdd::NodeFull);
        }
        sqlx::query(
            "INSERT INTO push_subscriptions (id, owner, endpoint, p256dh, auth, kinds, token, created_ms)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&row.id)
        .bind(&row.owner)
        .bind(&row.endpoint)
        .bind(&row.p256dh)
        .bind(&row.auth)
        .bind(&row.kinds)
        .bind(&row.token)
        .bind(i64::try_from(row.created_ms).unwrap_or(i64::MAX))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(PushAdd::Added { replaced })
    }

    /// Removes subscription `id` (of `owner`, when given); whether it was there.
    pub async fn push_remove(&self, id: &str, owner: Option<&str>) -> Result<bool, StoreError> {
        let done = match owner {
            Some(o) => {
                sqlx::query("DELETE FROM push_subscriptions WHERE id = ? AND owner = ?")
                    .bind(id)
                    .bind(o)
                    .execute(&self.ledger)
                    .await?
            }
            None => {
                sqlx::query("DELETE FROM push_subscriptions WHERE id = ?")
                    .bind(id)
                    .execute(&self.ledger)
                    .await?
            }
        };
        Ok(done.rows_affected() > 0)
    }

    /// Every subscription (of `owner`, when given), oldest first.
    pub async fn push_list(&self, owner: Option<&str>) -> Result<Vec<PushRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT id, owner, endpoint, p256dh, auth, kinds, token, created_ms FROM push_subscriptions
             WHERE ?1 IS NULL OR owner = ?1 ORDER BY created_ms, id",
        )
        .bind(owner)
        .fetch_all(&self.reads)
        .await?;
        Ok(rows
            .iter()
            .map(|r| PushRow {
                id: r.get(0),
                owner: r.get(1),
                endpoint: r.get(2),
                p256dh: r.get(3),
                auth: r.get(4),
                kinds: r.get(5),
                token: r.get(6),
                created_ms: u64::try_from(r.get::<i64, _>(7)).unwrap_or(0),
            })
            .collect())
    }
}
