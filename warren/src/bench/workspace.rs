//! Workspaces' costs on real git repositories: making a worktree as the
//! repository grows, what a workspace adds to a conversation's start (a real
//! node, the fake CLI), and the diff as the number of changed files grows.

use super::*;
use node::workspace::{diff, repo};

/// A repository of `n` small files in 100 directories, one commit.
fn make_repo(path: &Path, n: usize) -> anyhow::Result<()> {
    std::fs::create_dir_all(path)?;
    git(path, &["init", "-q", "-b", "main"])?;
    for i in 0..n {
        let d = path.join(format!("d{:02}", i % 100));
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join(format!("f{i}.txt")), format!("line one of {i}\nline two\n"))?;
    }
    git(path, &["add", "-A"])?;
    git(path, &["commit", "-qm", "files"]).map(drop)
}

pub(super) async fn bench_workspace(args: &BenchArgs) -> anyhow::Result<()> {
    let scratch = scratch(&args.dir, "workspace")?;
    let samples = args.samples.clamp(3, 10);
    let mut repos = vec![];
    for n in [1_000usize, 3_000, 10_000] {
        let path = scratch.path.join(format!("repo-{n}"));
        make_repo(&path, n)?;
        let facts = repo::inspect(&path).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        let base = repo::resolve_base(&facts, "main")
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let mut ms = vec![];
        for i in 0..samples {
            let wt = scratch.path.join(format!("wt-{n}-{i}"));
            let t0 = Instant::now();
            repo::add_worktree(&facts, &wt, &format!("bench/{i}"), &base)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
        }
        let (p50, _, max) = summary(ms);
        println!(
            "workspace worktree creation, {n:>6} files, {samples} worktrees: p50 {p50:.0} ms, max {max:.0} ms (target <= 1000 ms at 10,000)"
        );
        repos.push((n, path, facts, base));
    }

    // The diff against the baseline as the changed files grow: half of them
    // committed on the branch, half not (one of each is a new file).
    let (_, _, facts, base) = repos.last().context("the 10,000-file repository")?;
    for changed in [100usize, 1_000, 3_000] {
        let wt = scratch.path.join(format!("diff-{changed}"));
        repo::add_worktree(facts, &wt, &format!("diff/{changed}"), base)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        for i in 0..changed {
            let f = wt.join(format!("d{:02}/f{i}.txt", i % 100));
            std::fs::write(&f, format!("line one of {i}, changed\nline two\nline three\n"))?;
            if i == changed / 2 {
                git(&wt, &["commit", "-qam", "half"])?;
            }
        }
        std::fs::write(wt.join("new.txt"), "new\n")?;
        let mut ms = vec![];
        let mut files = 0;
        for _ in 0..samples {
            let t0 = Instant::now();
            let d = diff::diff(
                &facts.toplevel,
                &wt,
                &format!("diff/{changed}"),
                base,
                facts.owner,
                1 << 20,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
            files = d.files.len();
        }
        let (p50, _, max) = summary(ms);
        println!(
            "workspace diff, {changed:>5} changed files ({files} listed, patch <= 1 MiB): p50 {p50:.0} ms, max {max:.0} ms (target <= 200 ms at 1,000)"
        );
    }

    // A conversation's start with and without a workspace, on a real node.
    let data = scratch.path.join("node");
    std::fs::create_dir_all(&data)?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &data)?;
    let mut c = Client::connect(&node.target).await?;
    let (_, small, _, _) = repos.first().context("the 1,000-file repository")?;
    let big = &repos.last().context("the 10,000-file repository")?.1;
    c.call(m::AGENT_CREATE, json!({ "name": "plain", "harness": "fake" }))
        .await?;
    for (name, path) in [("ws1k", small), ("ws10k", big)] {
        c.call(
            m::AGENT_CREATE,
            json!({ "name": name, "harness": "fake", "workspace": { "repo": path.display().to_string() } }),
        )
        .await?;
    }
    let mut medians = vec![];
    for agent in ["plain", "ws1k", "ws10k"] {
        let mut ms = vec![];
        for _ in 0..samples {
            let t0 = Instant::now();
            let v = c.call(m::CONVERSATION_START, json!({ "agent": agent })).await?;
            ms.push(t0.elapsed().as_secs_f64() * 1e3);
            let id = v["conversation"]["id"].as_str().context("conversation id")?.to_string();
            c.call(m::CONVERSATION_TERMINATE, json!({ "conversation": id })).await?;
        }
        let (p50, _, max) = summary(ms);
        medians.push(p50);
        println!("workspace conversation start ({agent}), {samples} starts to ready: p50 {p50:.0} ms, max {max:.0} ms");
    }
    println!(
        "workspace extra start time over a plain conversation: {:.0} ms with a 1,000-file repository, {:.0} ms with a 10,000-file one (target <= 200 ms)",
        medians[1] - medians[0],
        medians[2] - medians[0]
    );
    drop(node);
    Ok(())
}
