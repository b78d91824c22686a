//! The fleet's background work: fabric events turned into membership
//! decisions, the period's tick (record, liveness probe, deadlines,
//! redials), and the
//! saved peers file.

use super::{PeerInfo, REDIAL_EVERY};
use fabric::{FabricEvent, Gossip, Multiaddr, NodeRecord, PeerId, Request, Response};
use std::sync::Weak;
use std::time::{Duration, Instant};

/// Turns fabric events into membership decisions.
pub(super) async fn run_events(node: Weak<super::Fleet>, mut events: tokio::sync::mpsc::Receiver<FabricEvent>) {
    while let Some(ev) = events.recv().await {
        let Some(node) = node.upgrade() else { return };
        match ev {
            FabricEvent::Listening(addr) => {
                if let Ok(mut l) = node.fleet.listening.lock() {
                    l.push(addr);
                }
            }
            FabricEvent::Connected { peer, .. } => {
                if let Ok(mut p) = node.fleet.peers.lock() {
                    p.insert(
                        peer,
                        PeerInfo {
                            since: Instant::now(),
                            member: None,
                            joining: false,
                        },
                    );
                }
                // Both sides greet: either handshake admits the pair, so
                // one slow or lost hello does not get a member blocked.
                // (A stranger thus sees this node's certificate: node id,
                // peer id and fleet id, signed; nothing secret.)
                tokio::spawn(async move { node.greet(peer).await });
            }
            FabricEvent::Disconnected { peer } => {
                let gone = node.fleet.peers.lock().ok().and_then(|mut p| p.remove(&peer));
                // A member's last connection closed: dial it again now. A
                // crashed member refuses at once (`Unreachable`); one that
                // only let an idle connection go answers.
                if let Some(id) = gone.and_then(|i| i.member) {
                    tokio::spawn(async move { node.redial_now(&id).await });
                }
            }
            FabricEvent::Unreachable { peer } => node.lost(peer),
            FabricEvent::Request { peer, request, reply } => {
                if matches!(request, Request::Join { .. })
                    && let Ok(mut p) = node.fleet.peers.lock()
                    && let Some(i) = p.get_mut(&peer)
                {
                    i.joining = true;
                }
                tokio::spawn(async move {
                    let judged = !matches!(request, Request::Sync(_));
                    let response = node.answer(peer, request).await;
                    let refused = matches!(response, Response::Refused { .. });
                    if let Ok(f) = node.fleet.fabric() {
                        f.respond(reply, response).await;
                    }
                    // A member that refused a peer's hello or join drops and
                    // blocks it (a node still joining judges nobody).
                    if !(refused && judged) {
                        return;
                    }
                    let member = node.catalog.lock().await.fleet.me.is_some();
                    if member && node.fleet.member_of(&peer).is_none() {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        node.refuse_peer(peer, "it proved no membership").await;
                    }
                });
            }
            FabricEvent::Gossip { from, gossip } => match gossip {
                Gossip::Heartbeat(r)
                    if r.peer_id == from.to_string() && node.fleet.member_of(&from).as_ref() == Some(&r.node_id) =>
                {
                    node.saw_record(r, true);
                }
                Gossip::Heartbeat(r) => tracing::debug!(%from, node = %r.node_id, "heartbeat of another peer ignored"),
                Gossip::Removed(removal) => {
                    tokio::spawn(async move { node.apply_removal(removal).await });
                }
                Gossip::Revoked(ids) => {
                    tokio::spawn(async move { node.revoked_by_member(ids).await });
                }
                Gossip::Suspect(update) => node.heard_suspicion(&from, &update),
            },
            FabricEvent::BadGossip { from, error } => tracing::warn!(%from, %error, "garbled gossip"),
            FabricEvent::Pong { peer, .. } => {
                if let Some(id) = node.fleet.member_of(&peer)
                    && let Ok(mut t) = node.fleet.table.lock()
                    && let Some(s) = t.get_mut(&id)
                {
                    s.last_seen = Instant::now();
                    s.lost = false;
                    s.heard = true;
                }
            }
        }
    }
}

