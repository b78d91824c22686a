//! Biscuit capability tokens: the node's root key, the admin token it mints at
//! first start, and verification of a presented token. Pure: no IO. The full
//! rights model (attenuation, per-method Datalog, revocation) builds on this.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

use std::time::Duration;

use biscuit_auth::{Algorithm, AuthorizerBuilder, AuthorizerLimits, Biscuit, KeyPair, PrivateKey};

pub use biscuit_auth::PublicKey;

/// Why a token was refused or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CapError {
    #[error("token is malformed or not signed by this node's root key: {0}")]
    Invalid(String),
    #[error("token does not grant this: {0}")]
    Denied(String),
    #[error("root key is malformed: {0}")]
    BadKey(String),
    #[error("could not build token: {0}")]
    Build(String),
}

/// The node's root of trust: an ed25519 key pair.
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

    /// Mints the node's admin token: all rights on this node.
    pub fn mint_admin(&self, node_id: &str) -> Result<String, CapError> {
        let token = Biscuit::builder()
            .code(format!(r#"right("node", "admin"); issued_by("{}");"#, escape(node_id)))
            .and_then(|b| b.build(&self.keys))
            .map_err(|e| CapError::Build(e.to_string()))?;
        token.to_base64().map_err(|e| CapError::Build(e.to_string()))
    }
}

/// What a verified token lets its holder do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Authority {
    Admin,
}

/// Verifies `token` (base64url biscuit) against `root` and asks whether it
/// grants admin rights. Datalog runs under explicit limits; a limit hit is a
/// denial, never a panic.
pub fn verify(token: &str, root: &PublicKey) -> Result<Authority, CapError> {
    let token = token.trim();
    let biscuit = Biscuit::from_base64(token, *root).map_err(|e| CapError::Invalid(e.to_string()))?;
    let limits = AuthorizerLimits {
        max_facts: 1000,
        max_iterations: 100,
        max_time: Duration::from_millis(20),
    };
    let mut authorizer = AuthorizerBuilder::new()
        .time()
        .code(r#"allow if right("node", "admin");"#)
        .map_err(|e| CapError::Build(e.to_string()))?
        .set_limits(limits)
        .build(&biscuit)
        .map_err(|e| CapError::Invalid(e.to_string()))?;
    authorizer
        .authorize()
        .map(|_| Authority::Admin)
        .map_err(|e| CapError::Denied(e.to_string()))
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_token_verifies_against_its_root_only() {
        let root = RootKey::generate();
        let token = root.mint_admin("node-1").expect("mint");
        assert_eq!(verify(&token, &root.public()).expect("verify"), Authority::Admin);

        let other = RootKey::generate();
        assert!(matches!(verify(&token, &other.public()), Err(CapError::Invalid(_))));
    }

    #[test]
    fn garbage_and_truncated_tokens_are_invalid() {
        let root = RootKey::generate();
        let token = root.mint_admin("n").expect("mint");
        assert!(matches!(
            verify("not a token", &root.public()),
            Err(CapError::Invalid(_))
        ));
        assert!(matches!(
            verify(&token[..token.len() / 2], &root.public()),
            Err(CapError::Invalid(_))
        ));
    }

    #[test]
    fn token_without_admin_right_is_denied() {
        let root = RootKey::generate();
        let token = Biscuit::builder()
            .code(r#"right("agent:a", "observe");"#)
            .and_then(|b| b.build(&root.keys))
            .and_then(|t| t.to_base64())
            .expect("build");
        assert!(matches!(verify(&token, &root.public()), Err(CapError::Denied(_))));
    }

    #[test]
    fn private_key_round_trips_through_hex() {
        let root = RootKey::generate();
        let again = RootKey::from_private_hex(&root.private_hex()).expect("parse");
        assert_eq!(again.public_hex(), root.public_hex());
        assert!(RootKey::from_private_hex("zz").is_err());
    }
}
