//! Adapter for the real Codex CLI (docs/CODEX.md). Launch: each conversation
//! has its own Codex home in the agent's durable home
//! (`.codex/threads/<ref>`, `CODEX_HOME`), whose `config.toml` the node keeps
//! its keys in (the model provider from `[harnesses.codex.env]
//! OPENAI_BASE_URL`, the workspace trusted, approvals on request inside the
//! workspace-write sandbox, the agent's persona as developer instructions)
//! while keeping what Codex itself stores there; always `--no-daemon`.
//! Resume: `codex resume <its session id>`, read off the conversation's one
//! rollout file. Screen: `codex_screen`. Transcript: the rollout file
//! (human, agent, tool), whose `exec_command` calls are also Codex's own
//! record of what a dialog will run (the supervision reader's source).

use std::path::{Path, PathBuf};

use console_api::Status;
use serde_json::Value;

use super::codex_screen;
use super::hooks::ToolRequest;
use super::{Dialog, Entry, Harness, HarnessError, HarnessSettings, LaunchContext, LaunchPlan};
use crate::runtime::ScreenSnapshot;

pub struct CodexHarness;

/// The conversations' Codex homes inside the agent's home.
pub const THREADS_DIR: &str = ".codex/threads";
/// What Codex prints (and exits 1) when `resume` names a session it lacks.
pub const MISSING_SESSION: &str = "No saved session found with ID";
/// The model provider the node defines.
const PROVIDER: &str = "warren";
/// Longest text one transcript entry keeps.
const MAX_ENTRY_CHARS: usize = 16 * 1024;
/// Longest command taken from a rollout's tool call.
const MAX_COMMAND_BYTES: usize = 64 * 1024;
/// How deep a rollout lies under `sessions/` (YYYY/MM/DD/file).
const SESSION_DEPTH: usize = 4;

/// The conversation's Codex home.
pub fn codex_home(home: &Path, resume_ref: &str) -> PathBuf {
    home.join(THREADS_DIR).join(resume_ref)
}

/// `config.toml` with the node's keys set, keeping every other key Codex
/// (or a person) stored there; unreadable TOML is replaced.
pub fn merged_config(
    existing: Option<&str>,
    workspace: &Path,
    settings: &HarnessSettings,
    model: Option<&str>,
    instructions: &str,
) -> toml::Table {
    use toml::Value as T;
    let mut cfg: toml::Table = existing.and_then(|s| s.parse().ok()).unwrap_or_default();
    let table = |cfg: &mut toml::Table, key: &str| -> toml::Table {
        match cfg.remove(key) {
            Some(T::Table(t)) => t,
            _ => toml::Table::new(),
        }
    };
    if let Some(base) = settings
        .env
        .get("OPENAI_BASE_URL")
        .or_else(|| settings.env.get("OPENAI_API_BASE"))
    {
        let mut provider = toml::Table::new();
        provider.insert("name".into(), T::String("warren".into()));
        provider.insert("base_url".into(), T::String(base.trim_end_matches('/').to_string()));
        provider.insert("env_key".into(), T::String("OPENAI_API_KEY".into()));
        provider.insert("wire_api".into(), T::String("responses".into()));
        let mut providers = table(&mut cfg, "model_providers");
        providers.insert(PROVIDER.into(), T::Table(provider));
        cfg.insert("model_providers".into(), T::Table(providers));
        cfg.insert("model_provider".into(), T::String(PROVIDER.into()));
    } else if cfg.get("model_provider").and_then(T::as_str) == Some(PROVIDER) {
        cfg.remove("model_provider");
    }
    match model {
        Some(m) => cfg.insert("model".into(), T::String(m.into())),
        None => cfg.remove("model"),
    };
    let mut projects = table(&mut cfg, "projects");
    let mut trust = toml::Table::new();
    trust.insert("trust_level".into(), T::String("trusted".into()));
    projects.insert(workspace.display().to_string(), T::Table(trust));
    cfg.insert("projects".into(), T::Table(projects));
    // Dialogs for anything outside the workspace-write sandbox; typed input
    // is never taken for a paste (an Enter in a burst would not submit).
    cfg.insert("approval_policy".into(), T::String("on-request".into()));
    cfg.insert("sandbox_mode".into(), T::String("workspace-write".into()));
    cfg.insert("disable_paste_burst".into(), T::Boolean(true));
    cfg.insert("check_for_update_on_startup".into(), T::Boolean(false));
    if instructions.is_empty() {
        cfg.remove("developer_instructions");
    } else {
        cfg.insert("developer_instructions".into(), T::String(instructions.into()));
    }
    cfg
}