/// Each period: the record (when due), a liveness probe, the membership
/// deadline, and redials of known members.
pub(super) async fn run_ticks(node: Weak<super::Fleet>) {
    let every = match node.upgrade() {
        Some(n) => Duration::from_millis(n.fleet.settings.heartbeat_ms.max(100)),
        None => return,
    };
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        let Some(node) = node.upgrade() else { return };
        let Ok(fabric) = node.fleet.fabric().cloned() else {
            continue;
        };
        // A node the owner removed says nothing more to its old fleet.
        if node.catalog.lock().await.fleet.left.is_some() {
            continue;
        }
        node.publish_record(false).await;
        node.liveness_period(every);
        // Peers that proved nothing in time are dropped and blocked (by a
        // member: a node still joining judges nobody).
        if node.catalog.lock().await.fleet.me.is_none() {
            continue;
        }
        let prove = Duration::from_millis(node.fleet.settings.prove_within_ms);
        let late: Vec<PeerId> = node
            .fleet
            .peers
            .lock()
            .map(|p| {
                p.iter()
                    .filter(|(_, i)| i.member.is_none() && !i.joining && i.since.elapsed() > prove)
                    .map(|(id, _)| *id)
                    .collect()
            })
            .unwrap_or_default();
        for peer in late {
            node.refuse_peer(peer, "it proved no membership in time").await;
        }
        // Known members that are not connected are redialed.
        let connected: Vec<String> = node
            .fleet
            .peers
            .lock()
            .map(|p| p.values().filter_map(|i| i.member.clone()).collect())
            .unwrap_or_default();
        let targets: Vec<(String, String, Vec<String>)> = node
            .fleet
            .table
            .lock()
            .map(|t| {
                t.values()
                    .filter(|s| !connected.contains(&s.record.node_id))
                    .map(|s| {
                        (
                            s.record.node_id.clone(),
                            s.record.peer_id.clone(),
                            s.record.addrs.clone(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        for (_, peer_id, addrs) in &targets {
            for a in addrs {
                let due = node
                    .fleet
                    .dialed
                    .lock()
                    .map(|mut d| {
                        let due = d.get(a).is_none_or(|t| t.elapsed() > REDIAL_EVERY);
                        if due {
                            d.insert(a.clone(), Instant::now());
                        }
                        due
                    })
                    .unwrap_or(false);
                if due && let Ok(addr) = format!("{a}/p2p/{peer_id}").parse::<Multiaddr>() {
                    let _ = fabric.dial(addr).await;
                }
            }
        }
        node.save_known_peers().await;
        node.announce_fleet_changes().await;
    }
}

impl super::Fleet {
    /// Dials every address of member `node_id` now (and marks them dialed,
    /// so the tick does not dial them again at once).
    async fn redial_now(&self, node_id: &str) {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return;
        };
        let Some((peer_id, addrs)) = self.fleet.table.lock().ok().and_then(|t| {
            t.get(node_id)
                .map(|s| (s.record.peer_id.clone(), s.record.addrs.clone()))
        }) else {
            return;
        };
        for a in addrs {
            if let Ok(mut d) = self.fleet.dialed.lock() {
                d.insert(a.clone(), Instant::now());
            }
            if let Ok(addr) = format!("{a}/p2p/{peer_id}").parse::<Multiaddr>() {
                let _ = fabric.dial(addr).await;
            }
        }
    }

    /// A dial to `peer` failed: a member it is not connected to is lost
    /// (unhealthy until heard from again).
    fn lost(&self, peer: PeerId) {
        let connected = self.fleet.peers.lock().map(|p| p.contains_key(&peer)).unwrap_or(true);
        if connected {
            return;
        }
        let peer = peer.to_string();
        if let Ok(mut t) = self.fleet.table.lock()
            && let Some(s) = t.values_mut().find(|s| s.record.peer_id == peer)
            && !s.lost
        {
            tracing::info!(node = %s.record.name, "a member's connection closed and it refuses dials: down");
            s.lost = true;
        }
    }

    /// Where members are goes to `fleet-peers.json` (when it changed), so a
    /// restarted node knows whom to dial (its peers may not dial it first).
    pub(super) async fn save_known_peers(&self) {
        let records: Vec<NodeRecord> = self
            .fleet
            .table
            .lock()
            .map(|t| t.values().map(|s| s.record.clone()).collect())
            .unwrap_or_default();
        let key: String = records
            .iter()
            .map(|r| format!("{} {} {:?}\n", r.node_id, r.peer_id, r.addrs))
            .collect();
        let changed = self.fleet.saved.lock().map(|mut s| {
            let changed = *s != key;
            *s = key;
            changed
        });
        if changed.unwrap_or(true)
            && let Ok(text) = serde_json::to_string(&records)
        {
            let _ = node_store::util::write_private(&self.fleet.peers_file, &text);
        }
    }

    /// Reads `fleet-peers.json` back (start-up).
    pub fn load_known_peers(&self) {
        let Ok(text) = std::fs::read_to_string(&self.fleet.peers_file) else {
            return;
        };
        let Ok(records) = serde_json::from_str::<Vec<NodeRecord>>(&text) else {
            return;
        };
        for r in records {
            self.saw_record(r, false);
        }
    }
}
