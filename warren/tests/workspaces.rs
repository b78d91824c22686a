//! Workspaces on real git repositories with a real node (local runtime, the
//! fake CLI running real shell commands in its worktree): separate worktrees
//! and branches per conversation, the base branch untouched, the diff, the
//! leases, a crash and continue, the hooks that refuse a push and a rewrite
//! of the base even with supervision off, and the refusals of bad input.

mod support;
mod workspace;

use std::path::Path;

use serde_json::json;
use support::{TestNode, call, call_err, start_idle, wait_idle, warren};
use workspace::{create_on, git, make_repo, sh, workspace_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_work_on_one_repository_each_on_its_own_worktree() {
    let node = TestNode::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    let base = make_repo(&repo, &[("a.txt", "a\n"), ("src/lib.rs", "fn f() {}\n")]);
    let remote = tmp.path().join("remote.git");
    git(tmp.path(), &["init", "-q", "--bare", &remote.display().to_string()]);
    let mut c = node.client().await;
    let repo_s = repo.display().to_string();
    let agent = create_on(&mut c, "one", json!({ "repo": repo_s })).await;
    assert_eq!(
        agent["workspace"],
        json!({ "repo": repo_s, "base": "main", "mode": "worktree" })
    );
    create_on(
        &mut c,
        "two",
        json!({ "repo": format!("{repo_s}/src"), "base": "main" }),
    )
    .await;

    let one = start_idle(&mut c, "one").await["id"].as_str().expect("id").to_string();
    let two = start_idle(&mut c, "two").await["id"].as_str().expect("id").to_string();
    let (w1, w2) = (workspace_of(&mut c, &one).await, workspace_of(&mut c, &two).await);
    assert_eq!(w1["branch"], format!("warren/one/{one}"));
    assert_eq!(w2["branch"], format!("warren/two/{two}"));
    assert_ne!(w1["path"], w2["path"], "each conversation has its own worktree");
    for w in [&w1, &w2] {
        assert_eq!(w["baseline"], base, "cut from main's commit: {w}");
        assert_eq!(w["head"], base, "nothing committed yet: {w}");
    }
    let p1 = w1["path"].as_str().expect("path").to_string();

    // Each works on its own branch, at once.
    let (r1, r2) = tokio::join!(
        async {
            let mut c = node.client().await;
            sh(
                &node,
                &mut c,
                &one,
                "pwd && echo one >> a.txt && git commit -qam 'one edits a' && echo new > new.txt && echo ok",
            )
            .await
        },
        async {
            let mut c = node.client().await;
            sh(
                &node,
                &mut c,
                &two,
                "echo two > b.txt && git add b.txt && git commit -qm 'two adds b' && echo ok",
            )
            .await
        }
    );
    assert!(r1.contains(&p1) && r1.trim_end().ends_with("ok"), "{r1}");
    assert!(r2.trim_end().ends_with("ok"), "{r2}");

    // The base branch and the main checkout are untouched.
    assert_eq!(git(&repo, &["rev-parse", "main"]), base);
    assert_eq!(git(&repo, &["status", "--porcelain"]), "", "the main checkout is clean");
    assert_eq!(std::fs::read_to_string(repo.join("a.txt")).expect("a"), "a\n");
    let head1 = git(&repo, &["rev-parse", &format!("warren/one/{one}")]);
    assert_ne!(head1, base);
    assert_eq!(workspace_of(&mut c, &one).await["head"], head1);
    assert!(git(&repo, &["log", "--format=%s", &format!("warren/two/{two}")]).contains("two adds b"));
    assert!(!git(&repo, &["log", "--format=%s", &format!("warren/two/{two}")]).contains("one edits a"));
    let author = git(&repo, &["log", "-1", "--format=%an <%ae>", &head1]);
    assert_eq!(author, "one <one@warren.localhost>", "commits are the agent's");

    // The diff: the committed change and the untracked file.
    let d = call(&mut c, "conversation.diff", json!({ "conversation": one })).await;
    assert_eq!(d["baseline"], base);
    assert_eq!(d["head"], head1);
    let files = d["files"].as_array().expect("files");
    let find = |p: &str| files.iter().find(|f| f["path"] == p).cloned().unwrap_or_default();
    assert_eq!(find("a.txt")["status"], "modified", "{d}");
    assert_eq!(find("a.txt")["additions"], 1);
    assert_eq!(find("new.txt")["status"], "added", "uncommitted files count: {d}");
    assert_eq!(files.len(), 2, "{d}");
    let patch = d["patch"].as_str().expect("patch");
    assert!(patch.contains("+one") && patch.contains("+new"), "{patch}");
    assert_eq!(d["truncated"], false);
    let cut = call(
        &mut c,
        "conversation.diff",
        json!({ "conversation": one, "max_bytes": 40 }),
    )
    .await;
    assert_eq!(cut["truncated"], true);
    assert!(cut["patch"].as_str().expect("patch").len() <= 40);
    assert_eq!(
        cut["files"].as_array().expect("files").len(),
        2,
        "the file list stays whole"
    );
    // The worktree's own index was not touched by the diff.
    assert_eq!(git(Path::new(&p1), &["status", "--porcelain"]), "?? new.txt");
    let (code, out, err) = warren(&["conv", "diff", &one, "--stat"], &node.path());
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("a.txt") && out.contains("+1") && out.contains("2 files"),
        "{out}"
    );

    // Nothing inside pushes or rewrites the base branch (supervision is off).
    let push = sh(
        &node,
        &mut c,
        &one,
        &format!("git push {} HEAD:refs/heads/x 2>&1; echo exit=$?", remote.display()),
    )
    .await;
    assert!(
        push.contains("pushes from inside a conversation are refused") && push.contains("exit=1"),
        "{push}"
    );
    assert_eq!(git(&remote, &["for-each-ref"]), "", "nothing reached the remote");
    let rewrite = sh(
        &node,
        &mut c,
        &one,
        "git update-ref refs/heads/main HEAD 2>&1; git branch -f main HEAD 2>&1; echo done",
    )
    .await;
    assert!(rewrite.contains("done"), "{rewrite}");
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        base,
        "the base branch is not rewritten: {rewrite}"
    );

    // Terminate: the uncommitted file is committed onto the branch, the
    // worktree removed, the branch (it has commits) kept; its diff still reads.
    call(&mut c, "conversation.terminate", json!({ "conversation": one })).await;
    assert!(!Path::new(&p1).exists(), "the worktree is removed");
    let kept = format!("warren/one/{one}");
    assert!(git(&repo, &["branch", "--list", &kept]).contains(&kept));
    assert!(git(&repo, &["show", "--stat", "--format=%s", &kept]).contains("new.txt"));
    let after = call(&mut c, "conversation.diff", json!({ "conversation": one })).await;
    assert_eq!(after["files"].as_array().expect("files").len(), 2, "{after}");
    // A conversation that committed nothing leaves no branch behind.
    call(&mut c, "conversation.terminate", json!({ "conversation": two })).await;
    let three = start_idle(&mut c, "two").await["id"].as_str().expect("id").to_string();
    call(&mut c, "conversation.terminate", json!({ "conversation": three })).await;
    assert_eq!(git(&repo, &["branch", "--list", &format!("warren/two/{three}")]), "");
    assert_eq!(
        git(&repo, &["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_workspaces_are_refused_before_anything_spawns() {
    let node = TestNode::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    make_repo(&repo, &[("a.txt", "a\n")]);
    let nested = repo.join("vendor/lib");
    make_repo(&nested, &[("l.txt", "l\n")]);
    let mut c = node.client().await;
    let r = repo.display().to_string();
    create_on(&mut c, "p1", json!({ "repo": r, "mode": "in_place" })).await;
    create_on(&mut c, "p2", json!({ "repo": r, "mode": "in_place" })).await;
    create_on(
        &mut c,
        "p3",
        json!({ "repo": nested.display().to_string(), "mode": "in_place" }),
    )
    .await;

    let first = start_idle(&mut c, "p1").await["id"].as_str().expect("id").to_string();
    assert_eq!(workspace_of(&mut c, &first).await["path"], r);
    for other in ["p2", "p3"] {
        let e = call_err(&mut c, "conversation.start", json!({ "agent": other })).await;
        assert_eq!(e.code, -32009, "{e:?}");
        assert!(
            e.message.contains(&first),
            "the refusal names the holder: {}",
            e.message
        );
        let list = call(&mut c, "conversation.list", json!({ "agent": other })).await;
        assert_eq!(list["conversations"], json!([]), "nothing was created or spawned");
    }
    // In place, the agent works in the repository itself.
    let out = sh(&node, &mut c, &first, "echo here > here.txt && pwd").await;
    assert!(out.contains(&r), "{out}");
    assert!(repo.join("here.txt").exists());

    // Once the holder is gone, the next one may start; two racing starts
    // on overlapping paths: exactly one wins.
    call(&mut c, "conversation.terminate", json!({ "conversation": first })).await;
    let (a, b) = tokio::join!(
        async {
            let mut c = node.client().await;
            c.call("conversation.start", json!({ "agent": "p2" })).await
        },
        async {
            let mut c = node.client().await;
            c.call("conversation.start", json!({ "agent": "p3" })).await
        }
    );
    let won = [a.is_ok(), b.is_ok()];
    assert_eq!(
        won.iter().filter(|w| **w).count(),
        1,
        "exactly one racing start wins: {a:?} {b:?}"
    );
    let lost = if won[0] { b } else { a };
    match lost {
        Err(warren::client::CallError::Rpc(e)) => assert_eq!(e.code, -32009, "{e:?}"),
        other => panic!("the loser is refused with -32009: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_9_and_continue_keep_the_worktree() {
    let mut node = TestNode::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    make_repo(&repo, &[("a.txt", "a\n")]);
    let mut c = node.client().await;
    create_on(&mut c, "w", json!({ "repo": repo.display().to_string() })).await;
    let id = start_idle(&mut c, "w").await["id"].as_str().expect("id").to_string();
    let before = workspace_of(&mut c, &id).await;
    sh(&node, &mut c, &id, "echo draft > draft.txt && echo ok").await;
    drop(c);
    node.kill9();
    node.restart();
    let mut c = node.client().await;
    support::wait_until(
        "the crash is recorded as a pause",
        std::time::Duration::from_secs(20),
        || {
            let target = node.target();
            let id = id.clone();
            async move {
                let mut c = warren::client::Client::connect(&target).await.ok()?;
                let v = c.call("conversation.get", json!({ "conversation": id })).await.ok()?;
                (v["conversation"]["state"] == "paused").then_some(())
            }
        },
    )
    .await;
    call(&mut c, "conversation.continue", json!({ "conversation": id })).await;
    wait_idle(&mut c, &id).await;
    let after = workspace_of(&mut c, &id).await;
    assert_eq!(after["path"], before["path"]);
    assert_eq!(after["branch"], before["branch"]);
    assert_eq!(after["baseline"], before["baseline"]);
    let out = sh(&node, &mut c, &id, "cat draft.txt").await;
    assert!(
        out.contains("draft"),
        "the same worktree, with its uncommitted file: {out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_workspaces_are_refused_naming_the_field_and_nothing_is_stored() {
    let node = TestNode::start();
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    make_repo(&repo, &[("a.txt", "a\n")]);
    let plain = tmp.path().join("plain");
    std::fs::create_dir_all(&plain).expect("plain");
    let inside = node.path().join("sneaky");
    make_repo(&inside, &[("x", "x")]);
    let link = tmp.path().join("link-into-data-dir");
    std::os::unix::fs::symlink(&inside, &link).expect("symlink");
    let r = repo.display().to_string();
    let mut c = node.client().await;
    let cases = [
        (
            json!({ "repo": link.display().to_string() }),
            "workspace.repo",
            "data dir",
        ),
        (
            json!({ "repo": plain.display().to_string() }),
            "workspace.repo",
            "not a git repository",
        ),
        (json!({ "repo": "relative/path" }), "workspace.repo", "not absolute"),
        (
            json!({ "repo": tmp.path().join("missing").display().to_string() }),
            "workspace.repo",
            "missing",
        ),
        (
            json!({ "repo": inside.display().to_string() }),
            "workspace.repo",
            "data dir",
        ),
        (json!({ "repo": r, "base": "nope" }), "workspace.base", "nope"),
        (json!({ "repo": r, "base": "bad..name" }), "workspace.base", "bad..name"),
        (
            json!({ "repo": format!("file://{}/none.git", tmp.path().display()) }),
            "workspace.repo",
            "cannot clone",
        ),
        (
            json!({ "repo": "ext::sh -c touch% /tmp/pwned" }),
            "workspace.repo",
            "ext",
        ),
        (
            json!({ "repo": "http://127.0.0.1:9/x.git" }),
            "workspace.repo",
            "private or local network",
        ),
        (json!({ "repo": r, "mode": "sideways" }), "mode", "sideways"),
    ];
    for (i, (ws, field, words)) in cases.iter().enumerate() {
        let name = format!("bad{i}");
        let e = call_err(
            &mut c,
            "agent.create",
            json!({ "name": name, "harness": "fake", "workspace": ws }),
        )
        .await;
        assert_eq!(e.code, -32602, "{ws}: {e:?}");
        assert!(
            e.message.contains(field) && e.message.contains(words),
            "{ws}: {}",
            e.message
        );
        assert!(
            !node.path().join("agents").join(&name).join("repo").exists(),
            "no clone is left"
        );
    }
    assert!(!Path::new("/tmp/pwned").exists());
    let agents = call(&mut c, "agent.list", json!({})).await;
    assert_eq!(agents["agents"], json!([]), "nothing was stored");

    // A URL is cloned once into the agent's own directory.
    let bare = tmp.path().join("origin.git");
    git(tmp.path(), &["clone", "-q", "--bare", &r, &bare.display().to_string()]);
    let url = format!("file://{}", bare.display());
    let rules = tmp.path().join("rules.json");
    std::fs::write(&rules, workspace::shell_rules().to_string()).expect("rules");
    let rules = rules.display().to_string();
    let (code, out, err) = warren(
        &[
            "agent",
            "create",
            "cloned",
            "--repo",
            &url,
            "--base",
            "main",
            "--rules-file",
            &rules,
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let a = call(&mut c, "agent.get", json!({ "agent": "cloned" })).await;
    let cloned = node.path().join("agents/cloned/repo").display().to_string();
    assert_eq!(a["agent"]["workspace"]["repo"], cloned);
    assert_eq!(a["agent"]["workspace"]["url"], url);
    let id = start_idle(&mut c, "cloned").await["id"]
        .as_str()
        .expect("id")
        .to_string();
    let out = sh(&node, &mut c, &id, "cat a.txt && git log --format=%s").await;
    assert!(out.contains("first"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn supervision_scope_is_the_conversations_worktree() {
    let node = TestNode::start_with_config("[supervision]\nenabled = true\n");
    let tmp = tempfile::tempdir().expect("tmp");
    let repo = tmp.path().join("proj");
    make_repo(&repo, &[("a.txt", "a\n")]);
    let mut c = node.client().await;
    create_on(&mut c, "sup", json!({ "repo": repo.display().to_string() })).await;
    let (code, _, err) = warren(&["supervision", "set", "sup", "--enable"], &node.path());
    assert_eq!(code, 0, "{err}");
    let id = start_idle(&mut c, "sup").await["id"].as_str().expect("id").to_string();
    let path = workspace_of(&mut c, &id).await["path"]
        .as_str()
        .expect("path")
        .to_string();

    // An edit in its worktree is routine: approved, and it happens.
    support::send(&mut c, &id, "/fake edit notes.txt").await;
    let row = support::supervised::row_after(&mut c, "notes.txt", 0).await;
    assert_eq!(
        (row["decision"].as_str(), row["repo_scoped"].as_bool()),
        (Some("approve"), Some(true)),
        "{row:#}"
    );
    support::wait_event(&mut c, &id, "agent", "Edited notes.txt").await;
    assert!(Path::new(&path).join("notes.txt").exists());
    // The main checkout (the repository itself) is outside its scope: held.
    wait_idle(&mut c, &id).await;
    let outside = repo.join("a.txt").display().to_string();
    support::send(&mut c, &id, &format!("/fake edit {outside}")).await;
    let row = support::supervised::row_after(&mut c, &outside, 0).await;
    assert_eq!(
        (
            row["decision"].as_str(),
            row["outcome"].as_str(),
            row["repo_scoped"].as_bool()
        ),
        (Some("hold"), Some("held"), Some(false)),
        "{row:#}"
    );
}
