//! Workspaces across members: `agent.create {node, workspace}` sent to one
//! member checks the repository on the agent's own node (its data dir is the
//! one a repository may not be inside), and the conversation's worktree is
//! made there.

use super::*;

/// A repository with one commit at `dir`.
fn repo_at(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).expect("repo dir");
    for args in [
        vec!["init", "-q", "-b", "main"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "first",
        ],
    ] {
        let st = std::process::Command::new("git")
            .args(&args)
            .current_dir(dir)
            .status()
            .expect("git is installed (the workspace tests need it)");
        assert!(st.success(), "git {args:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workspace_is_checked_and_made_on_the_agents_own_node() {
    let lab = three_node_fleet().await;
    all_see(&lab, &["n1", "n2"], true, Duration::from_secs(20)).await;
    let (n1, n2) = (lab.node("n1"), lab.node("n2"));

    // Inside n2's data dir: refused when the agent is to live on n2, even
    // asked through n1 (whose data dir it is not inside).
    let inside = n2.dir.join("sneaky");
    repo_at(&inside);
    let repo = inside.display().to_string();
    let e = n1
        .call(
            "agent.create",
            json!({ "name": "far", "harness": "fake", "node": "n2", "workspace": { "repo": repo } }),
        )
        .await
        .expect_err("inside n2's data dir");
    assert!(
        e.to_string().contains("workspace.repo") && e.to_string().contains("data dir"),
        "{e}"
    );
    n1.call(
        "agent.create",
        json!({ "name": "near", "harness": "fake", "workspace": { "repo": repo } }),
    )
    .await
    .expect("the same path is fine for an agent on n1");

    // A repository elsewhere: the agent lives on n2, its worktree is n2's.
    let tmp = tempfile::tempdir().expect("tmp");
    let elsewhere = tmp.path().join("proj");
    repo_at(&elsewhere);
    n1.call(
        "agent.create",
        json!({ "name": "far", "harness": "fake", "node": "n2",
                "workspace": { "repo": elsewhere.display().to_string() } }),
    )
    .await
    .expect("an agent on n2 with a workspace");
    let conv = n1
        .call("conversation.start", json!({ "agent": "far@n2" }))
        .await
        .expect("start through n1");
    let ws = &conv["conversation"]["workspace"];
    let path = ws["path"].as_str().expect("path");
    assert!(
        path.starts_with(&n2.dir.join("worktrees").display().to_string()),
        "{ws}"
    );
    assert!(
        std::path::Path::new(path).join(".git").exists(),
        "the worktree exists: {ws}"
    );
}
