//! Mail between nodes (`mailbox.send {to: "NAME@NODE"}`). The sender's node
//! checks the sender's grant (its `grants.peers` names `NAME@NODE`) and keeps
//! the message in its own log as a `MailSent` to `NAME@NODE`: the outbox.
//! One lane per member hands its messages over in seq order, one at a time,
//! over the fabric; the member stores each in the recipient's inbox once,
//! recognising a retry by the message id. A lane moves past a message only
//! when the member stored it or refused it for good (`MailForwarded`), so
//! delivery survives partitions and restarts of either side, exactly once
//! and in order per sender (per member, in fact).
//!
//! A send whose lane is empty is handed over at once: the caller learns
//! `delivered`, or the member's refusal (unknown agent, archived, too big)
//! with nothing stored; if the member cannot be reached it is kept and the
//! answer says `pending`.

use std::sync::Arc;
use std::time::Duration;

use fabric::{MailAnswer, MailItem};
use node_store::events::Event;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::service::{NodeError, NodeResult};

/// How long a send waits for the member to take a message before it keeps
/// it in the outbox.
const HAND_NOW_WITHIN: Duration = Duration::from_secs(3);
/// How long a lane's later attempt may take.
const HAND_WITHIN: Duration = Duration::from_secs(10);
/// The longest pause between attempts while a member cannot be reached.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// Messages a lane reads from its outbox at once.
const BATCH: u32 = 64;
/// Most messages kept for one member at once: past it a send is refused
/// (-32029) until the member takes some.
const MAX_PENDING_PER_NODE: u64 = 10_000;
/// How often an idle lane looks at its outbox unprompted.
const IDLE_LOOK: Duration = Duration::from_secs(30);

/// One member's outbox lane: only its holder of `turn` hands messages over.
pub(super) struct Lane {
    node: String,
    turn: tokio::sync::Mutex<()>,
    wake: Notify,
}

impl super::Mail {
    /// A send to `agent` on member `node_id`; the message is addressed,
    /// granted and kept as `agent@NAME` (the member's name).
    pub(super) async fn send_remote(
        &self,
        mut p: console_api::MailSend,
        agent: &str,
        node_id: &str,
    ) -> NodeResult<Value> {
        let name = self.fleet.member_name(node_id);
        let node = name.as_str();
        p.to = format!("{agent}@{node}");
        let id = node_store::util::new_id("mail-");
        let Some(item) = self.item(&id, &p.from, &p.to, &p.body, &p.context) else {
            return Err(NodeError::Internal(format!("{:?} names no agent", p.to)));
        };
        let to = p.to.clone();
        let e = self
            .catalog
            .lock()
            .await
            .decide_mail_send(p, id.clone())
            .inspect_err(|e| tracing::info!(from = %item.from, %to, reason = %e, "mail to another node refused"))?;
        self.take_allowance(&item.from)?;
        let lane = self.lane(node);
        let _turn = lane.turn.lock().await;
        let after = self.catalog.lock().await.mail_forwarded.get(node).copied().unwrap_or(0);
        let waiting = self.store.outbox_pending_count(node, after).await?;
        if waiting == 0 {
            match self.fleet.hand_mail(node_id, item, HAND_NOW_WITHIN).await {
                Ok(MailAnswer::Stored { seq: remote, .. }) => {
                    let seq = self.keep(e).await?;
                    self.forwarded(node, seq, &id, None).await?;
                    return Ok(json!({ "message_id": id, "seq": seq, "state": "delivered", "remote_seq": remote }));
                }
                Ok(MailAnswer::Refused { reason, not_found }) => {
                    tracing::info!(node, message = %id, %reason, "a member refused mail: nothing kept");
                    let message = format!("to: node {node} refused the message: {reason}");
                    return Err(if not_found {
                        NodeError::NotFound(message)
                    } else {
                        NodeError::Invalid(message)
                    });
                }
                Ok(MailAnswer::Later { reason, .. }) | Err(reason) => {
                    tracing::info!(node, message = %id, %reason, "mail kept in the outbox for later");
                }
            }
        }
        if waiting >= MAX_PENDING_PER_NODE {
            lane.wake.notify_one();
            return Err(NodeError::Busy {
                message: format!(
                    "the outbox to node {node} holds {waiting} messages it has not taken yet (the limit is {MAX_PENDING_PER_NODE}); nothing was kept"
                ),
                retry_after_ms: 10_000,
            });
        }
        let seq = self.keep(e).await?;
        lane.wake.notify_one();
        Ok(json!({ "message_id": id, "seq": seq, "state": "pending" }))
    }

