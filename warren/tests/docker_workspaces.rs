//! Workspaces in Docker guests on a real engine: a repository owned by an
//! ordinary user (uid 1000) is worked on by a guest running as that user, so
//! what the CLI writes and commits keeps that owner on the host; git's
//! config and hooks in the repository are read-only to the guest, and a push
//! from inside is refused by the node's hook.

mod support;
mod workspace;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::json;
use support::{call, start_idle};
use workspace::{create_on, git, owned_repo_node, sh, workspace_of};

/// Every file and directory under `dir` that uid 1000 does not own.
fn not_owned_by_1000(dir: &Path, out: &mut Vec<String>) {
    let Ok(m) = std::fs::symlink_metadata(dir) else { return };
    if m.uid() != 1000 {
        out.push(format!("{} (uid {})", dir.display(), m.uid()));
    }
    if m.is_dir() {
        for e in std::fs::read_dir(dir).expect("read dir").flatten() {
            not_owned_by_1000(&e.path(), out);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guest_commits_on_its_branch_as_the_repositorys_owner() {
    let (tmp, base, node) = owned_repo_node("");
    let (repo, worktrees) = (tmp.path().join("proj"), tmp.path().join("worktrees"));
    let mut c = node.client().await;
    create_on(&mut c, "g", json!({ "repo": repo.display().to_string() })).await;
    let id = start_idle(&mut c, "g").await["id"].as_str().expect("id").to_string();
    let ws = workspace_of(&mut c, &id).await;
    let path = ws["path"].as_str().expect("path").to_string();
    assert!(path.starts_with(&worktrees.display().to_string()), "{ws}");

    let out = sh(
        &node,
        &mut c,
        &id,
        "id -u && echo hi > g.txt && git add g.txt && git commit -qm 'g adds g' && git log --format=%s -1",
    )
    .await;
    assert!(
        out.contains("1000") && out.contains("g adds g"),
        "the guest runs as the owner and commits: {out}"
    );
    let mut wrong = vec![];
    not_owned_by_1000(&repo, &mut wrong);
    not_owned_by_1000(Path::new(&path), &mut wrong);
    assert!(wrong.is_empty(), "files keep the repository owner's uid: {wrong:?}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), base, "the base is untouched");

    // The repository's config and hooks are read-only in the guest; a push
    // is refused by the node's hook.
    let common = repo.join(".git");
    let out = sh(
        &node,
        &mut c,
        &id,
        &format!(
            "(echo '[core]' >> {0}/config) 2>&1; (touch {0}/hooks/pre-commit) 2>&1; git push {1} HEAD 2>&1; echo end",
            common.display(),
            repo.display()
        ),
    )
    .await;
    assert!(out.matches("Read-only file system").count() >= 2, "{out}");
    assert!(out.contains("pushes from inside a conversation are refused"), "{out}");
    assert!(!common.join("hooks/pre-commit").exists());

    let d = call(&mut c, "conversation.diff", json!({ "conversation": id })).await;
    assert_eq!(d["files"][0]["path"], "g.txt", "{d}");
    call(&mut c, "conversation.terminate", json!({ "conversation": id })).await;
    assert!(!Path::new(&path).exists(), "the worktree is removed");
    assert!(git(&repo, &["branch", "--list"]).contains(&format!("warren/g/{id}")));
}

/// A task in a Docker guest: its acceptance commands run in the guest as the
/// repository's owner; a failed first attempt is repaired once and the
/// task completes with a commit on its branch, the base untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_in_a_guest_is_checked_in_the_guest_repaired_and_committed() {
    let (tmp, base, node) = owned_repo_node("");
    let repo = tmp.path().join("proj");
    let mut c = node.client().await;
    let rules = json!([
        { "match": "^TASK", "actions": [{ "shell": "echo wrong > answer.txt" }] },
        { "match": "^Acceptance failed:", "actions": [{ "shell": "echo right > answer.txt" }] },
    ]);
    call(
        &mut c,
        "agent.create",
        json!({ "name": "g", "harness": "fake", "rules": rules,
                "workspace": { "repo": repo.display().to_string() } }),
    )
    .await;
    // Only a guest has the warren binary at this path; the host has no such file.
    let guest_only = "/usr/local/lib/warren/warren";
    assert!(
        !Path::new(guest_only).exists(),
        "the test needs a host without {guest_only}"
    );
    let check = format!("echo uid=$(id -u); test -x {guest_only} && grep -qx right answer.txt");
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "g", "goal": "TASK answer", "acceptance": [check] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let done = support::wait_until("the task completed", std::time::Duration::from_secs(240), || {
        let (id, target) = (id.clone(), node.target());
        async move {
            let mut c = warren::client::Client::connect(&target).await.ok()?;
            let t = c.call("task.get", json!({ "task": id })).await.ok()?["task"].clone();
            matches!(t["state"].as_str(), Some("completed" | "parked" | "failed")).then_some(t)
        }
    })
    .await;
    assert_eq!(done["state"], "completed", "{done:#}");
    assert_eq!(done["repairs"], 1, "{done:#}");
    let check = &done["checks"][0];
    assert!(
        check["output_tail"].as_str().unwrap_or_default().contains("uid=1000"),
        "checked in the guest as the owner: {check}"
    );
    let head = done["head"].as_str().expect("head");
    assert_eq!(git(&repo, &["show", &format!("{head}:answer.txt")]), "right");
    assert_eq!(git(&repo, &["rev-parse", "main"]), base, "the base is untouched");
    let mut wrong = vec![];
    not_owned_by_1000(&repo, &mut wrong);
    assert!(wrong.is_empty(), "the node's commit keeps the owner's uid: {wrong:?}");
}
