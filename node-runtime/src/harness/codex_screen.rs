//! Codex's screen (0.163): its status, and its approval dialog read from the
//! fixed places of its template, never by the shape of a row alone. From the
//! bottom: the footer `  Press enter to confirm or esc to cancel` (the last
//! row), a blank row, the option block (`› 1. Yes, proceed (y)`,
//! `  2. ...`, continuations indented five columns). From the top of the
//! dialog: the question, then `Environment:`, `Reason:` and the `$ ` row of
//! the command. The command is Codex's own record of the call (its rollout's
//! `exec_command`, read by the adapter), which the screen must show; the
//! call's working directory comes from there too. Anything else (no record,
//! a screen that disagrees with it, options not the template's, a second
//! `$ ` row) is the dialog's `doubt`, which supervision holds for a human.

use std::path::Path;

use console_api::Status;
use supervision::{Answer, Answers};

use super::Dialog;
use super::frame::{esc_only, shows};
use super::hooks::ToolRequest;

/// The footer of Codex's approval dialogs.
pub const FOOTER: &str = "  Press enter to confirm or esc to cancel";
/// The question of the command dialog.
pub const EXEC_QUESTION: &str = "Would you like to run the following command?";
/// Its first and last options (the middle one, `(p)`, is standing).
const APPROVE_ONCE: &str = "Yes, proceed (y)";
const DENY: &str = "No, and tell Codex what to do differently (esc)";
/// The command's row.
const COMMAND_ROW: &str = "  $ ";
/// Where an option's continuation rows start.
const CONTINUATION: &str = "     ";
/// The title of a dialog whose question is not found.
const UNKNOWN_TITLE: &str = "Codex dialog";
/// How far above its options a dialog's question may be.
const MAX_DIALOG_ROWS: usize = 40;

