//! The repository operations a node needs: inspect a repository, resolve a
//! base, clone a URL once, add / restore / archive a conversation's
//! worktree, read its head.

use std::path::{Path, PathBuf};

use super::git::{GitError, Owner};

/// What `agent.create` learns of a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoFacts {
    /// `git rev-parse --show-toplevel`, absolute.
    pub toplevel: PathBuf,
    /// The git common directory (`<toplevel>/.git` for an ordinary repo).
    pub common_dir: PathBuf,
    /// The branch checked out now (None: detached HEAD).
    pub branch: Option<String>,
    pub owner: Owner,
}

/// How an archived worktree was put away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Archived {
    /// Uncommitted changes were committed onto the branch first.
    pub saved_uncommitted: bool,
    /// The branch had commits past the baseline and was kept (else deleted).
    pub kept_branch: bool,
}

/// A git repository at `path` (not bare, with a work tree).
pub async fn inspect(path: &Path) -> Result<RepoFacts, GitError> {
    let _ = path;
    Err(GitError { doing: "inspect".into(), stderr: "not yet".into() })
}

/// The commit a branch names (`refs/heads/<base>`); an error in git's words.
pub async fn resolve_base(repo: &RepoFacts, base: &str) -> Result<String, GitError> {
    let _ = (repo, base);
    Err(GitError { doing: "resolve".into(), stderr: "not yet".into() })
}

/// Clones `url` into `dest` (which must not exist); removes what it made on
/// failure.
pub async fn clone(url: &str, dest: &Path) -> Result<(), GitError> {
    let _ = (url, dest);
    Err(GitError { doing: "clone".into(), stderr: "not yet".into() })
}

/// Creates worktree `path` on new branch `branch` cut from `base`; returns
/// the baseline commit. Idempotent: a worktree already there on `branch` is
/// kept and its baseline returned as `base_commit` recorded before.
pub async fn add_worktree(repo: &RepoFacts, path: &Path, branch: &str, base: &str) -> Result<String, GitError> {
    let _ = (repo, path, branch, base);
    Err(GitError { doing: "worktree".into(), stderr: "not yet".into() })
}

/// Makes sure worktree `path` exists on `branch` (re-adds it when its
/// directory is gone, e.g. removed by hand).
pub async fn restore_worktree(repo: &RepoFacts, path: &Path, branch: &str) -> Result<(), GitError> {
    let _ = (repo, path, branch);
    Ok(())
}

/// The commit checked out in `path`.
pub async fn head(path: &Path, owner: Owner) -> Result<String, GitError> {
    let _ = (path, owner);
    Err(GitError { doing: "head".into(), stderr: "not yet".into() })
}

/// Removes worktree `path`: uncommitted changes are first committed onto
/// `branch` (so nothing is lost); the branch is kept when it has commits
/// past `baseline`, else deleted.
pub async fn archive_worktree(repo: &RepoFacts, path: &Path, branch: &str, baseline: &str) -> Result<Archived, GitError> {
    let _ = (repo, path, branch, baseline);
    Err(GitError { doing: "archive".into(), stderr: "not yet".into() })
}
