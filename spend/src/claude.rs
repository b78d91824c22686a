//! Claude Code session files: `projects/<slug>/<session>.jsonl` under the
//! CLI's config dir, and its subagents' files
//! (`projects/<slug>/<session>/subagents/agent-*.jsonl`; older versions wrote
//! `projects/<slug>/agent-*.jsonl` or kept subagent lines inline, marked
//! `isSidechain`). Every `*.jsonl` under `projects/` is one of these.
//!
//! An `assistant` line's `message.usage` is one request: `input_tokens`
//! (uncached), `cache_read_input_tokens`, `cache_creation_input_tokens` split
//! by `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`
//! (older versions have no split: all of it is 5-minute), `output_tokens`, and
//! `server_tool_use.web_search_requests`; and, as CLI 2.1 writes them,
//! `speed` (`fast` is billed at fast-mode rates), `inference_geo` (`us` is
//! billed at 1.1x) and `iterations` (the model calls within one message,
//! kept when they add up to the message). Lines of other kinds (`user`,
//! `summary`, `system`, `attachment`, `cost-state`, `api-request`, ...) carry
//! no usage of their own. The CLI writes one line per content
//! block of a message, each with the message's usage so far: the key is
//! `message.id` (+ `requestId` when present; a line without one takes the
//! `requestId` an earlier line of the same message had), and a later line
//! replaces an earlier one only when it is more complete ([`UsageRecord::rank`]).
//! Lines without `"usage"` are not decoded at all.

use std::borrow::Cow;
use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::error::SpendError;
use crate::fields::{Count, MAX_TOKENS_PER_REQUEST, check, kind_of_untyped, looks_like_object, short, utf8};
use crate::parse::{LineAt, Parsed, SessionParser, excerpt};
use crate::record::{Harness, Rank, Speed, Tokens, UsageRecord};
use crate::time::parse_rfc3339_ms;

/// Messages remembered per file for dedupe (streaming lines of one message
/// are adjacent; the global rule in [`crate::RecordSet`] covers the rest).
pub const SEEN_PER_FILE: usize = 16;

/// The Claude Code parser.
#[derive(Debug, Clone, Copy, Default)]
pub struct ClaudeParser;

/// What a Claude file's parse carries: the last messages seen, with their
/// request id and the rank of the record last emitted for them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaudeState {
    seen: VecDeque<Seen>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    message_id: String,
    request_id: Option<String>,
    rank: Rank,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    message: Option<Message<'a>>,
    #[serde(rename = "requestId", borrow, default)]
    request_id: Option<Cow<'a, str>>,
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Cow<'a, str>>,
    #[serde(rename = "isSidechain", default)]
    is_sidechain: Option<bool>,
    #[serde(rename = "isApiErrorMessage", default)]
    api_error: Option<bool>,
    #[serde(borrow, default)]
    timestamp: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    stop_reason: Option<Cow<'a, str>>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Usage {
    input_tokens: Option<Count>,
    cache_read_input_tokens: Option<Count>,
    cache_creation_input_tokens: Option<Count>,
    cache_creation: Option<CacheCreation>,
    output_tokens: Option<Count>,
    server_tool_use: Option<ServerToolUse>,
    #[serde(default)]
    speed: Option<String>,
    #[serde(default)]
    inference_geo: Option<String>,
    /// Several model calls within one message (read leniently: a shape this
    /// version does not know prices the message whole).
    #[serde(default)]
    iterations: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct CacheCreation {
    ephemeral_5m_input_tokens: Option<Count>,
    ephemeral_1h_input_tokens: Option<Count>,
}

#[derive(Deserialize)]
struct ServerToolUse {
    web_search_requests: Option<Count>,
}

impl SessionParser for ClaudeParser {
    type State = ClaudeState;
    const HARNESS: Harness = Harness::Claude;

