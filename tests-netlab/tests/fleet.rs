//! The fleet on real network namespaces: three `warren up` processes on
//! three addresses join by invite and converge; join codes that are replayed,
//! expired or garbled are refused and their sender is blocked; a partitioned
//! node turns unhealthy on the others and healthy again once healed, with no
//! restart; a node killed with `kill -9` and restarted rejoins, and its own
//! gossip (a changed record) reaches the others. Calls routed across members
//! are `fleet/routed.rs`; monitors across members `fleet/monitors.rs`; the
//! fabric over WebSocket alone `fleet/websocket.rs`; mail between agents on
//! different members `fleet/mail.rs`; health among 10 members while one is
//! killed and restarted `fleet/churn.rs`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tests_netlab::{Lab, LabNode, wait_for};

#[path = "fleet/churn.rs"]
mod churn;
#[path = "fleet/liveness.rs"]
mod liveness;
#[path = "fleet/mail.rs"]
mod mail;
#[path = "fleet/monitors.rs"]
mod monitors;
#[path = "fleet/placement.rs"]
mod placement;
#[path = "fleet/push.rs"]
mod push;
#[path = "fleet/routed.rs"]
mod routed;
#[path = "fleet/views.rs"]
mod views;
#[path = "fleet/websocket.rs"]
mod websocket;
#[path = "fleet/workspaces.rs"]
mod workspaces;

/// name -> healthy, as `node` sees the fleet.
async fn health(node: &LabNode) -> BTreeMap<String, bool> {
    // A failed call is the node failing, never an empty fleet (which would
    // pass every "is no longer a member" check).
    let v = match node.call("fleet.nodes", json!({})).await {
        Ok(v) => v,
        Err(e) => panic!("fleet.nodes on {}: {e}\n{}", node.name, node.log()),
    };
    let nodes = v["nodes"]
        .as_array()
        .unwrap_or_else(|| panic!("fleet.nodes without nodes: {v}"));
    // A member not heard from yet has no name: it is not in the view.
    nodes
        .iter()
        .filter(|n| !n["name"].is_null())
        .map(|n| match (n["name"].as_str(), n["healthy"].as_bool()) {
            (Some(name), Some(healthy)) => (name.to_string(), healthy),
            _ => panic!("a fleet.nodes entry with a bad name or health: {n}"),
        })
        .collect()
}

/// Every node of `names` sees exactly `names`, each `healthy`.
async fn all_see(lab: &Lab, names: &[&str], healthy: bool, within: Duration) {
    let want: BTreeMap<String, bool> = names.iter().map(|n| (n.to_string(), healthy)).collect();
    for n in names {
        let node = lab.node(n);
        let got = wait_for(&format!("{n} sees {want:?}"), within, || async {
            let h = health(node).await;
            let mine: BTreeMap<String, bool> = h.into_iter().filter(|(k, _)| want.contains_key(k)).collect();
            (mine == want || (healthy && mine.values().all(|v| *v) && mine.len() == want.len())).then_some(())
        })
        .await;
        if let Err(e) = got {
            panic!("{e}; {n}'s view: {:?}\n{}", health(node).await, node.log());
        }
    }
}

/// Starts n1 (the owner), then n2 and n3 joining by invite.
async fn three_node_fleet() -> Lab {
    three_node_fleet_with("").await
}

/// As `three_node_fleet`, with `n1_toml` added to n1's warren.toml.
async fn three_node_fleet_with(n1_toml: &str) -> Lab {
    let mut lab = Lab::new(&["n1", "n2", "n3"]).expect("lab");
    lab.configure(0, n1_toml).expect("n1's config");
    found(&mut lab, 3).await;
    lab
}

