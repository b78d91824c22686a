//! A conversation's workspace around its life: the lease and worktree made
//! at start, what a launch mounts and tells the CLI's git, the worktree put
//! away when the conversation is archived, and the diff. The git itself is
//! `crate::workspace`; the lease is the catalog's decision.

use std::path::{Path, PathBuf};

use console_api::{self as api, AgentWorkspace, WorkspaceMode};
use node_runtime::runtime::ExtraMount;
use node_store::catalog::{ConvEntry, Leased};
use node_store::events::AgentRecord;

use super::Conversations;
use crate::service::{NodeError, NodeResult};
use crate::workspace::repo::{self, RepoFacts};
use crate::workspace::{diff, hooks, spec};

/// The cap of `conversation.diff`'s patch when the caller names none.
pub const DIFF_DEFAULT_BYTES: usize = 1 << 20;
/// The most `max_bytes` may ask for.
pub const DIFF_MAX_BYTES: usize = 16 << 20;

/// What a new conversation will lease, worked out before the catalog lock
/// (git runs here).
pub(super) struct Planned {
    pub(super) lease: Leased,
    facts: RepoFacts,
    mode: WorkspaceMode,
}

/// What a launch adds for a conversation that has a workspace.
pub(super) struct ForLaunch {
    pub(super) cwd: PathBuf,
    pub(super) env: Vec<(String, String)>,
    pub(super) mounts: Vec<ExtraMount>,
    pub(super) run_as: Option<(u32, u32)>,
}

fn failed(what: &str, e: impl std::fmt::Display) -> NodeError {
    NodeError::Conflict(format!("workspace: {what}: {e}"))
}

impl Conversations {
    /// The hooks directory the node owns for `agent` (read-only in a guest).
    fn hooks_dir(&self, agent: &str) -> PathBuf {
        self.agent_dir(agent).join("git-hooks")
    }

    /// Plans the lease of new conversation `id` of `agent` (None: the agent
    /// has no workspace).
    pub(super) async fn plan_workspace(&self, agent: &AgentRecord, id: &str) -> NodeResult<Option<Planned>> {
        let Some(ws) = &agent.workspace else { return Ok(None) };
        let facts = repo::inspect(Path::new(&ws.repo))
            .await
            .map_err(|e| failed(&ws.repo, e))?;
        let lease = match ws.mode {
            WorkspaceMode::Worktree => {
                let baseline = repo::resolve_base(&facts, &ws.base)
                    .await
                    .map_err(|e| failed(&format!("base {:?}", ws.base), e))?;
                let root = self.worktrees_root();
                crate::workspace::agent::reachable_by(&root, facts.owner).map_err(|e| failed(&ws.repo, e))?;
                Leased {
                    path: root.join(&agent.name).join(id).display().to_string(),
                    branch: spec::branch_name(&agent.name, id),
                    baseline,
                }
            }
            WorkspaceMode::InPlace => Leased {
                path: facts.toplevel.display().to_string(),
                branch: facts.branch.clone().unwrap_or_else(|| "HEAD".into()),
                baseline: repo::head(&facts.toplevel, facts.owner)
                    .await
                    .map_err(|e| failed(&ws.repo, e))?,
            },
        };
        Ok(Some(Planned {
            lease,
            facts,
            mode: ws.mode,
        }))
    }

    /// After the lease is committed: the worktree, cut from the baseline (in
    /// place there is nothing to make). The hooks are written by every launch.
    pub(super) async fn make_workspace(&self, planned: &Planned) -> NodeResult<()> {
        if planned.mode == WorkspaceMode::Worktree {
            let l = &planned.lease;
            repo::add_worktree(&planned.facts, Path::new(&l.path), &l.branch, &l.baseline)
                .await
                .map_err(|e| failed(&format!("the worktree {}", l.path), e))?;
        }
        Ok(())
    }

    /// What a launch of conversation `c` adds: its cwd, its git's hooks and
    /// identity, and (for a guest) the mounts and the user to run as. A
    /// worktree removed by hand is made again on its branch.
    pub(super) async fn workspace_for_launch(
        &self,
        c: &ConvEntry,
        agent: &AgentRecord,
    ) -> NodeResult<Option<ForLaunch>> {
        let (Some(leased), Some(ws)) = (&c.workspace, &agent.workspace) else {
            return Ok(None);
        };
        let facts = repo::inspect(Path::new(&ws.repo))
            .await
            .map_err(|e| failed(&ws.repo, e))?;
        let path = PathBuf::from(&leased.path);
        let protected = (ws.mode == WorkspaceMode::Worktree).then_some(ws.base.as_str());
        let hooks_dir = self.hooks_dir(&agent.name);
        hooks::write(&hooks_dir, protected).map_err(|e| failed("the git hooks", e))?;
        if ws.mode == WorkspaceMode::Worktree {
            repo::restore_worktree(&facts, &path, &leased.branch)
                .await
                .map_err(|e| failed(&format!("the worktree {}", leased.path), e))?;
        }
        let env = hooks::env(&hooks_dir, &agent.name, &[&path, &facts.toplevel]);
        Ok(Some(ForLaunch {
            mounts: guest_mounts(ws, &facts, &path, &hooks_dir),
            run_as: (facts.owner.uid != 0).then_some((facts.owner.uid, facts.owner.gid)),
            cwd: path,
            env,
        }))
    }

