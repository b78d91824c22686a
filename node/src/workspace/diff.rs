//! A workspace's changes against its baseline: committed and uncommitted
//! (untracked files too), without touching the worktree's own index.

use std::path::Path;

use super::git::{GitError, Owner};

/// The diff of worktree `path` against `baseline`, the patch cut at
/// `max_bytes`. When the worktree is gone (archived), `branch` is diffed
/// from `repo` instead (committed changes only).
pub async fn diff(
    repo: &Path,
    path: &Path,
    branch: &str,
    baseline: &str,
    owner: Owner,
    max_bytes: usize,
) -> Result<console_api::Diff, GitError> {
    let _ = (repo, path, branch, baseline, owner, max_bytes);
    Err(GitError { doing: "diff".into(), stderr: "not yet".into() })
}
