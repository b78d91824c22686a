//! Claude Code's dialog frames (the fake CLI draws the same layout), read from
//! their fixed places, never by the shape of a row alone. From the bottom: the
//! footer (the last row), a blank row, the option block (` ❯ 1. Yes`,
//! `   2. ...`, continuations indented six columns), the question and the rule
//! that closes the command or diff. From the top: the full-width `─` rule that
//! opens the dialog, the title, then the description and command (or the
//! path) up to the dashed rule that opens the command. The footer and the
//! option block decide the answers (which keys approve once, which deny); the
//! rest decides what the dialog asks, and anything this adapter cannot read
//! for sure (a row shaped like part of the frame inside the command, more
//! rules than the template has, a top scrolled off the screen, a wrap it cannot
//! undo, a screen that disagrees with Claude Code's hook) becomes the dialog's
//! `doubt`, which supervision holds for a human.

use std::path::Path;

use supervision::{Answer, Answers, PromptKind};

use super::Dialog;
use crate::harness::hooks::ToolRequest;

/// How a CLI draws the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// The fake CLI: dashed rules are indented one column like the rows
    /// between them; every row longer than the screen is cut at its width and
    /// continues at column 0 on the next row.
    Fake,
    /// Claude Code: dashed rules start at column 0; a command that wraps or
    /// has several lines is drawn behind a ` │ ` gutter; a long path is
    /// shortened with a leading `…`.
    Claude,
}

/// Footers and what they say about the dialog above them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Footer {
    /// A permission request (numbered options, Esc cancels).
    Permission,
    /// A question or a menu: never answered by supervision; Esc dismisses it.
    Choice,
}

fn footer_of(row: &str, layout: Layout) -> Option<Footer> {
    match (layout, row) {
        (_, " Esc to cancel · Tab to amend") | (Layout::Fake, " Esc to cancel") => Some(Footer::Permission),
        (Layout::Claude, "Enter to select · ↑/↓ to navigate · Esc to cancel")
        | (Layout::Fake, " Enter to select · ↑/↓ to navigate · Esc to cancel")
        | (Layout::Fake, " Enter to confirm · Esc to cancel") => Some(Footer::Choice),
        _ => None,
    }
}

/// The titles of the permission dialogs this adapter has templates for.
const BASH_TITLE: &str = "Bash command";
const FILE_TITLES: &[&str] = &["Edit file", "Create file", "Write file", "Write"];
/// The question of a Bash dialog.
const BASH_QUESTION: &str = "Do you want to proceed?";
/// The fake CLI's fixed description of every command it asks to run.
const FAKE_DESCRIPTION: &str = "Run a command requested by the fake model";
/// Escape: cancels any of these dialogs.
const ESC: &str = "\u{1b}";
/// Where an option's continuation rows start.
const CONTINUATION: &str = "      ";
/// Claude Code's gutter before each row of a wrapped or multi-line command.
const GUTTER: &str = " │";

/// Why a dialog's content was not read for sure.
const SHAPED: &str = "the command shows rows shaped like the dialog's own frame";

/// One option of the block: its number, text (continuations joined) and
/// whether the cursor is on it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct OptionRow {
    number: usize,
    text: String,
    selected: bool,
}

