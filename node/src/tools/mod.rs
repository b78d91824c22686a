//! Tools as grants (seed 002 §4): which `warren-<tool>` executables a
//! conversation mounts (`mount.rs`), and the owner-defined tools of
//! warren.toml that the node runs for an agent (`invoke.rs`), so their
//! secrets never enter the guest. The `Tools` subsystem (`calls.rs`) answers
//! `tool.*` and the built-in recall (`recall.rs`), and checks each instance
//! token's call of a built-in tool against the agent's current grants.

mod calls;
mod invoke;
pub(crate) mod mount;
mod recall;

pub use calls::{MAX_RUNNING, Tools};
pub use invoke::{ToolRun, run_tool};
pub use node_store::tools::{OwnerTool, check_grants, check_owner_tools, mounted, still_granted};

/// An owner tool running `argv` with a 5 s timeout and a 1,000-byte cap.
#[cfg(test)]
pub(crate) fn test_tool(argv: &[&str]) -> OwnerTool {
    OwnerTool {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![],
        cwd: None,
        timeout_secs: 5,
        max_output_bytes: 1000,
        description: None,
    }
}
