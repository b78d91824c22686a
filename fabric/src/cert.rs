//! Membership certificates: the fleet owner's key (the fleet root) signs a
//! binding of one node's libp2p peer id to its node id. Members check a
//! peer's certificate against the root before anything but identify and
//! ping; a certificate on another peer id, of another fleet or with a bad
//! signature is refused. Pure: signing and checking only.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::FabricError;

/// What a certificate's signature covers, domain-separated.
const CONTEXT: &[u8] = b"warren fleet membership v1\0";

/// The fleet's id: the first 16 hex digits of the SHA-256 of its root
/// public key (so a fleet id always names exactly one root).
pub fn fleet_id(root: &VerifyingKey) -> String {
    hex::encode(&Sha256::digest(root.as_bytes())[..8])
}

/// What a signature covers: the context, then each field length-prefixed,
/// then the time (so no two field splits give the same bytes).
fn signed_bytes(context: &[u8], fleet_id: &str, node_id: &str, peer_id: &str, at: u64) -> Vec<u8> {
    let mut b = context.to_vec();
    for field in [fleet_id, node_id, peer_id] {
        b.extend_from_slice(&(field.len() as u32).to_be_bytes());
        b.extend_from_slice(field.as_bytes());
    }
    b.extend_from_slice(&at.to_be_bytes());
    b
}

/// One member's certificate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Certificate {
    pub fleet_id: String,
    pub node_id: String,
    /// The member's libp2p peer id (base58, as libp2p prints it).
    pub peer_id: String,
    /// Unix ms.
    pub issued_at: u64,
    /// Ed25519 over the fields above, by the fleet root.
    #[serde(with = "serde_bytes_hex")]
    pub signature: Vec<u8>,
}

impl Certificate {
    fn signed_bytes(fleet_id: &str, node_id: &str, peer_id: &str, issued_at: u64) -> Vec<u8> {
        signed_bytes(CONTEXT, fleet_id, node_id, peer_id, issued_at)
    }

    /// The owner signs `node_id`'s membership for `peer_id`.
    pub fn issue(owner: &SigningKey, node_id: &str, peer_id: &str, issued_at: u64) -> Certificate {
        let fleet_id = fleet_id(&owner.verifying_key());
        let signature = owner
            .sign(&Self::signed_bytes(&fleet_id, node_id, peer_id, issued_at))
            .to_bytes()
            .to_vec();
        Certificate {
            fleet_id,
            node_id: node_id.to_string(),
            peer_id: peer_id.to_string(),
            issued_at,
            signature,
        }
    }

    /// Ok when the fleet `root` signed this certificate and it names
    /// `peer_id` (the peer presenting it, as the connection proved).
    pub fn verify(&self, root: &VerifyingKey, peer_id: &str) -> Result<(), FabricError> {
        let refuse = |why: &str| Err(FabricError::Certificate(why.to_string()));
        if self.fleet_id != fleet_id(root) {
            return refuse(&format!("it is of fleet {}, not {}", self.fleet_id, fleet_id(root)));
        }
        if self.peer_id != peer_id {
            return refuse(&format!(
                "it was issued to peer {}, presented by {peer_id}",
                self.peer_id
            ));
        }
        let Ok(sig) = <[u8; 64]>::try_from(self.signature.as_slice()) else {
            return refuse("its signature is not 64 bytes");
        };
        let bytes = Self::signed_bytes(&self.fleet_id, &self.node_id, &self.peer_id, self.issued_at);
        root.verify(&bytes, &Signature::from_bytes(&sig))
            .or_else(|_| refuse("its signature is not the fleet root's"))
    }
}

/// The owner's removal of a member: signed like a certificate, so every
/// member can check it came from the fleet root, whoever relays it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    pub fleet_id: String,
    pub node_id: String,
    pub peer_id: String,
    pub removed_at: u64,
    #[serde(with = "serde_bytes_hex")]
    pub signature: Vec<u8>,
}

const REMOVAL_CONTEXT: &[u8] = b"warren fleet removal v1\0";

