//! The fleet's figures on real network namespaces as it grows (`cargo bench
//! -p tests-netlab --bench fabric [-- SIZES...]`, as root; default 10 25 50
//! members, joined one after another, each with the shipped `[fleet]`
//! liveness timing): for each size, the time from the
//! last member's start until every member sees every other healthy, idle CPU per node, a routed
//! `agent.get` (p50/p99, with the direct call beside it), a fleet-wide
//! `agent.list` (p99), gossip (heartbeat) delay p99, how long a revocation
//! takes to be enforced on every other member (p99), and resident memory per
//! node. It reports; it asserts nothing about the numbers. A size whose
//! members do not all see each other within `CONVERGE_WITHIN` is reported
//! as such and the larger sizes are not tried.

use std::time::{Duration, Instant};

use serde_json::json;
use tests_netlab::{Lab, LabNode};

mod common;
use common::{healthy_count, pct, sorted, time_calls};

const CONVERGE_WITHIN: Duration = Duration::from_secs(120);
const IDLE_WINDOW: Duration = Duration::from_secs(30);
const CALLS: usize = 500;
const LISTS: usize = 100;
const REVOCATIONS: usize = 10;

/// User + system CPU ticks the node process has used.
fn cpu_ticks(n: &LabNode) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", n.pid()?)).ok()?;
    // Fields after the command (which may hold spaces) start past ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
}

/// Each node's share of one core over `IDLE_WINDOW` (percent), sorted.
async fn idle_cpu(nodes: &[LabNode]) -> Vec<f64> {
    let before: Vec<Option<u64>> = nodes.iter().map(cpu_ticks).collect();
    let at = Instant::now();
    tokio::time::sleep(IDLE_WINDOW).await;
    let secs = at.elapsed().as_secs_f64();
    let ticks_per_sec = 100.0; // USER_HZ on Linux
    let used: Vec<f64> = nodes
        .iter()
        .zip(before)
        .filter_map(|(n, b)| Some((cpu_ticks(n)? - b?) as f64 / ticks_per_sec / secs * 100.0))
        .collect();
    sorted(used)
}

