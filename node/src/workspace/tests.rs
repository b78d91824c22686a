//! Tests with real git repositories in temporary directories.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::git::{Owner, owner_of};
use super::repo::{self, RepoFacts};
use super::{diff, hooks};

/// Plain git for setting repositories up (not the hardened runner): the
/// given env on top of a clean one, `safe.directory=*` so root may set up a
/// repository another uid owns.
fn git_env(dir: &Path, args: &[&str], env: &[(String, String)]) -> std::process::Output {
    let mut cmd = Command::new("git");
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", "/nonexistent")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .args(["-c", "safe.directory=*", "-C"])
        .arg(dir)
        .args(args);
    cmd.output().expect("git runs")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_env(dir, args, &[]);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn write(path: &Path, text: &str) {
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
}

/// A repository on `main` with one commit of `a.txt` and `dir/b.txt`.
fn new_repo(root: &Path, name: &str) -> PathBuf {
    let repo = root.join(name);
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    write(&repo.join("a.txt"), "one\ntwo\nthree\n");
    write(&repo.join("dir/b.txt"), "bee\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "first"]);
    repo
}

fn tmp() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    // Another uid must be able to reach what is made inside.
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).expect("chmod");
    dir
}

async fn facts(repo: &Path) -> RepoFacts {
    repo::inspect(repo).await.expect("inspect")
}

#[tokio::test]
async fn inspect_reports_toplevel_common_dir_branch_and_owner() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let f = facts(&repo.join("dir")).await;
    assert_eq!(f.toplevel, repo);
    assert_eq!(f.common_dir, repo.join(".git"));
    assert_eq!(f.branch.as_deref(), Some("main"));
    assert_eq!(f.owner, owner_of(&repo).expect("owner"));

    git(&repo, &["checkout", "-q", "--detach"]);
    assert_eq!(facts(&repo).await.branch, None);
}

#[tokio::test]
async fn inspect_refuses_what_is_not_a_work_tree() {
    let root = tmp();
    let err = repo::inspect(&root.path().join("missing")).await.expect_err("missing");
    assert!(err.to_string().contains("No such file or directory"), "{err}");

    let plain = root.path().join("plain");
    std::fs::create_dir(&plain).expect("mkdir");
    let err = repo::inspect(&plain).await.expect_err("not a repo");
    assert!(err.stderr.contains("not a git repository"), "{err}");

    let bare = root.path().join("bare.git");
    std::fs::create_dir(&bare).expect("mkdir");
    git(&bare, &["init", "-q", "--bare"]);
    let err = repo::inspect(&bare).await.expect_err("bare");
    assert!(err.stderr.contains("is a bare repository"), "{err}");

    let repo = new_repo(root.path(), "r");
    let err = repo::inspect(&repo.join(".git")).await.expect_err("git dir");
    assert!(err.stderr.contains("inside a .git directory"), "{err}");
}

#[tokio::test]
async fn resolve_base_names_a_missing_or_bad_branch() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let f = facts(&repo).await;
    assert_eq!(
        repo::resolve_base(&f, "main").await.expect("main"),
        git(&repo, &["rev-parse", "main"])
    );
    let err = repo::resolve_base(&f, "nope").await.expect_err("missing");
    assert_eq!(err.stderr, format!("there is no branch nope in {}", repo.display()));
    for bad in ["bad..name", "-x", "@{-1}", "a b", ""] {
        let err = repo::resolve_base(&f, bad).await.expect_err(bad);
        assert_eq!(err.doing, "git check-ref-format", "{bad}: {err}");
    }
    // A tag of the same name is not a branch.
    git(&repo, &["tag", "v1"]);
    assert!(repo::resolve_base(&f, "v1").await.is_err());
}