    /// An archived conversation's worktree is removed (its uncommitted work
    /// committed onto its branch first; a branch with commits is kept). A
    /// system line says what happened.
    pub(super) async fn archive_workspace(&self, id: &str) {
        let found = {
            let cat = self.catalog.lock().await;
            cat.conversation(id).ok().and_then(|c| {
                let ws = cat.agent(&c.agent).ok()?.record.workspace.clone()?;
                Some((c.workspace.clone()?, ws))
            })
        };
        let Some((leased, ws)) = found else { return };
        if ws.mode != WorkspaceMode::Worktree {
            return;
        }
        let line = match repo::inspect(Path::new(&ws.repo)).await {
            Err(e) => format!("workspace: the repository could not be read to put the worktree away: {e}"),
            Ok(facts) => {
                match repo::archive_worktree(&facts, Path::new(&leased.path), &leased.branch, &leased.baseline).await {
                    Err(e) => format!("workspace: the worktree {} was not removed: {e}", leased.path),
                    Ok(a) => format!(
                        "workspace: worktree removed{}; branch {} {}",
                        if a.saved_uncommitted {
                            " (its uncommitted changes were committed onto the branch first)"
                        } else {
                            ""
                        },
                        leased.branch,
                        if a.kept_branch { "kept" } else { "deleted (no commits)" }
                    ),
                }
            }
        };
        tracing::info!(conversation = id, "{line}");
        let _ = self.transcripts.append(id, "system", "lifecycle", line).await;
    }

    /// `conversation.diff`.
    pub async fn conversation_diff(&self, p: api::ConversationDiff) -> NodeResult<api::Diff> {
        let max = match p.max_bytes {
            None => DIFF_DEFAULT_BYTES,
            Some(n) if n as usize > DIFF_MAX_BYTES || n == 0 => {
                return Err(NodeError::Invalid(format!(
                    "max_bytes: {n} is outside 1..={DIFF_MAX_BYTES}"
                )));
            }
            Some(n) => n as usize,
        };
        let (leased, ws) = {
            let cat = self.catalog.lock().await;
            let c = cat.conversation(&p.conversation)?;
            let ws = cat.agent(&c.agent)?.record.workspace.clone();
            match (c.workspace.clone(), ws) {
                (Some(l), Some(ws)) => (l, ws),
                _ => {
                    return Err(NodeError::Conflict(format!(
                        "conversation {} has no workspace (its agent {:?} was created without one)",
                        p.conversation, c.agent
                    )));
                }
            }
        };
        let facts = repo::inspect(Path::new(&ws.repo))
            .await
            .map_err(|e| failed(&ws.repo, e))?;
        diff::diff(
            &facts.toplevel,
            Path::new(&leased.path),
            &leased.branch,
            &leased.baseline,
            facts.owner,
            max,
        )
        .await
        .map_err(|e| failed("diff", e))
    }
}

/// A guest's mounts for a workspace: the worktree (or the repository in
/// place) and git's own directory writable, with its config and hooks and
/// the node's hooks read-only over them (the agent cannot plant a hook or a
/// config the owner's git would run on the host).
fn guest_mounts(ws: &AgentWorkspace, facts: &RepoFacts, path: &Path, hooks_dir: &Path) -> Vec<ExtraMount> {
    let rw = |p: &Path| ExtraMount {
        path: p.to_path_buf(),
        read_only: false,
    };
    let ro = |p: &Path| ExtraMount {
        path: p.to_path_buf(),
        read_only: true,
    };
    let mut out = vec![rw(path)];
    if ws.mode == WorkspaceMode::Worktree && !facts.common_dir.starts_with(path) {
        out.push(rw(&facts.common_dir));
    }
    for protected in [facts.common_dir.join("config"), facts.common_dir.join("hooks")] {
        if protected.exists() {
            out.push(ro(&protected));
        }
    }
    out.push(ro(hooks_dir));
    out
}

/// `conversation.get`'s workspace with its head read from git now.
pub(crate) async fn with_head(mut w: api::Conversation) -> api::Conversation {
    if let Some(ws) = &mut w.workspace
        && let Ok(owner) = crate::workspace::git::owner_of(Path::new(&ws.path))
    {
        ws.head = repo::head(Path::new(&ws.path), owner).await.ok();
    }
    w
}