/// `(selected, number, text)` for the first row of an option: exactly three
/// columns (` ❯ ` or three spaces), a number, `. `, the text.
fn option_start(row: &str) -> Option<(bool, usize, &str)> {
    let (selected, rest) = match row.strip_prefix(" ❯ ") {
        Some(rest) => (true, rest),
        None => (false, row.strip_prefix("   ")?),
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let text = rest[digits..].strip_prefix(". ")?;
    Some((selected, rest[..digits].parse().ok()?, text))
}

fn is_continuation(row: &str) -> bool {
    row.starts_with(CONTINUATION) && !row.trim().is_empty()
}

/// The rows of the screen, trimmed at the end.
fn trimmed(lines: &[String]) -> Vec<&str> {
    lines.iter().map(|l| l.trim_end()).collect()
}

/// A full-width rule of `─` at column 0 (the top of a dialog).
fn is_top_rule(row: &str, cols: usize) -> bool {
    row.chars().count() == cols && row.chars().all(|c| c == '─')
}

/// The dashed rule around a command or diff, exactly where this layout draws it.
fn is_dash_rule(row: &str, cols: usize, layout: Layout) -> bool {
    let (body, width) = match layout {
        Layout::Fake => match row.strip_prefix(' ') {
            Some(rest) => (rest, cols.saturating_sub(2)),
            None => return false,
        },
        Layout::Claude => (row, cols),
    };
    width > 0 && body.chars().count() == width && body.chars().all(|c| c == '╌')
}

/// Text shaped like a rule of any width or indentation.
fn rule_shaped(text: &str) -> bool {
    let t = text.trim();
    t.chars().count() >= 3 && (t.chars().all(|c| c == '╌') || t.chars().all(|c| c == '─'))
}

/// A line of a command that looks like part of a dialog: a rule, an option
/// row (with a cursor, or naming an answer), a question, a footer or a title.
fn frame_shaped(line: &str) -> bool {
    let t = line.trim();
    let numbered_answer = {
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        digits > 0
            && t[digits..]
                .strip_prefix(". ")
                .is_some_and(|rest| rest.starts_with("Yes") || rest.starts_with("No"))
    };
    rule_shaped(t)
        || t.starts_with('❯')
        || numbered_answer
        || t.starts_with("Do you want to")
        || t.contains("Esc to cancel")
        || t == BASH_TITLE
        || FILE_TITLES.contains(&t)
}

/// The index of the last row that is not blank.
fn last_row(rows: &[&str]) -> Option<usize> {
    rows.iter().rposition(|r| !r.trim().is_empty())
}

/// Where the dialog starts. The fake CLI: the topmost full-width `─` rule
/// (a command can draw one lower down by filling a row; a forged one above
/// the real one makes the dialog ambiguous, which the reader sees). Claude
/// Code, whose dialog content is indented and cannot draw a rule at column 0:
/// the last such rule above its first dashed rule, so a rule further up in
/// the history is no part of the dialog.
fn dialog_top(lines: &[String], cols: u16, layout: Layout) -> Option<usize> {
    let cols = usize::from(cols);
    let rows = trimmed(lines);
    let first_dash = match layout {
        Layout::Fake => None,
        Layout::Claude => rows.iter().position(|r| is_dash_rule(r, cols, layout)),
    };
    match first_dash {
        Some(dash) => rows[..dash].iter().rposition(|r| is_top_rule(r, cols)),
        None => rows.iter().position(|r| is_top_rule(r, cols)),
    }
}

/// The dialog's rows as the screen shows them: from its top rule (or the
/// screen's top, when that is scrolled off) to its last row. Rows keep the
/// spaces the CLI wrote at their end: a row cut at the screen's width is full
/// even when it ends in spaces.
pub fn region(lines: &[String], cols: u16, layout: Layout) -> Vec<String> {
    let rows = trimmed(lines);
    let end = last_row(&rows).map_or(0, |i| i + 1);
    let start = dialog_top(lines, cols, layout).filter(|s| *s < end).unwrap_or(0);
    lines[start..end].to_vec()
}

/// The option block right above `blank` (the blank row over the footer):
/// its first row and its options, numbered 1..N with one cursor, or why not.
fn option_block(rows: &[&str], blank: usize) -> Result<(usize, Vec<OptionRow>), String> {
    let mut top = blank;
    while top > 0 && (option_start(rows[top - 1]).is_some() || is_continuation(rows[top - 1])) {
        top -= 1;
    }
    let mut options: Vec<OptionRow> = vec![];
    for row in &rows[top..blank] {
        match option_start(row) {
            Some((selected, number, text)) => options.push(OptionRow {
                number,
                text: text.trim().to_string(),
                selected,
            }),
            None => match options.last_mut() {
                Some(last) => {
                    last.text.push(' ');
                    last.text.push_str(row.trim());
                }
                None => return Err("the option block starts with a continuation row".into()),
            },
        }
    }
    if options.len() < 2 || options.len() > 9 {
        return Err(format!("{} options where the template has 2 to 9", options.len()));
    }
    if options.iter().enumerate().any(|(i, o)| o.number != i + 1) {
        return Err("the options are not numbered 1 to N".into());
    }
    if options.iter().filter(|o| o.selected).count() != 1 {
        return Err("not exactly one option has the cursor".into());
    }
    Ok((top, options))
}

/// The answers of a permission dialog's option block: `1. Yes` approves once,
/// the last option (`No`, or `No, ...`) denies, everything between is a
/// standing permission starting `Yes, `. A dialog whose only yes is a
/// standing one has no approve-once answer. `None`: not this template.
fn permission_answers(options: &[OptionRow]) -> Option<Answers> {
    let last = options.len().checked_sub(1)?;
    let standing = |o: &OptionRow| o.text.starts_with("Yes, ") && supervision::is_standing(&o.text);
    let deny = &options[last];
    if !(deny.text == "No" || deny.text.starts_with("No, ")) {
        return None;
    }
    let approve = match options.first() {
        Some(o) if o.text == "Yes" => Some(Answer {
            option: Some(0),
            keys: "1".into(),
        }),
        Some(o) if standing(o) => None,
        _ => return None,
    };
    if !options[1..last].iter().all(standing) {
        return None;
    }
    Some(Answers {
        approve_once: approve,
        deny: Some(Answer {
            option: Some(last),
            keys: (last + 1).to_string(),
        }),
    })
}

/// Only Escape, which the footer says cancels: a human's deny of a dialog
/// whose options are not the template's (or a question's dismissal).
pub(super) fn esc_only() -> Answers {
    Answers {
        approve_once: None,
        deny: Some(Answer {
            option: None,
            keys: ESC.into(),
        }),
    }
}

/// Characters known to take one column: ASCII, Latin-1 and Latin Extended,
/// general punctuation (without the zero-width ones), arrows, box drawing,
/// block elements, geometric shapes and the dingbats the CLIs draw.
fn narrow(c: char) -> bool {
    matches!(u32::from(c),
        0x20..=0x7e | 0xa0..=0x24f | 0x2010..=0x2027 | 0x2030..=0x205e | 0x2190..=0x21ff
        | 0x2500..=0x25ff | 0x2700..=0x27bf)
}

/// What a row of the fake CLI's screen spans, if known: its width when every
/// character is known to take one column (a wide, zero-width or unknown
/// character makes it unknown).
fn known_width(row: &str) -> Option<usize> {
    row.chars().all(narrow).then(|| row.chars().count())
}

/// Undoes the fake CLI's hard wrap: each text line is drawn as ` LINE`, cut
/// every `cols` columns, the pieces after the first at column 0. A row
/// continues the one above only if that one is full; a new line starts with
/// its one-column indent. Anything else (a full row followed by a row that
/// starts with a space, a wide character in a full-looking row) cannot be
/// undone for sure.
fn unwrap_fake(rows: &[&str], cols: usize) -> Result<Vec<String>, String> {
    let mut lines: Vec<String> = vec![];
    let mut full_above = false;
    for row in rows {
        let starts_line = row.is_empty() || row.starts_with(' ');
        match (full_above, starts_line, lines.last_mut()) {
            (true, false, Some(last)) => last.push_str(row),
            (true, true, Some(_)) => {
                return Err("a full row is followed by one that may continue it or start a new line".into());
            }
            (false, true, _) | (true, true, None) => lines.push(row.strip_prefix(' ').unwrap_or(row).to_string()),
            (_, false, _) => return Err("a row continues nothing".into()),
        }
        full_above = match known_width(row) {
            Some(w) => w >= cols,
            None if row.chars().count() * 2 >= cols => {
                return Err("a row with wide characters may or may not continue".into());
            }
            None => false,
        };
    }
    Ok(lines)
}

/// Whether `rows` (indentation and gutter stripped) show `text`: each row's
/// text appears in `text` in order, exactly, with only whitespace before it
/// and between rows (a wrap may fall anywhere; a newline is whitespace). A
/// row ending in `…` shows the start of what remains (Claude Code shortens a
/// long description).
pub(super) fn shows(rows: &[&str], text: &str) -> bool {
    let mut rest = text;
    for row in rows {
        let row = row.trim();
        if row.is_empty() {
            continue;
        }
        rest = rest.trim_start();
        if let Some(cut) = row.strip_suffix('…') {
            return rest.starts_with(cut);
        }
        match rest.strip_prefix(row) {
            Some(after) => rest = after,
            None => return false,
        }
    }
    rest.trim().is_empty()
}

/// The last component of a path.
fn file_name(path: &str) -> &str {
    path.trim_end_matches('/').rsplit('/').next().unwrap_or(path)
}

/// What the dialog's top says, read from the top rule down to the opening
/// dashed rule. Rows are trimmed at the end; `raw_*` keep what the CLI wrote
/// (for the fake CLI's wrap, where a full row may end in spaces).
struct Top<'a> {
    title: &'a str,
    /// Rows between the title and the opening rule (description, or path).
    header: Vec<&'a str>,
    raw_header: Vec<&'a str>,
    /// Rows between the two dashed rules (command, or diff).
    framed: Vec<&'a str>,
    raw_framed: Vec<&'a str>,
}

