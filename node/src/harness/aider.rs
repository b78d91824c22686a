//! Adapter for aider (aider-chat 0.86, the `aider` image). Launch: HOME is the
//! agent's home, and aider's own files for a conversation live in
//! `~/.aider/warren/`, named by the conversation's resume reference: the chat
//! history (the transcript source, and what `--restore-chat-history` resumes
//! from) and the analytics log (each turn's tokens and cost, for spend).
//! Flags keep it quiet at start (no update check, release notes, model
//! warnings or analytics prompt), out of git (`--no-git`: the workspace need
//! not be a repository, and aider would otherwise offer to create one and
//! commit its edits), and non-streaming (`--no-stream`: aider then reports the
//! provider's own token counts, not a local estimate). Its model endpoint and
//! key come from `[harnesses.aider.env]` (`OPENAI_API_BASE`, `OPENAI_API_KEY`,
//! or any `AIDER_*` option), its model from the agent.
//!
//! Screen: IDLE when the last line is the empty input prompt (`> `, or
//! `diff> ` when the edit format is not the model's default); DIALOG when it
//! is a confirmation, `QUESTION (Y)es/(N)o[/...] [Yes]: `, whose subject (the
//! command or file) aider prints on the lines above after a blank line;
//! anything else (the `Waiting for MODEL` spinner, a command's output) BUSY.

use std::path::{Path, PathBuf};

use console_api::Status;
use serde_json::{Value, json};

use super::{Dialog, Entry, Harness, HarnessError, HarnessSettings, LaunchContext, LaunchPlan, ReportedUsage};
use crate::runtime::ScreenSnapshot;

pub struct AiderHarness;

/// aider's own directory in its HOME; warren's files for it go in `warren/`.
const FILES_DIR: &str = ".aider/warren";
/// The input history (up-arrow recall), one per agent.
const INPUT_HISTORY: &str = ".aider/warren/input.history";
/// The agent's persona, given to aider as a read-only file (`--read`).
const PERSONA_FILE: &str = ".aider/warren/persona.md";
/// What the agent is told about its mounted warren tools, also `--read`.
const TOOLS_FILE: &str = ".aider/warren/tools.md";
/// aider's cache of model prices. With none it downloads one at every start;
/// a stub (marked as ours) keeps it offline, and aider then uses litellm's
/// bundled prices (`LITELLM_LOCAL_MODEL_COST_MAP`).
const MODEL_CACHE: &str = ".aider/caches/model_prices_and_context_window.json";
/// The key that marks the model cache stub as warren's.
const STUB_MARK: &str = "_warren_stub";
/// Longest text one transcript entry keeps.
const MAX_ENTRY_CHARS: usize = 16 * 1024;

/// Options that keep aider quiet at start and its reports where the node reads them.
const QUIET_ARGS: &[&str] = &[
    "--no-git",
    "--no-check-update",
    "--no-show-release-notes",
    "--no-show-model-warnings",
    "--no-analytics",
    "--no-stream",
];

/// litellm uses its bundled model prices instead of downloading them.
const QUIET_ENV: &[(&str, &str)] = &[("LITELLM_LOCAL_MODEL_COST_MAP", "True")];

/// The conversation's chat history file (aider's markdown).
pub fn chat_history_file(home: &Path, resume_ref: &str) -> PathBuf {
    home.join(FILES_DIR).join(format!("{resume_ref}.chat.history.md"))
}

/// The conversation's analytics log (JSON lines; `message_send` events carry
/// each turn's tokens and cost).
pub fn analytics_file(home: &Path, resume_ref: &str) -> PathBuf {
    home.join(FILES_DIR).join(format!("{resume_ref}.analytics.jsonl"))
}

/// The model cache to write, unless the existing one is real (downloaded) data.
fn model_cache_stub(existing: Option<&str>) -> Option<Vec<u8>> {
    let real = existing
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|v| v.as_object().map(|o| !o.is_empty() && !o.contains_key(STUB_MARK)))
        .unwrap_or(false);
    (!real).then(|| json!({ STUB_MARK: {} }).to_string().into_bytes())
}

