//! Per-agent spend-rate budgets ("wait, then ask"; issue 13 item 5). The
//! decisions are `spend::budget` (pure); the state is the catalog's fold of
//! the `budget_*` events (`state.rs`); this module is the IO around them:
//!
//! - charging: the spend ledger's inserted or upgraded request rows and
//!   aider's `usage_recorded` reports, priced with the node's price table,
//!   become one `budget_charged` event per commit and agent (the difference
//!   of a row's priced total, so a streamed row replaced by its complete
//!   version is charged once);
//! - enforcement: after every charge, set, top-up and timer, `budget_step`
//!   asks the bucket and records the decision when it changes where the
//!   budget stands (`budget_waiting`, `budget_resumed`, `budget_exhausted`);
//!   the agent's live conversation is frozen (its CLI's process group
//!   SIGSTOPped, warm) and its message queue held while it is not ok, and
//!   thawed when it is again;
//! - one timer task per waiting agent re-decides at its retry time;
//! - an exhaustion publishes one `event.budget.exhausted` (and a needs-you).
//!
//! `conversation.sendMessage` is refused with -32013 while the budget is not
//! ok (decided: refuse, not queue); nudges, mail and advice go through the
//! conversation's queue and wait there, as they wait for IDLE.

pub use node_store::folds::budget as state;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use ::spend::budget::{Fact, Phase, micros_to_usd, usd_to_micros};
use ::spend::{PriceTable, UsageRecord};
use console_api as api;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::service::{NodeError, NodeResult};
use node_store::events::Event;
use node_store::store::spend::LedgerChange;
use node_store::util::now_ms;

/// The budget's timers and what was logged once.
#[derive(Default)]
pub(crate) struct BudgetRuntime {
    /// Per waiting agent, the task that names it to the worker at its retry
    /// time (replaced, and the old one aborted, on every decision).
    timers: Mutex<HashMap<String, JoinHandle<()>>>,
    /// Agents whose wait is over, for the worker that decides again (a
    /// timer only names the agent: the decision runs in one place).
    due: std::sync::OnceLock<tokio::sync::mpsc::Sender<String>>,
}

/// What one agent is charged for one commit.
#[derive(Debug, Default)]
pub(crate) struct Charge {
    pub conversation: Option<String>,
    pub micros: i64,
    pub requests: u64,
}

/// Dollars named `field`, checked (`state::usd_param`).
fn usd_param(field: &str, usd: f64) -> NodeResult<i64> {
    state::usd_param(field, usd).map_err(NodeError::Invalid)
}

/// A request's cost in micro-dollars, `None` when its model has no price.
fn cost_micros(table: &PriceTable, r: &UsageRecord) -> Option<i64> {
    table.cost(r).map(|usd| (usd * 1_000_000.0).round() as i64)
}

impl super::Spend {
    /// `budget.get`.
    pub async fn budget_get(&self, agent: &str) -> NodeResult<Value> {
        let cat = self.catalog.lock().await;
        cat.agent(agent)?;
        let s = cat.budgets.of(agent);
        Ok(budget_wire(&s, now_ms()))
    }

    /// `budget.set` (local-only): a new rate and/or burst; the accrued level is kept.
    pub async fn budget_set(&self, p: api::BudgetSet) -> NodeResult<Value> {
        let rate = p.usd_per_hour.map(|u| usd_param("usd_per_hour", u)).transpose()?;
        let burst = p.burst_usd.map(|u| usd_param("burst_usd", u)).transpose()?;
        {
            let mut cat = self.catalog.lock().await;
            cat.agent(&p.agent)?;
            let old = cat.budgets.of(&p.agent).bucket;
            let (micros_per_hour, burst_micros) = match (rate, burst, old) {
                (None, None, _) => {
                    return Err(NodeError::Invalid(
                        "usd_per_hour: give usd_per_hour, burst_usd or both".into(),
                    ));
                }
                (Some(r), Some(b), _) => (r, b),
                (Some(r), None, Some(o)) => (r, o.burst_micros),
                (None, Some(b), Some(o)) => (o.micros_per_hour, b),
                (Some(_), None, None) => {
                    return Err(NodeError::Invalid(
                        "burst_usd: the agent has no budget yet: give both usd_per_hour and burst_usd".into(),
                    ));
                }
                (None, Some(_), None) => {
                    return Err(NodeError::Invalid(
                        "usd_per_hour: the agent has no budget yet: give both usd_per_hour and burst_usd".into(),
                    ));
                }
            };
            let e = Event::BudgetSet {
                agent: p.agent.clone(),
                micros_per_hour,
                burst_micros,
            };
            self.commit(&mut cat, vec![e]).await?;
        }
        self.budget_step(&p.agent).await;
        self.budget_get(&p.agent).await
    }

