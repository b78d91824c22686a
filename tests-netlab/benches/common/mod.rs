//! What the netlab benches share: percentiles, timed calls, a fleet.
// Each bench includes this module and uses a part of it.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests_netlab::{Lab, LabNode, wait_for};

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

/// A fleet of `size` members on one bridge (n1 the owner, with `n1_toml`
/// added to its warren.toml), once n1 sees every member healthy.
pub(crate) async fn fleet_of(size: usize, n1_toml: &str) -> Lab {
    let names: Vec<String> = (1..=size).map(|i| format!("n{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut lab = Lab::new(&refs).expect("lab (run as root)");
    lab.configure(0, n1_toml).expect("n1's config");
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    for i in 1..size {
        let code = lab.nodes[0].invite().await.expect("invite");
        lab.start(i, Some(&code)).expect("node up");
    }
    wait_for("n1 sees every member healthy", Duration::from_secs(120), || async {
        (healthy_count(&lab.nodes[0]).await == size).then_some(())
    })
    .await
    .expect("convergence");
    lab
}
