//! The repository operations a node needs: inspect a repository, resolve a
//! base, clone a URL once, add / restore / archive a conversation's
//! worktree, read its head.

use std::path::{Path, PathBuf};

use super::git::{CLONE_TIMEOUT, Git, GitError, Owner, chown_for, filter_overrides, owner_of};

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

/// The message of the commit that saves a worktree's uncommitted work.
pub const ARCHIVE_MESSAGE: &str = "warren: uncommitted work when the conversation was archived";

fn io_err(doing: &str, path: &Path, e: &std::io::Error) -> GitError {
    GitError::new(doing, format!("{}: {e}", path.display()))
}

/// A git repository at `path` (not bare, with a work tree).
pub async fn inspect(path: &Path) -> Result<RepoFacts, GitError> {
    let meta = std::fs::metadata(path).map_err(|e| io_err("reading the repository", path, &e))?;
    if !meta.is_dir() {
        return Err(GitError::new(
            "reading the repository",
            format!("{} is not a directory", path.display()),
        ));
    }
    let first = owner_of(path).map_err(|e| io_err("reading the repository", path, &e))?;
    let kind = Git::new("git rev-parse")
        .dir(path)
        .owner(first)
        .args(["rev-parse", "--is-bare-repository", "--is-inside-git-dir"])
        .text()
        .await?;
    let mut lines = kind.lines();
    if lines.next() == Some("true") {
        return Err(GitError::new(
            "git rev-parse",
            format!(
                "{} is a bare repository (it has no work tree to check out)",
                path.display()
            ),
        ));
    }
    if lines.next() == Some("true") {
        return Err(GitError::new(
            "git rev-parse",
            format!("{} is inside a .git directory, not a work tree", path.display()),
        ));
    }
    let where_ = Git::new("git rev-parse")
        .dir(path)
        .owner(first)
        .args([
            "rev-parse",
            "--path-format=absolute",
            "--show-toplevel",
            "--git-common-dir",
        ])
        .text()
        .await?;
    let mut lines = where_.lines();
    let (Some(toplevel), Some(common_dir)) = (lines.next(), lines.next()) else {
        return Err(GitError::new("git rev-parse", format!("unexpected output: {where_:?}")));
    };
    let toplevel = PathBuf::from(toplevel);
    let owner = owner_of(&toplevel).map_err(|e| io_err("reading the repository", &toplevel, &e))?;
    let branch = current_branch(&toplevel, owner).await?;
    Ok(RepoFacts {
        toplevel,
        common_dir: PathBuf::from(common_dir),
        branch,
        owner,
    })
}

/// The branch checked out in `dir` (None: detached).
async fn current_branch(dir: &Path, owner: Owner) -> Result<Option<String>, GitError> {
    let out = Git::new("git symbolic-ref")
        .dir(dir)
        .owner(owner)
        .args(["symbolic-ref", "--quiet", "HEAD"])
        .output()
        .await?;
    if !out.success {
        return match out.code {
            Some(1) => Ok(None),
            _ => Err(GitError::new("git symbolic-ref", out.stderr)),
        };
    }
    let full = out.text();
    Ok(Some(
        full.strip_prefix("refs/heads/").map_or(full.clone(), str::to_string),
    ))
}

/// Refuses a branch name git would not accept (or one that reads as an
/// option or a `@{-N}` shorthand).
async fn check_branch_name(repo: &RepoFacts, name: &str) -> Result<(), GitError> {
    let doing = "git check-ref-format";
    if name.is_empty() || name.starts_with('-') {
        return Err(GitError::new(doing, format!("{name:?} is not a valid branch name")));
    }
    let out = Git::new(doing)
        .dir(&repo.toplevel)
        .owner(repo.owner)
        .args(["check-ref-format", "--branch", name])
        .output()
        .await?;
    if !out.success {
        let words = if out.stderr.is_empty() {
            format!("{name:?} is not a valid branch name")
        } else {
            out.stderr
        };
        return Err(GitError::new(doing, words));
    }
    if out.text() != name {
        return Err(GitError::new(doing, format!("{name:?} is not a plain branch name")));
    }
    Ok(())
}

/// The commit a branch names (`refs/heads/<base>`); an error in git's words.
pub async fn resolve_base(repo: &RepoFacts, base: &str) -> Result<String, GitError> {
    check_branch_name(repo, base).await?;
    let out = Git::new("git rev-parse")
        .dir(&repo.toplevel)
        .owner(repo.owner)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("refs/heads/{base}^{{commit}}"))
        .output()
        .await?;
    let commit = out.text();
    if !out.success || commit.is_empty() {
        let words = if out.stderr.is_empty() {
            format!("there is no branch {base} in {}", repo.toplevel.display())
        } else {
            out.stderr
        };
        return Err(GitError::new("git rev-parse", words));
    }
    Ok(commit)
}

