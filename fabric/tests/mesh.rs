//! Real libp2p connections on loopback: admitted members exchange calls and
//! gossip; a connected peer that was never admitted gets no gossip, and an
//! expelled one is disconnected and cannot come back.

use std::time::{Duration, Instant};

use fabric::{Capacity, Fabric, FabricConfig, FabricEvent, Gossip, NodeRecord, Request, Response, identity};
use tokio::sync::mpsc::Receiver;

fn node() -> (Fabric, Receiver<FabricEvent>) {
    let cfg = FabricConfig::new(
        identity::Keypair::generate_ed25519(),
        vec!["/ip4/127.0.0.1/tcp/0".parse().expect("addr")],
        "warren/test".into(),
    );
    Fabric::start(cfg).expect("start")
}

/// The next event matching `want` within `secs`, answering requests on the way.
async fn next(
    f: &Fabric,
    rx: &mut Receiver<FabricEvent>,
    secs: u64,
    mut want: impl FnMut(&FabricEvent) -> bool,
) -> Option<FabricEvent> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let ev = tokio::time::timeout(left, rx.recv()).await.ok()??;
        if want(&ev) {
            return Some(ev);
        }
        if let FabricEvent::Request { reply, .. } = ev {
            f.respond(reply, Response::Refused { reason: "test".into() }).await;
        }
    }
}

async fn listen_addr(f: &Fabric, rx: &mut Receiver<FabricEvent>) -> fabric::Multiaddr {
    match next(f, rx, 5, |e| matches!(e, FabricEvent::Listening(_))).await {
        Some(FabricEvent::Listening(a)) => a.with(libp2p_p2p(f)),
        other => panic!("no listen address: {other:?}"),
    }
}

fn libp2p_p2p(f: &Fabric) -> fabric::swarm_protocol::Protocol<'static> {
    fabric::swarm_protocol::Protocol::P2p(f.peer_id())
}

fn record(id: &str) -> NodeRecord {
    NodeRecord {
        node_id: id.into(),
        name: id.into(),
        peer_id: String::new(),
        endpoint: String::new(),
        version: "t".into(),
        agents: 0,
        live_conversations: 0,
        capacity: Capacity::default(),
        addrs: vec![],
        sent_at: 0,
        incarnation: 0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_gossip_and_call_while_an_unadmitted_peer_hears_nothing() {
    let (a, mut ra) = node();
    let (b, mut rb) = node();
    let (c, mut rc) = node();
    let addr = listen_addr(&a, &mut ra).await;
    listen_addr(&b, &mut rb).await;
    listen_addr(&c, &mut rc).await;
    b.dial(addr.clone()).await.expect("b dials a");
    c.dial(addr).await.expect("c dials a");
    for _ in 0..2 {
        next(&a, &mut ra, 5, |e| matches!(e, FabricEvent::Connected { .. }))
            .await
            .expect("a sees its peers");
    }
    next(&b, &mut rb, 5, |e| matches!(e, FabricEvent::Connected { .. }))
        .await
        .expect("b connected");

    // A call, answered by a.
    let call = tokio::spawn({
        let b = b.clone();
        let pa = a.peer_id();
        async move {
            b.request(
                pa,
                Request::Join {
                    secret: "s".into(),
                    node_id: "n-b".into(),
                },
            )
            .await
        }
    });
    match next(&a, &mut ra, 5, |e| matches!(e, FabricEvent::Request { .. })).await {
        Some(FabricEvent::Request { peer, request, reply }) => {
            assert_eq!(peer, b.peer_id());
            assert_eq!(
                request,
                Request::Join {
                    secret: "s".into(),
                    node_id: "n-b".into()
                }
            );
            a.respond(reply, Response::Refused { reason: "no".into() }).await;
        }
        other => panic!("no request: {other:?}"),
    }
    assert_eq!(
        call.await.expect("join").expect("answer"),
        Response::Refused { reason: "no".into() }
    );

    // a and b admit each other; a never admits c, though c (an outsider
    // that wants in) would take anything a sends it.
    a.admit(b.peer_id()).await;
    b.admit(a.peer_id()).await;
    c.admit(a.peer_id()).await;
    let beat = Gossip::Heartbeat(record("n-a"));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        a.publish(&beat).await.expect("publish");
        if let Some(FabricEvent::Gossip { from, gossip }) =
            next(&b, &mut rb, 1, |e| matches!(e, FabricEvent::Gossip { .. })).await
        {
            assert_eq!((from, gossip), (a.peer_id(), beat.clone()));
            break;
        }
        assert!(Instant::now() < deadline, "b never heard a's gossip");
    }
    assert!(
        next(&c, &mut rc, 2, |e| matches!(e, FabricEvent::Gossip { .. }))
            .await
            .is_none(),
        "an unadmitted peer hears no gossip"
    );

    // Expelled: disconnected, and a redial is refused.
    a.expel(c.peer_id()).await;
    next(&c, &mut rc, 5, |e| matches!(e, FabricEvent::Disconnected { .. }))
        .await
        .expect("c was dropped");
    let _ = c.dial(listen_addr_of(&a).await).await;
    assert!(
        next(
            &a,
            &mut ra,
            2,
            |e| matches!(e, FabricEvent::Connected { peer, .. } if *peer == c.peer_id())
        )
        .await
        .is_none(),
        "a blocked peer does not get back in"
    );
}

async fn listen_addr_of(f: &Fabric) -> fabric::Multiaddr {
    f.listen_addrs()
        .await
        .into_iter()
        .next()
        .expect("listening")
        .with(libp2p_p2p(f))
}
