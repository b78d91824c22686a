//! The CLI's side of workspaces: `agent create --repo/--base/--in-place`,
//! the workspace lines of `agent get` and `conv get`, and `conv diff`.

use clap::Args;
use serde_json::{Value, json};

use super::{items, s};

#[derive(Args)]
pub struct RepoArgs {
    /// A git repository to work on: an absolute path on the agent's node,
    /// or a URL the node clones once into the agent's home.
    #[arg(long)]
    repo: Option<String>,
    /// The branch each conversation's worktree is cut from (default: the
    /// repository's current branch).
    #[arg(long, requires = "repo")]
    base: Option<String>,
    /// Work in the repository itself (one conversation at a time, under a
    /// lease) instead of a worktree and branch per conversation.
    #[arg(long, requires = "repo")]
    in_place: bool,
}

impl RepoArgs {
    pub fn put_into(self, p: &mut Value) -> anyhow::Result<()> {
        let Some(repo) = self.repo else { return Ok(()) };
        let mut w = json!({ "repo": repo });
        if let Some(base) = self.base {
            w["base"] = json!(base);
        }
        if self.in_place {
            w["mode"] = json!("in_place");
        }
        p["workspace"] = w;
        Ok(())
    }
}

pub(super) fn print_agent_workspace(a: &Value) {
    if let Some(w) = a.get("workspace").filter(|w| w.is_object()) {
        println!("  repo {} (base {}, {})", s(w, "repo"), s(w, "base"), s(w, "mode"));
    }
}

pub(super) fn print_conv_workspace(c: &Value) {
    if let Some(w) = c.get("workspace").filter(|w| w.is_object()) {
        let short = |k: &str| s(w, k).chars().take(12).collect::<String>();
        println!(
            "  workspace {} on {} (baseline {}, head {})",
            s(w, "path"),
            s(w, "branch"),
            short("baseline"),
            short("head")
        );
    }
}

/// The file list with +/- counts, then (unless `stat`) the patch.
pub(super) fn print_diff(v: &Value, stat: bool) {
    let (mut adds, mut dels) = (0, 0);
    let files: Vec<&Value> = items(v, "files").collect();
    for f in &files {
        let (a, d) = (
            f["additions"].as_u64().unwrap_or(0),
            f["deletions"].as_u64().unwrap_or(0),
        );
        adds += a;
        dels += d;
        println!("{:<9} +{a:<6} -{d:<6} {}", s(f, "status"), s(f, "path"));
    }
    println!(
        "{} files, +{adds} -{dels} (baseline {}, head {})",
        files.len(),
        s(v, "baseline"),
        s(v, "head")
    );
    if !stat {
        print!("{}", s(v, "patch"));
        if v["truncated"].as_bool() == Some(true) {
            println!("[the patch was cut at max_bytes]");
        }
    }
}
