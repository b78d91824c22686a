//! A conversation's workspace in the console: an agent on a real git
//! repository, its conversation's worktree changed (one commit, one edit
//! left uncommitted), and the conversation view showing the branch, the
//! baseline and the diff (files, +/- counts, the patch coloured by line) at
//! 1280x800 and 393x851, the phone's page never wider than its screen.

use super::*;

/// `git ARGS` in `dir` (any owner: the worktree is the node's); its stdout.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("run git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with three files in one commit on `main`.
fn repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("repo dir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(dir.path().join("README.md"), "# demo\n\nA line to change.\n").expect("README");
    std::fs::write(dir.path().join("notes.txt"), "first note\nsecond note\n").expect("notes");
    std::fs::create_dir_all(dir.path().join("src")).expect("src");
    std::fs::write(dir.path().join("src/lib.rs"), "pub fn one() -> u32 {\n    1\n}\n").expect("lib");
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "the base"]);
    dir
}

/// A line far wider than a phone (it must scroll inside the patch's box).
fn long_line() -> String {
    format!("a very long note: {}", "wide ".repeat(60).trim_end())
}

/// What the page shows of the diff, read from its elements.
const READ_DIFF: &str = "
    const files = [...document.querySelectorAll('#diff-files li')].map(li => ({
        path: li.dataset.path, status: li.dataset.status,
        plus: li.querySelector('.plus')?.textContent, minus: li.querySelector('.minus')?.textContent }));
    const pre = document.querySelector('#diff-patch');
    if (!files.length || !pre) return null;
    const lines = (cls) => [...pre.querySelectorAll('.' + cls)].flatMap(e => e.textContent.split('\\n'));
    const rgb = (cls) => getComputedStyle(pre.querySelector('.' + cls)).color.match(/\\d+/g).map(Number);
    return { files, totals: document.querySelector('#diff-totals')?.textContent,
             added: lines('add'), removed: lines('del'), headers: lines('file'), hunks: lines('hunk'),
             green: rgb('add'), red: rgb('del'), truncated: !!document.querySelector('#diff-truncated'),
             patch_scrolls: pre.scrollWidth > pre.clientWidth,
             injected: !!document.querySelector('#injected') };";