/// Until every member sees `size` healthy members; `None` past the limit.
async fn converge(lab: &Lab, size: usize, since: Instant) -> Option<Duration> {
    let mut waiting: Vec<&LabNode> = lab.nodes.iter().collect();
    while !waiting.is_empty() {
        if since.elapsed() > CONVERGE_WITHIN {
            report_waiting(&waiting, size).await;
            return None;
        }
        let mut still = vec![];
        for n in waiting {
            if healthy_count(n).await != size {
                still.push(n);
            }
        }
        waiting = still;
        if !waiting.is_empty() {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    Some(since.elapsed())
}

/// What `args` print in namespace `ns` (empty when it cannot run).
fn in_ns(ns: &str, args: &[&str]) -> String {
    std::process::Command::new("ip")
        .args(["netns", "exec", ns])
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// Why members did not converge: how many each still-waiting member sees
/// healthy, and the first one's view and the end of its log.
async fn report_waiting(waiting: &[&LabNode], size: usize) {
    for n in waiting {
        println!("  {} sees {} of {size} healthy", n.name, healthy_count(n).await);
    }
    for n in waiting.iter().take(1).chain(waiting.last()) {
        let ss = std::process::Command::new("ip")
            .args(["netns", "exec", &n.ns, "ss", "-tnH"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).lines().count())
            .unwrap_or(0);
        let fds = n
            .pid()
            .and_then(|p| std::fs::read_dir(format!("/proc/{p}/fd")).ok())
            .map_or(0, |d| d.count());
        println!("  {} holds {ss} TCP connections and {fds} open files", n.name);
        // A listener whose accept queue fills (Recv-Q) is one the process
        // does not accept from.
        println!(
            "  {}'s listeners (state, accept queue, backlog, address):\n{}",
            n.name,
            in_ns(&n.ns, &["ss", "-ltnH"])
        );
        if let Ok(v) = n.call("fleet.nodes", json!({})).await {
            let not: Vec<String> = v["nodes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|m| m["healthy"] != true)
                .map(|m| format!("{}", m["name"]))
                .collect();
            println!("  {} does not see healthy: {}", n.name, not.join(" "));
        }
        let log = n.log();
        let lines: Vec<&str> = log.lines().collect();
        let noted: Vec<&str> = lines.iter().copied().filter(|l| !l.contains(" INFO ")).collect();
        println!(
            "  {}'s log ends:\n{}",
            n.name,
            lines[lines.len().saturating_sub(15)..].join("\n")
        );
        println!(
            "  {}'s warnings end:\n{}",
            n.name,
            noted[noted.len().saturating_sub(15)..].join("\n")
        );
    }
}

/// One size's run; `false` when the members never all saw each other.
async fn run(size: usize) -> bool {
    let names: Vec<String> = (1..=size).map(|i| format!("n{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut lab = Lab::new(&refs).expect("lab (run as root)");
    // The shipped liveness timing, not the lab's faster one for tests.
    for i in 0..size {
        for key in ["heartbeat_ms", "unhealthy_after_ms", "prove_within_ms"] {
            lab.set_fleet(i, key, None).expect("warren.toml");
        }
    }
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    // What a node spends alone (its own housekeeping), before any member.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let alone = idle_cpu(&lab.nodes[..1]).await.first().copied().unwrap_or(f64::NAN);
    // Members are added one after another (each join done before the next
    // node starts), as an operator grows a fleet; 50 processes joining at
    // once on two cores is a storm of its own, not what is measured here.
    let mut last_start = Instant::now();
    for i in 1..size {
        let code = lab.nodes[0].invite().await.expect("invite");
        last_start = Instant::now();
        lab.start(i, Some(&code)).expect("node up");
        let node = &lab.nodes[i];
        let joined = tests_netlab::wait_for("the join", Duration::from_secs(30), || async {
            let info = node.call("node.info", json!({})).await.ok()?;
            info["fleet"].as_str().map(str::to_string)
        })
        .await;
        if let Err(e) = joined {
            println!(
                "fabric bench, {size} nodes: {} did not join: {e}\n{}",
                node.name,
                node.log()
            );
            println!("  {}'s sockets:\n{}", node.name, in_ns(&node.ns, &["ss", "-tanH"]));
            println!("  n1's sockets:\n{}", in_ns(&lab.nodes[0].ns, &["ss", "-tanH"]));
            let probe = format!(
                "exec 3<>/dev/tcp/{}/{} && echo a plain TCP connection to n1 opened",
                lab.nodes[0].ip,
                tests_netlab::FABRIC_PORT
            );
            println!(
                "  from {}: {}",
                node.name,
                in_ns(&node.ns, &["timeout", "3", "bash", "-c", &probe])
            );
            if let Some(pid) = lab.nodes[0].pid() {
                let states = std::process::Command::new("sh")
                    .args(["-c", &format!("for t in /proc/{pid}/task/*; do echo \"$(cut -d' ' -f3 $t/stat) $(cat $t/wchan) $(cat $t/comm)\"; done | sort | uniq -c")])
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                    .unwrap_or_default();
                println!("  n1's threads (count, state, wait, name):\n{states}");
            }
            report_waiting(&[&lab.nodes[0]], size).await;
            return false;
        }
    }
    let Some(converged) = converge(&lab, size, last_start).await else {
        println!(
            "fabric bench, {size} nodes: the members did not all see each other healthy within {} s of the last start",
            CONVERGE_WITHIN.as_secs()
        );
        return false;
    };
    tokio::time::sleep(Duration::from_secs(5)).await;
    let cpu = idle_cpu(&lab.nodes).await;
    let rss: Vec<f64> = sorted(
        lab.nodes
            .iter()
            .filter_map(|n| n.rss_kib())
            .map(|k| k as f64 / 1024.0)
            .collect(),
    );

    // A routed call: the same agent.get on n3 directly, and through n1.
    let token = lab.owner_token(0, &["node:admin"]).expect("owner token");
    lab.nodes[2]
        .call("agent.create", json!({ "name": "b", "harness": "fake" }))
        .await
        .expect("agent on n3");
    let mut direct = lab.nodes[2].ws(&token).await.expect("ws n3");
    let mut routed = lab.nodes[0].ws(&token).await.expect("ws n1");
    time_calls(&mut routed, "agent.get", json!({ "agent": "b@n3" }), 50).await;
    let d = time_calls(&mut direct, "agent.get", json!({ "agent": "b" }), CALLS).await;
    let r = time_calls(&mut routed, "agent.get", json!({ "agent": "b@n3" }), CALLS).await;
    let list = time_calls(&mut routed, "agent.list", json!({ "fleet": true }), LISTS).await;

    // Gossip delivery: the members' last heartbeat delays, as five nodes see them.
    let mut delays = vec![];
    let sample_until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < sample_until {
        for n in lab.nodes.iter().take(5) {
            if let Ok(v) = n.call("fleet.nodes", json!({})).await {
                delays.extend(
                    v["nodes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|m| m["gossip_delay_ms"].as_f64()),
                );
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
        let at = Instant::now();
        lab.nodes[0]
            .call("token.revoke", json!({ "revocation_id": id }))
            .await
            .expect("revoke");
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

    println!("fabric bench, {size} nodes on one netlab bridge:");
    println!(
        "  all see all healthy:   {:.2} s after the last start",
        converged.as_secs_f64()
    );
    println!(
        "  idle CPU per node:     mean {:.2}%  max {:.2}% of a core ({} s)",
        cpu.iter().sum::<f64>() / cpu.len().max(1) as f64,
        cpu.last().copied().unwrap_or(f64::NAN),
        IDLE_WINDOW.as_secs()
    );
    println!("  the first node alone:  {alone:.2}% of a core before any other joined");
    println!(
        "  agent.get routed:      p50 {:.3} ms  p99 {:.3} ms  (direct p50 {:.3} ms  p99 {:.3} ms; {CALLS} calls)",
        pct(&r, 0.5),
        pct(&r, 0.99),
        pct(&d, 0.5),
        pct(&d, 0.99)
    );
    println!(
        "  agent.list fleet-wide: p50 {:.1} ms  p99 {:.1} ms  ({LISTS} calls)",
        pct(&list, 0.5),
        pct(&list, 0.99)
    );
    println!(
        "  gossip delay:          p50 {:.0} ms  p99 {:.0} ms  ({} samples)",
        pct(&delays, 0.5),
        pct(&delays, 0.99),
        delays.len()
    );
    println!(
        "  revocation everywhere: p50 {:.0} ms  p99 {:.0} ms  ({REVOCATIONS} tokens, {} others each)",
        pct(&enforced, 0.5),
        pct(&enforced, 0.99),
        size - 1
    );
    println!(
        "  RSS per node:          mean {:.1} MiB  max {:.1} MiB",
        rss.iter().sum::<f64>() / rss.len().max(1) as f64,
        rss.last().copied().unwrap_or(f64::NAN)
    );
    true
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![10, 25, 50] } else { sizes };
    for size in sizes {
        if !run(size).await {
            break;
        }
    }
}
