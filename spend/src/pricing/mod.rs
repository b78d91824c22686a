//! Prices: a dated [`PriceTable`] of per-model rates, the [`PricingSource`]
//! trait, and [`PricingChain`], which takes the live table, else the last good
//! cached one, else the bundled one, and says which it took.
//!
//! Rates are dollars per million tokens per bucket (uncached input, output,
//! cache read, 5-minute and 1-hour cache writes), plus dollars per 1,000 web
//! searches. A model may have a long-context tier: a request whose prompt
//! (uncached input + cache reads + cache writes) is above the tier's threshold
//! is priced wholly at the tier's rates, per request, as Anthropic and OpenAI
//! bill it. Prices are applied at query time: records hold tokens only.
//!
//! Model names match exactly first, then by [`normalize`]d name. A model
//! unknown to the table is unpriced: reports count its tokens and flag it,
//! they never price it at $0.

mod bundled;
mod live;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::SpendError;
use crate::record::{Speed, UsageRecord};

pub use bundled::{BUNDLED_AS_OF, bundled};
pub use live::{LiveFormat, MAX_LIVE_BYTES, detect as detect_live, parse_live};

/// Dollars per million tokens of each bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write_5m: f64,
    pub cache_write_1h: f64,
}

/// The rates a request above `above_prompt_tokens` is billed at.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LongContext {
    pub above_prompt_tokens: u64,
    pub rates: Rates,
}

/// One model's prices.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub rates: Rates,
    pub long_context: Option<LongContext>,
    /// Rates of a request made in fast mode ([`Speed::Fast`]); without them
    /// a fast request is priced at `rates`.
    #[serde(default)]
    pub fast: Option<Rates>,
    /// Dollars per 1,000 server-side web search requests.
    pub web_search_per_1k: f64,
    /// The factor on token costs of a request whose `inference_geo` is `us`
    /// (Anthropic bills US-only inference at 1.1x); 1 where there is none.
    #[serde(default = "one")]
    pub us_inference_multiplier: f64,
}

fn one() -> f64 {
    1.0
}

impl Default for Price {
    fn default() -> Price {
        Price {
            rates: Rates::default(),
            long_context: None,
            fast: None,
            web_search_per_1k: 0.0,
            us_inference_multiplier: 1.0,
        }
    }
}

impl Price {
    /// What one request cost, in dollars: fast-mode rates for a fast request,
    /// else the long-context rates when its prompt is above the tier's
    /// threshold, else the base rates; times the US-inference factor; plus
    /// its web searches.
    ///
    /// A message of several model calls ([`UsageRecord::iterations`]) meets
    /// the long-context threshold call by call.
    pub fn cost(&self, r: &UsageRecord) -> f64 {
        let geo = if r.inference_geo.as_deref() == Some("us") {
            self.us_inference_multiplier
        } else {
            1.0
        };
        let tokens = match (r.speed, self.fast, self.long_context) {
            (Speed::Fast, Some(fast), _) => priced(&r.tokens, &fast),
            (_, _, Some(lc)) if !r.iterations.is_empty() => r
                .iterations
                .iter()
                .map(|t| {
                    priced(
                        t,
                        if t.prompt() > lc.above_prompt_tokens {
                            &lc.rates
                        } else {
                            &self.rates
                        },
                    )
                })
                .sum(),
            (_, _, Some(lc)) if r.tokens.prompt() > lc.above_prompt_tokens => priced(&r.tokens, &lc.rates),
            _ => priced(&r.tokens, &self.rates),
        };
        tokens * geo + r.web_search_requests as f64 * self.web_search_per_1k / 1000.0
    }

    fn check(&self) -> Result<(), String> {
        if !self.us_inference_multiplier.is_finite() || !(1.0..=10.0).contains(&self.us_inference_multiplier) {
            return Err(format!(
                "US-inference factor {} is absurd",
                self.us_inference_multiplier
            ));
        }
        let all = [self.rates]
            .into_iter()
            .chain(self.long_context.map(|l| l.rates))
            .chain(self.fast);
        for r in all {
            for (name, v) in [
                ("input", r.input),
                ("output", r.output),
                ("cache_read", r.cache_read),
                ("cache_write_5m", r.cache_write_5m),
                ("cache_write_1h", r.cache_write_1h),
            ] {
                if !v.is_finite() || !(0.0..=MAX_RATE).contains(&v) {
                    return Err(format!(
                        "{name} rate {v} is not between 0 and {MAX_RATE} dollars per million"
                    ));
                }
            }
        }
        if !self.web_search_per_1k.is_finite() || !(0.0..=1000.0).contains(&self.web_search_per_1k) {
            return Err(format!(
                "web search price {} per 1,000 is absurd",
                self.web_search_per_1k
            ));
        }
        if self.rates.input == 0.0 && self.rates.output == 0.0 {
            return Err("no input or output price".into());
        }
        Ok(())
    }
}

