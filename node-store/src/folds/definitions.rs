//! The fold of `definitions_accepted` events: each workspace's definitions as
//! a human accepted them (pure; folded by the catalog).

use std::collections::BTreeMap;

use crate::events::Event;

/// The accepted definitions of every workspace: the fold of
/// `definitions_accepted` events (worktree-relative path -> content
/// fingerprint, `None` for "accepted as absent").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Accepted {
    by_workspace: BTreeMap<String, BTreeMap<String, Option<String>>>,
}

impl Accepted {
    pub fn apply(&mut self, event: &Event) {
        if let Event::DefinitionsAccepted { workspace, files, .. } = event {
            let known = self.by_workspace.entry(workspace.clone()).or_default();
            for (path, fingerprint) in files {
                known.insert(path.clone(), fingerprint.clone());
            }
        }
    }

    /// What was accepted for `workspace`, if it has a baseline.
    pub fn of(&self, workspace: &str) -> Option<&BTreeMap<String, Option<String>>> {
        self.by_workspace.get(workspace)
    }
}
