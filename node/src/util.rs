//! Small helpers shared across the node: clock and identifiers.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// A random identifier: `prefix` + 16 hex chars.
pub fn new_id(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

/// A random UUID-shaped string (v4 layout), for CLI session ids.
pub fn new_uuid() -> String {
    let b: [u8; 16] = rand::random();
    let h = hex::encode(b);
    format!(
        "{}-{}-4{}-{}{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        ["8", "9", "a", "b"][(b[8] & 3) as usize],
        &h[17..20],
        &h[20..32]
    )
}
