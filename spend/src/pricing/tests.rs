//! Pricing tests: the bundled table, name matching, the long-context tier,
//! live answers good and garbage, and the chain's fallbacks.

use super::*;
use crate::record::{Harness, Tokens};

fn req(model: &str, tokens: Tokens, web: u64) -> UsageRecord {
    UsageRecord {
        key: "k".into(),
        harness: Harness::Claude,
        message_id: None,
        request_id: None,
        sidechain: false,
        session_id: "s".into(),
        model: model.into(),
        timestamp_ms: 0,
        tokens,
        web_search_requests: web,
        complete: true,
        speed: crate::record::Speed::Standard,
        inference_geo: None,
        iterations: vec![],
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn bundled_prices_pass_their_own_checks() {
    let t = bundled();
    assert_eq!(t.models.len(), 40, "an entry failed the checks");
    assert_eq!((t.source, t.as_of.as_str()), (Source::Bundled, BUNDLED_AS_OF));
}

#[test]
fn names_match_exactly_then_normalized() {
    let t = bundled();
    let id = |m: &str| t.lookup(m).map(|(id, _)| id.to_string());
    assert_eq!(id("claude-sonnet-4-5-20250929").as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(id("anthropic/claude-sonnet-4.5").as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(id("claude-sonnet-4-20250514").as_deref(), Some("claude-sonnet-4"));
    assert_eq!(id("claude-opus-4-1-20250805").as_deref(), Some("claude-opus-4-1"));
    assert_eq!(id("claude-3-5-sonnet-latest").as_deref(), Some("claude-3-5-sonnet"));
    assert_eq!(id("claude-opus-5-5").as_deref(), Some("claude-opus-5-5"));
    assert_eq!(id("gpt-5.1-codex-max").as_deref(), Some("gpt-5.1-codex-max"));
    assert_eq!(id("openai/gpt-5-2025-08-07").as_deref(), Some("gpt-5"));
    assert_eq!(id("claude-haiku-4-5@20251001").as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(id("claude-nova-9"), None);
    assert_eq!(id(crate::UNKNOWN_MODEL), None);
    assert_eq!(
        normalize("us.anthropic.claude-3-5-sonnet-20241022-v2:0"),
        "claude-3-5-sonnet"
    );
}

#[test]
fn a_request_costs_its_buckets() {
    let t = bundled();
    let tokens = Tokens {
        input: 1_000,
        cache_read: 10_000,
        cache_write_5m: 2_000,
        cache_write_1h: 4_000,
        output: 500,
        reasoning: 0,
    };
    // Sonnet 4.5: 1000*3 + 10000*0.3 + 2000*3.75 + 4000*6 + 500*15 = 3000 + 3000
    // + 7500 + 24000 + 7500 = 45_000 per million = $0.045, + 2 searches * $0.01.
    let c = t.cost(&req("claude-sonnet-4-5-20250929", tokens, 2)).expect("priced");
    assert!(close(c, 0.045 + 0.02), "{c}");
    // Opus 5.5 (4 / 20, cache read 0.2, write-5m 5, write-1h 8): 4000 + 2000
    // + 10000 + 32000 + 10000 = 58_000 per million.
    let c = t.cost(&req("claude-opus-5-5", tokens, 0)).expect("priced");
    assert!(close(c, 0.058), "{c}");
    assert_eq!(
        t.cost(&req("claude-nova-9", tokens, 0)),
        None,
        "unknown is unpriced, not $0"
    );
}

#[test]
fn the_long_context_tier_applies_per_request_above_its_threshold() {
    let t = bundled();
    // Haiku 5.5 above 100k prompt tokens: the whole request at 0.5 / 2.5,
    // cache read 0.05.
    let long = Tokens {
        input: 1,
        cache_read: 100_000,
        output: 1_000,
        ..Tokens::default()
    };
    let c = t.cost(&req("claude-haiku-5-5", long, 0)).expect("priced");
    assert!(close(c, (1.0 * 0.5 + 100_000.0 * 0.05 + 1_000.0 * 2.5) / 1e6), "{c}");
    // Exactly 100_000 is not above it: 0.1 / 0.5, cache read 0.01.
    let edge = Tokens { input: 0, ..long };
    let c = t.cost(&req("claude-haiku-5-5", edge, 0)).expect("priced");
    assert!(close(c, (100_000.0 * 0.01 + 1_000.0 * 0.5) / 1e6), "{c}");
    // GPT-5.4 above 272k: 5 input, 0.5 cached, 22.5 output.
    let big = Tokens {
        input: 2_000,
        cache_read: 280_000,
        output: 100,
        ..Tokens::default()
    };
    let c = t.cost(&req("gpt-5.4", big, 0)).expect("priced");
    assert!(close(c, (2_000.0 * 5.0 + 280_000.0 * 0.5 + 100.0 * 22.5) / 1e6), "{c}");
}

#[test]
fn fast_mode_and_us_inference_are_priced_as_billed() {
    let t = bundled();
    let tokens = Tokens {
        input: 1_000,
        output: 1_000,
        ..Tokens::default()
    };
    let mut r = req("claude-opus-4-6", tokens, 1);
    let standard = (1_000.0 * 5.0 + 1_000.0 * 25.0) / 1e6 + 0.01;
    assert!(close(t.cost(&r).expect("priced"), standard));
    r.speed = crate::record::Speed::Fast;
    let fast = (1_000.0 * 30.0 + 1_000.0 * 150.0) / 1e6 + 0.01;
    assert!(close(t.cost(&r).expect("priced"), fast));
    // A model without fast rates is priced at its standard rates.
    let mut h = req("claude-haiku-4-5", tokens, 0);
    h.speed = crate::record::Speed::Fast;
    assert!(close(t.cost(&h).expect("priced"), (1_000.0 + 5_000.0) / 1e6));
    // US-only inference: tokens times 1.1, searches not.
    r.speed = crate::record::Speed::Standard;
    r.inference_geo = Some("us".into());
    assert!(close(
        t.cost(&r).expect("priced"),
        (1_000.0 * 5.0 + 1_000.0 * 25.0) / 1e6 * 1.1 + 0.01
    ));
    r.inference_geo = Some("global".into());
    assert!(close(t.cost(&r).expect("priced"), standard));
    // OpenAI has no such factor.
    let mut g = req("gpt-5", tokens, 0);
    g.inference_geo = Some("us".into());
    assert!(close(
        t.cost(&g).expect("priced"),
        (1_000.0 * 1.25 + 1_000.0 * 10.0) / 1e6
    ));
}

const OPEN_ROUTER: &str = r#"{"data":[
 {"id":"anthropic/claude-sonnet-4.5","pricing":{"prompt":"0.000004","completion":"0.00002","input_cache_read":"0.0000004","input_cache_write":"0.000005","web_search":"0.02"}},
 {"id":"anthropic/claude-sonnet-4.5:thinking","pricing":{"prompt":"1","completion":"1"}},
 {"id":"openai/gpt-5-codex","pricing":{"prompt":"0.000002","completion":"0.00001","input_cache_read":"0.0000002"}},
 {"id":"bad/negative","pricing":{"prompt":"-0.1","completion":"0.1"}}
]}"#;

#[test]
fn an_open_router_list_is_read() {
    let t = parse_live(OPEN_ROUTER.as_bytes(), "2026-12-01").expect("good table");
    assert_eq!((t.source, t.as_of.as_str()), (Source::Live, "2026-12-01"));
    assert_eq!(
        t.models.len(),
        2,
        "the variant is skipped and the negative refused: {:?}",
        t.models.keys()
    );
    let (id, p) = t.lookup("claude-sonnet-4-5-20250929").expect("normalized match");
    assert_eq!(id, "anthropic/claude-sonnet-4.5");
    assert!(close(p.rates.input, 4.0) && close(p.rates.cache_write_5m, 5.0) && close(p.rates.cache_write_1h, 8.0));
    assert!(close(p.web_search_per_1k, 20.0));
    let (_, g) = t.lookup("gpt-5-codex").expect("present");
    assert_eq!(g.rates.cache_write_5m, 0.0, "an unlisted bucket costs nothing");
}

#[test]
fn a_lite_llm_map_is_read_with_its_tiers() {
    let body = r#"{
      "sample_spec": {"input_cost_per_token": "?", "litellm_provider": "x"},
      "claude-sonnet-4-5": {"litellm_provider": "anthropic", "input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5,
        "cache_read_input_token_cost": 3e-7, "cache_creation_input_token_cost": 3.75e-6,
        "cache_creation_input_token_cost_above_1hr": 6e-6,
        "input_cost_per_token_above_200k_tokens": 6e-6, "output_cost_per_token_above_200k_tokens": 2.25e-5,
        "search_context_cost_per_query": {"search_context_size_medium": 0.01}},
      "bedrock/claude-sonnet-4-5": {"litellm_provider": "bedrock", "input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}
    }"#;
    let t = parse_live(body.as_bytes(), "2026-12-01").expect("good table");
    assert_eq!(t.models.keys().collect::<Vec<_>>(), ["claude-sonnet-4-5"]);
    let p = t.models["claude-sonnet-4-5"];
    assert!(close(p.rates.cache_write_1h, 6.0) && close(p.web_search_per_1k, 10.0));
    let lc = p.long_context.expect("tier");
    assert_eq!(lc.above_prompt_tokens, 200_000);
    // Cache rates the tier does not list scale with its input: 0.3 * 2.
    assert!(close(lc.rates.input, 6.0) && close(lc.rates.output, 22.5) && close(lc.rates.cache_read, 0.6));
}

#[test]
fn garbage_answers_are_refused_with_reasons() {
    let cases: [(&[u8], &str); 6] = [
        (b"<html>502 Bad Gateway</html>", "not JSON"),
        (b"", "not JSON"),
        (b"[1,2,3]", "neither"),
        (b"{\"data\":[]}", "no models"),
        (
            b"{\"data\":[{\"id\":\"x\",\"pricing\":{\"prompt\":\"NaN\",\"completion\":\"1\"}}]}",
            "no usable model",
        ),
        (
            b"{\"m\":{\"input_cost_per_token\":5000,\"output_cost_per_token\":1}}",
            "no usable model",
        ),
    ];
    for (body, why) in cases {
        match parse_live(body, "2026-12-01") {
            Err(SpendError::Pricing { detail }) => assert!(detail.contains(why), "{detail:?} lacks {why:?}"),
            other => panic!("{:?} was not refused: {other:?}", String::from_utf8_lossy(body)),
        }
    }
    let huge = vec![b' '; MAX_LIVE_BYTES + 1];
    assert!(parse_live(&huge, "2026-12-01").is_err());
    assert!(parse_live(OPEN_ROUTER.as_bytes(), "today").is_err());
}

#[test]
fn the_chain_falls_back_live_then_cached_then_bundled() {
    let good_live = LiveAnswer {
        body: Ok(OPEN_ROUTER.as_bytes().to_vec()),
        fetched_on: "2026-12-01".into(),
    };
    let hung = LiveAnswer {
        body: Err("timed out after 10 s".into()),
        fetched_on: "2026-12-01".into(),
    };
    let garbage = LiveAnswer {
        body: Ok(b"garbage".to_vec()),
        fetched_on: "2026-12-01".into(),
    };
    let kept = parse_live(OPEN_ROUTER.as_bytes(), "2026-11-20").expect("good");
    let cached = CachedTable(Some(kept.to_json()));
    let none = CachedTable(None);

    let c = PricingChain::standard(&good_live, &cached).choose();
    assert_eq!((c.table.source, c.table.as_of.as_str()), (Source::Live, "2026-12-01"));
    assert!(c.passed_over.is_empty());

    let c = PricingChain::standard(&hung, &cached).choose();
    assert_eq!((c.table.source, c.table.as_of.as_str()), (Source::Cached, "2026-11-20"));
    assert_eq!(c.passed_over.len(), 1);
    assert!(c.passed_over[0].1.to_string().contains("timed out"));
    // The cached table still matches names after its round trip.
    assert!(c.table.lookup("claude-sonnet-4-5-20250929").is_some());

    let c = PricingChain::standard(&garbage, &none).choose();
    assert_eq!(
        (c.table.source, c.table.as_of.as_str()),
        (Source::Bundled, BUNDLED_AS_OF)
    );
    assert_eq!(
        c.passed_over.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [Source::Live, Source::Cached]
    );

    let c = PricingChain::standard(&hung, &CachedTable(Some("{\"broken\":".into()))).choose();
    assert_eq!(c.table.source, Source::Bundled);
}