/// Starts the lab's first node as the owner of a fleet and its next
/// `size - 1` nodes joining it by invite.
async fn found(lab: &mut Lab, size: usize) {
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    for i in 1..size {
        let code = lab.nodes[0].invite().await.expect("invite");
        lab.start(i, Some(&code)).expect("node up");
        let node = &lab.nodes[i];
        wait_for("the join", Duration::from_secs(20), || async {
            let info = node.call("node.info", json!({})).await.ok()?;
            info["fleet"].as_str().map(str::to_string)
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_join_by_invite_and_converge() {
    let started = Instant::now();
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    eprintln!("three nodes converged {:?} after the first start", started.elapsed());
    // One fleet, each node with its own peer id, every endpoint on its own address.
    let mut fleets = vec![];
    for n in &lab.nodes {
        let info = n.call("node.info", json!({})).await.expect("info");
        assert!(
            info["peer_id"].as_str().is_some_and(|p| p.starts_with("12D3Koo")),
            "{info}"
        );
        fleets.push(info["fleet"].clone());
        let nodes = n.call("fleet.nodes", json!({})).await.expect("nodes");
        for m in nodes["nodes"].as_array().expect("nodes") {
            let node = lab.node(m["name"].as_str().expect("name"));
            assert_eq!(m["endpoint"], format!("ws://{}:7767/v1/ws", node.ip), "{m}");
        }
    }
    assert!(fleets.windows(2).all(|w| w[0] == w[1]), "{fleets:?}");

    // Every member trusts the fleet root: a token the owner key signed
    // offline works on every node's WebSocket (here n3's, from outside).
    let key = lab.nodes[0].dir.join("owner.key");
    let out = tests_netlab::sh(&[
        &tests_netlab::warren_exe().display().to_string(),
        "token",
        "mint",
        "--key-file",
        &key.display().to_string(),
        "--right",
        "node:observe",
        "--ttl",
        "600",
    ])
    .expect("mint with the owner key");
    let token = out.lines().next().expect("token").trim().to_string();
    let n3 = lab.node("n3");
    let target = warren::client::Target {
        url: format!("ws://{}:{}/v1/ws", n3.ip, tests_netlab::API_PORT),
        token: Some(token),
    };
    let mut c = warren::client::Client::connect(&target)
        .await
        .expect("connect to n3 with the owner's token");
    let info = c
        .call("node.info", json!({}))
        .await
        .expect("node.info with the owner's token");
    assert_eq!(info["fleet"], fleets[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_join_codes_are_refused_and_the_node_is_blocked() {
    let mut lab = Lab::new(&["n1", "n2", "x1", "x2"]).expect("lab");
    lab.make_owner(0).expect("owner key");
    lab.start(0, None).expect("n1 up");
    let code = lab.nodes[0].invite().await.expect("invite");
    lab.start(1, Some(&code)).expect("n2 up");
    all_see(&lab, &["n1", "n2"], true, Duration::from_secs(20)).await;

    // An outsider replays the used code; another holds an expired one.
    lab.start(2, None).expect("x1 up");
    lab.start(3, None).expect("x2 up");
    let short = lab.nodes[0]
        .call("fleet.invite", json!({ "ttl_secs": 1 }))
        .await
        .expect("invite");
    let x1 = lab.node("x1");
    let e = x1
        .call("fleet.join", json!({ "invite": code }))
        .await
        .expect_err("replayed");
    assert!(e.to_string().contains("single-use"), "{e}");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let x2 = lab.node("x2");
    let e = x2
        .call("fleet.join", json!({ "invite": short["invite"] }))
        .await
        .expect_err("expired");
    assert!(e.to_string().contains("expired"), "{e}");
    // Garbage never reaches the network.
    let e = x2
        .call("fleet.join", json!({ "invite": "wfj1.garbage" }))
        .await
        .expect_err("garbled");
    assert!(e.to_string().contains("invite: join code"), "{e}");

    let n1 = lab.node("n1");
    wait_for("n1 blocks both outsiders", Duration::from_secs(10), || async {
        (n1.log().matches("peer refused and blocked").count() >= 2).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n1.log()));
    let members: Vec<String> = health(n1).await.into_keys().collect();
    assert_eq!(members, ["n1", "n2"], "no outsider became a member");
    let x1_view = x1.call("fleet.nodes", json!({})).await.expect("x1 nodes");
    assert_eq!(x1_view["fleet_id"], Value::Null, "x1 is in no fleet: {x1_view}");
}

/// The next notification on `c` that satisfies `want` (others are skipped).
async fn next_matching(
    c: &mut warren::client::Client,
    within: Duration,
    want: impl Fn(&console_api::Notification) -> bool,
) -> console_api::Notification {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match c.next_notification(left).await.expect("read") {
            Some(n) if want(&n) => return n,
            Some(_) => {}
            None => panic!("no such notification within {within:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_node_is_unhealthy_then_healthy_again_without_a_restart() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let token = lab.owner_token(0, &["node:observe"]).expect("token");
    let mut events = lab.node("n1").ws(&token).await.expect("ws n1");
    events
        .call("events.subscribe", json!({ "kinds": ["event.fleet.changed"] }))
        .await
        .expect("subscribe");
    lab.node("n3").partition().expect("cut n3 off");
    let cut = Instant::now();
    for n in ["n1", "n2"] {
        let node = lab.node(n);
        wait_for(&format!("{n} sees n3 unhealthy"), Duration::from_secs(10), || async {
            (health(node).await.get("n3") == Some(&false)).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e}: {:?}", lab.node(n).log()));
    }
    eprintln!("n3 unhealthy on n1 and n2 {:?} after the cut", cut.elapsed());
    let fleet_change = |want: &'static str| {
        move |n: &console_api::Notification| {
            n.method == "event.fleet.changed"
                && n.params["event"]["name"] == "n3"
                && n.params["event"]["change"] == want
        }
    };
    let seen = next_matching(&mut events, Duration::from_secs(10), fleet_change("unhealthy")).await;
    assert_eq!(seen.params["event"]["healthy"], false);
    assert_eq!(health(lab.node("n1")).await.get("n2"), Some(&true), "n2 unaffected");
    lab.node("n3").heal().expect("heal");
    let healed = Instant::now();
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    eprintln!("healthy again {:?} after healing", healed.elapsed());
    next_matching(&mut events, Duration::from_secs(10), fleet_change("healthy")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_killed_and_restarted_rejoins_and_its_gossip_reaches_the_others() {
    let mut lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    lab.node("n2")
        .call("agent.create", json!({ "name": "kept", "harness": "fake" }))
        .await
        .expect("an agent on n2");
    lab.node_mut("n2").kill9();
    let n1 = lab.node("n1");
    wait_for("n2 down on n1", Duration::from_secs(10), || async {
        (health(n1).await.get("n2") == Some(&false)).then_some(())
    })
    .await
    .expect("n2 seen down");
    let i = lab.index("n2");
    lab.start(i, None).expect("n2 restarts");
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    // What it homed before the kill answers through the others again.
    let kept = lab
        .node("n1")
        .call("agent.get", json!({ "agent": "kept@n2" }))
        .await
        .expect("n2's agent, through n1, after the restart");
    assert_eq!(kept["agent"]["name"], "kept");
    // Its record changes after the restart: only its own heartbeats can say so.
    let n2 = lab.node("n2");
    n2.call("agent.create", json!({ "name": "late", "harness": "fake" }))
        .await
        .expect("agent");
    for other in ["n1", "n3"] {
        let node = lab.node(other);
        wait_for(
            &format!("{other} hears n2's new record"),
            Duration::from_secs(10),
            || async {
                let v = node.call("fleet.nodes", json!({})).await.ok()?;
                v["nodes"]
                    .as_array()?
                    .iter()
                    .any(|m| m["name"] == "n2" && m["agents"] == 2)
                    .then_some(())
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_member_is_dropped_everywhere_told_and_free_to_join_another_fleet() {
    // n1..n3 are fleet A; n4 founds fleet B on the same bridge.
    let mut lab = Lab::new(&["n1", "n2", "n3", "n4"]).expect("lab");
    found(&mut lab, 3).await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    lab.node("n3")
        .call("agent.create", json!({ "name": "keeper", "harness": "fake" }))
        .await
        .expect("an agent on n3");
    let e = lab
        .node("n2")
        .call("fleet.remove", json!({ "node": "n3" }))
        .await
        .expect_err("not the owner");
    assert!(e.to_string().contains("owner key"), "{e}");
    let v = lab
        .node("n1")
        .call("fleet.remove", json!({ "node": "n3" }))
        .await
        .expect("remove n3");
    assert_eq!(v["removed"], true);
    for n in ["n1", "n2"] {
        let node = lab.node(n);
        wait_for(&format!("{n} drops n3"), Duration::from_secs(10), || async {
            let names: Vec<String> = health(node).await.into_keys().collect();
            (names == ["n1", "n2"]).then_some(())
        })
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", node.log()));
    }
    // n3 was told: it is in no fleet, says which it left, keeps its agents.
    let fleet_a = lab.node("n1").call("node.info", json!({})).await.expect("info")["fleet"].clone();
    let n3 = lab.node("n3");
    let told = wait_for("n3 hears it was removed", Duration::from_secs(10), || async {
        let v = n3.call("fleet.nodes", json!({})).await.ok()?;
        (v["fleet_id"].is_null() && v["removed_from"]["fleet_id"] == fleet_a).then_some(v)
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n3.log()));
    assert_eq!(told["nodes"].as_array().map(Vec::len), Some(1), "only itself: {told}");
    assert!(
        n3.call("agent.get", json!({ "agent": "keeper" })).await.is_ok(),
        "its agent stays"
    );
    // Fleet A's tokens hold there no more.
    let a_token = lab.owner_token(0, &["node:observe"]).expect("a fleet A token");
    let refused = n3.ws(&a_token).await.err().expect("n3 refuses fleet A's tokens");
    assert!(refused.to_string().contains("401"), "{refused}");
    // Fleet B, on n4; n3's old fabric cannot join it before a restart.
    lab.make_owner(3).expect("fleet B's owner key");
    lab.start(3, None).expect("n4 up");
    let code = lab.node("n4").invite().await.expect("fleet B's invite");
    let n3 = lab.node("n3");
    let e = n3
        .call("fleet.join", json!({ "invite": code }))
        .await
        .expect_err("a removed node's old fabric cannot join another fleet");
    assert!(e.to_string().contains("restart"), "{e}");
    // Restarted, n3 is refused by both: it stays cut off.
    lab.node_mut("n3").kill9();
    let i = lab.index("n3");
    lab.start(i, None).expect("n3 restarts");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let n3 = lab.node("n3");
    let view = health(n3).await;
    assert!(
        view.get("n1") != Some(&true) && view.get("n2") != Some(&true),
        "n3 sees {view:?}"
    );
    assert_eq!(
        health(lab.node("n1")).await.into_keys().collect::<Vec<_>>(),
        ["n1", "n2"]
    );
    assert!(
        lab.node("n2").log().contains("the owner removed it from the fleet"),
        "{}",
        lab.node("n2").log()
    );
    assert!(
        lab.node("n3").log().contains("removed this node"),
        "n3 says so when it starts: {}",
        lab.node("n3").log()
    );

    // With the same data dir, n3 joins fleet B; its agent comes along.
    let code = lab.node("n4").invite().await.expect("fleet B's invite");
    lab.node("n3")
        .call("fleet.join", json!({ "invite": code }))
        .await
        .unwrap_or_else(|e| panic!("n3 joins fleet B: {e}\n{}", lab.node("n3").log()));
    all_see(&lab, &["n3", "n4"], true, Duration::from_secs(20)).await;
    let n3 = lab.node("n3");
    let info = n3.call("node.info", json!({})).await.expect("info");
    assert_ne!(info["fleet"], fleet_a, "{info}");
    assert!(n3.call("agent.get", json!({ "agent": "keeper" })).await.is_ok());
}