/// Tokens times rates, in dollars.
fn priced(t: &crate::record::Tokens, rates: &Rates) -> f64 {
    let m = |tokens: u64, per_million: f64| tokens as f64 * per_million / 1_000_000.0;
    m(t.input, rates.input)
        + m(t.cache_read, rates.cache_read)
        + m(t.cache_write_5m, rates.cache_write_5m)
        + m(t.cache_write_1h, rates.cache_write_1h)
        + m(t.output, rates.output)
}

/// No model costs more than this per million tokens of any bucket.
pub const MAX_RATE: f64 = 1000.0;

/// Where a table came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Live,
    Cached,
    Bundled,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Live => "live",
            Source::Cached => "cached",
            Source::Bundled => "bundled",
        }
    }
}

/// A dated price table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PriceTable {
    pub source: Source,
    /// The day the prices were true (`YYYY-MM-DD`).
    pub as_of: String,
    /// By the model id the source uses.
    pub models: BTreeMap<String, Price>,
    /// Normalized name -> model id (built by [`PriceTable::new`]).
    #[serde(skip)]
    normalized: BTreeMap<String, String>,
}

impl PriceTable {
    /// A table of `models`; entries with absurd prices are refused, and a
    /// table left with no model is refused.
    pub fn new(
        source: Source,
        as_of: impl Into<String>,
        models: BTreeMap<String, Price>,
    ) -> Result<PriceTable, SpendError> {
        let mut kept = BTreeMap::new();
        let mut refused = vec![];
        for (id, p) in models {
            match p.check() {
                Ok(()) => {
                    kept.insert(id, p);
                }
                Err(why) => refused.push(format!("{id}: {why}")),
            }
        }
        if kept.is_empty() {
            let detail = match refused.first() {
                Some(first) => format!("no usable model ({} refused, e.g. {first})", refused.len()),
                None => "no models".into(),
            };
            return Err(SpendError::Pricing { detail });
        }
        let mut t = PriceTable {
            source,
            as_of: as_of.into(),
            models: kept,
            normalized: BTreeMap::new(),
        };
        t.index();
        Ok(t)
    }

    fn index(&mut self) {
        self.normalized.clear();
        // Shorter ids first, so `claude-sonnet-4-5` wins over a dated alias
        // of the same normalized name.
        let mut ids: Vec<&String> = self.models.keys().collect();
        ids.sort_by(|a, b| a.len().cmp(&b.len()).then(a.cmp(b)));
        for id in ids {
            self.normalized.entry(normalize(id)).or_insert_with(|| id.clone());
        }
    }

    /// The table's entry for a model id: exact, then normalized.
    pub fn lookup(&self, model: &str) -> Option<(&str, &Price)> {
        if let Some((id, p)) = self.models.get_key_value(model) {
            return Some((id.as_str(), p));
        }
        let id = self.normalized.get(&normalize(model))?;
        self.models.get_key_value(id).map(|(id, p)| (id.as_str(), p))
    }

    /// What a request cost; `None` when its model is not in the table.
    pub fn cost(&self, r: &UsageRecord) -> Option<f64> {
        self.lookup(&r.model).map(|(_, p)| p.cost(r))
    }

    /// As JSON, to keep as the last good table.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A kept table back, as [`Source::Cached`], checked like a new one.
    pub fn from_cached_json(s: &str) -> Result<PriceTable, SpendError> {
        let t: PriceTable = serde_json::from_str(s).map_err(|e| SpendError::Pricing {
            detail: format!("cached table: {e}"),
        })?;
        PriceTable::new(Source::Cached, t.as_of, t.models)
    }
}

