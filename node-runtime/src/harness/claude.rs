//! Adapter for the real Claude Code CLI (docs/CLAUDE-CODE.md). Launch: its config dir
//! is the agent's durable home (`CLAUDE_CONFIG_DIR`), first-run screens are
//! skipped by the config the adapter merges into `.claude.json`, permission
//! prompts stay on (`--permission-mode default`), and an owned `--settings`
//! file registers the hooks that report to the node (`warren hook claude`).
//! Screen: the same dialog layout the fake CLI draws, read by `frame` with
//! Claude Code's own layout (rules at column 0, a `│` gutter for a wrapped or
//! multi-line command, a long path shortened with `…`), the command or path
//! taken from its PreToolUse/PermissionRequest hook when that is fresh; the
//! input box is the `❯` line right under a `─` rule. Transcript: the CLI's
//! own session file.

use std::path::{Path, PathBuf};

use console_api::Status;
use serde_json::{Value, json};

use super::fake::shape_of;
use super::frame::{self, Layout};
use super::{Dialog, Entry, Harness, HarnessError, HarnessSettings, LaunchContext, LaunchPlan};
use crate::runtime::ScreenSnapshot;

pub struct ClaudeHarness;

/// The CLI's config dir inside the agent's home.
const CONFIG_DIR: &str = ".claude";
pub use super::CLAUDE_MISSING_SESSION as MISSING_SESSION;
/// The hooks file the node owns (rewritten at every launch).
const HOOKS_FILE: &str = ".warren/claude-settings.json";
/// Longest text one transcript entry keeps.
const MAX_ENTRY_CHARS: usize = 16 * 1024;

/// Environment that keeps the CLI offline but for its model endpoint, and
/// quiet at start (docs/CLAUDE-CODE.md).
const QUIET_ENV: &[(&str, &str)] = &[
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("DISABLE_TELEMETRY", "1"),
    ("DISABLE_ERROR_REPORTING", "1"),
    ("DISABLE_AUTOUPDATER", "1"),
    ("CLAUDE_CODE_DISABLE_OFFICIAL_MARKETPLACE_AUTOINSTALL", "1"),
];

/// The session store's directory name for a working directory: every
/// character that is not ASCII alphanumeric becomes `-`.
pub fn project_slug(cwd: &Path) -> String {
    cwd.display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// `.claude.json` with the keys that skip the first-run screens set, keeping
/// everything else the CLI stored there.
pub fn merged_config(existing: Option<&str>, workspace: &Path, api_key: Option<&str>) -> Value {
    let mut cfg = existing
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    cfg["hasCompletedOnboarding"] = json!(true);
    cfg["hasSeenAutoDefaultNudge"] = json!(true);
    if !cfg["projects"].is_object() {
        cfg["projects"] = json!({});
    }
    let ws = workspace.display().to_string();
    if !cfg["projects"][&ws].is_object() {
        cfg["projects"][&ws] = json!({});
    }
    cfg["projects"][&ws]["hasTrustDialogAccepted"] = json!(true);
    if let Some(key) = api_key {
        let suffix: String = {
            let chars: Vec<char> = key.chars().collect();
            chars[chars.len().saturating_sub(20)..].iter().collect()
        };
        if !cfg["customApiKeyResponses"].is_object() {
            cfg["customApiKeyResponses"] = json!({ "approved": [], "rejected": [] });
        }
        let approved = &mut cfg["customApiKeyResponses"]["approved"];
        if !approved.is_array() {
            *approved = json!([]);
        }
        if let Some(list) = approved.as_array_mut()
            && !list.iter().any(|v| v == suffix.as_str())
        {
            list.push(json!(suffix));
        }
    }
    cfg
}

/// The `--settings` file: every hook event supervision uses runs
/// `warren hook claude`, which reports to the node and never decides.
pub fn hook_settings(hook_command: &str) -> Value {
    let hook = json!([{ "hooks": [{ "type": "command", "command": hook_command, "timeout": 5 }] }]);
    let with_matcher =
        json!([{ "matcher": "*", "hooks": [{ "type": "command", "command": hook_command, "timeout": 5 }] }]);
    json!({
        "hooks": {
            "PreToolUse": with_matcher,
            "PermissionRequest": with_matcher,
            "Stop": hook,
            "Notification": hook,
        }
    })
}

/// `warren hook claude` by the binary's absolute path (quoted for the
/// shell Claude Code runs hooks with).
pub fn hook_command(warren_exe: &Path) -> String {
    let exe = warren_exe.display().to_string();
    if exe.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+".contains(c)) {
        format!("{exe} hook claude")
    } else {
        format!("'{}' hook claude", exe.replace('\'', "'\\''"))
    }
}

