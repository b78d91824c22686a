//! The mailbox on the node: `mailbox.send/inbox/ack`. The decisions are the
//! `mailbox` crate's (through the catalog's `decide_mail_send`, which reads
//! the sender's current grants, and the per-sender rate limiter); messages
//! live in the event log and the `mail` projection. A committed send is
//! published as `event.mail.arrived` (no body). Mail to an agent homed on
//! another member goes through the outbox (`remote.rs`).

mod remote;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use serde_json::Value;

use crate::service::{Node, NodeError, NodeResult};
use node_store::util::new_id;

/// Where one agent's mail stands (seqs of mail events).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MailStanding {
    pub acked: u64,
    pub delivered: node_store::catalog::MailDelivery,
    /// The newest message past `acked`.
    pub newest: Option<u64>,
}

/// The mailbox: a subsystem over the core, owning each sender's rate bucket
/// and the outbox's lanes (the messages themselves are the log's and the
/// store's `mail` projection). It reaches other members through the fleet.
pub struct Mail {
    node: Arc<Node>,
    fleet: Arc<crate::fleet::Fleet>,
    /// Per-sender mail rate limits, read on the core's clock.
    limits: Mutex<mailbox::RateLimiter>,
    /// One lane per member mail is addressed to.
    lanes: Mutex<HashMap<String, Arc<remote::Lane>>>,
    /// Messages members hand over are taken one at a time.
    receipts: tokio::sync::Mutex<()>,
    me: Weak<Mail>,
}

impl std::ops::Deref for Mail {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Mail {
    pub fn new(node: Arc<Node>, fleet: Arc<crate::fleet::Fleet>) -> Arc<Mail> {
        let limits = Mutex::new(mailbox::RateLimiter::new(node.cfg.mail_rate));
        Arc::new_cyclic(|me| Mail {
            node,
            fleet,
            limits,
            lanes: Mutex::new(HashMap::new()),
            receipts: tokio::sync::Mutex::new(()),
            me: me.clone(),
        })
    }

    /// `mailbox.send`. `speaker` is the agent an instance token speaks for: it
    /// may only send as itself. `to` is an agent here, or `NAME@NODE` for one
    /// homed on another member.
    pub async fn send(&self, mut p: console_api::MailSend, speaker: Option<&str>) -> NodeResult<Value> {
        if let Some(me) = speaker
            && me != p.from
        {
            return Err(NodeError::Forbidden(format!(
                "this token speaks for agent {me:?} and cannot send as {:?}",
                p.from
            )));
        }
        let to = p.to.clone();
        match mailbox::address::parse(&to).map_err(|e| NodeError::Invalid(e.to_string()))? {
            mailbox::Address::Remote { agent, node } => match self.fleet.member_named(node).await? {
                Some(node_id) => return self.send_remote(p, agent, &node_id).await,
                // `NAME@THIS-NODE` is a local agent.
                None => p.to = agent.to_string(),
            },
            mailbox::Address::Local(_) => {}
        }
        let id = new_id("mail-");
        let (from, to) = (p.from.clone(), p.to.clone());
        // (An instance token's mail grant was checked with every other
        // built-in tool call, in `instance_tool_call`.)
        let e = self.catalog.lock().await.decide_mail_send(p, id.clone())?;
        self.take_allowance(&from)?;
        // Mail is not catalog state: no catalog lock is held across the
        // commit, so senders commit together (group commit).
        let stored = self.store.append(vec![e]).await?;
        let seq = stored.first().map(|s| s.seq).unwrap_or(0);
        self.publish(
            console_api::methods::EVENT_MAIL_ARRIVED,
            serde_json::json!({ "agent": to, "from": from, "message_id": id, "seq": seq }),
        );
        Ok(serde_json::json!({ "message_id": id, "seq": seq, "state": "delivered" }))
    }

    /// One send from `from`'s rate bucket, or -32029 with when to retry.
    fn take_allowance(&self, from: &str) -> NodeResult<()> {
        let now = self.started.elapsed().as_millis() as u64;
        let mut limits = self
            .limits
            .lock()
            .map_err(|_| NodeError::Internal("mail limiter poisoned".into()))?;
        limits.take(from, now).map_err(|e| match e {
            mailbox::MailError::RateLimited { retry_after_ms, .. } => NodeError::Busy {
                message: e.to_string(),
                retry_after_ms: retry_after_ms.min(3_600_000),
            },
            other => NodeError::Invalid(other.to_string()),
        })
    }

    /// Where `agent`'s mail stands: its acknowledged cursor, how far the node
    /// delivered it into the CLI, and the seq of its newest message past the
    /// cursor.
    pub(crate) async fn standing(&self, agent: &str) -> MailStanding {
        let (acked, delivered) = self.marks(agent).await;
        let newest = self.store.newest_mail(agent, acked).await.ok().flatten();
        MailStanding {
            acked,
            delivered,
            newest,
        }
    }