#[tokio::test]
async fn add_worktree_cuts_a_branch_and_leaves_the_repo_alone() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    write(&repo.join("a.txt"), "owner's own edit\n");
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("data/wt/c1");
    let got = repo::add_worktree(&f, &wt, "warren/a/c1", &base).await.expect("add");
    assert_eq!(got, base);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt")).expect("read"),
        "one\ntwo\nthree\n"
    );
    assert_eq!(git(&wt, &["symbolic-ref", "HEAD"]), "refs/heads/warren/a/c1");
    assert_eq!(git(&repo, &["symbolic-ref", "HEAD"]), "refs/heads/main");
    assert_eq!(git(&repo, &["status", "--porcelain"]), "M a.txt");
    assert_eq!(repo::head(&wt, f.owner).await.expect("head"), base);

    // Again: kept as it is.
    write(&wt.join("new.txt"), "work\n");
    git(&wt, &["add", "new.txt"]);
    git(&wt, &["commit", "-q", "-m", "work"]);
    let again = repo::add_worktree(&f, &wt, "warren/a/c1", &base).await.expect("again");
    assert_eq!(again, base);
    let link = root.path().join("link");
    std::os::unix::fs::symlink(root.path().join("data"), &link).expect("symlink");
    let again = repo::add_worktree(&f, &link.join("wt/c1"), "warren/a/c1", &base)
        .await
        .expect("via a symlink");
    assert_eq!(again, base);
    assert!(wt.join("new.txt").exists());

    // The same path for another branch, or a taken branch: git's words.
    let err = repo::add_worktree(&f, &wt, "warren/a/c2", &base)
        .await
        .expect_err("taken path");
    assert!(err.stderr.contains("already exists"), "{err}");
    let err = repo::add_worktree(&f, &root.path().join("data/wt/c3"), "warren/a/c1", &base)
        .await
        .expect_err("taken");
    assert!(err.stderr.contains("already exists"), "{err}");
}

#[tokio::test]
async fn restore_re_adds_a_removed_worktree() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("wt");
    repo::add_worktree(&f, &wt, "warren/a/c", &base).await.expect("add");
    write(&wt.join("x"), "x\n");
    git(&wt, &["add", "x"]);
    git(&wt, &["commit", "-q", "-m", "x"]);
    repo::restore_worktree(&f, &wt, "warren/a/c")
        .await
        .expect("present: nothing to do");
    std::fs::remove_dir_all(&wt).expect("rm");
    repo::restore_worktree(&f, &wt, "warren/a/c").await.expect("restore");
    assert_eq!(std::fs::read_to_string(wt.join("x")).expect("read"), "x\n");
    assert_eq!(git(&wt, &["symbolic-ref", "HEAD"]), "refs/heads/warren/a/c");
}

#[tokio::test]
async fn archive_saves_uncommitted_work_and_keeps_or_drops_the_branch() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");

    // Uncommitted and untracked: committed, branch kept.
    let wt = root.path().join("wt1");
    repo::add_worktree(&f, &wt, "warren/a/one", &base).await.expect("add");
    write(&wt.join("a.txt"), "changed\n");
    write(&wt.join("untracked/u.txt"), "u\n");
    let a = repo::archive_worktree(&f, &wt, "warren/a/one", &base)
        .await
        .expect("archive");
    assert_eq!(
        a,
        repo::Archived {
            saved_uncommitted: true,
            kept_branch: true
        }
    );
    assert!(!wt.exists());
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%an <%ae> %s", "warren/a/one"]),
        format!("warren <warren@localhost> {}", repo::ARCHIVE_MESSAGE)
    );
    assert_eq!(git(&repo, &["show", "warren/a/one:untracked/u.txt"]), "u");

    // Nothing done: the branch goes.
    let wt = root.path().join("wt2");
    repo::add_worktree(&f, &wt, "warren/a/two", &base).await.expect("add");
    let a = repo::archive_worktree(&f, &wt, "warren/a/two", &base)
        .await
        .expect("archive");
    assert_eq!(
        a,
        repo::Archived {
            saved_uncommitted: false,
            kept_branch: false
        }
    );
    assert_eq!(git(&repo, &["branch", "--list", "warren/a/two"]), "");

    // Committed only; the directory already removed by hand.
    let wt = root.path().join("wt3");
    repo::add_worktree(&f, &wt, "warren/a/three", &base).await.expect("add");
    write(&wt.join("c"), "c\n");
    git(&wt, &["add", "c"]);
    git(&wt, &["commit", "-q", "-m", "c"]);
    std::fs::remove_dir_all(&wt).expect("rm");
    let a = repo::archive_worktree(&f, &wt, "warren/a/three", &base)
        .await
        .expect("archive");
    assert_eq!(
        a,
        repo::Archived {
            saved_uncommitted: false,
            kept_branch: true
        }
    );
    assert_eq!(
        git(&repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );

    // A worktree switched to another branch is left in place.
    let wt = root.path().join("wt4");
    repo::add_worktree(&f, &wt, "warren/a/four", &base).await.expect("add");
    git(&wt, &["checkout", "-q", "-b", "elsewhere"]);
    write(&wt.join("keep"), "k\n");
    let err = repo::archive_worktree(&f, &wt, "warren/a/four", &base)
        .await
        .expect_err("wrong branch");
    assert!(err.stderr.contains("branch elsewhere"), "{err}");
    assert!(wt.join("keep").exists());
}

