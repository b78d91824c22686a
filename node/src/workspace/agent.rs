//! `agent.create {workspace}`: what the caller named, checked on this node
//! and resolved into the record the agent keeps (the repository's top level,
//! the base branch), or an error naming `workspace.repo` / `workspace.base`
//! in git's own words. Nothing is stored by a refusal; a clone made for a
//! refused agent is removed.

use std::path::Path;

use console_api::{AgentWorkspace, WorkspaceSpec};

use super::address;
use super::repo::{self, RepoFacts};
use super::spec::{self, RepoSource};

/// Resolves `ask` for an agent whose own directory is `agent_dir`. `docker`:
/// its guests run unprivileged, so a repository owned by root is refused.
pub async fn resolve(
    ask: &WorkspaceSpec,
    data_dir: &Path,
    agent_dir: &Path,
    worktrees: &Path,
    docker: bool,
) -> Result<AgentWorkspace, String> {
    let (facts, url) = match spec::classify(&ask.repo, data_dir).map_err(|e| format!("workspace.repo: {e}"))? {
        RepoSource::Path(path) => {
            let facts = repo::inspect(&path)
                .await
                .map_err(|e| format!("workspace.repo: {}: {}", path.display(), e.stderr))?;
            (facts, None)
        }
        RepoSource::Url(url) => {
            address::check_url(&url)
                .await
                .map_err(|e| format!("workspace.repo: {e}"))?;
            let dest = agent_dir.join("repo");
            if dest.exists() {
                return Err(format!(
                    "workspace.repo: {} exists already (left by an earlier agent of this name?): remove it first",
                    dest.display()
                ));
            }
            repo::clone(&url, &dest)
                .await
                .map_err(|e| format!("workspace.repo: cannot clone {url}: {}", e.stderr))?;
            match repo::inspect(&dest).await {
                Ok(facts) => (facts, Some(url)),
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dest);
                    return Err(format!("workspace.repo: the clone of {url}: {}", e.stderr));
                }
            }
        }
    };
    let done = match (ask.mode, reachable_by(worktrees, facts.owner)) {
        (console_api::WorkspaceMode::Worktree, Err(e)) => Err(format!("workspace.repo: {e}")),
        // git names the top level with symbolic links resolved: so is the
        // data dir it is compared with (a link into the data dir is caught).
        _ => {
            let real = std::fs::canonicalize(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
            check_and_base(ask, &facts, &real, docker).await
        }
    };
    if done.is_err()
        && url.is_some()
        && let Err(e) = std::fs::remove_dir_all(&facts.toplevel)
    {
        tracing::warn!(path = %facts.toplevel.display(), error = %e, "could not remove a refused agent's clone");
    }
    let base = done?;
    Ok(AgentWorkspace {
        repo: facts.toplevel.display().to_string(),
        base,
        mode: ask.mode,
        url,
    })
}

/// The repository's top level is checked again (a path inside a repository
/// names it), then the base branch.
async fn check_and_base(
    ask: &WorkspaceSpec,
    facts: &RepoFacts,
    data_dir: &Path,
    docker: bool,
) -> Result<String, String> {
    let top = facts.toplevel.display().to_string();
    if ask.repo.contains("://") || !ask.repo.starts_with('/') {
        // A clone lives in the agent's home by design.
    } else if let Err(e) = spec::classify(&top, data_dir) {
        return Err(format!("workspace.repo: {e}"));
    }
    if docker && facts.owner.uid == 0 {
        return Err(format!(
            "workspace.repo: {top} is owned by root; guests run as an unprivileged user and could not write it: give the repository to the user who works on it (its owner is who the guest runs as)"
        ));
    }
    let base = match &ask.base {
        Some(b) => b.clone(),
        None => facts.branch.clone().ok_or_else(|| {
            format!("workspace.base: {top} has a detached HEAD (no current branch): name the branch to work from")
        })?,
    };
    repo::resolve_base(facts, &base)
        .await
        .map_err(|e| format!("workspace.base: {base:?}: {}", e.stderr))?;
    Ok(base)
}

/// Whether `owner` (who the node's git and the guest act as) can reach
/// `root`, where worktrees are made: every existing ancestor must let it
/// pass. The node running as that user (or as root for a root-owned
/// repository) reaches anything it made.
pub fn reachable_by(root: &Path, owner: super::git::Owner) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    if super::git::run_as(owner).is_none() {
        return Ok(());
    }
    for dir in root.ancestors() {
        let Ok(m) = std::fs::metadata(dir) else { continue };
        let mode = m.mode();
        let passes = if m.uid() == owner.uid {
            mode & 0o100 != 0
        } else if m.gid() == owner.gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !passes {
            return Err(format!(
                "the repository is owned by uid {}, who cannot reach {} (worktrees are made under {}): set [workspaces] root in warren.toml to a directory that user can reach",
                owner.uid,
                dir.display(),
                root.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::git::Owner;

    #[test]
    fn a_private_directory_on_the_way_is_named() {
        let tmp = tempfile::tempdir().expect("tmp");
        let private = tmp.path().join("private");
        let root = private.join("worktrees");
        std::fs::create_dir_all(&root).expect("dirs");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        let someone = Owner { uid: 4242, gid: 4242 };
        if crate::workspace::git::node_is_root() {
            let e = reachable_by(&root, someone).expect_err("private");
            assert!(
                e.contains(&private.display().to_string()) && e.contains("[workspaces] root"),
                "{e}"
            );
            std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o711)).expect("chmod");
            reachable_by(&root, someone).expect("passable");
        } else {
            reachable_by(&root, someone).expect("a node that is not root runs git as itself");
        }
    }
}
