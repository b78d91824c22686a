//! Membership: proving it to a peer (hello), admitting members, joins by
//! code, the owner's removals, and fleet-wide revocations.

use super::{HANDSHAKE_WITHIN, JOIN_WITHIN, PeerInfo, STRANGER_BLOCK};
use crate::service::{NodeError, NodeResult};
use fabric::{Certificate, Gossip, Invite, Multiaddr, PeerId, Request, Response, View};
use node_store::events::Event;
use node_store::util::now_ms;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How long `fleet.invite` waits for a fabric started just now to report
/// where it listens.
const INVITE_ADDR_WAIT: Duration = Duration::from_secs(5);
/// How long the owner waits for a removed member to hear its removal.
const TELL_REMOVED_WITHIN: Duration = Duration::from_secs(2);

impl super::Fleet {
    /// A peer's certificate is good: it is a member from now on.
    pub(super) async fn admit_member(&self, peer: PeerId, cert: Certificate) {
        if let Ok(mut p) = self.fleet.peers.lock()
            && let Some(info) = p.get_mut(&peer)
        {
            info.member = Some(cert.node_id.clone());
        }
        if let Ok(f) = self.fleet.fabric() {
            f.admit(peer).await;
        }
        let mut cat = self.catalog.lock().await;
        let known = cat.fleet.members.get(&cert.node_id) == Some(&cert)
            || cat.fleet.me.as_ref().is_some_and(|m| m.node_id == cert.node_id);
        if !known && let Err(e) = self.commit(&mut cat, vec![Event::FleetMember { cert }]).await {
            tracing::error!(error = %e, "could not record a fleet member");
        }
    }

    pub(super) async fn check_cert(&self, peer: &PeerId, cert: &Certificate) -> Result<(), String> {
        let root = self.fleet_root().await.ok_or("this node is not in a fleet")?;
        cert.verify(&root, &peer.to_string()).map_err(|e| e.to_string())?;
        if self.catalog.lock().await.fleet.is_removed(&cert.node_id, &cert.peer_id) {
            return Err(format!("{} was removed from the fleet", cert.node_id));
        }
        Ok(())
    }

    /// An owner-signed removal (from gossip, a view, or this node): record
    /// it once, drop and block the removed peer.
    pub(super) async fn apply_removal(&self, removal: fabric::Removal) {
        let Some(root) = self.fleet_root().await else { return };
        if removal.verify(&root).is_err() {
            return;
        }
        if removal.node_id == self.cfg.node_id {
            return self.removed_myself(removal).await;
        }
        {
            let mut cat = self.catalog.lock().await;
            if cat.fleet.removed.contains_key(&removal.node_id) {
                return;
            }
            let e = Event::FleetRemoved {
                removal: removal.clone(),
            };
            if let Err(e) = self.commit(&mut cat, vec![e]).await {
                tracing::error!(error = %e, "could not record a removal");
                return;
            }
        }
        if let Ok(mut m) = self.fleet.swim.lock() {
            m.remove(&removal.node_id);
        }
        if let Ok(mut t) = self.fleet.table.lock() {
            t.remove(&removal.node_id);
        }
        if let Ok(peer) = removal.peer_id.parse::<PeerId>() {
            self.block_for_good(peer, "the owner removed it from the fleet").await;
        }
    }

    /// The owner removed this node: it leaves the fleet (its agents stay),
    /// stops trusting the fleet's tokens, drops its members and says so.
    /// Joining another fleet takes a restart (the fabric is the old
    /// fleet's) and a new join code.
    async fn removed_myself(&self, removal: fabric::Removal) {
        let (members, root) = {
            let mut cat = self.catalog.lock().await;
            if cat.fleet.me.is_none() {
                return;
            }
            let members: Vec<Certificate> = cat.fleet.members.values().cloned().collect();
            let root = cat.fleet.root.clone();
            let e = Event::FleetRemoved {
                removal: removal.clone(),
            };
            if let Err(e) = self.commit(&mut cat, vec![e]).await {
                tracing::error!(error = %e, "could not record this node's removal");
                return;
            }
            (members, root)
        };
        tracing::warn!(
            fleet = %removal.fleet_id,
            "the fleet's owner removed this node: it is in no fleet now (its agents stay); restart it to join another"
        );
        if let Some(root) = root {
            self.distrust_fleet_root(&root);
        }
        if let Ok(mut t) = self.fleet.table.lock() {
            t.clear();
        }
        let _ = std::fs::remove_file(&self.fleet.peers_file);
        if let Ok(f) = self.fleet.fabric() {
            for cert in members {
                if let Ok(peer) = cert.peer_id.parse::<PeerId>() {
                    f.expel(peer).await;
                }
            }
        }
        self.publish(
            console_api::methods::EVENT_FLEET_CHANGED,
            json!({ "change": "removed", "node_id": self.cfg.node_id, "name": self.fleet.name, "healthy": false }),
        );
    }

