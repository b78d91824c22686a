//! The git hooks the node owns, pointed at by every conversation's git (a
//! directory the guest sees read-only): pushes are refused, and so is any
//! update of the protected base branch.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// What a refused push says.
pub const PUSH_REFUSED: &str =
    "warren: pushes from inside a conversation are refused; the node owner pushes after review";

const PRE_PUSH: &str = "#!/bin/sh
# Written by warren: no push leaves a conversation.
cat >/dev/null
echo 'warren: pushes from inside a conversation are refused; the node owner pushes after review' >&2
exit 1
";

/// A shell single-quoted literal of `s` (no expansion inside).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn reference_transaction(protected_ref: &str) -> String {
    format!(
        "#!/bin/sh
# Written by warren: the base branch cannot be changed from inside a conversation.
protected={q}
refused=0
while read -r old new ref; do
  if [ \"$ref\" = \"$protected\" ]; then refused=1; fi
done
if [ \"$1\" = prepared ] && [ \"$refused\" = 1 ]; then
  echo \"warren: $protected is the base branch; it cannot be changed from inside a conversation\" >&2
  exit 1
fi
exit 0
",
        q = sh_quote(protected_ref)
    )
}

fn pre_commit(protected_ref: &str) -> String {
    format!(
        "#!/bin/sh
# Written by warren: no commit on the base branch from inside a conversation.
protected={q}
if [ \"$(git symbolic-ref --quiet HEAD)\" = \"$protected\" ]; then
  echo \"warren: commits on $protected are refused inside a conversation; work on your own branch\" >&2
  exit 1
fi
exit 0
",
        q = sh_quote(protected_ref)
    )
}

/// Writes `body` to `dir/name` mode 0755, replacing it atomically.
fn put(dir: &Path, name: &str, body: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o755)
        .open(&tmp)?;
    f.write_all(body.as_bytes())?;
    f.sync_all()?;
    drop(f);
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, dir.join(name))
}

/// Writes the hooks into `dir` (created), refusing every push and, when
/// `protected` is set, any update of `refs/heads/<protected>`.
pub fn write(dir: &Path, protected: Option<&str>) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    put(dir, "pre-push", PRE_PUSH)?;
    match protected {
        Some(branch) => {
            if branch.is_empty() || branch.chars().any(|c| c.is_control()) {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("{branch:?} is not a branch name the hooks can protect"),
                ));
            }
            let full = format!("refs/heads/{branch}");
            put(dir, "reference-transaction", &reference_transaction(&full))?;
            put(dir, "pre-commit", &pre_commit(&full))?;
        }
        None => {
            for name in ["reference-transaction", "pre-commit"] {
                match std::fs::remove_file(dir.join(name)) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                    _ => {}
                }
            }
        }
    }
    Ok(())
}

/// The environment a conversation's CLI gets so its git uses `dir`'s hooks
/// and commits as the agent: `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` entries
/// (`core.hooksPath`, plus `safe.directory` for `safe`), and
/// `GIT_AUTHOR_*`/`GIT_COMMITTER_*`.
pub fn env(dir: &Path, agent: &str, safe: &[&Path]) -> Vec<(String, String)> {
    let mut config = vec![("core.hooksPath".to_string(), dir.display().to_string())];
    config.extend(
        safe.iter()
            .map(|p| ("safe.directory".to_string(), p.display().to_string())),
    );
    let mut env = vec![("GIT_CONFIG_COUNT".to_string(), config.len().to_string())];
    for (i, (k, v)) in config.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), k));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), v));
    }
    let email = format!("{agent}@warren.localhost");
    for who in ["AUTHOR", "COMMITTER"] {
        env.push((format!("GIT_{who}_NAME"), agent.to_string()));
        env.push((format!("GIT_{who}_EMAIL"), email.clone()));
    }
    env
}
