// Task scenarios run on the local runtime (`tasks.rs`) and in Docker guests
// (`docker_tasks.rs`): each including file gives `rig(config)`, a node of its
// runtime with `config` and a repository `proj` (one commit on `main`) it may
// work on: (the temp dir, the repository, the base commit, the node).

/// A fake agent on `repo` whose goal `TASK ...` runs `first` and whose
/// repair rounds run `repair` (both shell commands in its worktree).
async fn worker(c: &mut Client, name: &str, repo: &Path, first: &str, repair: &str) {
    let rules = json!([
        { "match": "^TASK", "actions": [{ "shell": first }] },
        { "match": "^Acceptance failed:", "actions": [{ "shell": repair }] },
    ]);
    agent(c, name, repo, rules).await;
}

/// Creates fake agent `name` on `repo` (a worktree per conversation) with `rules`.
async fn agent(c: &mut Client, name: &str, repo: &Path, rules: Value) {
    call(
        c,
        "agent.create",
        json!({ "name": name, "harness": "fake", "rules": rules,
                "workspace": { "repo": repo.display().to_string() } }),
    )
    .await;
}

/// As `agent`, with supervision on for it (the rig's config turns on the
/// node's master switch).
async fn supervised_agent(c: &mut Client, node: &TestNode, name: &str, repo: &Path, rules: Value) {
    agent(c, name, repo, rules).await;
    let (code, _, err) = warren(&["supervision", "set", name, "--enable"], &node.path());
    assert_eq!(code, 0, "supervision set: {err}");
}

/// Waits until task `id` is in `state`; returns it.
async fn wait_state(node: &TestNode, id: &str, state: &str, within: Duration) -> Value {
    let id = id.to_string();
    wait_until(&format!("task {id} {state}"), within, || {
        let (id, target) = (id.clone(), node.target());
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let t = c.call("task.get", json!({ "task": id })).await.ok()?["task"].clone();
            (t["state"] == state).then_some(t)
        }
    })
    .await
}

