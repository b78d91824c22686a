//! Egress, the node's side: the gate its guests' proxies ask (an agent's
//! `grants.egress` as the catalog holds them now, so a change applies to the
//! next connection), the recorder of their decisions (sampled by
//! `node_store::egress::Sampler`, bounded at every step) and `egress.audit`.
//! The proxy itself is `node_runtime::egress`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use futures_util::future::BoxFuture;
use node_runtime::egress::{EgressGate, EgressNote};
use node_store::events::Event;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::service::{Node, NodeError, NodeResult};

/// Decisions waiting to be recorded; more are counted and dropped.
const QUEUE: usize = 1024;
/// Most entries one `egress.audit` answers.
pub const MAX_AUDIT: u32 = 1000;

/// The gate the runtime's proxies ask. It is made before the node (the
/// runtime is part of the node) and bound to it once the node exists.
pub struct Gate {
    node: OnceLock<Weak<Node>>,
    notes: mpsc::Sender<EgressNote>,
    dropped: AtomicU64,
}

impl Gate {
    pub fn new() -> (Arc<Gate>, mpsc::Receiver<EgressNote>) {
        let (notes, rx) = mpsc::channel(QUEUE);
        let gate = Gate {
            node: OnceLock::new(),
            notes,
            dropped: AtomicU64::new(0),
        };
        (Arc::new(gate), rx)
    }

    pub fn bind(&self, node: &Arc<Node>) {
        let _ = self.node.set(Arc::downgrade(node));
    }
}

impl EgressGate for Gate {
    fn grants(&self, agent: &str) -> BoxFuture<'_, Vec<String>> {
        let agent = agent.to_string();
        Box::pin(async move {
            match self.node() {
                Ok(node) => grants_of(&node, &agent).await.unwrap_or_default(),
                Err(_) => vec![],
            }
        })
    }

    fn record(&self, note: EgressNote) {
        if self.notes.try_send(note).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(
                    dropped = n,
                    "egress decisions arrive faster than they are recorded: some are not"
                );
            }
        }
    }
}

/// An agent's `grants.egress` as the catalog holds them now.
async fn grants_of(node: &Node, agent: &str) -> Option<Vec<String>> {
    let cat = node.catalog.lock().await;
    cat.agents.get(agent).map(|a| a.record.grants.egress.clone())
}

/// Records the proxies' decisions for as long as the node runs; each
/// refusal is also a log line.
pub async fn record(node: Arc<Node>, mut notes: mpsc::Receiver<EgressNote>) {
    let mut sampler = node_store::egress::Sampler::default();
    while let Some(n) = notes.recv().await {
        if !n.allowed {
            tracing::info!(conversation = %n.conversation, dest = %n.dest, port = n.port, rule = %n.rule, "egress refused");
        }
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let Some(count) = sampler.take(&n.conversation, &n.dest, n.port, n.allowed, now) else {
            continue;
        };
        let e = Event::Egress {
            conversation: n.conversation,
            agent: n.agent,
            dest: n.dest,
            port: n.port,
            allowed: n.allowed,
            rule: n.rule,
            count,
        };
        if let Err(e) = node.store.append(vec![e]).await {
            tracing::error!(error = %e, "could not record an egress decision");
        }
    }
}

impl Gate {
    fn node(&self) -> NodeResult<Arc<Node>> {
        self.node
            .get()
            .and_then(Weak::upgrade)
            .ok_or_else(|| NodeError::Internal("the node is stopping".into()))
    }

    /// `egress.audit`: an agent's allow-list and its recorded egress
    /// decisions, newest first.
    pub async fn audit(&self, agent: &str, limit: Option<u32>) -> NodeResult<Value> {
        let node = self.node()?;
        let grants = grants_of(&node, agent)
            .await
            .ok_or_else(|| NodeError::NotFound(format!("agent {agent:?}")))?;
        let limit = limit.unwrap_or(100);
        if limit == 0 || limit > MAX_AUDIT {
            return Err(NodeError::Invalid(format!("limit: {limit} is outside 1..={MAX_AUDIT}")));
        }
        let rows = node
            .store
            .egress_of(agent, limit)
            .await
            .map_err(|e| NodeError::Internal(e.to_string()))?;
        let entries: Vec<Value> = rows
            .into_iter()
            .filter_map(|r| match r.event {
                Event::Egress {
                    conversation,
                    dest,
                    port,
                    allowed,
                    rule,
                    count,
                    ..
                } => Some(json!({
                    "at": r.ts, "conversation": conversation, "dest": dest, "port": port,
                    "allowed": allowed, "rule": rule, "count": count.unwrap_or(1),
                })),
                _ => None,
            })
            .collect();
        Ok(json!({ "agent": agent, "egress": grants, "entries": entries }))
    }
}