/// Reads a permission dialog from its top down to the closing rule: the top
/// rule (the dialog's first row: the topmost one on screen), the title under
/// it, the rows down to the first dashed rule, and everything from there to
/// the closing rule (a rule a command draws stays inside the command).
fn read_top<'a>(
    rows: &[&'a str],
    raw: &[&'a str],
    closing: usize,
    cols: usize,
    layout: Layout,
) -> Result<Top<'a>, String> {
    if !rows.first().is_some_and(|r| is_top_rule(r, cols)) {
        return Err("the top of the dialog is not on screen".into());
    }
    let opening = (2..closing)
        .find(|i| is_dash_rule(rows[*i], cols, layout))
        .ok_or("no rule opens the command under the title")?;
    Ok(Top {
        title: rows[1].trim(),
        header: rows[2..opening].to_vec(),
        raw_header: raw[2..opening].to_vec(),
        framed: rows[opening + 1..closing].to_vec(),
        raw_framed: raw[opening + 1..closing].to_vec(),
    })
}

/// Counts the rows of the dialog shaped like each part of the frame; more
/// than the template has means a command drew some of them.
fn count_shapes(rows: &[&str], cols: usize, layout: Layout) -> Result<(), String> {
    let count = |f: &dyn Fn(&str) -> bool| rows.iter().filter(|r| f(r)).count();
    let top_rules = count(&|r| is_top_rule(r, cols) || (layout == Layout::Fake && rule_shaped(r) && r.contains('─')));
    let dash_rules = match layout {
        Layout::Fake => count(&|r| rule_shaped(r) && r.contains('╌')),
        Layout::Claude => count(&|r| is_dash_rule(r, cols, layout)),
    };
    if top_rules != 1 || dash_rules != 2 {
        return Err(format!(
            "{top_rules} top rules and {dash_rules} dashed rules where the template has 1 and 2"
        ));
    }
    if layout == Layout::Fake {
        let titles = count(&|r| {
            let t = r.trim();
            t == BASH_TITLE || FILE_TITLES.contains(&t)
        });
        let questions = count(&|r| r.trim_start().starts_with("Do you want to"));
        let footers = count(&|r| r.contains("Esc to cancel"));
        let cursors = count(&|r| r.trim_start().starts_with('❯'));
        if (titles, questions, footers, cursors) != (1, 1, 1, 1) {
            return Err(format!(
                "{titles} titles, {questions} questions, {footers} footers and {cursors} cursors where the template has one each"
            ));
        }
    }
    Ok(())
}

