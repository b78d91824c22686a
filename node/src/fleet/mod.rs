//! The fleet: this node in the libp2p mesh of its fleet (`fabric`). It
//! founds the fleet when it holds the owner key, prints join codes, joins by
//! one, proves its membership to every peer it meets (a certificate signed by
//! the fleet root, checked before anything but identify and ping), drops and
//! blocks a peer that proves nothing within a few seconds, publishes its
//! record (endpoint, health, capacity) as gossip, resyncs its view on every
//! (re)connection (gossip is not replayed after a partition), and keeps the
//! table `fleet.nodes` answers from. A member's forwarded API calls (and its
//! questions about what this node homes) go to the home side of routing
//! (`api/routing/serve.rs`) through the bounded queue it was built with.

pub mod address;
mod liveness;
mod members;
mod owner;
pub mod place;
pub mod reach;
pub use node_store::folds::fleet as state;
mod tasks;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use fabric::{Certificate, Fabric, FabricConfig, Multiaddr, NodeRecord, PeerId, View};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::service::{Node, NodeError, NodeResult};
use node_store::events::Event;
use node_store::util::now_ms;

/// `[fleet]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FleetSettings {
    /// Where the fabric listens: multiaddrs, comma separated (TCP, and
    /// WebSocket for a path that passes only its upgrades: `/tcp/PORT/ws`).
    pub listen: String,
    /// The fleet owner's key file (`warren fleet init`), on a node that
    /// founds the fleet and prints join codes. Default: `<data_dir>/owner.key`
    /// when that file exists.
    pub owner_key: Option<PathBuf>,
    /// The client endpoint published to the fleet (for NAT or a proxy);
    /// default: this node's own WebSocket URL.
    pub endpoint: Option<String>,
    /// The liveness period: each period the node probes one member (and
    /// publishes its record when it changed, or every `RECORD_REFRESH`).
    pub heartbeat_ms: u64,
    /// How long a suspected member has to refute the suspicion before it
    /// is down (unhealthy).
    pub unhealthy_after_ms: u64,
    /// How long a connected peer has to prove membership before it is
    /// dropped and blocked.
    pub prove_within_ms: u64,
}

