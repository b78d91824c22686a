//! An independent libp2p implementation against a real fleet node: py-libp2p
//! (PyPI, pinned by `deploy/scripts/fetch-py-libp2p.sh`) runs
//! `tests-netlab/py/outsider.py` in its own namespace as a non-member. It
//! connects over noise + yamux, pings the node and reads its identify; it gets
//! nothing else: its fleet-protocol requests are refused or unanswered, no
//! gossip reaches it, the node drops and blocks it, and a redial gets no
//! working connection. A missing venv fails the test (it never skips).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests_netlab::{Lab, wait_for};

/// How long the outsider may run in all (its own waits are bounded, ~40 s).
const OUTSIDER_WITHIN: Duration = Duration::from_secs(90);

fn repo() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// The venv's python, as the fetch script leaves it (its stamp is written
/// last, so a half-done install counts as missing).
fn venv_python() -> PathBuf {
    let venv = repo().join("target/tools/py-libp2p");
    let python = venv.join("bin/python");
    assert!(
        python.is_file() && venv.join(".warren-constraints.sha256").is_file(),
        "no py-libp2p venv at {}: run deploy/scripts/fetch-py-libp2p.sh first (.ci/run does)",
        venv.display()
    );
    python
}

/// The py-libp2p version the constraints pin.
fn pinned_version() -> String {
    let path = repo().join("tests-netlab/py/constraints.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .find_map(|l| l.strip_prefix("libp2p=="))
        .unwrap_or_else(|| panic!("{} pins no libp2p==", path.display()))
        .trim()
        .to_string()
}

/// Runs the outsider in namespace `ns` against `addr`; its JSON report.
async fn run_outsider(ns: &str, addr: &str, topic: &str) -> Value {
    let python = venv_python();
    let script = repo().join("tests-netlab/py/outsider.py");
    let mut cmd = tokio::process::Command::new("ip");
    cmd.args(["netns", "exec", ns])
        .arg(&python)
        .arg(&script)
        .args(["--addr", addr, "--topic", topic])
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(OUTSIDER_WITHIN, cmd.output())
        .await
        .unwrap_or_else(|_| panic!("the outsider did not finish within {OUTSIDER_WITHIN:?}"))
        .expect("run the outsider in its namespace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the outsider failed ({}):\n{stderr}", out.status);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("the outsider's report is not JSON ({e}):\n{stdout}\n{stderr}"))
}

/// A fleet-protocol probe got no answer, or a refusal: never a membership
/// answer (Hello, Synced, Joined).
fn refused_or_unanswered(probe: &Value) -> bool {
    match probe.get("answer") {
        None => probe["answer_bytes"].as_u64().unwrap_or(0) == 0,
        Some(a) => a["cbor"]
            .as_object()
            .is_some_and(|o| o.len() == 1 && o.contains_key("Refused")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outsider_on_py_libp2p_gets_ping_and_identify_and_nothing_else() {
    let pinned = pinned_version();
    venv_python();
    let started = Instant::now();
    let mut lab = Lab::new(&["n1", "outsider"]).expect("lab");
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    let n1 = lab.node("n1");
    let (peer_id, fleet) = wait_for("n1 founds its fleet", Duration::from_secs(20), || async {
        let info = n1.call("node.info", json!({})).await.ok()?;
        Some((
            info["peer_id"].as_str()?.to_string(),
            info["fleet"].as_str()?.to_string(),
        ))
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n1.log()));
    eprintln!("n1 up {:?} after the start", started.elapsed());

    let addr = format!("{}/p2p/{peer_id}", n1.fabric_addr());
    let topic = format!("warren/fleet/{fleet}/v1");
    let ran = Instant::now();
    let r = run_outsider(&lab.node("outsider").ns, &addr, &topic).await;
    eprintln!("the outsider ran {:?}: {r}", ran.elapsed());
    let report = format!("the outsider's report: {r:#}\nn1's log:\n{}", n1.log());

    assert_eq!(r["libp2p_version"], pinned.as_str(), "{report}");
    assert_eq!(r["connect"]["ok"], true, "{report}");

    // Ping and identify answer anyone.
    assert_eq!(r["ping"]["ok"], true, "{report}");
    assert!(
        r["ping"]["rtts_ms"].as_array().is_some_and(|a| !a.is_empty()),
        "{report}"
    );
    let id = &r["identify"];
    assert_eq!(id["ok"], true, "{report}");
    assert!(
        id["agent_version"].as_str().is_some_and(|v| v.starts_with("warren/")),
        "{report}"
    );
    assert_eq!(id["peer_id"], peer_id.as_str(), "{report}");
    let protocols: Vec<&str> = id["protocols"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for p in ["/ipfs/id/1.0.0", "/ipfs/ping/1.0.0", "/warren/fleet/1"] {
        assert!(protocols.contains(&p), "identify lists {p}: {report}");
    }

    // The fleet protocol: garbage goes unanswered, a Sync and a Hello with a
    // garbage certificate are refused.
    let probes = &r["fleet_requests"];
    for name in ["garbage", "oversize", "sync", "hello"] {
        assert!(
            refused_or_unanswered(&probes[name]),
            "{name}: neither refused nor unanswered: {report}"
        );
    }
    assert_eq!(probes["garbage"]["answer_bytes"], 0, "{report}");
    // The node resets an oversize frame's stream, at most answering nothing.
    assert_eq!(probes["oversize"]["answer_bytes"].as_u64().unwrap_or(0), 0, "{report}");

    // No gossip: no message, no IHAVE, nothing delivered on the fleet topic.
    let gossip = &r["gossip"];
    assert_eq!(gossip["messages"], json!([]), "{report}");
    assert_eq!(gossip["delivered"], json!([]), "{report}");
    let ihave = gossip["control"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c.get("ihave").is_some());
    assert!(!ihave, "IHAVE reached the outsider: {report}");

    // What the node volunteers on the fleet protocol is its own hello (the
    // handshake is mutual, and it greets every peer it meets): never a view.
    for m in r["inbound_fleet"].as_array().into_iter().flatten() {
        assert_eq!(m["cbor"]["Hello"]["cert"]["peer_id"], peer_id.as_str(), "{report}");
    }

    // Dropped within a few seconds, then blocked: a redial does not work.
    assert_eq!(r["disconnected"]["ok"], true, "{report}");
    let dropped_after = r["disconnected"]["after_ms"].as_f64().unwrap_or(f64::MAX);
    assert!(dropped_after < 5000.0, "dropped after {dropped_after} ms: {report}");
    assert!(r["redial"].get("ping_rtts_ms").is_none(), "a redial works: {report}");
    let outsider = r["outsider_peer_id"].as_str().expect("the outsider's peer id");
    let logged = format!("peer refused and blocked peer={outsider}");
    wait_for("n1 logs the outsider blocked", Duration::from_secs(5), || async {
        strip_ansi(&n1.log()).contains(&logged).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}: {report}"));
    // The garbled frame was refused by the codec and logged; the node serves on.
    // Both (garbled, oversize) are logged.
    assert!(
        strip_ansi(&n1.log())
            .matches("a fabric request could not be read")
            .count()
            >= 2,
        "{}",
        n1.log()
    );
    let nodes = n1.call("fleet.nodes", json!({})).await.expect("fleet.nodes");
    assert_eq!(nodes["nodes"].as_array().map(Vec::len), Some(1), "n1 alone: {nodes}");
    eprintln!(
        "ping {} ms, dropped {dropped_after} ms after connecting; {:?} in all",
        r["ping"]["rtts_ms"],
        started.elapsed()
    );
}

/// The node's log with its colour codes removed.
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
