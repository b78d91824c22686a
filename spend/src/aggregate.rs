//! Reports: counted records priced by a table into rows per UTC day x model x
//! agent (the row shape of `spend.history`), and roll-ups of those rows by
//! day, model or agent. Unpriced models keep their tokens and say so.

use std::collections::{BTreeMap, BTreeSet};

use crate::pricing::{PriceTable, Source};
use crate::record::{Tokens, UsageRecord};

/// One row of `spend.history`: a UTC day, a model, an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct DayRow {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    pub model: String,
    pub agent: String,
    pub input: u64,
    pub cache_read: u64,
    pub cache_write_5m: u64,
    pub cache_write_1h: u64,
    pub output: u64,
    pub requests: u64,
    pub web_search_requests: u64,
    /// `None` when the model has no price in the table (never shown as $0).
    pub usd: Option<f64>,
    pub priced: bool,
}

/// A priced report.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Sorted by day, then model, then agent.
    pub rows: Vec<DayRow>,
    /// Models with tokens but no price, sorted.
    pub unpriced_models: Vec<String>,
    /// Sum of the priced rows.
    pub usd: f64,
    pub source: Source,
    pub as_of: String,
}

/// Which days a report covers (inclusive; `YYYY-MM-DD` compares as text).
#[derive(Debug, Clone, Default)]
pub struct Days {
    pub since: Option<String>,
    pub until: Option<String>,
}

impl Days {
    pub fn all() -> Days {
        Days::default()
    }

    pub fn contains(&self, day: &str) -> bool {
        self.since.as_deref().is_none_or(|s| day >= s) && self.until.as_deref().is_none_or(|u| day <= u)
    }
}

/// Prices each counted record by `table` and sums per day x model x agent.
/// `records` pairs each record with the agent it is attributed to.
pub fn daily<'r>(
    records: impl IntoIterator<Item = (&'r str, &'r UsageRecord)>,
    table: &PriceTable,
    days: &Days,
) -> Summary {
    let mut rows: BTreeMap<(String, String, String), DayRow> = BTreeMap::new();
    let mut unpriced = BTreeSet::new();
    let mut total = 0.0;
    for (agent, r) in records {
        let day = r.day();
        if !days.contains(&day) {
            continue;
        }
        let cost = table.cost(r);
        if cost.is_none() {
            unpriced.insert(r.model.clone());
        }
        let row = rows
            .entry((day.clone(), r.model.clone(), agent.to_string()))
            .or_insert_with(|| DayRow {
                day,
                model: r.model.clone(),
                agent: agent.to_string(),
                input: 0,
                cache_read: 0,
                cache_write_5m: 0,
                cache_write_1h: 0,
                output: 0,
                requests: 0,
                web_search_requests: 0,
                usd: cost.map(|_| 0.0),
                priced: cost.is_some(),
            });
        let t = &r.tokens;
        row.input += t.input;
        row.cache_read += t.cache_read;
        row.cache_write_5m += t.cache_write_5m;
        row.cache_write_1h += t.cache_write_1h;
        row.output += t.output;
        row.requests += 1;
        row.web_search_requests += r.web_search_requests;
        if let (Some(usd), Some(c)) = (row.usd.as_mut(), cost) {
            *usd += c;
            total += c;
        }
    }
    Summary {
        rows: rows.into_values().collect(),
        unpriced_models: unpriced.into_iter().collect(),
        usd: total,
        source: table.source,
        as_of: table.as_of.clone(),
    }
}

/// What a roll-up groups by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Day,
    Model,
    Agent,
}

/// Rows summed under one label.
#[derive(Debug, Clone, PartialEq)]
pub struct Rollup {
    pub label: String,
    pub tokens: Tokens,
    pub requests: u64,
    /// Dollars of the priced rows under this label.
    pub usd: f64,
    /// Rows under this label whose model has no price.
    pub unpriced_rows: u64,
}

/// Sums `rows` by day, model or agent, sorted by label.
pub fn rollup(rows: &[DayRow], by: By) -> Vec<Rollup> {
    let mut out: BTreeMap<&str, Rollup> = BTreeMap::new();
    for r in rows {
        let label = match by {
            By::Day => r.day.as_str(),
            By::Model => r.model.as_str(),
            By::Agent => r.agent.as_str(),
        };
        let e = out.entry(label).or_insert_with(|| Rollup {
            label: label.to_string(),
            tokens: Tokens::default(),
            requests: 0,
            usd: 0.0,
            unpriced_rows: 0,
        });
        e.tokens.add(&Tokens {
            input: r.input,
            cache_read: r.cache_read,
            cache_write_5m: r.cache_write_5m,
            cache_write_1h: r.cache_write_1h,
            output: r.output,
            reasoning: 0,
        });
        e.requests += r.requests;
        match r.usd {
            Some(u) => e.usd += u,
            None => e.unpriced_rows += 1,
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Harness;

    fn rec(key: &str, model: &str, day: &str, input: u64, output: u64) -> UsageRecord {
        UsageRecord {
            key: key.into(),
            harness: Harness::Claude,
            message_id: None,
            request_id: None,
            sidechain: false,
            session_id: "s".into(),
            model: model.into(),
            timestamp_ms: crate::time::parse_rfc3339_ms(&format!("{day}T12:00:00Z")).unwrap_or_default(),
            tokens: Tokens {
                input,
                output,
                ..Tokens::default()
            },
            web_search_requests: 0,
            complete: true,
            speed: crate::record::Speed::Standard,
            inference_geo: None,
            iterations: vec![],
        }
    }

    #[test]
    fn rows_sum_per_day_model_agent_and_unpriced_stays_unpriced() {
        let t = crate::pricing::bundled();
        let rs = [
            rec("a", "claude-haiku-4-5", "2026-11-03", 1_000_000, 0), // $1
            rec("b", "claude-haiku-4-5", "2026-11-03", 0, 200_000),   // $1
            rec("c", "claude-haiku-4-5", "2026-11-04", 0, 100_000),   // $0.50
            rec("d", "mystery-1", "2026-11-04", 7, 7),
            rec("e", "claude-haiku-4-5", "2026-11-05", 5, 5),
        ];
        let input = [
            ("x", &rs[0]),
            ("x", &rs[1]),
            ("y", &rs[2]),
            ("y", &rs[3]),
            ("x", &rs[4]),
        ];
        let days = Days {
            since: Some("2026-11-03".into()),
            until: Some("2026-11-04".into()),
        };
        let s = daily(input, &t, &days);
        assert_eq!(s.rows.len(), 3, "the 5th is outside the days");
        assert_eq!((s.rows[0].requests, s.rows[0].usd), (2, Some(2.0)));
        assert_eq!(
            (s.rows[2].model.as_str(), s.rows[2].usd, s.rows[2].priced),
            ("mystery-1", None, false)
        );
        assert_eq!(s.unpriced_models, ["mystery-1"]);
        assert!((s.usd - 2.5).abs() < 1e-12);

        let by_agent = rollup(&s.rows, By::Agent);
        assert_eq!(
            by_agent.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
            ["x", "y"]
        );
        assert_eq!((by_agent[1].unpriced_rows, by_agent[1].tokens.output), (1, 100_007));
        assert!((by_agent[1].usd - 0.5).abs() < 1e-12);
        let by_day = rollup(&s.rows, By::Day);
        assert_eq!(by_day.len(), 2);
    }
}
