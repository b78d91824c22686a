//! The libp2p swarm as one task behind a bounded handle (the shape of
//! libp2p's file-sharing example): TCP, and WebSocket over TCP (for a path
//! that passes only WebSocket upgrades), each with noise + yamux; identify and ping
//! answer anyone; gossip and calls are for admitted members only. A peer is
//! unadmitted until the node says otherwise (`Fabric::admit`): until then
//! its gossipsub score is below the graylist, so nothing is published to it,
//! it is never grafted, and what it sends is ignored. Every queue and limit
//! is set here, explicitly.
//!
//! Cancel safety: every `Fabric` method sends one command on a bounded
//! channel and awaits one reply; dropping the future drops the reply only.

use std::collections::HashMap;
use std::time::Duration;

use futures_util::StreamExt;
use libp2p::core::{Transport, upgrade};
use libp2p::gossipsub::{self, IdentTopic, MessageAuthenticity};
use libp2p::request_response::{self, OutboundRequestId, ProtocolSupport, ResponseChannel};
use libp2p::swarm::{NetworkBehaviour, SwarmEvent};
use libp2p::{
    Multiaddr, PeerId, StreamProtocol, Swarm, allow_block_list, connection_limits, identify, identity, noise, ping,
    tcp, yamux,
};
use tokio::sync::{mpsc, oneshot};

use crate::FabricError;
use crate::wire::{Gossip, Request, Response};

/// The request-response protocol.
pub const PROTOCOL: &str = "/warren/fleet/1";
/// What identify says we are.
pub const AGENT_VERSION: &str = concat!("warren/", env!("CARGO_PKG_VERSION"));
/// Commands queued to the swarm task before callers wait.
const COMMAND_QUEUE: usize = 256;
/// Events queued to the node before the swarm task waits for it.
const EVENT_QUEUE: usize = 1024;
/// The largest WebSocket message accepted (each carries one noise frame,
/// at most 64 KiB; the transport's own default is 256 MiB).
const MAX_WS_MESSAGE: usize = 128 * 1024;
/// How long a WebSocket connection may take to be upgraded (noise, yamux).
const WS_UPGRADE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection with nothing open on it is kept. Members keep one
/// to each other (routed calls go straight over it); liveness probes touch
/// each only now and then, so the bound is long.
const IDLE_CONNECTION: Duration = Duration::from_secs(600);
/// The app score of a peer that has not proven membership (below graylist).
const UNADMITTED_SCORE: f64 = -1_000_000.0;

/// How the fabric is set up.
#[derive(Clone)]
pub struct FabricConfig {
    pub keypair: identity::Keypair,
    pub listen: Vec<Multiaddr>,
    /// The gossip topic (per fleet).
    pub topic: String,
    /// How long a request may take before it fails (its outcome unknown).
    pub request_timeout: Duration,
    /// How often ping runs on each connection (a connection check only:
    /// the fleet's liveness is `swim`, one probe a period in all).
    pub ping_interval: Duration,
    /// At most this many connections in all, and per peer.
    pub max_connections: u32,
    pub max_per_peer: u32,
}

impl FabricConfig {
    pub fn new(keypair: identity::Keypair, listen: Vec<Multiaddr>, topic: String) -> FabricConfig {
        FabricConfig {
            keypair,
            listen,
            topic,
            request_timeout: Duration::from_secs(5),
            ping_interval: Duration::from_secs(120),
            max_connections: 128,
            max_per_peer: 2,
        }
    }
}

#[derive(NetworkBehaviour)]
struct Behaviour {
    // Asked first, in this order (the derive stops at the first denial).
    blocked: allow_block_list::Behaviour<allow_block_list::BlockedPeers>,
    limits: connection_limits::Behaviour,
    identify: identify::Behaviour,
    ping: ping::Behaviour,
    gossip: gossipsub::Behaviour,
    rpc: request_response::Behaviour<crate::codec::FleetCodec>,
}

/// What the fabric tells the node.
#[derive(Debug)]
pub enum FabricEvent {
    Listening(Multiaddr),
    Connected {
        peer: PeerId,
        addr: Multiaddr,
        /// This node dialed (else the peer did).
        dialer: bool,
    },
    Disconnected {
        peer: PeerId,
    },
    /// A request the node must answer with `Fabric::respond(reply, ..)`.
    Request {
        peer: PeerId,
        request: Request,
        reply: u64,
    },
    /// Gossip from an admitted member (already decoded).
    Gossip {
        from: PeerId,
        gossip: Gossip,
    },
    /// Gossip that would not decode (logged by the node).
    BadGossip {
        from: PeerId,
        error: String,
    },
    /// A dial to this peer failed (refused, timed out, or another peer
    /// answered).
    Unreachable {
        peer: PeerId,
    },
    /// A ping answered: the peer is alive.
    Pong {
        peer: PeerId,
        rtt: Duration,
    },
}