#[tokio::test]
async fn clone_copies_a_repo_and_cleans_up_after_a_failure() {
    let root = tmp();
    let src = new_repo(root.path(), "src");
    let dest = root.path().join("home/repo");
    std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
    repo::clone(&format!("file://{}", src.display()), &dest)
        .await
        .expect("clone");
    assert_eq!(
        std::fs::read_to_string(dest.join("a.txt")).expect("read"),
        "one\ntwo\nthree\n"
    );
    let err = repo::clone("file:///x", &dest).await.expect_err("exists");
    assert!(err.stderr.contains("already exists"), "{err}");

    let dest2 = root.path().join("home/repo2");
    let err = repo::clone(&format!("file://{}", root.path().join("nope").display()), &dest2)
        .await
        .expect_err("no repo");
    assert!(err.stderr.contains("does not appear to be a git repository"), "{err}");
    assert!(!dest2.exists());

    let marker = root.path().join("pwned");
    let err = repo::clone(&format!("ext::sh -c touch% {}", marker.display()), &dest2)
        .await
        .expect_err("ext");
    assert!(err.stderr.contains("not allowed"), "{err}");
    assert!(!marker.exists() && !dest2.exists());
}

#[tokio::test]
async fn diff_covers_committed_uncommitted_and_untracked_without_touching_the_index() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    write(&repo.join("gone.txt"), "bye\n");
    write(&repo.join("moved.txt"), "1\n2\n3\n4\n5\n6\n");
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "more"]);
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("wt");
    repo::add_worktree(&f, &wt, "warren/a/c", &base).await.expect("add");

    write(&wt.join("committed.txt"), "c\n");
    git(&wt, &["add", "committed.txt"]);
    git(&wt, &["commit", "-q", "-m", "c"]);
    write(&wt.join("a.txt"), "one\nTWO\nthree\nfour\n");
    std::fs::remove_file(wt.join("gone.txt")).expect("rm");
    git(&wt, &["mv", "moved.txt", "name with spaces é.txt"]);
    write(&wt.join("untracked.txt"), "u\n");
    write(&wt.join("star*.txt"), "glob\n");
    std::fs::rename(wt.join("dir/b.txt"), wt.join("dir/b2.txt")).expect("mv");
    std::fs::write(wt.join("bin.dat"), b"\0\x01\x02").expect("write");
    let status_before = git(&wt, &["status", "--porcelain"]);
    let index = PathBuf::from(git(
        &wt,
        &["rev-parse", "--path-format=absolute", "--git-path", "index"],
    ));
    let index_before = std::fs::read(&index).expect("index");
    let objects_before = list_files(&repo.join(".git/objects"));

    let d = diff::diff(&repo, &wt, "warren/a/c", &base, f.owner, 1 << 20)
        .await
        .expect("diff");
    let mut files: Vec<(String, String, u64, u64)> = d
        .files
        .iter()
        .map(|f| (f.path.clone(), f.status.clone(), f.additions, f.deletions))
        .collect();
    files.sort();
    let want = vec![
        ("a.txt".to_string(), "modified".to_string(), 2, 1),
        ("bin.dat".into(), "added".into(), 0, 0),
        ("committed.txt".into(), "added".into(), 1, 0),
        ("dir/b2.txt".into(), "renamed".into(), 0, 0),
        ("gone.txt".into(), "deleted".into(), 0, 1),
        ("name with spaces é.txt".into(), "renamed".into(), 0, 0),
        ("star*.txt".into(), "added".into(), 1, 0),
        ("untracked.txt".into(), "added".into(), 1, 0),
    ];
    assert_eq!(files, want);
    assert_eq!(d.baseline, base);
    assert_eq!(d.head, git(&wt, &["rev-parse", "HEAD"]));
    assert!(!d.truncated);
    assert!(
        d.patch.contains("+TWO") && d.patch.contains("+u") && d.patch.contains("rename to name with spaces"),
        "{}",
        d.patch
    );

    assert_eq!(
        std::fs::read(&index).expect("index"),
        index_before,
        "the worktree's index was touched"
    );
    assert_eq!(git(&wt, &["status", "--porcelain"]), status_before);
    // Only the empty blob an intent-to-add entry names may be new.
    let empty_blob = repo.join(".git/objects/e6/9de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    let new: Vec<PathBuf> = list_files(&repo.join(".git/objects"))
        .into_iter()
        .filter(|p| !objects_before.contains(p) && *p != empty_blob)
        .collect();
    assert!(new.is_empty(), "the diff wrote objects into the repo: {new:?}");

    let small = diff::diff(&repo, &wt, "warren/a/c", &base, f.owner, 40)
        .await
        .expect("diff");
    assert!(small.truncated);
    assert!(small.patch.len() <= 40);
    assert_eq!(small.files.len(), 8);

    // Archived: the branch's commits only.
    repo::archive_worktree(&f, &wt, "warren/a/c", &base)
        .await
        .expect("archive");
    let d = diff::diff(&repo, &wt, "warren/a/c", &base, f.owner, 1 << 20)
        .await
        .expect("archived diff");
    assert_eq!(d.files.len(), 8);
    assert_eq!(d.head, git(&repo, &["rev-parse", "warren/a/c"]));

    // A deleted branch: nothing past the baseline.
    let wt2 = root.path().join("wt2");
    repo::add_worktree(&f, &wt2, "warren/a/d", &base).await.expect("add");
    repo::archive_worktree(&f, &wt2, "warren/a/d", &base)
        .await
        .expect("archive");
    let d = diff::diff(&repo, &wt2, "warren/a/d", &base, f.owner, 1 << 20)
        .await
        .expect("empty");
    assert!(d.files.is_empty() && d.head == base);
}

