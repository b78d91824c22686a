//! The committed fixture homes (`tests/fixtures/claude-home`, `codex-home`),
//! scanned as `warren spend scan` does: exact buckets per request and dollars
//! checked by hand arithmetic (bundled prices, dollars per million tokens).

use std::path::{Path, PathBuf};

use spend::scan::{self, Job, Outcome};
use spend::{Days, Harness, PriceTable, RecordSet, SpendError, Tokens, UsageRecord, pricing};

fn home(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

struct Scanned {
    set: RecordSet,
    scans: Vec<(scan::SessionFile, scan::FileScan)>,
}

fn scan_home(name: &str) -> Scanned {
    let roots = scan::detect(&home(name)).expect("a known layout");
    let mut files = vec![];
    for r in &roots {
        files.extend(scan::list(r).expect("listed"));
    }
    let jobs: Vec<Job<'_>> = files.iter().map(|file| Job { file, prev: None }).collect();
    let scans = scan::scan_many(&jobs, 2);
    let mut set = RecordSet::new();
    for s in &scans {
        for r in &s.parsed.records {
            set.insert(r.clone());
        }
    }
    Scanned {
        set,
        scans: files.into_iter().zip(scans).collect(),
    }
}

fn counted<'a>(s: &'a Scanned, key: &str) -> &'a UsageRecord {
    s.set
        .counted()
        .into_iter()
        .find(|r| r.key == key)
        .unwrap_or_else(|| panic!("{key} is not counted"))
}

fn usd(t: &PriceTable, r: &UsageRecord) -> f64 {
    t.cost(r).unwrap_or_else(|| panic!("{} is not priced", r.model))
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-12, "{a} != {b}");
}

fn tokens(input: u64, cache_read: u64, w5: u64, w1: u64, output: u64) -> Tokens {
    Tokens {
        input,
        cache_read,
        cache_write_5m: w5,
        cache_write_1h: w1,
        output,
        reasoning: 0,
    }
}

