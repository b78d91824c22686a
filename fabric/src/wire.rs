//! What members say to each other: request-response messages (CBOR) and
//! gossip (CBOR bytes on the fleet's topic). Bounded: every list has a limit
//! the receiver checks.

use serde::{Deserialize, Serialize};

use crate::cert::{Certificate, Removal};

/// Most members a fleet may have (and a message may list).
pub const MAX_MEMBERS: usize = 256;
/// Largest request or response frame (the codec refuses bigger ones).
pub const MAX_FRAME_BYTES: u64 = 1024 * 1024;
/// Most notifications one `Pull` answers with.
pub const MAX_NOTES: usize = 256;
/// Most revocation ids a view or one gossip message carries.
pub const MAX_REVOKED: usize = 4096;

/// What a node publishes about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeRecord {
    pub node_id: String,
    pub name: String,
    pub peer_id: String,
    /// The `ws://` or `wss://` URL clients should use.
    pub endpoint: String,
    pub version: String,
    pub agents: u32,
    pub live_conversations: u32,
    pub capacity: Capacity,
    /// Where its fabric listens (multiaddrs), for members to (re)dial.
    pub addrs: Vec<String>,
    /// When it was sent (unix ms, the sender's clock).
    pub sent_at: u64,
    /// Its liveness incarnation (`swim`): a record is the member speaking
    /// for itself, so a higher one refutes a suspicion of it.
    #[serde(default)]
    pub incarnation: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capacity {
    pub cpus: u32,
    pub memory_mb: u64,
    /// Live guests (conversations) it runs now.
    pub guests: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Request {
    /// The membership handshake: the first thing asked on a connection.
    Hello { cert: Certificate },
    /// A new node asks the inviter to join with an invite's secret.
    Join { secret: String, node_id: String },
    /// A member's view, exchanged on every (re)connection, because gossip
    /// sent during a partition is never replayed.
    Sync(View),
    /// A client's API call forwarded to the home of what it names, with the
    /// client's own token. `stream`: it opens a subscription whose
    /// notifications the caller then pulls.
    Api { token: String, text: String, stream: bool },
    /// The next notifications of a forwarded subscription (a long poll):
    /// batch `next`, which acknowledges the one before (`pull`); 0 from an
    /// asker that does not number its pulls.
    Pull {
        stream: u64,
        #[serde(default)]
        next: u64,
    },
    /// The caller is done with a forwarded subscription.
    Cancel { stream: u64 },
    /// Does the asked node home this agent, conversation or hold?
    Locate(Locate),
    /// The fleet's owner tells a member it was removed (signed by the
    /// fleet root), before it is blocked.
    Removed(crate::Removal),
    /// A message from an agent homed on the asking member to one homed on
    /// the asked node (the sender's grant was checked at the sender's node).
    Mail(MailItem),
    /// Liveness: are you there? (with the asker's incarnation and deltas)
    Probe(crate::swim::Probe),
    /// Liveness: probe `target` for me (the asker could not reach it).
    ProbeFor { target: String, probe: crate::swim::Probe },
}

/// One message crossing nodes. Its id is the sender's node's, so a retried
/// delivery is recognised and stored once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailItem {
    pub id: String,
    /// The sending agent's name on its node.
    pub from: String,
    /// The sending node's name (the receiver checks it is the member that
    /// asks).
    pub node: String,
    /// The recipient's name on the asked node.
    pub to: String,
    pub body: String,
    pub context: Option<String>,
}

/// How the asked node took a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum MailAnswer {
    /// Stored in the recipient's inbox at `seq` (`again`: it had been
    /// stored before, by an earlier attempt of the same delivery).
    Stored { seq: u64, again: bool },
    /// Never to be stored (an unknown or archived recipient, a body over
    /// the limit): the reason, for the sender's outbox.
    /// `not_found`: the recipient is no agent there.
    Refused { reason: String, not_found: bool },
    /// Not now (the sender is over its rate at the receiver): try again.
    Later { reason: String, retry_after_ms: u64 },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Locate {
    Agent(String),
    Conversation(String),
    Hold(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Response {
    Hello {
        cert: Certificate,
    },
    Joined {
        cert: Certificate,
        view: View,
    },
    Synced(View),
    /// The home's JSON-RPC answer, as it gave it; `stream` names the
    /// subscription to pull when the call opened one.
    Api {
        text: String,
        stream: Option<u64>,
    },
    /// Notifications of a forwarded subscription, oldest first (at most
    /// `MAX_NOTES`); `ended` says why it will give no more; `batch`: the
    /// number they go under (0 for none, or for an unnumbered pull).
    Notes {
        notes: Vec<String>,
        ended: Option<String>,
        #[serde(default)]
        batch: u64,
    },
    Located(bool),
    /// A removal was heard.
    Told,
    Mail(MailAnswer),
    /// A probe answered (for `ProbeFor`: the target answered the helper).
    Ack(crate::swim::Probe),
    /// Refused, with the reason (the connection is then closed).
    Refused {
        reason: String,
    },
}

/// A member's knowledge of the fleet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// The sender's own record first, then the others it has seen.
    pub records: Vec<NodeRecord>,
    /// Certificates of the members it knows (itself included).
    pub members: Vec<Certificate>,
    /// The owner's removals it knows.
    pub removed: Vec<Removal>,
    /// Revoked token ids it knows (the newest `MAX_REVOKED`), so a member
    /// cut off when a token was revoked refuses it once it reconnects.
    #[serde(default)]
    pub revoked: Vec<String>,
}

impl View {
    /// Checks the bounds a receiver enforces.
    pub fn check(&self) -> Result<(), String> {
        if self.members.len() > MAX_MEMBERS || self.removed.len() > MAX_MEMBERS || self.records.len() > MAX_MEMBERS {
            return Err(format!("a view lists more than {MAX_MEMBERS} nodes"));
        }
        if self.revoked.len() > MAX_REVOKED {
            return Err(format!("a view lists more than {MAX_REVOKED} revocations"));
        }
        Ok(())
    }
}

/// Gossip on the fleet topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Gossip {
    Heartbeat(NodeRecord),
    /// The owner removed a member: every member drops and blocks it.
    Removed(Removal),
    /// Token revocation ids (at most `MAX_REVOKED`): every member refuses
    /// tokens carrying one from then on.
    Revoked(Vec<String>),
    /// The sender suspects a member (`swim`): told to everyone at once, so
    /// the suspect hears of it and refutes well within the suspicion time.
    Suspect(crate::swim::Update),
}

impl Gossip {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![];
        let _ = ciborium::into_writer(self, &mut out);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Gossip, String> {
        ciborium::from_reader(bytes).map_err(|e| format!("garbled gossip: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gossip_round_trips_and_garbage_is_an_error() {
        let owner = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
        let cert = Certificate::issue(&owner, "n-1", "p", 1);
        let g = Gossip::Removed(Removal::issue(&owner, &cert, 2));
        assert_eq!(Gossip::decode(&g.encode()), Ok(g));
        assert!(Gossip::decode(b"\xff\x00garbage").is_err());
    }
}
