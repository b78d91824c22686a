//! The wire protocol between a guest and its node, shared by both sides.
//!
//! Control messages are JSON text frames tagged by `"type"` (snake_case). Raw
//! PTY output travels guest -> node as binary frames, in order. Right after each
//! `Welcome` the guest sends one binary frame that repaints its whole screen, so
//! a node mirroring the byte stream into its own vt100 parser is in sync after
//! every (re)connect.

use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The largest text frame either side accepts (1 MiB); bigger is a protocol error.
pub const MAX_TEXT_FRAME: usize = 1 << 20;

/// Domain separator of the welcome signature, so it can never be replayed as
/// a signature over anything else.
const WELCOME_DOMAIN: &str = "warren-guest-v1";

/// Frames the guest sends to the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GuestMsg {
    /// The first frame of every connection. `credential` is the launch token on
    /// the first connection (`reconnect: false`) and the last `session_key` on
    /// reconnects. `nonce` is 32 random bytes in hex that the node signs back.
    /// `pid` is the CLI's pid inside the container.
    Hello {
        conversation: String,
        credential: String,
        reconnect: bool,
        nonce: String,
        rows: u16,
        cols: u16,
        pid: u32,
        version: String,
    },
    /// The answer to the node request with the same `id`.
    Reply {
        id: u64,
        ok: bool,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        result: Option<Value>,
    },
    /// The CLI exited with `code` (128 + signal number if a signal killed it).
    Exited { code: i32 },
}

impl GuestMsg {
    /// The reply to request `id`: `Ok(result)` or `Err(message)`.
    pub fn reply(id: u64, outcome: Result<Option<Value>, String>) -> GuestMsg {
        match outcome {
            Ok(result) => GuestMsg::Reply {
                id,
                ok: true,
                error: None,
                result,
            },
            Err(error) => GuestMsg::Reply {
                id,
                ok: false,
                error: Some(error),
                result: None,
            },
        }
    }
}

/// Frames the node sends to the guest. Every request carries an `id` that the
/// guest's `Reply` echoes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum NodeMsg {
    /// Accepts the hello. `node_sig` is the node's hex ed25519 signature over
    /// [`welcome_message`]; `session_key` is the credential for reconnects.
    Welcome {
        session_key: String,
        node_sig: String,
    },
    /// Rejects the hello; the guest stops the CLI and exits with code 75.
    Refused {
        reason: String,
    },
    /// Type `data` (base64) into the PTY.
    Write {
        id: u64,
        data: String,
    },
    Resize {
        id: u64,
        rows: u16,
        cols: u16,
    },
    /// Result: [`ScreenResult`].
    Screen {
        id: u64,
    },
    /// Result: [`AliveResult`].
    Alive {
        id: u64,
    },
    /// Result: [`QuotaResult`].
    Quota {
        id: u64,
    },
    /// Hang up the CLI (SIGHUP, then SIGKILL after 2 s); the guest then sends
    /// `Exited` and exits.
    Close {
        id: u64,
    },
    Ping {
        id: u64,
    },
    /// Freeze (`frozen: true`, SIGSTOP) or thaw (SIGCONT) the CLI's process
    /// group: its conversation waits for its budget with the CLI warm.
    Freeze {
        id: u64,
        frozen: bool,
    },
    /// Put a per-conversation secret (the instance token) in the guest's
    /// secrets directory (a tmpfs: gone with the container), as file `name`.
    Secret {
        id: u64,
        name: String,
        value: SecretValue,
    },
}

/// A secret's value: serialized as the string, never shown by `Debug`.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretValue(pub String);

impl std::fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<redacted>")
    }
}

/// The variable naming the guest's secrets directory (a tmpfs).
pub const SECRETS_DIR: &str = "WARREN_GUEST_SECRETS";

/// Whether `name` may name a file in the secrets directory: 1-64 letters,
/// digits, `.`, `_`, `-`, not starting with a dot.
pub fn secret_name_ok(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl NodeMsg {
    /// The request id, or None for `Welcome`/`Refused`, which are not requests.
    pub fn id(&self) -> Option<u64> {
        match self {
            NodeMsg::Welcome { .. } | NodeMsg::Refused { .. } => None,
            NodeMsg::Write { id, .. }
            | NodeMsg::Resize { id, .. }
            | NodeMsg::Screen { id }
            | NodeMsg::Alive { id }
            | NodeMsg::Quota { id }
            | NodeMsg::Close { id }
            | NodeMsg::Ping { id }
            | NodeMsg::Freeze { id, .. }
            | NodeMsg::Secret { id, .. } => Some(*id),
        }
    }
}

/// The result of `Screen`: the guest's rendered screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenResult {
    pub rows: u16,
    pub cols: u16,
    /// Each row's text, trailing spaces trimmed.
    pub lines: Vec<String>,
    /// `[row, col]`, zero-based.
    pub cursor: (u16, u16),
}

