//! The bundled price table: the last resort of the chain, so pricing degrades
//! to stale rather than failing offline. Dated; a live table supersedes it.
//!
//! Anthropic: the rates Claude Code 2.1.332 carries in its own model catalog
//! (its pricing tiers, fast-mode rates and the 1.1x factor on US-only
//! inference), so warren's dollars match what the CLI shows; Claude 3 Haiku
//! and Opus, which that catalog no longer lists, at their last published
//! rates. Cache reads are 0.1x input (less on some newer tiers), 5-minute
//! writes 1.25x, 1-hour writes 2x; web search $10 per 1,000. That catalog has
//! one long-context tier: Haiku 5.5 above 100k prompt tokens.
//!
//! OpenAI (as of early 2026): cached input at its own rate, cache writes
//! free; GPT-5.4 bills a request above 272k prompt tokens at 2x input and
//! 1.5x output.

use std::collections::BTreeMap;

use super::{LongContext, Price, PriceTable, Rates, Source};

/// The day the bundled table was assembled.
pub const BUNDLED_AS_OF: &str = "2026-12-01";

const WEB_SEARCH_PER_1K: f64 = 10.0;
const US_INFERENCE: f64 = 1.1;

/// Anthropic rates: input, output, 5-minute write, 1-hour write, cache read.
const fn rates(input: f64, output: f64, w5: f64, w1h: f64, read: f64) -> Rates {
    Rates {
        input,
        output,
        cache_read: read,
        cache_write_5m: w5,
        cache_write_1h: w1h,
    }
}

const T_2_10: Rates = rates(2.0, 10.0, 2.5, 4.0, 0.2);
const T_2_10_R_0_10: Rates = rates(2.0, 10.0, 2.5, 4.0, 0.1);
const T_3_15: Rates = rates(3.0, 15.0, 3.75, 6.0, 0.3);
const T_4_20_R_0_20: Rates = rates(4.0, 20.0, 5.0, 8.0, 0.2);
const T_5_25: Rates = rates(5.0, 25.0, 6.25, 10.0, 0.5);
const T_8_40_R_0_20: Rates = rates(8.0, 40.0, 10.0, 16.0, 0.2);
const T_10_50: Rates = rates(10.0, 50.0, 12.5, 20.0, 1.0);
const T_10_50_R_0_25: Rates = rates(10.0, 50.0, 12.5, 20.0, 0.25);
const T_15_75: Rates = rates(15.0, 75.0, 18.75, 30.0, 1.5);
const HAIKU_3: Rates = rates(0.25, 1.25, 0.3, 0.5, 0.03);
const HAIKU_35: Rates = rates(0.8, 4.0, 1.0, 1.6, 0.08);
const HAIKU_45: Rates = rates(1.0, 5.0, 1.25, 2.0, 0.1);
const HAIKU_55: Rates = rates(0.1, 0.5, 0.125, 0.2, 0.01);
const HAIKU_55_LONG: Rates = rates(0.5, 2.5, 0.625, 1.0, 0.05);
// Fast mode.
const FAST_30_150: Rates = rates(30.0, 150.0, 37.5, 60.0, 3.0);
const FAST_10_50: Rates = rates(10.0, 50.0, 12.5, 20.0, 1.0);
const FAST_8_40: Rates = rates(8.0, 40.0, 10.0, 16.0, 0.4);
const FAST_16_80: Rates = rates(16.0, 80.0, 20.0, 32.0, 0.4);

fn anthropic(base: Rates, fast: Option<Rates>) -> Price {
    Price {
        rates: base,
        long_context: None,
        fast,
        web_search_per_1k: WEB_SEARCH_PER_1K,
        us_inference_multiplier: US_INFERENCE,
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
        fast: None,
        web_search_per_1k: WEB_SEARCH_PER_1K,
        us_inference_multiplier: 1.0,
    }
}

/// The bundled table ([`Source::Bundled`], [`BUNDLED_AS_OF`]).
pub fn bundled() -> PriceTable {
    let mut haiku_55 = anthropic(HAIKU_55, None);
    haiku_55.long_context = Some(LongContext {
        above_prompt_tokens: 100_000,
        rates: HAIKU_55_LONG,
    });
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
    let models: [(&str, Price); 40] = [
        ("claude-3-haiku", anthropic(HAIKU_3, None)),
        ("claude-3-opus", anthropic(T_15_75, None)),
        ("claude-3-5-haiku", anthropic(HAIKU_35, None)),
        ("claude-haiku-4-5", anthropic(HAIKU_45, None)),
        ("claude-haiku-5-5", haiku_55),
        ("claude-3-5-sonnet", anthropic(T_3_15, None)),
        ("claude-3-7-sonnet", anthropic(T_3_15, None)),
        ("claude-sonnet-4", anthropic(T_3_15, None)),
        ("claude-sonnet-4-5", anthropic(T_3_15, None)),
        ("claude-sonnet-4-6", anthropic(T_3_15, None)),
        ("claude-sonnet-5", anthropic(T_2_10, None)),
        ("claude-sonnet-5-5", anthropic(T_2_10_R_0_10, None)),
        ("claude-opus-4", anthropic(T_15_75, None)),
        ("claude-opus-4-1", anthropic(T_15_75, None)),
        ("claude-opus-4-5", anthropic(T_5_25, None)),
        ("claude-opus-4-6", anthropic(T_5_25, Some(FAST_30_150))),
        ("claude-opus-4-7", anthropic(T_5_25, Some(FAST_30_150))),
        ("claude-opus-4-8", anthropic(T_5_25, Some(FAST_10_50))),
        ("claude-opus-5", anthropic(T_5_25, Some(FAST_10_50))),
        ("claude-opus-5-5", anthropic(T_4_20_R_0_20, Some(FAST_8_40))),
        ("claude-fable-5", anthropic(T_10_50, None)),
        ("claude-fable-5-1", anthropic(T_10_50_R_0_25, None)),
        ("claude-fable-5-2", anthropic(T_8_40_R_0_20, Some(FAST_16_80))),
        ("claude-mythos-5", anthropic(T_10_50, None)),
        ("claude-mythos-5-1", anthropic(T_10_50_R_0_25, None)),
        ("claude-mythos-5-2", anthropic(T_8_40_R_0_20, Some(FAST_16_80))),
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
        ("o3", openai(2.0, 0.5, 8.0)),
        ("o4-mini", openai(1.1, 0.275, 4.4)),
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
