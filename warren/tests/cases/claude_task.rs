// An unattended task with the real Claude Code CLI as its worker, included by
// claude.rs (a local PTY) and docker_claude.rs (the guest): the first attempt
// fails acceptance, the repair message (whose evidence carries the next
// `run:` line for the fake model) is acted on, the checks pass, and the task
// completes with a commit on its branch; the base branch is untouched.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_claude_works_a_task_repaired_once_to_a_commit() {
    let listen = if RUNTIME == "docker" { "0.0.0.0:0" } else { "127.0.0.1:0" };
    let model = fake_model::FakeModel::start(listen.parse().expect("addr"))
        .await
        .expect("fake model");
    let (tmp, base, extra) = task_repo(RUNTIME);
    let repo = tmp.path().join("proj");
    let agent = json!({ "name": "cc", "harness": "claude", "workspace": { "repo": repo.display().to_string() } });
    let (node, first) = claude_node_with(&model, &extra, agent).await;
    let mut c = node.client().await;
    // A task works in a conversation of its own.
    call(&mut c, "conversation.pause", json!({ "conversation": first })).await;
    // Fails until notes.txt says `fixed`; its output is the repair's evidence.
    let check = "grep -q fixed notes.txt || { echo 'run: echo fixed >> notes.txt'; exit 1; }";
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "cc", "goal": "Write the notes.\ncreate: notes.txt", "acceptance": [check] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("task id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    let done = loop {
        let t = call(&mut c, "task.get", json!({ "task": id })).await["task"].clone();
        if matches!(t["state"].as_str(), Some("completed" | "parked" | "failed" | "stopped")) {
            break t;
        }
        // A dialog supervision holds is answered the way a human would.
        let holds = call(&mut c, "supervision.holds", json!({ "agent": "cc" })).await;
        for h in holds["holds"].as_array().into_iter().flatten() {
            let _ = c
                .call("supervision.answer", json!({ "hold": h["id"], "decision": "approve" }))
                .await;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the task did not end: {t:#}\n{}",
            screen_text(&mut c, &conv).await
        );
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    };
    assert_eq!(done["state"], "completed", "{done:#}");
    assert_eq!(done["repairs"], 1, "one repair round: {done:#}");
    let head = done["head"].as_str().expect("head");
    let branch = done["branch"].as_str().expect("branch");
    assert_eq!(git_in(&repo, &["rev-parse", branch]), head);
    assert_eq!(
        git_in(&repo, &["show", &format!("{head}:notes.txt")]),
        "created by the fake model\nfixed"
    );
    assert!(
        git_in(&repo, &["log", "-1", "--format=%s", head]).starts_with(&format!("task {id}: Write the notes.")),
        "the node's commit message"
    );
    assert_eq!(git_in(&repo, &["rev-parse", "main"]), base, "the base branch is untouched");
}