/// Model-id normalization for matching names across sources:
/// lowercase; drop a provider prefix up to the last `/` (`anthropic/`,
/// `openai/`) or a leading `anthropic.`; drop a `[...]`, `:...` or `@...`
/// suffix; drop a trailing `-latest`, `-YYYYMMDD`, `-YYYY-MM-DD` or `-vN`;
/// and write version dots as dashes (`claude-sonnet-4.5` = `claude-sonnet-4-5`,
/// `gpt-5.1-codex` = `gpt-5-1-codex`).
pub fn normalize(model: &str) -> String {
    let mut s = model.trim().to_ascii_lowercase();
    if let Some(i) = s.rfind('/') {
        s = s[i + 1..].to_string();
    }
    for prefix in ["us.anthropic.", "eu.anthropic.", "anthropic."] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest.to_string();
        }
    }
    for cut in ['[', ':', '@'] {
        if let Some(i) = s.find(cut) {
            s.truncate(i);
        }
    }
    loop {
        let before = s.len();
        if let Some(rest) = s.strip_suffix("-latest") {
            s = rest.to_string();
        }
        let b = s.as_bytes();
        let digits = |from: usize, to: usize| b[from..to].iter().all(u8::is_ascii_digit);
        let n = b.len();
        if n > 9 && b[n - 9] == b'-' && digits(n - 8, n) {
            s.truncate(n - 9);
        } else if n > 11
            && b[n - 11] == b'-'
            && b[n - 6] == b'-'
            && b[n - 3] == b'-'
            && digits(n - 10, n - 6)
            && digits(n - 5, n - 3)
            && digits(n - 2, n)
        {
            s.truncate(n - 11);
        } else if n > 3 && b[n - 3] == b'-' && b[n - 2] == b'v' && b[n - 1].is_ascii_digit() {
            s.truncate(n - 3);
        }
        if s.len() == before {
            break;
        }
    }
    s.replace('.', "-")
}

/// Somewhere a price table comes from.
pub trait PricingSource {
    /// Which kind of source this is.
    fn kind(&self) -> Source;
    /// The table, or why there is none.
    fn table(&self) -> Result<PriceTable, SpendError>;
}

/// The bundled table as a source.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bundled;

impl PricingSource for Bundled {
    fn kind(&self) -> Source {
        Source::Bundled
    }
    fn table(&self) -> Result<PriceTable, SpendError> {
        Ok(bundled())
    }
}

/// A live endpoint's answer, already fetched by the caller (the node does the
/// HTTP and passes the body, or the fetch's failure).
#[derive(Debug, Clone)]
pub struct LiveAnswer {
    pub body: Result<Vec<u8>, String>,
    /// The day it was fetched (`YYYY-MM-DD`): the table's `as_of`.
    pub fetched_on: String,
}

impl PricingSource for LiveAnswer {
    fn kind(&self) -> Source {
        Source::Live
    }
    fn table(&self) -> Result<PriceTable, SpendError> {
        match &self.body {
            Ok(body) => parse_live(body, &self.fetched_on),
            Err(e) => Err(SpendError::Pricing {
                detail: format!("live endpoint: {e}"),
            }),
        }
    }
}

/// The last good table as the node kept it ([`PriceTable::to_json`]).
#[derive(Debug, Clone)]
pub struct CachedTable(pub Option<String>);

impl PricingSource for CachedTable {
    fn kind(&self) -> Source {
        Source::Cached
    }
    fn table(&self) -> Result<PriceTable, SpendError> {
        match &self.0 {
            Some(json) => PriceTable::from_cached_json(json),
            None => Err(SpendError::Pricing {
                detail: "no cached table yet".into(),
            }),
        }
    }
}

/// Tries sources in order and takes the first table that is good.
pub struct PricingChain<'a> {
    sources: Vec<&'a dyn PricingSource>,
}

/// What the chain chose, and why the sources before it were passed over.
#[derive(Debug, Clone)]
pub struct Chosen {
    pub table: PriceTable,
    pub passed_over: Vec<(Source, SpendError)>,
}

impl<'a> PricingChain<'a> {
    /// Live, then cached, then bundled (the bundled table never fails).
    pub fn standard(live: &'a LiveAnswer, cached: &'a CachedTable) -> PricingChain<'a> {
        PricingChain {
            sources: vec![live, cached, &Bundled],
        }
    }

    pub fn new(sources: Vec<&'a dyn PricingSource>) -> PricingChain<'a> {
        PricingChain { sources }
    }

    pub fn choose(&self) -> Chosen {
        let mut passed_over = vec![];
        for s in &self.sources {
            match s.table() {
                Ok(table) => return Chosen { table, passed_over },
                Err(e) => passed_over.push((s.kind(), e)),
            }
        }
        Chosen {
            table: bundled(),
            passed_over,
        }
    }
}

#[cfg(test)]
mod tests;
