//! The live models endpoint's answer, parsed and checked (pure: the node does
//! the fetch). Two documented JSON shapes are read, told apart by their form:
//!
//! - **OpenRouter's models list** (the seed's choice): `{"data": [{"id":
//!   "anthropic/claude-sonnet-4.5", "pricing": {"prompt", "completion",
//!   "input_cache_read", "input_cache_write", "web_search"}}]}`, dollars per
//!   token (per search for `web_search`), numbers or strings. It lists no
//!   1-hour cache write price: for `anthropic/` models it is taken as 2x the
//!   input rate (Anthropic's published multiplier), otherwise 0. It lists no
//!   long-context tier. Variant ids (`...:thinking`, `...:free`) are skipped.
//! - **A LiteLLM-style price map**: `{"MODEL": {"input_cost_per_token",
//!   "output_cost_per_token", "cache_read_input_token_cost",
//!   "cache_creation_input_token_cost",
//!   "cache_creation_input_token_cost_above_1hr",
//!   "input_cost_per_token_above_200k_tokens" (and the output and cache
//!   variants; any `_above_Nk_tokens`), "search_context_cost_per_query",
//!   "litellm_provider"}}`. Only entries of providers `anthropic` and `openai`
//!   (or with no provider) are read: resellers' prices differ.
//!
//! Neither shape lists fast-mode rates (a fast request is then priced at the
//! standard rates) or Anthropic's 1.1x for US-only inference (applied to
//! Anthropic models anyway). A bucket with no listed price costs 0 (OpenAI
//! cache writes are free). The
//! answer is refused with a reason when it is too big, not JSON, of neither
//! shape, or has no model with sane prices.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{LongContext, Price, PriceTable, Rates, Source};
use crate::error::SpendError;

/// Anthropic's factor for US-only inference, which neither shape lists.
const US_INFERENCE: f64 = 1.1;

/// The largest answer read.
pub const MAX_LIVE_BYTES: usize = 32 * 1024 * 1024;

/// Which shape an answer had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveFormat {
    OpenRouter,
    LiteLlm,
}

/// Which shape `body` has, if either.
pub fn detect(v: &Value) -> Option<LiveFormat> {
    let obj = v.as_object()?;
    if obj.get("data").is_some_and(Value::is_array) {
        return Some(LiveFormat::OpenRouter);
    }
    if obj
        .values()
        .any(|e| e.get("input_cost_per_token").is_some() || e.get("output_cost_per_token").is_some())
    {
        return Some(LiveFormat::LiteLlm);
    }
    None
}

/// The live table from an endpoint's body, or why it was refused.
pub fn parse_live(body: &[u8], fetched_on: &str) -> Result<PriceTable, SpendError> {
    let refuse = |detail: String| SpendError::Pricing { detail };
    if body.len() > MAX_LIVE_BYTES {
        return Err(refuse(format!(
            "answer of {} bytes is over {MAX_LIVE_BYTES}",
            body.len()
        )));
    }
    if crate::time::parse_rfc3339_ms(&format!("{fetched_on}T00:00:00Z")).is_none() {
        return Err(refuse(format!("fetch day {fetched_on:?} is not YYYY-MM-DD")));
    }
    let v: Value = serde_json::from_slice(body).map_err(|e| refuse(format!("not JSON: {e}")))?;
    let models = match detect(&v) {
        Some(LiveFormat::OpenRouter) => open_router(&v),
        Some(LiveFormat::LiteLlm) => lite_llm(&v),
        None => {
            return Err(refuse(
                "neither an OpenRouter models list nor a LiteLLM-style price map".into(),
            ));
        }
    };
    PriceTable::new(Source::Live, fetched_on, models)
}

/// A price as a number or a numeric string; negative and garbage are kept as
/// NaN so the table's checks refuse the entry by name.
fn num(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) if s.trim().is_empty() => None,
        Value::String(s) => Some(s.trim().parse::<f64>().unwrap_or(f64::NAN)),
        Value::Null => None,
        _ => Some(f64::NAN),
    }
}

fn per_million(per_token: Option<f64>) -> f64 {
    per_token.map_or(0.0, |p| p * 1_000_000.0)
}

