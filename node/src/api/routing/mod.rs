//! Routing a call across the fleet, in one folder. `plan.rs` decides (pure)
//! whether a call is answered here, by the member that homes what it names,
//! or by every member merged, from the method's registry entry and what this
//! node knows; `forward.rs` is the calling side (gathers that knowledge,
//! sends the call with the caller's token, relays the answer or pulls the
//! stream, merges fleet-wide lists); `events.rs` a fleet-wide event
//! subscription (this node's events and every member's, on one); `serve.rs` is the home side (answers a
//! member's forwarded call through the dispatcher handle it is built with,
//! serves forwarded streams, says what this node homes). The fleet
//! (`fleet/reach.rs`) carries the requests.

mod events;
pub mod forward;
pub mod plan;
pub mod serve;

pub use forward::{Routed, Router};
pub use serve::{Dispatch, Home};

use fabric::wire::Locate;

use crate::service::Node;
use crate::supervise::Supervisor;

/// Whether this node homes what a member asks about (an agent, a
/// conversation, a held dialog).
pub(crate) async fn homes(node: &Node, supervisor: &Supervisor, what: &Locate) -> bool {
    match what {
        Locate::Agent(name) => node.catalog.lock().await.agents.contains_key(name),
        Locate::Conversation(id) => node.conversation_agent(id).await.is_some(),
        Locate::Hold(id) => supervisor.is_held(id),
    }
}