/// The dialog read for supervision. `hook` is Claude Code's fresh report of
/// the tool call (PreToolUse / PermissionRequest), the source of the command
/// or path when there is one; the screen must agree with it.
pub fn read(dialog: &Dialog, layout: Layout, cwd: &Path, hook: Option<&ToolRequest>) -> supervision::Dialog {
    let raw: Vec<&str> = dialog.lines.iter().map(String::as_str).collect();
    let rows: Vec<&str> = raw.iter().map(|l| l.trim_end()).collect();
    let cols = usize::from(dialog.cols);
    let mut out = supervision::Dialog {
        title: dialog.title.trim().to_string(),
        options: dialog
            .options
            .iter()
            .map(|o| o.split_once(". ").map_or(o.as_str(), |(_, t)| t).to_string())
            .collect(),
        body: dialog.lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join("\n"),
        cwd: Some(cwd.display().to_string()),
        ..supervision::Dialog::default()
    };
    let Some(footer_at) = last_row(&rows) else {
        out.doubt = Some("no dialog on screen".into());
        return out;
    };
    match footer_of(rows[footer_at], layout) {
        None => {
            out.doubt = Some("the last row is no footer of this CLI's dialogs".into());
        }
        Some(Footer::Choice) => {
            // A question or a menu: for a human; Esc dismisses it.
            out.answers = Some(esc_only());
            out.prompt_hint = Some(PromptKind::Decision);
        }
        Some(Footer::Permission) => read_permission(&rows, &raw, footer_at, cols, layout, hook, &mut out),
    }
    out
}