/// Clones `url` into `dest` (which must not exist); removes what it made on
/// failure.
pub async fn clone(url: &str, dest: &Path) -> Result<(), GitError> {
    let doing = "git clone";
    if dest.exists() {
        return Err(GitError::new(doing, format!("{} already exists", dest.display())));
    }
    let allow = [
        "protocol.allow=never",
        "protocol.https.allow=always",
        "protocol.http.allow=always",
        "protocol.ssh.allow=always",
        "protocol.git.allow=always",
        "protocol.file.allow=always",
        "http.followRedirects=false",
    ];
    let mut git = Git::new(doing).timeout(CLONE_TIMEOUT);
    for c in allow {
        git = git.args(["-c", c]);
    }
    let result = git
        .args(["clone", "--no-hardlinks", "--quiet", "--", url])
        .arg(dest)
        .run()
        .await;
    if let Err(e) = result {
        if dest.exists() {
            let _ = std::fs::remove_dir_all(dest);
        }
        return Err(e);
    }
    Ok(())
}

/// Creates `dir` and its missing ancestors, each owned by `owner` when git
/// runs as the owner.
fn make_dirs(dir: &Path, owner: Owner) -> Result<(), GitError> {
    let doing = "creating the worktree's directory";
    let mut missing = Vec::new();
    let mut at = Some(dir);
    while let Some(p) = at {
        if p.exists() {
            break;
        }
        missing.push(p.to_path_buf());
        at = p.parent();
    }
    std::fs::create_dir_all(dir).map_err(|e| io_err(doing, dir, &e))?;
    for p in missing.iter().rev() {
        chown_for(p, owner).map_err(|e| io_err(doing, p, &e))?;
    }
    Ok(())
}

/// The branch worktree `path` has checked out, when `path` is a worktree's
/// top level (None: not a worktree, or detached).
async fn worktree_branch(path: &Path, owner: Owner) -> Option<String> {
    let top = Git::new("git rev-parse")
        .dir(path)
        .owner(owner)
        .args(["rev-parse", "--show-toplevel"])
        .text()
        .await
        .ok()?;
    // Compared resolved: git prints the real path, symlinks followed.
    let same = match (std::fs::canonicalize(&top), std::fs::canonicalize(path)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        return None;
    }
    current_branch(path, owner).await.ok().flatten()
}

/// Creates worktree `path` on new branch `branch` cut from `base`; returns
/// the baseline commit. Idempotent: a worktree already there on `branch` is
/// kept and its baseline returned as `base_commit` recorded before.
pub async fn add_worktree(repo: &RepoFacts, path: &Path, branch: &str, base: &str) -> Result<String, GitError> {
    if path.exists() && worktree_branch(path, repo.owner).await.as_deref() == Some(branch) {
        let merge_base = Git::new("git merge-base")
            .dir(path)
            .owner(repo.owner)
            .args(["merge-base", "--end-of-options", base, "HEAD"])
            .text()
            .await;
        return Ok(merge_base
            .ok()
            .filter(|m| !m.is_empty())
            .unwrap_or_else(|| base.to_string()));
    }
    check_branch_name(repo, branch).await?;
    if let Some(parent) = path.parent() {
        make_dirs(parent, repo.owner)?;
    }
    let filters = filter_overrides(&repo.toplevel, repo.owner, &[]).await?;
    Git::new("git worktree add")
        .dir(&repo.toplevel)
        .owner(repo.owner)
        .envs(&filters)
        .args(["worktree", "add", "--quiet", "--no-track", "-b", branch])
        .arg(path)
        .arg(base)
        .run()
        .await?;
    head(path, repo.owner).await
}

/// Makes sure worktree `path` exists on `branch` (re-adds it when its
/// directory is gone, e.g. removed by hand).
pub async fn restore_worktree(repo: &RepoFacts, path: &Path, branch: &str) -> Result<(), GitError> {
    if path.exists() {
        return Ok(());
    }
    prune(repo).await?;
    check_branch_name(repo, branch).await?;
    if let Some(parent) = path.parent() {
        make_dirs(parent, repo.owner)?;
    }
    let filters = filter_overrides(&repo.toplevel, repo.owner, &[]).await?;
    Git::new("git worktree add")
        .dir(&repo.toplevel)
        .owner(repo.owner)
        .envs(&filters)
        .args(["worktree", "add", "--quiet"])
        .arg(path)
        .arg(branch)
        .run()
        .await?;
    Ok(())
}

async fn prune(repo: &RepoFacts) -> Result<(), GitError> {
    Git::new("git worktree prune")
        .dir(&repo.toplevel)
        .owner(repo.owner)
        .args(["worktree", "prune"])
        .run()
        .await?;
    Ok(())
}

/// The commit checked out in `path`.
pub async fn head(path: &Path, owner: Owner) -> Result<String, GitError> {
    Git::new("git rev-parse")
        .dir(path)
        .owner(owner)
        .args(["rev-parse", "--verify", "HEAD"])
        .text()
        .await
}