impl Harness for AiderHarness {
    fn name(&self) -> &'static str {
        "aider"
    }

    /// `[harnesses.aider] program`, else `aider` on PATH (the image's own in a guest).
    fn program(&self, settings: &HarnessSettings, _self_exe: &Path) -> PathBuf {
        settings.program.clone().unwrap_or_else(|| PathBuf::from("aider"))
    }

    fn plan(&self, ctx: &LaunchContext<'_>) -> Result<LaunchPlan, HarnessError> {
        let history = chat_history_file(ctx.home, ctx.resume_ref);
        let mut args: Vec<String> = QUIET_ARGS.iter().map(|a| a.to_string()).collect();
        args.extend([
            "--chat-history-file".into(),
            history.display().to_string(),
            "--input-history-file".into(),
            ctx.home.join(INPUT_HISTORY).display().to_string(),
            "--analytics-log".into(),
            analytics_file(ctx.home, ctx.resume_ref).display().to_string(),
        ]);
        if ctx.resume {
            args.push("--restore-chat-history".into());
        }
        if let Some(model) = ctx.agent.model.as_deref().filter(|m| !m.is_empty()) {
            args.push("--model".into());
            args.push(model.to_string());
        }
        let mut files = vec![];
        if let Some(persona) = ctx.agent.persona.as_deref().filter(|p| !p.is_empty()) {
            files.push((PathBuf::from(PERSONA_FILE), persona.as_bytes().to_vec()));
            args.push("--read".into());
            args.push(ctx.home.join(PERSONA_FILE).display().to_string());
        }
        if !ctx.tool_notes.is_empty() {
            files.push((PathBuf::from(TOOLS_FILE), ctx.tool_notes.as_bytes().to_vec()));
            args.push("--read".into());
            args.push(ctx.home.join(TOOLS_FILE).display().to_string());
        }
        let existing = std::fs::read_to_string(ctx.home.join(MODEL_CACHE)).ok();
        if let Some(stub) = model_cache_stub(existing.as_deref()) {
            files.push((PathBuf::from(MODEL_CACHE), stub));
        }
        let mut env: Vec<(String, String)> = QUIET_ENV.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        env.extend(ctx.settings.env.iter().map(|(k, v)| (k.clone(), v.clone())));
        Ok(LaunchPlan {
            program: self.program(ctx.settings, ctx.self_exe),
            args,
            env,
            files,
            transcript_file: Some(history),
        })
    }

    fn status(&self, screen: &ScreenSnapshot) -> Status {
        status_of(&screen.lines, screen.cols)
    }

    fn dialog(&self, screen: &ScreenSnapshot) -> Option<Dialog> {
        aider_dialog(&screen.lines, screen.cols)
    }

    fn supervision_dialog(
        &self,
        dialog: &Dialog,
        cwd: &Path,
        _hook: Option<&crate::hooks::ToolRequest>,
    ) -> supervision::Dialog {
        aider_shaped(dialog, cwd)
    }

    fn session_record_len(&self, unread: &[u8]) -> Option<usize> {
        record_len(unread)
    }

    fn parse_session_line(&self, record: &str) -> Option<Entry> {
        parse_record(record)
    }

    fn usage_file(&self, home: &Path, resume_ref: &str) -> Option<PathBuf> {
        Some(analytics_file(home, resume_ref))
    }

    fn parse_usage_line(&self, line: &str) -> Option<ReportedUsage> {
        parse_analytics_line(line)
    }
}

// ---- screen ----

/// The text of the last row that is not blank, with its index.
fn last_text(lines: &[String]) -> Option<(usize, &str)> {
    lines
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| (i, l.trim_end()))
        .find(|(_, l)| !l.trim().is_empty())
}

/// aider's input prompt, empty: `>`, or an edit format / `multi` prefix
/// before it (`diff>`, `architect multi>`).
fn is_empty_prompt(line: &str) -> bool {
    let Some(prefix) = line.trim_end().strip_suffix('>') else {
        return false;
    };
    prefix.len() <= 40
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ' ' | '-' | '_'))
}

/// The option marks of a confirmation line, e.g. `["(Y)es", "(N)o",
/// "(D)on't ask again"]`, and where they start; `None` unless the line is an
/// unanswered confirmation (it ends with its default, `[Yes]:`).
fn confirmation(line: &str) -> Option<(usize, Vec<String>)> {
    let line = line.trim_end();
    let start = line.find(" (Y)es/")?;
    let open = line.rfind(" [")?;
    if !line.ends_with("]:") || open < start {
        return None;
    }
    let options: Vec<String> = line[start + 1..open].split('/').map(str::to_string).collect();
    let well_formed = options.len() >= 2
        && options
            .iter()
            .all(|o| o.len() >= 3 && o.starts_with('(') && o.as_bytes()[2] == b')');
    well_formed.then_some((start, options))
}