/// A permission dialog: answers from the footer and the option block, the
/// rest into the dialog's fields, doubts into `doubt`.
fn read_permission(
    rows: &[&str],
    raw: &[&str],
    footer_at: usize,
    cols: usize,
    layout: Layout,
    hook: Option<&ToolRequest>,
    out: &mut supervision::Dialog,
) {
    // The footer says Esc cancels: that much is known whatever is above it.
    out.answers = Some(esc_only());
    let doubt = |out: &mut supervision::Dialog, why: String| {
        if out.doubt.is_none() {
            out.doubt = Some(why);
        }
    };
    let blank = match footer_at.checked_sub(1) {
        Some(b) if rows[b].trim().is_empty() => b,
        _ => return doubt(out, "no blank row above the footer".into()),
    };
    let (block_top, options) = match option_block(rows, blank) {
        Ok(found) => found,
        Err(why) => return doubt(out, why),
    };
    out.options = options.iter().map(|o| o.text.clone()).collect();
    match permission_answers(&options) {
        Some(answers) => out.answers = Some(answers),
        None => {
            return doubt(out, format!("the options {:?} are not the template's", out.options));
        }
    }
    // The question and the rule that closes the command, right above the options.
    let Some(question_at) = block_top.checked_sub(1) else {
        return doubt(out, "no question above the options".into());
    };
    let (question, closing) = match layout {
        Layout::Fake => {
            // A long question is cut at the width and continues below.
            let Some(closing) = (0..block_top)
                .rev()
                .take(4)
                .find(|i| is_dash_rule(rows[*i], cols, layout))
            else {
                return doubt(out, "no closing rule above the question".into());
            };
            match unwrap_fake(&raw[closing + 1..block_top], cols) {
                Ok(lines) if lines.len() == 1 => (lines[0].clone(), closing),
                _ => return doubt(out, "the question is not one line".into()),
            }
        }
        Layout::Claude => {
            // A reason may stand between the closing rule and the question.
            let Some(closing) = (0..question_at)
                .rev()
                .take(8)
                .find(|i| is_dash_rule(rows[*i], cols, layout))
            else {
                return doubt(out, "no closing rule above the question".into());
            };
            if rows[closing + 1..question_at]
                .iter()
                .any(|r| !r.is_empty() && !r.starts_with(' '))
            {
                return doubt(
                    out,
                    "a row between the closing rule and the question is not indented".into(),
                );
            }
            (rows[question_at].trim().to_string(), closing)
        }
    };
    out.question = question.clone();
    let top = match read_top(rows, raw, closing, cols, layout) {
        Ok(top) => top,
        Err(why) => return doubt(out, why),
    };
    // Too many parts of the frame: doubtful, but the command is still read
    // (whole, from the first rule under the title) for the human.
    if let Err(why) = count_shapes(rows, cols, layout) {
        doubt(out, why);
    }
    out.title = top.title.to_string();
    if top.title == BASH_TITLE {
        read_bash(&top, &question, cols, layout, hook, out);
    } else if FILE_TITLES.contains(&top.title) {
        read_file(&top, &question, cols, layout, hook, out);
    } else {
        doubt(out, format!("no template for a dialog titled {:?}", top.title));
    }
}

