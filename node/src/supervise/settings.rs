//! Supervision settings on the node: `supervision.get/set/status` over the
//! global defaults (warren.toml's `[supervision]`, or the node's own override
//! set by `config.set`: `defaults.rs`) and the per-agent overrides in the
//! catalog.

use console_api as api;
use serde_json::Value;

use crate::service::{NodeError, NodeResult};
use node_store::events::Event;

impl super::Supervisor {
    /// `supervision.get`: the global defaults, the agent's override and the
    /// effective policy (both keys of the lock shown).
    pub async fn supervision_get(&self, agent: Option<&str>) -> NodeResult<Value> {
        let cat = self.catalog.lock().await;
        let defaults = cat.supervision_defaults(&self.cfg.supervision);
        let Some(agent) = agent else {
            return Ok(serde_json::json!({ "defaults": defaults, "agent": null, "effective": null }));
        };
        cat.agent(agent)?;
        let over = cat.supervision.get(agent);
        let effective = supervision::resolve(defaults, over);
        Ok(serde_json::json!({ "defaults": defaults, "agent": over, "effective": effective }))
    }

    /// `supervision.set` (local-only): merges the given fields into the agent's
    /// override and stores it whole; announces `event.supervision.changed`.
    pub async fn supervision_set(&self, p: api::SupervisionSet) -> NodeResult<Value> {
        let mut cat = self.catalog.lock().await;
        cat.agent(&p.agent)?;
        let mut o = cat.supervision.get(&p.agent).cloned().unwrap_or_default();
        if let Some(e) = p.enabled {
            o.enabled = e;
        }
        for (class, action) in p.classes.unwrap_or_default() {
            let c: supervision::DialogClass = class
                .parse()
                .map_err(|e| NodeError::Invalid(format!("classes.{class}: {e}")))?;
            match action {
                None => {
                    o.classes.remove(&c);
                }
                Some(a) => {
                    let action: supervision::Action =
                        serde_json::from_value(Value::String(a.clone())).map_err(|_| {
                            NodeError::Invalid(format!("classes.{class}: {a:?} is not auto_approve, auto_deny or hold"))
                        })?;
                    o.classes.insert(c, action);
                }
            }
        }
        if let Some(m) = p.mail_mode {
            o.mail_mode = Some(
                serde_json::from_value(Value::String(m.clone()))
                    .map_err(|_| NodeError::Invalid(format!("mail_mode: {m:?} is not nudge or full_body")))?,
            );
        }
        if let Some(t) = p.nudge_text {
            o.nudge_text = Some(t);
        }
        if let Some(n) = p.stall_mins {
            o.stall_mins = Some(n);
        }
        if let Some(n) = p.nudge_retries {
            o.nudge_retries = Some(n);
        }
        if let Some(w) = p.expect_work {
            o.expect_work = w;
        }
        o.validate().map_err(|e| NodeError::Invalid(e.to_string()))?;
        let effective = supervision::resolve(cat.supervision_defaults(&self.cfg.supervision), Some(&o));
        let e = Event::SupervisionSet {
            agent: p.agent.clone(),
            policy: o.clone(),
        };
        self.commit(&mut cat, vec![e]).await?;
        drop(cat);
        self.publish(
            api::methods::EVENT_SUPERVISION_CHANGED,
            serde_json::json!({ "agent": p.agent, "override": o, "effective": effective }),
        );
        Ok(serde_json::json!({ "agent": o, "effective": effective }))
    }

    /// `supervision.status`: the master switch, each agent's opt-in and its
    /// last audit row.
    pub async fn supervision_status(&self, agent: Option<&str>) -> NodeResult<Value> {
        let (master, rows): (bool, Vec<(String, supervision::Policy)>) = {
            let cat = self.catalog.lock().await;
            if let Some(a) = agent {
                cat.agent(a)?;
            }
            let defaults = cat.supervision_defaults(&self.cfg.supervision);
            let rows = cat
                .agents
                .keys()
                .filter(|name| agent.is_none_or(|a| a == name.as_str()))
                .map(|name| (name.clone(), supervision::resolve(defaults, cat.supervision.get(name))))
                .collect();
            (defaults.enabled, rows)
        };
        let names: Vec<String> = rows.iter().map(|(n, _)| n.clone()).collect();
        let mut lasts = self.last_audit_rows(&names).await?;
        let mut agents = Vec::with_capacity(rows.len());
        for (name, policy) in rows {
            let last = lasts.remove(&name).unwrap_or(Value::Null);
            agents.push(serde_json::json!({
                "agent": name,
                "enabled": policy.enabled,
                "opted_in": policy.agent_opted_in,
                "last": last,
            }));
        }
        Ok(serde_json::json!({ "master": master, "agents": agents }))
    }
}

/// Learned approval rules (seed 000), stored per workspace as `approval_rule`
/// events folded into the catalog.
impl super::Supervisor {
    /// The workspace an agent's learned rules belong to (its workspace directory).
    pub(crate) fn rules_workspace(&self, agent: &str) -> String {
        self.agent_home_dirs(agent).1.to_string_lossy().into_owned()
    }

    /// The confirmed learned rules of a workspace, for `decide_dialog`.
    pub(crate) async fn learned_rules(&self, workspace: &str) -> Vec<supervision::LearnedRule> {
        let cat = self.catalog.lock().await;
        cat.approval_rules_of(workspace)
            .into_iter()
            .map(supervision::LearnedRule::confirmed)
            .collect()
    }

    /// `supervision.rules`: the learned rules of the agent's workspace.
    pub async fn supervision_rules(&self, agent: &str) -> NodeResult<Value> {
        let cat = self.catalog.lock().await;
        cat.agent(agent)?;
        let workspace = self.rules_workspace(agent);
        let rules = cat.approval_rules_of(&workspace);
        Ok(serde_json::json!({ "agent": agent, "workspace": workspace, "rules": rules }))
    }

    /// `supervision.learn` / `supervision.forget` (local-only: standing
    /// authority): learns or forgets a rule of the agent's workspace. Learning
    /// a known rule changes nothing.
    pub async fn supervision_learn(&self, agent: &str, pattern: &str, learned: bool, by: &str) -> NodeResult<Value> {
        let mut cat = self.catalog.lock().await;
        cat.agent(agent)?;
        let workspace = self.rules_workspace(agent);
        let e = cat.decide_approval_rule(&workspace, pattern, learned, by)?;
        let stored = match &e {
            Some(Event::ApprovalRule { pattern, .. }) => pattern.clone(),
            _ => node_store::validate::normal_pattern(pattern).map_err(|e| NodeError::Invalid(e.to_string()))?,
        };
        if let Some(e) = e {
            self.commit(&mut cat, vec![e]).await?;
        }
        Ok(serde_json::json!({ "agent": agent, "workspace": workspace, "pattern": stored, "learned": learned }))
    }
}
