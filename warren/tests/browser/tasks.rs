//! Unattended tasks in the console: a real node, a git repository and three
//! fake workers. One fails its acceptance once and its repair passes
//! (completed, committed); one cannot pass (`exit 7`, no repair allowed:
//! parked, so it needs a human); one stays busy (running, then stopped from
//! the console). The list shows them newest first with their states and
//! the parked one flagged; a task's view shows its state, branch and
//! commits, its phases, its checks with their output tails (a tail with
//! markup in it stays text) and its diff; Stop and Resume call the node and
//! show its refusals. At 1280x800 and 393x851, the phone's page never wider
//! than its screen.

use super::workspace::{OVERFLOW, git};
use super::*;

/// The completed task's acceptance: two commands, each printing a line.
const ACCEPT: [&str; 2] = [
    "echo checking answer.txt; test -f answer.txt",
    "grep -x right answer.txt",
];

/// The parked task's acceptance: markup in its output, then a failure.
const PARK: &str = "printf '<b>x</b>\\n'; exit 7";

/// A repository with one commit on `main`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("repo dir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("README.md"), "# tasks\n").expect("README");
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "the base"]);
    dir
}

/// A fake worker on `repo`: its goal (`TASK ...`) and its repair rounds
/// (`Acceptance failed: ...`) run these actions.
async fn worker(api: &mut warren::client::Client, name: &str, repo: &Path, first: Value, repair: Value) {
    let rules = json!([
        { "match": "^TASK", "actions": first },
        { "match": "^Acceptance failed:", "actions": repair },
    ]);
    call(
        api,
        "agent.create",
        json!({ "name": name, "harness": "fake", "rules": rules, "workspace": { "repo": repo.display().to_string() } }),
    )
    .await;
}

/// Starts a task; its id.
async fn start(api: &mut warren::client::Client, params: Value) -> String {
    let t = call(api, "task.start", params).await;
    t["task"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("a task id: {t}"))
        .to_string()
}

/// Task `id` once it is in `state`.
async fn task_in(api: &mut warren::client::Client, id: &str, state: &str) -> Value {
    eventually(&format!("task {id} {state}"), Duration::from_secs(90), async || {
        let t = api.call("task.get", json!({ "task": id })).await.ok()?["task"].clone();
        (t["state"] == state).then_some(t)
    })
    .await
}

/// What the list shows, row by row.
const READ_LIST: &str = "
    const rows = [...document.querySelectorAll('#task-list li')];
    if (!rows.length) return null;
    return rows.map((li) => ({ id: li.dataset.task, state: li.dataset.state, needs: li.dataset.needs,
        badge: li.querySelector('.badge[data-state]')?.textContent, flag: !!li.querySelector('.task-needs'),
        agent: li.querySelector('.task-agent')?.textContent, goal: li.querySelector('.task-goal')?.textContent,
        repairs: li.querySelector('.task-repairs')?.textContent, created: li.querySelector('.task-created')?.textContent }));";

/// What a task's view shows.
const READ_TASK: &str = "
    const s = document.querySelector('#task-state');
    if (!s) return null;
    const t = (css) => document.querySelector(css)?.textContent ?? null;
    return { state: s.dataset.state, badge: s.textContent, reason: t('#task-reason'), goal: t('#task-goal'),
        needs: !!document.querySelector('#task-summary .task-needs'), repairs: t('#task-repairs'),
        branch: t('#task-branch'), baseline: t('#task-baseline'), baseline_full: document.querySelector('#task-baseline')?.title,
        head: t('#task-head'), head_full: document.querySelector('#task-head')?.title,
        conv: document.querySelector('#task-conversation')?.getAttribute('href'),
        phases: [...document.querySelectorAll('#task-phases li')].map((li) => li.dataset.phase),
        checks: [...document.querySelectorAll('#task-checks li.check')].map((li) => ({ exit: li.dataset.exit,
            command: li.querySelector('.check-command')?.textContent, shown: li.querySelector('.check-exit')?.textContent,
            ms: li.querySelector('.check-ms')?.textContent, output: li.querySelector('pre.output')?.textContent ?? null,
            markup: li.querySelectorAll('pre.output *').length })),
        stop: !!document.querySelector('#task-stop'), resume: !!document.querySelector('#task-resume') };";

