//! The `warren` binary's library half: the API client, the CLI verbs, the
//! interactive attach, and the benchmarks. `main.rs` only parses arguments.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod attach;
pub mod bench;
pub mod client;
pub mod cmd;