    /// Mail past the cursor and not delivered yet, up to `upto`, one compact
    /// line each, for full-body delivery.
    pub(crate) async fn undelivered_lines(&self, agent: &str, upto: u64) -> String {
        // Read again now: an ack or a delivery may have moved them meanwhile.
        let (acked, delivered) = self.marks(agent).await;
        let after = acked.max(delivered.woken);
        let msgs = self.store.inbox(agent, after, 100).await.unwrap_or_default();
        msgs.iter()
            .filter(|m| m.seq <= upto)
            .map(|m| {
                let body = m.body.replace(['\r', '\t'], " ");
                format!("[WARREN MAIL id={} from={}] {body} [END WARREN MAIL]", m.id, m.from)
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `agent`'s acknowledged cursor and how far its mail was delivered.
    async fn marks(&self, agent: &str) -> (u64, node_store::catalog::MailDelivery) {
        let cat = self.catalog.lock().await;
        (
            cat.mail_cursors.get(agent).copied().unwrap_or(0),
            cat.mail_delivered.get(agent).copied().unwrap_or_default(),
        )
    }

    /// Records that `agent`'s mail up to `upto` reached its CLI in
    /// `conversation` (the CLI took it), so it is not delivered again, even
    /// by a restarted node; as the full body, it is no longer outstanding work.
    pub(crate) async fn mark_delivered(&self, agent: &str, conversation: &str, upto: u64, full_body: bool) {
        let e = node_store::events::Event::MailDelivered {
            agent: agent.to_string(),
            conversation: conversation.to_string(),
            upto,
            full_body,
        };
        let mut cat = self.catalog.lock().await;
        if let Err(e) = self.commit(&mut cat, vec![e]).await {
            tracing::error!(agent, error = %e, "could not record a mail delivery");
        }
    }

    /// `mailbox.inbox`: messages after `after` (default: the acknowledged cursor).
    pub async fn inbox(&self, p: console_api::MailInbox) -> NodeResult<Value> {
        let (acked, delivered) = {
            let cat = self.catalog.lock().await;
            cat.agent(&p.agent)?;
            let delivered = cat.mail_delivered.get(&p.agent).copied().unwrap_or_default();
            (
                cat.mail_cursors.get(&p.agent).copied().unwrap_or(0),
                delivered.full_body,
            )
        };
        let after = p.after.unwrap_or(acked);
        let limit = p.limit.unwrap_or(100);
        if limit == 0 || limit > 1000 {
            return Err(NodeError::Invalid(format!("limit: {limit} is outside 1..=1000")));
        }
        let messages = self.store.inbox(&p.agent, after, limit).await?;
        let cursor = messages.last().map(|m| m.seq).unwrap_or(after);
        Ok(serde_json::json!({ "messages": messages, "cursor": cursor, "acked": acked, "delivered": delivered }))
    }

    /// `mailbox.unread`: each agent's (or `agent`'s) count of messages after
    /// its acknowledged cursor; archived agents are left out.
    pub async fn unread(&self, agent: Option<&str>) -> NodeResult<Value> {
        let cursors: Vec<(String, u64)> = {
            let cat = self.catalog.lock().await;
            let names: Vec<String> = match agent {
                Some(a) => {
                    cat.agent(a)?;
                    vec![a.to_string()]
                }
                None => cat
                    .agents
                    .iter()
                    .filter(|(_, a)| !a.archived)
                    .map(|(n, _)| n.clone())
                    .collect(),
            };
            names
                .into_iter()
                .map(|n| {
                    let acked = cat.mail_cursors.get(&n).copied().unwrap_or(0);
                    (n, acked)
                })
                .collect()
        };
        let mut agents = Vec::with_capacity(cursors.len());
        for (name, acked) in cursors {
            let unread = self.store.unread_count(&name, acked).await?;
            agents.push(serde_json::json!({ "agent": name, "unread": unread }));
        }
        Ok(serde_json::json!({ "agents": agents }))
    }

    /// `mailbox.ack`: the agent has read up to `cursor`, clamped to its
    /// newest message (read under the catalog lock, so no ack races a send's
    /// fold; a send committing meanwhile has a greater seq and stays unread).
    pub async fn ack(&self, p: console_api::MailAck) -> NodeResult<Value> {
        let mut cat = self.catalog.lock().await;
        cat.agent(&p.agent)?;
        let last = self.store.newest_mail(&p.agent, 0).await?.unwrap_or(0);
        if let Some(e) = cat.decide_mail_ack(&p.agent, p.cursor, last)? {
            self.commit(&mut cat, vec![e]).await?;
        }
        let cursor = cat.mail_cursors.get(&p.agent).copied().unwrap_or(0);
        Ok(serde_json::json!({ "cursor": cursor }))
    }
}
