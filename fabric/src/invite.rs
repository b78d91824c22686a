//! Join codes: a single-use invitation printed by a node that holds the
//! fleet owner key (like `docker swarm join-token`). It carries the fleet
//! root (so the joiner knows whom to trust), the inviter's peer id and
//! addresses (where to ask), a one-time secret and its expiry. The inviter
//! keeps only the secret's hash and refuses a replay or an expired code.
//! Pure: encoding, decoding and the checks.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::FabricError;

/// Every join code starts with this.
pub const PREFIX: &str = "wfj1.";
/// Longest join code accepted.
pub const MAX_CODE_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invite {
    /// The fleet root's public key (hex).
    pub root: String,
    pub inviter_peer_id: String,
    /// The inviter's fabric addresses (multiaddrs), tried in order.
    pub addrs: Vec<String>,
    /// The one-time secret (hex, 32 bytes).
    pub secret: String,
    /// Unix ms after which the inviter refuses it.
    pub expires_at: u64,
}

impl Invite {
    /// The code a person copies.
    pub fn encode(&self) -> String {
        let mut cbor = vec![];
        // Writing into a Vec cannot fail for these plain fields.
        let _ = ciborium::into_writer(self, &mut cbor);
        format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(cbor))
    }

    /// Reads a code; a clear error for anything that is not one.
    pub fn decode(code: &str) -> Result<Invite, FabricError> {
        let bad = |why: &str| FabricError::Invite(why.to_string());
        let code = code.trim();
        if code.len() > MAX_CODE_BYTES {
            return Err(bad(&format!(
                "{} bytes is over the limit of {MAX_CODE_BYTES}",
                code.len()
            )));
        }
        let body = code
            .strip_prefix(PREFIX)
            .ok_or_else(|| bad(&format!("a join code starts with {PREFIX:?}")))?;
        let cbor = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| bad("it is not base64url after the prefix (copied whole?)"))?;
        let invite: Invite = ciborium::from_reader(cbor.as_slice()).map_err(|_| bad("its content is garbled"))?;
        if hex::decode(&invite.root).map(|k| k.len()) != Ok(32) {
            return Err(bad("its fleet root is not a 32-byte key"));
        }
        if hex::decode(&invite.secret).map(|k| k.len()) != Ok(32) {
            return Err(bad("its secret is not 32 bytes"));
        }
        if invite.addrs.is_empty() {
            return Err(bad("it names no address of the inviter"));
        }
        Ok(invite)
    }

    /// What the inviter stores to recognise the secret (never the secret).
    pub fn secret_hash(secret_hex: &str) -> String {
        hex::encode(Sha256::digest(secret_hex.as_bytes()))
    }
}

/// The inviter's judgement of a join attempt, given what it stored when it
/// printed the code (`expires_at`, whether it was used).
pub fn judge(stored: Option<(u64, bool)>, now: u64) -> Result<(), FabricError> {
    let refuse = |why: &str| Err(FabricError::Invite(why.to_string()));
    match stored {
        None => refuse("this node did not issue that code"),
        Some((_, true)) => refuse("the code was used already (a join code is single-use)"),
        Some((expires_at, false)) if now > expires_at => refuse("the code has expired"),
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Invite {
        Invite {
            root: hex::encode([7u8; 32]),
            inviter_peer_id: "12D3KooWabc".into(),
            addrs: vec!["/ip4/10.1.0.2/tcp/7768".into()],
            secret: hex::encode([9u8; 32]),
            expires_at: 1_000,
        }
    }

    #[test]
    fn codes_round_trip() {
        let code = sample().encode();
        assert!(code.starts_with(PREFIX));
        assert_eq!(Invite::decode(&format!("  {code}\n")).expect("decode"), sample());
    }

    #[test]
    fn garbage_is_refused_by_name() {
        let cases = [
            ("hello", "starts with"),
            ("wfj1.!!!", "not base64url"),
            ("wfj1.aGVsbG8", "garbled"),
        ];
        for (code, want) in cases {
            let e = Invite::decode(code).expect_err(code);
            assert!(e.to_string().contains(want), "{code}: {e}");
        }
        let mut i = sample();
        i.addrs.clear();
        assert!(
            Invite::decode(&i.encode())
                .expect_err("no addr")
                .to_string()
                .contains("no address")
        );
        let mut i = sample();
        i.secret = "00".into();
        assert!(
            Invite::decode(&i.encode())
                .expect_err("short")
                .to_string()
                .contains("32 bytes")
        );
        let huge = format!("{PREFIX}{}", "A".repeat(MAX_CODE_BYTES));
        assert!(
            Invite::decode(&huge)
                .expect_err("huge")
                .to_string()
                .contains("over the limit")
        );
    }

    #[test]
    fn replayed_expired_and_unknown_codes_are_refused() {
        assert!(judge(Some((10, false)), 5).is_ok());
        assert!(
            judge(Some((10, true)), 5)
                .expect_err("replay")
                .to_string()
                .contains("single-use")
        );
        assert!(
            judge(Some((10, false)), 11)
                .expect_err("late")
                .to_string()
                .contains("expired")
        );
        assert!(
            judge(None, 5)
                .expect_err("unknown")
                .to_string()
                .contains("did not issue")
        );
    }

    proptest! {
        #[test]
        fn any_invite_round_trips(addrs in proptest::collection::vec("[a-z0-9/.]{1,30}", 1..4), exp in any::<u64>()) {
            let i = Invite { addrs, expires_at: exp, ..sample() };
            prop_assert_eq!(Invite::decode(&i.encode()).expect("decode"), i);
        }
    }
}
