//! `warren spend scan` on the spend crate's fixture homes: the built binary,
//! offline, with the numbers checked by hand (bundled prices, dollars per
//! million tokens; the per-request arithmetic is in spend/tests/fixtures.rs).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../spend/tests/fixtures")
        .join(name)
}

fn warren(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_warren"))
        .args(args)
        .env_remove("WARREN_URL")
        .env_remove("WARREN_TOKEN")
        .output()
        .expect("run warren");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn scan_reports_both_homes_offline() {
    let claude = fixture("claude-home");
    let codex = fixture("codex-home");
    let (c, s) = (claude.to_str().expect("utf-8"), codex.to_str().expect("utf-8"));
    let (code, out, err) = warren(&["spend", "scan", c, s, "--by", "model", "--json"]);
    assert_eq!(code, 0, "{err}{out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("no JSON ({e}): {out}"));

    assert_eq!(v["pricing"]["source"], "bundled");
    assert_eq!(v["pricing"]["as_of"], spend::pricing::BUNDLED_AS_OF);
    // 13 Claude requests + 7 Codex requests (see spend/tests/fixtures.rs).
    assert_eq!(v["requests"], 20);
    assert_eq!(v["unpriced_models"], serde_json::json!(["claude-nova-9"]));
    // The corrupt Claude file, the corrupt rollout, the .zst that is not zstd.
    assert_eq!(v["unparseable_files"], 3);
    assert_eq!(v["waiting"][0]["bytes"], 150);

    let model = |m: &str| {
        v["by"]
            .as_array()
            .and_then(|a| a.iter().find(|r| r["label"] == m))
            .unwrap_or_else(|| panic!("no {m} in {}", v["by"]))
            .clone()
    };
    // Sonnet 4.5: B1 (with 1-hour writes) + B5.
    let s45 = model("claude-sonnet-4-5-20250929");
    assert_eq!(
        (s45["requests"].as_u64(), s45["cache_read"].as_u64()),
        (Some(2), Some(20_100))
    );
    close(
        s45["usd"].as_f64().expect("usd"),
        (3.0 * 3.0 + 20_000.0 * 0.3 + 1000.0 * 3.75 + 4000.0 * 6.0 + 150.0 * 15.0) / 1e6
            + (7.0 * 3.0 + 100.0 * 0.3 + 60.0 * 15.0) / 1e6,
    );
    // Haiku 5.5: the long-context request (above 100k) with its 3 searches,
    // and the message of two calls, one under the threshold, one over.
    close(
        model("claude-haiku-5-5")["usd"].as_f64().expect("usd"),
        (50.0 * 0.5 + 210_000.0 * 0.05 + 400.0 * 2.5) / 1e6
            + 3.0 * 10.0 / 1000.0
            + (10.0 * 0.1 + 60_000.0 * 0.01 + 100.0 * 0.5) / 1e6
            + (20.0 * 0.5 + 120_000.0 * 0.05 + 300.0 * 2.5) / 1e6,
    );
    // Opus 4.6: one fast-mode request, one on US-only inference.
    close(
        model("claude-opus-4-6")["usd"].as_f64().expect("usd"),
        (100.0 * 30.0 + 10_000.0 * 3.0 + 1000.0 * 150.0) / 1e6 + (1000.0 * 5.0 + 100.0 * 25.0) / 1e6 * 1.1,
    );
    // gpt-5-codex: T1 and T2; the fork's copy of them is not counted.
    let codex_row = model("gpt-5-codex");
    assert_eq!(
        (codex_row["requests"].as_u64(), codex_row["input"].as_u64()),
        (Some(2), Some(5000))
    );
    close(
        codex_row["usd"].as_f64().expect("usd"),
        (2000.0 * 1.25 + 8000.0 * 0.125 + 500.0 * 10.0 + 3000.0 * 1.25 + 12_000.0 * 0.125 + 400.0 * 10.0) / 1e6,
    );
    let nova = model("claude-nova-9");
    assert_eq!(
        (nova["usd"].as_f64(), nova["unpriced_rows"].as_u64()),
        (Some(0.0), Some(1))
    );
    let nova_day = v["days"]
        .as_array()
        .and_then(|d| d.iter().find(|r| r["model"] == "claude-nova-9"))
        .expect("a row");
    assert_eq!(
        (nova_day["usd"].is_null(), nova_day["priced"].as_bool()),
        (true, Some(false))
    );

    let total = 0.00678
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
        + 0.000006
        + 0.04375
        + 0.0085
        + 0.00925
        + 0.0135
        + 0.00645;
    close(v["usd"].as_f64().expect("usd"), total);
    // Each path is an agent.
    let agents: Vec<&str> = v["days"]
        .as_array()
        .expect("days")
        .iter()
        .filter_map(|r| r["agent"].as_str())
        .collect();
    assert!(agents.iter().all(|a| *a == c || *a == s), "{agents:?}");
}

#[test]
fn a_windowed_scan_counts_only_the_windows_requests() {
    let claude = fixture("claude-home");
    let (code, out, err) = warren(&[
        "spend",
        "scan",
        claude.to_str().expect("utf-8"),
        "--since",
        "2026-11-04",
        "--until",
        "2026-11-04",
        "--by",
        "day",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("no JSON ({e}): {out}"));
    let by = v["by"].as_array().expect("by");
    assert!(by.iter().all(|r| r["label"] == "2026-11-04"), "{out}");
    let in_window: u64 = by.iter().filter_map(|r| r["requests"].as_u64()).sum();
    assert!(in_window > 0 && in_window < 13, "the 4th holds some of the 13: {out}");
    assert_eq!(v["requests"], in_window, "the total is the window's: {out}");
}

#[test]
fn scan_prints_a_table_a_chart_and_the_problems() {
    let claude = fixture("claude-home");
    let (code, out, err) = warren(&[
        "spend",
        "scan",
        claude.to_str().expect("utf-8"),
        "--since",
        "2026-11-04",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("bundled table as of"), "{out}");
    let day4 = out
        .lines()
        .find(|l| l.starts_with("2026-11-04") && l.contains('$'))
        .expect("a row");
    // B1 0.036009 + B2 0.041525 + B5 0.000951 + B3 0.0002 + S1 0.00049 =
    // $0.079175, +? for the unpriced model.
    assert!(day4.contains("$0.0792+?"), "{day4}");
    assert!(!out.contains("2026-11-03"), "--since leaves out the 3rd: {out}");
    assert!(
        out.lines().any(|l| l.starts_with("2026-11-04") && l.contains('█')),
        "a bar: {out}"
    );
    assert!(
        out.contains("unpriced (tokens counted, no price in the table): claude-nova-9"),
        "{out}"
    );
    assert!(out.contains("4 lines refused"), "{out}");
    assert!(
        out.contains("negative token count") || out.contains("not a JSON object"),
        "{out}"
    );

    let (code, _, err) = warren(&["spend", "scan", "/nonexistent-dir"]);
    assert_eq!(code, 1);
    assert!(err.contains("not a directory"), "{err}");
    let (code, _, err) = warren(&["spend", "scan", env!("CARGO_MANIFEST_DIR")]);
    assert_eq!(code, 1);
    assert!(err.contains("neither a Claude config dir"), "{err}");
    // Without a verb it asks the node (tests/spend.rs); with none running it
    // says so.
    let (code, _, err) = warren(&["spend", "--data-dir", "/nonexistent-dir"]);
    assert_eq!(code, 1);
    assert!(err.contains("node.json"), "{err}");
}
