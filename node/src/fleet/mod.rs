//! The fleet: this node in the libp2p mesh of its fleet (`fabric`). It
//! founds the fleet when it holds the owner key, prints join codes, joins by
//! one, proves its membership to every peer it meets (a certificate signed by
//! the fleet root, checked before anything but identify and ping), drops and
//! blocks a peer that proves nothing within a few seconds, publishes its
//! record (endpoint, health, capacity) as gossip, resyncs its view on every
//! (re)connection (gossip is not replayed after a partition), and keeps the
//! table `fleet.nodes` answers from.

pub mod forward;
pub mod route;
pub mod serve;
pub mod state;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use ed25519_dalek::SigningKey;
use fabric::{
    Certificate, Fabric, FabricConfig, FabricEvent, Gossip, Invite, Multiaddr, NodeRecord, PeerId, Request, Response,
    View,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::events::Event;
use crate::service::{Node, NodeError, NodeResult};
use crate::util::now_ms;

/// `[fleet]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FleetSettings {
    /// Where the fabric listens (a multiaddr).
    pub listen: String,
    /// The fleet owner's key file (`warren fleet init`), on a node that
    /// founds the fleet and prints join codes. Default: `<data_dir>/owner.key`
    /// when that file exists.
    pub owner_key: Option<PathBuf>,
    /// The client endpoint published to the fleet (for NAT or a proxy);
    /// default: this node's own WebSocket URL.
    pub endpoint: Option<String>,
    /// How often the node publishes its record.
    pub heartbeat_ms: u64,
    /// A member not heard from for this long is unhealthy.
    pub unhealthy_after_ms: u64,
    /// How long a connected peer has to prove membership before it is
    /// dropped and blocked.
    pub prove_within_ms: u64,
}

impl Default for FleetSettings {
    fn default() -> FleetSettings {
        FleetSettings {
            listen: "/ip4/0.0.0.0/tcp/7768".into(),
            owner_key: None,
            endpoint: None,
            heartbeat_ms: 1000,
            unhealthy_after_ms: 4000,
            prove_within_ms: 3000,
        }
    }
}

/// The fleet side of a node: what it needs at hand, and what it has seen.
pub struct FleetRuntime {
    pub settings: FleetSettings,
    /// This node's name in the fleet.
    pub name: String,
    pub keypair: fabric::identity::Keypair,
    owner: Option<SigningKey>,
    /// The owner key as a token signer (the owner's node forwards its local
    /// admin's calls with a token it signs).
    owner_root: Option<capabilities::RootKey>,
    fabric: OnceLock<Fabric>,
    /// Concrete addresses the fabric listens on.
    listening: Mutex<Vec<Multiaddr>>,
    /// Members' records and when each was last heard from.
    table: Mutex<BTreeMap<String, Seen>>,
    /// Connected peers: when, where, and (once proven) which member.
    peers: Mutex<HashMap<PeerId, PeerInfo>>,
    /// When each known address was last dialed.
    dialed: Mutex<HashMap<String, Instant>>,
    peers_file: PathBuf,
    /// What `fleet-peers.json` holds now (it is rewritten only on change).
    saved: Mutex<String>,
    /// Forwarded subscriptions this node serves as a home.
    pub streams: serve::Streams,
    /// Where conversations live, as learned from forwarded answers.
    pub routes: forward::Routes,
}

struct Seen {
    record: NodeRecord,
    last_seen: Instant,
    /// How long its last heartbeat took to arrive (by the two nodes' clocks).
    delay_ms: Option<u64>,
}

struct PeerInfo {
    since: Instant,
    member: Option<String>,
}

/// Redial a known member's address at most this often.
const REDIAL_EVERY: Duration = Duration::from_secs(2);
/// How long a hello, a sync or a join request may take.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(5);
/// The fabric's own bound on any request: above the longest forwarded call
/// (each caller applies its own, shorter, bound).
const FABRIC_REQUEST_TIMEOUT: Duration = Duration::from_secs(660);
/// How long a join waits for the inviter to answer, in all.
const JOIN_WITHIN: Duration = Duration::from_secs(15);

