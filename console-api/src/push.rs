//! Web Push's wire types: a browser's subscription as `push.subscribe`
//! takes it (its `PushSubscription.toJSON()`), and a subscription's id.

use serde::{Deserialize, Serialize};

/// `push.subscribe`: a browser's Web Push subscription (its
/// `PushSubscription.toJSON()`), and which needs-yous it wants.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSubscribe {
    /// The push service's URL for this browser (https, public).
    pub endpoint: String,
    pub keys: PushKeys,
    /// `hold`, `escalation`, `breaker`, `budget`, `task` (default: all).
    #[serde(default)]
    pub kinds: Option<Vec<String>>,
    /// Ignored: browsers include it in `toJSON()`.
    #[serde(default, rename = "expirationTime")]
    pub expiration_time: Option<serde_json::Value>,
}

/// A push subscription's keys, base64url.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushKeys {
    /// The browser's P-256 public key (65 bytes, uncompressed).
    pub p256dh: String,
    /// Its authentication secret (16 bytes).
    pub auth: String,
}

/// `push.unsubscribe {subscription}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushRef {
    pub subscription: String,
}