    fn parse_line(&self, state: &mut ClaudeState, line: &[u8], at: LineAt<'_>, out: &mut Parsed) {
        let text = match utf8(line) {
            Ok(t) => t,
            Err(e) => return out.refuse(at.offset, e),
        };
        if memchr::memmem::find(line, b"limit reached").is_some() || memchr::memmem::find(line, b"hit your").is_some() {
            limit_notice(text, at, out);
        }
        if memchr::memmem::find(line, b"\"usage\"").is_none() {
            if looks_like_object(text) {
                out.stats.skipped += 1;
            } else {
                out.refuse(
                    at.offset,
                    SpendError::InvalidJson {
                        detail: format!("not one JSON object: {:?}", excerpt(line, 40)),
                    },
                );
            }
            return;
        }
        let parsed: Line<'_> = match serde_json::from_str(text) {
            Ok(l) => l,
            Err(e) => {
                // Valid JSON of another shape is another kind of line; an
                // assistant line we cannot read, or garbage, is refused.
                match kind_of_untyped(text) {
                    Ok(kind) if kind.as_deref() != Some("assistant") => out.stats.skipped += 1,
                    Ok(_) => out.refuse(at.offset, SpendError::InvalidJson { detail: short(&e) }),
                    Err(reason) => out.refuse(at.offset, reason),
                }
                return;
            }
        };
        if parsed.kind.as_deref() != Some("assistant") {
            if parsed.message.as_ref().is_some_and(|m| m.usage.is_some()) {
                let kind = parsed.kind.as_deref().unwrap_or("(untyped)").to_string();
                out.refuse(at.offset, SpendError::UnexpectedUsage { kind });
            } else {
                out.stats.skipped += 1;
            }
            return;
        }
        let Some(message) = parsed.message else {
            out.stats.skipped += 1;
            return;
        };
        let Some(usage) = message.usage else {
            out.stats.skipped += 1;
            return;
        };
        // A request with no model is labelled as such, never an empty name.
        let model = message
            .model
            .as_deref()
            .filter(|m| !m.is_empty())
            .unwrap_or(crate::codex::UNKNOWN_MODEL);
        if model == "<synthetic>" || parsed.api_error == Some(true) {
            out.stats.synthetic += 1;
            return;
        }
        let (tokens, web) = match tokens(&usage) {
            Ok(t) => t,
            Err(e) => return out.refuse(at.offset, e),
        };
        if tokens.total() == 0 && web == 0 {
            out.stats.synthetic += 1;
            return;
        }
        let ts = parsed.timestamp.as_deref().unwrap_or("");
        let Some(timestamp_ms) = parse_rfc3339_ms(ts) else {
            return out.refuse(at.offset, SpendError::BadTimestamp { found: ts.to_string() });
        };
        let session_id = parsed.session_id.as_deref().unwrap_or(at.session_hint).to_string();
        let message_id = message.id.map(Cow::into_owned);
        let mut request_id = parsed.request_id.map(Cow::into_owned).filter(|r| !r.is_empty());
        let key = match &message_id {
            Some(m) => {
                if request_id.is_none() {
                    request_id = state
                        .seen
                        .iter()
                        .rev()
                        .find(|s| &s.message_id == m && s.request_id.is_some())
                        .and_then(|s| s.request_id.clone());
                }
                match &request_id {
                    Some(r) => format!("claude:{m}:{r}"),
                    None => format!("claude:{m}"),
                }
            }
            // No message id (not seen in real files): the line's own uuid,
            // which copies of the line keep; else its place in the file.
            None => match &parsed.uuid {
                Some(u) => format!("claude:uuid:{u}"),
                None => format!("claude:{}@{}", at.session_hint, at.offset),
            },
        };
        let record = UsageRecord {
            key,
            harness: Harness::Claude,
            message_id,
            request_id,
            sidechain: parsed.is_sidechain == Some(true),
            session_id,
            model: model.to_string(),
            timestamp_ms,
            tokens,
            web_search_requests: web,
            complete: message.stop_reason.is_some(),
            speed: match usage.speed.as_deref() {
                Some("fast") => Speed::Fast,
                _ => Speed::Standard,
            },
            inference_geo: usage.inference_geo.clone().filter(|g| !g.is_empty()),
            iterations: iterations(usage.iterations.as_ref(), &tokens),
        };
        if state.remember(&record) {
            out.stats.usage_lines += 1;
            out.records.push(record);
        } else {
            out.stats.duplicates += 1;
        }
    }
}

impl ClaudeState {
    /// True when `r` is new or more complete than what was last emitted for
    /// its message (then it is remembered as emitted).
    fn remember(&mut self, r: &UsageRecord) -> bool {
        let Some(m) = &r.message_id else { return true };
        let rank = r.rank();
        if let Some(s) = self
            .seen
            .iter_mut()
            .rev()
            .find(|s| s.message_id.len() == m.len() && &s.message_id == m && s.request_id == r.request_id)
        {
            if s.rank >= rank {
                return false;
            }
            s.rank = rank;
            return true;
        }
        if self.seen.len() == SEEN_PER_FILE {
            self.seen.pop_front();
        }
        self.seen.push_back(Seen {
            message_id: m.clone(),
            request_id: r.request_id.clone(),
            rank,
        });
        true
    }
}

