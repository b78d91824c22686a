// The real Claude Code CLI on a real repository, included by claude.rs (a
// local PTY) and docker_claude.rs (the guest, as the repository's owner):
// it writes a file and commits it on its own branch, supervised, and the
// base branch is untouched.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_edits_and_commits_on_its_own_branch() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (tmp, base, extra) = task_repo(RUNTIME);
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