/// Commits everything uncommitted in worktree `path` (untracked files too)
/// as `who` (name, email), its hooks skipped; false: there was nothing to commit.
pub async fn commit_all(path: &Path, owner: Owner, message: &str, who: (&str, &str)) -> Result<bool, GitError> {
    let filters = filter_overrides(path, owner, &[]).await?;
    let status = Git::new("git status")
        .dir(path)
        .owner(owner)
        .envs(&filters)
        .args(["status", "--porcelain", "-z", "--untracked-files=all"])
        .stdout_cap(1)
        .run()
        .await?;
    if status.stdout.is_empty() {
        return Ok(false);
    }
    let (name, email) = who;
    let env = [
        ("GIT_AUTHOR_NAME", name),
        ("GIT_AUTHOR_EMAIL", email),
        ("GIT_COMMITTER_NAME", name),
        ("GIT_COMMITTER_EMAIL", email),
    ];
    let mut add = Git::new("git add")
        .dir(path)
        .owner(owner)
        .envs(&filters)
        .args(["add", "-A"]);
    let mut commit = Git::new("git commit").dir(path).owner(owner).envs(&filters).args([
        "commit",
        "--no-verify",
        "--quiet",
        "-m",
        message,
    ]);
    for (k, v) in env {
        add = add.env(k, v);
        commit = commit.env(k, v);
    }
    add.run().await?;
    commit.run().await?;
    Ok(true)
}

/// A task's local commit boundary: worktree `path` must have `branch`
/// checked out and `baseline` among its ancestors; what is uncommitted is
/// committed with `message` as `who`. Answers the head it recorded.
pub async fn commit_task(
    path: &Path,
    owner: Owner,
    branch: &str,
    baseline: &str,
    message: &str,
    who: (&str, &str),
) -> Result<String, GitError> {
    let on = worktree_branch(path, owner).await;
    if on.as_deref() != Some(branch) {
        return Err(GitError::new(
            "committing the task",
            format!(
                "{} has {} checked out, not the task's branch {branch}",
                path.display(),
                on.as_deref().unwrap_or("no branch")
            ),
        ));
    }
    let ancestor = Git::new("git merge-base")
        .dir(path)
        .owner(owner)
        .args(["merge-base", "--is-ancestor", "--end-of-options", baseline, "HEAD"])
        .output()
        .await?;
    if !ancestor.success {
        return Err(GitError::new(
            "committing the task",
            format!("the baseline {baseline} is no longer an ancestor of the branch's head: its history was rewritten"),
        ));
    }
    commit_all(path, owner, message, who).await?;
    head(path, owner).await
}

/// Removes worktree `path`: uncommitted changes are first committed onto
/// `branch` (so nothing is lost); the branch is kept when it has commits
/// past `baseline`, else deleted.
pub async fn archive_worktree(
    repo: &RepoFacts,
    path: &Path,
    branch: &str,
    baseline: &str,
) -> Result<Archived, GitError> {
    let owner = repo.owner;
    let mut saved_uncommitted = false;
    if path.exists() {
        let on = worktree_branch(path, owner).await;
        if on.as_deref() != Some(branch) {
            return Err(GitError::new(
                "archiving the worktree",
                format!(
                    "{} has {} checked out, not {branch}; it was left in place so nothing is lost",
                    path.display(),
                    on.map_or("no branch (or is not a worktree)".to_string(), |b| format!(
                        "branch {b}"
                    ))
                ),
            ));
        }
        saved_uncommitted = commit_all(path, owner, ARCHIVE_MESSAGE, ("warren", "warren@localhost")).await?;
        Git::new("git worktree remove")
            .dir(&repo.toplevel)
            .owner(owner)
            .args(["worktree", "remove", "--force"])
            .arg(path)
            .run()
            .await?;
    } else {
        prune(repo).await?;
    }
    let tip = Git::new("git rev-parse")
        .dir(&repo.toplevel)
        .owner(owner)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("refs/heads/{branch}"))
        .output()
        .await?;
    if !tip.success {
        return Ok(Archived {
            saved_uncommitted,
            kept_branch: false,
        });
    }
    let count = Git::new("git rev-list")
        .dir(&repo.toplevel)
        .owner(owner)
        .args(["rev-list", "--count", "--end-of-options"])
        .arg(format!("{baseline}..refs/heads/{branch}"))
        .text()
        .await?;
    if count.trim() != "0" {
        return Ok(Archived {
            saved_uncommitted,
            kept_branch: true,
        });
    }
    Git::new("git branch -D")
        .dir(&repo.toplevel)
        .owner(owner)
        .args(["branch", "-D", "--", branch])
        .run()
        .await?;
    Ok(Archived {
        saved_uncommitted,
        kept_branch: false,
    })
}
