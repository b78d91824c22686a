//! Live quota: what the CLIs show of their rate-limit windows, and its wire
//! shape. Codex writes `rate_limits` into its rollouts (read by
//! `codex.rs`); Claude Code says it has hit a limit in words, on its screen
//! and as a synthetic message in its session file:
//!
//! - `Claude AI usage limit reached|1749924000` (older versions: the reset
//!   time as Unix seconds after the bar);
//! - `5-hour limit reached ∙ resets 3pm`, `You've hit your usage limit ·
//!   resets 3pm (UTC)`, `Opus weekly limit reached ∙ resets Oct 6, 1pm`,
//!   `Claude usage limit reached. Your limit will reset at 3pm (Etc/UTC).`
//!
//! [`claude_limit`] reads those into a [`QuotaSample`] at 100% used. A reset
//! time is resolved only in UTC (no zone given, or `UTC`): the node has no
//! time zone database, so another zone keeps the sample with no reset time.

use serde_json::{Value, json};

use crate::record::{Harness, QuotaSample};
pub use crate::time::rfc3339;
use crate::time::{civil_from_days, days_from_civil};

const DAY_MS: i64 = 86_400_000;
const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// The limit Claude Code says it hit in `text`, observed at `observed_ms`
/// (the time the line or screen is from), if it says so.
pub fn claude_limit(text: &str, session_id: &str, observed_ms: i64) -> Option<QuotaSample> {
    let lower = text.to_lowercase();
    let line = lower
        .lines()
        .find(|l| l.contains("limit") && (l.contains("reached") || l.contains("hit your")))?;
    let (name, window_minutes) = if line.contains("5-hour") || line.contains("5 hour") {
        ("claude.5h", Some(300))
    } else if line.contains("weekly") && line.contains("opus") {
        ("claude.weekly_opus", Some(10_080))
    } else if line.contains("weekly") {
        ("claude.weekly", Some(10_080))
    } else {
        ("claude.usage_limit", None)
    };
    let resets_at_ms = match line.split_once("limit reached|") {
        Some((_, rest)) => unix_stamp(rest),
        None => reset_words(line, observed_ms),
    };
    Some(QuotaSample {
        harness: Harness::Claude,
        session_id: session_id.to_string(),
        name: name.to_string(),
        observed_ms,
        used_percent: 100.0,
        window_minutes,
        resets_at_ms,
    })
}

/// `1749924000` (seconds) or a millisecond stamp, up to the first non-digit.
fn unix_stamp(s: &str) -> Option<i64> {
    let digits: String = s.trim().chars().take_while(char::is_ascii_digit).collect();
    let n: i64 = digits.parse().ok()?;
    match n {
        1_000_000_000..=99_999_999_999 => Some(n * 1000),
        1_000_000_000_000..=99_999_999_999_999 => Some(n),
        _ => None,
    }
}

/// The reset time after `reset`/`resets` (`at`) in `line`, as the next such
/// time after `now_ms`, in UTC only.
fn reset_words(line: &str, now_ms: i64) -> Option<i64> {
    let at = line.find("reset")?;
    let rest = &line[at..];
    let rest = rest
        .trim_start_matches("resets")
        .trim_start_matches("reset")
        .trim_start();
    let rest = rest.strip_prefix("at ").unwrap_or(rest);
    // A zone in parentheses: only UTC is resolved.
    if let Some(open) = rest.find('(') {
        let zone = rest[open + 1..].split(')').next().unwrap_or("").trim();
        if !matches!(zone, "utc" | "etc/utc" | "gmt" | "z") {
            return None;
        }
    }
    let words: Vec<&str> = rest
        .split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')' || c == '.')
        .filter(|w| !w.is_empty())
        .take(4)
        .collect();
    // `oct 6 1pm` or `1pm`.
    let (date, clock) = match words.as_slice() {
        [m, d, t, ..] if month(m).is_some() => (Some((month(m)?, d.parse::<i64>().ok()?)), *t),
        [t, ..] => (None, *t),
        [] => return None,
    };
    let minute_of_day = clock_minutes(clock)?;
    let today = now_ms.div_euclid(DAY_MS);
    let candidate = match date {
        None => {
            let at = today * DAY_MS + minute_of_day * 60_000;
            if at <= now_ms { at + DAY_MS } else { at }
        }
        Some((m, d)) => {
            if !(1..=31).contains(&d) {
                return None;
            }
            let (year, _, _) = civil_from_days(today);
            let at = |y: i64| days_from_civil(y, m, d) * DAY_MS + minute_of_day * 60_000;
            if at(year) <= now_ms { at(year + 1) } else { at(year) }
        }
    };
    Some(candidate)
}

