//! Adapter for the project's fake CLI (`warren fake-cli`), which draws Claude
//! Code's screen shapes: `❯ ` prompt at column 0 when idle, `esc to interrupt`
//! while busy, numbered options with a ` ❯ ` cursor in dialogs.

use std::path::{Path, PathBuf};

use console_api::Status;

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
        crate::exits::line_with(last_lines, super::claude::MISSING_SESSION)
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
        dialog_of(&screen.lines)
    }

    fn supervision_dialog(&self, dialog: &Dialog, cwd: &std::path::Path) -> supervision::Dialog {
        claude_shaped(dialog, cwd)
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

pub(crate) fn status_of(lines: &[String]) -> Status {
    if lines.iter().any(|l| l.contains("esc to interrupt")) {
        return Status::Busy;
    }
    if dialog_of(lines).is_some() {
        return Status::Dialog;
    }
    if lines.iter().any(|l| is_prompt_line(l)) {
        return Status::Idle;
    }
    // Starting up, or drawing something we do not know: not ready for input.
    Status::Busy
}

pub(crate) fn dialog_of(lines: &[String]) -> Option<Dialog> {
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
    let block: Vec<String> = lines[rule..start]
        .iter()
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let title = block.first().cloned().unwrap_or_default();
    Some(Dialog {
        title,
        lines: block,
        options,
    })
}

/// Claude Code's dialog layout (which the fake CLI draws): a title, a
/// description, the command or diff between two `╌` rules, the question, then
/// numbered options.
pub(crate) fn claude_shaped(d: &Dialog, cwd: &std::path::Path) -> supervision::Dialog {
    let is_rule = |l: &str| !l.is_empty() && l.chars().all(|c| c == '╌');
    let rules: Vec<usize> = d
        .lines
        .iter()
        .enumerate()
        .filter(|(_, l)| is_rule(l))
        .map(|(i, _)| i)
        .collect();
    let framed: Vec<String> = match rules.as_slice() {
        [a, b, ..] => d.lines[a + 1..*b].to_vec(),
        _ => vec![],
    };
    let question = d
        .lines
        .iter()
        .rev()
        .find(|l| l.ends_with('?'))
        .cloned()
        .unwrap_or_default();
    let body: Vec<String> = d
        .lines
        .iter()
        .skip(1)
        .filter(|l| !is_rule(l) && **l != question && !framed.contains(l))
        .cloned()
        .collect();
    let title_lc = d.title.to_lowercase();
    let mut out = supervision::Dialog {
        title: d.title.clone(),
        question,
        body: body.join("\n"),
        options: d
            .options
            .iter()
            .map(|o| {
                o.split_once(". ")
                    .map(|(_, t)| t.to_string())
                    .unwrap_or_else(|| o.clone())
            })
            .collect(),
        cwd: Some(cwd.display().to_string()),
        ..supervision::Dialog::default()
    };
    if title_lc.contains("bash") || title_lc.contains("command") {
        out.command = Some(framed.join("\n")).filter(|c| !c.is_empty());
    } else if title_lc.contains("edit") || title_lc.contains("create") || title_lc.contains("write") {
        out.paths = body.first().cloned().into_iter().collect();
        out.content = framed.join("\n");
    } else {
        out.body = d.lines.iter().skip(1).cloned().collect::<Vec<_>>().join("\n");
    }
    out
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
            "> run\n──────\n Bash command\n Run a command requested by the fake model\n ╌╌╌\n cargo test\n ╌╌╌\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /w from this project\n   3. Yes, and switch to auto mode · auto mode handles these prompts for you\n   4. No\n\n Esc to cancel · Tab to amend",
        );
        assert_eq!(status_of(&dialog), Status::Dialog);
        let d = dialog_of(&dialog).expect("dialog");
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.options.len(), 4);
        assert_eq!(d.options[0], "1. Yes");
        assert_eq!(d.options[3], "4. No");
        assert_eq!(status_of(&lines("starting...")), Status::Busy);
    }

    #[test]
    fn a_wrapped_option_is_one_option() {
        let screen = lines(
            "──────\n Bash command\n ╌╌╌\n ls\n ╌╌╌\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /a/very/long/path\n      from this project\n   3. No\n\n Esc to cancel",
        );
        let d = dialog_of(&screen).expect("dialog");
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
    fn dialogs_map_to_what_supervision_classifies() {
        let bash = lines(
            "──────\n Bash command\n Run a command requested by the fake model\n ╌╌╌\n cargo test\n ╌╌╌\n Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /w from this project\n   4. No",
        );
        let d = claude_shaped(&dialog_of(&bash).expect("dialog"), std::path::Path::new("/w"));
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.command.as_deref(), Some("cargo test"));
        assert_eq!(d.question, "Do you want to proceed?");
        assert_eq!(d.options[0], "Yes");
        assert_eq!(d.body, "Run a command requested by the fake model");
        let edit = lines(
            "──────\n Edit file\n src/x.rs\n ╌╌╌\n + edited\n ╌╌╌\n Do you want to make this edit to x.rs?\n ❯ 1. Yes\n   3. No",
        );
        let d = claude_shaped(&dialog_of(&edit).expect("dialog"), std::path::Path::new("/w"));
        assert_eq!(d.paths, vec!["src/x.rs".to_string()]);
        assert_eq!(d.content, "+ edited");
        assert_eq!(d.command, None);
    }

    #[test]
    fn a_reply_quoting_a_prompt_glyph_is_not_a_dialog() {
        // History text is indented by two spaces and has no numbered cursor.
        let screen = lines("● the prompt looks like ❯ 1. Yes\n──────\n❯ typed\n──────");
        assert_eq!(status_of(&screen), Status::Idle);
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