/// The diff the task view loaded at once: its files and its added lines.
const READ_DIFF: &str = "
    const files = [...document.querySelectorAll('#task-changes #diff-files li')].map((li) => [li.dataset.path, li.dataset.status]);
    const pre = document.querySelector('#task-changes #diff-patch');
    if (!files.length || !pre) return null;
    return { files, added: [...pre.querySelectorAll('.add')].flatMap((e) => e.textContent.split('\\n')) };";

/// Fails when the page is wider than its viewport (or an element sticks out).
async fn assert_fits(c: &fantoccini::Client, label: &str, width: u32, what: &str) {
    let o = c.execute(OVERFLOW, vec![]).await.expect("overflow");
    assert_eq!(o["inner"], json!(width), "{label} {what}: the viewport: {o}");
    assert!(
        o["scroll"].as_u64() <= o["width"].as_u64() && o["wide"] == json!([]),
        "{label} {what}: the page is wider than its screen: {o}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_tasks_and_shows_one_with_its_checks_phases_and_diff() {
    let (_one, driver) = start_driver().await;
    let repo = repo();
    let node = TestNode::start();
    let base = console_base(&node);
    let mut api = node.client().await;
    let shell = |cmd: &str| json!([{ "shell": cmd }]);
    worker(
        &mut api,
        "fixer",
        repo.path(),
        shell("echo wrong > answer.txt"),
        shell("echo right > answer.txt"),
    )
    .await;
    worker(
        &mut api,
        "stuck",
        repo.path(),
        shell("echo attempt > work.txt"),
        shell("true"),
    )
    .await;
    worker(&mut api, "slow", repo.path(), json!([{ "busy": 3600 }]), shell("true")).await;

    let goal = "TASK write the right answer\nin answer.txt, on one line";
    let fixed = start(
        &mut api,
        json!({ "agent": "fixer", "goal": goal, "acceptance": ACCEPT }),
    )
    .await;
    let parked = start(
        &mut api,
        json!({ "agent": "stuck", "goal": "TASK the impossible", "acceptance": [PARK], "max_repairs": 0 }),
    )
    .await;
    let slow = start(
        &mut api,
        json!({ "agent": "slow", "goal": "TASK take your time", "acceptance": ["true"] }),
    )
    .await;

    let done = task_in(&mut api, &fixed, "completed").await;
    let stuck = task_in(&mut api, &parked, "parked").await;
    task_in(&mut api, &slow, "running").await;
    assert_eq!(done["repairs"], 1, "one repair round: {done:#}");
    let head = done["head"].as_str().expect("head").to_string();
    let baseline = done["baseline"].as_str().expect("baseline").to_string();
    assert_ne!(head, baseline, "the completed work is committed: {done:#}");
    assert_eq!(git(repo.path(), &["show", &format!("{head}:answer.txt")]), "right\n");
    let api_checks = done["checks"].as_array().expect("checks");
    assert_eq!(api_checks.len(), 2, "the last round ran both commands: {done:#}");
    let phases: Vec<Value> = done["phases"]
        .as_array()
        .expect("phases")
        .iter()
        .map(|p| p["phase"].clone())
        .collect();
    for p in ["started", "checks_failed", "repair", "checks_passed", "completed"] {
        assert!(phases.contains(&json!(p)), "phase {p}: {done:#}");
    }

    for (pass, (label, width, height)) in VIEWPORTS.iter().enumerate() {
        let profile = tempfile::tempdir().expect("profile dir");
        let c = browser(&driver, *width, *height, profile.path()).await;
        let (link, _) = pairing_link(&node, &[]);
        c.goto(&link).await.expect("open the pairing link");
        wait_js(
            &c,
            "signed in",
            Duration::from_secs(20),
            "return document.body.dataset.conn === 'online'",
        )
        .await;

        // The list: newest first, as the node orders them, states as badges,
        // the parked one flagged, the goal's first line only.
        let listed = call(&mut api, "task.list", json!({})).await;
        let want: Vec<(String, String)> = listed["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|t| {
                (
                    t["id"].as_str().unwrap_or_default().to_string(),
                    t["state"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        assert_eq!(want.len(), 3, "{listed}");
        assert_eq!(want[0].0, slow, "the newest first: {listed}");
        c.goto(&format!("{base}#/tasks")).await.expect("the tasks view");
        click(&c, "#nav-tasks").await;
        let rows = wait_js(&c, "the task list", Duration::from_secs(20), READ_LIST).await;
        let shown: Vec<(String, String)> = rows
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                (
                    r["id"].as_str().unwrap_or_default().to_string(),
                    r["badge"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        assert_eq!(shown, want, "{label}: the list, newest first, with each state: {rows}");
        let row = |id: &str| {
            rows.as_array()
                .into_iter()
                .flatten()
                .find(|r| r["id"] == id)
                .cloned()
                .expect("a row")
        };
        let (r_fixed, r_parked, r_slow) = (row(&fixed), row(&parked), row(&slow));
        assert_eq!(
            r_fixed["goal"], "TASK write the right answer",
            "{label}: the goal's first line: {rows}"
        );
        assert_eq!(r_fixed["repairs"], "repairs 1/3", "{label}: {rows}");
        assert_eq!(r_fixed["agent"], "fixer", "{label}: {rows}");
        assert!(
            r_fixed["created"].as_str().is_some_and(|s| !s.is_empty()),
            "{label}: {rows}"
        );
        assert_eq!(
            (&r_parked["needs"], &r_parked["flag"]),
            (&json!("yes"), &json!(true)),
            "{label}: {rows}"
        );
        assert_eq!(r_parked["repairs"], "repairs 0/0", "{label}: {rows}");
        for r in [&r_fixed, &r_slow] {
            assert_eq!(
                (&r["needs"], &r["flag"]),
                (&json!("no"), &json!(false)),
                "{label}: {rows}"
            );
        }
        let count = c
            .execute("const n = document.querySelector('#parked-count'); return n && !n.classList.contains('hidden') ? n.textContent : null", vec![])
            .await
            .expect("count");
        assert_eq!(count, json!("1"), "{label}: the Tasks entry counts the parked task");
        assert_fits(&c, label, *width, "task list").await;
        shot(&c, &format!("{label}-10-tasks"), &format!("{label} {width}x{height}: the tasks, newest first: state badges, repairs n/max, the parked one flagged as needing you")).await;

        // The completed task: its record, checks, phases and committed diff.
        click(&c, &format!("#task-list li[data-task='{fixed}'] a")).await;
        let t = wait_js(
            &c,
            "the completed task",
            Duration::from_secs(20),
            &format!("const r = (() => {{ {READ_TASK} }})(); return r && r.state === 'completed' && r.checks.length ? r : null"),
        )
        .await;
        assert_eq!(t["badge"], "completed", "{label}: {t}");
        assert_eq!(t["goal"], goal, "{label}: the whole goal: {t}");
        assert_eq!(t["repairs"], "repairs 1/3", "{label}: {t}");
        assert_eq!(t["branch"], done["branch"], "{label}: {t}");
        assert_eq!(
            (&t["baseline_full"], &t["head_full"]),
            (&json!(baseline), &json!(head)),
            "{label}: {t}"
        );
        assert!(
            head.starts_with(t["head"].as_str().unwrap_or("?")) && t["head"].as_str().map(str::len) < Some(40),
            "{label}: the head shown short: {t}"
        );
        assert_eq!(
            t["conv"],
            format!("#/conv/{}", done["conversation"].as_str().unwrap_or_default()),
            "{label}: {t}"
        );
        assert_eq!(
            t["phases"],
            json!(phases),
            "{label}: the timeline is the node's phases: {t}"
        );
        let checks = t["checks"].as_array().expect("checks");
        assert_eq!(checks.len(), 2, "{label}: {t}");
        for (shown, (cmd, out)) in checks
            .iter()
            .zip(ACCEPT.iter().zip(["checking answer.txt\n", "right\n"]))
        {
            assert_eq!(shown["command"], *cmd, "{label}: {t}");
            assert_eq!(
                (&shown["exit"], &shown["shown"]),
                (&json!("0"), &json!("exit 0")),
                "{label}: {t}"
            );
            assert_eq!(shown["output"], *out, "{label}: the output tail: {t}");
            assert!(shown["ms"].as_str().is_some_and(|m| m.ends_with(" ms")), "{label}: {t}");
        }
        assert_eq!(
            (&t["stop"], &t["resume"]),
            (&json!(false), &json!(false)),
            "{label}: an ended task offers no moves: {t}"
        );
        let d = wait_js(&c, "the task's diff", Duration::from_secs(20), READ_DIFF).await;
        assert_eq!(d["files"], json!([["answer.txt", "added"]]), "{label}: {d}");
        assert!(
            d["added"].as_array().is_some_and(|a| a.contains(&json!("+right"))),
            "{label}: {d}"
        );
        assert_fits(&c, label, *width, "completed task").await;
        shot(
            &c,
            &format!("{label}-11-task"),
            &format!("{label}: a completed task: state, branch, baseline and head, the phases as a timeline"),
        )
        .await;
        c.execute("document.querySelector('#task-checks').scrollIntoView()", vec![])
            .await
            .expect("scroll");
        shot(
            &c,
            &format!("{label}-11b-task-checks"),
            &format!("{label}: the same task's checks (command, exit, ms, output tail) and its diff"),
        )
        .await;

        // The parked task: flagged, its failed check's tail as text.
        c.goto(&format!("{base}#/task/{parked}"))
            .await
            .expect("the parked task");
        let t = wait_js(
            &c,
            "the parked task",
            Duration::from_secs(20),
            &format!(
                "const r = (() => {{ {READ_TASK} }})(); return r && r.state === 'parked' && r.checks.length ? r : null"
            ),
        )
        .await;
        assert_eq!(t["needs"], true, "{label}: a parked task needs you: {t}");
        assert_eq!(t["reason"], stuck["reason"], "{label}: {t}");
        let check = &t["checks"][0];
        assert_eq!(check["command"], PARK, "{label}: {t}");
        assert_eq!(
            (&check["exit"], &check["shown"]),
            (&json!("7"), &json!("exit 7")),
            "{label}: {t}"
        );
        assert_eq!(check["output"], "<b>x</b>\n", "{label}: the tail shows as text: {t}");
        assert_eq!(check["markup"], 0, "{label}: the tail became markup: {t}");
        let d = wait_js(&c, "the parked task's diff", Duration::from_secs(20), READ_DIFF).await;
        assert_eq!(
            d["files"],
            json!([["work.txt", "added"]]),
            "{label}: its uncommitted work is shown: {d}"
        );
        assert_fits(&c, label, *width, "parked task").await;
        c.execute("document.querySelector('#task-checks').scrollIntoView()", vec![])
            .await
            .expect("scroll");
        shot(
            &c,
            &format!("{label}-12-task-parked"),
            &format!(
                "{label}: a parked task needing you: its reason and the failed check's output, markup shown as text"
            ),
        )
        .await;

        // The holds view lists it with the held dialogs.
        click(&c, "#nav-holds").await;
        wait_js(
            &c,
            "the parked task among the holds",
            Duration::from_secs(20),
            &format!(
                "return !!document.querySelector(\"#parked-tasks:not(.hidden) li[data-task='{parked}'] .task-needs\")"
            ),
        )
        .await;
        assert_fits(&c, label, *width, "holds").await;

        if pass == 0 {
            // The running task: no Resume until a human takes over; after
            // keys typed into its terminal the console says so and offers
            // Resume, which clears it; Stop stops it.
            c.goto(&format!("{base}#/task/{slow}")).await.expect("the running task");
            wait_js(
                &c,
                "the running task's moves",
                Duration::from_secs(20),
                "return document.querySelector('#task-state')?.dataset.state === 'running' && !!document.querySelector('#task-stop') && !document.querySelector('#task-resume')",
            )
            .await;
            let slow_conv = call(&mut api, "task.get", json!({ "task": slow })).await["task"]["conversation"].clone();
            call(
                &mut api,
                "conversation.sendKeys",
                json!({ "conversation": slow_conv, "keys": "x\u{7f}" }),
            )
            .await;
            wait_js(
                &c,
                "the takeover shown",
                Duration::from_secs(20),
                "return !!document.querySelector('#task-takeover') && !!document.querySelector('#task-resume')",
            )
            .await;
            click(&c, "#task-resume").await;
            wait_js(
                &c,
                "the takeover cleared",
                Duration::from_secs(20),
                "return !document.querySelector('#task-takeover') && !document.querySelector('#task-resume')",
            )
            .await;
            let t = call(&mut api, "task.get", json!({ "task": slow })).await;
            assert_eq!(t["task"]["human_takeover"], false, "{t}");
            click(&c, "#task-stop").await;
            wait_js(
                &c,
                "the task stopped",
                Duration::from_secs(30),
                "return document.querySelector('#task-state')?.dataset.state === 'stopped' && !document.querySelector('#task-stop')",
            )
            .await;
            let t = call(&mut api, "task.get", json!({ "task": slow })).await;
            assert_eq!(t["task"]["state"], "stopped", "{t}");
        }
        c.close().await.expect("close");
    }
    assert_eq!(
        git(repo.path(), &["rev-parse", "main"]).trim(),
        baseline,
        "the base branch is untouched"
    );
}