fn month(word: &str) -> Option<i64> {
    let w = word.get(..3)?;
    MONTHS.iter().position(|m| *m == w).map(|i| i as i64 + 1)
}

/// `3pm`, `3:30pm`, `12am`, `15:00` as minutes after midnight.
fn clock_minutes(word: &str) -> Option<i64> {
    let (body, half) = if let Some(b) = word.strip_suffix("pm") {
        (b, Some(12))
    } else if let Some(b) = word.strip_suffix("am") {
        (b, Some(0))
    } else {
        (word, None)
    };
    let (h, m) = match body.split_once(':') {
        Some((h, m)) => (h.parse::<i64>().ok()?, m.parse::<i64>().ok()?),
        None if half.is_some() => (body.parse::<i64>().ok()?, 0),
        None => return None,
    };
    if !(0..60).contains(&m) {
        return None;
    }
    let hour = match half {
        Some(add) if (1..=12).contains(&h) => h % 12 + add,
        Some(_) => return None,
        None if (0..24).contains(&h) => h,
        None => return None,
    };
    Some(hour * 60 + m)
}

/// A window's length as people write it: `5h`, `7d`, `90m`.
pub fn window_label(minutes: u64) -> String {
    if minutes > 0 && minutes.is_multiple_of(1440) {
        format!("{}d", minutes / 1440)
    } else if minutes > 0 && minutes.is_multiple_of(60) {
        format!("{}h", minutes / 60)
    } else {
        format!("{minutes}m")
    }
}

/// A sample as a `usage.get` quota metric: `{name, used, limit, unit,
/// window?, resets_at?}` (`resets_at` RFC 3339 UTC), plus where it was seen.
pub fn quota_wire(s: &QuotaSample, agent: &str) -> Value {
    let name = match s.harness {
        Harness::Codex => format!("codex.{}", s.name),
        Harness::Claude => s.name.clone(),
    };
    let mut v = json!({
        "name": name,
        "used": (s.used_percent * 10.0).round() / 10.0,
        "limit": 100,
        "unit": "percent",
        "agent": agent,
        "harness": s.harness.as_str(),
        "observed_at": rfc3339(s.observed_ms),
    });
    if let Some(m) = s.window_minutes {
        v["window"] = json!(window_label(m));
    }
    if let Some(r) = s.resets_at_ms {
        v["resets_at"] = json!(rfc3339(r));
    }
    v
}

