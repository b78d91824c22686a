//! What the guest reads from its environment: where the node is, whom to trust,
//! and which conversation it serves. Pure functions over a list of variables.

use ed25519_dalek::VerifyingKey;

pub const NODE_URL: &str = "WARREN_NODE_URL";
pub const NODE_KEY: &str = "WARREN_NODE_KEY";
pub const CONVERSATION: &str = "WARREN_GUEST_CONVERSATION";
pub const LAUNCH_TOKEN: &str = "WARREN_LAUNCH_TOKEN";
/// Optional: a Unix socket that leads to the node (a guest with no
/// network); the link dials it directly, so what the guest sends last is
/// in the kernel's hands before the guest exits.
pub const NODE_SOCKET: &str = "WARREN_NODE_SOCKET";
/// The bootstrap variables; the guest removes them from the CLI's environment.
pub const BOOTSTRAP_VARS: [&str; 4] = [NODE_URL, NODE_KEY, CONVERSATION, LAUNCH_TOKEN];

pub const ROWS: &str = "WARREN_GUEST_ROWS";
pub const COLS: &str = "WARREN_GUEST_COLS";
/// PTY size when stdin is not a terminal and the variables above are unset.
pub const DEFAULT_SIZE: (u16, u16) = (40, 120);

/// How to reach and trust the node. Absent in proxy-only mode.
#[derive(Clone)]
pub struct Bootstrap {
    /// `ws://` URL of the node's guest endpoint.
    pub node_url: String,
    /// The node's public identity: a `Welcome` must be signed by this key.
    pub node_key: VerifyingKey,
    pub conversation: String,
    /// Single-use credential for the first connection.
    pub launch_token: String,
    /// Where to dial instead of `node_url`'s address ([`NODE_SOCKET`]).
    pub node_socket: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for Bootstrap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bootstrap")
            .field("node_url", &self.node_url)
            .field("node_key", &hex::encode(self.node_key.as_bytes()))
            .field("conversation", &self.conversation)
            .field("launch_token", &"<redacted>")
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BootstrapError {
    #[error(
        "incomplete guest bootstrap: {} not set (set all of WARREN_NODE_URL, WARREN_NODE_KEY, \
         WARREN_GUEST_CONVERSATION, WARREN_LAUNCH_TOKEN, or none for proxy-only mode)",
        missing.join(", ")
    )]
    Incomplete { missing: Vec<&'static str> },
    #[error("WARREN_NODE_KEY must be the node's ed25519 public key as 64 hex characters: {reason}")]
    BadNodeKey { reason: String },
    #[error("WARREN_NODE_URL must be a ws:// URL (TLS is not supported), got {url:?}")]
    BadNodeUrl { url: String },
    #[error("{var} must be a whole number from 1 to 65535, got {value:?}")]
    BadSize { var: &'static str, value: String },
}

fn lookup<'a>(vars: &'a [(String, String)], name: &str) -> Option<&'a str> {
    vars.iter()
        .rev()
        .find(|(k, v)| k == name && !v.is_empty())
        .map(|(_, v)| v.as_str())
}

impl Bootstrap {
    /// Reads the four bootstrap variables. None set (or all empty) means
    /// proxy-only mode; some but not all is an error naming the missing ones.
    pub fn from_env_vars(vars: &[(String, String)]) -> Result<Option<Bootstrap>, BootstrapError> {
        let values = BOOTSTRAP_VARS.map(|name| lookup(vars, name));
        let missing: Vec<&'static str> = BOOTSTRAP_VARS
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|(name, _)| *name)
            .collect();
        if missing.len() == BOOTSTRAP_VARS.len() {
            return Ok(None);
        }
        let [Some(url), Some(key), Some(conversation), Some(token)] = values else {
            return Err(BootstrapError::Incomplete { missing });
        };
        if !url.starts_with("ws://") {
            return Err(BootstrapError::BadNodeUrl { url: url.to_owned() });
        }
        Ok(Some(Bootstrap {
            node_url: url.to_owned(),
            node_key: parse_node_key(key)?,
            conversation: conversation.to_owned(),
            launch_token: token.to_owned(),
            node_socket: lookup(vars, NODE_SOCKET).map(std::path::PathBuf::from),
        }))
    }
}