#[test]
fn claude_home_gives_exact_buckets_and_dollars() {
    let s = scan_home("claude-home");
    let t = pricing::bundled();
    let keys: Vec<&str> = s.set.counted().iter().map(|r| r.key.as_str()).collect();
    // A1, A2 (once, though session C copies it), B1 (once: three streaming
    // lines and a sidechain replay under req_ZZ), B2, B3 (an inline sidechain
    // request: real), B4 (unknown model), S1 (the subagent's own), B5 (no
    // requestId), C1, C2, C3 and C4 (CLI 2.1.332), D1. Not: the synthetic line,
    // D2-D6, the cut last line, the CLI's cost-state and api-request lines.
    assert_eq!(
        keys,
        [
            "claude:msg_A1:req_A1",
            "claude:msg_A2:req_A2",
            "claude:msg_B1:req_B1",
            "claude:msg_B2:req_B2",
            "claude:msg_B3:req_B3",
            "claude:msg_B4:req_B4",
            "claude:msg_S1:req_S1",
            "claude:msg_B5",
            "claude:msg_C1:req_C1",
            "claude:msg_C2:req_C2",
            "claude:msg_C3:req_C3",
            "claude:msg_C4:req_C4",
            "claude:msg_D1:req_D1",
        ]
    );

    // Sonnet 4 (CLI 1.0.51, no 5m/1h split: all writes are 5-minute):
    // 3 input, 0.30 read, 3.75 write-5m, 15 output.
    let a1 = counted(&s, "claude:msg_A1:req_A1");
    assert_eq!(
        a1.tokens,
        tokens(10, 0, 1000, 0, 200),
        "the complete line, not the first partial"
    );
    close(usd(&t, a1), (10.0 * 3.0 + 1000.0 * 3.75 + 200.0 * 15.0) / 1e6); // $0.00678
    let a2 = counted(&s, "claude:msg_A2:req_A2");
    assert_eq!(a2.tokens, tokens(5, 1000, 300, 0, 80));
    assert_eq!(a2.session_id, "11111111-1111-4111-8111-111111111111");
    close(
        usd(&t, a2),
        (5.0 * 3.0 + 1000.0 * 0.3 + 300.0 * 3.75 + 80.0 * 15.0) / 1e6,
    ); // $0.00264

    // Sonnet 4.5 (CLI 2.0.14): 1-hour writes at 6.
    let b1 = counted(&s, "claude:msg_B1:req_B1");
    assert_eq!(b1.tokens, tokens(3, 20_000, 1000, 4000, 150));
    assert!(!b1.sidechain, "the parent's record, not the replay");
    close(
        usd(&t, b1),
        (3.0 * 3.0 + 20_000.0 * 0.3 + 1000.0 * 3.75 + 4000.0 * 6.0 + 150.0 * 15.0) / 1e6,
    ); // $0.036009
    // Long context (Haiku 5.5: 0.10 input, 0.01 read, 0.50 output up to 100k
    // prompt tokens): 50 + 210,000 prompt tokens > 100k, so the whole request
    // at 0.50 input, 0.05 read, 2.50 output; plus 3 web searches at $10 per 1,000.
    let b2 = counted(&s, "claude:msg_B2:req_B2");
    assert_eq!((b2.tokens, b2.web_search_requests), (tokens(50, 210_000, 0, 0, 400), 3));
    close(
        usd(&t, b2),
        (50.0 * 0.5 + 210_000.0 * 0.05 + 400.0 * 2.5) / 1e6 + 3.0 * 10.0 / 1000.0,
    ); // $0.041525
    let b5 = counted(&s, "claude:msg_B5");
    assert_eq!(b5.tokens, tokens(7, 100, 0, 0, 60));
    close(usd(&t, b5), (7.0 * 3.0 + 100.0 * 0.3 + 60.0 * 15.0) / 1e6); // $0.000951
    assert_eq!(b5.day(), "2026-11-04", "23:59:59.999 UTC is still the 4th");

    // Haiku 4.5: 1 input, 0.10 read, 1.25 write-5m, 5 output.
    let b3 = counted(&s, "claude:msg_B3:req_B3");
    assert!(b3.sidechain);
    close(usd(&t, b3), (100.0 * 1.0 + 20.0 * 5.0) / 1e6); // $0.0002
    let s1 = counted(&s, "claude:msg_S1:req_S1");
    assert_eq!(s1.tokens, tokens(40, 500, 200, 0, 30));
    close(usd(&t, s1), (40.0 + 500.0 * 0.1 + 200.0 * 1.25 + 30.0 * 5.0) / 1e6); // $0.00049

    // Opus 4.5: 5 input, 0.50 read, 10 write-1h, 25 output.
    let c1 = counted(&s, "claude:msg_C1:req_C1");
    assert_eq!(c1.tokens, tokens(20, 3000, 0, 1000, 500));
    close(
        usd(&t, c1),
        (20.0 * 5.0 + 3000.0 * 0.5 + 1000.0 * 10.0 + 500.0 * 25.0) / 1e6,
    ); // $0.0241
    // Opus 4.6 in fast mode: 30 input, 3 read, 150 output.
    let c2 = counted(&s, "claude:msg_C2:req_C2");
    assert_eq!(
        (c2.tokens, c2.speed),
        (tokens(100, 10_000, 0, 0, 1000), spend::Speed::Fast)
    );
    close(usd(&t, c2), (100.0 * 30.0 + 10_000.0 * 3.0 + 1000.0 * 150.0) / 1e6); // $0.183
    // Opus 4.6 on US-only inference: the standard rates times 1.1.
    let c3 = counted(&s, "claude:msg_C3:req_C3");
    assert_eq!(c3.inference_geo.as_deref(), Some("us"));
    close(usd(&t, c3), (1000.0 * 5.0 + 100.0 * 25.0) / 1e6 * 1.1); // $0.00825
    // Two model calls in one message (Haiku 5.5): 10 + 60,000 prompt tokens
    // are under 100k, 20 + 120,000 over it; the compaction iteration is not a
    // call. Priced whole, all 180,030 would be long-context ($0.010015).
    let c4 = counted(&s, "claude:msg_C4:req_C4");
    assert_eq!(c4.tokens, tokens(30, 180_000, 0, 0, 400));
    assert_eq!(c4.iterations.len(), 2);
    close(
        usd(&t, c4),
        (10.0 * 0.1 + 60_000.0 * 0.01 + 100.0 * 0.5) / 1e6 + (20.0 * 0.5 + 120_000.0 * 0.05 + 300.0 * 2.5) / 1e6,
    ); // $0.007411

    // The unknown model: tokens counted, unpriced (not $0).
    let b4 = counted(&s, "claude:msg_B4:req_B4");
    assert_eq!((b4.tokens.input, b4.tokens.output, t.cost(b4)), (10, 10, None));

    let summary = spend::daily(s.set.counted().into_iter().map(|r| ("claude", r)), &t, &Days::all());
    assert_eq!(summary.unpriced_models, ["claude-nova-9"]);
    let day4: f64 = summary
        .rows
        .iter()
        .filter(|r| r.day == "2026-11-04" && r.model == "claude-sonnet-4-5-20250929")
        .filter_map(|r| r.usd)
        .sum();
    close(day4, 0.036009 + 0.000951);
    let nova = summary.rows.iter().find(|r| r.model == "claude-nova-9").expect("row");
    assert_eq!((nova.usd, nova.priced, nova.input), (None, false, 10));
    close(
        summary.usd,
        0.00678
            + 0.00264
            + 0.036009
            + 0.041525
            + 0.000951
            + 0.0002
            + 0.00049
            + 0.0241
            + 0.183
            + 0.00825
            + 0.007411
            + (1.0 + 5.0) / 1e6,
    );

    // Per file: the streaming duplicates, the synthetic line, the refusals.
    let by_name = |suffix: &str| {
        s.scans
            .iter()
            .find(|(f, _)| f.path.to_string_lossy().ends_with(suffix))
            .map(|(_, sc)| sc)
            .unwrap_or_else(|| panic!("{suffix}"))
    };
    let b = by_name("22222222-2222-4222-8222-222222222222.jsonl");
    assert_eq!(
        (b.parsed.stats.duplicates, b.parsed.stats.synthetic),
        (1, 1),
        "{:?}",
        b.parsed.stats
    );
    let d = by_name("44444444-4444-4444-8444-444444444444.jsonl");
    assert_eq!(d.parsed.stats.refused, 4);
    let reasons: Vec<&SpendError> = d.parsed.problems.iter().map(|p| &p.error).collect();
    assert!(matches!(reasons[0], SpendError::InvalidJson { .. }));
    assert_eq!(
        reasons[1],
        &SpendError::NegativeTokens {
            field: "input_tokens",
            value: -5
        }
    );
    assert!(matches!(
        reasons[2],
        SpendError::AbsurdTokens {
            value: 999_999_999_999,
            ..
        }
    ));
    assert!(matches!(reasons[3], SpendError::InvalidUtf8 { .. }));
    // The cut last line waits: not consumed, not counted, not refused.
    let size = std::fs::metadata(home(
        "claude-home/projects/-w-repo/44444444-4444-4444-8444-444444444444.jsonl",
    ))
    .expect("fixture")
    .len();
    assert_eq!(size - d.state.as_ref().expect("read").offset, 150);
}

