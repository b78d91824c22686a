//! The node's spend ledger (issue 13): a background indexer reads the session
//! stores of the CLIs the node homes (`<home>/.claude`, Claude Code's
//! `CLAUDE_CONFIG_DIR`; `<home>/.codex`, a Codex home) with `spend::scan`,
//! each file continuing from its saved `FileState` so only appended bytes are
//! parsed, and writes what it found in one transaction per tick
//! (`store/spend.rs`). `spend.history` and `usage.get` at agent and node scope
//! read the ledger and price it at query time.
//!
//! Pricing (`pricing.rs`): the table the node holds now, from the live
//! endpoint, the store's cache of its last good answer, or the bundled table;
//! a model the table has no price for asks for an early refresh. Quota
//! (`quota.rs`): the rate-limit windows the CLIs show, as `usage.get` metrics.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use ::spend::scan::{self, Outcome};
use ::spend::{Days, FileState, RecordSet, UsageRecord};
use serde_json::{Value, json};

use crate::service::{Node, NodeError, NodeResult};

pub mod budget;
pub mod pricing;
pub mod quota;
pub mod usage;
use node_store::store::spend::{LedgerBatch, LedgerFilter, LedgerProblem, LedgerQuota, LedgerRecord};

/// How often the session stores are looked at.
const TICK: Duration = Duration::from_secs(2);
/// Most files read (not merely stat'ed) in one tick; the rest wait for the next.
const MAX_FILES_PER_TICK: usize = 64;
/// Most bytes parsed in one tick (a file is finished once started).
const MAX_BYTES_PER_TICK: u64 = 64 << 20;
/// Most files of failed reads remembered (so an unchanged broken file is not
/// read again every tick).
const MAX_FAILED_REMEMBERED: usize = 10_000;
/// The config dirs in an agent's home the indexer looks in.
const STORES: [&str; 2] = [".claude", ".codex"];

/// An agent's session stores: its Claude config dir and Codex home, and
/// each conversation's own Codex home (`.codex/threads/<ref>`).
fn stores_of(home: &Path) -> Vec<(PathBuf, Option<String>)> {
    let mut dirs: Vec<(PathBuf, Option<String>)> = STORES
        .iter()
        .map(|d| home.join(d))
        .filter(|d| d.is_dir())
        .map(|d| (d, None))
        .collect();
    let threads = home.join(node_runtime::harness::codex::THREADS_DIR);
    if let Ok(entries) = std::fs::read_dir(&threads) {
        let mut own: Vec<(PathBuf, Option<String>)> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| Some((e.path(), Some(e.file_name().to_str()?.to_string()))))
            .collect();
        own.sort();
        dirs.extend(own);
    }
    dirs
}

/// One agent's side of a pass: where to look and what was saved.
struct AgentStores {
    agent: String,
    /// Each store, with the session reference of the conversation it
    /// belongs to when it is one conversation's own (a Codex thread home).
    dirs: Vec<(PathBuf, Option<String>)>,
    saved: HashMap<String, FileState>,
}

/// A file whose last read failed, by path: its (size, mtime) then.
type Failed = HashMap<String, (u64, i64)>;

/// What the indexer task keeps between ticks: each agent's committed file
/// states (read from the store once per agent, then kept up to date after
/// each commit, so a tick reads no state back) and the failed files.
#[derive(Default)]
struct Index {
    saved: HashMap<String, HashMap<String, FileState>>,
    failed: Failed,
}

fn stat_key(path: &Path) -> Option<(u64, i64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path)
        .ok()
        .map(|m| (m.len(), m.mtime_nsec() + m.mtime() * 1_000_000_000))
}

