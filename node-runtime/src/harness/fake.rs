//! Adapter for the project's fake CLI (`warren fake-cli`), which draws Claude
//! Code's screen shapes: `❯ ` prompt at column 0 when idle, `esc to interrupt`
//! while busy, numbered options with a ` ❯ ` cursor in dialogs. Its dialogs
//! are read for supervision by `frame` with the fake CLI's layout (it has no
//! hooks: the screen alone, read exactly or held).

use std::path::{Path, PathBuf};

use console_api::Status;

use super::frame::{self, Layout};
use super::{Dialog, Entry, Harness, HarnessError, HarnessSettings, LaunchContext, LaunchPlan};
use crate::runtime::ScreenSnapshot;

pub struct FakeHarness;

const SESSION_DIR: &str = ".fake-cli/sessions";
const RULES_FILE: &str = ".fake-cli/rules.json";

impl Harness for FakeHarness {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn program(&self, settings: &HarnessSettings, self_exe: &Path) -> PathBuf {
        settings.program.clone().unwrap_or_else(|| self_exe.to_path_buf())
    }

    /// The fake CLI says it as Claude Code does.
    fn missing_session_words<'a>(&self, last_lines: &'a [String]) -> Option<&'a str> {
        crate::exits::line_with(last_lines, super::CLAUDE_MISSING_SESSION)
    }

    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError> {
        let session_dir = ctx.home.join(SESSION_DIR);
        let mut args = vec![
            "fake-cli".to_string(),
            "--session-dir".into(),
            session_dir.display().to_string(),
            if ctx.resume { "--resume" } else { "--session-id" }.into(),
            ctx.resume_ref.to_string(),
        ];
        let mut files = vec![];
        if !ctx.agent.rules.is_empty() {
            let rules: Vec<serde_json::Value> = ctx
                .agent
                .rules
                .iter()
                .map(|r| serde_json::json!({"match": r.pattern, "actions": r.actions}))
                .collect();
            let body = serde_json::to_vec_pretty(&serde_json::json!({ "rules": rules }))
                .map_err(|e| HarnessError::Home(e.to_string()))?;
            files.push((PathBuf::from(RULES_FILE), body));
            args.push("--rules".into());
            args.push(ctx.home.join(RULES_FILE).display().to_string());
        }
        Ok(LaunchPlan {
            program: self.program(ctx.settings, ctx.self_exe),
            args,
            // Where `/fake spend` writes its Claude-format usage lines (the
            // spend ledger reads `<home>/.claude`).
            env: vec![(
                "CLAUDE_CONFIG_DIR".to_string(),
                ctx.home.join(".claude").display().to_string(),
            )],
            files,
            transcript_file: Some(session_dir.join(format!("{}.jsonl", ctx.resume_ref))),
        })
    }

    fn status(&self, screen: &ScreenSnapshot) -> Status {
        status_of(&screen.lines)
    }

    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog> {
        dialog_of(&screen.lines, screen.cols)
    }

    fn supervision_dialog(
        &self,
        dialog: &Dialog,
        cwd: &Path,
        _hook: Option<&crate::harness::hooks::ToolRequest>,
    ) -> supervision::Dialog {
        frame::read(dialog, Layout::Fake, cwd, None)
    }

    fn parse_session_line(&self, line: &str) -> Option<Entry> {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let text = v.get("text")?.as_str()?.to_string();
        let (speaker, kind) = match v.get("type")?.as_str()? {
            "user" => ("human", "terminal_input"),
            "assistant" => ("agent", "reply"),
            "tool" => ("tool", "tool_output"),
            "system" => ("system", "cli"),
            _ => return None,
        };
        Some(Entry { speaker, kind, text })
    }
}

fn is_prompt_line(line: &str) -> bool {
    line.strip_prefix('❯')
        .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\u{a0}']))
}

/// `(selected, number, text)` for an option line like ` ❯ 1. Yes` or `   2. No`.
fn option_line(line: &str) -> Option<(bool, u32, String)> {
    if !line.starts_with(' ') {
        return None;
    }
    let t = line.trim_start();
    let (selected, t) = match t.strip_prefix('❯') {
        Some(rest) => (true, rest.trim_start()),
        None => (false, t),
    };
    let dot = t.find(". ")?;
    let number: u32 = t[..dot].parse().ok()?;
    Some((selected, number, t[dot + 2..].trim_end().to_string()))
}

pub fn status_of(lines: &[String]) -> Status {
    if lines.iter().any(|l| l.contains("esc to interrupt")) {
        return Status::Busy;
    }
    if shape_of(lines).is_some() {
        return Status::Dialog;
    }
    if lines.iter().any(|l| is_prompt_line(l)) {
        return Status::Idle;
    }
    // Starting up, or drawing something we do not know: not ready for input.
    Status::Busy
}

/// A dialog on screen: one is showing when a row has the option cursor
/// (` ❯ N. text`); its title and options by that shape, its rows from the
/// rule that opens it to its footer.
pub fn dialog_of(lines: &[String], cols: u16) -> Option<Dialog> {
    let (title, options) = shape_of(lines)?;
    Some(Dialog {
        title,
        lines: frame::region(lines, cols, Layout::Fake),
        options,
        cols,
    })
}

