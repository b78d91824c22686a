//! How the node runs a CLI: the runtime seam (a local PTY or a Docker guest
//! that dials back), the harness adapters (what the node knows of each CLI:
//! launch plans, status, dialogs read from their frame, session files), the
//! guest images, and why a CLI stopped. Beneath the node's core: it knows
//! the stored records (`node-store`) and nothing of the API or subsystems.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod egress;
pub mod exits;
pub mod harness;
pub mod images;
pub mod layout;
pub mod progress;
pub mod runtime;