#[test]
fn codex_home_gives_exact_buckets_and_dollars() {
    let s = scan_home("codex-home");
    let t = pricing::bundled();
    let p = "019a4b2c-0000-7000-8000-000000000001";
    let f = "019a5000-0000-7000-8000-000000000002";
    let r = "019a5500-0000-7000-8000-000000000003";
    let z = "019a3000-0000-7000-8000-000000000004";
    let keys: Vec<String> = s.set.counted().iter().map(|r| r.key.clone()).collect();
    assert_eq!(
        keys,
        [
            format!("codex:{z}:0:100000:90000:2000"),
            format!("codex:{p}:0:10000:8000:500"),
            format!("codex:{p}:0:25000:20000:900"),
            format!("codex:{f}:0:40000:30000:1500"),
            format!("codex:{r}:0:1000:0:100"),
            format!("codex:{r}:0:3000:1000:300"),
            format!("codex:{r}:1:500:0:20"),
        ]
    );
    let rec = |i: usize| s.set.counted()[i].clone();

    // gpt-5.1-codex from the .zst archive: 1.25 input, 0.125 cached, 10 output.
    let z1 = rec(0);
    assert_eq!(
        (
            z1.model.as_str(),
            z1.tokens.input,
            z1.tokens.cache_read,
            z1.tokens.output
        ),
        ("gpt-5.1-codex", 10_000, 90_000, 2000)
    );
    assert_eq!(z1.tokens.reasoning, 1500, "reasoning is inside output, not added to it");
    close(usd(&t, &z1), (10_000.0 * 1.25 + 90_000.0 * 0.125 + 2000.0 * 10.0) / 1e6); // $0.04375

    // gpt-5-codex: T1, then the re-emit of T1 (not counted), then T2's last.
    let (t1, t2) = (rec(1), rec(2));
    assert_eq!(
        (t1.tokens.input, t1.tokens.cache_read, t1.tokens.output),
        (2000, 8000, 500)
    );
    close(usd(&t, &t1), (2000.0 * 1.25 + 8000.0 * 0.125 + 500.0 * 10.0) / 1e6); // $0.0085
    assert_eq!(
        (t2.tokens.input, t2.tokens.cache_read, t2.tokens.output),
        (3000, 12_000, 400)
    );
    close(usd(&t, &t2), (3000.0 * 1.25 + 12_000.0 * 0.125 + 400.0 * 10.0) / 1e6); // $0.00925

    // The fork: its copy of T1 and T2 is not counted again; its own turn is,
    // under the model its own turn_context names.
    let f1 = rec(3);
    assert_eq!((f1.session_id.as_str(), f1.model.as_str()), (f, "gpt-5.1-codex-max"));
    assert_eq!(
        (f1.tokens.input, f1.tokens.cache_read, f1.tokens.output),
        (5000, 10_000, 600)
    );
    close(usd(&t, &f1), (5000.0 * 1.25 + 10_000.0 * 0.125 + 600.0 * 10.0) / 1e6); // $0.0135

    // CLI 0.44 (no last_token_usage): the advance of the totals; then a reset.
    let (r1, r2, r3) = (rec(4), rec(5), rec(6));
    assert_eq!(
        (r1.tokens.input, r1.tokens.cache_read, r1.tokens.output),
        (1000, 0, 100)
    );
    assert_eq!(
        (r2.tokens.input, r2.tokens.cache_read, r2.tokens.output),
        (1000, 1000, 200)
    );
    assert_eq!((r3.tokens.input, r3.tokens.cache_read, r3.tokens.output), (500, 0, 20));
    close(
        usd(&t, &r1) + usd(&t, &r2) + usd(&t, &r3),
        (1000.0 * 1.25 + 100.0 * 10.0 + 1000.0 * 1.25 + 1000.0 * 0.125 + 200.0 * 10.0 + 500.0 * 1.25 + 20.0 * 10.0)
            / 1e6,
    ); // $0.00645

    let stats = |suffix: &str| {
        s.scans
            .iter()
            .find(|(file, _)| file.path.to_string_lossy().ends_with(suffix))
            .map(|(_, sc)| sc.clone())
            .unwrap_or_else(|| panic!("{suffix}"))
    };
    assert_eq!(stats(&format!("{p}.jsonl")).parsed.stats.reemits, 1);
    assert_eq!(stats(&format!("{f}.jsonl")).parsed.stats.replayed, 2);
    assert_eq!(stats(&format!("{r}.jsonl")).parsed.stats.reemits, 1);
    let old = stats("5f8a3b1c2d4e.jsonl");
    assert_eq!(
        (
            old.parsed.records.len(),
            old.parsed.stats.skipped,
            old.parsed.stats.refused
        ),
        (0, 4, 0)
    );
    let bad = stats("000000000006.jsonl");
    assert_eq!(bad.parsed.stats.refused, 3);
    assert!(matches!(
        bad.parsed.problems[0].error,
        SpendError::NegativeTokens {
            field: "total_token_usage.cached_input_tokens",
            ..
        }
    ));
    let broken = stats("000000000005.jsonl.zst");
    assert!(
        matches!(broken.error, Some(SpendError::Decompress { .. })),
        "{:?}",
        broken.error
    );
    assert_eq!(broken.outcome, Outcome::Failed);

    // Quota: the primary and secondary windows as the rollouts last said.
    let quota: Vec<(String, f64)> = s
        .scans
        .iter()
        .flat_map(|(_, sc)| sc.parsed.quota.iter().map(|q| (q.name.clone(), q.used_percent)))
        .collect();
    assert!(quota.contains(&("secondary".to_string(), 41.0)), "{quota:?}");
    let fork_quota = &stats(&format!("{f}.jsonl")).parsed.quota;
    assert_eq!(
        fork_quota.len(),
        2,
        "the replayed limits are stale: only the fork's own"
    );
    assert_eq!(fork_quota[0].resets_at_ms, Some(1_793_000_000_000));
}