fn list_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(list_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test]
async fn no_filter_the_repo_configures_runs_on_the_host() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let marker = root.path().join("ran");
    let cmd = format!("touch {}; cat", marker.display());
    git(&repo, &["config", "filter.evil.clean", &cmd]);
    git(&repo, &["config", "filter.evil.smudge", &cmd]);
    git(&repo, &["config", "filter.evil.required", "true"]);
    write(&repo.join(".gitattributes"), "* filter=evil\n");
    let out = git_env(&repo, &["-c", "filter.evil.clean=cat", "add", ".gitattributes"], &[]);
    assert!(out.status.success());
    git(&repo, &["-c", "filter.evil.clean=cat", "commit", "-q", "-m", "attrs"]);
    assert!(!marker.exists());

    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("wt");
    repo::add_worktree(&f, &wt, "warren/a/c", &base).await.expect("add");
    write(&wt.join("a.txt"), "changed\n");
    write(&wt.join("new.txt"), "new\n");
    diff::diff(&repo, &wt, "warren/a/c", &base, f.owner, 1 << 20)
        .await
        .expect("diff");
    repo::archive_worktree(&f, &wt, "warren/a/c", &base)
        .await
        .expect("archive");
    repo::restore_worktree(&f, &wt, "warren/a/c").await.expect("restore");
    assert!(!marker.exists(), "a filter from the repo's config ran");
}

/// Files under `dir` (not `skip`) whose uid is not `uid`.
fn not_owned_by(dir: &Path, uid: u32, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let p = e.path();
        let meta = std::fs::symlink_metadata(&p).expect("meta");
        if meta.uid() != uid {
            out.push(p.clone());
        }
        if meta.is_dir() {
            not_owned_by(&p, uid, out);
        }
    }
}