/// Reads what changed in the agents' session stores, within the tick's budget.
/// Returns the batch to write and the new states to keep once it is written.
fn index_pass(
    agents: &[AgentStores],
    conv_of: &HashMap<String, String>,
    failed: &mut Failed,
) -> (LedgerBatch, Vec<(String, String, FileState)>) {
    let mut batch = LedgerBatch::default();
    let mut states = vec![];
    let mut buf = Vec::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    for a in agents {
        for (dir, owner) in &a.dirs {
            // A record's own session id names its conversation; in a
            // conversation's own store, the store does.
            let conversation_of = |session: &str| {
                conv_of
                    .get(session)
                    .or_else(|| owner.as_ref().and_then(|r| conv_of.get(r)))
                    .cloned()
            };
            // A home whose CLI has written no session yet has no known layout.
            let Ok(roots) = scan::detect(dir) else { continue };
            for root in roots {
                let list = match scan::list(&root) {
                    Ok(l) => l,
                    Err(e) => {
                        tracing::warn!(agent = %a.agent, error = %e, "a session store would not list");
                        continue;
                    }
                };
                for f in list {
                    if files >= MAX_FILES_PER_TICK || bytes >= MAX_BYTES_PER_TICK {
                        return (batch, states);
                    }
                    let path = f.path.display().to_string();
                    if let Some(seen) = failed.get(&path)
                        && stat_key(&f.path).as_ref() == Some(seen)
                    {
                        continue;
                    }
                    let s = scan::scan_file(&f, a.saved.get(&path), &mut buf);
                    if s.outcome == Outcome::Unchanged {
                        continue;
                    }
                    files += 1;
                    bytes += s.parsed.stats.bytes;
                    for sample in s.parsed.quota {
                        batch.quota.push(LedgerQuota {
                            agent: a.agent.clone(),
                            conversation: conversation_of(&sample.session_id),
                            sample,
                        });
                    }
                    for record in s.parsed.records {
                        let conversation = conversation_of(&record.session_id);
                        batch.records.push(LedgerRecord {
                            agent: a.agent.clone(),
                            conversation,
                            record,
                        });
                    }
                    if let Some(e) = &s.error {
                        if failed.len() < MAX_FAILED_REMEMBERED
                            && let Some(k) = stat_key(&f.path)
                        {
                            failed.insert(path.clone(), k);
                        }
                        batch.problems.push(LedgerProblem {
                            path: path.clone(),
                            agent: a.agent.clone(),
                            refused: 0,
                            reason: e.to_string(),
                        });
                    } else if s.parsed.stats.refused > 0 {
                        let reason = s
                            .parsed
                            .problems
                            .first()
                            .map(|p| format!("{} (at byte {})", p.error, p.offset))
                            .unwrap_or_else(|| "refused lines".into());
                        batch.problems.push(LedgerProblem {
                            path: path.clone(),
                            agent: a.agent.clone(),
                            refused: s.parsed.stats.refused,
                            reason,
                        });
                    } else {
                        failed.remove(&path);
                        batch.clean.push(path.clone());
                    }
                    if let Some(state) = s.state {
                        batch.files.push((
                            path.clone(),
                            a.agent.clone(),
                            f.harness.as_str().to_string(),
                            state.to_json(),
                        ));
                        states.push((a.agent.clone(), path, state));
                    }
                }
            }
        }
    }
    (batch, states)
}

/// Whose usage `usage.get` sums from the ledger.
#[derive(Debug, Clone, Copy)]
pub(crate) enum LedgerScope<'a> {
    Node,
    Agent(&'a str),
    Conversation(&'a str),
}

impl<'a> LedgerScope<'a> {
    /// The ledger rows of this scope, of every day.
    fn filter(self) -> LedgerFilter<'a> {
        let (agent, conversation) = match self {
            LedgerScope::Node => (None, None),
            LedgerScope::Agent(a) => (Some(a), None),
            LedgerScope::Conversation(c) => (None, Some(c)),
        };
        LedgerFilter {
            since_day: None,
            until_day: None,
            agent,
            conversation,
        }
    }
}

/// Checks a `YYYY-MM-DD` day named `field`.
fn day_param(field: &str, d: &str) -> NodeResult<()> {
    let ok = d.len() == 10 && ::spend::time::parse_rfc3339_ms(&format!("{d}T00:00:00Z")).is_some();
    if ok {
        Ok(())
    } else {
        Err(NodeError::Invalid(format!(
            "{field}: {d:?} is not a UTC day (YYYY-MM-DD)"
        )))
    }
}