    /// What a member is handed for a message to `to` (`NAME@NODE`) from this
    /// node's agent `from`; `None` when `to` names no agent.
    fn item(&self, id: &str, from: &str, to: &str, body: &str, context: &Option<String>) -> Option<MailItem> {
        let (agent, _) = to.split_once('@')?;
        Some(MailItem {
            id: id.to_string(),
            from: from.to_string(),
            node: self.fleet.name().to_string(),
            to: agent.to_string(),
            body: body.to_string(),
            context: context.clone(),
        })
    }

    /// Commits a message to the log (the outbox is its rows); its seq.
    async fn keep(&self, e: Event) -> NodeResult<u64> {
        let stored = self.store.append(vec![e]).await?;
        Ok(stored.first().map(|s| s.seq).unwrap_or(0))
    }

    /// Moves `node`'s lane past message `id` at `seq`.
    async fn forwarded(&self, node: &str, seq: u64, id: &str, refused: Option<String>) -> NodeResult<()> {
        let e = Event::MailForwarded {
            node: node.to_string(),
            upto: seq,
            id: id.to_string(),
            refused,
        };
        let mut cat = self.catalog.lock().await;
        self.commit(&mut cat, vec![e]).await
    }

    /// Up to `limit` messages still to be handed to `node`, oldest first.
    async fn pending(&self, node: &str, limit: u32) -> NodeResult<Vec<console_api::MailMessage>> {
        let after = self.catalog.lock().await.mail_forwarded.get(node).copied().unwrap_or(0);
        Ok(self.store.outbox_pending(node, after, limit).await?)
    }

    /// `node`'s lane, started on first use.
    fn lane(&self, node: &str) -> Arc<Lane> {
        let mut lanes = self.lanes.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = lanes.get(node) {
            return l.clone();
        }
        let lane = Arc::new(Lane {
            node: node.to_string(),
            turn: tokio::sync::Mutex::new(()),
            wake: Notify::new(),
        });
        lanes.insert(node.to_string(), lane.clone());
        tokio::spawn(run_lane(self.me.clone(), lane.clone()));
        lane
    }

    /// Starts the lanes of members with mail still to hand over (after a
    /// restart).
    pub async fn start(&self) {
        match self.store.outbox_nodes().await {
            Ok(nodes) => {
                for node in nodes {
                    self.lane(&node).wake.notify_one();
                }
            }
            Err(e) => tracing::error!(error = %e, "could not read the mail outbox"),
        }
    }

    /// Hands `node`'s pending messages over, in order, until none is left
    /// or the member cannot take one now: then how long it asked to be left
    /// alone, or zero when it could not be reached (the lane backs off).
    async fn drain(&self, lane: &Lane) -> Option<Duration> {
        loop {
            match self.pending(&lane.node, BATCH).await {
                Ok(batch) if batch.is_empty() => return None,
                Ok(batch) => {
                    if let Some(wait) = self.hand_over(lane, batch).await {
                        return Some(wait);
                    }
                }
                Err(e) => {
                    tracing::error!(node = %lane.node, error = %e, "could not read the mail outbox");
                    return Some(Duration::ZERO);
                }
            }
        }
    }

    /// Hands `batch` over in order; stops at the first the member cannot
    /// take now (as `drain`).
    async fn hand_over(&self, lane: &Lane, batch: Vec<console_api::MailMessage>) -> Option<Duration> {
        let node = lane.node.as_str();
        for m in batch {
            let _turn = lane.turn.lock().await;
            let node_id = match self.fleet.member_named(node).await {
                Ok(Some(id)) => id,
                _ if self.fleet.was_removed(node).await => {
                    let why = format!("node {node} was removed from the fleet");
                    self.settle(node, &m, Some(why)).await;
                    continue;
                }
                _ => return Some(Duration::ZERO),
            };
            let Some(item) = self.item(&m.id, &m.from, &m.to, &m.body, &m.context) else {
                self.settle(node, &m, Some(format!("{:?} names no agent", m.to))).await;
                continue;
            };
            match self.fleet.hand_mail(&node_id, item, HAND_WITHIN).await {
                Ok(MailAnswer::Stored { .. }) => self.settle(node, &m, None).await,
                Ok(MailAnswer::Refused { reason, .. }) => {
                    tracing::warn!(node, message = %m.id, %reason, "a member refused mail for good");
                    self.settle(node, &m, Some(reason)).await;
                }
                Ok(MailAnswer::Later { retry_after_ms, .. }) => {
                    return Some(Duration::from_millis(retry_after_ms.clamp(50, 10_000)));
                }
                Err(why) => {
                    tracing::debug!(node, message = %m.id, %why, "mail not handed over yet");
                    return Some(Duration::ZERO);
                }
            }
        }
        None
    }

    async fn settle(&self, node: &str, m: &console_api::MailMessage, refused: Option<String>) {
        if let Err(e) = self.forwarded(node, m.seq, &m.id, refused).await {
            tracing::error!(node, message = %m.id, error = %e, "could not record a handed-over message");
        }
    }