#[tokio::test]
async fn as_root_git_runs_as_the_repo_owner() {
    assert!(
        super::git::node_is_root(),
        "this test proves ownership as root; run the tests as root"
    );
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let status = Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(&repo)
        .status()
        .expect("chown");
    assert!(status.success());
    let f = facts(&repo).await;
    assert_eq!(f.owner, Owner { uid: 1000, gid: 1000 });
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("data/agents/a/wt/c1");
    repo::add_worktree(&f, &wt, "warren/a/c1", &base).await.expect("add");
    write(&wt.join("x.txt"), "x\n");
    let d = diff::diff(&repo, &wt, "warren/a/c1", &base, f.owner, 1 << 20)
        .await
        .expect("diff");
    assert_eq!(d.files.len(), 1);
    std::fs::remove_file(wt.join("x.txt")).expect("rm");

    for dir in [root.path().join("data"), root.path().join("data/agents/a/wt")] {
        assert_eq!(std::fs::metadata(&dir).expect("meta").uid(), 1000, "{}", dir.display());
    }
    let mut wrong = Vec::new();
    not_owned_by(&root.path().join("data"), 1000, &mut wrong);
    not_owned_by(&repo, 1000, &mut wrong);
    assert!(wrong.is_empty(), "not owned by uid 1000: {wrong:?}");
    assert!(repo.join(".git/worktrees/c1/HEAD").exists());

    write(&wt.join("y.txt"), "y\n");
    let a = repo::archive_worktree(&f, &wt, "warren/a/c1", &base)
        .await
        .expect("archive");
    assert!(a.saved_uncommitted && a.kept_branch);
    let mut wrong = Vec::new();
    not_owned_by(&repo, 1000, &mut wrong);
    assert!(wrong.is_empty(), "not owned by uid 1000 after archive: {wrong:?}");
}

#[tokio::test]
async fn hooks_refuse_pushes_and_changes_of_the_base_branch() {
    let root = tmp();
    let repo = new_repo(root.path(), "r");
    let remote = root.path().join("remote.git");
    std::fs::create_dir(&remote).expect("mkdir");
    git(&remote, &["init", "-q", "--bare"]);
    git(&repo, &["remote", "add", "origin", remote.to_str().expect("utf8")]);
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("wt");
    repo::add_worktree(&f, &wt, "warren/agent1/c", &base)
        .await
        .expect("add");

    let hook_dir = root.path().join("hooks");
    hooks::write(&hook_dir, Some("main")).expect("hooks");
    for name in ["pre-push", "reference-transaction", "pre-commit"] {
        let mode = std::fs::metadata(hook_dir.join(name)).expect("hook").mode();
        assert_eq!(mode & 0o777, 0o755, "{name}");
    }
    let env = hooks::env(&hook_dir, "agent1", &[&repo, &wt]);
    let run = |dir: &Path, args: &[&str]| git_env(dir, args, &env);
    let stderr = |o: &std::process::Output| String::from_utf8_lossy(&o.stderr).to_string();

    // A commit on the worktree's branch works, as the agent.
    write(&wt.join("w.txt"), "w\n");
    assert!(run(&wt, &["add", "w.txt"]).status.success());
    let out = run(&wt, &["commit", "-q", "-m", "work"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        git(&wt, &["log", "-1", "--format=%an <%ae>"]),
        "agent1 <agent1@warren.localhost>"
    );

    let out = run(&wt, &["push", "origin", "warren/agent1/c"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(hooks::PUSH_REFUSED), "{}", stderr(&out));
    assert_eq!(git(&remote, &["for-each-ref"]), "");

    let main_before = git(&repo, &["rev-parse", "main"]);
    write(&repo.join("m.txt"), "m\n");
    assert!(run(&repo, &["add", "m.txt"]).status.success());
    let out = run(&repo, &["commit", "-q", "-m", "on main"]);
    assert!(!out.status.success(), "a commit on main went through");
    assert!(stderr(&out).contains("refs/heads/main"), "{}", stderr(&out));
    let out = run(&repo, &["commit", "-q", "--no-verify", "-m", "on main"]);
    assert!(!out.status.success(), "a --no-verify commit on main went through");

    let out = run(&wt, &["update-ref", "refs/heads/main", "HEAD"]);
    assert!(
        stderr(&out).contains("warren: refs/heads/main is the base branch"),
        "{}",
        stderr(&out)
    );
    for args in [
        vec!["branch", "-f", "main", "HEAD"],
        vec!["update-ref", "refs/heads/main", "HEAD"],
        vec!["update-ref", "-d", "refs/heads/main"],
        vec!["push", ".", "HEAD:main"],
    ] {
        let out = run(&wt, &args);
        assert!(!out.status.success(), "{args:?} went through");
        // git itself refuses to move a branch checked out elsewhere.
        let words = stderr(&out);
        assert!(
            words.contains("warren:") || words.contains("used by worktree"),
            "{args:?}: {words}"
        );
    }
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);

    // Without a protected branch, only pushes are refused.
    hooks::write(&hook_dir, None).expect("hooks");
    assert!(!hook_dir.join("reference-transaction").exists());
    assert!(run(&wt, &["branch", "-f", "other", "HEAD"]).status.success());
    assert!(!run(&wt, &["push", "origin", "other"]).status.success());
}

#[test]
fn hooks_quote_the_branch_name() {
    let root = tmp();
    hooks::write(root.path(), Some("it's$(touch x)")).expect("hooks");
    let body = std::fs::read_to_string(root.path().join("reference-transaction")).expect("read");
    assert!(body.contains(r"protected='refs/heads/it'\''s$(touch x)'"), "{body}");
    assert!(hooks::write(root.path(), Some("a\nb")).is_err());
}

#[test]
fn hook_env_entries() {
    let env = hooks::env(Path::new("/h"), "ag", &[Path::new("/r"), Path::new("/w")]);
    let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.as_str());
    assert_eq!(get("GIT_CONFIG_COUNT"), Some("3"));
    assert_eq!(get("GIT_CONFIG_KEY_0"), Some("core.hooksPath"));
    assert_eq!(get("GIT_CONFIG_VALUE_0"), Some("/h"));
    assert_eq!(get("GIT_CONFIG_KEY_2"), Some("safe.directory"));
    assert_eq!(get("GIT_CONFIG_VALUE_2"), Some("/w"));
    assert_eq!(get("GIT_COMMITTER_EMAIL"), Some("ag@warren.localhost"));
}