#[test]
fn rescanning_unchanged_homes_reads_nothing() {
    for name in ["claude-home", "codex-home"] {
        let first = scan_home(name);
        let jobs: Vec<Job<'_>> = first
            .scans
            .iter()
            .map(|(file, sc)| Job {
                file,
                prev: sc.state.as_ref(),
            })
            .collect();
        for (again, (file, _)) in scan::scan_many(&jobs, 2).iter().zip(&first.scans) {
            if again.error.is_none() {
                assert_eq!(again.outcome, Outcome::Unchanged, "{}", file.path.display());
                assert!(again.parsed.records.is_empty());
            }
        }
    }
}

#[test]
fn layouts_are_detected() {
    let claude = scan::detect(&home("claude-home")).expect("claude");
    assert_eq!(claude.iter().map(|r| r.harness).collect::<Vec<_>>(), [Harness::Claude]);
    let codex = scan::detect(&home("codex-home")).expect("codex");
    assert_eq!(codex.iter().map(|r| r.harness).collect::<Vec<_>>(), [Harness::Codex]);
    assert!(matches!(scan::detect(&home("")), Err(SpendError::UnknownLayout { .. })));
    assert!(matches!(scan::detect(&home("nowhere")), Err(SpendError::Io { .. })));
    let files = scan::list(&codex[0]).expect("listed");
    let zst: Vec<&str> = files
        .iter()
        .filter(|f| f.compressed)
        .map(|f| f.session_hint.as_str())
        .collect();
    assert_eq!(
        zst,
        [
            "019a0000-0000-7000-8000-000000000005",
            "019a3000-0000-7000-8000-000000000004"
        ]
    );
}