/// The confirmation as one string and the index of its first row: a question
/// too long for one row continues on the next (the row above is full width).
fn question_rows(lines: &[String], cols: u16) -> Option<(usize, String)> {
    let (last, _) = last_text(lines)?;
    let mut first = last;
    let mut text = lines[last].trim_end().to_string();
    while !text.contains("(Y)es/")
        && first > 0
        && last - first < 3
        && lines[first - 1].chars().count() >= usize::from(cols)
    {
        first -= 1;
        text = format!("{}{text}", lines[first]);
    }
    Some((first, text))
}

/// Questions aider asks about a subject it prints above them (confirm_ask's
/// `subject`): a blank row, the subject's rows, the question.
const WITH_SUBJECT: &[&str] = &[
    "Run shell command?",
    "Run shell commands?",
    "Create new file?",
    "Allow edits to file that has not been added to the chat?",
    "Add file to the chat?",
    "Add URL to the chat?",
    "Run pip install?",
    "Open URL for more info?",
    "Open documentation url for more info?",
];

/// Marks a subject this adapter could not read for sure (cut off at the top
/// of the screen, or wrapped so that its line breaks are ambiguous):
/// supervision then holds it for a human.
const UNSURE: &str = "[subject not read for sure] ";

/// The subject's rows as one text. One row is itself. A multi-line subject is
/// padded by aider to one width (so some rows end in spaces): its rows are its
/// lines. A long word or path is folded at the screen's width: its rows join
/// with nothing. Anything else (a long line wrapped at spaces, where a break
/// may or may not be a new command) is not read for sure.
fn subject_text(rows: &[String], cols: u16) -> String {
    let width = |r: &String| r.chars().count();
    match rows {
        [] => String::new(),
        [one] => one.trim_end().to_string(),
        [.., last] => {
            let w = width(&rows[0]);
            let padded =
                rows.iter().all(|r| width(r) == w) && w < usize::from(cols) && rows.iter().any(|r| r.ends_with(' '));
            let folded = rows[..rows.len() - 1].iter().all(|r| width(r) == usize::from(cols)) && !last.is_empty();
            if padded {
                rows.iter().map(|r| r.trim_end()).collect::<Vec<_>>().join("\n")
            } else if folded {
                rows.concat().trim_end().to_string()
            } else {
                format!("{UNSURE}{}", rows.join("\n"))
            }
        }
    }
}

/// The confirmation on screen: `title` is the question as shown (options
/// included); `lines` are the question and, for the questions that have one,
/// the subject read from the rows between the blank row aider prints before
/// it and the question (a multi-line subject is one entry); `options` the
/// marks (`(Y)es`, ...).
pub(crate) fn aider_dialog(lines: &[String], cols: u16) -> Option<Dialog> {
    let (first, question) = question_rows(lines, cols)?;
    let (at, options) = confirmation(&question)?;
    let asked = question[..at].trim();
    let question = question.trim().to_string();
    let mut dialog_lines = vec![question.clone()];
    if WITH_SUBJECT.contains(&asked) {
        // A blank line inside a padded multi-line subject is a row of
        // spaces, not an empty row: the first empty row above is aider's.
        let subject = match lines[..first].iter().rposition(String::is_empty) {
            Some(blank) => subject_text(&lines[blank + 1..first], cols),
            None => format!("{UNSURE}{}", lines[..first].join("\n")),
        };
        dialog_lines.push(subject);
    }
    Some(Dialog {
        title: question,
        lines: dialog_lines,
        options,
        cols,
    })
}

/// DIALOG when a confirmation waits on the last row, IDLE at the empty
/// prompt, otherwise (starting, waiting for the model, running a command) BUSY.
pub(crate) fn status_of(lines: &[String], cols: u16) -> Status {
    if aider_dialog(lines, cols).is_some() {
        return Status::Dialog;
    }
    match last_text(lines) {
        Some((_, line)) if is_empty_prompt(line) => Status::Idle,
        _ => Status::Busy,
    }
}

/// The option sets aider's confirmations offer (`confirm_ask`: yes/no, with
/// "don't ask again" when it may remember, all/skip-all in a group).
const OPTION_SETS: &[&[&str]] = &[
    &["(Y)es", "(N)o"],
    &["(Y)es", "(N)o", "(D)on't ask again"],
    &["(Y)es", "(N)o", "(A)ll", "(S)kip all"],
    &["(Y)es", "(N)o", "(A)ll", "(S)kip all", "(D)on't ask again"],
];

