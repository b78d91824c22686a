//! Codex rollouts: `sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`,
//! `archived_sessions/`, either possibly compressed as `.jsonl.zst`. Each line
//! is `{"timestamp", "type", "payload"}`:
//! - `session_meta`: the session's `id`, `cli_version`, and for a fork
//!   `forked_from_id` (or a subagent's `source.subagent.thread_spawn`);
//! - `turn_context`: the `model` (and in newer versions a `turn_id`) that
//!   prevails until the next one;
//! - `event_msg` with `payload.type == "token_count"`: `info.total_token_usage`
//!   (cumulative) and `info.last_token_usage` (this request), each
//!   `{input_tokens, cached_input_tokens, output_tokens,
//!   reasoning_output_tokens}`, and `rate_limits` (`primary`, `secondary`).
//!
//! Buckets: uncached input = `input_tokens - cached_input_tokens -
//! cache_write_input_tokens` (both are parts of `input_tokens`), cache read
//! = `cached_input_tokens`, cache write = `cache_write_input_tokens` (when a
//! version writes it; priced as a 5-minute write), output = `output_tokens`
//! (reasoning is part of it). A request's tokens are `last_token_usage`, or
//! the advance of the totals when a version writes no `last_token_usage`. A
//! `token_count` whose totals equal the previous one is a re-emit and counts
//! nothing; totals that go down start a new epoch (the key carries it, so
//! counts after a reset never collide with those before it).
//!
//! A fork's file first replays its parent's history (copied lines, re-stamped
//! at the fork instant). Those `token_count`s move the baseline but are not
//! counted: the replay ends at the first `turn_context` whose UUIDv7 `turn_id`
//! is not older than the fork, or, without such ids, at the first
//! `token_count` stamped more than [`FORK_REPLAY_WINDOW_MS`] after the fork.
//! Lines of other kinds are not decoded (counted as skipped).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::error::SpendError;
use crate::fields::{
    Count, MAX_TOKENS_CUMULATIVE, MAX_TOKENS_PER_REQUEST, check, kind_of_untyped, looks_like_object, short, utf8,
};
use crate::parse::{LineAt, Parsed, SessionParser};
use crate::record::{Harness, QuotaSample, Speed, Tokens, UsageRecord};
use crate::time::{parse_rfc3339_ms, uuid_v7_ms};

/// How long after a fork's creation its copied history may still be written.
pub const FORK_REPLAY_WINDOW_MS: i64 = 2_500;

/// The model of usage seen before any `turn_context` named one (it is
/// counted, and flagged unpriced).
pub const UNKNOWN_MODEL: &str = "unknown";

/// The Codex parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct CodexParser;

/// What a rollout's parse carries from line to line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CodexState {
    /// The file's own session id (its first `session_meta`).
    session: Option<String>,
    cli_version: Option<String>,
    model: Option<String>,
    prev_total: Option<Totals>,
    epoch: u32,
    /// Set while a fork's copied history is being read.
    fork: Option<ForkGate>,
    last_quota: Vec<(String, u64, Option<i64>)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
struct ForkGate {
    started_ms: i64,
    /// What the prevailing `turn_context`'s UUIDv7 says: Some(true) = copied.
    turn_copied: Option<bool>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Totals {
    input: u64,
    cached: u64,
    cache_write: u64,
    output: u64,
    reasoning: u64,
}

impl Totals {
    fn below(&self, prev: &Totals) -> bool {
        self.input < prev.input
            || self.cached < prev.cached
            || self.cache_write < prev.cache_write
            || self.output < prev.output
            || self.reasoning < prev.reasoning
    }

    fn minus(&self, prev: &Totals) -> Totals {
        Totals {
            input: self.input - prev.input,
            cached: self.cached - prev.cached,
            cache_write: self.cache_write - prev.cache_write,
            output: self.output - prev.output,
            reasoning: self.reasoning - prev.reasoning,
        }
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    payload: Option<Payload<'a>>,
}

#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    // session_meta
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    cli_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    forked_from_id: Option<Cow<'a, str>>,
    #[serde(default)]
    source: Option<serde_json::Value>,
    // turn_context
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    turn_id: Option<Cow<'a, str>>,
    // token_count
    #[serde(default)]
    info: Option<Info>,
    /// Read leniently: a change in its shape must not cost the tokens.
    #[serde(default)]
    rate_limits: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Info {
    total_token_usage: Option<CodexUsage>,
    last_token_usage: Option<CodexUsage>,
}

#[derive(Deserialize)]
struct CodexUsage {
    input_tokens: Option<Count>,
    cached_input_tokens: Option<Count>,
    cache_write_input_tokens: Option<Count>,
    output_tokens: Option<Count>,
    reasoning_output_tokens: Option<Count>,
}

impl SessionParser for CodexParser {
    type State = CodexState;
    const HARNESS: Harness = Harness::Codex;