    /// `budget.topup` (local-only): adds exactly `usd` to the agent's bucket.
    pub async fn budget_topup(&self, p: api::BudgetTopup) -> NodeResult<Value> {
        let micros = usd_param("usd", p.usd)?;
        {
            let mut cat = self.catalog.lock().await;
            cat.agent(&p.agent)?;
            if !cat.budgets.has(&p.agent) {
                return Err(NodeError::Invalid(format!(
                    "agent: {:?} has no budget to top up (budget.set gives it one)",
                    p.agent
                )));
            }
            let e = Event::BudgetToppedUp {
                agent: p.agent.clone(),
                micros,
            };
            self.commit(&mut cat, vec![e]).await?;
        }
        self.budget_step(&p.agent).await;
        self.budget_get(&p.agent).await
    }

    /// Refuses a human's message while the agent's budget is not ok
    /// (-32013, with `retry_after_ms` when it accrues by itself).
    /// Charges the spend ledger's new and upgraded rows to their agents'
    /// buckets: the difference of each row's priced total.
    pub(crate) async fn budget_charge_ledger(&self, changes: &[LedgerChange], table: &PriceTable) {
        let mut per_agent: BTreeMap<String, Charge> = BTreeMap::new();
        {
            let cat = self.catalog.lock().await;
            for c in changes {
                // A sidechain replay of a message is not a new request.
                if c.after.sidechain || !cat.budgets.has(&c.agent) {
                    continue;
                }
                // No price: the indexer has told `Pricing` (logged once).
                let Some(after) = cost_micros(table, &c.after) else {
                    continue;
                };
                let before = c.before.as_ref().and_then(|b| cost_micros(table, b)).unwrap_or(0);
                let charge = per_agent.entry(c.agent.clone()).or_default();
                charge.micros += (after - before).max(0);
                if c.before.is_none() {
                    charge.requests += 1;
                }
                if c.conversation.is_some() {
                    charge.conversation = c.conversation.clone();
                }
            }
        }
        self.budget_charge(per_agent).await;
    }

    /// Charges one recorded `usage_recorded` report (aider's): its tokens
    /// priced with the node's table, or the CLI's own figure when the table
    /// has no price for its model.
    pub(crate) async fn budget_charge_recorded(&self, e: &Event) {
        let Event::UsageRecorded {
            conversation,
            agent,
            model,
            input,
            output,
            cache_read,
            cache_write,
            usd_reported,
            ..
        } = e
        else {
            return;
        };
        let r = UsageRecord {
            key: String::new(),
            harness: ::spend::Harness::Claude,
            message_id: None,
            request_id: None,
            sidechain: false,
            session_id: String::new(),
            model: model.clone(),
            timestamp_ms: 0,
            tokens: ::spend::Tokens {
                input: *input,
                cache_read: *cache_read,
                cache_write_5m: *cache_write,
                output: *output,
                ..Default::default()
            },
            web_search_requests: 0,
            complete: true,
            speed: ::spend::Speed::Standard,
            inference_geo: None,
            iterations: vec![],
        };
        self.budget_charge_usage(agent, conversation, &r, *usd_reported).await;
    }

    async fn budget_charge_usage(&self, agent: &str, conversation: &str, r: &UsageRecord, reported: Option<f64>) {
        if !self.catalog.lock().await.budgets.has(agent) {
            return;
        }
        let table = self.pricing.table();
        let micros = match cost_micros(&table, r).or_else(|| reported.and_then(usd_to_micros)) {
            Some(m) => m,
            None => {
                self.pricing.met_unknown_model(&r.model);
                return;
            }
        };
        let mut one = BTreeMap::new();
        one.insert(
            agent.to_string(),
            Charge {
                conversation: Some(conversation.to_string()),
                micros,
                requests: 1,
            },
        );
        self.budget_charge(one).await;
    }

    /// Records the charges (one event per agent) and decides again.
    async fn budget_charge(&self, per_agent: BTreeMap<String, Charge>) {
        let events: Vec<Event> = per_agent
            .iter()
            .filter(|(_, c)| c.micros > 0 || c.requests > 0)
            .map(|(agent, c)| Event::BudgetCharged {
                agent: agent.clone(),
                conversation: c.conversation.clone(),
                micros: c.micros,
                requests: c.requests,
            })
            .collect();
        if events.is_empty() {
            return;
        }
        {
            let mut cat = self.catalog.lock().await;
            if let Err(e) = self.commit(&mut cat, events).await {
                tracing::error!(error = %e, "could not record budget charges");
                return;
            }
        }
        for agent in per_agent.keys() {
            self.budget_step(agent).await;
        }
    }