/// Every rollout file under a Codex home's `sessions/`, sorted by name
/// (names start with their time, so the last is the newest).
fn rollouts(sessions: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            if kind.is_dir() && depth > 1 {
                walk(&path, depth - 1, out);
            } else if kind.is_file()
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
            {
                out.push(path);
            }
        }
    }
    let mut out = vec![];
    walk(sessions, SESSION_DEPTH, &mut out);
    out.sort();
    out
}

/// The session id a rollout's name ends with (`rollout-<time>-<uuid>.jsonl`).
pub fn session_id_of(rollout: &Path) -> Option<String> {
    let stem = rollout.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    (id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')).then(|| id.to_string())
}

/// Codex keeps the helpers its sandbox runs (`codex-linux-sandbox`) in its
/// home, and refuses to when that home is under the temporary directory:
/// then every sandboxed command fails. A Codex home under `tmp` (a data dir
/// there) gets a temporary directory of its own, beside the threads.
pub fn own_tmp(home: &Path, codex_home: &Path, tmp: &Path) -> Option<PathBuf> {
    codex_home.starts_with(tmp).then(|| home.join(".codex/tmp"))
}

/// A function call's arguments, decoded.
fn arguments(payload: &Value) -> Option<Value> {
    serde_json::from_str(payload["arguments"].as_str()?).ok()
}

impl Harness for CodexHarness {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn program(&self, settings: &HarnessSettings, _self_exe: &Path) -> PathBuf {
        settings.program.clone().unwrap_or_else(|| PathBuf::from("codex"))
    }

    /// From `No saved session found with ID` to the end of that sentence
    /// (Codex puts `ERROR: ` before it and more advice after).
    fn missing_session_words<'a>(&self, last_lines: &'a [String]) -> Option<&'a str> {
        let line = crate::exits::line_with(last_lines, MISSING_SESSION)?;
        let said = &line[line.find(MISSING_SESSION)?..];
        Some(said.split_once(". ").map_or(said, |(sentence, _)| sentence))
    }

    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError> {
        if let Some(problem) = super::setup::owned_variable_problem("codex", ctx.settings) {
            return Err(HarnessError::Setting(problem));
        }
        let codex_home = codex_home(ctx.home, ctx.resume_ref);
        let config_path = codex_home.join("config.toml");
        let existing = std::fs::read_to_string(&config_path).ok();
        let instructions: Vec<&str> = [ctx.agent.persona.as_deref().unwrap_or(""), ctx.tool_notes]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        let model = ctx.agent.model.as_deref().filter(|m| !m.is_empty());
        let config = merged_config(
            existing.as_deref(),
            ctx.workspace,
            ctx.settings,
            model,
            &instructions.join("\n\n"),
        );
        let sessions = codex_home.join("sessions");
        let mut args = vec!["--no-daemon".to_string()];
        if ctx.resume {
            // Codex names its session itself: the conversation's rollout
            // says which; without one, the node's reference (which Codex
            // then says it does not have).
            let id = rollouts(&sessions)
                .last()
                .and_then(|r| session_id_of(r))
                .unwrap_or_else(|| ctx.resume_ref.to_string());
            args.extend(["resume".to_string(), id]);
        }
        let mut env = vec![("CODEX_HOME".to_string(), codex_home.display().to_string())];
        let mut files = vec![];
        if let Some(tmp) = own_tmp(ctx.home, &codex_home, &std::env::temp_dir()) {
            env.push(("TMPDIR".to_string(), tmp.display().to_string()));
            files.push((PathBuf::from(".codex/tmp/.keep"), vec![]));
        }
        env.extend(ctx.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        let rel = config_path
            .strip_prefix(ctx.home)
            .map_err(|e| HarnessError::Home(e.to_string()))?;
        Ok(LaunchPlan {
            program: self.program(ctx.settings, ctx.self_exe),
            args,
            env,
            files: [vec![(rel.to_path_buf(), config.to_string().into_bytes())], files].concat(),
            transcript_file: Some(sessions),
        })
    }

    /// The newest rollout under the conversation's `sessions/`.
    fn session_file(&self, planned: &Path) -> Option<PathBuf> {
        rollouts(planned).pop()
    }

    /// The screen decides, and Codex's own signal (OSC 7501) can only hold
    /// it back: IDLE needs the input box on screen and no `working` or
    /// `blocked` from Codex; a dialog is read from the screen alone.
    fn status(&self, screen: &ScreenSnapshot) -> Status {
        codex_screen::with_signal(codex_screen::status_of(&screen.lines), screen.cli_state.as_deref())
    }

    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog> {
        codex_screen::dialog_of(&screen.lines, screen.cols)
    }

    fn supervision_dialog(&self, dialog: &Dialog, cwd: &Path, hook: Option<&ToolRequest>) -> supervision::Dialog {
        codex_screen::read(dialog, cwd, hook)
    }

    /// Its rollout records each turn's end (`task_complete`, or
    /// `turn_aborted` after an interrupt or a refused call).
    fn reports_turn_end(&self) -> bool {
        true
    }

    fn turn_ended(&self, line: &str) -> bool {
        // Cheap first: most lines are not events.
        line.contains("\"event_msg\"")
            && serde_json::from_str::<Value>(line).is_ok_and(|v| {
                v["type"] == "event_msg"
                    && matches!(v["payload"]["type"].as_str(), Some("task_complete" | "turn_aborted"))
            })
    }

    fn tool_request(&self, line: &str) -> Option<ToolRequest> {
        let v: Value = serde_json::from_str(line).ok()?;
        let p = &v["payload"];
        if v["type"] != "response_item" || p["type"] != "function_call" || p["name"] != "exec_command" {
            return None;
        }
        let args = arguments(p)?;
        let command = args["cmd"].as_str().filter(|c| c.len() <= MAX_COMMAND_BYTES)?;
        Some(ToolRequest {
            event: "function_call".into(),
            tool: "exec_command".into(),
            command: Some(command.to_string()),
            description: args["justification"].as_str().map(str::to_string),
            file_path: None,
            cwd: args["workdir"].as_str().map(str::to_string),
            at: std::time::Instant::now(),
        })
    }

    fn parse_session_line(&self, line: &str) -> Option<Entry> {
        let v: Value = serde_json::from_str(line).ok()?;
        if v["type"] != "response_item" {
            return None;
        }
        let p = &v["payload"];
        let texts = |p: &Value| -> String {
            p["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let (speaker, kind, text) = match (p["type"].as_str()?, p["role"].as_str()) {
            ("message", Some("user")) => {
                let text = texts(p);
                // Codex's own context, sent in the user's role.
                let t = text.trim();
                if t.starts_with('<') && t.ends_with('>') {
                    return None;
                }
                ("human", "terminal_input", text)
            }
            ("message", Some("assistant")) => ("agent", "reply", texts(p)),
            ("function_call", _) => {
                let name = p["name"].as_str().unwrap_or("tool");
                let shown = arguments(p)
                    .and_then(|a| a["cmd"].as_str().map(str::to_string))
                    .unwrap_or_else(|| p["arguments"].as_str().unwrap_or_default().to_string());
                ("agent", "tool_use", format!("{name}: {shown}"))
            }
            ("function_call_output", _) => {
                let out = match &p["output"] {
                    Value::String(s) => s.clone(),
                    other => texts(&serde_json::json!({ "content": other })),
                };
                ("tool", "tool_output", out)
            }
            _ => return None,
        };
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        Some(Entry {
            speaker,
            kind,
            text: text.chars().take(MAX_ENTRY_CHARS).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn settings(env: &[(&str, &str)]) -> HarnessSettings {
        HarnessSettings {
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
            ..HarnessSettings::default()
        }
    }

    #[test]
    fn the_config_keeps_what_codex_stored_and_sets_the_nodes_keys() {
        let existing =
            "[tui]\nscreen_reader_detection_done = true\n\n[projects.\"/other\"]\ntrust_level = \"trusted\"\n";
        let s = settings(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/"), ("OPENAI_API_KEY", "sk")]);
        let cfg = merged_config(Some(existing), Path::new("/w"), &s, Some("gpt-x"), "be brief");
        assert_eq!(cfg["tui"]["screen_reader_detection_done"].as_bool(), Some(true));
        assert_eq!(cfg["projects"]["/other"]["trust_level"].as_str(), Some("trusted"));
        assert_eq!(cfg["projects"]["/w"]["trust_level"].as_str(), Some("trusted"));
        assert_eq!(cfg["model_provider"].as_str(), Some("warren"));
        let p = &cfg["model_providers"]["warren"];
        assert_eq!(p["base_url"].as_str(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(p["wire_api"].as_str(), Some("responses"));
        assert_eq!(p["env_key"].as_str(), Some("OPENAI_API_KEY"));
        assert_eq!(cfg["model"].as_str(), Some("gpt-x"));
        assert_eq!(cfg["approval_policy"].as_str(), Some("on-request"));
        assert_eq!(cfg["developer_instructions"].as_str(), Some("be brief"));
        assert!(!cfg.to_string().contains("sk"), "the key stays in the environment");
        let again = merged_config(Some(&cfg.to_string()), Path::new("/w"), &s, Some("gpt-x"), "be brief");
        assert_eq!(again, cfg, "merging twice changes nothing");
        // Without an endpoint the node's provider goes; garbage is replaced.
        let plain = merged_config(Some(&cfg.to_string()), Path::new("/w"), &settings(&[]), None, "");
        assert!(plain.get("model_provider").is_none() && plain.get("model").is_none());
        assert!(plain.get("developer_instructions").is_none());
        let fresh = merged_config(Some("not = [toml"), Path::new("/w"), &s, None, "");
        assert_eq!(fresh["projects"]["/w"]["trust_level"].as_str(), Some("trusted"));
    }

    #[test]
    fn a_codex_home_under_tmp_gets_its_own_tmp() {
        let home = Path::new("/tmp/x/agents/a/home");
        let ch = codex_home(home, "r1");
        assert_eq!(own_tmp(home, &ch, Path::new("/tmp")), Some(home.join(".codex/tmp")));
        assert!(!home.join(".codex/tmp").starts_with(&ch));
        let home = Path::new("/var/lib/warren/agents/a/home");
        assert_eq!(own_tmp(home, &codex_home(home, "r1"), Path::new("/tmp")), None);
    }

    #[test]
    fn the_missing_session_is_said_in_codexs_own_sentence() {
        let lines = vec![
            "ERROR: No saved session found with ID 400a389c-1a6b. Run `codex resume` without an ID to choose f"
                .to_string(),
            "rom existing sessions.".to_string(),
        ];
        assert_eq!(
            CodexHarness.missing_session_words(&lines),
            Some("No saved session found with ID 400a389c-1a6b")
        );
        assert_eq!(CodexHarness.missing_session_words(&lines[1..]), None);
    }

    #[test]
    fn session_ids_come_from_rollout_names() {
        let p =
            Path::new("/h/sessions/2026/12/02/rollout-2026-12-02T22-30-40-01a238e1-a00d-71b0-be46-080542598af7.jsonl");
        assert_eq!(
            session_id_of(p).as_deref(),
            Some("01a238e1-a00d-71b0-be46-080542598af7")
        );
        assert_eq!(session_id_of(Path::new("/h/rollout-short.jsonl")), None);
    }

    #[test]
    fn the_newest_rollout_is_the_conversations_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let day = dir.path().join("2026/12/02");
        std::fs::create_dir_all(&day).expect("mkdir");
        let old = day.join("rollout-2026-12-02T10-00-00-01a238e1-a00d-71b0-be46-080542598af7.jsonl");
        let new = day.join("rollout-2026-12-02T11-00-00-01a238e1-a00d-71b0-be46-080542598af8.jsonl");
        std::fs::write(&old, "").expect("write");
        std::fs::write(&new, "").expect("write");
        std::fs::write(day.join("notes.txt"), "").expect("write");
        assert_eq!(CodexHarness.session_file(dir.path()), Some(new));
        assert_eq!(CodexHarness.session_file(&dir.path().join("none")), None);
    }

    #[test]
    fn rollout_lines_are_attributed() {
        let h = CodexHarness;
        let line = |payload: &str| format!(r#"{{"timestamp":"t","type":"response_item","payload":{payload}}}"#);
        let human = line(r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"run: ls"}]}"#);
        let e = h.parse_session_line(&human).expect("human");
        assert_eq!(
            (e.speaker, e.kind, e.text.as_str()),
            ("human", "terminal_input", "run: ls")
        );
        let context = line(
            r#"{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>\n</environment_context>"}]}"#,
        );
        assert!(h.parse_session_line(&context).is_none());
        let developer = line(r#"{"type":"message","role":"developer","content":[{"type":"input_text","text":"x"}]}"#);
        assert!(h.parse_session_line(&developer).is_none());
        let call = line(
            r#"{"type":"function_call","name":"exec_command","arguments":"{\"cmd\":\"echo hi\",\"workdir\":\"/etc\",\"sandbox_permissions\":\"require_escalated\"}","call_id":"c"}"#,
        );
        let e = h.parse_session_line(&call).expect("call");
        assert_eq!(
            (e.speaker, e.kind, e.text.as_str()),
            ("agent", "tool_use", "exec_command: echo hi")
        );
        let req = h.tool_request(&call).expect("a tool request");
        assert_eq!(req.command.as_deref(), Some("echo hi"));
        assert_eq!(req.cwd.as_deref(), Some("/etc"));
        let output = line(r#"{"type":"function_call_output","call_id":"c","output":"hi\n"}"#);
        let e = h.parse_session_line(&output).expect("output");
        assert_eq!((e.speaker, e.text.as_str()), ("tool", "hi"));
        let reply = line(r#"{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}"#);
        assert_eq!(h.parse_session_line(&reply).map(|e| e.speaker), Some("agent"));
        assert!(h.tool_request(&reply).is_none());
        let event = r#"{"type":"event_msg","payload":{"type":"token_count"}}"#;
        assert!(h.parse_session_line(event).is_none());
        assert!(!h.turn_ended(event));
        assert!(h.turn_ended(r#"{"type":"event_msg","payload":{"type":"task_complete","turn_id":"t"}}"#));
        assert!(h.turn_ended(r#"{"type":"event_msg","payload":{"type":"turn_aborted","reason":"interrupted"}}"#));
        assert!(!h.turn_ended(&reply));
    }
}
