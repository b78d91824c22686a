//! Usage, first slice: each turn's tokens and cost as the CLI itself reports
//! them (aider's analytics log), recorded as `usage_recorded` events and
//! summed per conversation by `usage.get`. A usage watch per live
//! conversation tails the harness's usage file like the transcript tails the
//! session file: every event carries the byte offset past its line, and a
//! relaunch reads on from the largest committed one. `usage.get` adds the
//! spend ledger's requests (`crate::spend`): at conversation scope those of
//! the conversation's CLI session, at agent and node scope only those, and
//! the quota windows the CLIs showed (`spend/quota.rs`).

use std::collections::BTreeSet;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::LedgerScope;
use crate::live::Live;
use crate::service::{NodeError, NodeResult};
use node_store::events::{Event, StoredEvent};

/// How often the usage file is looked at.
const POLL: Duration = Duration::from_millis(250);
/// Most bytes read from the usage file at once.
const MAX_READ: u64 = 1 << 20;

/// Sums of usage reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageTotals {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The sum of the reported costs.
    pub usd: f64,
    /// Models of reports that carried no cost.
    pub unpriced_models: BTreeSet<String>,
    pub turns: u64,
}

impl UsageTotals {
    /// Folds usage events (others are ignored).
    pub fn of<'a>(events: impl IntoIterator<Item = &'a StoredEvent>) -> UsageTotals {
        let mut t = UsageTotals::default();
        for e in events {
            if let Event::UsageRecorded {
                model,
                input,
                output,
                cache_read,
                cache_write,
                usd_reported,
                ..
            } = &e.event
            {
                t.turns += 1;
                t.input += input;
                t.output += output;
                t.cache_read += cache_read;
                t.cache_write += cache_write;
                match usd_reported {
                    Some(usd) => t.usd += usd,
                    None => {
                        t.unpriced_models.insert(model.clone());
                    }
                }
            }
        }
        t
    }

    /// The `usage.get` result (API.md's shape; `turns` added).
    pub fn to_wire(&self) -> Value {
        json!({
            "quota": [],
            "tokens": {
                "input": self.input,
                "cache_read": self.cache_read,
                "cache_write": self.cache_write,
                "output": self.output,
            },
            "usd": self.usd,
            "unpriced_models": self.unpriced_models,
            "turns": self.turns,
        })
    }
}

/// Complete lines of `bytes` with the offset just past each (`base` is
/// where `bytes` starts in the file); a final partial line is left.
fn complete_lines(bytes: &[u8], base: u64) -> Vec<(String, u64)> {
    let mut out = vec![];
    let mut at = base;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        if !line.ends_with(b"\n") {
            break;
        }
        at += line.len() as u64;
        out.push((String::from_utf8_lossy(&line[..line.len() - 1]).to_string(), at));
    }
    out
}

/// The file's bytes from `offset`, at most `MAX_READ`; empty when missing.
fn read_from(path: PathBuf, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut f = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
        Err(e) => return Err(e),
    };
    if f.metadata()?.len() <= offset {
        return Ok(vec![]);
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![];
    f.take(MAX_READ).read_to_end(&mut buf)?;
    Ok(buf)
}

