//! The real Codex tier inside the `codex` guest image: the same round trip,
//! supervision approve and hold scenarios, spend, quota and resume as
//! codex.rs, through node -> container (no network; its model endpoint
//! through the node's egress proxy) -> guest -> real Codex -> the fake model.
//! Needs a Docker engine: without one these fail.

mod support;

const RUNTIME: &str = "docker";

include!("cases/codex.rs");
