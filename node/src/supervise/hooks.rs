//! `supervision.hook`: the node's side of Claude Code's hook reports (the
//! pure reading of a report is `node_runtime::harness::hooks`).

use serde_json::{Value, json};

use crate::service::{NodeError, NodeResult};

pub use node_runtime::harness::hooks::{HookReport, ToolRequest, parse};

impl super::Supervisor {
    /// `supervision.hook {conversation, event}`: only the conversation's own
    /// CLI (its instance token) reports its hooks.
    pub async fn supervision_hook(&self, conversation: &str, event: &Value, caller: Option<&str>) -> NodeResult<Value> {
        let agent = self
            .conversation_agent(conversation)
            .await
            .ok_or_else(|| NodeError::NotFound(format!("conversation {conversation:?} not found")))?;
        if caller != Some(agent.as_str()) {
            return Err(NodeError::Forbidden(
                "supervision.hook: only the conversation's own CLI (its instance token) reports hooks".into(),
            ));
        }
        let report = parse(event).map_err(NodeError::Invalid)?;
        let live = self
            .live(conversation)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {conversation} has no running CLI")))?;
        live.touch();
        if let Ok(mut h) = live.hook.lock() {
            match &report {
                HookReport::ToolRequest(request) => *h = Some(request.clone()),
                HookReport::TurnEnded => {
                    *h = None;
                    live.hook_turn_ended();
                }
                HookReport::Other(_) => {}
            }
        }
        Ok(json!({ "recorded": true }))
    }
}
