//! The fleet's figures on real network namespaces (`cargo bench -p
//! tests-netlab --bench fabric`, as root): five `warren up` processes on one
//! bridge. Reports the time from the first start to "all see all healthy",
//! a routed call's overhead over a direct one (p50/p99), gossip (heartbeat)
//! delivery delay, how long a revocation takes to be enforced on every other
//! member, and the node's resident memory per connected peer. It reports;
//! it asserts nothing about the numbers.

use std::time::{Duration, Instant};

use serde_json::json;
use tests_netlab::{Lab, wait_for};

mod common;
use common::{healthy_count, pct, sorted, time_calls};

const NODES: [&str; 5] = ["n1", "n2", "n3", "n4", "n5"];
const CALLS: usize = 1000;
const REVOCATIONS: usize = 20;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut lab = Lab::new(&NODES).expect("lab (run as root)");
    lab.make_owner(0).expect("owner key");

    // Convergence: from the first start until every node sees all five healthy.
    let started = Instant::now();
    lab.start(0, None).expect("n1 up");
    wait_for("n1 founds the fleet", Duration::from_secs(20), || async {
        let info = lab.nodes[0].call("node.info", json!({})).await.ok()?;
        info["fleet"].as_str().map(str::to_string)
    })
    .await
    .expect("fleet");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let alone_kib = lab.nodes[0].rss_kib().unwrap_or(0);
    let alone_at = started.elapsed();
    for i in 1..NODES.len() {
        let code = lab.nodes[0].invite().await.expect("invite");
        lab.start(i, Some(&code)).expect("node up");
    }
    for n in &lab.nodes {
        wait_for("all see all healthy", Duration::from_secs(60), || async {
            (healthy_count(n).await == NODES.len()).then_some(())
        })
        .await
        .expect("convergence");
    }
    let converged = started.elapsed();

    // Memory per connected peer, after things settle.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let joined_kib = lab.nodes[0].rss_kib().unwrap_or(0);
    let per_peer_kib = (joined_kib as f64 - alone_kib as f64) / (NODES.len() - 1) as f64;

    // A routed call's overhead: the same call on n3 directly, and through n1.
    let token = lab.owner_token(0, &["node:admin"]).expect("owner token");
    lab.nodes[2]
        .call("agent.create", json!({ "name": "b", "harness": "fake" }))
        .await
        .expect("agent on n3");
    let mut direct = lab.nodes[2].ws(&token).await.expect("ws n3");
    let mut routed = lab.nodes[0].ws(&token).await.expect("ws n1");
    time_calls(&mut direct, "agent.get", json!({ "agent": "b" }), 50).await;
    time_calls(&mut routed, "agent.get", json!({ "agent": "b@n3" }), 50).await;
    let d = time_calls(&mut direct, "agent.get", json!({ "agent": "b" }), CALLS).await;
    let r = time_calls(&mut routed, "agent.get", json!({ "agent": "b@n3" }), CALLS).await;
    let local = time_calls(&mut routed, "node.info", json!({}), CALLS).await;

    // Gossip delivery: each member's last heartbeat delay, sampled on every node.
    let mut delays = vec![];
    let sample_until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < sample_until {
        for n in &lab.nodes {
            if let Ok(v) = n.call("fleet.nodes", json!({})).await {
                for m in v["nodes"].as_array().into_iter().flatten() {
                    if let Some(ms) = m["gossip_delay_ms"].as_f64() {
                        delays.push(ms);
                    }
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let delays = sorted(delays);

    // Revocation: revoked on n1, refused by every other member.
    let mut enforced = vec![];
    for _ in 0..REVOCATIONS {
        let t = lab.owner_token(0, &["node:observe"]).expect("token");
        let inspected = lab.nodes[0]
            .call("token.inspect", json!({ "token": t }))
            .await
            .expect("inspect");
        let id = inspected["revocation_ids"][0].as_str().expect("id").to_string();
        for n in &lab.nodes[1..] {
            n.ws(&t).await.expect("the token works before");
        }
        let at = Instant::now();
        lab.nodes[0]
            .call("token.revoke", json!({ "revocation_id": id }))
            .await
            .expect("revoke");
        // Polled every 5 ms (each poll is one WebSocket upgrade per node).
        for n in &lab.nodes[1..] {
            let deadline = Instant::now() + Duration::from_secs(30);
            while n.ws(&t).await.is_ok() {
                assert!(Instant::now() < deadline, "{} still takes the revoked token", n.name);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
        enforced.push(at.elapsed().as_secs_f64() * 1000.0);
    }
    let enforced = sorted(enforced);

    println!("fabric bench: {} nodes on one netlab bridge", NODES.len());
    println!(
        "  convergence: all see all healthy {:.2} s after the first start (n1 alone at {:.2} s)",
        converged.as_secs_f64(),
        alone_at.as_secs_f64()
    );
    println!(
        "  agent.get direct to n3:      p50 {:.3} ms  p99 {:.3} ms  ({CALLS} calls)",
        pct(&d, 0.5),
        pct(&d, 0.99)
    );
    println!(
        "  agent.get b@n3 through n1:   p50 {:.3} ms  p99 {:.3} ms",
        pct(&r, 0.5),
        pct(&r, 0.99)
    );
    println!(
        "  routed overhead:             p50 {:.3} ms  p99 {:.3} ms",
        pct(&r, 0.5) - pct(&d, 0.5),
        pct(&r, 0.99) - pct(&d, 0.99)
    );
    println!(
        "  node.info on n1 (local):     p50 {:.3} ms  p99 {:.3} ms",
        pct(&local, 0.5),
        pct(&local, 0.99)
    );
    println!(
        "  gossip (heartbeat) delay:    p50 {:.0} ms  p99 {:.0} ms  max {:.0} ms  ({} samples)",
        pct(&delays, 0.5),
        pct(&delays, 0.99),
        delays.last().copied().unwrap_or(f64::NAN),
        delays.len()
    );
    println!(
        "  revocation enforced on all 4 others: p50 {:.0} ms  p99 {:.0} ms  max {:.0} ms  ({REVOCATIONS} tokens)",
        pct(&enforced, 0.5),
        pct(&enforced, 0.99),
        enforced.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "  RSS of n1: {alone_kib} KiB alone, {joined_kib} KiB with {} peers: {per_peer_kib:.0} KiB per peer",
        NODES.len() - 1
    );
}