/// The records that count (the `RecordSet` rule), each with its agent.
fn counted(rows: Vec<(String, UsageRecord)>) -> Vec<(String, UsageRecord)> {
    let mut agent_of: HashMap<String, String> = HashMap::with_capacity(rows.len());
    let mut set = RecordSet::new();
    for (agent, r) in rows {
        agent_of.insert(r.key.clone(), agent);
        set.insert(r);
    }
    set.counted()
        .into_iter()
        .map(|r| (agent_of.get(&r.key).cloned().unwrap_or_default(), r.clone()))
        .collect()
}

/// Spend on this node: a subsystem over the core, owning the price table,
/// the ledger's indexer, each live conversation's usage watch and the
/// agents' budget timers (the budget state itself is the catalog's fold).
pub struct Spend {
    node: Arc<Node>,
    /// `[pricing]`: the live price source.
    pricing_settings: pricing::PricingSettings,
    /// The price table the ledger is priced by now (`pricing.rs`).
    pricing: pricing::Pricing,
    /// The agents' budget timers (`budget.rs`).
    budgets: budget::BudgetRuntime,
}

impl std::ops::Deref for Spend {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Spend {
    pub fn new(node: Arc<Node>, pricing_settings: pricing::PricingSettings) -> Arc<Spend> {
        Arc::new(Spend {
            node,
            pricing_settings,
            pricing: Default::default(),
            budgets: Default::default(),
        })
    }

    /// Starts the ledger's indexer and the price refresh, and decides every
    /// budgeted agent again (before any conversation is re-adopted).
    pub async fn start(self: &Arc<Self>) {
        self.start_spend_index();
        self.start_pricing();
        self.resume_budget_timers().await;
    }