/// A Bash dialog: the description above the opening rule, the command
/// between the rules.
fn read_bash(
    top: &Top<'_>,
    question: &str,
    cols: usize,
    layout: Layout,
    hook: Option<&ToolRequest>,
    out: &mut supervision::Dialog,
) {
    let hook = hook.filter(|h| h.tool == "Bash" && h.command.is_some());
    let set_doubt = |out: &mut supervision::Dialog, why: &str| {
        if out.doubt.is_none() {
            out.doubt = Some(why.to_string());
        }
    };
    if question != BASH_QUESTION {
        set_doubt(out, "the question is not the Bash dialog's");
    }
    // Claude Code may put a tip above the description.
    let description: Vec<&str> = top
        .header
        .iter()
        .copied()
        .skip_while(|r| layout == Layout::Claude && r.starts_with(" Tip: "))
        .collect();
    out.body = description.iter().map(|r| r.trim()).collect::<Vec<_>>().join("\n");
    let described = match (layout, hook) {
        (Layout::Fake, _) => description == [format!(" {FAKE_DESCRIPTION}").as_str()],
        (Layout::Claude, Some(h)) => h.description.as_deref().is_none_or(|d| shows(&description, d)),
        (Layout::Claude, None) => true,
    };
    if !described {
        set_doubt(out, "the description is not the one the template or the hook gives");
    }
    let shown: Result<String, String> = match layout {
        Layout::Fake => unwrap_fake(&top.raw_framed, cols).map(|lines| lines.join("\n")),
        Layout::Claude => match top.framed.as_slice() {
            [one] if one.ends_with('…') => Err("the command is shortened on screen".into()),
            [one] if !one.starts_with(GUTTER) && one.starts_with(' ') => Ok(one[1..].to_string()),
            rows if rows.iter().all(|r| r.starts_with(GUTTER)) && !rows.is_empty() => {
                Err("a wrapped or multi-line command is read from Claude Code's hook".into())
            }
            _ => Err("the command rows are not drawn as the template draws them".into()),
        },
    };
    let command = match (hook, shown) {
        (Some(h), _) => {
            let command = h.command.clone().unwrap_or_default();
            let rows: Vec<&str> = top.framed.iter().map(|r| r.strip_prefix(GUTTER).unwrap_or(r)).collect();
            if !shows(&rows, &command) {
                set_doubt(out, "the screen does not show the command Claude Code's hook reported");
            }
            command
        }
        (None, Ok(command)) => command,
        (None, Err(why)) => {
            // For the human: the rows as drawn, less their indentation.
            set_doubt(out, &why);
            top.framed
                .iter()
                .map(|r| r.strip_prefix(GUTTER).unwrap_or(r))
                .map(|r| r.strip_prefix(' ').unwrap_or(r))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    if command.lines().any(frame_shaped) {
        set_doubt(out, SHAPED);
    }
    if command.trim().is_empty() {
        set_doubt(out, "the command is empty");
    }
    if let Some(cwd) = hook.and_then(|h| h.cwd.clone()) {
        out.cwd = Some(cwd);
    }
    out.command = Some(command);
}

/// An edit, create or write dialog: the path above the opening rule, the
/// content between the rules.
fn read_file(
    top: &Top<'_>,
    question: &str,
    cols: usize,
    layout: Layout,
    hook: Option<&ToolRequest>,
    out: &mut supervision::Dialog,
) {
    const FILE_TOOLS: &[&str] = &["Edit", "MultiEdit", "Write", "NotebookEdit"];
    let hook = hook.filter(|h| FILE_TOOLS.contains(&h.tool.as_str()) && h.file_path.is_some());
    let set_doubt = |out: &mut supervision::Dialog, why: &str| {
        if out.doubt.is_none() {
            out.doubt = Some(why.to_string());
        }
    };
    out.content = top.framed.iter().map(|r| r.trim()).collect::<Vec<_>>().join("\n");
    let shown: Result<String, String> = match layout {
        Layout::Fake => match unwrap_fake(&top.raw_header, cols) {
            Ok(lines) if lines.len() == 1 => Ok(lines[0].clone()),
            Ok(_) => Err("the path is not one line".into()),
            Err(why) => Err(why),
        },
        Layout::Claude => match top.header.as_slice() {
            [one] if one.starts_with(' ') => Ok(one[1..].to_string()),
            _ => Err("the path is not one row".into()),
        },
    };
    let path = match (hook, shown) {
        (Some(h), shown) => {
            let path = h.file_path.clone().unwrap_or_default();
            let base = h.cwd.as_deref().or(out.cwd.as_deref()).unwrap_or_default();
            let relative = Path::new(&path)
                .strip_prefix(base)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| path.clone());
            let agrees = shown.is_ok_and(|s| match s.strip_prefix('…') {
                Some(tail) => !tail.is_empty() && (path.ends_with(tail) || relative.ends_with(tail)),
                None => s == path || s == relative,
            });
            if !agrees {
                set_doubt(out, "the screen does not show the path Claude Code's hook reported");
            }
            path
        }
        (None, Ok(shown)) if shown.starts_with('…') => {
            set_doubt(out, "the path is shortened on screen and no hook gave it whole");
            shown
        }
        (None, Ok(shown)) => shown,
        (None, Err(why)) => {
            set_doubt(out, &why);
            top.header.iter().map(|r| r.trim()).collect::<Vec<_>>().join("")
        }
    };
    let name = file_name(&path);
    let asks = question.starts_with("Do you want to ") && question.ends_with(&format!(" {name}?"));
    if !asks || name.is_empty() {
        set_doubt(out, "the question does not name the file");
    }
    out.body = path.clone();
    out.paths = vec![path];
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
