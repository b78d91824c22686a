//! Wire types of warren's public API: the JSON-RPC 2.0 envelope, the method
//! registry (every method declared once), error codes and the objects results
//! carry. Only this crate's types go on the wire; the node's stored records are
//! separate types.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod error;
pub mod methods;
pub mod objects;
pub mod push;
pub mod registry;
pub mod rpc;
pub mod tasks;

pub use error::{ErrorCode, RpcError};
pub use objects::*;
pub use push::*;
pub use rpc::{Id, Notification, Request, Response};
pub use tasks::*;

/// Moves on every breaking change of the wire protocol.
pub const PROTOCOL_VERSION: u32 = 1;

/// WebSocket path of the API.
pub const WS_PATH: &str = "/v1/ws";

/// Default WebSocket subprotocol: JSON-RPC in text frames.
pub const SUBPROTOCOL_JSON: &str = "warren.v1.json";

/// The same messages as CBOR in binary frames (`terminal.data`'s `data` as a
/// byte string).
pub const SUBPROTOCOL_CBOR: &str = "warren.v1.cbor";
