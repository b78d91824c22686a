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

/// Settings an adapter owns itself: a `[harnesses.codex.env] CODEX_HOME`
/// would move every conversation's Codex home (the node gives each its own,
/// in the agent's durable home, where resume and spend find it).
pub fn settings_problems(harnesses: &std::collections::BTreeMap<String, HarnessSettings>) -> Vec<SetupProblem> {
    harnesses
        .iter()
        .filter_map(|(name, s)| owned_variable_problem(name, s))
        .collect()
}

/// The problem with a variable the adapter owns, if `settings` sets one.
pub fn owned_variable_problem(harness: &str, settings: &HarnessSettings) -> Option<SetupProblem> {
    let owned: &[&str] = match harness {
        "codex" => &["CODEX_HOME"],
        "claude" => &["CLAUDE_CONFIG_DIR"],
        _ => &[],
    };
    let var = owned.iter().find(|v| settings.env.contains_key(**v))?;
    Some(SetupProblem {
        setting: format!("harnesses.{harness}.env.{var}"),
        message: format!(
            "`[harnesses.{harness}.env] {var}`: the node sets {var} itself (each agent's in its durable home, where resume, transcripts and spend find it); remove it from warren.toml"
        ),
    })
}

/// The model endpoints the harnesses are configured with, to try at start:
/// `(setting, host, port)` for each `*_BASE_URL` / `OPENAI_API_BASE` in their
/// environment. `host.docker.internal` (a guest's name for the host) is the
/// host's loopback.
pub fn configured_endpoints(
    harnesses: &std::collections::BTreeMap<String, HarnessSettings>,
) -> Vec<(String, String, u16)> {
    let mut out = vec![];
    for (name, s) in harnesses {
        for (var, value) in &s.env {
            if !(var.ends_with("_BASE_URL") || var == "OPENAI_API_BASE") {
                continue;
            }
            if let Some((host, port)) = node_store::net::host_of(value).filter(|(h, p)| !h.is_empty() && *p != 0) {
                let host = if host == node_store::egress::HOST_NAME {
                    "127.0.0.1".to_string()
                } else {
                    host
                };
                out.push((format!("harnesses.{name}.env.{var}"), host, port));
            }
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
    fn variables_an_adapter_owns_are_problems_and_endpoints_are_listed() {
        let mut cfg = std::collections::BTreeMap::new();
        let env = |pairs: &[(&str, &str)]| HarnessSettings {
            env: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..Default::default()
        };
        cfg.insert(
            "codex".to_string(),
            env(&[
                ("CODEX_HOME", "/nope/x"),
                ("OPENAI_BASE_URL", "http://host.docker.internal:9/v1"),
            ]),
        );
        cfg.insert(
            "aider".to_string(),
            env(&[("OPENAI_API_BASE", "https://models.example/v1")]),
        );
        cfg.insert("fake".to_string(), env(&[("CODEX_HOME", "/x")]));
        let problems = settings_problems(&cfg);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].setting, "harnesses.codex.env.CODEX_HOME");
        assert!(problems[0].message.contains("remove it"), "{}", problems[0]);
        assert_eq!(
            configured_endpoints(&cfg),
            [
                (
                    "harnesses.aider.env.OPENAI_API_BASE".to_string(),
                    "models.example".to_string(),
                    443
                ),
                (
                    "harnesses.codex.env.OPENAI_BASE_URL".to_string(),
                    "127.0.0.1".to_string(),
                    9
                ),
            ]
        );
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
