//! The fabric between warren nodes: one libp2p mesh per fleet. Pure parts:
//! join codes (`invite`), membership certificates (`cert`), the messages
//! (`wire`), liveness (`swim`) and pulls that lose nothing (`pull`); the IO
//! part is the swarm task behind a bounded handle (`swarm`). The node
//! decides who is a member; the fabric keeps non-members out of gossip and
//! answers only their identify and ping.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod cert;
pub mod codec;
pub mod invite;
pub mod pull;
pub mod swarm;
pub mod swim;
pub mod wire;

pub use cert::{Certificate, Removal, fleet_id};
pub use invite::Invite;
/// Multiaddr components (e.g. `/p2p/PEER`).
pub use libp2p::multiaddr as swarm_protocol;
pub use libp2p::{Multiaddr, PeerId, identity};
pub use swarm::{Fabric, FabricConfig, FabricEvent};
pub use wire::{Capacity, Gossip, Locate, MailAnswer, MailItem, NodeRecord, Request, Response, View};

#[derive(Debug, thiserror::Error)]
pub enum FabricError {
    #[error("the certificate is refused: {0}")]
    Certificate(String),
    #[error("join code: {0}")]
    Invite(String),
    #[error("the fabric could not start: {0}")]
    Setup(String),
    #[error("cannot dial {0}")]
    Dial(String),
    #[error("the request failed (its outcome is unknown): {0}")]
    Request(String),
    #[error("gossip could not be published: {0}")]
    Publish(String),
    #[error("the fabric has stopped")]
    Stopped,
}