    fn parse_line(&self, state: &mut CodexState, line: &[u8], at: LineAt<'_>, out: &mut Parsed) {
        let text = match utf8(line) {
            Ok(t) => t,
            Err(e) => return out.refuse(at.offset, e),
        };
        let interesting = [&b"\"token_count\""[..], b"\"turn_context\"", b"\"session_meta\""]
            .iter()
            .any(|needle| memchr::memmem::find(line, needle).is_some());
        if !interesting {
            if looks_like_object(text) {
                out.stats.skipped += 1;
            } else {
                out.refuse(
                    at.offset,
                    SpendError::InvalidJson {
                        detail: format!("not one JSON object: {:?}", crate::parse::excerpt(line, 40)),
                    },
                );
            }
            return;
        }
        let env: Envelope<'_> = match serde_json::from_str(text) {
            Ok(e) => e,
            Err(e) => {
                match kind_of_untyped(text) {
                    Ok(Some(k)) if k == "session_meta" || k == "turn_context" || k == "event_msg" => {
                        out.refuse(at.offset, SpendError::InvalidJson { detail: short(&e) })
                    }
                    Ok(_) => out.stats.skipped += 1,
                    Err(reason) => out.refuse(at.offset, reason),
                }
                return;
            }
        };
        let Some(payload) = env.payload else {
            out.stats.skipped += 1;
            return;
        };
        let ts = env.timestamp.as_deref().and_then(parse_rfc3339_ms);
        match env.kind.as_deref() {
            Some("session_meta") => {
                state.session_meta(&payload, ts);
                out.stats.other += 1;
            }
            Some("turn_context") => {
                state.turn_context(&payload);
                out.stats.other += 1;
            }
            Some("event_msg") if payload.kind.as_deref() == Some("token_count") => {
                let Some(ts) = ts else {
                    let found = env.timestamp.as_deref().unwrap_or("").to_string();
                    return out.refuse(at.offset, SpendError::BadTimestamp { found });
                };
                if let Err(e) = state.token_count(&payload, ts, at, out) {
                    out.refuse(at.offset, e);
                }
            }
            _ => out.stats.skipped += 1,
        }
    }
}

impl CodexState {
    /// The session id of the file's own `session_meta`, once read.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The `cli_version` that wrote the file, once read.
    pub fn cli_version(&self) -> Option<&str> {
        self.cli_version.as_deref()
    }

    /// The model of the prevailing `turn_context`.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// True while the file is a fork whose copied history is still being read.
    pub fn in_fork_replay(&self) -> bool {
        self.fork.is_some()
    }

    fn session_id<'s>(&'s self, hint: &'s str) -> &'s str {
        self.session.as_deref().unwrap_or(hint)
    }

    fn session_meta(&mut self, p: &Payload<'_>, envelope_ms: Option<i64>) {
        if self.session.is_some() {
            // A later meta is a parent's, copied in by a fork.
            return;
        }
        let Some(id) = p.id.as_deref() else { return };
        self.session = Some(id.to_string());
        self.cli_version = p.cli_version.as_deref().map(str::to_string);
        let spawned = p
            .source
            .as_ref()
            .and_then(|s| s.pointer("/subagent/thread_spawn/parent_thread_id"))
            .is_some();
        if p.forked_from_id.is_some() || spawned {
            let started = p
                .timestamp
                .as_deref()
                .and_then(parse_rfc3339_ms)
                .or(envelope_ms)
                .or_else(|| uuid_v7_ms(id));
            if let Some(started_ms) = started {
                self.fork = Some(ForkGate {
                    started_ms,
                    turn_copied: None,
                });
            }
        }
    }

    fn turn_context(&mut self, p: &Payload<'_>) {
        if let Some(m) = p.model.as_deref().filter(|m| !m.is_empty()) {
            self.model = Some(m.to_string());
        }
        if let Some(gate) = &mut self.fork {
            match p.turn_id.as_deref().and_then(uuid_v7_ms) {
                Some(t) if t >= gate.started_ms => self.fork = None,
                Some(_) => gate.turn_copied = Some(true),
                None => gate.turn_copied = None,
            }
        }
    }