/// The kinds of task `id`'s stored events, oldest first (the log is what a
/// restarted node folds); every task's when `id` is `None`.
async fn task_events(db: &Path, id: Option<&str>) -> Vec<String> {
    let pool = sqlx::SqlitePool::connect(&format!("sqlite://{}?mode=ro", db.display()))
        .await
        .expect("the store opens read-only");
    let rows: Vec<(String,)> = sqlx::query_as("SELECT body FROM events WHERE kind = 'task' ORDER BY seq")
        .fetch_all(&pool)
        .await
        .expect("the events table");
    pool.close().await;
    rows.iter()
        .filter_map(|(b,)| serde_json::from_str::<Value>(b).ok())
        .filter(|e| id.is_none_or(|id| e["task"] == id))
        .filter_map(|e| e["event"]["type"].as_str().map(String::from))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_cannot_pass_is_parked_with_its_branch_and_evidence() {
    let (_tmp, repo, base, node) = rig("");
    let mut c = node.client().await;
    worker(&mut c, "w", &repo, "echo attempt > work.txt", "echo again >> work.txt").await;
    let (code, out, err) = warren(
        &[
            "task",
            "start",
            "w",
            "TASK the impossible",
            "--accept",
            "echo checking; exit 7",
            "--max-repairs",
            "1",
        ],
        &node.path(),
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = out.split_whitespace().next().expect("the task id first").to_string();
    let parked = wait_state(&node, &id, "parked", Duration::from_secs(90)).await;
    assert_eq!(parked["repairs"], 1, "{parked:#}");
    let last = parked["checks"]
        .as_array()
        .and_then(|c| c.last())
        .cloned()
        .expect("a check");
    assert_eq!(last["exit_code"], 7);
    assert!(last["output_tail"].as_str().unwrap_or_default().contains("checking"));
    assert!(
        parked["reason"].as_str().is_some(),
        "a parked task says why: {parked:#}"
    );
    // The worker stops; its work stays on the branch (nothing is lost).
    let conv = parked["conversation"].as_str().expect("conversation").to_string();
    wait_until("the worker paused", Duration::from_secs(30), || {
        let (conv, target) = (conv.clone(), node.target());
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let v = c.call("conversation.get", json!({ "conversation": conv })).await.ok()?;
            (v["conversation"]["state"] == "paused").then_some(())
        }
    })
    .await;
    let branch = parked["branch"].as_str().expect("branch");
    let worktree = workspace_of(&mut c, &conv).await["path"]
        .as_str()
        .expect("path")
        .to_string();
    assert_eq!(
        std::fs::read_to_string(Path::new(&worktree).join("work.txt")).expect("the work is kept"),
        "attempt\nagain\n"
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]), base);
    assert!(
        git(&repo, &["branch", "--list", branch]).contains(branch),
        "the branch stays"
    );
    // Nothing more happens to a parked task; a stop is refused by its state.
    let e = call_err(&mut c, "task.stop", json!({ "task": id })).await;
    assert_eq!(e.code, -32009, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_verification_ends_in_exactly_one_completion() {
    let (_tmp, repo, _base, mut node) = rig("");
    let mut c = node.client().await;
    worker(&mut c, "w", &repo, "echo done > out.txt", "true").await;
    // The check takes long enough to be caught in flight; its marker is in
    // the worktree, where it runs (a guest's too).
    let check = "echo x >> .checks-ran; sleep 3; test -f out.txt";
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK write out", "acceptance": [check] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let conv = t["conversation"].as_str().expect("conversation");
    let worktree = workspace_of(&mut c, conv).await["path"]
        .as_str()
        .map(std::path::PathBuf::from)
        .expect("path");
    let marker = worktree.join(".checks-ran");
    wait_state(&node, &id, "verifying", Duration::from_secs(60)).await;
    wait_until("the check started", Duration::from_secs(20), || {
        let m = marker.clone();
        async move { m.exists().then_some(()) }
    })
    .await;
    node.kill9();
    node.restart();
    let done = wait_state(&node, &id, "completed", Duration::from_secs(90)).await;
    let ran = std::fs::read_to_string(&marker).expect("marker");
    assert_eq!(ran.lines().count(), 2, "the interrupted round ran again once: {ran:?}");
    let kinds = task_events(&node.db(), Some(&id)).await;
    assert_eq!(kinds.iter().filter(|k| *k == "completed").count(), 1, "{kinds:?}");
    assert!(done["head"].as_str().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewers_rejection_is_a_repair_round_and_its_approval_completes_the_task() {
    let (_tmp, repo, base, node) = rig("");
    let mut c = node.client().await;
    let worker_rules = json!([
        { "match": "^TASK", "actions": [{ "shell": "echo work > work.txt" }] },
        { "match": "^Review rejected:", "actions": [{ "shell": "echo notes > NOTES.md" }] },
    ]);
    agent(&mut c, "w", &repo, worker_rules).await;
    // The reviewer reads the diff, rejects the first round, approves the next.
    let review = "warren-review diff {{1}} --stat > $HOME/diff-{{2}}.txt || exit 1; \
                  if [ -f $HOME/reviewed ]; then warren-review approve {{1}} looks good now; \
                  else touch $HOME/reviewed; warren-review reject {{1}} add NOTES.md please; fi";
    call(
        &mut c,
        "agent.create",
        json!({ "name": "rev", "harness": "fake",
                "rules": [{ "match": "^Review task (t-\\S+) \\(round (\\d+)\\)", "actions": [{ "shell": review }] }] }),
    )
    .await;
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK do the work", "acceptance": ["test -f work.txt"],
                "review": { "agent": "rev" } }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();

    let done = wait_state(&node, &id, "completed", Duration::from_secs(120)).await;
    assert_eq!(done["repairs"], 1, "the rejection was one repair round: {done:#}");
    assert_eq!(done["review"]["agent"], "rev");
    assert_eq!(done["review"]["verdict"], "approve", "{done:#}");
    assert!(
        done["review"]["notes"]
            .as_str()
            .unwrap_or_default()
            .contains("looks good")
    );
    let head = done["head"].as_str().expect("head");
    let files = git(&repo, &["ls-tree", "--name-only", head]);
    assert!(files.contains("NOTES.md") && files.contains("work.txt"), "{files}");
    assert_eq!(git(&repo, &["rev-parse", "main"]), base);

    // The worker heard the notes, in the words the API promises.
    let lines = support::transcript(&mut c, &conv).await;
    assert!(
        lines
            .iter()
            .filter_map(|e| e["text"].as_str())
            .any(|t| t.starts_with("Review rejected:") && t.contains("add NOTES.md please")),
        "a `Review rejected:` repair in the worker's transcript"
    );
    // The reviewer read the task's diff through its own token, each round.
    let home = node.path().join("agents/rev/home");
    for round in [1, 2] {
        let stat = std::fs::read_to_string(home.join(format!("diff-{round}.txt"))).expect("the reviewer's diff");
        assert!(stat.contains("work.txt"), "round {round}: {stat}");
    }
    let kinds = task_events(&node.db(), Some(&id)).await;
    assert_eq!(kinds.iter().filter(|k| *k == "review_verdict").count(), 2, "{kinds:?}");
    // Nobody but the reviewer gives a verdict: not the node's own admin.
    let (code, out, err) = warren(&["task", "review", "approve", &id, "me", "too"], &node.path());
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("-32003") || err.contains("only its reviewer"), "{err}");
    // The reviewer's conversation is paused once the task ended.
    wait_until("the reviewer paused", Duration::from_secs(30), || {
        let target = node.target();
        async move {
            let mut c = Client::connect(&target).await.ok()?;
            let v = c.call("conversation.list", json!({ "agent": "rev" })).await.ok()?;
            v["conversations"]
                .as_array()?
                .iter()
                .all(|c| c["state"] != "active")
                .then_some(())
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_human_typing_into_the_terminal_stops_automatic_messages_until_resume() {
    let (_tmp, repo, _base, node) = rig("");
    let mut c = node.client().await;
    let rules = json!([
        { "match": "^TASK", "actions": [{ "busy": 2 }, { "shell": "echo wrong > answer.txt" }] },
        { "match": "^Acceptance failed:", "actions": [{ "shell": "echo right > answer.txt" }] },
    ]);
    agent(&mut c, "w", &repo, rules).await;
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK answer", "acceptance": ["grep -qx right answer.txt"] }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let conv = t["conversation"].as_str().expect("conversation").to_string();
    wait_state(&node, &id, "running", Duration::from_secs(30)).await;
    // A human types (and erases) a key while the worker's first turn runs.
    call(
        &mut c,
        "conversation.sendKeys",
        json!({ "conversation": conv, "keys": "x\u{7f}" }),
    )
    .await;
    let taken = call(&mut c, "task.get", json!({ "task": id })).await["task"].clone();
    assert_eq!(taken["human_takeover"], true, "{taken:#}");
    // The turn ends; nothing automatic follows: no checks, no repair.
    wait_until("the turn ended", Duration::from_secs(30), || {
        let db = node.db();
        let id = id.clone();
        async move {
            task_events(&db, Some(&id))
                .await
                .contains(&"turn_ended".to_string())
                .then_some(())
        }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let held = call(&mut c, "task.get", json!({ "task": id })).await["task"].clone();
    assert_eq!(held["state"], "running", "{held:#}");
    assert_eq!(held["checks"], json!([]), "nothing verified under a takeover: {held:#}");
    let said: Vec<String> = support::transcript(&mut c, &conv)
        .await
        .iter()
        .filter_map(|e| e["text"].as_str().map(String::from))
        .collect();
    assert!(!said.iter().any(|t| t.starts_with("Acceptance failed:")), "{said:?}");
    // Resume: the deferred verification runs, its repair goes out, and the task completes.
    let resumed = call(&mut c, "task.resume_auto", json!({ "task": id })).await["task"].clone();
    assert_eq!(resumed["human_takeover"], false, "{resumed:#}");
    let done = wait_state(&node, &id, "completed", Duration::from_secs(60)).await;
    assert_eq!(done["repairs"], 1, "{done:#}");
    let e = call_err(&mut c, "task.resume_auto", json!({ "task": id })).await;
    assert_eq!(e.code, -32009, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlapping_workspaces_and_a_busy_worker_are_refused_before_anything_is_stored() {
    let (_tmp, repo, _base, node) = rig("");
    let mut c = node.client().await;
    let rules = json!([{ "match": "^TASK", "actions": [{ "busy": 30 }] }]);
    for name in ["a", "b"] {
        call(
            &mut c,
            "agent.create",
            json!({ "name": name, "harness": "fake", "rules": rules,
                    "workspace": { "repo": repo.display().to_string(), "mode": "in_place" } }),
        )
        .await;
    }
    let first = call(
        &mut c,
        "task.start",
        json!({ "agent": "a", "goal": "TASK long", "acceptance": ["true"] }),
    )
    .await["task"]
        .clone();
    let holder = first["conversation"].as_str().expect("conversation").to_string();
    // b works in the same checkout: its lease would overlap a's.
    let e = call_err(
        &mut c,
        "task.start",
        json!({ "agent": "b", "goal": "TASK other", "acceptance": ["true"] }),
    )
    .await;
    assert_eq!(e.code, -32009, "{e:?}");
    assert!(
        e.message.contains(&holder),
        "the refusal names the holder: {}",
        e.message
    );
    // a already works (its conversation is live): a second task is refused too.
    let e = call_err(
        &mut c,
        "task.start",
        json!({ "agent": "a", "goal": "TASK again", "acceptance": ["true"] }),
    )
    .await;
    assert_eq!(e.code, -32009, "{e:?}");
    assert!(e.message.contains(&holder), "{}", e.message);
    let tasks = call(&mut c, "task.list", json!({})).await["tasks"].clone();
    assert_eq!(
        tasks.as_array().map(Vec::len),
        Some(1),
        "only the first is stored: {tasks}"
    );
    let stopped = call(&mut c, "task.stop", json!({ "task": first["id"] })).await["task"].clone();
    assert_eq!(stopped["state"], "stopped", "{stopped:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decider_approves_a_held_dialog_in_scope_and_its_approve_of_a_push_is_refused_and_audited() {
    let (_tmp, repo, base, node) = rig("[supervision]\nenabled = true\n");
    // Outside the worktree: the policy holds it (not repo-scoped).
    let listing = "ls -la /tmp";
    let mut c = node.client().await;
    let rules = json!([{ "match": "^TASK", "actions": [
        { "tool_bash": listing },
        { "tool_bash": "git push --force origin main" },
        { "shell": "echo right > answer.txt" },
    ] }]);
    supervised_agent(&mut c, &node, "w", &repo, rules).await;
    // The decider approves the listing; it tries to approve the push,
    // and denies it when the node refuses.
    let push = "warren-decide approve {{1}} ship it > $HOME/push-approve.txt 2>&1 || \
                warren-decide deny {{1}} the node refused my approve";
    call(
        &mut c,
        "agent.create",
        json!({ "name": "dec", "harness": "fake", "rules": [
            { "match": "^Decide for task (t-\\S+):[\\s\\S]*git push", "actions": [{ "shell": push }] },
            { "match": "^Decide for task (t-\\S+):[\\s\\S]*ls -la /tmp",
              "actions": [{ "shell": "warren-decide approve {{1}} reading /tmp is in scope" }] },
        ] }),
    )
    .await;
    let t = call(
        &mut c,
        "task.start",
        json!({ "agent": "w", "goal": "TASK answer", "acceptance": ["grep -qx right answer.txt"],
                "decider": { "agent": "dec", "authority": "hybrid" } }),
    )
    .await["task"]
        .clone();
    let id = t["id"].as_str().expect("id").to_string();
    let done = wait_state(&node, &id, "completed", Duration::from_secs(120)).await;
    assert_eq!(done["repairs"], 0, "{done:#}");
    let conv = done["conversation"].as_str().expect("conversation");
    let said: Vec<String> = support::transcript(&mut c, conv)
        .await
        .iter()
        .filter_map(|e| e["text"].as_str().map(String::from))
        .collect();
    assert!(
        said.iter().any(|t| t.contains(&format!("Ran: {listing} (exit 0)"))),
        "the decider's approve let the held command run: {said:?}"
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]), base, "nothing reached main");
    // The refusal reached the decider, and every answer is audited as its.
    let refused = std::fs::read_to_string(node.path().join("agents/dec/home/push-approve.txt")).expect("decider output");
    assert!(refused.contains("may not approve"), "{refused}");
    let audit = call(&mut c, "supervision.audit", json!({ "agent": "w", "limit": 200 })).await;
    let rows: Vec<&Value> = audit["entries"].as_array().expect("entries").iter().collect();
    let row = |subject: &str, outcome: &str, decision: &str| {
        rows.iter().any(|r| {
            r["trigger"] == "answer"
                && r["outcome"] == outcome
                && r["decision"] == decision
                && r["subject"].as_str().is_some_and(|s| s.contains(subject))
                && r["reason"].as_str().is_some_and(|s| s.contains("decider dec"))
        })
    };
    assert!(row(listing, "sent", "approve"), "{rows:#?}");
    assert!(
        row("git push", "skipped", "approve"),
        "the refused approve is audited: {rows:#?}"
    );
    assert!(row("git push", "sent", "deny"), "{rows:#?}");
    assert!(
        !rows.iter().any(|r| r["outcome"] == "sent"
            && r["decision"] == "approve"
            && r["subject"].as_str().is_some_and(|s| s.contains("git push"))),
        "the push was never approved: {rows:#?}"
    );
    // Only the decider answers: not the node's own admin.
    let (code, out, err) = warren(&["task", "decide", "approve", &id, "me", "too"], &node.path());
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("only its decider"), "{err}");
    for (params, field) in [
        (json!({ "task": id, "decision": "maybe", "reason": "r" }), "decision"),
        (json!({ "task": id, "decision": "deny", "reason": " " }), "reason"),
        (json!({ "task": id, "decision": "deny", "reason": "x".repeat(3000) }), "reason"),
    ] {
        let e = call_err(&mut c, "task.decide", params).await;
        assert_eq!(e.code, -32602, "{e:?}");
        assert!(e.message.starts_with(field), "{e:?}");
    }
    let kinds = task_events(&node.db(), Some(&id)).await;
    assert_eq!(kinds.iter().filter(|k| *k == "wait_started").count(), 2, "{kinds:?}");
}