    /// A revocation on this node holds fleet-wide: every member hears it as
    /// gossip now, and one cut off now in the view it syncs on reconnection.
    pub async fn revoke_fleet_wide(&self, ids: Vec<String>) -> NodeResult<()> {
        self.revoke(ids.clone()).await?;
        if let Ok(f) = self.fleet.fabric() {
            for chunk in ids.chunks(fabric::wire::MAX_REVOKED) {
                if let Err(e) = f.publish(&Gossip::Revoked(chunk.to_vec())).await {
                    tracing::warn!(error = %e, "a revocation was not gossiped (members learn it at their next sync)");
                }
            }
        }
        Ok(())
    }

    /// Revocations a member told us about (bounded; bad ids are refused).
    pub(super) async fn revoked_by_member(&self, ids: Vec<String>) {
        if ids.is_empty() || ids.len() > fabric::wire::MAX_REVOKED {
            return;
        }
        if let Err(e) = self.revoke(ids).await {
            tracing::warn!(error = %e, "a member's revocations were refused");
        }
    }

    /// `fleet.remove` (local-only, on the owner's node): the member is
    /// removed fleet-wide (named by node id or name).
    pub async fn fleet_remove(&self, node: &str) -> NodeResult<Value> {
        let Some(owner) = self.fleet.owner().cloned() else {
            return Err(NodeError::Conflict(
                "only the node holding the fleet owner key removes members".into(),
            ));
        };
        let by_name = self.fleet.table.lock().ok().and_then(|t| {
            t.values()
                .find(|s| s.record.name == node)
                .map(|s| s.record.node_id.clone())
        });
        let id = by_name.unwrap_or_else(|| node.to_string());
        if id == self.cfg.node_id {
            return Err(NodeError::Invalid(
                "node: the owner's own node cannot be removed".into(),
            ));
        }
        let cert = self.catalog.lock().await.fleet.members.get(&id).cloned();
        let Some(cert) = cert else {
            return Err(NodeError::NotFound(format!(
                "node: {node:?} is not a member of this fleet"
            )));
        };
        let removal = fabric::Removal::issue(&owner, &cert, now_ms());
        // Told first (the removed node hears it while still connected), then
        // recorded and blocked here.
        if let Ok(f) = self.fleet.fabric() {
            let _ = f.publish(&Gossip::Removed(removal.clone())).await;
            if let Ok(peer) = cert.peer_id.parse::<PeerId>() {
                let _ = f
                    .request_within(peer, Request::Removed(removal.clone()), TELL_REMOVED_WITHIN)
                    .await;
            }
        }
        self.apply_removal(removal).await;
        Ok(json!({ "removed": true, "node_id": id }))
    }