/// Of `samples` (agent, sample), the newest per agent and window name whose
/// window has not reset by `now_ms`, newest first.
pub fn current<'s>(
    samples: impl IntoIterator<Item = (&'s str, &'s QuotaSample)>,
    now_ms: i64,
) -> Vec<(&'s str, &'s QuotaSample)> {
    let mut newest: std::collections::BTreeMap<(&str, Harness, &str), (&str, &QuotaSample)> = Default::default();
    for (agent, s) in samples {
        if s.resets_at_ms.is_some_and(|r| r <= now_ms) {
            continue;
        }
        let slot = newest.entry((agent, s.harness, s.name.as_str())).or_insert((agent, s));
        if s.observed_ms > slot.1.observed_ms {
            *slot = (agent, s);
        }
    }
    let mut out: Vec<_> = newest.into_values().collect();
    out.sort_by(|a, b| b.1.observed_ms.cmp(&a.1.observed_ms).then(a.1.name.cmp(&b.1.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::parse_rfc3339_ms;

    fn at(s: &str) -> i64 {
        parse_rfc3339_ms(s).expect("time")
    }

    #[test]
    fn the_limit_texts_claude_code_writes() {
        let now = at("2026-12-01T10:00:00Z");
        let table: &[(&str, &str, Option<u64>, Option<&str>)] = &[
            (
                "Claude AI usage limit reached|1796140800",
                "claude.usage_limit",
                None,
                Some("2026-12-01T16:00:00Z"),
            ),
            (
                "5-hour limit reached ∙ resets 3pm",
                "claude.5h",
                Some(300),
                Some("2026-12-01T15:00:00Z"),
            ),
            (
                " You've hit your usage limit · resets 3pm (UTC)",
                "claude.usage_limit",
                None,
                Some("2026-12-01T15:00:00Z"),
            ),
            // Already past today: tomorrow.
            (
                "5-hour limit reached ∙ resets 9:30am",
                "claude.5h",
                Some(300),
                Some("2026-12-02T09:30:00Z"),
            ),
            (
                "Opus weekly limit reached ∙ resets Dec 6, 1pm",
                "claude.weekly_opus",
                Some(10_080),
                Some("2026-12-06T13:00:00Z"),
            ),
            // A date already past this year is next year's.
            (
                "Weekly limit reached ∙ resets Jan 2, 12am",
                "claude.weekly",
                Some(10_080),
                Some("2027-01-02T00:00:00Z"),
            ),
            (
                "Claude usage limit reached. Your limit will reset at 11pm (Etc/UTC).",
                "claude.usage_limit",
                None,
                Some("2026-12-01T23:00:00Z"),
            ),
            // Another zone: the limit, but no reset time.
            (
                "Claude usage limit reached. Your limit will reset at 3pm (America/New_York).",
                "claude.usage_limit",
                None,
                None,
            ),
            ("5-hour limit reached ∙ resets 13pm", "claude.5h", Some(300), None),
        ];
        for (text, name, window, resets) in table {
            let s = claude_limit(text, "s1", now).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(s.name, *name, "{text}");
            assert_eq!(s.window_minutes, *window, "{text}");
            assert_eq!(s.resets_at_ms.map(rfc3339).as_deref(), *resets, "{text}");
            assert_eq!(s.used_percent, 100.0);
            assert_eq!(s.observed_ms, now);
        }
        for not in [
            "Approaching usage limit",
            "limit the output to 10 lines",
            "rate limit",
            "",
        ] {
            assert!(claude_limit(not, "s1", now).is_none(), "{not}");
        }
    }

    #[test]
    fn current_keeps_the_newest_unexpired_sample_per_window() {
        let s = |name: &str, observed: i64, resets: Option<i64>| QuotaSample {
            harness: Harness::Codex,
            session_id: "x".into(),
            name: name.into(),
            observed_ms: observed,
            used_percent: observed as f64,
            window_minutes: Some(300),
            resets_at_ms: resets,
        };
        let samples = [
            ("a", s("primary", 10, Some(1000))),
            ("a", s("primary", 20, Some(1000))),
            ("a", s("secondary", 15, Some(50))),
            ("b", s("primary", 5, None)),
        ];
        let got = current(samples.iter().map(|(a, s)| (*a, s)), 100);
        let names: Vec<_> = got.iter().map(|(a, s)| (*a, s.name.as_str(), s.observed_ms)).collect();
        assert_eq!(names, vec![("a", "primary", 20), ("b", "primary", 5)]);
        let w = quota_wire(got[0].1, "a");
        assert_eq!(w["name"], "codex.primary");
        assert_eq!(w["used"], 20.0);
        assert_eq!(w["window"], "5h");
        assert_eq!(w["resets_at"], "1970-01-01T00:00:01Z");
        assert_eq!(window_label(10_080), "7d");
        assert_eq!(window_label(90), "90m");
    }
}
