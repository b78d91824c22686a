//! The bundled price table: the last resort of the chain, so pricing degrades
//! to stale rather than failing offline. Dated; a live table supersedes it.
//!
//! Anthropic bills cache reads at 0.1x the input rate, 5-minute cache writes
//! at 1.25x and 1-hour writes at 2x; web search at $10 per 1,000 searches.
//! Sonnet 4, 4.5 and 4.6 and Opus 4.6 bill a request whose prompt is above
//! 200k tokens wholly at the long-context rates. OpenAI bills cached input at
//! its own rate and cache writes at nothing; GPT-5.4 bills a request above
//! 272k prompt tokens at 2x input and 1.5x output.

use std::collections::BTreeMap;

use super::{LongContext, Price, PriceTable, Rates, Source};

/// The day the bundled prices were checked.
pub const BUNDLED_AS_OF: &str = "2026-03-01";

const ANTHROPIC_WEB_SEARCH_PER_1K: f64 = 10.0;
const OPENAI_WEB_SEARCH_PER_1K: f64 = 10.0;

fn anthropic_rates(input: f64, output: f64) -> Rates {
    Rates {
        input,
        output,
        cache_read: input * 0.1,
        cache_write_5m: input * 1.25,
        cache_write_1h: input * 2.0,
    }
}

fn anthropic(input: f64, output: f64, long: Option<(f64, f64)>) -> Price {
    Price {
        rates: anthropic_rates(input, output),
        long_context: long.map(|(i, o)| LongContext {
            above_prompt_tokens: 200_000,
            rates: anthropic_rates(i, o),
        }),
        web_search_per_1k: ANTHROPIC_WEB_SEARCH_PER_1K,
    }
}

fn openai(input: f64, cached: f64, output: f64) -> Price {
    Price {
        rates: Rates {
            input,
            output,
            cache_read: cached,
            cache_write_5m: 0.0,
            cache_write_1h: 0.0,
        },
        long_context: None,
        web_search_per_1k: OPENAI_WEB_SEARCH_PER_1K,
    }
}

/// The bundled table ([`Source::Bundled`], [`BUNDLED_AS_OF`]).
pub fn bundled() -> PriceTable {
    let sonnet_long = Some((6.0, 22.5));
    let mut gpt_5_4 = openai(2.5, 0.25, 15.0);
    gpt_5_4.long_context = Some(LongContext {
        above_prompt_tokens: 272_000,
        rates: Rates {
            input: 5.0,
            output: 22.5,
            cache_read: 0.5,
            cache_write_5m: 0.0,
            cache_write_1h: 0.0,
        },
    });
    let models: [(&str, Price); 29] = [
        ("claude-opus-4-6", anthropic(5.0, 25.0, Some((10.0, 37.5)))),
        ("claude-opus-4-5", anthropic(5.0, 25.0, None)),
        ("claude-opus-4-1", anthropic(15.0, 75.0, None)),
        ("claude-opus-4", anthropic(15.0, 75.0, None)),
        ("claude-sonnet-4-6", anthropic(3.0, 15.0, sonnet_long)),
        ("claude-sonnet-4-5", anthropic(3.0, 15.0, sonnet_long)),
        ("claude-sonnet-4", anthropic(3.0, 15.0, sonnet_long)),
        ("claude-3-7-sonnet", anthropic(3.0, 15.0, None)),
        ("claude-3-5-sonnet", anthropic(3.0, 15.0, None)),
        ("claude-haiku-4-5", anthropic(1.0, 5.0, None)),
        ("claude-3-5-haiku", anthropic(0.8, 4.0, None)),
        ("claude-3-haiku", anthropic(0.25, 1.25, None)),
        ("claude-3-opus", anthropic(15.0, 75.0, None)),
        ("gpt-5", openai(1.25, 0.125, 10.0)),
        ("gpt-5-codex", openai(1.25, 0.125, 10.0)),
        ("gpt-5-mini", openai(0.25, 0.025, 2.0)),
        ("gpt-5-nano", openai(0.05, 0.005, 0.4)),
        ("gpt-5.1", openai(1.25, 0.125, 10.0)),
        ("gpt-5.1-codex", openai(1.25, 0.125, 10.0)),
        ("gpt-5.1-codex-max", openai(1.25, 0.125, 10.0)),
        ("gpt-5.1-codex-mini", openai(0.25, 0.025, 2.0)),
        ("gpt-5.2", openai(1.75, 0.175, 14.0)),
        ("gpt-5.2-codex", openai(1.75, 0.175, 14.0)),
        ("gpt-5.3-codex", openai(1.75, 0.175, 14.0)),
        ("gpt-5.4", gpt_5_4),
        ("gpt-4.1", openai(2.0, 0.5, 8.0)),
        ("o3", openai(2.0, 0.5, 8.0)),
        ("o4-mini", openai(1.1, 0.275, 4.4)),
        ("codex-mini-latest", openai(1.5, 0.375, 6.0)),
    ];
    let models: BTreeMap<String, Price> = models.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    match PriceTable::new(Source::Bundled, BUNDLED_AS_OF, models) {
        Ok(t) => t,
        // Every bundled price passes the checks (a unit test holds it to that).
        Err(_) => PriceTable {
            source: Source::Bundled,
            as_of: BUNDLED_AS_OF.to_string(),
            models: BTreeMap::new(),
            normalized: BTreeMap::new(),
        },
    }
}