impl Default for FleetSettings {
    fn default() -> FleetSettings {
        FleetSettings {
            listen: "/ip4/0.0.0.0/tcp/7768,/ip4/0.0.0.0/tcp/7769/ws".into(),
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
    /// The fleet owner key, once this node holds it: loaded at start-up, or
    /// set once by `fleet.init` on the running node.
    owner: OnceLock<owner::Owner>,
    /// Where the owner key lives: `[fleet] owner_key`, else
    /// `<data_dir>/owner.key`.
    owner_file: PathBuf,
    fabric: OnceLock<Fabric>,
    /// Concrete addresses the fabric listens on.
    listening: Mutex<Vec<Multiaddr>>,
    /// Members' records and when each was last heard from.
    table: Mutex<BTreeMap<String, Seen>>,
    /// Members' liveness (`fabric::swim`). Locked after `table`, never
    /// before it.
    swim: Mutex<fabric::swim::Membership>,
    /// The record last published, and when (it is published again when it
    /// changes, or after `RECORD_REFRESH`).
    published: Mutex<Option<(NodeRecord, Instant)>>,
    /// Probes in flight (at most `liveness::PROBES_IN_FLIGHT`).
    probing: std::sync::atomic::AtomicUsize,
    /// Connected peers: when, where, and (once proven) which member.
    peers: Mutex<HashMap<PeerId, PeerInfo>>,
    /// When each known address was last dialed.
    dialed: Mutex<HashMap<String, Instant>>,
    peers_file: PathBuf,
    /// What `fleet-peers.json` holds now (it is rewritten only on change).
    saved: Mutex<String>,
    /// Each member's health as last announced (`event.fleet.changed`).
    announced: Mutex<BTreeMap<String, bool>>,
    /// A token the owner key signed for the local admin's forwarded calls.
    owner_token: Mutex<Option<(String, Instant)>>,
    /// The home side of routing: members' `Api`, `Pull`, `Cancel`,
    /// `Locate` and `Mail` requests go there.
    home: mpsc::Sender<Asked>,
}

/// A member's request for the home side of routing (`Api`, `Pull`, `Cancel`,
/// `Locate` or `Mail`), and where its answer goes.
pub struct Asked {
    pub peer: PeerId,
    pub request: fabric::Request,
    pub reply: oneshot::Sender<fabric::Response>,
}

/// Members' requests waiting for the home side at most (each is answered in
/// its own task once taken, so the queue is short-lived).
pub const ASKED_QUEUE: usize = 64;

struct Seen {
    record: NodeRecord,
    last_seen: Instant,
    /// How long its last heartbeat took to arrive (by the two nodes' clocks).
    delay_ms: Option<u64>,
    /// Its connection closed and a dial since failed (a crashed process
    /// refuses at once): unhealthy now, not `unhealthy_after_ms` later,
    /// until it is heard from again.
    lost: bool,
    /// Heard from directly since this node started (not only read from the
    /// peers file or another member's view).
    heard: bool,
}

struct PeerInfo {
    since: Instant,
    member: Option<String>,
    /// It asked to join: its join is being answered, so the deadline to
    /// prove membership does not block it meanwhile (a busy inviter or a
    /// slow joiner is not a stranger; a refused join blocks it anyway).
    joining: bool,
}

/// Redial a known member's address at most this often.
const REDIAL_EVERY: Duration = Duration::from_secs(2);
/// How long a peer that proved no membership stays blocked.
const STRANGER_BLOCK: Duration = Duration::from_secs(60);
/// How long a hello, a sync or a join request may take.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(5);
/// The fabric's own bound on any request: above the longest forwarded call
/// (each caller applies its own, shorter, bound).
const FABRIC_REQUEST_TIMEOUT: Duration = Duration::from_secs(660);
/// How long a join waits for the inviter to answer, in all.
const JOIN_WITHIN: Duration = Duration::from_secs(15);

impl FleetRuntime {
    /// Loads (or creates) the node's libp2p key and the owner key, if any.
    /// Members' routed requests go to `home`.
    pub fn open(
        data_dir: &std::path::Path,
        settings: FleetSettings,
        node_id: &str,
        name: String,
        home: mpsc::Sender<Asked>,
    ) -> anyhow::Result<FleetRuntime> {
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
        let owner_file = settings.owner_key.clone().unwrap_or_else(|| data_dir.join("owner.key"));
        let owner = OnceLock::new();
        if settings.owner_key.is_some() || owner_file.exists() {
            let _ = owner.set(owner::Owner::read(&owner_file)?);
        }
        let suspect_for = settings.unhealthy_after_ms;
        Ok(FleetRuntime {
            settings,
            name,
            keypair,
            owner,
            owner_file,
            fabric: OnceLock::new(),
            listening: Mutex::new(vec![]),
            table: Mutex::new(BTreeMap::new()),
            // The start time as the first incarnation: a restarted node
            // outranks whatever was said of its last life.
            swim: Mutex::new(fabric::swim::Membership::new(node_id, now_ms(), suspect_for)),
            published: Mutex::new(None),
            probing: Default::default(),
            peers: Mutex::new(HashMap::new()),
            dialed: Mutex::new(HashMap::new()),
            peers_file: data_dir.join("fleet-peers.json"),
            saved: Mutex::new(String::new()),
            announced: Mutex::new(BTreeMap::new()),
            owner_token: Mutex::new(None),
            home,
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

    /// Hands a member's request to the home side and waits for its answer.
    async fn ask_home(&self, peer: PeerId, request: fabric::Request) -> fabric::Response {
        let (reply, answer) = oneshot::channel();
        if self.home.send(Asked { peer, request, reply }).await.is_err() {
            return fabric::Response::Refused {
                reason: "this node is stopping".into(),
            };
        }
        answer.await.unwrap_or_else(|_| fabric::Response::Refused {
            reason: "internal error".into(),
        })
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

/// This node in its fleet: a subsystem over the core, owning the fabric, the
/// members it has seen and the tasks that keep both fresh.
pub struct Fleet {
    node: Arc<Node>,
    me: Weak<Fleet>,
    /// What this node has at hand and has seen in the fleet.
    pub(crate) fleet: FleetRuntime,
    /// The API's token verifier: a fleet root is trusted once a member.
    verifier: OnceLock<Arc<capabilities::Verifier>>,
}

impl std::ops::Deref for Fleet {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Fleet {
    pub fn new(node: Arc<Node>, fleet: FleetRuntime) -> Arc<Fleet> {
        Arc::new_cyclic(|me| Fleet {
            node,
            me: me.clone(),
            fleet,
            verifier: OnceLock::new(),
        })
    }

    /// This node's name in the fleet.
    pub fn name(&self) -> &str {
        &self.fleet.name
    }

    /// This node's libp2p peer id, and its fleet's id once a member.
    pub async fn fleet_identity(&self) -> (String, Option<String>) {
        let fleet = self.catalog.lock().await.fleet.fleet_id().map(str::to_string);
        (self.fleet.peer_id().to_string(), fleet)
    }

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

    /// Stops trusting the fleet root (hex): this node left that fleet.
    fn distrust_fleet_root(&self, root_hex: &str) {
        if let (Ok(key), Some(v)) = (capabilities::public_key_from_hex(root_hex), self.verifier.get()) {
            v.distrust(key);
        }
    }

    fn me_arc(&self) -> Option<Arc<Fleet>> {
        self.me.upgrade()
    }

    /// Starts the fabric when this node is a member, or founds the fleet
    /// when it holds the owner key. Called at start-up.
    pub async fn start_fleet(&self) -> NodeResult<()> {
        let member = self.catalog.lock().await.fleet.me.is_some();
        if member {
            return self.ensure_fabric().await;
        }
        if self.fleet.owner().is_some() {
            self.found_fleet().await?;
            return self.ensure_fabric().await;
        }
        Ok(())
    }

    /// The owner's node makes itself the fleet's first member.
    async fn found_fleet(&self) -> NodeResult<()> {
        let Some(owner) = self.fleet.owner() else {
            return Err(NodeError::Conflict(
                "this node holds no fleet owner key: run `warren fleet init` (or set [fleet] owner_key)".into(),
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
        let listen = listen_addrs(&self.fleet.settings.listen).map_err(NodeError::Invalid)?;
        let mut cfg = FabricConfig::new(
            self.fleet.keypair.clone(),
            listen,
            format!("warren/fleet/{fleet_id}/v1"),
        );
        cfg.request_timeout = FABRIC_REQUEST_TIMEOUT;
        let (fabric, events) = Fabric::start(cfg).map_err(|e| NodeError::Internal(e.to_string()))?;
        if self.fleet.fabric.set(fabric).is_err() {
            return Ok(());
        }
        if let Some(me) = self.me_arc() {
            tokio::spawn(tasks::run_events(Arc::downgrade(&me), events));
            tokio::spawn(tasks::run_ticks(Arc::downgrade(&me)));
        }
        tracing::info!(peer_id = %self.fleet.peer_id(), fleet = fleet_id, "fabric started");
        Ok(())
    }

    /// `[fleet] endpoint`, when set (for NAT and proxies).
    pub fn published_endpoint(&self) -> Option<String> {
        self.fleet.settings.endpoint.clone()
    }

    /// This node's record, as published.
    pub(crate) async fn fleet_record(&self) -> NodeRecord {
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
                guests: live,
                ..host_capacity().clone()
            },
            addrs,
            sent_at: now_ms(),
            incarnation: self.fleet.swim.lock().map(|m| m.incarnation()).unwrap_or(0),
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
                let heard = fresh || t.get(&r.node_id).is_some_and(|s| s.heard);
                if let Ok(mut m) = self.fleet.swim.lock() {
                    m.add(&r.node_id, now_ms());
                    if fresh {
                        // The member itself speaks: its incarnation counts.
                        m.alive_from(&r.node_id, r.incarnation, now_ms());
                    }
                }
                t.insert(
                    r.node_id.clone(),
                    Seen {
                        record: r,
                        last_seen,
                        delay_ms,
                        lost: false,
                        heard,
                    },
                );
            } else if newer && let Some(s) = t.get_mut(&r.node_id) {
                s.record = r;
            }
        }
    }

    /// `event.fleet.changed` for every member whose health flipped, that
    /// joined, or that is gone since the last tick.
    pub(crate) async fn announce_fleet_changes(&self) {
        // Every tick: the members' health from the table, no records built.
        let members: Vec<String> = self.catalog.lock().await.fleet.members.keys().cloned().collect();
        let now: BTreeMap<String, (Option<String>, bool)> = {
            let Ok(t) = self.fleet.table.lock() else { return };
            members
                .into_iter()
                .map(|id| {
                    let seen = t.get(&id);
                    let healthy = seen.is_some_and(|s| self.healthy(s));
                    (id, (seen.map(|s| s.record.name.clone()), healthy))
                })
                .collect()
        };
        let changes: Vec<Value> = {
            let Ok(mut before) = self.fleet.announced.lock() else {
                return;
            };
            let mut out = vec![];
            for (id, (name, healthy)) in &now {
                let change = match before.get(id) {
                    None => Some("joined"),
                    Some(was) if was != healthy => Some(if *healthy { "healthy" } else { "unhealthy" }),
                    _ => None,
                };
                if let Some(change) = change {
                    out.push(json!({ "change": change, "node_id": id, "name": name, "healthy": healthy }));
                }
            }
            for id in before.keys().filter(|id| !now.contains_key(*id)) {
                out.push(json!({ "change": "removed", "node_id": id, "name": null, "healthy": false }));
            }
            *before = now.iter().map(|(id, (_, h))| (id.clone(), *h)).collect();
            out
        };
        for c in changes {
            self.publish(console_api::methods::EVENT_FLEET_CHANGED, c);
        }
    }

    /// The health rule: a member heard from directly since this node
    /// started, not down by the liveness protocol (a suspicion it did not
    /// refute within `unhealthy_after_ms`), and not lost since (its
    /// connection closed and it refused a dial).
    fn healthy(&self, s: &Seen) -> bool {
        s.heard
            && !s.lost
            && self
                .fleet
                .swim
                .lock()
                .is_ok_and(|m| m.status(&s.record.node_id) != Some(fabric::swim::Status::Down))
    }

    /// Where `agent.create {node: "auto"}` goes: the name of the healthy
    /// member (this node among them) with the most room.
    pub async fn roomiest(&self) -> NodeResult<String> {
        let nodes = self.fleet_nodes().await?;
        let rooms: Vec<place::Room> = nodes["nodes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(place::Room::of)
            .collect();
        place::roomiest(&rooms)
            .map(|r| r.name.clone())
            .ok_or_else(|| NodeError::Unreachable {
                node: "auto".into(),
                message: "node: \"auto\" found no healthy member to place the agent on".into(),
            })
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
            // Removed by its fleet's owner: it says which fleet, and when.
            let left = self.catalog.lock().await.fleet.left.clone();
            let left = left.map(|(fleet_id, at)| json!({ "fleet_id": fleet_id, "removed_at": at }));
            return Ok(json!({ "fleet_id": null, "nodes": nodes, "removed_from": left }));
        }
        let table = self.fleet.table.lock().map(|t| {
            t.iter()
                .map(|(id, s)| {
                    (
                        id.clone(),
                        (s.record.clone(), s.last_seen.elapsed(), s.delay_ms, self.healthy(s)),
                    )
                })
                .collect::<BTreeMap<_, _>>()
        });
        let table = table.unwrap_or_default();
        for (id, cert) in &members {
            match table.get(id) {
                Some((r, ago, delay, healthy)) => {
                    let last_seen = now_ms().saturating_sub(ago.as_millis() as u64);
                    let mut n = node_json(r, *healthy, Some(last_seen), false);
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
        "addrs": r.addrs, "self": me,
    })
}

/// Most addresses `[fleet] listen` may name.
const MAX_LISTEN: usize = 8;

/// `[fleet] listen`: multiaddrs, comma separated, each TCP (`/tcp/PORT`) or
/// WebSocket over TCP (`/tcp/PORT/ws`); `Err` names the one that is not.
fn listen_addrs(spec: &str) -> Result<Vec<Multiaddr>, String> {
    use fabric::swarm_protocol::Protocol;
    let parts: Vec<&str> = spec.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if parts.is_empty() || parts.len() > MAX_LISTEN {
        return Err(format!(
            "[fleet] listen: {spec:?} must name 1 to {MAX_LISTEN} multiaddrs, comma separated"
        ));
    }
    parts
        .into_iter()
        .map(|p| {
            let addr: Multiaddr = p
                .parse()
                .map_err(|e| format!("[fleet] listen: {p:?} is not a multiaddr: {e}"))?;
            let shape: Vec<Protocol> = addr.iter().collect();
            let ok = matches!(
                shape.as_slice(),
                [Protocol::Ip4(_) | Protocol::Ip6(_), Protocol::Tcp(_)]
                    | [Protocol::Ip4(_) | Protocol::Ip6(_), Protocol::Tcp(_), Protocol::Ws(_)]
            );
            if ok {
                Ok(addr)
            } else {
                Err(format!(
                    "[fleet] listen: {p:?} is neither /ip4|ip6/ADDR/tcp/PORT nor /ip4|ip6/ADDR/tcp/PORT/ws"
                ))
            }
        })
        .collect()
}

/// This host's CPUs and memory, read once: the record is built every period
/// and they do not change under a running node (reading them costs file
/// reads of `/proc` and the cgroup tree each time).
fn host_capacity() -> &'static fabric::Capacity {
    static HOST: std::sync::OnceLock<fabric::Capacity> = std::sync::OnceLock::new();
    HOST.get_or_init(|| fabric::Capacity {
        cpus: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        memory_mb: memory_mb(),
        guests: 0,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_takes_tcp_and_websocket_addresses_and_names_a_bad_one() {
        let got = listen_addrs(&FleetSettings::default().listen).expect("the default");
        let got: Vec<String> = got.iter().map(ToString::to_string).collect();
        assert_eq!(got, ["/ip4/0.0.0.0/tcp/7768", "/ip4/0.0.0.0/tcp/7769/ws"]);
        assert_eq!(listen_addrs(" /ip6/::1/tcp/0/ws ,").expect("one").len(), 1);
        for (bad, names) in [
            ("", "1 to 8"),
            (" , ", "1 to 8"),
            (
                "/ip4/1.2.3.4/tcp/1,/ip4/1.2.3.4/tcp/x",
                "\"/ip4/1.2.3.4/tcp/x\" is not a multiaddr",
            ),
            ("/ip4/1.2.3.4/udp/1/quic-v1", "neither"),
            ("/ip4/1.2.3.4/tcp/1/wss", "neither"),
            ("/dns/example.org/tcp/1/ws", "neither"),
            ("/ip4/1.2.3.4/tcp/1/ws/p2p-circuit", "neither"),
        ] {
            let e = listen_addrs(bad).expect_err(bad);
            assert!(e.contains(names), "{bad}: {e}");
        }
        let many = ["/ip4/127.0.0.1/tcp/0"; 9].join(",");
        assert!(listen_addrs(&many).expect_err("nine").contains("1 to 8"));
    }
}
