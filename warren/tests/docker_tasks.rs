//! Unattended tasks (seed 001) in Docker guests on a real engine, the same
//! scenarios as `tasks.rs` (`cases/tasks.rs`): a repository owned by an
//! ordinary user (uid 1000), the worker and its helpers in guests, the
//! acceptance commands run in the worker's guest; a task that cannot pass
//! parked with its branch, `kill -9` during verification ending in exactly
//! one completion, a reviewer's rejection and approval, a human's takeover,
//! overlapping workspaces refused, and a decider answering held dialogs
//! inside its bounds. (The repair-then-commit scenario in a guest is in
//! `docker_workspaces.rs`.)

mod support;
mod workspace;

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use support::{TestNode, call, call_err, wait_until, warren};
use warren::client::Client;
use workspace::{git, owned_repo_node, workspace_of};

include!("cases/tasks.rs");

/// A Docker node with `config` and a repository `proj` owned by uid 1000.
fn rig(config: &str) -> (tempfile::TempDir, std::path::PathBuf, String, TestNode) {
    let (tmp, base, node) = owned_repo_node(config);
    let repo = tmp.path().join("proj");
    (tmp, repo, base, node)
}