    /// Starts the indexer: every [`TICK`], one bounded pass over the homed
    /// agents' session stores and one transaction. Ends when the node drops.
    fn start_spend_index(self: &Arc<Self>) {
        let weak: Weak<Spend> = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut index = Index::default();
            let mut every = tokio::time::interval(TICK);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let Some(node) = weak.upgrade() else { return };
                if let Err(e) = node.spend_tick(&mut index).await {
                    tracing::warn!(error = %e, "the spend ledger's tick failed; it is tried again");
                }
            }
        });
    }

    /// One indexing pass and its one transaction. Not cancel-safe: a dropped
    /// future loses the failed-file memory of this tick (harmless: those
    /// files are read again).
    async fn spend_tick(&self, index: &mut Index) -> Result<(), String> {
        let (names, conv_of) = {
            let cat = self.catalog.lock().await;
            // No agent, no session store: nothing to read (and no thread to wake).
            if cat.agents.is_empty() {
                return Ok(());
            }
            let names: Vec<String> = cat.agents.keys().cloned().collect();
            let conv_of: HashMap<String, String> = cat
                .conversations
                .values()
                .filter_map(|c| c.resume_ref.clone().map(|r| (r, c.id.clone())))
                .collect();
            (names, conv_of)
        };
        let mut agents = Vec::with_capacity(names.len());
        for agent in names {
            let saved = match index.saved.remove(&agent) {
                Some(s) => s,
                None => {
                    // A state that no longer reads (another version) means a
                    // reparse; the upsert by key keeps the ledger consistent.
                    let rows = self.store().spend_files(&agent).await.map_err(|e| e.to_string())?;
                    rows.into_iter()
                        .filter_map(|(p, s)| FileState::from_json(&s).ok().map(|st| (p, st)))
                        .collect()
                }
            };
            let (home, _) = self.agent_home_dirs(&agent);
            let dirs = stores_of(&home);
            agents.push(AgentStores { agent, dirs, saved });
        }
        let mut failed = std::mem::take(&mut index.failed);
        let pass = tokio::task::spawn_blocking(move || {
            let (batch, states) = index_pass(&agents, &conv_of, &mut failed);
            (agents, batch, states, failed)
        })
        .await;
        let (agents, batch, states, failed) = pass.map_err(|e| format!("the indexing pass panicked: {e}"))?;
        index.failed = failed;
        for a in agents {
            index.saved.insert(a.agent, a.saved);
        }
        if batch.is_empty() {
            return Ok(());
        }
        let changes = self.store().spend_write(&batch).await.map_err(|e| e.to_string())?;
        let table = self.pricing.table();
        for l in &batch.records {
            if table.lookup(&l.record.model).is_none() {
                self.pricing.met_unknown_model(&l.record.model);
            }
        }
        // Committed: the new states are the ones to continue from.
        for (agent, path, state) in states {
            index.saved.entry(agent).or_default().insert(path, state);
        }
        // The new and upgraded requests are charged to budgeted agents.
        if !changes.is_empty() {
            self.budget_charge_ledger(&changes, &table).await;
        }
        Ok(())
    }

    /// Where this node's prices come from now (`node.info`'s `pricing`).
    pub fn pricing_wire(&self) -> Value {
        self.pricing.to_wire(&self.pricing.table())
    }

    /// `spend.history`: the ledger's counted requests per UTC day, model and
    /// agent, priced now.
    pub async fn spend_history(&self, p: console_api::SpendHistory) -> NodeResult<Value> {
        day_param("since_day", &p.since_day)?;
        if let Some(u) = &p.until_day {
            day_param("until_day", u)?;
        }
        let agent = p.agent.filter(|a| !a.is_empty());
        let filter = LedgerFilter {
            since_day: Some(&p.since_day),
            until_day: p.until_day.as_deref(),
            agent: agent.as_deref(),
            conversation: None,
        };
        let rows = counted(self.store().spend_requests(&filter).await?);
        let table = self.pricing.table();
        let days = Days {
            since: Some(p.since_day.clone()),
            until: p.until_day.clone(),
        };
        let summary = ::spend::daily(rows.iter().map(|(a, r)| (a.as_str(), r)), &table, &days);
        let unparseable = self.store().spend_problem_count(agent.as_deref()).await?;
        Ok(json!({
            "days": summary.rows.iter().map(|r| json!({
                "day": r.day, "model": r.model, "agent": r.agent,
                "input": r.input, "cache_read": r.cache_read,
                "cache_write_5m": r.cache_write_5m, "cache_write_1h": r.cache_write_1h,
                "output": r.output, "requests": r.requests, "web_search_requests": r.web_search_requests,
                "usd": r.usd, "priced": r.priced,
            })).collect::<Vec<_>>(),
            "usd": summary.usd,
            "unpriced_models": summary.unpriced_models,
            "unparseable_files": unparseable,
            "pricing": self.pricing.to_wire(&table),
        }))
    }

    /// `usage.get` from the ledger: the counted requests of the node, an
    /// agent or a conversation (its CLI session), tokens and dollars summed.
    pub(crate) async fn usage_from_ledger(&self, scope: LedgerScope<'_>) -> NodeResult<Value> {
        let filter = scope.filter();
        let rows = counted(self.store().spend_requests(&filter).await?);
        let table = self.pricing.table();
        let (mut input, mut cache_read, mut cache_write, mut output, mut usd) = (0u64, 0u64, 0u64, 0u64, 0.0);
        let mut unpriced = BTreeSet::new();
        for (_, r) in &rows {
            let t = &r.tokens;
            input += t.input;
            cache_read += t.cache_read;
            cache_write += t.cache_write_5m + t.cache_write_1h;
            output += t.output;
            match table.cost(r) {
                Some(c) => usd += c,
                None => {
                    unpriced.insert(r.model.clone());
                }
            }
        }
        let quota = self.quota_of(scope).await?;
        Ok(json!({
            "quota": quota,
            "tokens": { "input": input, "cache_read": cache_read, "cache_write": cache_write, "output": output },
            "usd": usd,
            "unpriced_models": unpriced,
            "requests": rows.len(),
            "pricing": self.pricing.to_wire(&table),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_checked_and_name_their_field() {
        assert!(day_param("since_day", "2026-01-31").is_ok());
        for bad in ["2026-1-31", "yesterday", "2026-13-01", "2026-01-31T00:00:00Z", ""] {
            match day_param("until_day", bad) {
                Err(NodeError::Invalid(m)) => assert!(m.starts_with("until_day:"), "{m}"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
