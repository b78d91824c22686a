//! A workspace's changes against its baseline: committed and uncommitted
//! (untracked files too), without touching the worktree's own index.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use console_api::{Diff, DiffFile};

use super::git::{Git, GitError, Owner, chown_for, filter_overrides};

/// The file list (raw + numstat) may be long, but not without end.
const LIST_CAP: usize = 64 << 20;

/// The diff of worktree `path` against `baseline`, the patch cut at
/// `max_bytes`. When the worktree is gone (archived), `branch` is diffed
/// from `repo` instead (committed changes only).
pub async fn diff(
    repo: &Path,
    path: &Path,
    branch: &str,
    baseline: &str,
    owner: Owner,
    max_bytes: usize,
) -> Result<Diff, GitError> {
    if !path.exists() {
        return archived_diff(repo, branch, baseline, owner, max_bytes).await;
    }
    let head = super::repo::head(path, owner).await?;
    let real_index = Git::new("git rev-parse")
        .dir(path)
        .owner(owner)
        .args(["rev-parse", "--path-format=absolute", "--git-path", "index"])
        .text()
        .await?;
    let scratch = Scratch::new(owner)?;
    let tmp_index = scratch.dir.join("index");
    // Reading worktree files must not run a filter the repo configures.
    let mut env: Vec<(OsString, OsString)> = filter_overrides(path, owner, &[]).await?;
    env.push(("GIT_INDEX_FILE".into(), tmp_index.clone().into()));
    // Seeded from the worktree's index (its stat data spares rehashing
    // unchanged files), else from HEAD.
    let seeded = std::fs::copy(&real_index, &tmp_index).is_ok() && chown_for(&tmp_index, owner).is_ok();
    if !seeded {
        let _ = std::fs::remove_file(&tmp_index);
        Git::new("git read-tree")
            .dir(path)
            .owner(owner)
            .envs(&env)
            .args(["read-tree", "HEAD"])
            .run()
            .await?;
    }
    // Untracked files join the scratch index as intent-to-add: the diff
    // then shows them as added, and no object is written to the repository.
    let untracked = Git::new("git ls-files")
        .dir(path)
        .owner(owner)
        .envs(&env)
        .args(["ls-files", "--others", "--exclude-standard", "-z"])
        .stdout_cap(LIST_CAP)
        .run()
        .await?;
    if untracked.truncated {
        return Err(GitError::new(
            "git ls-files",
            format!("the list of untracked files is over {LIST_CAP} bytes"),
        ));
    }
    if !untracked.stdout.is_empty() {
        let list = scratch.dir.join("untracked");
        std::fs::write(&list, &untracked.stdout).map_err(|e| scratch_err(&list, &e))?;
        chown_for(&list, owner).map_err(|e| scratch_err(&list, &e))?;
        Git::new("git add")
            .dir(path)
            .owner(owner)
            .envs(&env)
            .env("GIT_LITERAL_PATHSPECS", "1")
            .args(["add", "--intent-to-add", "--pathspec-file-nul", "--pathspec-from-file"])
            .arg(&list)
            .run()
            .await?;
    }
    let list = Git::new("git diff")
        .dir(path)
        .owner(owner)
        .envs(&env)
        .args([
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--raw",
            "--numstat",
            "-z",
            "--find-renames",
        ])
        .args(["--end-of-options", baseline])
        .stdout_cap(LIST_CAP)
        .run()
        .await?;
    let patch = Git::new("git diff")
        .dir(path)
        .owner(owner)
        .envs(&env)
        .args(["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--find-renames"])
        .args(["--end-of-options", baseline])
        .stdout_cap(max_bytes.saturating_add(1))
        .run()
        .await?;
    drop(scratch);
    finish(baseline, head, &list, &patch.stdout, max_bytes)
}

