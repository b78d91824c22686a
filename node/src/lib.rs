//! The warren node: the durable home of the agents on one host. An event store
//! (SQLite) with the catalog and transcripts folded from it, conversations run
//! as CLIs under PTYs behind a runtime seam, and the JSON-RPC API over a
//! WebSocket and a Unix socket.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod api;
pub mod config;
pub mod console;
pub mod conversations;
pub mod egress;
pub mod fleet;
pub mod idempotent;
pub mod live;
pub mod mail;
pub mod monitors;
pub mod outbound;
pub mod push;
pub mod secrets;
pub mod server;
pub mod service;
pub mod spend;
pub mod supervise;
pub mod tokens;
pub mod tools;
pub mod transcript;
pub mod work;
pub mod workspace;

pub use config::Config;
pub use node_runtime::egress as proxy;
pub use node_runtime::{exits, harness, images, progress, runtime};
pub use node_store::{Store, catalog, events, lifecycle, redact, store, util, validate};
pub use service::Node;
