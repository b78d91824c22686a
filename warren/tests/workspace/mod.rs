//! Helpers for the workspace tests: real git repositories, and a fake-CLI
//! agent whose `sh CMD` message runs CMD in its workspace.
#![allow(dead_code, unreachable_pub)]

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use warren::client::Client;

use crate::support::{TestNode, call, send, transcript, wait_until};

/// Runs git in `dir` (any owner), failing loudly; returns its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed (the workspace tests need it)");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository at `dir` on branch `main` with `files` committed once.
pub fn make_repo(dir: &Path, files: &[(&str, &str)]) -> String {
    std::fs::create_dir_all(dir).expect("repo dir");
    git(dir, &["init", "-q", "-b", "main"]);
    for (name, body) in files {
        let p = dir.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("dirs");
        }
        std::fs::write(p, body).expect("file");
    }
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "first"]);
    git(dir, &["rev-parse", "HEAD"])
}

/// The rules that make a fake CLI run `sh CMD` messages as shell commands.
pub fn shell_rules() -> Value {
    json!([{ "match": "^sh (.*)$", "actions": [{ "shell": "{{1}}" }] }])
}

/// Creates fake agent `name` on `workspace` (`{repo, base?, mode?}`).
pub async fn create_on(c: &mut Client, name: &str, workspace: Value) -> Value {
    call(
        c,
        "agent.create",
        json!({ "name": name, "harness": "fake", "rules": shell_rules(), "workspace": workspace }),
    )
    .await["agent"]
        .clone()
}

/// Runs `cmd` in conversation `id` and returns its tool line's text (the
/// command and its output).
pub async fn sh(node: &TestNode, c: &mut Client, id: &str, cmd: &str) -> String {
    let before = transcript(c, id).await.len();
    send(c, id, &format!("sh {cmd}")).await;
    let id = id.to_string();
    wait_until(&format!("`{cmd}` ran"), Duration::from_secs(30), || {
        let id = id.clone();
        let target = node.target();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            transcript(&mut c, &id)
                .await
                .into_iter()
                .skip(before)
                .find(|e| e["speaker"] == "tool")
                .map(|e| e["text"].as_str().unwrap_or_default().to_string())
        }
    })
    .await
}

/// `conversation.get`'s workspace object.
pub async fn workspace_of(c: &mut Client, id: &str) -> Value {
    call(c, "conversation.get", json!({ "conversation": id })).await["conversation"]["workspace"].clone()
}

/// A repository `proj` (one commit on `main`) and a worktrees root, both
/// owned by uid 1000, and a Docker node whose `[workspaces] root` is that
/// root, with `config` besides: (the temp dir, the base commit, the node).
pub fn owned_repo_node(config: &str) -> (tempfile::TempDir, String, TestNode) {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().expect("tmp");
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let repo = tmp.path().join("proj");
    let base = make_repo(&repo, &[("a.txt", "a\n")]);
    let worktrees = tmp.path().join("worktrees");
    std::fs::create_dir_all(&worktrees).expect("worktrees");
    for p in [&repo, &worktrees] {
        let st = std::process::Command::new("chown")
            .args(["-R", "1000:1000", &p.display().to_string()])
            .status()
            .expect("chown");
        assert!(st.success());
    }
    let node = TestNode::start_on(
        "docker",
        &format!("{config}\n[workspaces]\nroot = {:?}\n", worktrees.display().to_string()),
    );
    (tmp, base, node)
}