/// `(selected, number, text)` of an option's first row: `› N. text` or
/// `  N. text`.
fn option_start(row: &str) -> Option<(bool, usize, &str)> {
    let (selected, rest) = match row.strip_prefix("› ") {
        Some(rest) => (true, rest),
        None => (false, row.strip_prefix("  ")?),
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits != 1 {
        return None;
    }
    let text = rest[1..].strip_prefix(". ")?;
    Some((selected, rest[..1].parse().ok()?, text))
}

/// One option: `(selected, number, text)`, continuations joined.
type OptionRow = (bool, usize, String);

/// The option block ending right above `end`: its first row and its options.
fn option_block(rows: &[&str], end: usize) -> Option<(usize, Vec<OptionRow>)> {
    let mut top = end;
    while top > 0 && (option_start(rows[top - 1]).is_some() || rows[top - 1].starts_with(CONTINUATION)) {
        top -= 1;
    }
    let mut options: Vec<OptionRow> = vec![];
    for row in &rows[top..end] {
        match option_start(row) {
            Some((selected, n, text)) => options.push((selected, n, text.trim().to_string())),
            None => {
                let last = options.last_mut()?;
                last.2.push(' ');
                last.2.push_str(row.trim());
            }
        }
    }
    (!options.is_empty()).then_some((top, options))
}

fn last_row(rows: &[&str]) -> Option<usize> {
    rows.iter().rposition(|r| !r.trim().is_empty())
}

/// The question above the option block: the nearest row indented two columns
/// that asks as Codex's dialogs ask (`Would you like to ...?`).
fn question_above(rows: &[&str], block_top: usize) -> Option<usize> {
    (block_top.saturating_sub(MAX_DIALOG_ROWS)..block_top).rev().find(|i| {
        let r = rows[*i];
        let t = r.trim_start();
        r.len() - t.len() == 2
            && (t.starts_with("Would you like to ") || t.starts_with("Do you want to "))
            && t.ends_with('?')
    })
}

/// A dialog: the footer as the last row, a blank row, options above it.
pub fn dialog_of(lines: &[String], cols: u16) -> Option<Dialog> {
    let rows: Vec<&str> = lines.iter().map(|l| l.trim_end()).collect();
    let footer = last_row(&rows)?;
    if rows[footer] != FOOTER || footer == 0 || !rows[footer - 1].is_empty() {
        return None;
    }
    let (block_top, options) = option_block(&rows, footer - 1)?;
    let question = question_above(&rows, block_top);
    let start = question.unwrap_or(block_top.saturating_sub(MAX_DIALOG_ROWS));
    Some(Dialog {
        // Never text the model wrote: the question, or a fixed name.
        title: question.map_or(UNKNOWN_TITLE.to_string(), |q| rows[q].trim().to_string()),
        lines: lines[start..=footer].to_vec(),
        options: options.iter().map(|(_, n, t)| format!("{n}. {t}")).collect(),
        cols,
    })
}

/// Whether row `i` is the input box: `›` at column 0, with only rows
/// indented by two (its continuation, the status rows) or blank below it.
fn is_input_box(rows: &[&str], i: usize) -> bool {
    (rows[i] == "›" || rows[i].starts_with("› ")) && rows[i + 1..].iter().all(|r| r.is_empty() || r.starts_with("  "))
}

/// DIALOG with the approval footer; BUSY while `esc to interrupt` shows;
/// IDLE with the input box at the bottom; otherwise (starting up, a screen
/// not known) BUSY.
pub fn status_of(lines: &[String]) -> Status {
    // First: a dialog's own text (a reason, a command) may say anything.
    if dialog_of(lines, 0).is_some() {
        return Status::Dialog;
    }
    if lines
        .iter()
        .any(|l| l.contains("esc to interrupt") || l.trim() == "Resuming session…")
    {
        return Status::Busy;
    }
    let rows: Vec<&str> = lines.iter().map(|l| l.trim_end()).collect();
    match rows.iter().rposition(|r| r.starts_with('›')) {
        Some(i) if is_input_box(&rows, i) => Status::Idle,
        _ => Status::Busy,
    }
}

/// The screen's status, held back by what Codex said of its state: a
/// screen that looks idle while Codex says it is `working` (or `blocked` on
/// something the screen does not show as a dialog) is BUSY.
pub fn with_signal(by_screen: Status, state: Option<&str>) -> Status {
    match (by_screen, state) {
        (Status::Idle, Some("working" | "blocked")) => Status::Busy,
        (s, _) => s,
    }
}

/// A command's line that looks like part of a dialog.
fn frame_shaped(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('›')
        || t.starts_with("$ ")
        || t.contains("Press enter to confirm")
        || t.starts_with("Would you like to")
        || option_start(&format!("  {t}")).is_some_and(|(_, _, rest)| rest.starts_with("Yes") || rest.starts_with("No"))
}

/// The dialog read for supervision. `record` is Codex's own record of the
/// call (the newest `exec_command` in its rollout), the source of the command
/// and its working directory; the screen must show that command.
pub fn read(dialog: &Dialog, cwd: &Path, record: Option<&ToolRequest>) -> supervision::Dialog {
    let rows: Vec<&str> = dialog.lines.iter().map(|l| l.trim_end()).collect();
    let mut out = supervision::Dialog {
        title: dialog.title.clone(),
        question: dialog.title.clone(),
        options: dialog
            .options
            .iter()
            .map(|o| o.split_once(". ").map_or(o.as_str(), |(_, t)| t).to_string())
            .collect(),
        body: rows.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n"),
        cwd: Some(cwd.display().to_string()),
        ..supervision::Dialog::default()
    };
    let doubt = |out: &mut supervision::Dialog, why: &str| {
        if out.doubt.is_none() {
            out.doubt = Some(why.to_string());
        }
    };
    let Some(footer) = last_row(&rows).filter(|f| rows[*f] == FOOTER) else {
        doubt(&mut out, "the last row is no footer of Codex's dialogs");
        return out;
    };
    // The footer says Esc cancels: that much is known whatever is above it.
    out.answers = Some(esc_only());
    let Some((block_top, options)) = footer.checked_sub(1).and_then(|b| option_block(&rows, b)) else {
        doubt(&mut out, "no option block above the footer");
        return out;
    };
    let numbered = options.iter().enumerate().all(|(i, o)| o.1 == i + 1);
    let one_cursor = options.iter().filter(|o| o.0).count() == 1;
    let last = options.len() - 1;
    let template = options.len() >= 2
        && options[0].2 == APPROVE_ONCE
        && options[last].2 == DENY
        && options[1..last]
            .iter()
            .all(|o| o.2.starts_with("Yes, ") && supervision::is_standing(&o.2));
    if !(numbered && one_cursor && template) {
        let why = format!("the options {:?} are not the template's", out.options);
        doubt(&mut out, &why);
        return out;
    }
    out.answers = Some(Answers {
        approve_once: Some(Answer {
            option: Some(0),
            keys: "y".into(),
        }),
        deny: Some(Answer {
            option: Some(last),
            keys: "\u{1b}".into(),
        }),
    });
    if rows.first().map(|r| r.trim()) != Some(EXEC_QUESTION) {
        let why = format!("no template for a dialog asking {:?}", out.question);
        doubt(&mut out, &why);
        return out;
    }
    // The body: `Environment:`, `Reason:` (which may wrap), then one `$ `
    // row and the rows that continue it, up to the options.
    let body = &rows[1..block_top];
    let dollar: Vec<usize> = (0..body.len()).filter(|i| body[*i].starts_with(COMMAND_ROW)).collect();
    let [at] = dollar[..] else {
        doubt(
            &mut out,
            &format!("{} command rows where the template has one", dollar.len()),
        );
        return out;
    };
    let mut shown: Vec<&str> = vec![&body[at][COMMAND_ROW.len()..]];
    shown.extend(body[at + 1..].iter().copied().filter(|r| !r.is_empty()));
    out.body = body[..at]
        .iter()
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let record = record.filter(|r| r.tool == "exec_command" && r.command.is_some());
    let command = match record {
        Some(r) => {
            let command = r.command.clone().unwrap_or_default();
            if !shows(&shown, &command) {
                doubt(&mut out, "the screen does not show the command Codex recorded");
            }
            if let Some(dir) = r.cwd.as_deref() {
                // A shell would expand `~`; the join would not.
                if dir.starts_with('~') || dir.contains('$') {
                    doubt(&mut out, "the call's working directory is not a plain path");
                }
                out.cwd = Some(cwd.join(dir).display().to_string());
            }
            command
        }
        None => {
            doubt(
                &mut out,
                "Codex's record of the call was not read (its command and working directory are known only from it)",
            );
            shown.iter().map(|r| r.trim()).collect::<Vec<_>>().join("\n")
        }
    };
    if command.lines().any(frame_shaped) {
        doubt(&mut out, "the command shows rows shaped like the dialog's own frame");
    }
    if command.trim().is_empty() {
        doubt(&mut out, "the command is empty");
    }
    out.command = Some(command);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    /// Seen on Codex 0.163.0 at 80 columns.
    const DIALOG: &str = "› run: echo hi > ran.txt


• Running echo hi > ran.txt


  Would you like to run the following command?

  Environment: local

  Reason: Run it?

  $ echo hi > ran.txt


› 1. Yes, proceed (y)
  2. Yes, and don't ask again for commands that start with `echo hi > ran.txt` (p)
  3. No, and tell Codex what to do differently (esc)

  Press enter to confirm or esc to cancel";

    fn record(command: &str, workdir: Option<&str>) -> ToolRequest {
        ToolRequest {
            event: "function_call".into(),
            tool: "exec_command".into(),
            command: Some(command.into()),
            description: None,
            file_path: None,
            cwd: workdir.map(str::to_string),
            at: std::time::Instant::now(),
        }
    }

    #[test]
    fn the_real_dialog_is_read_with_codexs_record() {
        let screen = lines(DIALOG);
        assert_eq!(status_of(&screen), Status::Dialog);
        let d = dialog_of(&screen, 80).expect("dialog");
        assert_eq!(d.title, EXEC_QUESTION);
        assert_eq!(d.options.len(), 3);
        let s = read(&d, Path::new("/w"), Some(&record("echo hi > ran.txt", None)));
        assert_eq!(s.doubt, None);
        assert_eq!(s.command.as_deref(), Some("echo hi > ran.txt"));
        assert_eq!(s.cwd.as_deref(), Some("/w"));
        let answers = s.answers.expect("answers");
        assert_eq!(answers.approve_once.map(|a| a.keys), Some("y".to_string()));
        assert_eq!(
            answers.deny.map(|a| (a.option, a.keys)),
            Some((Some(2), "\u{1b}".to_string()))
        );
        assert!(supervision::is_standing(&s.options[1]), "{:?}", s.options[1]);
    }

    #[test]
    fn what_the_record_says_wins_and_the_screen_must_agree() {
        let d = dialog_of(&lines(DIALOG), 80).expect("dialog");
        let elsewhere = read(&d, Path::new("/w"), Some(&record("echo hi > ran.txt", Some("/etc"))));
        assert_eq!(
            elsewhere.cwd.as_deref(),
            Some("/etc"),
            "the call's own working directory"
        );
        let relative = read(&d, Path::new("/w"), Some(&record("echo hi > ran.txt", Some("sub"))));
        assert_eq!(relative.cwd.as_deref(), Some("/w/sub"));
        let other = read(&d, Path::new("/w"), Some(&record("rm -rf /", None)));
        assert!(other.doubt.is_some());
        assert_eq!(
            other.command.as_deref(),
            Some("rm -rf /"),
            "the record is what would run"
        );
        let tilde = read(&d, Path::new("/w"), Some(&record("echo hi > ran.txt", Some("~/x"))));
        assert!(tilde.doubt.is_some(), "a shell would expand it");
        let none = read(&d, Path::new("/w"), None);
        assert!(
            none.doubt.as_deref().is_some_and(|w| w.contains("record")),
            "{:?}",
            none.doubt
        );
    }

    #[test]
    fn a_wrapped_command_is_read_through_the_record() {
        let screen = lines(
            "  Would you like to run the following command?\n\n  Reason: Run it?\n\n  $ printf 'a very long command line that will certainly wrap around the\n  screen edge %s\\n' one two > out.txt\n\n\n› 1. Yes, proceed (y)\n  2. Yes, and don't ask again for commands that start with `printf 'a very long\n     command line' (p)\n  3. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
        );
        let d = dialog_of(&screen, 80).expect("dialog");
        assert!(d.options[1].contains("command line"), "{:?}", d.options);
        let cmd =
            "printf 'a very long command line that will certainly wrap around the screen edge %s\\n' one two > out.txt";
        let s = read(&d, Path::new("/w"), Some(&record(cmd, None)));
        assert_eq!(s.doubt, None);
        assert_eq!(s.command.as_deref(), Some(cmd));
    }

    #[test]
    fn a_reason_that_draws_a_command_row_is_held() {
        let screen = lines(
            "  Would you like to run the following command?\n\n  Reason: fine\n\n  $ echo safe\n\n  $ rm -rf ~\n\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
        );
        let d = dialog_of(&screen, 80).expect("dialog");
        let s = read(&d, Path::new("/w"), Some(&record("rm -rf ~", None)));
        assert!(
            s.doubt.as_deref().is_some_and(|w| w.contains("command rows")),
            "{:?}",
            s.doubt
        );
    }

    #[test]
    fn other_options_or_questions_are_held_with_esc_to_deny() {
        let edits = lines(
            "  Would you like to make the following edits?\n\n  a.txt +1\n\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
        );
        let d = dialog_of(&edits, 80).expect("dialog");
        let s = read(&d, Path::new("/w"), None);
        assert!(s.doubt.is_some());
        let standing_first = lines(
            "  Would you like to run the following command?\n\n  $ ls\n\n› 1. Yes, and don't ask again (p)\n  2. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
        );
        let d = dialog_of(&standing_first, 80).expect("dialog");
        let s = read(&d, Path::new("/w"), Some(&record("ls", None)));
        assert!(s.doubt.is_some());
        let answers = s.answers.expect("esc");
        assert!(answers.approve_once.is_none());
        assert_eq!(answers.deny.map(|a| a.keys), Some("\u{1b}".to_string()));
    }

    #[test]
    fn codexs_signal_holds_idle_back_and_never_makes_it() {
        assert_eq!(with_signal(Status::Idle, Some("idle")), Status::Idle);
        assert_eq!(with_signal(Status::Idle, None), Status::Idle);
        assert_eq!(with_signal(Status::Idle, Some("working")), Status::Busy);
        assert_eq!(with_signal(Status::Idle, Some("blocked")), Status::Busy);
        assert_eq!(
            with_signal(Status::Busy, Some("idle")),
            Status::Busy,
            "the screen is the check"
        );
        assert_eq!(with_signal(Status::Dialog, Some("blocked")), Status::Dialog);
        assert_eq!(with_signal(Status::Dialog, Some("idle")), Status::Dialog);
    }

    #[test]
    fn idle_busy_and_history() {
        let idle = lines(
            "  >_ OpenAI Codex (v0.163.0)\n\n› hello there\n\n• You said: hello there\n\n› Ask Codex to do anything\n\n  gpt-fake default · /w\n  ? for shortcuts",
        );
        assert_eq!(status_of(&idle), Status::Idle);
        let reason_says_it = lines(
            "  Would you like to run the following command?\n\n  Reason: press esc to interrupt me\n\n  $ ls\n\n› 1. Yes, proceed (y)\n  2. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
        );
        assert_eq!(
            status_of(&reason_says_it),
            Status::Dialog,
            "the dialog wins over its own text"
        );
        let busy =
            lines("› slow one\n\n• Working (1s • esc to interrupt)\n\n› Ask Codex to do anything\n\n  ? for shortcuts");
        assert_eq!(status_of(&busy), Status::Busy);
        let resuming =
            lines("  >_ OpenAI Codex (v0.163.0)\n  Resuming session…\n› Ask Codex to do anything\n  ? for shortcuts");
        assert_eq!(
            status_of(&resuming),
            Status::Busy,
            "not ready before the session is loaded"
        );
        let starting = lines("  >_ OpenAI Codex (v0.163.0)\n\n› run: ls\n\n• Running ls");
        assert_eq!(status_of(&starting), Status::Busy, "a history row is no input box");
        assert_eq!(dialog_of(&idle, 80), None);
    }
}
