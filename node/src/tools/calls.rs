//! `tool.invoke` and `tool.log` on the node, and the grant check of every
//! built-in tool call an instance token makes: authorization has let the call
//! through (the token holds `tool:NAME` invoke); here the node checks that
//! an instance token's agent still has the grant, runs the tool at most
//! [`MAX_RUNNING`] at a time, and records every invocation as an event.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{OwnerTool, invoke, still_granted};
use crate::service::{Node, NodeError, NodeResult};
use node_store::events::Event;

/// Owner tools running at once on this node.
pub const MAX_RUNNING: usize = 8;
/// Bytes of each argument kept in the invocation event.
const ARG_KEPT: usize = 256;
/// Arguments kept in the invocation event.
const ARGS_KEPT: usize = 32;

/// The tools an agent calls through the node: a subsystem over the core,
/// owning the slots of the owner tools running now.
pub struct Tools {
    node: Arc<Node>,
    /// Owner tools running now (at most [`MAX_RUNNING`]).
    slots: tokio::sync::Semaphore,
}

impl std::ops::Deref for Tools {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Tools {
    pub fn new(node: Arc<Node>) -> Arc<Tools> {
        Arc::new(Tools {
            node,
            slots: tokio::sync::Semaphore::new(MAX_RUNNING),
        })
    }

    /// An instance token's call of a built-in tool's method: its agent must
    /// still be granted the tool (a withdrawn grant is refused at once, not
    /// at the next launch), and mail and recall are its own only.
    pub(crate) async fn instance_tool_call(&self, agent: &str, method: &str, p: Option<&Value>) -> NodeResult<()> {
        use capabilities::methods::{BUILTIN_TOOLS, tool_methods};
        let Some(tool) = BUILTIN_TOOLS.iter().find(|t| tool_methods(t).contains(&method)) else {
            return Ok(());
        };
        let granted = {
            let cat = self.catalog.lock().await;
            cat.agent(agent).map(|a| super::still_granted(&a.record, tool))?
        };
        if !granted {
            return Err(NodeError::Forbidden(format!(
                "agent {agent:?} is not granted the {tool} tool (grants.tools)"
            )));
        }
        let named = p.and_then(|p| p.get("agent")).and_then(Value::as_str);
        if matches!(*tool, "mail" | "recall") && method != "mailbox.send" && named.is_some_and(|n| n != agent) {
            return Err(NodeError::Forbidden(format!(
                "this token speaks for agent {agent:?}: its {tool} is its own only"
            )));
        }
        Ok(())
    }

    /// `tool.invoke`. `speaker`/`conversation`: the agent and conversation
    /// an instance token speaks for (none for an owner's token).
    pub async fn invoke(
        &self,
        p: console_api::ToolInvoke,
        speaker: Option<&str>,
        conversation: Option<&str>,
    ) -> NodeResult<Value> {
        let tool: &OwnerTool = self.cfg.tools.get(&p.tool).ok_or_else(|| {
            NodeError::NotFound(format!(
                "tool: {:?} is not a tool of this node ([tools.NAME] in its warren.toml)",
                p.tool
            ))
        })?;
        invoke::check_args(&p.args).map_err(NodeError::Invalid)?;
        let cwd = match speaker {
            Some(agent) => {
                let cat = self.catalog.lock().await;
                let rec = &cat.agent(agent)?.record;
                if !still_granted(rec, &p.tool) {
                    return Err(NodeError::Forbidden(format!(
                        "agent {agent:?} is not granted the tool {:?} (grants.tools)",
                        p.tool
                    )));
                }
                self.agent_home_dirs(agent).1
            }
            None => self.cfg.data_dir.clone(),
        };
        let Ok(_slot) = self.slots.try_acquire() else {
            return Err(NodeError::Busy {
                message: format!("{MAX_RUNNING} tools are running on this node; try again shortly"),
                retry_after_ms: 500,
            });
        };
        let run = invoke::run_tool(&p.tool, tool, &p.args, &cwd)
            .await
            .map_err(NodeError::Conflict)?;
        let e = Event::ToolInvoked {
            agent: speaker.map(str::to_string),
            conversation: conversation.map(str::to_string),
            tool: p.tool.clone(),
            args: p.args.iter().take(ARGS_KEPT).map(|a| cut(a, ARG_KEPT)).collect(),
            exit_code: run.exit_code,
            duration_ms: run.duration_ms,
            truncated: run.truncated,
            stopped: run.stopped.clone(),
        };
        self.store.append(vec![e]).await?;
        let mut out = json!({
            "exit_code": run.exit_code,
            "stdout": run.stdout,
            "stderr": run.stderr,
            "truncated": run.truncated,
            "duration_ms": run.duration_ms,
        });
        if let Some(why) = run.stopped {
            out["stopped"] = json!(why);
        }
        Ok(out)
    }

    /// `tool.log {limit?, before_id?}`: invocations, newest first.
    pub async fn log(&self, p: &Value) -> NodeResult<Value> {
        let limit = p.get("limit").and_then(Value::as_u64).unwrap_or(50);
        if limit == 0 || limit > 200 {
            return Err(NodeError::Invalid(format!("limit: {limit} is outside 1..=200")));
        }
        let before = p.get("before_id").and_then(Value::as_u64).unwrap_or(u64::MAX);
        let rows = self.store.tools_before(before, limit as u32).await?;
        let entries: Vec<Value> = rows
            .iter()
            .filter_map(|e| match &e.event {
                Event::ToolInvoked {
                    agent,
                    conversation,
                    tool,
                    args,
                    exit_code,
                    duration_ms,
                    truncated,
                    stopped,
                } => Some(json!({
                    "id": e.seq, "at": e.ts, "agent": agent, "conversation": conversation, "tool": tool,
                    "args": args, "exit_code": exit_code, "duration_ms": duration_ms,
                    "truncated": truncated, "stopped": stopped,
                })),
                _ => None,
            })
            .collect();
        Ok(json!({ "entries": entries }))
    }
}

fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}