/// A usage-limit notice: the synthetic assistant message (or API error
/// message) Claude Code writes when a limit is hit, as a quota sample. What a
/// user or a tool wrote never counts.
fn limit_notice(text: &str, at: LineAt<'_>, out: &mut Parsed) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    let synthetic = v["message"]["model"] == "<synthetic>" || v["isApiErrorMessage"] == true;
    if v["type"] != "assistant" || !synthetic {
        return;
    }
    let words = match &v["message"]["content"] {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => return,
    };
    let Some(observed_ms) = v["timestamp"].as_str().and_then(parse_rfc3339_ms) else {
        return;
    };
    let session = v["sessionId"].as_str().unwrap_or(at.session_hint);
    if let Some(sample) = crate::quota::claude_limit(&words, session, observed_ms) {
        out.quota.push(sample);
    }
}

fn tokens(u: &Usage) -> Result<(Tokens, u64), SpendError> {
    let max = MAX_TOKENS_PER_REQUEST;
    let input = check("input_tokens", u.input_tokens, max)?;
    let cache_read = check("cache_read_input_tokens", u.cache_read_input_tokens, max)?;
    let output = check("output_tokens", u.output_tokens, max)?;
    let (w5, w1) = match &u.cache_creation {
        Some(c) => (
            check(
                "cache_creation.ephemeral_5m_input_tokens",
                c.ephemeral_5m_input_tokens,
                max,
            )?,
            check(
                "cache_creation.ephemeral_1h_input_tokens",
                c.ephemeral_1h_input_tokens,
                max,
            )?,
        ),
        None => (0, 0),
    };
    let creation = match u.cache_creation_input_tokens {
        Some(c) => check("cache_creation_input_tokens", Some(c), max)?,
        None => w5 + w1,
    };
    // As Claude Code bills it: the 1-hour part (at most the whole), and every
    // other cache write at the 5-minute rate (a TTL this version does not
    // know is not lost).
    let w1 = w1.min(creation);
    let web = match &u.server_tool_use {
        Some(s) => check("server_tool_use.web_search_requests", s.web_search_requests, 100_000)?,
        None => 0,
    };
    let tokens = Tokens {
        input,
        cache_read,
        cache_write_5m: creation - w1,
        cache_write_1h: w1,
        output,
        reasoning: 0,
    };
    Ok((tokens, web))
}