/// The title and option rows of the dialog on screen, by shape: a dialog's
/// footer (`... Esc to cancel`) is the last row, and the first block of option
/// rows with a cursor and the first row after the rule above it give its
/// title and options (for display: what supervision acts on is read from the
/// frame). History that quotes a dialog's rows is no dialog: the prompt box,
/// not a footer, is then the bottom of the screen.
pub fn shape_of(lines: &[String]) -> Option<(String, Vec<String>)> {
    let bottom = lines.iter().rev().find(|l| !l.trim().is_empty())?;
    if !bottom.contains("Esc to cancel") {
        return None;
    }
    let first = lines
        .iter()
        .position(|l| option_line(l).is_some_and(|(selected, _, _)| selected))?;
    // Options run contiguously around the selected one; find the block's start.
    let mut start = first;
    while start > 0 && option_line(&lines[start - 1]).is_some() {
        start -= 1;
    }
    // Option rows, joining the continuation lines of an option that wrapped.
    let mut options: Vec<String> = vec![];
    for l in &lines[start..] {
        if let Some((_, n, text)) = option_line(l) {
            options.push(format!("{n}. {text}"));
        } else if l.starts_with("    ") && !l.trim().is_empty() {
            match options.last_mut() {
                Some(last) => {
                    last.push(' ');
                    last.push_str(l.trim());
                }
                None => break,
            }
        } else {
            break;
        }
    }
    // The title is the first non-empty line after the rule that opens the dialog.
    let rule = lines[..start]
        .iter()
        .rposition(|l| l.starts_with('─'))
        .map(|i| i + 1)
        .unwrap_or(0);
    let title = lines[rule..start]
        .iter()
        .map(|l| l.trim())
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string();
    Some((title, options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    #[test]
    fn idle_busy_and_dialog_screens() {
        let idle = lines("● echo: hi\n\n──────\n❯ \n──────\n  ? for shortcuts");
        assert_eq!(status_of(&idle), Status::Idle);
        let idle_nbsp = lines("──────\n❯\u{a0}\n──────");
        assert_eq!(status_of(&idle_nbsp), Status::Idle);
        let busy = lines("> hi\n\n✻ Thinking… (1s · esc to interrupt)\n──────\n❯ \n──────");
        assert_eq!(status_of(&busy), Status::Busy);
        let dialog = lines(
            "> run\n──────\n Bash command\n Run a command requested by the fake model\n ╌╌╌╌\n cargo test\n ╌╌╌╌\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /w from this project\n   3. Yes, and switch to auto mode · auto mode handles these prompts for you\n   4. No\n\n Esc to cancel · Tab to amend\n\n",
        );
        assert_eq!(status_of(&dialog), Status::Dialog);
        let d = dialog_of(&dialog, 6).expect("dialog");
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.options.len(), 4);
        assert_eq!(d.options[0], "1. Yes");
        assert_eq!(d.options[3], "4. No");
        // Its rows: from the opening rule to the footer, history left out.
        assert_eq!(d.lines.first().map(String::as_str), Some("──────"));
        assert_eq!(
            d.lines.last().map(String::as_str),
            Some(" Esc to cancel · Tab to amend")
        );
        assert_eq!(status_of(&lines("starting...")), Status::Busy);
        // Read for supervision with the fake CLI's template.
        let s = FakeHarness.supervision_dialog(&d, Path::new("/w"), None);
        assert_eq!((s.command.as_deref(), s.doubt.as_deref()), (Some("cargo test"), None));
        let answers = s.answers.expect("answers");
        assert_eq!(answers.approve_once.map(|a| a.keys), Some("1".to_string()));
        assert_eq!(answers.deny.map(|a| a.keys), Some("4".to_string()));
    }

    #[test]
    fn a_wrapped_option_is_one_option() {
        let screen = lines(
            "──────\n Bash command\n ╌╌╌\n ls\n ╌╌╌\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /a/very/long/path\n      from this project\n   3. No\n\n Esc to cancel",
        );
        let d = dialog_of(&screen, 6).expect("dialog");
        assert_eq!(
            d.options,
            vec![
                "1. Yes",
                "2. Yes, and always allow access to /a/very/long/path from this project",
                "3. No"
            ]
        );
    }

    #[test]
    fn a_reply_quoting_a_prompt_glyph_is_not_a_dialog() {
        // History text is indented by two spaces and has no numbered cursor.
        let screen = lines("● the prompt looks like ❯ 1. Yes\n──────\n❯ typed\n──────");
        assert_eq!(status_of(&screen), Status::Idle);
        // A denied command that drew a dialog's rows stays in the history:
        // the prompt box, not a footer, is at the bottom.
        let quoted = lines(
            "● Permission denied: cat x\n  ❯ 1. No\n    2. Yes\n\n  Esc to cancel\n\n──────\n❯ \n──────\n  ? for shortcuts",
        );
        assert_eq!(status_of(&quoted), Status::Idle);
        assert_eq!(dialog_of(&quoted, 6), None);
    }

    #[test]
    fn session_lines_are_attributed() {
        let h = FakeHarness;
        let e = h
            .parse_session_line(r#"{"ts_ms":1,"type":"assistant","text":"hi"}"#)
            .expect("entry");
        assert_eq!((e.speaker, e.kind, e.text.as_str()), ("agent", "reply", "hi"));
        let e = h
            .parse_session_line(r#"{"ts_ms":1,"type":"tool","text":"$ ls"}"#)
            .expect("entry");
        assert_eq!(e.speaker, "tool");
        assert!(h.parse_session_line("not json").is_none());
        assert!(h.parse_session_line(r#"{"type":"mystery","text":"x"}"#).is_none());
    }
}
