//! The web console's side of the node: the browser guard on every HTTP
//! request and WebSocket upgrade (`guard`, pure; `http`, the axum glue that
//! also sets the security headers), the pages and assets embedded in the
//! binary (`assets`), and one-time pairing codes (`pair`).
//!
//! The console itself is a client of the public API over `/v1/ws`: nothing
//! here gives a page more than its token does.

pub mod assets;
pub mod guard;
pub mod http;
pub mod pair;

use serde::{Deserialize, Serialize};

/// `[console]` in warren.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConsoleSettings {
    /// Further host names browsers (and clients) may use to reach this node,
    /// `NAME` (the node's port, or none) or `NAME:PORT`, e.g. the name a
    /// reverse proxy serves it under. The listen address and `localhost`,
    /// `127.0.0.1`, `[::1]` with the node's port are always allowed on a
    /// direct request.
    pub hosts: Vec<String>,
    /// Further origins whose pages may call the API, e.g.
    /// `https://console.example`. The node's own origins always may.
    pub origins: Vec<String>,
}

/// The console's address for a client endpoint: `ws://HOST:PORT/v1/ws` ->
/// `http://HOST:PORT/` (`wss` -> `https`).
pub fn console_url(endpoint: &str) -> String {
    let (scheme, rest) = match endpoint.split_once("://") {
        Some(("wss", rest)) => ("https", rest),
        Some((_, rest)) => ("http", rest),
        None => ("http", endpoint),
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{authority}/")
}

/// The authority (`HOST:PORT`) of an endpoint URL, if it has one.
pub fn authority_of(endpoint: &str) -> Option<String> {
    let rest = endpoint.split_once("://").map(|(_, r)| r)?;
    let a = rest.split('/').next()?;
    (!a.is_empty()).then(|| a.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn console_urls_follow_the_endpoint() {
        assert_eq!(console_url("ws://127.0.0.1:7767/v1/ws"), "http://127.0.0.1:7767/");
        assert_eq!(console_url("wss://warren.example/v1/ws"), "https://warren.example/");
        assert_eq!(authority_of("ws://[::1]:7767/v1/ws").as_deref(), Some("[::1]:7767"));
        assert_eq!(authority_of("nonsense"), None);
    }
}