enum Command {
    Dial(Multiaddr, oneshot::Sender<Result<(), FabricError>>),
    Request(PeerId, Request, oneshot::Sender<Result<Response, FabricError>>),
    Respond(u64, Response),
    Publish(Vec<u8>, oneshot::Sender<Result<(), FabricError>>),
    Admit(PeerId),
    Expel(PeerId),
    Unblock(PeerId),
    ListenAddrs(oneshot::Sender<Vec<Multiaddr>>),
    Connected(oneshot::Sender<Vec<PeerId>>),
}

/// The handle: cheap to clone; the swarm stops when every handle is gone.
#[derive(Clone)]
pub struct Fabric {
    tx: mpsc::Sender<Command>,
    peer_id: PeerId,
}

impl Fabric {
    /// Starts the swarm task, listening on `cfg.listen`.
    pub fn start(cfg: FabricConfig) -> Result<(Fabric, mpsc::Receiver<FabricEvent>), FabricError> {
        let swarm = build(&cfg)?;
        let peer_id = *swarm.local_peer_id();
        let (tx, rx) = mpsc::channel(COMMAND_QUEUE);
        let (events_tx, events) = mpsc::channel(EVENT_QUEUE);
        let topic = IdentTopic::new(cfg.topic.clone());
        tokio::spawn(run(swarm, topic, rx, events_tx));
        Ok((Fabric { tx, peer_id }, events))
    }

    pub fn peer_id(&self) -> PeerId {
        self.peer_id
    }

    async fn ask<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, FabricError> {
        let (reply, rx) = oneshot::channel();
        self.tx.send(make(reply)).await.map_err(|_| FabricError::Stopped)?;
        rx.await.map_err(|_| FabricError::Stopped)
    }

    async fn tell(&self, c: Command) {
        let _ = self.tx.send(c).await;
    }

    pub async fn dial(&self, addr: Multiaddr) -> Result<(), FabricError> {
        self.ask(|r| Command::Dial(addr, r)).await?
    }

    /// One request; fails after the request timeout ("outcome unknown").
    pub async fn request(&self, peer: PeerId, request: Request) -> Result<Response, FabricError> {
        self.ask(|r| Command::Request(peer, request, r)).await?
    }

    /// One request, given up (its outcome unknown) after `within`.
    pub async fn request_within(
        &self,
        peer: PeerId,
        request: Request,
        within: Duration,
    ) -> Result<Response, FabricError> {
        match tokio::time::timeout(within, self.request(peer, request)).await {
            Ok(r) => r,
            Err(_) => Err(FabricError::Request(format!(
                "{peer}: no answer within {} ms",
                within.as_millis()
            ))),
        }
    }

    pub async fn respond(&self, reply: u64, response: Response) {
        self.tell(Command::Respond(reply, response)).await;
    }

    pub async fn publish(&self, gossip: &Gossip) -> Result<(), FabricError> {
        let bytes = gossip.encode();
        self.ask(|r| Command::Publish(bytes, r)).await?
    }

    /// The peer proved membership: gossip flows with it.
    pub async fn admit(&self, peer: PeerId) {
        self.tell(Command::Admit(peer)).await;
    }

    /// The peer is not (or no longer) a member: blocked and disconnected.
    pub async fn expel(&self, peer: PeerId) {
        self.tell(Command::Expel(peer)).await;
    }

    pub async fn unblock(&self, peer: PeerId) {
        self.tell(Command::Unblock(peer)).await;
    }

    pub async fn listen_addrs(&self) -> Vec<Multiaddr> {
        self.ask(Command::ListenAddrs).await.unwrap_or_default()
    }

    pub async fn connected(&self) -> Vec<PeerId> {
        self.ask(Command::Connected).await.unwrap_or_default()
    }
}