/// The result of `Alive`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AliveResult {
    pub alive: bool,
}

/// The result of `Quota`. Always empty for now: no harness parses quota
/// figures from the screen yet.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaResult {
    pub metrics: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtoError {
    #[error("text frame of {len} bytes is over the {MAX_TEXT_FRAME}-byte limit")]
    FrameTooLarge { len: usize },
    #[error("malformed frame: {0}")]
    Malformed(String),
    #[error("node_sig is not a hex-encoded 64-byte ed25519 signature: {0}")]
    BadSignatureEncoding(String),
    #[error("node_sig does not verify against the pinned node key (WARREN_NODE_KEY)")]
    SignatureMismatch,
    #[error("write data is not valid base64: {0}")]
    BadBase64(String),
}

/// Parses a text frame, refusing frames over [`MAX_TEXT_FRAME`].
pub fn decode<T: DeserializeOwned>(text: &str) -> Result<T, ProtoError> {
    if text.len() > MAX_TEXT_FRAME {
        return Err(ProtoError::FrameTooLarge { len: text.len() });
    }
    serde_json::from_str(text).map_err(|e| ProtoError::Malformed(e.to_string()))
}

/// The `id` of a frame that did not parse, so the error can still be answered.
pub fn request_id(text: &str) -> Option<u64> {
    serde_json::from_str::<Value>(text).ok()?.get("id")?.as_u64()
}

/// Serialises a frame to JSON text.
pub fn encode<T: Serialize>(msg: &T) -> String {
    serde_json::to_string(msg).expect("protocol messages always serialise")
}

/// The bytes the node signs in `Welcome`: `warren-guest-v1\n{conversation}\n{nonce}`.
pub fn welcome_message(conversation: &str, nonce: &str) -> Vec<u8> {
    format!("{WELCOME_DOMAIN}\n{conversation}\n{nonce}").into_bytes()
}

/// The node's `node_sig` for a hello: hex ed25519 signature over [`welcome_message`].
pub fn sign_welcome(key: &SigningKey, conversation: &str, nonce: &str) -> String {
    hex::encode(key.sign(&welcome_message(conversation, nonce)).to_bytes())
}

/// Checks a `node_sig` against the pinned node key.
pub fn verify_welcome(key: &VerifyingKey, conversation: &str, nonce: &str, sig_hex: &str) -> Result<(), ProtoError> {
    let bytes = hex::decode(sig_hex).map_err(|e| ProtoError::BadSignatureEncoding(e.to_string()))?;
    let bytes: [u8; 64] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| ProtoError::BadSignatureEncoding(format!("{} bytes, expected 64", b.len())))?;
    key.verify_strict(&welcome_message(conversation, nonce), &Signature::from_bytes(&bytes))
        .map_err(|_| ProtoError::SignatureMismatch)
}

/// Decodes the base64 `data` of a `Write`.
pub fn decode_write(data: &str) -> Result<Vec<u8>, ProtoError> {
    base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| ProtoError::BadBase64(e.to_string()))
}

