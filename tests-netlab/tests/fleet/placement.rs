//! Placement by capacity: `agent.create {node: "auto"}` on n1 homes the
//! agent on the healthy member with the fewest live conversations per CPU
//! (all three run on this machine, so the same CPUs and memory: the live
//! conversations decide), and never on a member cut off from the fleet.

use super::*;

/// Starts `n` idle conversations on `node`, one agent each.
async fn busy(node: &LabNode, n: usize) {
    for i in 0..n {
        let name = format!("{}-busy{i}", node.name);
        node.call("agent.create", json!({ "name": name, "harness": "fake" }))
            .await
            .expect("agent");
        node.idle_conversation(&name).await.expect("a live conversation");
    }
}

/// Where `agent` is homed, as n1 lists the fleet's agents.
async fn home_of(n1: &LabNode, agent: &str) -> String {
    let v = n1
        .call("agent.list", json!({ "fleet": true }))
        .await
        .expect("agent.list {fleet: true}");
    v["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .find(|a| a["name"] == agent)
        .map(|a| a["node"].as_str().unwrap_or("n1").to_string())
        .unwrap_or_else(|| panic!("{agent} is nowhere: {v}"))
}

/// Waits until n1's `fleet.nodes` reports `want` live conversations per member.
async fn n1_sees_live(n1: &LabNode, want: &[(&str, u64)]) {
    wait_for(
        "n1 sees every member's live conversations",
        Duration::from_secs(20),
        || async {
            let v = n1.call("fleet.nodes", json!({})).await.ok()?;
            let nodes = v["nodes"].as_array()?;
            want.iter()
                .all(|(name, live)| {
                    nodes
                        .iter()
                        .any(|n| n["name"] == *name && n["live_conversations"].as_u64() == Some(*live))
                })
                .then_some(())
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n1.log()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_places_on_the_least_loaded_healthy_member() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2, n3) = (lab.node("n1"), lab.node("n2"), lab.node("n3"));
    busy(n1, 2).await;
    busy(n2, 1).await;
    n1_sees_live(n1, &[("n1", 2), ("n2", 1), ("n3", 0)]).await;

    let made = n1
        .call(
            "agent.create",
            json!({ "name": "placed", "harness": "fake", "node": "auto" }),
        )
        .await
        .expect("agent.create {node: auto}");
    assert_eq!(made["agent"]["name"], "placed", "{made}");
    assert_eq!(home_of(n1, "placed").await, "n3", "n3 has the most room");
    assert!(
        n3.call("agent.get", json!({ "agent": "placed" })).await.is_ok(),
        "homed on n3 itself"
    );

    // n3 is cut off: it is not chosen, though it has the most room.
    n3.partition().expect("cut n3 off");
    wait_for("n1 sees n3 unhealthy", Duration::from_secs(10), || async {
        (health(n1).await.get("n3") == Some(&false)).then_some(())
    })
    .await
    .expect("n3 unhealthy");
    n1.call(
        "agent.create",
        json!({ "name": "placed2", "harness": "fake", "node": "auto" }),
    )
    .await
    .expect("agent.create {node: auto} with n3 away");
    assert_eq!(
        home_of(n1, "placed2").await,
        "n2",
        "the healthy member with the most room"
    );
    n3.heal().expect("heal");
}