fn parse_node_key(text: &str) -> Result<VerifyingKey, BootstrapError> {
    let bad = |reason: String| BootstrapError::BadNodeKey { reason };
    let bytes = hex::decode(text.trim()).map_err(|e| bad(e.to_string()))?;
    let bytes: [u8; 32] = bytes
        .try_into()
        .map_err(|b: Vec<u8>| bad(format!("{} bytes, expected 32", b.len())))?;
    VerifyingKey::from_bytes(&bytes).map_err(|e| bad(e.to_string()))
}

/// The PTY size to use when stdin is not a terminal: `WARREN_GUEST_ROWS` x
/// `WARREN_GUEST_COLS`, defaulting to 40 x 120.
pub(crate) fn pty_size(vars: &[(String, String)]) -> Result<(u16, u16), BootstrapError> {
    let dimension = |var: &'static str, default: u16| match lookup(vars, var) {
        None => Ok(default),
        Some(v) => match v.trim().parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(BootstrapError::BadSize {
                var,
                value: v.to_owned(),
            }),
        },
    };
    Ok((dimension(ROWS, DEFAULT_SIZE.0)?, dimension(COLS, DEFAULT_SIZE.1)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_hex() -> String {
        hex::encode(
            ed25519_dalek::SigningKey::from_bytes(&[7; 32])
                .verifying_key()
                .as_bytes(),
        )
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn full(key: &str) -> Vec<(String, String)> {
        vars(&[
            ("HOME", "/root"),
            (NODE_URL, "ws://172.17.0.1:7777/guest"),
            (NODE_KEY, key),
            (CONVERSATION, "conv-1"),
            (LAUNCH_TOKEN, "lt-secret"),
        ])
    }

    #[test]
    fn no_bootstrap_means_proxy_only() {
        assert!(Bootstrap::from_env_vars(&vars(&[("HOME", "/root")])).unwrap().is_none());
        assert!(Bootstrap::from_env_vars(&vars(&[(NODE_URL, "")])).unwrap().is_none());
    }

    #[test]
    fn all_four_make_a_bootstrap() {
        let b = Bootstrap::from_env_vars(&full(&key_hex())).unwrap().unwrap();
        assert_eq!(b.node_url, "ws://172.17.0.1:7777/guest");
        assert_eq!(hex::encode(b.node_key.as_bytes()), key_hex());
        assert_eq!(
            (b.conversation.as_str(), b.launch_token.as_str()),
            ("conv-1", "lt-secret")
        );
        assert!(
            !format!("{b:?}").contains("lt-secret"),
            "Debug must not leak the launch token"
        );
    }

    #[test]
    fn partial_bootstrap_names_the_missing_variables() {
        let err = Bootstrap::from_env_vars(&vars(&[(NODE_URL, "ws://x"), (CONVERSATION, "c")])).unwrap_err();
        assert_eq!(
            err,
            BootstrapError::Incomplete {
                missing: vec![NODE_KEY, LAUNCH_TOKEN]
            }
        );
        assert!(
            err.to_string().contains("WARREN_NODE_KEY, WARREN_LAUNCH_TOKEN not set"),
            "{err}"
        );
    }

    #[test]
    fn bad_key_or_url_is_an_error() {
        for key in ["zz", "abcd", &"g".repeat(64)] {
            let err = Bootstrap::from_env_vars(&full(key)).unwrap_err();
            assert!(matches!(err, BootstrapError::BadNodeKey { .. }), "{key}: {err}");
            assert!(err.to_string().starts_with("WARREN_NODE_KEY"), "{err}");
        }
        let mut v = full(&key_hex());
        v[1].1 = "wss://node/guest".into();
        assert!(matches!(
            Bootstrap::from_env_vars(&v),
            Err(BootstrapError::BadNodeUrl { .. })
        ));
    }

    #[test]
    fn pty_size_defaults_and_validates() {
        assert_eq!(pty_size(&[]).unwrap(), (40, 120));
        assert_eq!(pty_size(&vars(&[(ROWS, "24"), (COLS, "80")])).unwrap(), (24, 80));
        let err = pty_size(&vars(&[(COLS, "0")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "WARREN_GUEST_COLS must be a whole number from 1 to 65535, got \"0\""
        );
    }
}