fn build(cfg: &FabricConfig) -> Result<Swarm<Behaviour>, FabricError> {
    let setup = |e: &dyn std::fmt::Display| FabricError::Setup(e.to_string());
    let gossip_cfg = gossipsub::ConfigBuilder::default()
        // Small meshes (3-20 nodes): the defaults (6/5/12/2) assume many peers.
        .mesh_n(4)
        .mesh_n_low(2)
        .mesh_n_high(8)
        .mesh_outbound_min(1)
        .gossip_lazy(3)
        // A message goes along the mesh at once; the heartbeat only mends
        // the mesh and offers what was seen to a few others. Once a second
        // keeps an idle member's cost low.
        .heartbeat_interval(Duration::from_secs(1))
        .history_length(5)
        .history_gossip(3)
        .validation_mode(gossipsub::ValidationMode::Strict)
        .max_transmit_size(64 * 1024)
        .connection_handler_queue_len(1024)
        .build()
        .map_err(|e| setup(&e))?;
    let request_timeout = cfg.request_timeout;
    let ping_interval = cfg.ping_interval;
    let limits = connection_limits::ConnectionLimits::default()
        .with_max_established(Some(cfg.max_connections))
        .with_max_established_per_peer(Some(cfg.max_per_peer))
        .with_max_pending_incoming(Some(32))
        .with_max_pending_outgoing(Some(32));
    let mut swarm = libp2p::SwarmBuilder::with_existing_identity(cfg.keypair.clone())
        .with_tokio()
        .with_tcp(
            tcp::Config::default().nodelay(true),
            noise::Config::new,
            yamux::Config::default,
        )
        .map_err(|e| setup(&e))?
        .with_other_transport(|key| -> Result<_, Box<dyn std::error::Error + Send + Sync>> {
            // `/ws` addresses (and `/tls/ws`, `/wss` to dial): the same
            // security and multiplexing inside WebSocket frames.
            let mut ws =
                libp2p_websocket::Config::new(tcp::tokio::Transport::new(tcp::Config::default().nodelay(true)));
            ws.set_max_data_size(MAX_WS_MESSAGE);
            Ok(ws
                .upgrade(upgrade::Version::V1Lazy)
                .authenticate(noise::Config::new(key)?)
                .multiplex(yamux::Config::default())
                .timeout(WS_UPGRADE_TIMEOUT))
        })
        .map_err(|e| setup(&e))?
        .with_behaviour(|key| -> Result<Behaviour, Box<dyn std::error::Error + Send + Sync>> {
            let mut gossip = gossipsub::Behaviour::new(MessageAuthenticity::Signed(key.clone()), gossip_cfg)?;
            let params = gossipsub::PeerScoreParams {
                // Many nodes may share an address (a NAT, one test host).
                ip_colocation_factor_weight: 0.0,
                app_specific_weight: 1.0,
                ..Default::default()
            };
            gossip.with_peer_score(params, gossipsub::PeerScoreThresholds::default())?;
            let rpc = request_response::Behaviour::with_codec(
                crate::codec::FleetCodec::default(),
                [(StreamProtocol::new(PROTOCOL), ProtocolSupport::Full)],
                request_response::Config::default()
                    .with_request_timeout(request_timeout)
                    .with_max_concurrent_streams(64),
            );
            Ok(Behaviour {
                blocked: Default::default(),
                limits: connection_limits::Behaviour::new(limits),
                identify: identify::Behaviour::new(
                    identify::Config::new("/warren/1.0.0".into(), key.public())
                        .with_agent_version(AGENT_VERSION.into()),
                ),
                ping: ping::Behaviour::new(ping::Config::new().with_interval(ping_interval)),
                gossip,
                rpc,
            })
        })
        .map_err(|e| setup(&e))?
        // Members keep their connections: ping traffic alone does not keep
        // a connection, so an idle one lives `IDLE_CONNECTION`.
        .with_swarm_config(|c| c.with_idle_connection_timeout(IDLE_CONNECTION))
        .build();
    for addr in &cfg.listen {
        swarm
            .listen_on(addr.clone())
            .map_err(|e| setup(&format!("listen on {addr}: {e}")))?;
    }
    Ok(swarm)
}