impl FleetRuntime {
    /// Loads (or creates) the node's libp2p key and the owner key, if any.
    pub fn open(data_dir: &std::path::Path, settings: FleetSettings, name: String) -> anyhow::Result<FleetRuntime> {
        use anyhow::Context;
        let key_path = data_dir.join("p2p.key");
        let keypair = match std::fs::read(&key_path) {
            Ok(bytes) => fabric::identity::Keypair::from_protobuf_encoding(&bytes)
                .with_context(|| format!("{} is not a libp2p key", key_path.display()))?,
            Err(_) => {
                let k = fabric::identity::Keypair::generate_ed25519();
                let bytes = k.to_protobuf_encoding().context("encoding the libp2p key")?;
                write_private_bytes(&key_path, &bytes)?;
                k
            }
        };
        let owner_path = settings
            .owner_key
            .clone()
            .or_else(|| Some(data_dir.join("owner.key")).filter(|p| p.exists()));
        let owner = match owner_path {
            Some(p) => {
                let text =
                    std::fs::read_to_string(&p).with_context(|| format!("reading the owner key {}", p.display()))?;
                let seed: [u8; 32] = hex::decode(text.trim())
                    .ok()
                    .and_then(|b| b.try_into().ok())
                    .with_context(|| format!("{} is not an owner key (32 bytes in hex)", p.display()))?;
                Some(SigningKey::from_bytes(&seed))
            }
            None => None,
        };
        let owner_root = match &owner {
            Some(k) => Some(
                capabilities::RootKey::from_private_hex(&hex::encode(k.to_bytes()))
                    .context("the owner key as a token signer")?,
            ),
            None => None,
        };
        Ok(FleetRuntime {
            settings,
            name,
            keypair,
            owner,
            owner_root,
            fabric: OnceLock::new(),
            listening: Mutex::new(vec![]),
            table: Mutex::new(BTreeMap::new()),
            peers: Mutex::new(HashMap::new()),
            dialed: Mutex::new(HashMap::new()),
            peers_file: data_dir.join("fleet-peers.json"),
            saved: Mutex::new(String::new()),
            streams: Default::default(),
            routes: Default::default(),
        })
    }

    pub fn peer_id(&self) -> PeerId {
        self.keypair.public().to_peer_id()
    }

    fn fabric(&self) -> NodeResult<&Fabric> {
        self.fabric
            .get()
            .ok_or_else(|| NodeError::Conflict("this node is not in a fleet".into()))
    }

    fn member_of(&self, peer: &PeerId) -> Option<String> {
        self.peers.lock().ok()?.get(peer)?.member.clone()
    }
}

