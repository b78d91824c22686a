//! Workspaces: an agent's real git repository, each conversation on its own
//! worktree and branch (or in the repository itself under a lease), the
//! hooks the node owns that keep pushes and the base branch out of reach,
//! and the diff against the baseline.
//!
//! `spec` is pure (what a `repo` names, branch names, which paths overlap);
//! `git` runs the real `git` (argv, bounded time, its stderr quoted in
//! errors, as the repository's owner); `repo` and `diff` are the operations
//! the node needs; `hooks` writes the hooks.

pub mod address;
pub mod agent;
pub mod diff;
pub mod git;
pub mod hooks;
pub mod repo;
pub mod spec;

pub use git::GitError;

#[cfg(test)]
mod tests;