fn open_router(v: &Value) -> BTreeMap<String, Price> {
    let mut out = BTreeMap::new();
    let Some(list) = v.get("data").and_then(Value::as_array) else {
        return out;
    };
    for m in list {
        let (Some(id), Some(p)) = (m.get("id").and_then(Value::as_str), m.get("pricing")) else {
            continue;
        };
        if id.contains(':') {
            continue;
        }
        let input = per_million(num(p.get("prompt")));
        let w1h = if id.starts_with("anthropic/") { input * 2.0 } else { 0.0 };
        let price = Price {
            rates: Rates {
                input,
                output: per_million(num(p.get("completion"))),
                cache_read: per_million(num(p.get("input_cache_read"))),
                cache_write_5m: per_million(num(p.get("input_cache_write"))),
                cache_write_1h: w1h,
            },
            long_context: None,
            fast: None,
            web_search_per_1k: num(p.get("web_search")).map_or(0.0, |s| s * 1000.0),
            us_inference_multiplier: if id.starts_with("anthropic/") {
                US_INFERENCE
            } else {
                1.0
            },
        };
        out.insert(id.to_string(), price);
    }
    out
}

fn lite_llm(v: &Value) -> BTreeMap<String, Price> {
    let mut out = BTreeMap::new();
    let Some(map) = v.as_object() else { return out };
    for (id, e) in map {
        let Some(e) = e.as_object() else { continue };
        let provider = e.get("litellm_provider").and_then(Value::as_str);
        if !matches!(provider, None | Some("anthropic") | Some("openai")) {
            continue;
        }
        if e.get("input_cost_per_token").is_none() && e.get("output_cost_per_token").is_none() {
            continue;
        }
        let rates = lite_rates(e, "");
        let long_context = long_tier(e).map(|(above, suffix)| LongContext {
            above_prompt_tokens: above,
            rates: fill(lite_rates(e, &suffix), &rates),
        });
        let web = e
            .get("search_context_cost_per_query")
            .and_then(|s| num(s.get("search_context_size_medium")).or_else(|| num(s.get("search_context_size_low"))))
            .map_or(0.0, |p| p * 1000.0);
        out.insert(
            id.clone(),
            Price {
                rates,
                long_context,
                fast: None,
                web_search_per_1k: web,
                us_inference_multiplier: if provider == Some("anthropic") || id.starts_with("claude-") {
                    US_INFERENCE
                } else {
                    1.0
                },
            },
        );
    }
    out
}

fn lite_rates(e: &Map<String, Value>, suffix: &str) -> Rates {
    let get = |name: &str| num(e.get(&format!("{name}{suffix}")));
    let write_5m = get("cache_creation_input_token_cost");
    let write_1h = if suffix.is_empty() {
        num(e.get("cache_creation_input_token_cost_above_1hr"))
    } else {
        num(e.get(&format!("cache_creation_input_token_cost_above_1hr{suffix}")))
    };
    Rates {
        input: per_million(get("input_cost_per_token")),
        output: per_million(get("output_cost_per_token")),
        cache_read: per_million(get("cache_read_input_token_cost")),
        cache_write_5m: per_million(write_5m),
        cache_write_1h: per_million(write_1h),
    }
}

/// A long-context tier's threshold and key suffix (`_above_200k_tokens`).
fn long_tier(e: &Map<String, Value>) -> Option<(u64, String)> {
    e.keys().find_map(|k| {
        let n = k
            .strip_prefix("input_cost_per_token_above_")?
            .strip_suffix("k_tokens")?;
        let above = n.parse::<u64>().ok()? * 1000;
        Some((above, format!("_above_{n}k_tokens")))
    })
}

/// Long-context rates a source did not list take the scaled base rates: a
/// tier with only input and output listed keeps the base multipliers.
fn fill(mut tier: Rates, base: &Rates) -> Rates {
    let scale = if base.input > 0.0 { tier.input / base.input } else { 1.0 };
    if tier.output == 0.0 {
        tier.output = base.output;
    }
    if tier.cache_read == 0.0 {
        tier.cache_read = base.cache_read * scale;
    }
    if tier.cache_write_5m == 0.0 {
        tier.cache_write_5m = base.cache_write_5m * scale;
    }
    if tier.cache_write_1h == 0.0 {
        tier.cache_write_1h = base.cache_write_1h * scale;
    }
    tier
}
