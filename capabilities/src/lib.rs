//! Biscuit capability tokens: the rights vocabulary, the method table, minting,
//! offline attenuation, inspection and per-call authorization. Pure: no IO (the
//! caller passes the time and keeps revocations).
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod authz;
pub mod expiry;
pub mod methods;
pub mod rights;
pub mod token;

use biscuit_auth::{Algorithm, KeyPair, PrivateKey};

pub use authz::{AuthError, Request, Verified, Verifier, judge_raw};
pub use biscuit_auth::PublicKey;
pub use biscuit_auth::error::Token as BiscuitError;
pub use expiry::usable_at;
pub use rights::{Operation, Resource, Right};
pub use token::{Inspection, MintSpec, Restriction, answer_only, attenuate, inspect_unverified};

/// Errors making or reading tokens and keys.
#[derive(Debug, thiserror::Error)]
pub enum CapError {
    #[error("token is malformed: {0}")]
    Invalid(String),
    #[error("root key is malformed: {0}")]
    BadKey(String),
    #[error("could not build token: {0}")]
    Build(String),
}

/// A root of trust: an ed25519 key pair that signs tokens.
pub struct RootKey {
    keys: KeyPair,
}

impl RootKey {
    pub fn generate() -> RootKey {
        RootKey {
            keys: KeyPair::new_with_algorithm(Algorithm::Ed25519),
        }
    }

    /// Reads a private key as written by [`RootKey::private_hex`].
    pub fn from_private_hex(hex_key: &str) -> Result<RootKey, CapError> {
        let private = PrivateKey::from_bytes_hex(hex_key.trim(), Algorithm::Ed25519)
            .map_err(|e| CapError::BadKey(e.to_string()))?;
        Ok(RootKey {
            keys: KeyPair::from(&private),
        })
    }

    pub fn private_hex(&self) -> String {
        self.keys.private().to_bytes_hex()
    }

    /// Hex of the public key, as other biscuit tools take it.
    pub fn public_hex(&self) -> String {
        self.keys.public().to_bytes_hex()
    }

    pub fn public(&self) -> PublicKey {
        self.keys.public()
    }

    pub(crate) fn keys(&self) -> &KeyPair {
        &self.keys
    }

    /// The node's admin token: every right on the node.
    pub fn mint_admin(&self, node_id: &str) -> Result<String, CapError> {
        self.mint(&MintSpec {
            rights: vec![Right::new(Resource::Node, Operation::Admin)],
            facts: vec![("issued_by".into(), node_id.into())],
            ..MintSpec::default()
        })
    }
}

/// Reads a public key given as hex (as `node.info` shows it).
pub fn public_key_from_hex(hex_key: &str) -> Result<PublicKey, CapError> {
    PublicKey::from_bytes_hex(hex_key.trim(), Algorithm::Ed25519).map_err(|e| CapError::BadKey(e.to_string()))
}
