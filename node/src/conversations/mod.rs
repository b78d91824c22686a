//! Conversations as the API drives them: start, continue and login, pause
//! and terminate, the re-adoption of guests that outlived the node's last run
//! and the pause a CLI's exit leaves. The subsystem a launch brings the
//! others together in (tools, secrets, budgets, supervision, usage): it holds
//! a handle to the core and owns the task that notices exits.

pub mod launch;
pub mod workspace;

use std::sync::Arc;

use console_api as api;
use tokio::sync::mpsc;

use crate::service::{Node, NodeResult, Startup};
use node_store::catalog::PLANNED_PAUSE;
use node_store::lifecycle::Transition;

pub struct Conversations {
    node: Arc<Node>,
    /// Each live conversation's watch, stall watch and holds.
    supervisor: Arc<crate::supervise::Supervisor>,
    /// Each live conversation's usage watch and budget.
    spend: Arc<crate::spend::Spend>,
}

impl std::ops::Deref for Conversations {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Conversations {
    pub fn new(
        node: Arc<Node>,
        supervisor: Arc<crate::supervise::Supervisor>,
        spend: Arc<crate::spend::Spend>,
    ) -> Arc<Conversations> {
        Arc::new(Conversations {
            node,
            supervisor,
            spend,
        })
    }

    /// Re-adopts the guests that outlived the last run (each in its own
    /// task) and starts the task that pauses conversations whose CLI exits.
    pub fn start(self: &Arc<Self>, startup: Startup) {
        for (id, key_hash) in startup.adoptable {
            let me = self.clone();
            tokio::spawn(async move { me.readopt(&id, key_hash).await });
        }
        let weak = Arc::downgrade(self);
        let mut exits: mpsc::Receiver<String> = startup.exits;
        tokio::spawn(async move {
            while let Some(id) = exits.recv().await {
                let Some(me) = weak.upgrade() else { return };
                me.on_cli_exit(&id).await;
            }
        });
    }

    pub async fn conversation_pause(&self, id: &str) -> NodeResult<api::Conversation> {
        self.stop(id, Transition::Pause, PLANNED_PAUSE).await
    }

    /// Ends it for good: its worktree is put away (its branch kept when it
    /// has commits).
    pub async fn conversation_terminate(&self, id: &str) -> NodeResult<api::Conversation> {
        let wire = self.stop(id, Transition::Terminate, "terminated on request").await?;
        self.archive_workspace(id).await;
        Ok(wire)
    }

    /// The core's stop, and the conversation's holds with it.
    async fn stop(&self, id: &str, t: Transition, reason: &str) -> NodeResult<api::Conversation> {
        let wire = self.node.stop(id, t, reason).await?;
        self.supervisor.drop_holds(id);
        Ok(wire)
    }

    /// Pauses every live conversation (the node is stopping).
    pub async fn pause_all(&self, reason: &str) {
        let ids: Vec<String> = self
            .live
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for id in ids {
            if let Err(e) = self.stop(&id, Transition::Pause, reason).await {
                tracing::warn!(conversation = %id, error = %e, "could not pause on shutdown");
            }
        }
    }
}
