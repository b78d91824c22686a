//! The biscuit specification's cross-implementation vectors
//! (`../shared/testdata/biscuit-samples`), read and judged by this crate's
//! `judge_raw` exactly as `samples.json` expects.

use std::path::PathBuf;

use capabilities::{BiscuitError, judge_raw, public_key_from_hex};
use serde_json::Value;

fn samples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/testdata/biscuit-samples")
}

/// A comparable summary of an outcome: `Ok(n)`, or the error's kind and, for
/// logic failures, the matched policy and the failed checks' positions.
fn summarize_expected(result: &Value) -> String {
    if let Some(n) = result.get("Ok") {
        return format!("Ok({n})");
    }
    let err = &result["Err"];
    let (kind, body) = err
        .as_object()
        .and_then(|o| o.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("an error");
    if kind != "FailedLogic" {
        return format!("Err({kind})");
    }
    let (logic, detail) = body
        .as_object()
        .and_then(|o| o.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .expect("logic");
    let policy = match detail.get("policy") {
        Some(p) => {
            let (k, v) = p.as_object().and_then(|o| o.iter().next()).expect("policy");
            format!("{k}({v})")
        }
        None => "none".into(),
    };
    let mut checks: Vec<String> = detail["checks"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    if let Some(b) = c.get("Block") {
                        format!("block {} check {}", b["block_id"], b["check_id"])
                    } else {
                        format!("authorizer check {}", c["Authorizer"]["check_id"])
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    checks.sort();
    if logic == "InvalidBlockRule" {
        return "Err(FailedLogic.InvalidBlockRule)".into();
    }
    format!("Err(FailedLogic.{logic} policy={policy} checks={checks:?})")
}

fn summarize_actual(result: &Result<usize, BiscuitError>) -> String {
    use biscuit_auth::error::{FailedCheck, Logic, MatchedPolicy};
    let checks_of = |checks: &[FailedCheck]| {
        let mut cs: Vec<String> = checks
            .iter()
            .map(|c| match c {
                FailedCheck::Block(b) => format!("block {} check {}", b.block_id, b.check_id),
                FailedCheck::Authorizer(a) => format!("authorizer check {}", a.check_id),
            })
            .collect();
        cs.sort();
        cs
    };
    match result {
        Ok(n) => format!("Ok({n})"),
        Err(BiscuitError::FailedLogic(Logic::InvalidBlockRule(..))) => "Err(FailedLogic.InvalidBlockRule)".into(),
        Err(BiscuitError::FailedLogic(Logic::Unauthorized { policy, checks })) => {
            let policy = match policy {
                MatchedPolicy::Allow(n) => format!("Allow({n})"),
                MatchedPolicy::Deny(n) => format!("Deny({n})"),
            };
            format!(
                "Err(FailedLogic.Unauthorized policy={policy} checks={:?})",
                checks_of(checks)
            )
        }
        Err(BiscuitError::FailedLogic(Logic::NoMatchingPolicy { checks })) => {
            format!(
                "Err(FailedLogic.NoMatchingPolicy policy=none checks={:?})",
                checks_of(checks)
            )
        }
        Err(BiscuitError::FailedLogic(other)) => format!("Err(FailedLogic.{other:?})"),
        Err(BiscuitError::Format(f)) if format!("{f:?}").contains("Unsupported third party block version") => {
            "Unsupported(third party block version)".into()
        }
        Err(BiscuitError::Format(_)) => "Err(Format)".into(),
        Err(BiscuitError::Execution(_)) => "Err(Execution)".into(),
        Err(BiscuitError::RunLimit(_)) => "Err(RunLimit)".into(),
        Err(other) => format!("Err(other: {other})"),
    }
}

/// Cases biscuit-auth 6.0 (the newest release) cannot read: their third-party
/// blocks use a newer block format version than it supports. They must fail
/// closed (refused), never be accepted.
const UNSUPPORTED: &[&str] = &["test024_third_party.bc", "test026_public_keys_interning.bc"];

#[test]
fn every_specification_sample_is_judged_as_expected() {
    let dir = samples_dir();
    let text = std::fs::read_to_string(dir.join("samples.json"))
        .unwrap_or_else(|e| panic!("the biscuit samples must be at {}: {e}", dir.display()));
    let samples: Value = serde_json::from_str(&text).expect("samples.json");
    let root = public_key_from_hex(samples["root_public_key"].as_str().expect("root key")).expect("root key");
    let mut judged = 0;
    let mut mismatches = vec![];
    for case in samples["testcases"].as_array().expect("testcases") {
        let file = case["filename"].as_str().expect("filename");
        let bytes = std::fs::read(dir.join(file)).expect("token file");
        for (name, v) in case["validations"].as_object().expect("validations") {
            let code = v["authorizer_code"].as_str().unwrap_or("");
            let expected = summarize_expected(&v["result"]);
            let actual = summarize_actual(&judge_raw(&bytes, root, code));
            judged += 1;
            if UNSUPPORTED.contains(&file) {
                assert_eq!(
                    actual, "Unsupported(third party block version)",
                    "{file} should be refused as unsupported"
                );
                continue;
            }
            if expected != actual {
                mismatches.push(format!("{file} [{name}]: expected {expected}, got {actual}"));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {judged} judged differently:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
    assert_eq!(judged, 32, "every validation of every sample was judged");
}