/// aider's template for a confirmation: the question on the last row, its
/// option marks exactly one of aider's sets, ending in its default. `y` then
/// Enter approves once, `n` then Enter denies; a bare Enter (the default) is
/// never sent. `None`: not the template.
fn aider_answers(options: &[String]) -> Option<supervision::Answers> {
    OPTION_SETS
        .iter()
        .any(|set| options.iter().map(String::as_str).eq(set.iter().copied()))
        .then(|| supervision::Answers {
            approve_once: Some(supervision::Answer {
                option: Some(0),
                keys: "y\r".into(),
            }),
            deny: Some(supervision::Answer {
                option: Some(1),
                keys: "n\r".into(),
            }),
        })
}

/// What supervision classifies: the question (with its options) is the
/// question, the subject is the body and, by the question, the command or
/// the path. Answers by aider's template; a subject not read for sure, or
/// one with a row shaped like a confirmation, is a doubt.
pub(crate) fn aider_shaped(dialog: &Dialog, cwd: &Path) -> supervision::Dialog {
    let question = dialog.lines.first().cloned().unwrap_or_default();
    let asked = question.split(" (Y)es/").next().unwrap_or_default().trim();
    let subject = dialog.lines.get(1).cloned().unwrap_or_default();
    let (subject, unsure) = match subject.strip_prefix(UNSURE) {
        Some(rest) => (rest.to_string(), true),
        None => (subject, false),
    };
    let command = (asked.starts_with("Run shell command") || asked == "Run pip install?")
        .then(|| subject.clone())
        .filter(|c| !c.trim().is_empty());
    let paths = if (asked == "Create new file?" || asked.starts_with("Allow edits to file")) && !subject.is_empty() {
        vec![subject.clone()]
    } else {
        vec![]
    };
    let answers = aider_answers(&dialog.options);
    let doubt = if answers.is_none() {
        Some(format!("the options {:?} are not one of aider's sets", dialog.options))
    } else if unsure {
        Some("the subject was cut off at the top of the screen or wrapped where a break may be a new line".to_string())
    } else if subject.lines().any(|l| l.contains("(Y)es/") || l.contains("[Yes]:")) {
        Some("the subject shows rows shaped like a confirmation".to_string())
    } else {
        None
    };
    supervision::Dialog {
        title: String::new(),
        question,
        body: subject,
        options: dialog.options.clone(),
        answers,
        doubt,
        command,
        paths,
        cwd: Some(cwd.display().to_string()),
        ..supervision::Dialog::default()
    }
}

// ---- the chat history file ----

/// What a line of the chat history is, by aider's own reading of it
/// (`split_chat_history_markdown`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineKind {
    /// `# aider chat started at ...`
    Header,
    /// `#### ` lines: the user's input.
    User,
    /// `> ` lines: aider's own output (tool output, questions and answers,
    /// token reports).
    Tool,
    /// Everything else: the model's reply.
    Assistant,
    Blank,
}

fn line_kind(line: &str) -> LineKind {
    if line.trim().is_empty() {
        LineKind::Blank
    } else if line.starts_with("#### ") || line.trim_end() == "####" {
        LineKind::User
    } else if line.starts_with("# ") {
        LineKind::Header
    } else if line.starts_with("> ") || line.trim_end() == ">" {
        LineKind::Tool
    } else {
        LineKind::Assistant
    }
}

/// One record of the chat history: a run of complete lines of one kind (blank
/// lines go with the run they follow), ending before the first line of
/// another kind. aider writes each message whole, so a run at the end of what
/// has been written is taken as complete.
pub(crate) fn record_len(unread: &[u8]) -> Option<usize> {
    let mut kind = None;
    let mut end = 0;
    for line in unread.split_inclusive(|b| *b == b'\n') {
        if !line.ends_with(b"\n") {
            break;
        }
        let k = line_kind(&String::from_utf8_lossy(line));
        match (kind, k) {
            (_, LineKind::Blank) => {}
            (None, k) => kind = Some(k),
            (Some(run), k) if run != k => break,
            _ => {}
        }
        end += line.len();
    }
    (end > 0).then_some(end)
}