/// The shape of `warren bench workspace` (10,000 files to check out, then
/// 1,000 changed to diff), checked for what it returns; the times are printed,
/// not asserted (the bench quotes them).
#[tokio::test]
async fn big_repo_worktree_and_diff_times() {
    let root = tmp();
    let repo = root.path().join("big");
    std::fs::create_dir_all(&repo).expect("mkdir");
    git(&repo, &["init", "-q", "-b", "main"]);
    for i in 0..10_000 {
        write(
            &repo.join(format!("d{}/f{i}.txt", i % 100)),
            &format!("file {i}\nline\n"),
        );
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "big"]);
    let f = facts(&repo).await;
    let base = repo::resolve_base(&f, "main").await.expect("base");
    let wt = root.path().join("wt");
    // The setup's 10,000 fresh files are written back first, so the time
    // is the worktree's, not the page cache's.
    assert!(Command::new("sync").status().expect("sync").success());
    let t = std::time::Instant::now();
    repo::add_worktree(&f, &wt, "warren/a/big", &base).await.expect("add");
    let add_ms = t.elapsed().as_millis();
    for i in 0..1_000 {
        write(
            &wt.join(format!("d{}/f{i}.txt", i % 100)),
            &format!("file {i}\nchanged\n"),
        );
    }
    assert!(Command::new("sync").status().expect("sync").success());
    let t = std::time::Instant::now();
    let d = diff::diff(&repo, &wt, "warren/a/big", &base, f.owner, 1 << 20)
        .await
        .expect("diff");
    let diff_ms = t.elapsed().as_millis();
    eprintln!("worktree add (10,000 files): {add_ms} ms; diff (1,000 changed): {diff_ms} ms");
    assert_eq!(d.files.len(), 1_000);
    assert!(d.files.iter().all(|f| f.additions == 1 && f.deletions == 1));
}