/// Elements reaching past the viewport's sides that no scrolling box of
/// theirs clips, and the page's own scroll width against its viewport's.
pub(super) const OVERFLOW: &str = "
    const w = document.documentElement.clientWidth;
    const clipped = (e) => { for (let p = e.parentElement; p && p !== document.body; p = p.parentElement)
        if (getComputedStyle(p).overflowX !== 'visible') return true; return false; };
    const wide = [...document.querySelectorAll('body *')].filter((e) => {
        const r = e.getBoundingClientRect();
        return r.width > 0 && (r.right > w + 1 || r.left < -1) && !clipped(e); })
      .map((e) => `${e.tagName}#${e.id}.${e.className}`);
    return { inner: window.innerWidth, width: w, scroll: document.documentElement.scrollWidth, wide: wide.slice(0, 10) };";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conversation_view_shows_its_workspace_diff() {
    let (_one, driver) = start_driver().await;
    let repo = repo();
    let node = TestNode::start();
    let base = console_base(&node);
    let mut api = node.client().await;
    call(
        &mut api,
        "agent.create",
        json!({ "name": "builder", "harness": "fake", "workspace": { "repo": repo.path().display().to_string() } }),
    )
    .await;
    let conv = conversation_id(&mut api, "builder").await;
    let got = call(&mut api, "conversation.get", json!({ "conversation": conv })).await;
    let ws = got["conversation"]["workspace"].clone();
    let path = std::path::PathBuf::from(ws["path"].as_str().unwrap_or_else(|| panic!("a workspace path: {got}")));
    let branch = ws["branch"].as_str().expect("branch").to_string();
    let baseline = ws["baseline"].as_str().expect("baseline").to_string();
    assert_eq!(branch, format!("warren/builder/{conv}"), "{got}");
    assert_eq!(baseline.len(), 40, "a full hash: {got}");

    // In the worktree: one commit (an edit and a new file), one edit left
    // uncommitted (with a line wider than a phone).
    std::fs::write(path.join("README.md"), "# demo\n\nA changed line.\nAnd one more.\n").expect("edit README");
    std::fs::write(
        path.join("src/added.rs"),
        "// <img id=\"injected\" src=\"x\"> stays text\npub fn two() -> u32 {\n    2\n}\n",
    )
    .expect("add a file");
    git(&path, &["add", "-A"]);
    git(&path, &["commit", "-q", "-m", "a change on the branch"]);
    let head = git(&path, &["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(path.join("notes.txt"), format!("first note\n{}\n", long_line())).expect("edit notes");
    assert_eq!(
        git(repo.path(), &["rev-parse", "main"]).trim(),
        baseline,
        "the base branch is untouched"
    );

    // The node's diff: what the page must show.
    let d = call(&mut api, "conversation.diff", json!({ "conversation": conv })).await;
    let mut files: Vec<(String, String, u64, u64)> = d["files"]
        .as_array()
        .unwrap_or_else(|| panic!("files: {d}"))
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap_or_default().to_string(),
                f["status"].as_str().unwrap_or_default().to_string(),
                f["additions"].as_u64().unwrap_or(u64::MAX),
                f["deletions"].as_u64().unwrap_or(u64::MAX),
            )
        })
        .collect();
    files.sort();
    let want = [
        ("README.md", "modified", 2, 1),
        ("notes.txt", "modified", 1, 1),
        ("src/added.rs", "added", 4, 0),
    ]
    .map(|(p, s, a, r)| (p.to_string(), s.to_string(), a, r));
    assert_eq!(files, want, "{d}");
    assert_eq!(d["head"], head.as_str(), "{d}");
    assert_eq!(d["baseline"], baseline.as_str(), "{d}");

    for (label, width, height) in VIEWPORTS {
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
        c.goto(&format!("{base}#/conv/{conv}")).await.expect("the conversation");
        let shown = wait_js(
            &c,
            "the workspace section with the new head",
            Duration::from_secs(20),
            &format!(
                "const ws = document.querySelector('#workspace:not(.hidden)');
             const b = document.querySelector('#workspace-baseline');
             const h = document.querySelector('#workspace-head');
             return ws && b && h && h.title === {head:?} ?
               {{ branch: document.querySelector('#workspace-branch').textContent, baseline: b.textContent,
                 baseline_full: b.title, path: document.querySelector('#workspace-path').textContent }} : null"
            ),
        )
        .await;
        assert_eq!(shown["branch"], branch.as_str(), "{label}: {shown}");
        assert_eq!(shown["baseline_full"], baseline.as_str(), "{label}: {shown}");
        assert!(
            baseline.starts_with(shown["baseline"].as_str().unwrap_or("?"))
                && shown["baseline"].as_str().map(str::len) < Some(40),
            "{label}: the baseline shown short: {shown}"
        );
        assert_eq!(shown["path"], path.display().to_string().as_str(), "{label}: {shown}");

        click(&c, "#diff-load").await;
        let page = wait_js(&c, "the diff", Duration::from_secs(20), READ_DIFF).await;
        let mut files: Vec<(String, String, String, String)> = page["files"]
            .as_array()
            .expect("files")
            .iter()
            .map(|f| {
                let s = |k: &str| f[k].as_str().unwrap_or_default().to_string();
                (s("path"), s("status"), s("plus"), s("minus"))
            })
            .collect();
        files.sort();
        let want_shown = want
            .clone()
            .map(|(p, s, a, r)| (p, s, format!("+{a}"), format!("-{r}")));
        assert_eq!(files, want_shown, "{label}: {page}");
        let totals = page["totals"].as_str().unwrap_or_default();
        assert!(
            totals.contains("3 files changed") && totals.contains("+7") && totals.contains("-2"),
            "{label}: {totals}"
        );
        let has = |key: &str, line: &str| page[key].as_array().into_iter().flatten().any(|l| l == line);
        assert!(has("added", "+A changed line."), "{label}: {page}");
        assert!(has("added", &format!("+{}", long_line())), "{label}: {page}");
        assert!(has("removed", "-A line to change."), "{label}: {page}");
        assert!(has("removed", "-second note"), "{label}: {page}");
        assert!(has("headers", "+++ b/src/added.rs"), "{label}: {page}");
        assert!(
            page["hunks"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|l| l.as_str().is_some_and(|l| l.starts_with("@@ "))),
            "{label}: {page}"
        );
        assert!(
            has("added", "+// <img id=\"injected\" src=\"x\"> stays text"),
            "{label}: the patch's markup shows as text: {page}"
        );
        assert_eq!(page["injected"], false, "{label}: the patch became markup: {page}");
        let rgb = |key: &str| -> Vec<u64> {
            page[key]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_u64)
                .collect()
        };
        let (green, red) = (rgb("green"), rgb("red"));
        assert!(
            green[1] > green[0] && green[1] > green[2],
            "{label}: added lines not green: {page}"
        );
        assert!(
            red[0] > red[1] && red[0] > red[2],
            "{label}: removed lines not red: {page}"
        );
        assert_eq!(page["truncated"], false, "{label}: {page}");
        assert_eq!(
            page["patch_scrolls"], true,
            "{label}: the long line scrolls inside the patch: {page}"
        );

        let o = c.execute(OVERFLOW, vec![]).await.expect("overflow");
        assert_eq!(o["inner"], json!(width), "{label}: the viewport: {o}");
        assert!(
            o["scroll"].as_u64() <= o["width"].as_u64() && o["wide"] == json!([]),
            "{label}: the page is wider than its screen: {o}"
        );
        c.execute("document.querySelector('#workspace').scrollIntoView()", vec![])
            .await
            .expect("scroll");
        shot(
            &c,
            &format!("{label}-8-workspace"),
            &format!(
                "{label} {width}x{height}: a conversation's workspace (branch, baseline, head, path) and its changes: files with +/- counts"
            ),
        )
        .await;
        c.execute("document.querySelector('#diff-patch').scrollIntoView()", vec![])
            .await
            .expect("scroll");
        shot(
            &c,
            &format!("{label}-9-workspace-patch"),
            &format!("{label}: the same diff's patch, monospace, added lines green, removed red, hunk headers muted"),
        )
        .await;

        // The fleet view's form creates an agent on a repository.
        c.goto(&format!("{base}#/fleet")).await.expect("the fleet view");
        let agent = format!("web-repo-{label}");
        click(&c, "#new-agent").await;
        type_into(&c, "#new-agent-name", &agent).await;
        type_into(&c, "#new-agent-repo", &repo.path().display().to_string()).await;
        type_into(&c, "#new-agent-base", "main").await;
        click(&c, "#create-agent").await;
        wait_js(
            &c,
            "the new agent's view",
            Duration::from_secs(20),
            &format!("return location.hash === '#/agent/{agent}'"),
        )
        .await;
        let shown = wait_js(
            &c,
            "the agent's repository",
            Duration::from_secs(20),
            "const r = document.querySelector('#agent-repo'); return r ? r.textContent : null",
        )
        .await;
        let shown = shown.as_str().unwrap_or_default().to_string();
        assert!(
            shown.contains(&repo.path().display().to_string()) && shown.contains("from main"),
            "{label}: {shown}"
        );
        // The agent's egress: its allow-list and what was refused (nothing yet).
        let egress = wait_js(
            &c,
            "the agent's egress",
            Duration::from_secs(20),
            "const a = document.querySelector('#egress-allow'); const l = document.querySelector('#egress'); \
             return a && a.textContent && l && l.textContent ? a.textContent + ' | ' + l.textContent : null",
        )
        .await;
        let egress = egress.as_str().unwrap_or_default();
        assert!(
            egress.contains("the model endpoint") && egress.contains("Nothing refused."),
            "{label}: {egress}"
        );
        let created = call(&mut api, "agent.get", json!({ "agent": agent })).await;
        assert_eq!(
            created["agent"]["workspace"],
            json!({ "repo": repo.path().display().to_string(), "base": "main", "mode": "worktree" }),
            "{label}: {created}"
        );
        c.close().await.expect("close");
    }
}