fn write_private_bytes(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

impl Node {
    /// The API's verifier; the fleet root (if a member) is trusted at once.
    pub async fn set_verifier(&self, v: Arc<capabilities::Verifier>) {
        let _ = self.verifier.set(v);
        if let Some(root) = self.catalog.lock().await.fleet.root.clone() {
            self.trust_fleet_root(&root);
        }
    }

    /// Every member trusts the fleet root for tokens: one minted with the
    /// owner key works on every node.
    fn trust_fleet_root(&self, root_hex: &str) {
        match (capabilities::public_key_from_hex(root_hex), self.verifier.get()) {
            (Ok(key), Some(v)) => v.trust(key),
            (Err(e), _) => tracing::error!(error = %e, "the fleet root is not a key"),
            _ => {}
        }
    }

    fn me_arc(&self) -> Option<Arc<Node>> {
        self.me.get().and_then(Weak::upgrade)
    }

    /// Starts the fabric when this node is a member, or founds the fleet
    /// when it holds the owner key. Called at start-up.
    pub async fn start_fleet(&self) -> NodeResult<()> {
        let member = self.catalog.lock().await.fleet.me.is_some();
        if member {
            return self.ensure_fabric().await;
        }
        if self.fleet.owner.is_some() {
            self.found_fleet().await?;
            return self.ensure_fabric().await;
        }
        Ok(())
    }

    /// The owner's node makes itself the fleet's first member.
    async fn found_fleet(&self) -> NodeResult<()> {
        let Some(owner) = &self.fleet.owner else {
            return Err(NodeError::Conflict(
                "this node holds no fleet owner key: set [fleet] owner_key (see `warren fleet init`)".into(),
            ));
        };
        let mut cat = self.catalog.lock().await;
        if cat.fleet.me.is_some() {
            return Ok(());
        }
        let cert = Certificate::issue(owner, &self.cfg.node_id, &self.fleet.peer_id().to_string(), now_ms());
        let root = hex::encode(owner.verifying_key().as_bytes());
        self.trust_fleet_root(&root);
        self.commit(&mut cat, vec![Event::FleetJoined { root, cert }]).await
    }

    async fn ensure_fabric(&self) -> NodeResult<()> {
        if self.fleet.fabric.get().is_some() {
            return Ok(());
        }
        let fleet_id = {
            let cat = self.catalog.lock().await;
            cat.fleet.fleet_id().map(str::to_string)
        };
        let Some(fleet_id) = fleet_id else {
            return Err(NodeError::Conflict("this node is not in a fleet".into()));
        };
        self.start_fabric(&fleet_id)
    }

    fn start_fabric(&self, fleet_id: &str) -> NodeResult<()> {
        let listen: Multiaddr = self.fleet.settings.listen.parse().map_err(|e| {
            NodeError::Invalid(format!(
                "[fleet] listen: {:?} is not a multiaddr: {e}",
                self.fleet.settings.listen
            ))
        })?;
        let mut cfg = FabricConfig::new(
            self.fleet.keypair.clone(),
            vec![listen],
            format!("warren/fleet/{fleet_id}/v1"),
        );
        cfg.request_timeout = FABRIC_REQUEST_TIMEOUT;
        let (fabric, events) = Fabric::start(cfg).map_err(|e| NodeError::Internal(e.to_string()))?;
        if self.fleet.fabric.set(fabric).is_err() {
            return Ok(());
        }
        if let Some(me) = self.me_arc() {
            tokio::spawn(run_events(Arc::downgrade(&me), events));
            tokio::spawn(run_ticks(Arc::downgrade(&me)));
        }
        tracing::info!(peer_id = %self.fleet.peer_id(), fleet = fleet_id, "fabric started");
        Ok(())
    }

    /// This node's record, as published.
    async fn fleet_record(&self) -> NodeRecord {
        let (agents, live) = {
            let cat = self.catalog.lock().await;
            (cat.agents.len() as u32, cat.live_conversations().count() as u32)
        };
        let addrs = self
            .fleet
            .listening
            .lock()
            .map(|a| a.iter().map(|a| a.to_string()).collect())
            .unwrap_or_default();
        NodeRecord {
            node_id: self.cfg.node_id.clone(),
            name: self.fleet.name.clone(),
            peer_id: self.fleet.peer_id().to_string(),
            endpoint: self
                .fleet
                .settings
                .endpoint
                .clone()
                .or_else(|| self.endpoint.get().cloned())
                .unwrap_or_default(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            agents,
            live_conversations: live,
            capacity: fabric::Capacity {
                cpus: std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(1),
                memory_mb: memory_mb(),
                guests: live,
            },
            addrs,
            sent_at: now_ms(),
        }
    }

    async fn fleet_view(&self) -> View {
        let mut records = vec![self.fleet_record().await];
        if let Ok(t) = self.fleet.table.lock() {
            records.extend(t.values().map(|s| s.record.clone()));
        }
        let cat = self.catalog.lock().await;
        let mut members: Vec<Certificate> = cat.fleet.members.values().cloned().collect();
        members.extend(cat.fleet.me.clone());
        View {
            records,
            members,
            removed: cat.fleet.removed.values().cloned().collect(),
            revoked: cat.revoked.iter().take(fabric::wire::MAX_REVOKED).cloned().collect(),
        }
    }

    /// The fleet root (hex) this node trusts, once a member.
    async fn fleet_root(&self) -> Option<ed25519_dalek::VerifyingKey> {
        let root = self.catalog.lock().await.fleet.root.clone()?;
        let bytes: [u8; 32] = hex::decode(root).ok()?.try_into().ok()?;
        ed25519_dalek::VerifyingKey::from_bytes(&bytes).ok()
    }

    /// A peer's certificate is good: it is a member from now on.
    async fn admit_member(&self, peer: PeerId, cert: Certificate) {
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

    async fn check_cert(&self, peer: &PeerId, cert: &Certificate) -> Result<(), String> {
        let root = self.fleet_root().await.ok_or("this node is not in a fleet")?;
        cert.verify(&root, &peer.to_string()).map_err(|e| e.to_string())?;
        if self.catalog.lock().await.fleet.is_removed(&cert.node_id, &cert.peer_id) {
            return Err(format!("{} was removed from the fleet", cert.node_id));
        }
        Ok(())
    }

    /// An owner-signed removal (from gossip, a view, or this node): record
    /// it once, drop and block the removed peer.
    async fn apply_removal(&self, removal: fabric::Removal) {
        let Some(root) = self.fleet_root().await else { return };
        if removal.verify(&root).is_err() || removal.node_id == self.cfg.node_id {
            return;
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
        if let Ok(mut t) = self.fleet.table.lock() {
            t.remove(&removal.node_id);
        }
        if let Ok(peer) = removal.peer_id.parse::<PeerId>() {
            self.refuse_peer(peer, "the owner removed it from the fleet").await;
        }
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
    async fn revoked_by_member(&self, ids: Vec<String>) {
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
        let Some(owner) = self.fleet.owner.clone() else {
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
        self.apply_removal(removal.clone()).await;
        if let Ok(f) = self.fleet.fabric() {
            let _ = f.publish(&Gossip::Removed(removal)).await;
        }
        Ok(json!({ "removed": true, "node_id": id }))
    }

    /// Proves membership to a newly connected peer and learns its view.
    async fn greet(&self, peer: PeerId) {
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

    async fn sync_with(&self, peer: PeerId) {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return;
        };
        let view = self.fleet_view().await;
        if let Ok(Response::Synced(theirs)) = fabric.request_within(peer, Request::Sync(view), HANDSHAKE_WITHIN).await {
            self.merge_view(theirs).await;
        }
    }

    /// What a member told us: records to show, members to know and dial.
    async fn merge_view(&self, view: View) {
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

    /// A member's record (heard now when `fresh`, else second-hand).
    fn saw_record(&self, r: NodeRecord, fresh: bool) {
        if r.node_id == self.cfg.node_id {
            return;
        }
        if let Ok(mut t) = self.fleet.table.lock() {
            let newer = t.get(&r.node_id).is_none_or(|s| s.record.sent_at <= r.sent_at);
            if fresh || !t.contains_key(&r.node_id) {
                let last_seen = if fresh {
                    Instant::now()
                } else {
                    t.get(&r.node_id)
                        .map(|s| s.last_seen)
                        .unwrap_or_else(|| Instant::now() - Duration::from_secs(3600))
                };
                let delay_ms = fresh.then(|| now_ms().saturating_sub(r.sent_at));
                t.insert(
                    r.node_id.clone(),
                    Seen {
                        record: r,
                        last_seen,
                        delay_ms,
                    },
                );
            } else if newer && let Some(s) = t.get_mut(&r.node_id) {
                s.record = r;
            }
        }
    }

    async fn refuse_peer(&self, peer: PeerId, why: &str) {
        tracing::warn!(%peer, reason = why, "peer refused and blocked");
        if let Ok(f) = self.fleet.fabric() {
            f.expel(peer).await;
        }
        if let Ok(mut p) = self.fleet.peers.lock() {
            p.remove(&peer);
        }
    }

    async fn answer(&self, peer: PeerId, request: Request) -> Response {
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
                self.merge_view(view).await;
                Response::Synced(mine)
            }
            Request::Api { token, text, stream } => self.answer_api(peer, &token, &text, stream).await,
            Request::Pull { stream } => self.answer_pull(peer, stream).await,
            Request::Cancel { stream } => self.answer_cancel(peer, stream),
            Request::Locate(what) => self.answer_locate(what).await,
        }
    }

    async fn answer_join(&self, peer: PeerId, secret: &str, node_id: &str) -> Response {
        let refused = |reason: String| Response::Refused { reason };
        let Some(owner) = self.fleet.owner.clone() else {
            return refused("this node cannot admit members: it holds no owner key".into());
        };
        if crate::validate::node_id(node_id).is_err() {
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
        if self.fleet.owner.is_none() {
            return Err(NodeError::Conflict(
                "this node holds no fleet owner key: create one with `warren fleet init --key-file DATA_DIR/owner.key` (or set [fleet] owner_key) and restart the node".into(),
            ));
        }
        self.found_fleet().await?;
        self.ensure_fabric().await?;
        let fabric = self.fleet.fabric()?.clone();
        let mut addrs = self.fleet.listening.lock().map(|a| a.clone()).unwrap_or_default();
        if addrs.is_empty() {
            addrs = fabric.listen_addrs().await;
        }
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
        if self.catalog.lock().await.fleet.me.is_some() {
            return Err(NodeError::Conflict("this node is in a fleet already".into()));
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
                if let Ok(addr) = a.parse::<Multiaddr>() {
                    let _ = fabric.dial(addr).await;
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
                        message: format!("the inviter did not answer within {JOIN_WITHIN:?}: {e}"),
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
            });
        }
        self.greet(inviter).await;
        self.merge_view(view).await;
        let members = self.catalog.lock().await.fleet.members.len() + 1;
        Ok(json!({ "fleet_id": cert.fleet_id, "node_id": cert.node_id, "members": members }))
    }

    /// `fleet.nodes`: this node and every member it knows.
    pub async fn fleet_nodes(&self) -> NodeResult<Value> {
        let (me, members) = {
            let cat = self.catalog.lock().await;
            (cat.fleet.me.clone(), cat.fleet.members.clone())
        };
        let mut nodes = vec![];
        let record = self.fleet_record().await;
        nodes.push(node_json(&record, true, Some(now_ms()), true));
        if me.is_none() {
            return Ok(json!({ "fleet_id": null, "nodes": nodes }));
        }
        let unhealthy_after = Duration::from_millis(self.fleet.settings.unhealthy_after_ms);
        let table = self.fleet.table.lock().map(|t| {
            t.iter()
                .map(|(id, s)| (id.clone(), (s.record.clone(), s.last_seen.elapsed(), s.delay_ms)))
                .collect::<BTreeMap<_, _>>()
        });
        let table = table.unwrap_or_default();
        for (id, cert) in &members {
            match table.get(id) {
                Some((r, ago, delay)) => {
                    let last_seen = now_ms().saturating_sub(ago.as_millis() as u64);
                    let mut n = node_json(r, *ago < unhealthy_after, Some(last_seen), false);
                    n["gossip_delay_ms"] = json!(delay);
                    nodes.push(n);
                }
                None => nodes.push(json!({
                    "node_id": id, "name": null, "peer_id": cert.peer_id, "endpoint": null,
                    "version": null, "healthy": false, "last_seen": null, "agents": null,
                    "live_conversations": null, "capacity": null, "self": false,
                })),
            }
        }
        Ok(json!({ "fleet_id": me.map(|c| c.fleet_id), "nodes": nodes }))
    }
}

fn node_json(r: &NodeRecord, healthy: bool, last_seen: Option<u64>, me: bool) -> Value {
    json!({
        "node_id": r.node_id, "name": r.name, "peer_id": r.peer_id, "endpoint": r.endpoint,
        "version": r.version, "healthy": healthy, "last_seen": last_seen, "agents": r.agents,
        "live_conversations": r.live_conversations,
        "capacity": { "cpus": r.capacity.cpus, "memory_mb": r.capacity.memory_mb, "guests": r.capacity.guests },
        "self": me,
    })
}

fn memory_mb() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb / 1024)
        .unwrap_or(0)
}

/// Turns fabric events into membership decisions.
async fn run_events(node: Weak<Node>, mut events: tokio::sync::mpsc::Receiver<FabricEvent>) {
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
                if let Ok(mut p) = node.fleet.peers.lock() {
                    p.remove(&peer);
                }
            }
            FabricEvent::Request { peer, request, reply } => {
                tokio::spawn(async move {
                    let judged = !matches!(request, Request::Sync(_));
                    let response = node.answer(peer, request).await;
                    let refused = matches!(response, Response::Refused { .. });
                    if let Ok(f) = node.fleet.fabric() {
                        f.respond(reply, response).await;
                    }
                    // A member that refused a peer's hello or join drops and
                    // blocks it (a node still joining judges nobody).
                    let member = node.catalog.lock().await.fleet.me.is_some();
                    if refused && judged && member && node.fleet.member_of(&peer).is_none() {
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
            },
            FabricEvent::BadGossip { from, error } => tracing::warn!(%from, %error, "garbled gossip"),
            FabricEvent::Pong { peer, .. } => {
                if let Some(id) = node.fleet.member_of(&peer)
                    && let Ok(mut t) = node.fleet.table.lock()
                    && let Some(s) = t.get_mut(&id)
                {
                    s.last_seen = Instant::now();
                }
            }
        }
    }
}

/// Heartbeats, the membership deadline, and redials of known members.
async fn run_ticks(node: Weak<Node>) {
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
        let record = node.fleet_record().await;
        if let Err(e) = fabric.publish(&Gossip::Heartbeat(record)).await {
            tracing::debug!(error = %e, "heartbeat not published");
        }
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
                    .filter(|(_, i)| i.member.is_none() && i.since.elapsed() > prove)
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
        node.fleet.streams.reap();
    }
}

impl Node {
    /// Where members are goes to `fleet-peers.json` (when it changed), so a
    /// restarted node knows whom to dial (its peers may not dial it first).
    async fn save_known_peers(&self) {
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
            let _ = crate::util::write_private(&self.fleet.peers_file, &text);
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