/// Encodes bytes as the `data` of a `Write`.
pub fn encode_write(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip<T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug>(msg: T, expected: Value) {
        let text = encode(&msg);
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), expected);
        assert_eq!(decode::<T>(&text).unwrap(), msg);
    }

    #[test]
    fn guest_messages_have_the_documented_shape() {
        let hello = GuestMsg::Hello {
            conversation: "c1".into(),
            credential: "tok".into(),
            reconnect: false,
            nonce: "ab".into(),
            rows: 40,
            cols: 120,
            pid: 7,
            version: "0.1.0".into(),
        };
        round_trip(
            hello,
            json!({"type": "hello", "conversation": "c1", "credential": "tok", "reconnect": false,
                   "nonce": "ab", "rows": 40, "cols": 120, "pid": 7, "version": "0.1.0"}),
        );
        round_trip(
            GuestMsg::reply(3, Ok(Some(json!({"alive": true})))),
            json!({"type": "reply", "id": 3, "ok": true, "error": null, "result": {"alive": true}}),
        );
        round_trip(
            GuestMsg::reply(4, Err("boom".into())),
            json!({"type": "reply", "id": 4, "ok": false, "error": "boom", "result": null}),
        );
        round_trip(GuestMsg::Exited { code: -1 }, json!({"type": "exited", "code": -1}));
    }

    #[test]
    fn node_messages_have_the_documented_shape() {
        let cases = [
            (
                NodeMsg::Welcome {
                    session_key: "sk".into(),
                    node_sig: "00".into(),
                },
                json!({"type": "welcome", "session_key": "sk", "node_sig": "00"}),
            ),
            (
                NodeMsg::Refused { reason: "no".into() },
                json!({"type": "refused", "reason": "no"}),
            ),
            (
                NodeMsg::Write {
                    id: 1,
                    data: "aGk=".into(),
                },
                json!({"type": "write", "id": 1, "data": "aGk="}),
            ),
            (
                NodeMsg::Resize {
                    id: 2,
                    rows: 3,
                    cols: 4,
                },
                json!({"type": "resize", "id": 2, "rows": 3, "cols": 4}),
            ),
            (NodeMsg::Screen { id: 5 }, json!({"type": "screen", "id": 5})),
            (NodeMsg::Alive { id: 6 }, json!({"type": "alive", "id": 6})),
            (NodeMsg::Quota { id: 7 }, json!({"type": "quota", "id": 7})),
            (
                NodeMsg::Freeze { id: 9, frozen: true },
                json!({"type": "freeze", "id": 9, "frozen": true}),
            ),
            (NodeMsg::Close { id: 8 }, json!({"type": "close", "id": 8})),
            (NodeMsg::Ping { id: 9 }, json!({"type": "ping", "id": 9})),
        ];
        for (msg, json) in cases {
            round_trip(msg, json);
        }
        let screen = ScreenResult {
            rows: 2,
            cols: 3,
            lines: vec!["a".into(), "".into()],
            cursor: (1, 0),
        };
        round_trip(
            screen,
            json!({"rows": 2, "cols": 3, "lines": ["a", ""], "cursor": [1, 0]}),
        );
    }

    #[test]
    fn bad_frames_are_named() {
        let err = decode::<NodeMsg>(r#"{"type":"launch_missiles","id":1}"#).unwrap_err();
        assert!(
            matches!(err, ProtoError::Malformed(ref m) if m.contains("launch_missiles")),
            "{err}"
        );
        assert_eq!(request_id(r#"{"type":"launch_missiles","id":1}"#), Some(1));
        let huge = format!(r#"{{"type":"write","id":1,"data":"{}"}}"#, "A".repeat(MAX_TEXT_FRAME));
        assert!(matches!(
            decode::<NodeMsg>(&huge),
            Err(ProtoError::FrameTooLarge { .. })
        ));
        assert_eq!(decode_write("aGk=").unwrap(), b"hi");
        assert!(matches!(decode_write("not base64!"), Err(ProtoError::BadBase64(_))));
        assert_eq!(decode_write(&encode_write(b"\x1b[A")).unwrap(), b"\x1b[A");
    }

    #[test]
    fn welcome_signatures_verify_only_for_the_pinned_key_and_nonce() {
        let key = SigningKey::from_bytes(&[7; 32]);
        let other = SigningKey::from_bytes(&[8; 32]);
        let sig = sign_welcome(&key, "conv", "n1");
        assert_eq!(welcome_message("conv", "n1"), b"warren-guest-v1\nconv\nn1");
        assert_eq!(verify_welcome(&key.verifying_key(), "conv", "n1", &sig), Ok(()));
        assert_eq!(
            verify_welcome(&other.verifying_key(), "conv", "n1", &sig),
            Err(ProtoError::SignatureMismatch)
        );
        assert_eq!(
            verify_welcome(&key.verifying_key(), "conv", "n2", &sig),
            Err(ProtoError::SignatureMismatch)
        );
        assert!(matches!(
            verify_welcome(&key.verifying_key(), "conv", "n1", "zz"),
            Err(ProtoError::BadSignatureEncoding(_))
        ));
        assert!(matches!(
            verify_welcome(&key.verifying_key(), "conv", "n1", "abcd"),
            Err(ProtoError::BadSignatureEncoding(m)) if m.contains("2 bytes")
        ));
    }
}
