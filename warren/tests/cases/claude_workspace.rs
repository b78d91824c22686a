// The real Claude Code CLI on a real repository, included by claude.rs (a
// local PTY) and docker_claude.rs (the guest, as the repository's owner):
// it writes a file and commits it on its own branch, supervised, and the
// base branch is untouched.

/// Runs git in `dir`, failing loudly; its stdout.
fn git_in(dir: &std::path::Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository `proj` with one commit on `main` in a new temp dir, and
/// for a guest, owned by an ordinary user (uid 1000: the guest runs as that
/// user) with `[workspaces] root` there (returned as extra warren.toml):
/// (the temp dir, the base commit, the extra config).
fn claude_repo() -> (tempfile::TempDir, String, String) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let repo = tmp.path().join("proj");
    std::fs::create_dir_all(&repo).expect("repo");
    git_in(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# proj\n").expect("readme");
    git_in(&repo, &["add", "-A"]);
    git_in(&repo, &["commit", "-qm", "first"]);
    let base = git_in(&repo, &["rev-parse", "HEAD"]);
    let worktrees = tmp.path().join("worktrees");
    std::fs::create_dir_all(&worktrees).expect("worktrees");
    let mut extra = String::new();
    if RUNTIME == "docker" {
        for p in [&repo, &worktrees] {
            let st = std::process::Command::new("chown")
                .args(["-R", "1000:1000", &p.display().to_string()])
                .status()
                .expect("chown");
            assert!(st.success());
        }
        extra = format!("\n[workspaces]\nroot = {:?}\n", worktrees.display().to_string());
    }
    (tmp, base, extra)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_edits_and_commits_on_its_own_branch() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (tmp, base, extra) = claude_repo();
    let repo = tmp.path().join("proj");
    let agent = json!({ "name": "cc", "harness": "claude", "workspace": { "repo": repo.display().to_string() } });
    let (node, id) = claude_node_with(&model, &extra, agent).await;
    let mut c = node.client().await;
    let conv = call(&mut c, "conversation.get", json!({ "conversation": id })).await;
    let ws = conv["conversation"]["workspace"].clone();
    let path = std::path::PathBuf::from(ws["path"].as_str().expect("path"));
    let branch = ws["branch"].as_str().expect("branch").to_string();
    assert_eq!(branch, format!("warren/cc/{id}"));

    // It writes a file in its worktree (repo-scoped: approved by supervision).
    let at = say(&mut c, &id, "create: notes.txt").await;
    reply_starting(&mut c, &id, at, "Tool finished").await;
    assert_eq!(
        std::fs::read_to_string(path.join("notes.txt")).expect("claude wrote notes.txt in its worktree"),
        "created by the fake model\n"
    );
    // And commits it on its branch; a hold (if supervision holds the
    // commit) is approved the way a human would.
    say(&mut c, &id, "run: git add notes.txt && git commit -qm 'claude adds notes'").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if git_in(&repo, &["rev-parse", &branch]) != base {
            break;
        }
        let holds = call(&mut c, "supervision.holds", json!({ "agent": "cc" })).await;
        for h in holds["holds"].as_array().into_iter().flatten() {
            if h["summary"].as_str().is_some_and(|s| s.contains("git commit")) {
                let _ = c
                    .call("supervision.answer", json!({ "hold": h["id"], "decision": "approve" }))
                    .await;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no commit on {branch}: {}",
            screen_text(&mut c, &id).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    assert_eq!(git_in(&repo, &["log", "-1", "--format=%s|%an", &branch]), "claude adds notes|cc");
    assert_eq!(git_in(&repo, &["rev-parse", "main"]), base, "the base branch is untouched");
    assert_eq!(git_in(&repo, &["status", "--porcelain"]), "", "the main checkout is untouched");
    let d = call(&mut c, "conversation.diff", json!({ "conversation": id })).await;
    assert_eq!(d["files"], json!([{ "path": "notes.txt", "status": "added", "additions": 1, "deletions": 0 }]), "{d}");
    if RUNTIME == "docker" {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path.join("notes.txt")).expect("notes");
        assert_eq!(m.uid(), 1000, "the file keeps the repository owner's uid");
    }
}