impl Removal {
    fn signed_bytes(fleet_id: &str, node_id: &str, peer_id: &str, at: u64) -> Vec<u8> {
        signed_bytes(REMOVAL_CONTEXT, fleet_id, node_id, peer_id, at)
    }

    /// The owner removes the member `cert` names.
    pub fn issue(owner: &SigningKey, cert: &Certificate, at: u64) -> Removal {
        let signature = owner
            .sign(&Self::signed_bytes(&cert.fleet_id, &cert.node_id, &cert.peer_id, at))
            .to_bytes()
            .to_vec();
        Removal {
            fleet_id: cert.fleet_id.clone(),
            node_id: cert.node_id.clone(),
            peer_id: cert.peer_id.clone(),
            removed_at: at,
            signature,
        }
    }

    /// Ok when the fleet `root` signed this removal.
    pub fn verify(&self, root: &VerifyingKey) -> Result<(), FabricError> {
        let refuse = |why: &str| Err(FabricError::Certificate(format!("removal: {why}")));
        if self.fleet_id != fleet_id(root) {
            return refuse("of another fleet");
        }
        let Ok(sig) = <[u8; 64]>::try_from(self.signature.as_slice()) else {
            return refuse("its signature is not 64 bytes");
        };
        let bytes = Self::signed_bytes(&self.fleet_id, &self.node_id, &self.peer_id, self.removed_at);
        root.verify(&bytes, &Signature::from_bytes(&sig))
            .or_else(|_| refuse("its signature is not the fleet root's"))
    }
}

/// Byte strings as hex in JSON (and CBOR text), readable in logs and files.
mod serde_bytes_hex {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(b: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(b))
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        hex::decode(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(seed: u8) -> SigningKey {
        SigningKey::from_bytes(&[seed; 32])
    }

    #[test]
    fn a_certificate_verifies_for_its_own_peer_only() {
        let owner = key(1);
        let c = Certificate::issue(&owner, "n-1", "12D3KooA", 5);
        assert_eq!(c.fleet_id, fleet_id(&owner.verifying_key()));
        assert!(c.verify(&owner.verifying_key(), "12D3KooA").is_ok());
        let e = c.verify(&owner.verifying_key(), "12D3KooB").expect_err("stolen");
        assert!(
            e.to_string().contains("issued to peer 12D3KooA, presented by 12D3KooB"),
            "{e}"
        );
    }

    #[test]
    fn another_fleet_or_a_forged_signature_is_refused() {
        let owner = key(1);
        let other = key(2);
        let c = Certificate::issue(&other, "n-1", "p", 5);
        let e = c.verify(&owner.verifying_key(), "p").expect_err("other fleet");
        assert!(e.to_string().contains("of fleet"), "{e}");
        let mut forged = Certificate::issue(&owner, "n-1", "p", 5);
        forged.node_id = "n-2".into();
        let e = forged.verify(&owner.verifying_key(), "p").expect_err("edited");
        assert!(e.to_string().contains("not the fleet root's"), "{e}");
        forged.signature = vec![0; 10];
        let e = forged.verify(&owner.verifying_key(), "p").expect_err("short");
        assert!(e.to_string().contains("64 bytes"), "{e}");
    }

    #[test]
    fn only_the_root_can_remove() {
        let owner = key(1);
        let c = Certificate::issue(&owner, "n-1", "p", 5);
        let r = Removal::issue(&owner, &c, 9);
        assert!(r.verify(&owner.verifying_key()).is_ok());
        let forged = Removal::issue(&key(2), &c, 9);
        assert!(forged.verify(&owner.verifying_key()).is_err(), "signed by another key");
        let mut edited = r.clone();
        edited.node_id = "n-2".into();
        assert!(edited.verify(&owner.verifying_key()).is_err());
    }

    #[test]
    fn certificates_round_trip_through_json() {
        let c = Certificate::issue(&key(3), "n-9", "peer", 77);
        let text = serde_json::to_string(&c).expect("json");
        assert_eq!(serde_json::from_str::<Certificate>(&text).expect("back"), c);
    }
}