    /// A message member `item.node` hands over for one of this node's
    /// agents: stored once (a retry answers the first seq), refused for good
    /// when it can never be taken, or `Later` when the sender is over its
    /// rate here. Every refusal is logged; nothing is stored for it.
    pub async fn receive(&self, item: MailItem) -> MailAnswer {
        let from = format!("{}@{}", item.from, item.node);
        let refuse = |reason: String, not_found: bool| {
            tracing::warn!(from = %from, to = %item.to, message = %item.id, %reason, "mail from a member refused");
            MailAnswer::Refused { reason, not_found }
        };
        if let Err(e) = mailbox::address::parse(&from) {
            return refuse(format!("the sender: {e}"), false);
        }
        // One receipt at a time: the id check and the append are one step.
        let _one = self.receipts.lock().await;
        match self.store.mail_by_id(&item.id).await {
            Ok(Some((seq, to))) if to == item.to => return MailAnswer::Stored { seq, again: true },
            Ok(Some(_)) => return refuse(format!("message id {} is taken by another message", item.id), false),
            Ok(None) => {}
            Err(e) => {
                return MailAnswer::Later {
                    reason: e.to_string(),
                    retry_after_ms: 1000,
                };
            }
        }
        let archived = match self.catalog.lock().await.agent(&item.to) {
            Ok(a) => a.archived,
            Err(_) => return refuse(format!("no agent {:?} on node {}", item.to, self.fleet.name()), true),
        };
        if let Err(e) = mailbox::decide_receipt(&item.id, archived, &item.to, &item.body, item.context.as_deref()) {
            return refuse(e.to_string(), false);
        }
        if let Err(e) = self.take_allowance(&from) {
            let retry_after_ms = match &e {
                NodeError::Busy { retry_after_ms, .. } => *retry_after_ms,
                _ => 1000,
            };
            return MailAnswer::Later {
                reason: e.to_string(),
                retry_after_ms,
            };
        }
        let (id, to) = (item.id.clone(), item.to.clone());
        let e = Event::MailSent {
            id: item.id,
            from: from.clone(),
            to: item.to,
            context: item.context,
            body: item.body,
        };
        match self.keep(e).await {
            Ok(seq) => {
                self.publish(
                    console_api::methods::EVENT_MAIL_ARRIVED,
                    json!({ "agent": to, "from": from, "message_id": id, "seq": seq }),
                );
                MailAnswer::Stored { seq, again: false }
            }
            Err(e) => MailAnswer::Later {
                reason: e.to_string(),
                retry_after_ms: 1000,
            },
        }
    }

    /// `mailbox.outbox`: `agent`'s messages to other members' agents, newest
    /// first, each `delivered`, `pending` or `refused` (with the reason).
    pub async fn outbox(&self, p: console_api::MailOutbox) -> NodeResult<Value> {
        let limit = p.limit.unwrap_or(100);
        if limit == 0 || limit > 1000 {
            return Err(NodeError::Invalid(format!("limit: {limit} is outside 1..=1000")));
        }
        self.catalog.lock().await.agent(&p.agent)?;
        let rows = self
            .store
            .outbox_of(&p.agent, p.before.unwrap_or(u64::MAX), limit)
            .await?;
        let cat = self.catalog.lock().await;
        let messages: Vec<Value> = rows
            .iter()
            .map(|m| {
                let node = m.to.split_once('@').map(|(_, n)| n).unwrap_or_default();
                let handed = cat.mail_forwarded.get(node).copied().unwrap_or(0);
                let refused = cat.mail_refused.iter().find(|(id, _)| *id == m.id).map(|(_, r)| r);
                let mut v = json!({ "message_id": m.id, "seq": m.seq, "ts": m.ts, "to": m.to,
                    "state": if m.seq > handed { "pending" } else if refused.is_some() { "refused" } else { "delivered" } });
                if let Some(r) = refused {
                    v["reason"] = json!(r);
                }
                v
            })
            .collect();
        let next_before = rows.last().map(|m| m.seq);
        Ok(json!({ "messages": messages, "next_before": next_before }))
    }
}

/// A lane's task: hands its member's pending mail over whenever woken (a
/// send kept one) or every `IDLE_LOOK`, pausing while the member cannot
/// take it. Ends with the mailbox.
async fn run_lane(mail: std::sync::Weak<super::Mail>, lane: Arc<Lane>) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let Some(m) = mail.upgrade() else { return };
        let wait = m.drain(&lane).await;
        drop(m);
        match wait {
            Some(asked) if !asked.is_zero() => tokio::time::sleep(asked).await,
            Some(_) => {
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
            None => {
                backoff = Duration::from_millis(100);
                let _ = tokio::time::timeout(IDLE_LOOK, lane.wake.notified()).await;
            }
        }
    }
}