impl super::Spend {
    /// Starts the usage watch of a live conversation whose harness reports
    /// usage to a file. It follows this CLI only: once the conversation's live
    /// CLI is another (paused, relaunched) it stops, and the next launch's
    /// watch reads on from the committed cursor.
    pub(crate) fn start_usage_watch(self: &Arc<Self>, id: &str) {
        let weak = Arc::downgrade(self);
        let id = id.to_string();
        tokio::spawn(async move {
            let Some((live, path, agent, model, mut offset)) = (match weak.upgrade() {
                Some(node) => node.usage_source(&id).await,
                None => None,
            }) else {
                return;
            };
            let mut tick = tokio::time::interval(POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
            loop {
                tick.tick().await;
                let Some(node) = weak.upgrade() else { return };
                if !node.live(&id).is_some_and(|now| Arc::ptr_eq(&now, &live)) {
                    return;
                }
                let read = tokio::task::spawn_blocking({
                    let path = path.clone();
                    move || read_from(path, offset)
                })
                .await;
                let bytes = match read {
                    Ok(Ok(b)) => b,
                    Ok(Err(e)) => {
                        tracing::warn!(conversation = %id, error = %e, "cannot read the CLI's usage file");
                        continue;
                    }
                    Err(_) => continue,
                };
                let mut events = vec![];
                for (line, cursor) in complete_lines(&bytes, offset) {
                    offset = cursor;
                    if let Some(u) = live.harness.parse_usage_line(&line) {
                        events.push(Event::UsageRecorded {
                            conversation: id.clone(),
                            agent: agent.clone(),
                            harness: live.harness.name().to_string(),
                            model: model.clone().or(u.model).unwrap_or_else(|| "unknown".into()),
                            input: u.input,
                            output: u.output,
                            cache_read: u.cache_read,
                            cache_write: u.cache_write,
                            usd_reported: u.usd,
                            cursor: Some(cursor),
                        });
                    }
                }
                if !events.is_empty() {
                    match node.store().append(events).await {
                        // Recorded: each report is charged to a budgeted agent.
                        Ok(stored) => {
                            for e in &stored {
                                node.budget_charge_recorded(&e.event).await;
                            }
                        }
                        Err(e) => {
                            // Not recorded: read those lines again next time.
                            tracing::error!(conversation = %id, error = %e, "could not record usage");
                            offset = node.store().usage_cursor(&id).await.ok().flatten().unwrap_or(0);
                        }
                    }
                }
            }
        });
    }

    /// What the usage watch of `id` follows: its live CLI, the usage file,
    /// the agent and its configured model, and where to read on from.
    async fn usage_source(&self, id: &str) -> Option<(Arc<Live>, PathBuf, String, Option<String>, u64)> {
        let live = self.live(id)?;
        let (resume_ref, model) = {
            let cat = self.catalog.lock().await;
            let c = cat.conversation(id).ok()?;
            let model = cat.agent(&c.agent).ok()?.record.model.clone().filter(|m| !m.is_empty());
            (c.resume_ref.clone().unwrap_or_default(), model)
        };
        let home = self.agent_dir(&live.agent).join("home");
        let path = live.harness.usage_file(&home, &resume_ref)?;
        let committed = match self.store().usage_cursor(id).await {
            Ok(c) => c.unwrap_or(0),
            Err(e) => {
                tracing::error!(conversation = id, error = %e, "cannot read the usage cursor");
                return None;
            }
        };
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        Some((live.clone(), path, live.agent.clone(), model, committed.min(len)))
    }

    /// `usage.get`: a conversation's reported usage and its ledger rows, or an
    /// agent's or the node's ledger rows, summed.
    pub async fn usage_get(&self, p: console_api::UsageGet) -> NodeResult<Value> {
        match p.scope.as_str() {
            "conversation" => {}
            "node" => return self.usage_from_ledger(LedgerScope::Node).await,
            "agent" => {
                let id =
                    p.id.filter(|i| !i.is_empty())
                        .ok_or_else(|| NodeError::Invalid("id: give the agent's name".into()))?;
                self.catalog.lock().await.agent(&id)?;
                return self.usage_from_ledger(LedgerScope::Agent(&id)).await;
            }
            other => {
                return Err(NodeError::Invalid(format!(
                    "scope: {other:?} is not one of \"conversation\", \"agent\", \"node\""
                )));
            }
        }
        let id =
            p.id.filter(|i| !i.is_empty())
                .ok_or_else(|| NodeError::Invalid("id: give the conversation's id".into()))?;
        self.catalog.lock().await.conversation(&id)?;
        let events = self.store().usage_of(&id).await?;
        let mut v = UsageTotals::of(&events).to_wire();
        // What the CLI reported (aider's turns) and what its session file
        // holds (the spend ledger: Claude Code, Codex) are summed.
        let ledger = self.usage_from_ledger(LedgerScope::Conversation(&id)).await?;
        for k in ["input", "cache_read", "cache_write", "output"] {
            let n = v["tokens"][k].as_u64().unwrap_or(0) + ledger["tokens"][k].as_u64().unwrap_or(0);
            v["tokens"][k] = json!(n);
        }
        v["usd"] = json!(v["usd"].as_f64().unwrap_or(0.0) + ledger["usd"].as_f64().unwrap_or(0.0));
        let unpriced: BTreeSet<String> = [&v, &ledger]
            .iter()
            .filter_map(|x| x["unpriced_models"].as_array())
            .flatten()
            .filter_map(|m| m.as_str().map(str::to_string))
            .collect();
        v["unpriced_models"] = json!(unpriced);
        v["quota"] = ledger["quota"].clone();
        v["requests"] = ledger["requests"].clone();
        v["pricing"] = ledger["pricing"].clone();
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(seq: u64, model: &str, input: u64, usd: Option<f64>) -> StoredEvent {
        StoredEvent {
            seq,
            ts: seq,
            event: Event::UsageRecorded {
                conversation: "c".into(),
                agent: "a".into(),
                harness: "aider".into(),
                model: model.into(),
                input,
                output: 2,
                cache_read: 1,
                cache_write: 0,
                usd_reported: usd,
                cursor: Some(seq * 10),
            },
        }
    }

    #[test]
    fn totals_sum_tokens_and_reported_costs() {
        let events = [
            usage(1, "gpt-4o-mini", 42, Some(0.25)),
            usage(2, "local", 10, None),
            usage(3, "gpt-4o-mini", 42, Some(0.5)),
        ];
        let t = UsageTotals::of(&events);
        assert_eq!((t.input, t.output, t.cache_read, t.turns), (94, 6, 3, 3));
        assert_eq!(t.usd, 0.75);
        assert_eq!(
            t.to_wire(),
            json!({
                "quota": [],
                "tokens": {"input": 94, "cache_read": 3, "cache_write": 0, "output": 6},
                "usd": 0.75,
                "unpriced_models": ["local"],
                "turns": 3,
            })
        );
        assert_eq!(UsageTotals::of(&[]).to_wire()["usd"], 0.0);
    }

    #[test]
    fn only_complete_lines_are_read_with_their_end_offsets() {
        assert_eq!(
            complete_lines(b"a\nbc\npartial", 100),
            vec![("a".to_string(), 102), ("bc".to_string(), 105)]
        );
        assert!(complete_lines(b"no newline", 0).is_empty());
    }
}
