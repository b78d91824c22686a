//! Checks of a harness's setup where the user makes it: at `warren up` (one
//! warning line per problem), at `agent.create` (a harness with no adapter is
//! refused) and before a local launch (the program must be an executable
//! file). A problem names the warren.toml setting to fix.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::{ADAPTERS, HarnessSettings, adapter};

/// Something in the node's setup that stops a CLI from launching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupProblem {
    /// The setting to fix, dotted (`harnesses.claude.program`), or the
    /// request field (`harness`).
    pub setting: String,
    pub message: String,
}

impl std::fmt::Display for SetupProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A harness an agent may be given here: one this node has an adapter for.
pub fn check_launchable(harness: &str) -> Result<(), SetupProblem> {
    adapter(harness).map(|_| ()).map_err(|_| SetupProblem {
        setting: "harness".into(),
        message: format!(
            "harness: this node cannot launch {harness:?}: it has no {harness} adapter (it can launch: {})",
            ADAPTERS.join(", ")
        ),
    })
}

/// The program the local runtime would run for `harness`: an executable
/// file, found on `path_env` when it is a bare name. `configured` says
/// whether `[harnesses.NAME] program` set it (the message names the setting
/// either way, since that is where the fix goes).
pub fn check_program(harness: &str, program: &Path, configured: bool, path_env: &str) -> Result<PathBuf, SetupProblem> {
    let setting = format!("harnesses.{harness}.program");
    let fail = |what: String| SetupProblem {
        setting: setting.clone(),
        message: what,
    };
    let is_bare = program.components().count() == 1 && !program.as_os_str().to_string_lossy().contains('/');
    if is_bare {
        let found = path_env
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(program))
            .find(|p| executable_file(p).is_ok());
        return found.ok_or_else(|| {
            fail(format!(
                "{harness}: `{}` is not on the node's PATH: install it, or set `[harnesses.{harness}] program` in warren.toml to its path",
                program.display()
            ))
        });
    }
    let source = if configured {
        format!("`[harnesses.{harness}] program` in warren.toml")
    } else {
        format!("the {harness} program")
    };
    executable_file(program)
        .map(|_| program.to_path_buf())
        .map_err(|why| fail(format!("{source} is {:?}: {why}", program.display().to_string())))
}

/// Ok when `p` is a regular file someone may execute; else what it is instead.
fn executable_file(p: &Path) -> Result<(), &'static str> {
    let meta = std::fs::metadata(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "no such file",
        std::io::ErrorKind::PermissionDenied => "the node may not read it",
        _ => "it cannot be read",
    })?;
    if meta.is_dir() {
        return Err("it is a directory, not an executable file");
    }
    if !meta.is_file() {
        return Err("it is not a regular file");
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err("it is not executable (no x permission)");
    }
    Ok(())
}

/// The local runtime's problems with every configured harness: a section
/// for a harness with no adapter, a program that is not an executable file.
pub fn local_problems(
    harnesses: &std::collections::BTreeMap<String, HarnessSettings>,
    self_exe: &Path,
    path_env: &str,
) -> Vec<SetupProblem> {
    let mut out = vec![];
    for (name, settings) in harnesses {
        let Ok(a) = adapter(name) else {
            out.push(no_adapter_section(name));
            continue;
        };
        let program = a.program(settings, self_exe);
        if let Err(p) = check_program(name, &program, settings.program.is_some(), path_env) {
            out.push(p);
        }
    }
    out
}

/// A `[harnesses.NAME]` section for a harness this node cannot launch.
pub fn no_adapter_section(name: &str) -> SetupProblem {
    SetupProblem {
        setting: format!("harnesses.{name}"),
        message: format!(
            "`[harnesses.{name}]` in warren.toml: this node has no {name} adapter, so agents with harness {name:?} cannot be created (it can launch: {})",
            ADAPTERS.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_exe(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    #[test]
    fn programs_must_be_executable_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = write_exe(dir.path(), "cli", 0o755);
        let plain = write_exe(dir.path(), "notes", 0o644);
        assert_eq!(check_program("claude", &good, true, ""), Ok(good.clone()));

        let e = check_program("claude", dir.path(), true, "").expect_err("a directory");
        assert_eq!(e.setting, "harnesses.claude.program");
        assert!(e.message.contains("`[harnesses.claude] program` in warren.toml"), "{e}");
        assert!(e.message.contains("is a directory"), "{e}");

        let e = check_program("claude", &plain, true, "").expect_err("not executable");
        assert!(e.message.contains("not executable"), "{e}");
        let e = check_program("claude", &dir.path().join("gone"), false, "").expect_err("missing");
        assert!(e.message.contains("no such file"), "{e}");
        assert!(e.message.starts_with("the claude program"), "{e}");
    }

    #[test]
    fn bare_names_are_found_on_path() {
        let dir = tempfile::tempdir().expect("tempdir");
        let good = write_exe(dir.path(), "claude", 0o755);
        std::fs::create_dir(dir.path().join("aider")).expect("a directory named like a program");
        let path = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(check_program("claude", Path::new("claude"), false, &path), Ok(good));
        let e = check_program("aider", Path::new("aider"), false, &path).expect_err("a directory is not it");
        assert!(e.message.contains("not on the node's PATH"), "{e}");
        assert!(e.message.contains("`[harnesses.aider] program`"), "{e}");
    }

    #[test]
    fn the_adapter_list_is_what_adapter_accepts() {
        for name in ADAPTERS {
            assert_eq!(adapter(name).map(|a| a.name()).ok(), Some(name));
        }
    }

    #[test]
    fn only_harnesses_with_an_adapter_are_launchable() {
        assert!(check_launchable("fake").is_ok());
        assert!(check_launchable("claude").is_ok());
        assert!(check_launchable("codex").is_ok());
        let e = check_launchable("gemini").expect_err("no gemini adapter");
        assert_eq!(e.setting, "harness");
        assert!(e.message.starts_with("harness: "), "{e}");
        assert!(e.message.contains("no gemini adapter"), "{e}");
    }

    #[test]
    fn configured_sections_are_checked_at_start_up() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut cfg = std::collections::BTreeMap::new();
        cfg.insert(
            "claude".to_string(),
            HarnessSettings {
                program: Some(dir.path().to_path_buf()),
                ..Default::default()
            },
        );
        cfg.insert("opencode".to_string(), HarnessSettings::default());
        cfg.insert("fake".to_string(), HarnessSettings::default());
        let exe = write_exe(dir.path(), "warren", 0o755);
        let problems = local_problems(&cfg, &exe, "");
        let settings: Vec<&str> = problems.iter().map(|p| p.setting.as_str()).collect();
        assert_eq!(settings, ["harnesses.claude.program", "harnesses.opencode"]);
    }
}
