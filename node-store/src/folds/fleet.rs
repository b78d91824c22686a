//! The fleet as this node's log records it: its own membership (the root
//! and its certificate), the members it knows by certificate, and the join
//! codes it printed (the secrets' hashes, and whether each was used). A pure
//! fold over `fleet_*` events.

use std::collections::BTreeMap;

use fabric::Certificate;

use crate::events::Event;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetState {
    /// The fleet root's public key (hex), once this node is a member.
    pub root: Option<String>,
    /// This node's own certificate.
    pub me: Option<Certificate>,
    /// Other members by node id.
    pub members: BTreeMap<String, Certificate>,
    /// Members the owner removed, by node id.
    pub removed: BTreeMap<String, fabric::Removal>,
    /// Printed join codes: secret hash -> (expires_at, used).
    pub invites: BTreeMap<String, (u64, bool)>,
    /// The owner removed this node: the fleet it was removed from and when
    /// (ms). It is in no fleet since (its agents stay); a join clears it.
    pub left: Option<(String, u64)>,
}

/// At most this many join codes are remembered (the oldest go first).
const MAX_INVITES: usize = 1024;

impl FleetState {
    pub fn apply(&mut self, e: &Event) {
        match e {
            Event::FleetJoined { root, cert } => {
                self.root = Some(root.clone());
                self.me = Some(cert.clone());
                self.members.remove(&cert.node_id);
                self.left = None;
            }
            // This node itself removed: it leaves the fleet, whole.
            Event::FleetRemoved { removal } if self.me.as_ref().is_some_and(|m| m.node_id == removal.node_id) => {
                self.left = Some((removal.fleet_id.clone(), removal.removed_at));
                self.root = None;
                self.me = None;
                self.members.clear();
                self.removed.clear();
                self.invites.clear();
            }
            Event::FleetMember { cert }
                if self.me.as_ref().is_none_or(|me| me.node_id != cert.node_id)
                    && !self.removed.contains_key(&cert.node_id) =>
            {
                self.members.insert(cert.node_id.clone(), cert.clone());
            }
            Event::FleetRemoved { removal } => {
                self.members.remove(&removal.node_id);
                self.removed.insert(removal.node_id.clone(), removal.clone());
            }
            Event::FleetInvite {
                secret_hash,
                expires_at,
            } => {
                if self.invites.len() >= MAX_INVITES
                    && let Some(oldest) = self
                        .invites
                        .iter()
                        .min_by_key(|(_, (exp, _))| *exp)
                        .map(|(k, _)| k.clone())
                {
                    self.invites.remove(&oldest);
                }
                self.invites.insert(secret_hash.clone(), (*expires_at, false));
            }
            Event::FleetInviteUsed { secret_hash, .. } => {
                if let Some(i) = self.invites.get_mut(secret_hash) {
                    i.1 = true;
                }
            }
            _ => {}
        }
    }

    /// Whether the owner removed this node id or peer id.
    pub fn is_removed(&self, node_id: &str, peer_id: &str) -> bool {
        self.removed.contains_key(node_id) || self.removed.values().any(|r| r.peer_id == peer_id)
    }

    pub fn fleet_id(&self) -> Option<&str> {
        self.me.as_ref().map(|c| c.fleet_id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cert(node: &str) -> Certificate {
        let owner = ed25519_dalek::SigningKey::from_bytes(&[4; 32]);
        Certificate::issue(&owner, node, &format!("peer-{node}"), 1)
    }

    #[test]
    fn membership_folds_from_events() {
        let mut s = FleetState::default();
        s.apply(&Event::FleetMember { cert: cert("n-2") });
        s.apply(&Event::FleetJoined {
            root: "ab".into(),
            cert: cert("n-1"),
        });
        s.apply(&Event::FleetMember { cert: cert("n-1") });
        assert_eq!(s.root.as_deref(), Some("ab"));
        assert_eq!(s.members.keys().collect::<Vec<_>>(), ["n-2"], "never itself");
        s.apply(&Event::FleetInvite {
            secret_hash: "h".into(),
            expires_at: 9,
        });
        assert_eq!(s.invites["h"], (9, false));
        s.apply(&Event::FleetInviteUsed {
            secret_hash: "h".into(),
            node_id: "n-2".into(),
        });
        assert_eq!(s.invites["h"], (9, true));
        let owner = ed25519_dalek::SigningKey::from_bytes(&[4; 32]);
        s.apply(&Event::FleetRemoved {
            removal: fabric::Removal::issue(&owner, &cert("n-2"), 5),
        });
        assert!(s.members.is_empty());
        assert!(s.is_removed("n-2", "x") && s.is_removed("x", "peer-n-2"));
        s.apply(&Event::FleetMember { cert: cert("n-2") });
        assert!(s.members.is_empty(), "a removed node is not learned again");

        // This node removed: it is in no fleet, and says which it left.
        s.apply(&Event::FleetMember { cert: cert("n-3") });
        let me = cert("n-1");
        s.apply(&Event::FleetRemoved {
            removal: fabric::Removal::issue(&owner, &me, 7),
        });
        assert_eq!((s.me.as_ref(), s.root.as_ref(), s.fleet_id()), (None, None, None));
        assert!(s.members.is_empty() && s.removed.is_empty() && s.invites.is_empty());
        assert_eq!(s.left, Some((me.fleet_id.clone(), 7)));
        s.apply(&Event::FleetJoined {
            root: "cd".into(),
            cert: cert("n-1"),
        });
        assert_eq!(s.left, None, "a join clears it");
    }
}
