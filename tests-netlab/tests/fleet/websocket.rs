//! The fabric over WebSocket alone: n1 serves TCP and WebSocket, but its
//! firewall passes only the WebSocket port (a path that passes nothing but
//! WebSocket upgrades); n2 listens on WebSocket only. n2 joins with n1's
//! code (the code's TCP address is tried and dropped), both see each other
//! healthy, and calls from n1 are served on n2 over that one port.

use super::*;
use tests_netlab::{FABRIC_PORT, in_ns};

const WS_PORT: u16 = 7769;

/// n1's firewall: in, only loopback, replies, and the WebSocket port; the
/// TCP fabric port is dropped and counted.
fn websocket_only(n1: &LabNode) {
    let rules = format!(
        "table inet warrenlab {{\n chain in {{ type filter hook input priority 0; policy drop;\n  iif lo accept\n  ct state established,related accept\n  tcp dport {WS_PORT} accept\n  tcp dport {FABRIC_PORT} counter drop\n }}\n}}\n"
    );
    let file = n1.dir.join("websocket-only.nft");
    std::fs::write(&file, rules).expect("rules file");
    in_ns(&n1.ns, &["nft", "-f", &file.display().to_string()]).expect("nft on n1");
}

/// Packets n1's firewall dropped on the TCP fabric port.
fn tcp_dropped(n1: &LabNode) -> u64 {
    let table = in_ns(&n1.ns, &["nft", "list", "table", "inet", "warrenlab"]).expect("nft list");
    table
        .lines()
        .find(|l| l.contains(&format!("dport {FABRIC_PORT}")))
        .and_then(|l| l.split("packets ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no counter on the TCP port in:\n{table}"))
}

/// The (local, peer) ports of n1's established TCP connections with `ip`.
fn connections_with(n1: &LabNode, ip: &str) -> Vec<(u16, u16)> {
    let ss = in_ns(&n1.ns, &["ss", "-tnH", "state", "established"]).expect("ss");
    let port = |addr: &str| addr.rsplit(':').next().and_then(|p| p.parse().ok()).unwrap_or(0);
    ss.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let (local, peer) = (cols.get(cols.len().checked_sub(2)?)?, cols.last()?);
            peer.starts_with(&format!("{ip}:")).then(|| (port(local), port(peer)))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_joins_and_is_served_through_websocket_only() {
    let mut lab = Lab::new(&["n1", "n2"]).expect("lab");
    lab.set_listen(
        0,
        &format!("/ip4/{{ip}}/tcp/{FABRIC_PORT},/ip4/{{ip}}/tcp/{WS_PORT}/ws"),
    )
    .expect("n1 listens on both");
    lab.set_listen(1, &format!("/ip4/{{ip}}/tcp/{WS_PORT}/ws"))
        .expect("n2 on WebSocket only");
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    websocket_only(&lab.nodes[0]);
    let code = lab.nodes[0].invite().await.expect("invite");
    lab.start(1, Some(&code)).expect("n2 up");
    let n2 = &lab.nodes[1];
    wait_for("n2 joins through WebSocket", Duration::from_secs(30), || async {
        let info = n2.call("node.info", json!({})).await.ok()?;
        info["fleet"].as_str().map(str::to_string)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}\n{}", n2.log(), lab.nodes[0].log()));
    all_see(&lab, &["n1", "n2"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));

    // The code named n1's TCP address too: n2 tried it, and it was dropped.
    assert!(tcp_dropped(n1) > 0, "n2 never tried n1's TCP address");
    // The members publish their WebSocket addresses.
    let nodes = n1.call("fleet.nodes", json!({})).await.expect("fleet.nodes");
    let addrs = |name: &str| -> Vec<String> {
        let node = nodes["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .find(|n| n["name"] == name);
        let addrs = node
            .and_then(|n| n["addrs"].as_array())
            .unwrap_or_else(|| panic!("{name}: {nodes}"));
        addrs
            .iter()
            .map(|a| a.as_str().unwrap_or_default().to_string())
            .collect()
    };
    let n2_addrs = addrs("n2");
    assert!(
        !n2_addrs.is_empty() && n2_addrs.iter().all(|a| a.ends_with(&format!("/tcp/{WS_PORT}/ws"))),
        "n2 publishes WebSocket addresses only: {n2_addrs:?}"
    );
    let n1_addrs = addrs("n1");
    assert!(
        n1_addrs.contains(&format!("/ip4/{}/tcp/{WS_PORT}/ws", n1.ip))
            && n1_addrs.contains(&format!("/ip4/{}/tcp/{FABRIC_PORT}", n1.ip)),
        "n1 publishes both: {n1_addrs:?}"
    );

    // Calls from n1 are served on n2.
    n1.call(
        "agent.create",
        json!({ "name": "far", "harness": "fake", "node": "n2" }),
    )
    .await
    .expect("created on n2 from n1");
    n2.call("agent.get", json!({ "agent": "far" }))
        .await
        .expect("homed on n2");
    let got = n1
        .call("agent.get", json!({ "agent": "far@n2" }))
        .await
        .expect("routed get");
    assert_eq!(got["agent"]["name"], "far");

    // Every connection between them is a WebSocket one.
    let conns = connections_with(n1, &n2.ip);
    assert!(!conns.is_empty(), "no connection between n1 and n2");
    assert!(
        conns.iter().all(|(local, peer)| *local == WS_PORT || *peer == WS_PORT),
        "a connection off the WebSocket port: {conns:?}"
    );
}
