//! The node's durable state, beneath everything else of the node: the stored
//! events (`events`), the SQLite event store with its single writer
//! (`store`), the pure folds of the log (`catalog`, and each subsystem's fold
//! in `folds`), the conversation lifecycle, input validation, and the
//! redaction of secret values before anything is stored. Nothing here knows
//! the runtime, the API or any subsystem: the crate boundary keeps it so.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod catalog;
pub mod egress;
pub mod events;
pub mod folds;
pub mod lifecycle;
pub mod net;
pub mod redact;
pub mod store;
pub mod tools;
pub mod util;
pub mod validate;

pub use store::Store;
