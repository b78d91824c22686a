//! Fleet-wide views as the fleet grows (`cargo bench -p tests-netlab --bench
//! fanout [-- SIZES...]`, as root; default 2 5 10 20 members): real
//! `warren up` processes on one netlab bridge, each homing a few agents,
//! one of them with a dialog held. Reports, per size, the time to answer
//! `supervision.holds {fleet: true}` and `agent.list {fleet: true}` on one
//! member (p50/p99/max over CALLS calls), and how many holds and agents came
//! back. It reports; it asserts nothing about the numbers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests_netlab::{Lab, wait_for};

mod common;
use common::{fleet_of, pct, time_calls};

const CALLS: usize = 200;
const AGENTS_PER_NODE: usize = 3;

/// A few agents on every member, and on each a dialog held for a human
/// (supervision's master switch is off by default: every dialog is held).
async fn populate(lab: &Lab) {
    for n in &lab.nodes {
        for a in 0..AGENTS_PER_NODE {
            n.call("agent.create", json!({ "name": format!("a{a}"), "harness": "fake" }))
                .await
                .expect("agent");
        }
        let conv = n.idle_conversation("a0").await.expect("an idle conversation");
        n.call(
            "conversation.sendMessage",
            json!({ "conversation": conv, "text": "/fake tool bash git push --force" }),
        )
        .await
        .expect("send");
    }
}

fn count(v: &Value, list: &str) -> usize {
    v[list].as_array().map_or(0, Vec::len)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect::<Vec<_>>();
    let sizes = if sizes.is_empty() { vec![2, 5, 10, 20] } else { sizes };
    println!("fanout bench: fleet-wide calls on n1, {CALLS} each, {AGENTS_PER_NODE} agents and one hold per member");
    for size in sizes {
        let started = Instant::now();
        let lab = fleet_of(size, "").await;
        let converged = started.elapsed();
        populate(&lab).await;
        let token = lab.owner_token(0, &["node:observe"]).expect("token");
        let mut c = lab.nodes[0].ws(&token).await.expect("ws n1");
        let holds = wait_for("every member's hold", Duration::from_secs(60), || async {
            let v = lab.nodes[0]
                .call("supervision.holds", json!({ "fleet": true }))
                .await
                .ok()?;
            (count(&v, "holds") == size).then_some(v)
        })
        .await
        .expect("holds");
        time_calls(&mut c, "supervision.holds", json!({ "fleet": true }), 20).await;
        let h = time_calls(&mut c, "supervision.holds", json!({ "fleet": true }), CALLS).await;
        let a = time_calls(&mut c, "agent.list", json!({ "fleet": true }), CALLS).await;
        let agents = c.call("agent.list", json!({ "fleet": true })).await.expect("agents");
        println!(
            "fanout {size:>2} members (converged in {:.1} s): supervision.holds {{fleet}} p50 {:.2} ms p99 {:.2} ms max {:.2} ms ({} holds); agent.list {{fleet}} p50 {:.2} ms p99 {:.2} ms ({} agents); unreachable {}",
            converged.as_secs_f64(),
            pct(&h, 0.5),
            pct(&h, 0.99),
            pct(&h, 1.0),
            count(&holds, "holds"),
            pct(&a, 0.5),
            pct(&a, 0.99),
            count(&agents, "agents"),
            count(&agents, "unreachable"),
        );
        drop(lab);
    }
}