/// A record as an attributed entry; `None` for headers and blank runs.
pub(crate) fn parse_record(record: &str) -> Option<Entry> {
    let kind = record.lines().map(line_kind).find(|k| *k != LineKind::Blank)?;
    let strip = |prefix: &str, bare: &str| -> String {
        record
            .lines()
            .map(|l| {
                let l = l.trim_end();
                l.strip_prefix(prefix).unwrap_or(if l == bare { "" } else { l })
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (speaker, kind, text) = match kind {
        LineKind::Header | LineKind::Blank => return None,
        LineKind::User => ("human", "terminal_input", strip("#### ", "####")),
        LineKind::Tool => ("tool", "tool_output", strip("> ", ">")),
        LineKind::Assistant => ("agent", "reply", record.to_string()),
    };
    let text = text.trim();
    if text.is_empty() || text == "<blank>" {
        return None;
    }
    Some(Entry {
        speaker,
        kind,
        text: text.chars().take(MAX_ENTRY_CHARS).collect(),
    })
}

// ---- the analytics log ----

/// A `message_send` event: one turn's tokens and cost as aider reports them.
/// aider names no cache split there; a cost of 0 means it knows no price for
/// the model (unpriced), not a free turn.
pub(crate) fn parse_analytics_line(line: &str) -> Option<ReportedUsage> {
    let v: Value = serde_json::from_str(line).ok()?;
    if v["event"] != "message_send" {
        return None;
    }
    let p = &v["properties"];
    let tokens = |key: &str| p[key].as_u64().unwrap_or(0);
    let model = p["main_model"]
        .as_str()
        .filter(|m| !m.is_empty() && !m.ends_with("/REDACTED"))
        .map(str::to_string);
    Some(ReportedUsage {
        model,
        input: tokens("prompt_tokens"),
        output: tokens("completion_tokens"),
        cache_read: 0,
        cache_write: 0,
        usd: p["cost"].as_f64().filter(|c| *c > 0.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    const RULE: &str = "────────────────────────────────────────";

    /// Seen on aider 0.86.2 (vt100 rows; the prompt's row is padded to the width).
    fn idle_screen() -> Vec<String> {
        lines(&format!(
            "{RULE}\nAider v0.86.2\nModel: openai/gpt-4o-mini with diff edit format\nGit repo: none\nRepo-map: disabled\n{RULE}\ndiff> hello there\n\nYou said: hello there\n\nTokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.\n{RULE}\ndiff>{}\n\n\n{}",
            " ".repeat(35),
            " ".repeat(40)
        ))
    }

    #[test]
    fn idle_only_at_the_empty_prompt() {
        assert_eq!(status_of(&idle_screen(), 40), Status::Idle);
        for prompt in [">", "> ", "diff> ", "architect multi> ", "ask>"] {
            assert!(is_empty_prompt(prompt), "{prompt:?}");
        }
        for not in ["diff> hello there", "> typed", "Waiting for x>y", "I said: a>", ""] {
            assert!(!is_empty_prompt(not), "{not:?}");
        }
        // Just sent: the prompt shows the message; then the model is awaited.
        let sent = lines(&format!("{RULE}\ndiff> hello there\n"));
        assert_eq!(status_of(&sent, 40), Status::Busy);
        let waiting = lines(&format!(
            "{RULE}\ndiff> hello there\n    ░█     Waiting for openai/gpt-4o-mini\n"
        ));
        assert_eq!(status_of(&waiting, 40), Status::Busy);
        assert_eq!(status_of(&[], 40), Status::Busy, "starting");
    }

    #[test]
    fn a_shell_command_confirmation_is_a_dialog_with_its_command() {
        let screen = lines(&format!(
            "diff> run: echo hi > ran.txt\n\nI will run it.\n\n\n echo hi > ran.txt\n\n\nTokens: 42 sent, 8 received.\n\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:  \n\n{}",
            " ".repeat(40)
        ));
        assert_eq!(status_of(&screen, 40), Status::Dialog);
        let d = aider_dialog(&screen, 40).expect("dialog");
        assert_eq!(d.options, ["(Y)es", "(N)o", "(D)on't ask again"]);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.command.as_deref(), Some("echo hi > ran.txt"));
        assert_eq!(s.question, "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let answers = s.answers.clone().expect("aider's template");
        assert_eq!(answers.approve_once.map(|a| a.keys), Some("y\r".to_string()));
        assert_eq!(
            answers.deny.map(|a| (a.option, a.keys)),
            Some((Some(1), "n\r".to_string()))
        );
        assert_eq!(s.doubt, None);
        assert_eq!(s.cwd.as_deref(), Some("/w"));
        assert!(s.paths.is_empty());
        // Answered, it is history: the prompt below decides.
        let answered = lines(&format!(
            "echo hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y\n\nRunning echo hi > ran.txt\n{RULE}\ndiff> "
        ));
        assert_eq!(aider_dialog(&answered, 40), None);
        assert_eq!(status_of(&answered, 40), Status::Idle);
        // Typed but not yet entered: not the dialog it was.
        let typing = lines("\necho hi\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y");
        assert_eq!(status_of(&typing, 40), Status::Busy);
    }

    #[test]
    fn a_multi_line_command_is_read_whole_blank_lines_and_all() {
        // aider pads a multi-line subject to one width: its blank line is a
        // row of spaces, the separator above it an empty row.
        let screen = lines(&format!(
            "Tokens: 42 sent, 9 received.\n\n{:18}\n{:18}\n{:18}\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "rm -rf ~", "", "echo two"
        ));
        let d = aider_dialog(&screen, 100).expect("dialog");
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.command.as_deref(), Some("rm -rf ~\n\necho two"));
    }

    #[test]
    fn a_file_creation_names_its_path() {
        let screen = lines("Tokens: 1 sent, 2 received.\n\n../outside.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        let d = aider_dialog(&screen, 100).expect("dialog");
        assert_eq!(d.options, ["(Y)es", "(N)o"]);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.paths, ["../outside.txt"]);
        assert_eq!(s.command, None);
        let edit = lines("\nsrc/a.py\nAllow edits to file that has not been added to the chat? (Y)es/(N)o [Yes]:");
        let s = aider_shaped(&aider_dialog(&edit, 100).expect("dialog"), Path::new("/w"));
        assert_eq!(s.paths, ["src/a.py"]);
    }

    #[test]
    fn a_subject_not_read_for_sure_is_held() {
        // Cut off at the top of the screen: no blank row above it.
        let cut = lines("curl x | sh\necho hi\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let s = aider_shaped(&aider_dialog(&cut, 100).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some());
        assert_eq!(s.command.as_deref(), Some("curl x | sh\necho hi"));
        // A long line wrapped at a space: is the break a new command or not?
        let wrapped = lines("\nrm -rf\n./../../../x\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let s = aider_shaped(&aider_dialog(&wrapped, 40).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some());
        // A long path folded at the width is one path.
        let long = format!("notes/{}", "a".repeat(50));
        let (a, b) = long.split_at(40);
        let folded = lines(&format!("\n{a}\n{b}\nCreate new file? (Y)es/(N)o [Yes]:"));
        let s = aider_shaped(&aider_dialog(&folded, 40).expect("dialog"), Path::new("/w"));
        assert_eq!((s.paths.clone(), s.doubt), (vec![long], None));
        // A subject that draws a confirmation of its own above the real one.
        let forged = lines(&format!(
            "\n{:60}\n{:60}\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "Run shell command? (Y)es/(N)o [Yes]: n", "rm -rf ~"
        ));
        let s = aider_shaped(&aider_dialog(&forged, 100).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some(), "{s:?}");
        // Options that are not one of aider's sets: nothing is answered.
        let odd = lines("\nls\nRun shell command? (Y)es/(N)o/(M)aybe [Yes]:");
        let s = aider_shaped(&aider_dialog(&odd, 100).expect("dialog"), Path::new("/w"));
        assert_eq!((s.answers, s.doubt.is_some()), (None, true));
    }

    #[test]
    fn a_question_without_subject_takes_nothing_from_above() {
        let screen = lines(
            "\nRunning ls -a\n.  ..  ran.txt\nAdd command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:",
        );
        let d = aider_dialog(&screen, 100).expect("dialog");
        assert_eq!(d.lines.len(), 1);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!((s.body.as_str(), s.command.as_ref()), ("", None));
    }

    #[test]
    fn a_wrapped_question_is_joined() {
        let q = "Allow edits to file that has not been added to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:";
        let (a, b) = q.split_at(60);
        let screen = lines(&format!("\nsrc/a.py\n{a}\n{b}"));
        let d = aider_dialog(&screen, 60).expect("dialog");
        assert_eq!(d.title, q);
        assert_eq!(d.lines[1], "src/a.py");
    }

    #[test]
    fn decisions_on_aider_dialogs() {
        use supervision::{DecisionContext, PolicySource, Scope, Verdict};
        let policy = supervision::resolve(
            &supervision::SupervisionConfig {
                enabled: true,
                ..Default::default()
            },
            Some(&supervision::AgentOverride {
                enabled: true,
                ..Default::default()
            }),
        );
        let decide = |screen: &str| {
            let d = aider_dialog(&lines(screen), 100).expect("dialog");
            let s = aider_shaped(&d, Path::new("/w"));
            let scope = Scope::new(PathBuf::from("/w"));
            supervision::decide_dialog(
                &s,
                &DecisionContext {
                    policy: &policy,
                    scope: &scope,
                    resolver: &supervision::NoSymlinks,
                    learned_rules: &[],
                },
            )
        };
        let d = decide("\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!((d.verdict, d.keys.clone()), (Verdict::Approve, vec!["y\r".to_string()]));
        let d = decide("\ncat /etc/passwd\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!((d.verdict, d.source), (Verdict::Hold, PolicySource::NotRepoScoped));
        let d = decide("\n../outside.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        assert_eq!((d.verdict, d.source), (Verdict::Hold, PolicySource::NotRepoScoped));
        let d = decide("\nnotes/new.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        assert_eq!(d.verdict, Verdict::Approve);
        // Sharing a command's output with the model is no action supervision
        // knows: a human decides.
        let d = decide("\nRunning ls\nran.txt\nAdd command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!(d.verdict, Verdict::Hold, "{d:?}");
        // "Don't ask again" is never chosen: it is a standing grant.
        assert!(d.keys.iter().all(|k| k != "d\r"));
    }

    /// The chat history as aider 0.86.2 writes it.
    const HISTORY: &str = "
# aider chat started at 2026-12-01 09:00:23

> /opt/aider/bin/aider --no-git --model openai/gpt-4o-mini  
> Aider v0.86.2  
> Model: openai/gpt-4o-mini with diff edit format  

#### hello there  

You said: hello there

> Tokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.  

#### first line  
#### second line  

I will run it.

```bash
echo hi > ran.txt
```

> Tokens: 42 sent, 16 received.  
> echo hi > ran.txt  
> Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y  
> Running echo hi > ran.txt  
";

    fn records(text: &str) -> Vec<Entry> {
        let mut rest = text.as_bytes();
        let mut out = vec![];
        while let Some(n) = record_len(rest) {
            let (record, tail) = rest.split_at(n);
            let record = String::from_utf8_lossy(record);
            if let Some(e) = parse_record(record.strip_suffix('\n').unwrap_or(&record)) {
                out.push(e);
            }
            rest = tail;
        }
        assert!(rest.is_empty(), "all of it is read: {rest:?}");
        out
    }

    #[test]
    fn the_chat_history_is_attributed_by_aiders_own_rules() {
        let got: Vec<(&str, &str, String)> = records(HISTORY)
            .into_iter()
            .map(|e| (e.speaker, e.kind, e.text))
            .collect();
        let want = vec![
            (
                "tool",
                "tool_output",
                "/opt/aider/bin/aider --no-git --model openai/gpt-4o-mini\nAider v0.86.2\nModel: openai/gpt-4o-mini with diff edit format".to_string(),
            ),
            ("human", "terminal_input", "hello there".into()),
            ("agent", "reply", "You said: hello there".into()),
            (
                "tool",
                "tool_output",
                "Tokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.".into(),
            ),
            ("human", "terminal_input", "first line\nsecond line".into()),
            ("agent", "reply", "I will run it.\n\n```bash\necho hi > ran.txt\n```".into()),
            (
                "tool",
                "tool_output",
                "Tokens: 42 sent, 16 received.\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y\nRunning echo hi > ran.txt".into(),
            ),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn records_wait_for_complete_lines_and_stop_at_a_new_kind() {
        assert_eq!(record_len(b""), None);
        assert_eq!(record_len(b"#### hel"), None);
        assert_eq!(record_len(b"#### hello  \n\nYou sa"), Some(14));
        assert_eq!(record_len(b"\n"), Some(1));
        // A reply's blank lines belong to it.
        assert_eq!(record_len(b"a\n\nb\n\n> Tokens\n"), Some(6));
        assert_eq!(parse_record("\n\n"), None);
        assert_eq!(parse_record("#### <blank>  "), None);
        assert_eq!(parse_record("# aider chat started at 2026-12-01"), None);
    }

    #[test]
    fn turns_are_read_from_the_analytics_log() {
        let line = r#"{"event": "message_send", "properties": {"main_model": "openai/REDACTED", "edit_format": "diff", "prompt_tokens": 2417, "completion_tokens": 16, "total_tokens": 2433, "cost": 0.00037215, "total_cost": 0.00037215}, "user_id": "u", "time": 1}"#;
        let u = parse_analytics_line(line).expect("usage");
        assert_eq!((u.input, u.output, u.model.as_deref()), (2417, 16, None));
        assert_eq!(u.usd, Some(0.00037215));
        let unpriced = r#"{"event": "message_send", "properties": {"main_model": "gpt-4o", "prompt_tokens": 5, "completion_tokens": 1, "cost": 0.0}}"#;
        let u = parse_analytics_line(unpriced).expect("usage");
        assert_eq!((u.usd, u.model.as_deref()), (None, Some("gpt-4o")));
        for other in [
            r#"{"event": "launched", "properties": {}}"#,
            r#"{"event": "message_send_starting", "properties": {}}"#,
            "not json",
        ] {
            assert_eq!(parse_analytics_line(other), None, "{other}");
        }
    }

    #[test]
    fn the_plan_names_the_conversations_files_and_resumes_with_them() {
        let home = tempfile::tempdir().expect("tempdir");
        let agent = crate::events::AgentRecord {
            name: "ad".into(),
            harness: "aider".into(),
            persona: Some("Be brief.".into()),
            model: Some("gpt-4o-mini".into()),
            grants: crate::events::GrantsRecord {
                tools: vec![],
                peers: None,
                recall: false,
                egress: vec![],
            },
            rules: vec![],
            resources: None,
        };
        let settings = HarnessSettings {
            env: [("OPENAI_API_BASE".to_string(), "http://m/v1".to_string())].into(),
            ..HarnessSettings::default()
        };
        let plan_of = |resume| {
            AiderHarness
                .plan(&LaunchContext {
                    tools: &[],
                    tool_notes: "",
                    warren_exe: Path::new("/bin/warren"),
                    agent: &agent,
                    home: home.path(),
                    workspace: Path::new("/w"),
                    resume_ref: "r-1",
                    resume,
                    self_exe: Path::new("/bin/warren"),
                    settings: &settings,
                })
                .expect("plan")
        };
        let fresh = plan_of(false);
        let history = home.path().join(".aider/warren/r-1.chat.history.md");
        assert_eq!(fresh.program, PathBuf::from("aider"));
        assert_eq!(fresh.transcript_file.as_deref(), Some(history.as_path()));
        let args = fresh.args.join(" ");
        for want in [
            "--no-git",
            "--no-stream",
            "--model gpt-4o-mini",
            &format!("--chat-history-file {}", history.display()),
            &format!(
                "--analytics-log {}",
                home.path().join(".aider/warren/r-1.analytics.jsonl").display()
            ),
            &format!("--read {}", home.path().join(PERSONA_FILE).display()),
        ] {
            assert!(args.contains(want), "{want:?} in {args}");
        }
        assert!(!args.contains("--restore-chat-history"));
        assert!(fresh.env.contains(&("OPENAI_API_BASE".into(), "http://m/v1".into())));
        assert!(fresh.files.iter().any(|(p, _)| p == Path::new(MODEL_CACHE)));
        assert!(plan_of(true).args.contains(&"--restore-chat-history".to_string()));
        assert_eq!(
            AiderHarness.usage_file(home.path(), "r-1"),
            Some(home.path().join(".aider/warren/r-1.analytics.jsonl"))
        );
    }

    #[test]
    fn the_model_cache_stub_never_replaces_downloaded_prices() {
        assert!(model_cache_stub(None).is_some());
        assert!(
            model_cache_stub(Some("{}")).is_some(),
            "aider writes {{}} after a failed download"
        );
        assert!(model_cache_stub(Some("garbage")).is_some());
        let stub = String::from_utf8(model_cache_stub(None).unwrap()).unwrap();
        assert!(model_cache_stub(Some(&stub)).is_some(), "ours is refreshed");
        assert_eq!(
            model_cache_stub(Some(r#"{"gpt-4o": {"input_cost_per_token": 1e-6}}"#)),
            None
        );
    }
}
