//! Bad input to the fleet's liveness protocol, from a member that lies: a
//! fabric client in the test process holding a real certificate (the owner
//! key signed it), talking to n2 over the lab's bridge.
//! - a probe with more deltas than the bound is refused whole, the reason
//!   naming it;
//! - a suspicion of n1 at an incarnation n1 has already left behind is
//!   ignored (n1 never has to refute), while one at its current incarnation
//!   reaches n1, which refutes it (the control: the lie is heard at all);
//! - saying that a member cut off from the fleet is alive (only a member
//!   itself is believed saying so) leaves it down.

use super::*;
use fabric::swim::{Probe, Status, Update};
use fabric::{Certificate, Fabric, FabricConfig, FabricEvent, PeerId, Request, Response, View};

const REFUTED: &str = "this node was suspected";

/// A member that lies: it answers the node's handshake and then says
/// whatever the test makes it say.
struct Liar {
    fabric: Fabric,
    peer: PeerId,
}

impl Liar {
    async fn join(lab: &Lab, to: &LabNode) -> Liar {
        let seed = std::fs::read_to_string(lab.nodes[0].dir.join("owner.key")).expect("n1 holds the owner key");
        let seed: [u8; 32] = hex::decode(seed.trim()).expect("hex").try_into().expect("32 bytes");
        let owner = ed25519_dalek::SigningKey::from_bytes(&seed);
        let keypair = fabric::identity::Keypair::generate_ed25519();
        let cert = Certificate::issue(&owner, "liar", &keypair.public().to_peer_id().to_string(), 1);
        let cfg = FabricConfig::new(
            keypair,
            vec!["/ip4/0.0.0.0/tcp/0".parse().expect("addr")],
            "liar".into(),
        );
        let (fabric, mut events) = Fabric::start(cfg).expect("the liar's fabric");
        // It answers the node's own handshake like any member.
        let answering = fabric.clone();
        let mine = cert.clone();
        tokio::spawn(async move {
            while let Some(ev) = events.recv().await {
                if let FabricEvent::Request { request, reply, .. } = ev {
                    let response = match request {
                        Request::Hello { .. } => Response::Hello { cert: mine.clone() },
                        Request::Sync(_) => Response::Synced(View {
                            records: vec![],
                            members: vec![mine.clone()],
                            removed: vec![],
                            revoked: vec![],
                        }),
                        Request::Probe(_) => Response::Ack(Probe::default()),
                        _ => Response::Refused { reason: "no".into() },
                    };
                    answering.respond(reply, response).await;
                }
            }
        });
        let nodes = to.call("fleet.nodes", json!({})).await.expect("fleet.nodes");
        let peer: PeerId = nodes["nodes"][0]["peer_id"]
            .as_str()
            .and_then(|p| p.parse().ok())
            .expect("its peer id");
        let addr = format!("{}/p2p/{peer}", to.fabric_addr());
        fabric.dial(addr.parse().expect("multiaddr")).await.expect("dial");
        let said = wait_for("the liar's hello", Duration::from_secs(10), || async {
            match fabric
                .request_within(peer, Request::Hello { cert: cert.clone() }, Duration::from_secs(2))
                .await
            {
                Ok(Response::Hello { .. }) => Some(()),
                _ => None,
            }
        })
        .await;
        said.expect("the node admits the liar's certificate");
        Liar { fabric, peer }
    }

    async fn probe(&self, deltas: Vec<Update>) -> Response {
        let probe = Probe { incarnation: 1, deltas };
        self.fabric
            .request_within(self.peer, Request::Probe(probe), Duration::from_secs(5))
            .await
            .expect("an answer")
    }

    /// What the node says of the fleet: each member's record (its
    /// incarnation among them).
    async fn view(&self) -> View {
        let mine = View {
            records: vec![],
            members: vec![],
            removed: vec![],
            revoked: vec![],
        };
        match self
            .fabric
            .request_within(self.peer, Request::Sync(mine), Duration::from_secs(5))
            .await
        {
            Ok(Response::Synced(view)) => view,
            other => panic!("no view from the node: {other:?}"),
        }
    }
}

fn suspect(node: &str, incarnation: u64) -> Update {
    Update {
        node: node.into(),
        status: Status::Suspect,
        incarnation,
    }
}

async fn node_id(n: &LabNode) -> String {
    let info = n.call("node.info", json!({})).await.expect("node.info");
    info["node_id"].as_str().expect("node_id").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_member_cannot_overfill_bring_down_or_raise_the_dead() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2", "n3"], true, Duration::from_secs(20)).await;
    let (n1, n2, n3) = (lab.node("n1"), lab.node("n2"), lab.node("n3"));
    let (n1_id, n3_id) = (node_id(n1).await, node_id(n3).await);
    let liar = Liar::join(&lab, n2).await;

    // More deltas than the bound: refused whole, naming it.
    match liar.probe((0..17).map(|_| suspect(&n3_id, u64::MAX)).collect()).await {
        Response::Refused { reason } => {
            assert!(
                reason.contains("17 deltas") && reason.contains("at most 16"),
                "{reason}"
            )
        }
        other => panic!("an oversize probe was taken: {other:?}"),
    }

    // A stale suspicion of n1 (an incarnation before its start) is ignored.
    assert!(matches!(liar.probe(vec![suspect(&n1_id, 1)]).await, Response::Ack(_)));
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(
        !n1.log().contains(REFUTED),
        "n1 had to refute a stale suspicion:\n{}",
        n1.log()
    );
    // The control: at its current incarnation it reaches n1, which refutes.
    let view = liar.view().await;
    let current = view
        .records
        .iter()
        .find(|r| r.node_id == n1_id)
        .map(|r| r.incarnation)
        .expect("n1's record in n2's view");
    assert!(current > 1, "n1's incarnation is its start time: {current}");
    assert!(matches!(
        liar.probe(vec![suspect(&n1_id, current)]).await,
        Response::Ack(_)
    ));
    wait_for("n1 to refute", Duration::from_secs(10), || async {
        n1.log().contains(REFUTED).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n1.log()));
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        health(n2).await.get("n1"),
        Some(&true),
        "a refuted suspicion left n1 down"
    );

    // n3 cut off goes down; the liar saying it is alive changes nothing.
    n3.partition().expect("cut n3 off");
    wait_for("n2 to see n3 down", Duration::from_secs(15), || async {
        (health(n2).await.get("n3") == Some(&false)).then_some(())
    })
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", n2.log()));
    let alive = Update {
        node: n3_id.clone(),
        status: Status::Alive,
        incarnation: u64::MAX,
    };
    assert!(matches!(liar.probe(vec![alive]).await, Response::Ack(_)));
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(health(n2).await.get("n3"), Some(&false), "a forged alive raised n3");
    }
    assert!(
        n2.log().contains("only a member itself says so"),
        "n2 did not log the forged delta:\n{}",
        n2.log()
    );
    n3.heal().expect("heal n3");
}