/// The message's iterations (two or more model calls) in buckets, when every
/// one carries its four counts and they add up to the message's; else none
/// (the message is priced whole). 1-hour writes the iterations do not
/// account for go to their unsplit writes in order, as Claude Code does.
fn iterations(v: Option<&serde_json::Value>, total: &Tokens) -> Vec<Tokens> {
    let Some(list) = v.and_then(serde_json::Value::as_array) else {
        return vec![];
    };
    let calls: Vec<&serde_json::Value> = list
        .iter()
        .filter(|i| i.get("type").and_then(serde_json::Value::as_str) == Some("message"))
        .collect();
    if calls.len() < 2 {
        return vec![];
    }
    let num = |i: &serde_json::Value, k: &str| {
        i.pointer(k)
            .and_then(serde_json::Value::as_u64)
            .filter(|n| *n <= MAX_TOKENS_PER_REQUEST)
    };
    let mut out: Vec<(Tokens, u64)> = Vec::with_capacity(calls.len());
    for i in calls {
        let (Some(input), Some(output), Some(cache_read), Some(creation)) = (
            num(i, "/input_tokens"),
            num(i, "/output_tokens"),
            num(i, "/cache_read_input_tokens"),
            num(i, "/cache_creation_input_tokens"),
        ) else {
            return vec![];
        };
        let one_hour = num(i, "/cache_creation/ephemeral_1h_input_tokens")
            .unwrap_or(0)
            .min(creation);
        let five_min = num(i, "/cache_creation/ephemeral_5m_input_tokens")
            .unwrap_or(0)
            .min(creation - one_hour);
        let t = Tokens {
            input,
            cache_read,
            cache_write_5m: five_min,
            cache_write_1h: one_hour,
            output,
            reasoning: 0,
        };
        out.push((t, creation));
    }
    let sum = |f: fn(&Tokens, u64) -> u64| out.iter().map(|(t, c)| f(t, *c)).sum::<u64>();
    if sum(|t, _| t.input) != total.input
        || sum(|t, _| t.output) != total.output
        || sum(|t, _| t.cache_read) != total.cache_read
        || sum(|_, c| c) != total.cache_write_5m + total.cache_write_1h
    {
        return vec![];
    }
    let mut extra = total.cache_write_1h.saturating_sub(sum(|t, _| t.cache_write_1h));
    out.into_iter()
        .map(|(mut t, creation)| {
            let k = extra.min(creation - t.cache_write_5m - t.cache_write_1h);
            extra -= k;
            t.cache_write_1h += k;
            t.cache_write_5m = creation - t.cache_write_1h;
            t
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::FileState;

    fn assistant(id: &str, req: Option<&str>, out: u64, stop: bool) -> String {
        let req = req.map(|r| format!(r#","requestId":"{r}""#)).unwrap_or_default();
        let stop = if stop { r#""end_turn""# } else { "null" };
        format!(
            r#"{{"type":"assistant","sessionId":"s1","timestamp":"2026-11-03T10:00:00Z","message":{{"id":"{id}","model":"claude-sonnet-4-5-20250929","stop_reason":{stop},"content":[{{"type":"text","text":"hi \"usage\": no"}}],"usage":{{"input_tokens":3,"cache_read_input_tokens":100,"cache_creation_input_tokens":50,"cache_creation":{{"ephemeral_5m_input_tokens":20,"ephemeral_1h_input_tokens":30}},"output_tokens":{out},"server_tool_use":{{"web_search_requests":2}}}}}}{req}}}"#
        )
    }

    fn parse(text: &str) -> Parsed {
        let mut st = FileState::new(Harness::Claude, "hint");
        let mut out = Parsed::default();
        st.feed(text.as_bytes(), &mut out);
        out
    }

    #[test]
    fn an_assistant_line_is_four_disjoint_buckets() {
        let out = parse(&format!("{}\n", assistant("m1", Some("r1"), 9, true)));
        assert_eq!(out.records.len(), 1, "{out:?}");
        let r = &out.records[0];
        assert_eq!(r.key, "claude:m1:r1");
        assert_eq!(
            r.tokens,
            Tokens {
                input: 3,
                cache_read: 100,
                cache_write_5m: 20,
                cache_write_1h: 30,
                output: 9,
                reasoning: 0
            }
        );
        assert_eq!(
            (r.web_search_requests, r.complete, r.session_id.as_str()),
            (2, true, "s1")
        );
    }

    #[test]
    fn streaming_lines_keep_the_complete_one_never_the_first_partial() {
        let text = [
            assistant("m1", Some("r1"), 1, false),
            assistant("m1", Some("r1"), 1, false),
            assistant("m1", Some("r1"), 40, true),
            assistant("m1", None, 40, true),
        ]
        .join("\n")
            + "\n";
        let out = parse(&text);
        let mut set = crate::RecordSet::new();
        for r in out.records.clone() {
            set.insert(r);
        }
        let counted = set.counted();
        assert_eq!(counted.len(), 1);
        assert_eq!(counted[0].tokens.output, 40);
        assert_eq!(out.stats.duplicates, 2, "{:?}", out.stats);
        // The line without a requestId took the message's: one key.
        assert!(out.records.iter().all(|r| r.key == "claude:m1:r1"));
    }

    #[test]
    fn a_missing_request_id_still_dedupes() {
        let text = [assistant("m1", None, 1, false), assistant("m1", None, 7, true)].join("\n") + "\n";
        let out = parse(&text);
        let mut set = crate::RecordSet::new();
        out.records.into_iter().for_each(|r| {
            set.insert(r);
        });
        assert_eq!(set.counted().len(), 1);
        assert_eq!(set.counted()[0].tokens.output, 7);
    }

    #[test]
    fn bad_lines_are_refused_with_reasons() {
        let negative = assistant("m2", None, 5, true).replace(r#""input_tokens":3"#, r#""input_tokens":-3"#);
        let absurd = assistant("m3", None, 5, true).replace(r#""output_tokens":5"#, r#""output_tokens":5000000000"#);
        let no_time = assistant("m4", None, 5, true).replace("2026-11-03T10:00:00Z", "soon");
        let mut bytes = format!("{negative}\n{absurd}\n{no_time}\nnot json at all\n").into_bytes();
        bytes.extend_from_slice(b"{\"type\":\"assistant\",\"x\":\"\xff\xfe\"}\n");
        bytes.extend_from_slice(b"{\"type\":\"assistant\",\"message\":{\"usage\":{\"input_tokens\":1,,}}\n");
        let mut st = FileState::new(Harness::Claude, "hint");
        let mut out = Parsed::default();
        st.feed(&bytes, &mut out);
        assert!(out.records.is_empty());
        assert_eq!(out.stats.refused, 6);
        let errs: Vec<&SpendError> = out.problems.iter().map(|p| &p.error).collect();
        assert_eq!(
            errs[0],
            &SpendError::NegativeTokens {
                field: "input_tokens",
                value: -3
            }
        );
        assert!(matches!(
            errs[1],
            SpendError::AbsurdTokens {
                field: "output_tokens",
                ..
            }
        ));
        assert!(matches!(errs[2], SpendError::BadTimestamp { .. }));
        assert!(matches!(errs[3], SpendError::InvalidJson { .. }));
        assert_eq!(errs[4], &SpendError::InvalidUtf8 { at: 25 });
        assert!(matches!(errs[5], SpendError::InvalidJson { .. }));
    }

    #[test]
    fn iterations_count_only_when_they_add_up() {
        let with = |iters: &str| {
            let line = assistant("m9", Some("r9"), 9, true).replace(
                r#""server_tool_use""#,
                &format!(r#""iterations":{iters},"server_tool_use""#),
            );
            parse(&format!("{line}\n")).records.remove(0).iterations
        };
        let call = |i: u64, read: u64, w1: u64, out: u64| {
            format!(
                r#"{{"type":"message","input_tokens":{i},"cache_read_input_tokens":{read},"cache_creation_input_tokens":{w1},"cache_creation":{{"ephemeral_1h_input_tokens":{w1}}},"output_tokens":{out}}}"#
            )
        };
        // The message: 3 input, 100 read, 20 + 30 written, 9 output.
        let good = with(&format!("[{},{}]", call(1, 40, 0, 4), call(2, 60, 50, 5)));
        assert_eq!(good.len(), 2);
        // A call's own 5m/1h split stands as written (clamped to what the call
        // wrote), as Claude Code takes it: the second call's 50 are 1-hour.
        assert_eq!((good[1].cache_write_1h, good[1].cache_write_5m), (50, 0));
        assert!(
            with(&format!("[{},{}]", call(1, 40, 0, 4), call(2, 61, 50, 5))).is_empty(),
            "sums differ"
        );
        assert!(
            with(&format!("[{}]", call(3, 100, 50, 9))).is_empty(),
            "one call is the message"
        );
        assert!(with(r#""not a list""#).is_empty());
    }

    #[test]
    fn other_kinds_and_synthetic_messages_are_counted_not_priced() {
        let synthetic = assistant("m5", None, 0, true).replace("claude-sonnet-4-5-20250929", "<synthetic>");
        let text = format!(
            "{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n{{\"type\":\"summary\",\"summary\":\"x\"}}\n{{\"type\":\"user\",\"toolUseResult\":{{\"usage\":{{\"input_tokens\":5}}}}}}\n{synthetic}\n"
        );
        let out = parse(&text);
        assert!(out.records.is_empty());
        assert_eq!((out.stats.skipped, out.stats.synthetic, out.stats.refused), (3, 1, 0));
    }

    #[test]
    fn usage_on_another_kind_of_line_is_a_problem_and_no_model_is_labelled() {
        let line = assistant("m7", None, 5, false);
        let progress = line.replacen(r#""type":"assistant""#, r#""type":"progress""#, 1);
        let nameless = line.replace(r#""model":"claude-sonnet-4-5-20250929","#, "");
        let out = parse(&format!("{progress}\n{nameless}\n"));
        assert_eq!(out.problems.len(), 1, "{:?}", out.problems);
        assert!(matches!(&out.problems[0].error, SpendError::UnexpectedUsage { kind } if kind == "progress"));
        assert_eq!(out.records.len(), 1);
        assert_eq!(out.records[0].model, "unknown");
    }

    #[test]
    fn a_limit_notice_is_a_quota_sample_and_a_user_saying_it_is_not() {
        let notice = r#"{"type":"assistant","sessionId":"s9","timestamp":"2026-12-01T10:00:00Z","isApiErrorMessage":true,"message":{"id":"m9","model":"<synthetic>","content":[{"type":"text","text":"5-hour limit reached \u2219 resets 3pm"}],"usage":{"input_tokens":0,"output_tokens":0}}}"#;
        let user = r#"{"type":"user","sessionId":"s9","timestamp":"2026-12-01T10:00:00Z","message":{"role":"user","content":"what does 5-hour limit reached mean?"}}"#;
        let out = parse(&format!("{notice}\n{user}\n"));
        assert!(out.records.is_empty());
        assert_eq!(out.quota.len(), 1, "{out:?}");
        let q = &out.quota[0];
        assert_eq!(
            (q.name.as_str(), q.session_id.as_str(), q.used_percent),
            ("claude.5h", "s9", 100.0)
        );
        assert_eq!(
            q.resets_at_ms.map(crate::quota::rfc3339).as_deref(),
            Some("2026-12-01T15:00:00Z")
        );
    }
}