    /// True while the line at `ts` is part of a fork's copied history.
    fn replaying(&mut self, ts: i64) -> bool {
        let Some(gate) = self.fork else { return false };
        let copied = match gate.turn_copied {
            Some(c) => c,
            None => ts <= gate.started_ms + FORK_REPLAY_WINDOW_MS,
        };
        if !copied {
            self.fork = None;
        }
        copied
    }

    fn token_count(&mut self, p: &Payload<'_>, ts: i64, at: LineAt<'_>, out: &mut Parsed) -> Result<(), SpendError> {
        let replay = self.replaying(ts);
        if !replay && let Some(limits) = &p.rate_limits {
            self.quota(limits, ts, at, out);
        }
        let total = match p.info.as_ref().and_then(|i| i.total_token_usage.as_ref()) {
            Some(u) => Some(totals(u, MAX_TOKENS_CUMULATIVE, "total_token_usage")?),
            None => None,
        };
        let last = match p.info.as_ref().and_then(|i| i.last_token_usage.as_ref()) {
            Some(u) => Some(totals(u, MAX_TOKENS_PER_REQUEST, "last_token_usage")?),
            None => None,
        };
        let (usage, key) = match (total, last) {
            (None, None) => {
                out.stats.other += 1;
                return Ok(());
            }
            (Some(t), _) if self.prev_total == Some(t) => {
                out.stats.reemits += 1;
                return Ok(());
            }
            (Some(t), last) => {
                let reset = self.prev_total.is_some_and(|p| t.below(&p));
                if reset {
                    self.epoch += 1;
                }
                let advance = match self.prev_total {
                    Some(p) if !reset => t.minus(&p),
                    _ => t,
                };
                self.prev_total = Some(t);
                let key = format!(
                    "codex:{}:{}:{}:{}:{}",
                    self.session_id(at.session_hint),
                    self.epoch,
                    t.input,
                    t.cached,
                    t.output
                );
                (last.unwrap_or(advance), key)
            }
            (None, Some(l)) => (l, format!("codex:{}:@{}", self.session_id(at.session_hint), at.offset)),
        };
        if replay {
            out.stats.replayed += 1;
            return Ok(());
        }
        if usage.cached + usage.cache_write > usage.input {
            return Err(SpendError::Inconsistent {
                detail: format!(
                    "{} cached + {} cache-write input tokens of {} input",
                    usage.cached, usage.cache_write, usage.input
                ),
            });
        }
        let tokens = Tokens {
            // Reads and writes are both parts of `input_tokens`.
            input: usage.input - usage.cached - usage.cache_write,
            cache_read: usage.cached,
            cache_write_5m: usage.cache_write,
            cache_write_1h: 0,
            output: usage.output,
            reasoning: usage.reasoning.min(usage.output),
        };
        if tokens.total() == 0 {
            out.stats.other += 1;
            return Ok(());
        }
        out.stats.usage_lines += 1;
        out.records.push(UsageRecord {
            key,
            harness: Harness::Codex,
            message_id: None,
            request_id: None,
            sidechain: false,
            session_id: self.session_id(at.session_hint).to_string(),
            model: self.model.clone().unwrap_or_else(|| UNKNOWN_MODEL.to_string()),
            timestamp_ms: ts,
            tokens,
            web_search_requests: 0,
            complete: true,
            speed: Speed::Standard,
            inference_geo: None,
            iterations: vec![],
        });
        Ok(())
    }