async fn run(
    mut swarm: Swarm<Behaviour>,
    topic: IdentTopic,
    mut commands: mpsc::Receiver<Command>,
    events: mpsc::Sender<FabricEvent>,
) {
    if let Err(e) = swarm.behaviour_mut().gossip.subscribe(&topic) {
        tracing::error!(error = %e, "cannot subscribe to the fleet topic");
    }
    let mut pending: HashMap<OutboundRequestId, oneshot::Sender<Result<Response, FabricError>>> = HashMap::new();
    let mut replies: HashMap<u64, ResponseChannel<Response>> = HashMap::new();
    let mut next_reply = 0u64;
    let mut admitted: std::collections::HashSet<PeerId> = Default::default();
    loop {
        tokio::select! {
            c = commands.recv() => {
                let Some(c) = c else { return };
                match c {
                    Command::Dial(addr, r) => {
                        let _ = r.send(swarm.dial(addr.clone()).map_err(|e| FabricError::Dial(format!("{addr}: {e}"))));
                    }
                    Command::Request(peer, req, r) => {
                        let id = swarm.behaviour_mut().rpc.send_request(&peer, req);
                        pending.insert(id, r);
                    }
                    Command::Respond(reply, resp) => {
                        if let Some(ch) = replies.remove(&reply) {
                            let _ = swarm.behaviour_mut().rpc.send_response(ch, resp);
                        }
                    }
                    Command::Publish(bytes, r) => {
                        let result = swarm.behaviour_mut().gossip.publish(topic.clone(), bytes);
                        let _ = r.send(match result {
                            Ok(_) => Ok(()),
                            // Nobody to tell yet is not a failure of the sender.
                            Err(gossipsub::PublishError::NoPeersSubscribedToTopic) => Ok(()),
                            Err(e) => Err(FabricError::Publish(e.to_string())),
                        });
                    }
                    Command::Admit(peer) => {
                        admitted.insert(peer);
                        swarm.behaviour_mut().gossip.set_application_score(&peer, 0.0);
                    }
                    Command::Expel(peer) => {
                        admitted.remove(&peer);
                        swarm.behaviour_mut().gossip.set_application_score(&peer, UNADMITTED_SCORE);
                        swarm.behaviour_mut().blocked.block_peer(peer);
                        let _ = swarm.disconnect_peer_id(peer);
                    }
                    Command::Unblock(peer) => {
                        swarm.behaviour_mut().blocked.unblock_peer(peer);
                    }
                    Command::ListenAddrs(r) => {
                        let _ = r.send(swarm.listeners().cloned().collect());
                    }
                    Command::Connected(r) => {
                        let _ = r.send(swarm.connected_peers().copied().collect());
                    }
                }
            }
            e = swarm.select_next_some() => {
                let out = match e {
                    SwarmEvent::NewListenAddr { address, .. } => Some(FabricEvent::Listening(address)),
                    SwarmEvent::ConnectionEstablished { peer_id, endpoint, num_established, .. } => {
                        // Gossip stays shut until the peer proves membership.
                        if !admitted.contains(&peer_id) {
                            swarm.behaviour_mut().gossip.set_application_score(&peer_id, UNADMITTED_SCORE);
                        }
                        (num_established.get() == 1).then(|| FabricEvent::Connected {
                            peer: peer_id,
                            addr: endpoint.get_remote_address().clone(),
                            dialer: endpoint.is_dialer(),
                        })
                    }
                    SwarmEvent::ConnectionClosed { peer_id, num_established: 0, .. } => {
                        admitted.remove(&peer_id);
                        Some(FabricEvent::Disconnected { peer: peer_id })
                    }
                    SwarmEvent::Behaviour(BehaviourEvent::Rpc(ev)) => match ev {
                        request_response::Event::Message { peer, message, .. } => match message {
                            request_response::Message::Request { request, channel, .. } => {
                                next_reply += 1;
                                replies.insert(next_reply, channel);
                                Some(FabricEvent::Request { peer, request, reply: next_reply })
                            }
                            request_response::Message::Response { request_id, response } => {
                                if let Some(r) = pending.remove(&request_id) {
                                    let _ = r.send(Ok(response));
                                }
                                None
                            }
                        },
                        request_response::Event::OutboundFailure { request_id, error, peer, .. } => {
                            if let Some(r) = pending.remove(&request_id) {
                                let _ = r.send(Err(FabricError::Request(format!("{peer}: {error}"))));
                            }
                            None
                        }
                        request_response::Event::InboundFailure { peer, error, .. } => {
                            // A garbled or oversize frame ends here (the codec refuses it).
                            tracing::info!(%peer, %error, "an inbound fabric request failed");
                            None
                        }
                        request_response::Event::ResponseSent { .. } => None,
                    },
                    SwarmEvent::Behaviour(BehaviourEvent::Gossip(gossipsub::Event::Message { propagation_source, message, .. })) => {
                        let from = message.source.unwrap_or(propagation_source);
                        if !admitted.contains(&propagation_source) {
                            None
                        } else {
                            Some(match Gossip::decode(&message.data) {
                                Ok(gossip) => FabricEvent::Gossip { from, gossip },
                                Err(error) => FabricEvent::BadGossip { from, error },
                            })
                        }
                    }
                    SwarmEvent::Behaviour(BehaviourEvent::Ping(ping::Event { peer, result: Ok(rtt), .. })) => {
                        Some(FabricEvent::Pong { peer, rtt })
                    }
                    SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
                        tracing::debug!(?peer_id, %error, "a dial failed");
                        peer_id.map(|peer| FabricEvent::Unreachable { peer })
                    }
                    SwarmEvent::IncomingConnectionError { send_back_addr, error, .. } => {
                        tracing::debug!(from = %send_back_addr, %error, "an incoming connection failed");
                        None
                    }
                    _ => None,
                };
                if let Some(ev) = out
                    && events.send(ev).await.is_err()
                {
                    return;
                }
            }
        }
    }
}
