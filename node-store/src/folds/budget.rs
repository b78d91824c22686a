//! The agents' budgets as a fold over the `budget_*` events (pure):
//! `Catalog::apply` hands each one here, so the state at start-up, after
//! `warren admin rebuild` and live are the same replay.

use std::collections::BTreeMap;

use ::spend::budget::{self, BudgetEvent, BudgetState, Fact, MAX_USD, Phase, usd_to_micros};

use crate::events::Event;

/// Per agent: its bucket and where it stands, and the conversation the last
/// decision was about.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    pub agents: BTreeMap<String, AgentBudget>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentBudget {
    pub state: BudgetState,
    /// The conversation the agent's last wait or exhaustion was about.
    pub conversation: Option<String>,
}

/// The agent and pure fact of a budget event, if it is one.
pub fn fact_of(e: &Event) -> Option<(&str, Option<&str>, Fact)> {
    Some(match e {
        Event::BudgetSet {
            agent,
            micros_per_hour,
            burst_micros,
        } => (
            agent,
            None,
            Fact::Set {
                micros_per_hour: *micros_per_hour,
                burst_micros: *burst_micros,
            },
        ),
        Event::BudgetToppedUp { agent, micros } => (agent, None, Fact::ToppedUp { micros: *micros }),
        Event::BudgetCharged {
            agent,
            conversation,
            micros,
            ..
        } => (agent, conversation.as_deref(), Fact::Charged { micros: *micros }),
        Event::BudgetWaiting {
            agent,
            conversation,
            retry_after_ms,
        } => (
            agent,
            conversation.as_deref(),
            Fact::Waiting {
                retry_after_ms: *retry_after_ms,
            },
        ),
        Event::BudgetResumed { agent, conversation } => (agent, conversation.as_deref(), Fact::Resumed),
        Event::BudgetExhausted { agent, conversation } => (agent, conversation.as_deref(), Fact::Exhausted),
        _ => return None,
    })
}

/// The node event recording `fact` for `agent` (the decisions `step` makes).
pub fn event_of(agent: &str, conversation: Option<String>, fact: Fact) -> Option<Event> {
    let agent = agent.to_string();
    Some(match fact {
        Fact::Waiting { retry_after_ms } => Event::BudgetWaiting {
            agent,
            conversation,
            retry_after_ms,
        },
        Fact::Resumed => Event::BudgetResumed { agent, conversation },
        Fact::Exhausted => Event::BudgetExhausted { agent, conversation },
        Fact::Set { .. } | Fact::ToppedUp { .. } | Fact::Charged { .. } => return None,
    })
}

impl Budgets {
    /// Folds one committed event at its time.
    pub fn apply(&mut self, ts: u64, e: &Event) {
        let Some((agent, conversation, fact)) = fact_of(e) else {
            return;
        };
        let entry = self.agents.entry(agent.to_string()).or_default();
        budget::apply(&mut entry.state, &BudgetEvent { at_ms: ts, fact });
        match fact {
            Fact::Waiting { .. } | Fact::Exhausted => entry.conversation = conversation.map(str::to_string),
            Fact::Resumed => entry.conversation = None,
            _ => {}
        }
    }

    /// An agent's budget state (no bucket: never charged, never blocked).
    pub fn of(&self, agent: &str) -> BudgetState {
        self.agents.get(agent).map(|a| a.state).unwrap_or_default()
    }

    /// Whether an agent has a bucket.
    pub fn has(&self, agent: &str) -> bool {
        self.agents.get(agent).is_some_and(|a| a.state.bucket.is_some())
    }

    /// Why a message to `agent` is refused now (its budget is not ok), if it
    /// is: sends are refused, not queued, while it waits or is exhausted.
    pub fn refuse_send(&self, agent: &str, now_ms: u64) -> Option<SendRefused> {
        match self.of(agent).phase {
            Phase::Ok => None,
            Phase::Waiting { until_ms } => Some(SendRefused {
                message: format!("paused for budget: agent {agent:?} waits for its spend bucket to accrue"),
                retry_after_ms: Some(until_ms.saturating_sub(now_ms).max(1)),
                state: "waiting",
            }),
            Phase::Exhausted => Some(SendRefused {
                message: format!(
                    "paused for budget: agent {agent:?}'s spend bucket is exhausted: top it up or raise its rate (budget.topup, budget.set)"
                ),
                retry_after_ms: None,
                state: "exhausted",
            }),
        }
    }
}

/// A send refused for budget (-32013): why, when to retry, and the state.
#[derive(Debug, Clone, PartialEq)]
pub struct SendRefused {
    pub message: String,
    pub retry_after_ms: Option<u64>,
    pub state: &'static str,
}

/// The wire `budget` label of a conversation whose budget is not ok.
pub fn label(phase: Phase) -> Option<String> {
    match phase {
        Phase::Ok => None,
        p => Some(p.as_str().to_string()),
    }
}

/// Dollars named `field`, checked: finite, `0..=MAX_USD`, in micro-dollars;
/// the error names the field.
pub fn usd_param(field: &str, usd: f64) -> Result<i64, String> {
    usd_to_micros(usd).ok_or_else(|| format!("{field}: {usd} is not an amount of dollars in 0..={MAX_USD}"))
}

/// The `budget_set` event of `agent.create {budget}`, checked.
pub fn create_event(agent: &str, b: &console_api::BudgetSpec) -> Result<Event, String> {
    Ok(Event::BudgetSet {
        agent: agent.to_string(),
        micros_per_hour: usd_param("budget.usd_per_hour", b.usd_per_hour)?,
        burst_micros: usd_param("budget.burst_usd", b.burst_usd)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_of_the_events_is_the_live_state() {
        let events = [
            Event::BudgetSet {
                agent: "a".into(),
                micros_per_hour: 36_000_000,
                burst_micros: 50_000,
            },
            Event::BudgetCharged {
                agent: "a".into(),
                conversation: Some("c".into()),
                micros: 70_000,
                requests: 3,
            },
            Event::BudgetWaiting {
                agent: "a".into(),
                conversation: Some("c".into()),
                retry_after_ms: 2_500,
            },
            Event::BudgetCharged {
                agent: "b".into(),
                conversation: None,
                micros: 1,
                requests: 1,
            },
        ];
        let mut live = Budgets::default();
        for (i, e) in events.iter().enumerate() {
            live.apply(i as u64 * 100, e);
        }
        let mut again = Budgets::default();
        for (i, e) in events.iter().enumerate() {
            again.apply(i as u64 * 100, e);
        }
        assert_eq!(live, again);
        assert_eq!(live.of("a").phase.as_str(), "waiting");
        assert_eq!(live.agents["a"].conversation.as_deref(), Some("c"));
        assert!(!live.has("b"), "a charge without a bucket sets none up");
        // Charged at 100 ms, then 100 ms at $0.01/s accrued.
        assert_eq!(live.of("a").available_micros(200), -19_000);
    }
}