    fn quota(&mut self, limits: &serde_json::Value, ts: i64, at: LineAt<'_>, out: &mut Parsed) {
        for name in ["primary", "secondary"] {
            let Some(w) = limits.get(name).filter(|w| w.is_object()) else {
                continue;
            };
            let Some(used) = w
                .get("used_percent")
                .and_then(serde_json::Value::as_f64)
                .filter(|u| u.is_finite() && *u >= 0.0)
            else {
                continue;
            };
            let resets_at_ms = match w.get("resets_at") {
                Some(serde_json::Value::Number(n)) => n.as_i64().map(|s| s.saturating_mul(1000)),
                Some(serde_json::Value::String(t)) => parse_rfc3339_ms(t),
                _ => w
                    .get("resets_in_seconds")
                    .and_then(serde_json::Value::as_i64)
                    .map(|s| ts + s.saturating_mul(1000)),
            };
            let sig = (name.to_string(), (used * 100.0).round() as u64, resets_at_ms);
            if self.last_quota.contains(&sig) {
                continue;
            }
            self.last_quota.retain(|(n, _, _)| n != name);
            self.last_quota.push(sig);
            out.quota.push(QuotaSample {
                harness: Harness::Codex,
                session_id: self.session_id(at.session_hint).to_string(),
                name: name.to_string(),
                observed_ms: ts,
                used_percent: used,
                window_minutes: w.get("window_minutes").and_then(serde_json::Value::as_u64),
                resets_at_ms,
            });
        }
    }
}

fn totals(u: &CodexUsage, max: u64, what: &'static str) -> Result<Totals, SpendError> {
    let f = |name: &'static str| -> &'static str {
        match (what, name) {
            ("total_token_usage", "in") => "total_token_usage.input_tokens",
            ("total_token_usage", "cached") => "total_token_usage.cached_input_tokens",
            ("total_token_usage", "write") => "total_token_usage.cache_write_input_tokens",
            ("total_token_usage", "out") => "total_token_usage.output_tokens",
            ("total_token_usage", _) => "total_token_usage.reasoning_output_tokens",
            (_, "in") => "last_token_usage.input_tokens",
            (_, "cached") => "last_token_usage.cached_input_tokens",
            (_, "write") => "last_token_usage.cache_write_input_tokens",
            (_, "out") => "last_token_usage.output_tokens",
            _ => "last_token_usage.reasoning_output_tokens",
        }
    };
    Ok(Totals {
        input: check(f("in"), u.input_tokens, max)?,
        cached: check(f("cached"), u.cached_input_tokens, max)?,
        cache_write: check(f("write"), u.cache_write_input_tokens, max)?,
        output: check(f("out"), u.output_tokens, max)?,
        reasoning: check(f("reasoning"), u.reasoning_output_tokens, max)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::FileState;

    fn meta(id: &str, ts: &str, fork: Option<&str>) -> String {
        let fork = fork.map(|f| format!(r#","forked_from_id":"{f}""#)).unwrap_or_default();
        format!(
            r#"{{"timestamp":"{ts}","type":"session_meta","payload":{{"id":"{id}","timestamp":"{ts}","cli_version":"0.63.0","source":"cli"{fork}}}}}"#
        )
    }

    fn turn(model: &str, ts: &str) -> String {
        format!(r#"{{"timestamp":"{ts}","type":"turn_context","payload":{{"cwd":"/w","model":"{model}"}}}}"#)
    }

    fn count(ts: &str, total: (u64, u64, u64), last: Option<(u64, u64, u64)>) -> String {
        let u = |(i, c, o): (u64, u64, u64)| {
            format!(
                r#"{{"input_tokens":{i},"cached_input_tokens":{c},"output_tokens":{o},"reasoning_output_tokens":0,"total_tokens":{}}}"#,
                i + o
            )
        };
        let last = last
            .map(|l| format!(r#","last_token_usage":{}"#, u(l)))
            .unwrap_or_default();
        format!(
            r#"{{"timestamp":"{ts}","type":"event_msg","payload":{{"type":"token_count","info":{{"total_token_usage":{}{last}}},"rate_limits":{{"primary":{{"used_percent":12.0,"window_minutes":300,"resets_in_seconds":600}}}}}}}}"#,
            u(total)
        )
    }

    fn parse(lines: &[String]) -> Parsed {
        let mut st = FileState::new(Harness::Codex, "hint");
        let mut out = Parsed::default();
        st.feed((lines.join("\n") + "\n").as_bytes(), &mut out);
        out
    }

    #[test]
    fn token_counts_join_the_prevailing_model_and_reemits_count_nothing() {
        let out = parse(&[
            meta("019a0000-0000-7000-8000-000000000001", "2026-11-03T10:00:00Z", None),
            turn("gpt-5-codex", "2026-11-03T10:00:01Z"),
            count("2026-11-03T10:00:05Z", (1000, 200, 50), Some((1000, 200, 50))),
            count("2026-11-03T10:00:05Z", (1000, 200, 50), Some((1000, 200, 50))),
            turn("gpt-5.1-codex-max", "2026-11-03T10:01:00Z"),
            // No last_token_usage: the advance of the totals.
            count("2026-11-03T10:01:05Z", (2500, 1100, 80), None),
        ]);
        assert_eq!(out.records.len(), 2, "{:?}", out.stats);
        assert_eq!(out.stats.reemits, 1);
        let (a, b) = (&out.records[0], &out.records[1]);
        assert_eq!(
            (a.model.as_str(), a.tokens.input, a.tokens.cache_read, a.tokens.output),
            ("gpt-5-codex", 800, 200, 50)
        );
        // 2500-1000 = 1500 input of which 1100-200 = 900 cached; 80-50 = 30 out.
        assert_eq!(
            (b.model.as_str(), b.tokens.input, b.tokens.cache_read, b.tokens.output),
            ("gpt-5.1-codex-max", 600, 900, 30)
        );
        assert_eq!(a.session_id, "019a0000-0000-7000-8000-000000000001");
        // The re-emit repeated the same rate limit: no sample; the later one
        // resets 600 s after its own observation.
        assert_eq!(out.quota.len(), 2);
        assert_eq!(out.quota[0].resets_at_ms, Some(a.timestamp_ms + 600_000));
        assert_eq!(out.quota[1].resets_at_ms, Some(b.timestamp_ms + 600_000));
        assert_eq!(
            (
                out.quota[0].name.as_str(),
                out.quota[0].used_percent,
                out.quota[0].window_minutes
            ),
            ("primary", 12.0, Some(300))
        );
    }

    #[test]
    fn totals_that_reset_start_a_new_epoch() {
        let out = parse(&[
            turn("gpt-5", "2026-11-03T10:00:01Z"),
            count("2026-11-03T10:00:05Z", (1000, 0, 50), None),
            count("2026-11-03T11:00:05Z", (300, 0, 10), None),
            count("2026-11-03T11:01:05Z", (1000, 0, 50), None),
        ]);
        let got: Vec<(u64, u64)> = out.records.iter().map(|r| (r.tokens.input, r.tokens.output)).collect();
        assert_eq!(got, [(1000, 50), (300, 10), (700, 40)]);
        assert_ne!(out.records[0].key, out.records[2].key, "same totals, other epoch");
    }

    #[test]
    fn a_fork_does_not_count_its_parents_history() {
        let fork_at = "2026-11-04T09:00:00Z";
        let out = parse(&[
            meta("child", fork_at, Some("parent")),
            meta("parent", fork_at, None),
            turn("gpt-5-codex", fork_at),
            count("2026-11-04T09:00:00.010Z", (1000, 0, 50), Some((1000, 0, 50))),
            count("2026-11-04T09:00:00.020Z", (2000, 0, 90), Some((1000, 0, 40))),
            count("2026-11-04T09:00:30Z", (3500, 500, 100), Some((1500, 500, 10))),
        ]);
        assert_eq!(out.stats.replayed, 2);
        assert_eq!(out.records.len(), 1);
        let mut st = FileState::new(Harness::Codex, "hint");
        st.feed(
            format!("{}\n", meta("child", fork_at, Some("parent"))).as_bytes(),
            &mut Parsed::default(),
        );
        match &st.parser {
            crate::ParserState::Codex(c) => {
                assert_eq!(
                    (c.session(), c.cli_version(), c.in_fork_replay()),
                    (Some("child"), Some("0.63.0"), true)
                );
            }
            other => panic!("{other:?}"),
        }
        let r = &out.records[0];
        assert_eq!(
            (
                r.session_id.as_str(),
                r.tokens.input,
                r.tokens.cache_read,
                r.tokens.output
            ),
            ("child", 1000, 500, 10)
        );
    }

    #[test]
    fn a_rate_limit_of_another_shape_costs_no_tokens() {
        let line = count("2026-11-03T10:00:05Z", (10, 0, 5), None)
            .replace(r#""used_percent":12.0"#, r#""used_percent":"twelve","extra":[1]"#);
        let out = parse(&[turn("gpt-5", "2026-11-03T10:00:01Z"), line]);
        assert_eq!(out.records.len(), 1);
        assert!(out.quota.is_empty());
    }

    #[test]
    fn cache_writes_are_part_of_the_input_not_added_to_it() {
        let line = count("2026-11-03T10:00:05Z", (1000, 600, 50), Some((1000, 600, 50))).replace(
            r#""cached_input_tokens":600,"#,
            r#""cached_input_tokens":600,"cache_write_input_tokens":300,"#,
        );
        let out = parse(&[turn("gpt-5", "2026-11-03T10:00:01Z"), line]);
        assert!(out.problems.is_empty(), "{:?}", out.problems);
        let t = &out.records[0].tokens;
        assert_eq!((t.input, t.cache_read, t.cache_write_5m, t.output), (100, 600, 300, 50));
        assert_eq!(t.total(), 1050, "a 1,000-token request and 50 out");
    }

    #[test]
    fn cached_above_input_is_refused() {
        let out = parse(&[count("2026-11-03T10:00:05Z", (10, 20, 5), None)]);
        assert!(out.records.is_empty());
        assert!(matches!(out.problems[0].error, SpendError::Inconsistent { .. }));
    }
}