/// The owned settings: the hooks, and an allow rule per mounted warren tool
/// (they run without a permission dialog; nothing else is pre-allowed).
pub fn owned_settings(hook_command: &str, tools: &[String]) -> Value {
    let mut s = hook_settings(hook_command);
    if !tools.is_empty() {
        let allow: Vec<String> = tools.iter().map(|t| format!("Bash({t}:*)")).collect();
        s["permissions"] = json!({ "allow": allow });
    }
    s
}

impl Harness for ClaudeHarness {
    fn program(&self, settings: &HarnessSettings, _self_exe: &Path) -> PathBuf {
        settings.program.clone().unwrap_or_else(|| PathBuf::from("claude"))
    }

    /// Its `Stop` hook (`warren hook claude`) reports every turn's end.
    fn reports_turn_end(&self) -> bool {
        true
    }

    fn missing_session_words<'a>(&self, last_lines: &'a [String]) -> Option<&'a str> {
        crate::exits::line_with(last_lines, MISSING_SESSION)
    }

    /// Claude Code's `/login` as the first prompt opens its login screen; what
    /// it stores lands in `CLAUDE_CONFIG_DIR`, the agent's home.
    fn login_args(&self) -> Option<&'static [&'static str]> {
        Some(&["/login"])
    }

    fn name(&self) -> &'static str {
        "claude"
    }

    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError> {
        if let Some(problem) = super::setup::owned_variable_problem("claude", ctx.settings) {
            return Err(HarnessError::Setting(problem));
        }
        let config_dir = ctx.home.join(CONFIG_DIR);
        let api_key = ctx.settings.env.get("ANTHROPIC_API_KEY").map(String::as_str);
        let existing = std::fs::read_to_string(config_dir.join(".claude.json")).ok();
        let config = merged_config(existing.as_deref(), ctx.workspace, api_key);
        let to_bytes = |v: &Value| serde_json::to_vec_pretty(v).map_err(|e| HarnessError::Home(e.to_string()));
        let settings_path = ctx.home.join(HOOKS_FILE);
        let mut args = vec![
            if ctx.resume { "--resume" } else { "--session-id" }.to_string(),
            ctx.resume_ref.to_string(),
            "--permission-mode".into(),
            "default".into(),
            "--settings".into(),
            settings_path.display().to_string(),
        ];
        if let Some(model) = ctx.agent.model.as_deref().filter(|m| !m.is_empty()) {
            args.push("--model".into());
            args.push(model.to_string());
        }
        let prompt: Vec<&str> = [ctx.agent.persona.as_deref().unwrap_or(""), ctx.tool_notes]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        if !prompt.is_empty() {
            args.push("--append-system-prompt".into());
            args.push(prompt.join("\n\n"));
        }
        let mut env: Vec<(String, String)> = QUIET_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        env.push(("CLAUDE_CONFIG_DIR".into(), config_dir.display().to_string()));
        env.extend(ctx.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(LaunchPlan {
            program: self.program(ctx.settings, ctx.self_exe),
            args,
            env,
            files: vec![
                (PathBuf::from(CONFIG_DIR).join(".claude.json"), to_bytes(&config)?),
                (
                    PathBuf::from(HOOKS_FILE),
                    to_bytes(&owned_settings(&hook_command(ctx.warren_exe), ctx.tools))?,
                ),
            ],
            transcript_file: Some(
                config_dir
                    .join("projects")
                    .join(project_slug(ctx.workspace))
                    .join(format!("{}.jsonl", ctx.resume_ref)),
            ),
        })
    }

    fn status(&self, screen: &ScreenSnapshot) -> Status {
        status_of(&screen.lines)
    }

    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog> {
        claude_dialog(&screen.lines, screen.cols)
    }

    fn supervision_dialog(
        &self,
        dialog: &Dialog,
        cwd: &Path,
        hook: Option<&crate::harness::hooks::ToolRequest>,
    ) -> supervision::Dialog {
        frame::read(dialog, Layout::Claude, cwd, hook)
    }

    fn parse_session_line(&self, line: &str) -> Option<Entry> {
        let v: Value = serde_json::from_str(line).ok()?;
        let content = &v["message"]["content"];
        let (speaker, kind, text) = match v["type"].as_str()? {
            "user" if v["isMeta"] == true => return None,
            "user" if has_tool_result(content) => {
                let results: Vec<String> = content
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == "tool_result")
                    .map(|b| flatten(&b["content"]))
                    .collect();
                ("tool", "tool_output", results.join("\n"))
            }
            // Text the CLI itself puts in the user's turn (e.g. "[Request
            // interrupted by user for tool use]") has no human origin.
            "user" if v["origin"]["kind"] == "human" => ("human", "terminal_input", unwrap_pastes(&flatten(content))),
            "user" => ("system", "cli", flatten(content)),
            "assistant" => {
                let blocks = content.as_array()?;
                let uses: Vec<String> = blocks
                    .iter()
                    .filter(|b| b["type"] == "tool_use")
                    .map(|b| {
                        let input = &b["input"];
                        let shown = input["command"]
                            .as_str()
                            .or_else(|| input["file_path"].as_str())
                            .map(str::to_string)
                            .unwrap_or_else(|| input.to_string());
                        format!("{}: {shown}", b["name"].as_str().unwrap_or("tool"))
                    })
                    .collect();
                if uses.is_empty() {
                    ("agent", "reply", texts(blocks))
                } else {
                    ("agent", "tool_use", uses.join("\n"))
                }
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

/// Claude Code keeps a pasted block in its session file wrapped as
/// `<pasted_content id="X">\nTEXT\n</pasted_content id="X">`; the text is
/// what was pasted (and what a delivered message is matched against).
fn unwrap_pastes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<pasted_content id=\"") {
        let Some(open_end) = rest[start..].find('>').map(|i| start + i + 1) else {
            break;
        };
        let id = &rest[start + "<pasted_content id=\"".len()..open_end - 2];
        let close = format!("</pasted_content id=\"{id}\">");
        let Some(close_at) = rest[open_end..].find(&close).map(|i| open_end + i) else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[open_end..close_at];
        let inner = inner.strip_prefix('\n').unwrap_or(inner);
        out.push_str(inner.strip_suffix('\n').unwrap_or(inner));
        rest = &rest[close_at + close.len()..];
    }
    out.push_str(rest);
    out
}

/// The text blocks of a content array, joined.
fn texts(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .filter(|t| !t.starts_with("<system-reminder>"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn has_tool_result(content: &Value) -> bool {
    content
        .as_array()
        .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
}

/// A tool result's content: a string, or text blocks.
fn flatten(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => texts(blocks),
        _ => String::new(),
    }
}

/// A dialog: numbered options with a `❯` cursor above an `Esc to cancel`
/// footer. Permission dialogs indent their options (` ❯ 1. Yes`); question
/// dialogs (AskUserQuestion) draw them from column 0 (`❯ 1. PostgreSQL`),
/// which a history line can look like, hence the footer and at least two
/// options.
pub fn claude_dialog(lines: &[String], cols: u16) -> Option<Dialog> {
    let (title, options) = claude_shape(lines)?;
    Some(Dialog {
        title,
        lines: frame::region(lines, cols, Layout::Claude),
        options,
        cols,
    })
}

/// The dialog's title and options by shape (see `claude_dialog`).
fn claude_shape(lines: &[String]) -> Option<(String, Vec<String>)> {
    // The footer is the last row (a quote of one in the history is not).
    if !lines
        .iter()
        .rev()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.contains("Esc to cancel"))
    {
        return None;
    }
    let shifted: Vec<String> = lines
        .iter()
        .map(|l| match l.strip_prefix("❯ ") {
            Some(rest) if rest.split_once(". ").is_some_and(|(n, _)| n.parse::<u32>().is_ok()) => format!(" {l}"),
            _ => l.clone(),
        })
        .collect();
    shape_of(&shifted).filter(|(_, options)| options.len() >= 2)
}

fn is_rule(line: &str) -> bool {
    line.starts_with('─')
}

/// The input box's line: `❯` then only spaces or typed text, right under a rule.
fn is_input_line(lines: &[String], i: usize) -> bool {
    i > 0
        && is_rule(&lines[i - 1])
        && lines[i]
            .strip_prefix('❯')
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\u{a0}']))
}

/// BUSY while `esc to interrupt` shows; DIALOG when numbered options with a
/// cursor show; IDLE when the input box shows; otherwise (starting up, a
/// screen we do not know) BUSY.
pub fn status_of(lines: &[String]) -> Status {
    if lines.iter().any(|l| l.contains("esc to interrupt")) {
        return Status::Busy;
    }
    if claude_shape(lines).is_some() {
        return Status::Dialog;
    }
    if (0..lines.len()).any(|i| is_input_line(lines, i)) {
        return Status::Idle;
    }
    Status::Busy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_blocks_are_unwrapped_to_what_was_pasted() {
        let stored = "<pasted_content id=\"cea0\">\nline one\nline two\n</pasted_content id=\"cea0\">";
        assert_eq!(unwrap_pastes(stored), "line one\nline two");
        let mixed = "see <pasted_content id=\"a1\">\nx\n</pasted_content id=\"a1\"> and <pasted_content id=\"b2\">\ny\n</pasted_content id=\"b2\">!";
        assert_eq!(unwrap_pastes(mixed), "see x and y!");
        assert_eq!(unwrap_pastes("no paste"), "no paste");
        let broken = "<pasted_content id=\"z\">\nnever closed";
        assert_eq!(unwrap_pastes(broken), broken);
    }

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    /// Seen on Claude Code 2.1.332 (trailing spaces trimmed).
    const BASH_DIALOG: &str = " ▐▛███▛█   Claude Code v2.1.332
▝▜██████▀  Opus 5.5 · API Usage Billing

❯ run: echo hi > out.txt

● Running echo hi > out.txt
  ⎿  $ echo hi > out.txt

────────────────────────────────────────
 Bash command
 Tip: auto mode handles these prompts for you — choose \"switch to auto mode\" below
 Run echo hi > out.txt
╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
 echo hi > out.txt
╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌╌
 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and always allow access to /tmp/cx/ws from this project
   3. Yes, and switch to auto mode · auto mode handles these prompts for you
   4. No

 Esc to cancel · Tab to amend";

    #[test]
    fn the_real_bash_dialog_is_read_for_supervision() {
        let screen = lines(BASH_DIALOG);
        assert_eq!(status_of(&screen), Status::Dialog);
        let d = claude_dialog(&screen, 40).expect("dialog");
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.options.len(), 4);
        assert_eq!(d.lines.first().map(String::as_str), Some("─".repeat(40).as_str()));
        let s = ClaudeHarness.supervision_dialog(&d, Path::new("/tmp/cx/ws"), None);
        assert_eq!(s.doubt, None);
        assert_eq!(s.command.as_deref(), Some("echo hi > out.txt"));
        assert_eq!(s.question, "Do you want to proceed?");
        assert_eq!(
            s.options[1],
            "Yes, and always allow access to /tmp/cx/ws from this project"
        );
        let answers = s.answers.expect("answers");
        assert_eq!(answers.approve_once.map(|a| a.keys), Some("1".to_string()));
        assert_eq!(
            answers.deny.map(|a| (a.option, a.keys)),
            Some((Some(3), "4".to_string()))
        );
    }

    #[test]
    fn a_question_is_a_dialog_and_a_history_line_is_not() {
        let question = lines(
            "❯ ask: Which database?\n──────────\n ☐ Choice\nWhich database?\n❯ 1. PostgreSQL\n     PostgreSQL\n  2. SQLite\n     SQLite\n  3. Type something.\n──────────\n  4. Chat about this\nEnter to select · ↑/↓ to navigate · Esc to cancel",
        );
        assert_eq!(status_of(&question), Status::Dialog);
        let d = claude_dialog(&question, 10).expect("dialog");
        assert_eq!(d.title, "☐ Choice");
        assert_eq!(d.options.len(), 3);
        assert!(d.options[0].starts_with("1. PostgreSQL"), "{:?}", d.options);
        // The user once typed "1. fix it": its history line is no dialog.
        let history = lines("❯ 1. fix it\n● done\n──────────\n❯ \n──────────");
        assert_eq!(claude_dialog(&history, 10), None);
        assert_eq!(status_of(&history), Status::Idle);
    }

    #[test]
    fn idle_only_with_the_input_box() {
        let idle = lines(
            "❯ run: echo hi\n  Ran 1 shell command\n● Tool finished\n──────────\n❯\u{a0}\n──────────\n  ⏸ manual mode on · ? for shortcuts",
        );
        assert_eq!(status_of(&idle), Status::Idle);
        // A history line that starts with the glyph is not the input box.
        let starting = lines(" ▐▛███▛█   Claude Code\n\n❯ run: echo hi\n\n● Running");
        assert_eq!(status_of(&starting), Status::Busy);
        let busy = lines("✻ Thinking… (esc to interrupt)\n──────────\n❯ \n──────────");
        assert_eq!(status_of(&busy), Status::Busy);
    }

    #[test]
    fn session_lines_are_attributed() {
        let h = ClaudeHarness;
        let human = r#"{"type":"user","message":{"role":"user","content":"run: ls"},"origin":{"kind":"human"}}"#;
        let e = h.parse_session_line(human).expect("human");
        assert_eq!(
            (e.speaker, e.kind, e.text.as_str()),
            ("human", "terminal_input", "run: ls")
        );
        let tool_use = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"ls -a","description":"d"}}]}}"#;
        let e = h.parse_session_line(tool_use).expect("tool use");
        assert_eq!(
            (e.speaker, e.kind, e.text.as_str()),
            ("agent", "tool_use", "Bash: ls -a")
        );
        let cli = r#"{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#;
        let e = h.parse_session_line(cli).expect("cli text");
        assert_eq!((e.speaker, e.kind), ("system", "cli"));
        let result = r#"{"type":"user","message":{"content":[{"tool_use_id":"t","type":"tool_result","content":"a\nb","is_error":false}]}}"#;
        let e = h.parse_session_line(result).expect("result");
        assert_eq!((e.speaker, e.text.as_str()), ("tool", "a\nb"));
        let reply = r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Tool finished: ok"}]}}"#;
        let e = h.parse_session_line(reply).expect("reply");
        assert_eq!(
            (e.speaker, e.kind, e.text.as_str()),
            ("agent", "reply", "Tool finished: ok")
        );
        for other in [
            r#"{"type":"attachment","attachment":{}}"#,
            r#"{"type":"system","subtype":"x"}"#,
            r#"{"type":"permission-mode","permissionMode":"default"}"#,
            "not json",
        ] {
            assert!(h.parse_session_line(other).is_none(), "{other}");
        }
    }

    #[test]
    fn config_merge_keeps_what_the_cli_stored() {
        let existing = r#"{"numStartups": 3, "projects": {"/other": {"x": 1}}, "customApiKeyResponses": {"approved": ["old"], "rejected": []}}"#;
        let cfg = merged_config(
            Some(existing),
            Path::new("/w"),
            Some("sk-ant-0123456789abcdefghijKLMNOPQRST"),
        );
        assert_eq!(cfg["numStartups"], 3);
        assert_eq!(cfg["projects"]["/other"]["x"], 1);
        assert_eq!(cfg["projects"]["/w"]["hasTrustDialogAccepted"], true);
        assert_eq!(cfg["hasCompletedOnboarding"], true);
        assert_eq!(
            cfg["customApiKeyResponses"]["approved"],
            json!(["old", "abcdefghijKLMNOPQRST"])
        );
        let again = merged_config(
            Some(&cfg.to_string()),
            Path::new("/w"),
            Some("sk-ant-0123456789abcdefghijKLMNOPQRST"),
        );
        assert_eq!(again, cfg, "merging twice changes nothing");
        let fresh = merged_config(Some("garbage"), Path::new("/w"), None);
        assert_eq!(fresh["projects"]["/w"]["hasTrustDialogAccepted"], true);
    }

    #[test]
    fn slugs_match_the_session_store() {
        assert_eq!(project_slug(Path::new("/tmp/cx/ws")), "-tmp-cx-ws");
        assert_eq!(project_slug(Path::new("/a/b_c.d")), "-a-b-c-d");
    }
}
