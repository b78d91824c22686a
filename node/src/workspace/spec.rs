//! Pure decisions about workspaces: what a `workspace.repo` names, the
//! branch a conversation works on.

use std::path::{Path, PathBuf};

/// What `workspace.repo` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoSource {
    /// An absolute path on this node (lexically normalized).
    Path(PathBuf),
    /// A URL git can clone (`https://`, `ssh://`, `git://`, `file://`, or
    /// scp-like `user@host:path`).
    Url(String),
}

/// Classifies `repo`: a relative path, a path inside `data_dir`, an empty
/// string or a URL of a transport the node does not use (`ext::`, ...) is an
/// error naming what was wrong.
pub fn classify(repo: &str, data_dir: &Path) -> Result<RepoSource, String> {
    let _ = (repo, data_dir);
    Err("not yet".into())
}

/// `warren/<agent>/<conversation>`.
pub fn branch_name(agent: &str, conversation: &str) -> String {
    format!("warren/{agent}/{conversation}")
}