/// An archived conversation: what its branch holds past the baseline.
async fn archived_diff(
    repo: &Path,
    branch: &str,
    baseline: &str,
    owner: Owner,
    max_bytes: usize,
) -> Result<Diff, GitError> {
    let tip = Git::new("git rev-parse")
        .dir(repo)
        .owner(owner)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .output()
        .await?;
    if !tip.success {
        // The branch was deleted: it held nothing past the baseline.
        return Ok(Diff {
            baseline: baseline.to_string(),
            head: baseline.to_string(),
            files: Vec::new(),
            patch: String::new(),
            truncated: false,
        });
    }
    let head = tip.text();
    let list = Git::new("git diff")
        .dir(repo)
        .owner(owner)
        .args([
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--raw",
            "--numstat",
            "-z",
            "--find-renames",
        ])
        .args(["--end-of-options", baseline, &head])
        .stdout_cap(LIST_CAP)
        .run()
        .await?;
    let patch = Git::new("git diff")
        .dir(repo)
        .owner(owner)
        .args(["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--find-renames"])
        .args(["--end-of-options", baseline, &head])
        .stdout_cap(max_bytes.saturating_add(1))
        .run()
        .await?;
    finish(baseline, head, &list, &patch.stdout, max_bytes)
}

fn finish(
    baseline: &str,
    head: String,
    list: &super::git::Output,
    patch: &[u8],
    max_bytes: usize,
) -> Result<Diff, GitError> {
    if list.truncated {
        return Err(GitError::new(
            "git diff",
            format!("the list of changed files is over {LIST_CAP} bytes"),
        ));
    }
    let files = parse_raw_numstat(&list.stdout).map_err(|e| GitError::new("reading git diff's output", e))?;
    let (patch, truncated) = cut(patch, max_bytes);
    Ok(Diff {
        baseline: baseline.to_string(),
        head,
        files,
        patch,
        truncated,
    })
}

/// The patch as text, cut at `max_bytes` on a character boundary.
fn cut(patch: &[u8], max_bytes: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(patch);
    if text.len() <= max_bytes {
        return (text.into_owned(), false);
    }
    let mut end = max_bytes;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (text[..end].to_string(), true)
}

/// git's status letter spelled out.
fn status_word(letter: u8) -> &'static str {
    match letter {
        b'A' => "added",
        b'D' => "deleted",
        b'R' => "renamed",
        b'C' => "copied",
        b'T' => "type_changed",
        _ => "modified",
    }
}

/// Parses `git diff --raw --numstat -z` output: every raw record
/// (`:<modes> <oids> <status>\0<path>\0[<new path>\0]`), then one numstat
/// record per file in the same order (`<add>\t<del>\t<path>\0` or, for a
/// rename, `<add>\t<del>\t\0<old>\0<new>\0`; `-` counts for a binary file).
pub fn parse_raw_numstat(out: &[u8]) -> Result<Vec<DiffFile>, String> {
    let mut tokens = out.split(|b| *b == 0).peekable();
    let mut files = Vec::new();
    let text = |t: &[u8]| String::from_utf8_lossy(t).into_owned();
    while let Some(meta) = tokens.next_if(|t| t.first() == Some(&b':')) {
        let status = meta.rsplit(|b| *b == b' ').next().and_then(|s| s.first().copied());
        let Some(status) = status else {
            return Err(format!("a raw record without a status: {}", text(meta)));
        };
        let mut path = tokens.next().ok_or("a raw record without a path")?;
        if status == b'R' || status == b'C' {
            path = tokens.next().ok_or("a rename without its new path")?;
        }
        files.push(DiffFile {
            path: text(path),
            status: status_word(status).to_string(),
            additions: 0,
            deletions: 0,
        });
    }
    for file in &mut files {
        let record = tokens.next().ok_or("fewer numstat records than files")?;
        let mut fields = record.splitn(3, |b| *b == b'\t');
        let (Some(add), Some(del), Some(rest)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(format!(
                "a numstat record that is not <add>\\t<del>\\t<path>: {}",
                text(record)
            ));
        };
        if rest.is_empty() {
            // A rename: old and new paths follow.
            tokens.next().ok_or("a numstat rename without its old path")?;
            tokens.next().ok_or("a numstat rename without its new path")?;
        }
        let count = |f: &[u8]| -> Result<u64, String> {
            if f == b"-" {
                return Ok(0);
            }
            std::str::from_utf8(f)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("a bad count {}", text(f)))
        };
        file.additions = count(add)?;
        file.deletions = count(del)?;
    }
    if tokens.any(|t| !t.is_empty()) {
        return Err("more numstat records than files".into());
    }
    Ok(files)
}