    /// Proves membership to a newly connected peer and learns its view.
    pub(super) async fn greet(&self, peer: PeerId) {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return;
        };
        let Some(me) = self.catalog.lock().await.fleet.me.clone() else {
            return;
        };
        match fabric
            .request_within(peer, Request::Hello { cert: me }, HANDSHAKE_WITHIN)
            .await
        {
            Ok(Response::Hello { cert }) => match self.check_cert(&peer, &cert).await {
                Ok(()) => {
                    self.admit_member(peer, cert).await;
                    self.sync_with(peer).await;
                }
                Err(why) => self.refuse_peer(peer, &format!("its certificate: {why}")).await,
            },
            Ok(Response::Refused { reason }) => tracing::info!(%peer, %reason, "a peer refused our membership"),
            Ok(other) => {
                self.refuse_peer(peer, &format!("it answered hello with {other:?}"))
                    .await
            }
            Err(e) => tracing::debug!(%peer, error = %e, "hello failed"),
        }
    }

    pub(super) async fn sync_with(&self, peer: PeerId) {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return;
        };
        let view = self.fleet_view().await;
        if let Ok(Response::Synced(theirs)) = fabric.request_within(peer, Request::Sync(view), HANDSHAKE_WITHIN).await {
            self.own_record_heard(&peer, &theirs);
            self.merge_view(theirs).await;
        }
    }

    /// A view's first record is its sender's own: heard from it directly.
    fn own_record_heard(&self, peer: &PeerId, view: &View) {
        if let Some(r) = view.records.first()
            && r.peer_id == peer.to_string()
            && self.fleet.member_of(peer).as_ref() == Some(&r.node_id)
        {
            self.saw_record(r.clone(), true);
        }
    }

    /// What a member told us: records to show, members to know and dial.
    pub(super) async fn merge_view(&self, view: View) {
        if view.check().is_err() {
            return;
        }
        let Some(root) = self.fleet_root().await else { return };
        for cert in &view.members {
            if cert.verify(&root, &cert.peer_id).is_ok() && cert.node_id != self.cfg.node_id {
                let mut cat = self.catalog.lock().await;
                if !cat.fleet.members.contains_key(&cert.node_id) && !cat.fleet.removed.contains_key(&cert.node_id) {
                    let _ = self
                        .commit(&mut cat, vec![Event::FleetMember { cert: cert.clone() }])
                        .await;
                }
            }
        }
        for r in view.removed {
            self.apply_removal(r).await;
        }
        self.revoked_by_member(view.revoked).await;
        // Records of members only: a view cannot make a stranger a route.
        let members: Vec<String> = self.catalog.lock().await.fleet.members.keys().cloned().collect();
        for r in view.records {
            if members.contains(&r.node_id) {
                self.saw_record(r, false);
            }
        }
    }

    /// Drops and blocks a peer that proved nothing (or the wrong thing) for
    /// `STRANGER_BLOCK`: long enough that a stranger cannot hammer the node,
    /// short enough that a node refused for a bad join code can come back
    /// with a good one. A removed member stays blocked (`block_for_good`).
    pub(super) async fn refuse_peer(&self, peer: PeerId, why: &str) {
        self.block_for_good(peer, why).await;
        let Some(me) = self.me_arc() else { return };
        tokio::spawn(async move {
            tokio::time::sleep(STRANGER_BLOCK).await;
            let removed = {
                let cat = me.catalog.lock().await;
                let p = peer.to_string();
                cat.fleet.removed.values().any(|r| r.peer_id == p)
            };
            if !removed && let Ok(f) = me.fleet.fabric() {
                f.unblock(peer).await;
            }
        });
    }

    pub(super) async fn block_for_good(&self, peer: PeerId, why: &str) {
        tracing::warn!(%peer, reason = why, "peer refused and blocked");
        if let Ok(f) = self.fleet.fabric() {
            f.expel(peer).await;
        }
        if let Ok(mut p) = self.fleet.peers.lock() {
            p.remove(&peer);
        }
    }

    pub(super) async fn answer(&self, peer: PeerId, request: Request) -> Response {
        let refused = |reason: String| Response::Refused { reason };
        match request {
            Request::Hello { cert } => match self.check_cert(&peer, &cert).await {
                Ok(()) => {
                    let me = self.catalog.lock().await.fleet.me.clone();
                    let Some(me) = me else {
                        return refused("not a member".into());
                    };
                    self.admit_member(peer, cert).await;
                    Response::Hello { cert: me }
                }
                Err(why) => {
                    // The details stay here: a stranger is not told our fleet.
                    tracing::info!(%peer, reason = %why, "a peer's certificate was refused");
                    refused("your certificate is not valid in this fleet".into())
                }
            },
            Request::Join { secret, node_id } => self.answer_join(peer, &secret, &node_id).await,
            _ if self.fleet.member_of(&peer).is_none() => refused("prove membership first".into()),
            Request::Sync(view) => {
                let mine = self.fleet_view().await;
                self.own_record_heard(&peer, &view);
                self.merge_view(view).await;
                Response::Synced(mine)
            }
            Request::Probe(probe) => self.answer_probe(&peer, &probe),
            Request::ProbeFor { target, probe } => self.answer_probe_for(&peer, &target, &probe).await,
            Request::Removed(removal) => {
                self.apply_removal(removal).await;
                Response::Told
            }
            // A message from one of its agents: the member must name itself
            // as the sender's node (no member speaks for another).
            Request::Mail(item) => {
                let name = self
                    .fleet
                    .member_of(&peer)
                    .map(|id| self.member_name(&id))
                    .unwrap_or_default();
                if item.node != name {
                    tracing::warn!(%peer, member = %name, claimed = %item.node, "a member handed over mail as another node: refused");
                    return Response::Mail(fabric::MailAnswer::Refused {
                        reason: format!(
                            "the message names node {:?} as its sender, but member {name} sent it",
                            item.node
                        ),
                        not_found: false,
                    });
                }
                self.fleet.ask_home(peer, Request::Mail(item)).await
            }
            // The home side of routing answers these (`api/routing/serve.rs`).
            request @ (Request::Api { .. } | Request::Pull { .. } | Request::Cancel { .. } | Request::Locate(_)) => {
                self.fleet.ask_home(peer, request).await
            }
        }
    }

    pub(super) async fn answer_join(&self, peer: PeerId, secret: &str, node_id: &str) -> Response {
        let refused = |reason: String| Response::Refused { reason };
        let Some(owner) = self.fleet.owner().cloned() else {
            return refused("this node cannot admit members: it holds no owner key".into());
        };
        if node_store::validate::node_id(node_id).is_err() {
            return refused(format!("{node_id:?} is not a node id"));
        }
        let hash = Invite::secret_hash(secret);
        let cert = {
            let mut cat = self.catalog.lock().await;
            if let Err(e) = fabric::invite::judge(cat.fleet.invites.get(&hash).copied(), now_ms()) {
                return refused(e.to_string());
            }
            let cert = Certificate::issue(&owner, node_id, &peer.to_string(), now_ms());
            let events = vec![
                Event::FleetInviteUsed {
                    secret_hash: hash,
                    node_id: node_id.to_string(),
                },
                Event::FleetMember { cert: cert.clone() },
            ];
            if self.commit(&mut cat, events).await.is_err() {
                return refused("the inviter could not record the join".into());
            }
            cert
        };
        tracing::info!(%peer, node = node_id, "a node joined the fleet");
        self.admit_member(peer, cert.clone()).await;
        Response::Joined {
            cert,
            view: self.fleet_view().await,
        }
    }

    /// `fleet.invite` (local-only): a single-use join code, valid `ttl`.
    pub async fn fleet_invite(&self, ttl: Duration) -> NodeResult<Value> {
        if self.fleet.owner().is_none() {
            return Err(NodeError::Conflict(
                "this node holds no fleet owner key: run `warren fleet init` on this host to found the fleet here (or set [fleet] owner_key)".into(),
            ));
        }
        self.found_fleet().await?;
        self.ensure_fabric().await?;
        let fabric = self.fleet.fabric()?.clone();
        // A fabric started just now reports its listening addresses a moment
        // later: wait for them (bounded) rather than print a code that names
        // no address to dial.
        let waited = Instant::now();
        let mut addrs = loop {
            let mut addrs = self.fleet.listening.lock().map(|a| a.clone()).unwrap_or_default();
            if addrs.is_empty() {
                addrs = fabric.listen_addrs().await;
            }
            if !addrs.is_empty() {
                break addrs;
            }
            if waited.elapsed() > INVITE_ADDR_WAIT {
                return Err(NodeError::Busy {
                    message: format!(
                        "the fabric is listening on no address yet ({}s after it started): check [fleet] listen, then ask again",
                        INVITE_ADDR_WAIT.as_secs()
                    ),
                    retry_after_ms: 1000,
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        // Addresses another host can reach first.
        addrs.sort_by_key(|a| a.to_string().starts_with("/ip4/127."));
        let peer = fabric.peer_id();
        let secret = hex::encode(rand::random::<[u8; 32]>());
        let expires_at = now_ms() + ttl.as_millis() as u64;
        let root = self.catalog.lock().await.fleet.root.clone().unwrap_or_default();
        {
            let mut cat = self.catalog.lock().await;
            let e = Event::FleetInvite {
                secret_hash: Invite::secret_hash(&secret),
                expires_at,
            };
            self.commit(&mut cat, vec![e]).await?;
        }
        let invite = Invite {
            root,
            inviter_peer_id: peer.to_string(),
            addrs: addrs.iter().map(|a| a.to_string()).collect(),
            secret,
            expires_at,
        };
        Ok(json!({ "invite": invite.encode(), "expires_at": expires_at }))
    }

    /// `fleet.join` (local-only): joins the fleet of a join code.
    pub async fn fleet_join(&self, code: &str) -> NodeResult<Value> {
        let invite = Invite::decode(code).map_err(|e| NodeError::Invalid(format!("invite: {e}")))?;
        let (member, left) = {
            let cat = self.catalog.lock().await;
            (cat.fleet.me.is_some(), cat.fleet.left.is_some())
        };
        if member {
            return Err(NodeError::Conflict("this node is in a fleet already".into()));
        }
        if left && self.fleet.fabric.get().is_some() {
            return Err(NodeError::Conflict(
                "this node was removed from its fleet and its fabric still runs for that fleet: restart the node (`warren up`), then join with the new code".into(),
            ));
        }
        let root_bytes: [u8; 32] = hex::decode(&invite.root)
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| NodeError::Invalid("invite: its fleet root is not a key".into()))?;
        let root = ed25519_dalek::VerifyingKey::from_bytes(&root_bytes)
            .map_err(|_| NodeError::Invalid("invite: its fleet root is not a key".into()))?;
        let inviter: PeerId = invite
            .inviter_peer_id
            .parse()
            .map_err(|_| NodeError::Invalid("invite: the inviter's peer id is garbled".into()))?;
        if self.fleet.fabric.get().is_none() {
            self.start_fabric(&fabric::fleet_id(&root))?;
        }
        let fabric = self.fleet.fabric()?.clone();
        let deadline = Instant::now() + JOIN_WITHIN;
        let answer = loop {
            for a in &invite.addrs {
                if let Ok(addr) = a.parse::<Multiaddr>()
                    && let Err(e) = fabric.dial(addr).await
                {
                    tracing::info!(error = %e, "dialing the inviter failed");
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let ask = Request::Join {
                secret: invite.secret.clone(),
                node_id: self.cfg.node_id.clone(),
            };
            match fabric.request_within(inviter, ask, HANDSHAKE_WITHIN).await {
                Ok(r) => break r,
                Err(e) if Instant::now() > deadline => {
                    return Err(NodeError::Unreachable {
                        node: invite.inviter_peer_id.clone(),
                        message: format!(
                            "the inviter did not answer within {JOIN_WITHIN:?} ({e}); if it refused this node a moment ago, it refuses its connections for {} s",
                            STRANGER_BLOCK.as_secs()
                        ),
                    });
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        };
        let (cert, view) = match answer {
            Response::Joined { cert, view } => (cert, view),
            Response::Refused { reason } => return Err(NodeError::Forbidden(format!("the inviter refused: {reason}"))),
            other => return Err(NodeError::Internal(format!("the inviter answered {other:?}"))),
        };
        cert.verify(&root, &fabric.peer_id().to_string())
            .map_err(|e| NodeError::Forbidden(format!("the inviter's certificate for us: {e}")))?;
        {
            let mut cat = self.catalog.lock().await;
            let e = Event::FleetJoined {
                root: invite.root.clone(),
                cert: cert.clone(),
            };
            self.commit(&mut cat, vec![e]).await?;
        }
        self.trust_fleet_root(&invite.root);
        // The inviter is a member; it told us who else is.
        if let Ok(mut p) = self.fleet.peers.lock() {
            p.entry(inviter).or_insert(PeerInfo {
                since: Instant::now(),
                member: None,
                joining: false,
            });
        }
        self.greet(inviter).await;
        self.merge_view(view).await;
        let members = self.catalog.lock().await.fleet.members.len() + 1;
        Ok(json!({ "fleet_id": cert.fleet_id, "node_id": cert.node_id, "members": members }))
    }
}