    /// Asks the agent's bucket, records the decision if it changes where the
    /// budget stands, and makes the live conversation match it.
    pub(crate) async fn budget_step(&self, agent: &str) {
        let (phase, fact, conversation, s) = {
            let mut cat = self.catalog.lock().await;
            let before = cat.budgets.of(agent);
            if before.bucket.is_none() {
                return;
            }
            let conversation = cat.live_conversation_of(agent).map(|c| c.id.clone());
            let fact = before.step(now_ms(), self.cfg.budget_max_wait.as_millis() as u64);
            if let Some(f) = fact
                && let Some(e) = state::event_of(agent, conversation.clone(), f)
                && let Err(e) = self.commit(&mut cat, vec![e]).await
            {
                tracing::error!(agent, error = %e, "could not record a budget decision");
                return;
            }
            let s = cat.budgets.of(agent);
            (s.phase, fact, conversation, s)
        };
        self.budget_enforce(agent, phase).await;
        if fact == Some(Fact::Exhausted) {
            let payload = json!({
                "agent": agent,
                "conversation": conversation,
                "available_usd": micros_to_usd(s.available_micros(now_ms())),
                "usd_per_hour": s.bucket.map(|b| micros_to_usd(b.micros_per_hour)),
                "reason": "budget exhausted: top up, raise the rate or stop",
            });
            tracing::warn!(agent, "budget exhausted: a human must top up, raise the rate or stop");
            self.publish(api::methods::EVENT_BUDGET_EXHAUSTED, payload.clone());
            self.publish(api::methods::EVENT_SUPERVISION_NEEDS_YOU, payload);
        }
    }

    /// Freezes or thaws the agent's live conversation and (re)arms its timer.
    async fn budget_enforce(&self, agent: &str, phase: Phase) {
        let live: Vec<_> = self
            .live
            .lock()
            .map(|m| m.values().filter(|l| l.agent == agent).cloned().collect())
            .unwrap_or_default();
        for l in live {
            l.set_budget_phase(phase).await;
        }
        let Ok(mut timers) = self.budgets.timers.lock() else {
            return;
        };
        if let Some(t) = timers.remove(agent) {
            t.abort();
        }
        if let Phase::Waiting { until_ms } = phase
            && let Some(due) = self.budgets.due.get().cloned()
        {
            let agent = agent.to_string();
            let wait = std::time::Duration::from_millis(until_ms.saturating_sub(now_ms()));
            let key = agent.clone();
            let task = tokio::spawn(async move {
                tokio::time::sleep(wait).await;
                let _ = due.send(agent).await;
            });
            timers.insert(key, task);
        }
    }

    /// At start-up: starts the worker that decides again for agents whose
    /// wait is over (ends when the node drops), then decides every budgeted
    /// agent (a wait's timer is armed; a wait that is over resumes).
    pub(super) async fn resume_budget_timers(self: &std::sync::Arc<Self>) {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(256);
        if self.budgets.due.set(tx).is_ok() {
            let weak = std::sync::Arc::downgrade(self);
            tokio::spawn(async move {
                while let Some(agent) = rx.recv().await {
                    let Some(node) = weak.upgrade() else { return };
                    node.budget_step(&agent).await;
                }
            });
        }
        let agents: Vec<String> = {
            let cat = self.catalog.lock().await;
            cat.budgets
                .agents
                .iter()
                .filter(|(_, a)| a.state.bucket.is_some())
                .map(|(n, _)| n.clone())
                .collect()
        };
        for a in agents {
            self.budget_step(&a).await;
        }
    }

    /// A conversation went live: it starts frozen if its agent's budget is
    /// not ok.
    pub(crate) async fn budget_on_launch(&self, live: &crate::live::Live) {
        let phase = self.catalog.lock().await.budgets.of(&live.agent).phase;
        if phase != Phase::Ok {
            live.set_budget_phase(phase).await;
        }
    }
}

/// `budget.get`'s answer.
fn budget_wire(s: &::spend::budget::BudgetState, now: u64) -> Value {
    match s.bucket {
        None => json!({
            "usd_per_hour": null, "burst_usd": null, "available_usd": null, "state": "ok", "budgeted": false,
        }),
        Some(b) => {
            let mut v = json!({
                "usd_per_hour": micros_to_usd(b.micros_per_hour),
                "burst_usd": micros_to_usd(b.burst_micros),
                "available_usd": micros_to_usd(b.level_at(now)),
                "state": s.phase.as_str(),
                "budgeted": true,
            });
            if let Phase::Waiting { until_ms } = s.phase {
                v["retry_after_ms"] = json!(until_ms.saturating_sub(now));
            }
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_name_their_field() {
        assert_eq!(usd_param("usd", 2.5).ok(), Some(2_500_000));
        for bad in [-1.0, f64::NAN, 1e7] {
            match usd_param("burst_usd", bad) {
                Err(NodeError::Invalid(m)) => assert!(m.starts_with("burst_usd:"), "{m}"),
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_wire_shape() {
        let s = ::spend::budget::BudgetState::default();
        assert_eq!(budget_wire(&s, 0)["state"], "ok");
        let mut s = ::spend::budget::BudgetState::default();
        ::spend::budget::apply(
            &mut s,
            &::spend::budget::BudgetEvent {
                at_ms: 0,
                fact: Fact::Set {
                    micros_per_hour: 3_000_000,
                    burst_micros: 1_000_000,
                },
            },
        );
        let v = budget_wire(&s, 0);
        assert_eq!(v["usd_per_hour"], 3.0);
        assert_eq!(v["available_usd"], 1.0);
    }
}