/// A private directory for the diff's index and file list, the owner's
/// when git runs as the owner, removed when dropped.
struct Scratch {
    dir: PathBuf,
}

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

fn scratch_err(path: &Path, e: &std::io::Error) -> GitError {
    GitError::new("preparing the diff", format!("{}: {e}", path.display()))
}

impl Scratch {
    fn new(owner: Owner) -> Result<Self, GitError> {
        let seq = SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed);
        let name = format!("warren-diff-{}-{seq}-{:x}", std::process::id(), rand::random::<u64>());
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir(&dir).map_err(|e| scratch_err(&dir, &e))?;
        let scratch = Self { dir };
        std::fs::set_permissions(&scratch.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| scratch_err(&scratch.dir, &e))?;
        chown_for(&scratch.dir, owner).map_err(|e| scratch_err(&scratch.dir, &e))?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, status: &str, additions: u64, deletions: u64) -> DiffFile {
        DiffFile {
            path: path.into(),
            status: status.into(),
            additions,
            deletions,
        }
    }

    #[test]
    fn parse_table() {
        let cases: Vec<(&[u8], Vec<DiffFile>)> =
            vec![
            (b"", vec![]),
            (
                b":100644 100644 badc806 29a070e M\0bin\0:100644 100644 587be6b b77b4eb M\0m\0-\t-\tbin\x001\t0\tm\0",
                vec![file("bin", "modified", 0, 0), file("m", "modified", 1, 0)],
            ),
            (
                ":100644 100644 9405325 9405325 R100\0sp ace.txt\0r\u{e9} name.txt\0\
                 :000000 100644 0000000 3e75765 A\0n\0\
                 0\t0\t\0sp ace.txt\0r\u{e9} name.txt\x001\t0\tn\0"
                    .as_bytes(),
                vec![file("r\u{e9} name.txt", "renamed", 0, 0), file("n", "added", 1, 0)],
            ),
            (
                b":100644 120000 718f4d2 08b9811 T\0t\0:100644 000000 1 0 D\0tab\there\0\
                  1\t1\tt\x000\t3\ttab\there\0",
                vec![file("t", "type_changed", 1, 1), file("tab\there", "deleted", 0, 3)],
            ),
            (b":100644 100644 a b C75\0old\0copy\x002\t0\t\0old\0copy\0", vec![file("copy", "copied", 2, 0)]),
            // A path that starts with ':' is still a path.
            (b":000000 100644 0 a A\0:odd\x005\t0\t:odd\0", vec![file(":odd", "added", 5, 0)]),
        ];
        for (input, want) in cases {
            assert_eq!(
                parse_raw_numstat(input).expect("parses"),
                want,
                "{}",
                String::from_utf8_lossy(input)
            );
        }
    }

    #[test]
    fn parse_refuses_mismatched_output() {
        assert!(parse_raw_numstat(b":100644 100644 a b M\0m\0").is_err());
        assert!(parse_raw_numstat(b":100644 100644 a b M\0m\0x\ty\tm\0").is_err());
        assert!(parse_raw_numstat(b":100644 100644 a b M\0m\x001\t0\tm\x001\t0\textra\0").is_err());
    }

    #[test]
    fn cut_on_a_char_boundary() {
        assert_eq!(cut("abc".as_bytes(), 3), ("abc".to_string(), false));
        assert_eq!(cut("ab\u{e9}".as_bytes(), 3), ("ab".to_string(), true));
        assert_eq!(cut("abcd".as_bytes(), 0), (String::new(), true));
    }
}
