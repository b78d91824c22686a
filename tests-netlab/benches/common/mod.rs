//! What the netlab benches share: percentiles and timed calls.

use std::time::Instant;

use serde_json::{Value, json};
use tests_netlab::LabNode;

pub(crate) fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

pub(crate) fn sorted(mut v: Vec<f64>) -> Vec<f64> {
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

pub(crate) async fn healthy_count(node: &LabNode) -> usize {
    let Ok(v) = node.call("fleet.nodes", json!({})).await else {
        return 0;
    };
    v["nodes"]
        .as_array()
        .map(|n| n.iter().filter(|m| m["healthy"] == true).count())
        .unwrap_or(0)
}

/// Times `n` calls of `method` on `c`, in milliseconds, sorted.
pub(crate) async fn time_calls(c: &mut warren::client::Client, method: &str, params: Value, n: usize) -> Vec<f64> {
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.call(method, params.clone()).await.expect("call");
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    sorted(out)
}
