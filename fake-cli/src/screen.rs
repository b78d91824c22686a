//! Screen layout: turns the CLI state into the full-screen frame (history, prompt or dialog footer).

use crate::dialog::Dialog;
use crate::session::{Entry, Kind};

/// Spinner frames shown while busy.
pub(crate) const SPINNER: [char; 4] = ['✻', '✽', '✢', '·'];

/// The busy indicator's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BusyView {
    /// Index into [`SPINNER`] (taken modulo its length).
    pub(crate) frame: usize,
    /// Whole seconds since the turn started.
    pub(crate) secs: u64,
}

/// Everything the screen shows.
pub(crate) struct View<'a> {
    pub(crate) session_id: &'a str,
    pub(crate) cwd: &'a str,
    pub(crate) history: &'a [Entry],
    pub(crate) input: &'a str,
    pub(crate) busy: Option<BusyView>,
    pub(crate) dialog: Option<&'a Dialog>,
}

/// A laid-out screen: at most `height` lines, each at most `width` columns, and the cursor (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) lines: Vec<String>,
    pub(crate) cursor_row: usize,
    pub(crate) cursor_col: usize,
}

/// Lays out the whole screen for a terminal of `width` x `height`.
pub(crate) fn layout(view: &View<'_>, width: usize, height: usize) -> Frame {
    let width = width.max(8);
    let height = height.max(1);
    let history = wrap_all(&history_lines(view), width);
    let (footer, cursor_row, cursor_col) = match view.dialog {
        Some(dialog) => dialog_footer(dialog, width),
        None => prompt_footer(view, width),
    };
    let room = height.saturating_sub(footer.len());
    let skip = history.len().saturating_sub(room);
    let footer_top = history.len() - skip;
    let mut lines: Vec<String> = history.into_iter().skip(skip).collect();
    lines.extend(footer);
    let overflow = lines.len().saturating_sub(height);
    lines.drain(..overflow);
    let cursor_row = (footer_top + cursor_row)
        .saturating_sub(overflow)
        .min(lines.len().saturating_sub(1));
    Frame {
        lines,
        cursor_row,
        cursor_col: cursor_col.min(width - 1),
    }
}

/// The banner's first line, which the CLI draws in colour (as real CLIs
/// colour theirs): the star red, the words bold.
const BANNER: &str = "✻ Welcome to Fake Code!";

/// The bytes for a full redraw of `frame`.
pub(crate) fn encode(frame: &Frame) -> String {
    let lines: Vec<String> = frame
        .lines
        .iter()
        .map(|l| match l.strip_prefix(BANNER) {
            Some(rest) => format!("\x1b[31m✻\x1b[0m \x1b[1mWelcome to Fake Code!\x1b[0m{rest}"),
            None => l.clone(),
        })
        .collect();
    format!(
        "\x1b[H\x1b[2J{}\x1b[{};{}H",
        lines.join("\r\n"),
        frame.cursor_row + 1,
        frame.cursor_col + 1
    )
}

/// Banner plus every entry, each followed by a blank line (not wrapped).
fn history_lines(view: &View<'_>) -> Vec<String> {
    let mut lines = vec![
        BANNER.to_string(),
        format!("  session: {}", view.session_id),
        format!("  cwd: {}", view.cwd),
        String::new(),
    ];
    for entry in view.history {
        lines.extend(entry_lines(entry));
        lines.push(String::new());
    }
    lines
}

/// One entry with its kind's marker on the first line and indentation on the rest.
pub(crate) fn entry_lines(entry: &Entry) -> Vec<String> {
    let (first, rest) = match entry.kind {
        Kind::User => ("> ", "  "),
        Kind::Assistant => ("● ", "  "),
        Kind::Tool => ("  ⎿  ", "     "),
        Kind::System => ("  ✻ ", "    "),
    };
    prefixed(&entry.text, first, rest)
}

fn prefixed(text: &str, first: &str, rest: &str) -> Vec<String> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| {
            let prefix = if i == 0 { first } else { rest };
            format!("{prefix}{}", sanitize(line))
        })
        .collect()
}

/// Footer with the prompt box; returns lines (wrapped) and the cursor position within them.
fn prompt_footer(view: &View<'_>, width: usize) -> (Vec<String>, usize, usize) {
    let rule = "─".repeat(width);
    let mut lines = match view.busy {
        Some(busy) => {
            let spinner = SPINNER[busy.frame % SPINNER.len()];
            let line = format!("{spinner} Thinking… ({}s · esc to interrupt)", busy.secs);
            wrap(&line, width)
        }
        None => Vec::new(),
    };
    lines.push(rule.clone());
    lines.extend(wrap_all(&prefixed(view.input, "❯ ", "  "), width));
    let cursor_row = lines.len() - 1;
    let cursor_col = lines.last().map_or(0, |l| text_width(l));
    lines.push(rule);
    lines.extend(wrap("  ? for shortcuts", width));
    (lines, cursor_row, cursor_col)
}

/// Footer replaced by a dialog; the cursor sits on the selected option's marker.
fn dialog_footer(dialog: &Dialog, width: usize) -> (Vec<String>, usize, usize) {
    let (raw, selected) = dialog.lines(width);
    let mut lines = Vec::new();
    let mut cursor_row = 0;
    for (i, line) in raw.iter().enumerate() {
        if i == selected {
            cursor_row = lines.len();
        }
        lines.extend(wrap_option(&sanitize(line), width));
    }
    (lines, cursor_row, 1)
}

/// Wraps a dialog line; an option row (` ❯ 1. Yes` / `   2. No`) continues on
/// lines indented under its text, as Claude Code draws it.
fn wrap_option(line: &str, width: usize) -> Vec<String> {
    const INDENT: &str = "      ";
    let trimmed = line.trim_start().trim_start_matches('❯').trim_start();
    let is_option = trimmed
        .split_once(". ")
        .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    let mut out = wrap(line, width);
    if is_option && width > INDENT.len() + 10 && out.len() > 1 {
        let rest: String = out.split_off(1).concat();
        out.extend(
            wrap(&rest, width - INDENT.len())
                .into_iter()
                .map(|l| format!("{INDENT}{l}")),
        );
    }
    out
}

fn wrap_all(lines: &[String], width: usize) -> Vec<String> {
    lines.iter().flat_map(|l| wrap(l, width)).collect()
}

/// Hard-wraps one line into pieces of at most `width` columns.
pub(crate) fn wrap(line: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut used = 0;
    for c in line.chars() {
        let w = char_width(c);
        if used + w > width && !current.is_empty() {
            out.push(std::mem::take(&mut current));
            used = 0;
        }
        current.push(c);
        used += w;
    }
    out.push(current);
    out
}

/// Drops control characters (they would break the layout); a tab becomes four spaces.
pub(crate) fn sanitize(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        if c == '\t' {
            out.push_str("    ");
        } else if !c.is_control() {
            out.push(c);
        }
    }
    out
}

fn text_width(s: &str) -> usize {
    s.chars().map(char_width).sum()
}

/// Terminal columns a character takes: 2 for common wide (CJK, emoji) ranges,
/// 0 for combining marks and zero-width characters, else 1.
pub(crate) fn char_width(c: char) -> usize {
    match u32::from(c) {
        0x0300..=0x036f | 0x200b..=0x200f | 0xfe00..=0xfe0f => 0,
        0x1100..=0x115f
        | 0x2e80..=0x303e
        | 0x3041..=0x33ff
        | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff
        | 0xa000..=0xa4cf
        | 0xac00..=0xd7a3
        | 0xf900..=0xfaff
        | 0xfe30..=0xfe4f
        | 0xff00..=0xff60
        | 0xffe0..=0xffe6
        | 0x1f300..=0x1f64f
        | 0x1f900..=0x1f9ff
        | 0x20000..=0x3fffd => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialog::DialogKind;

    fn view<'a>(history: &'a [Entry], input: &'a str) -> View<'a> {
        View {
            session_id: "abc",
            cwd: "/w",
            history,
            input,
            busy: None,
            dialog: None,
        }
    }

    #[test]
    fn idle_screen() {
        let history = vec![
            Entry::new(Kind::User, "hi\nthere"),
            Entry::new(Kind::Assistant, "echo: hi\nthere"),
            Entry::new(Kind::Tool, "$ ls\na\nb"),
            Entry::new(Kind::System, "resumed"),
        ];
        let frame = layout(&view(&history, "draft"), 10, 40);
        assert_eq!(
            frame.lines,
            vec![
                "✻ Welcome ",
                "to Fake Co",
                "de!",
                "  session:",
                " abc",
                "  cwd: /w",
                "",
                "> hi",
                "  there",
                "",
                "● echo: hi",
                "  there",
                "",
                "  ⎿  $ ls",
                "     a",
                "     b",
                "",
                "  ✻ resume",
                "d",
                "",
                "──────────",
                "❯ draft",
                "──────────",
                "  ? for sh",
                "ortcuts",
            ]
        );
        assert_eq!((frame.cursor_row, frame.cursor_col), (21, 7));
    }

    #[test]
    fn keeps_last_history_lines_and_whole_footer() {
        let history: Vec<Entry> = (0..30)
            .map(|i| Entry::new(Kind::Assistant, format!("line {i}")))
            .collect();
        let frame = layout(&view(&history, "a\nb"), 40, 10);
        assert_eq!(frame.lines.len(), 10);
        assert_eq!(
            frame.lines[4..],
            [
                "",
                "─".repeat(40).as_str(),
                "❯ a",
                "  b",
                "─".repeat(40).as_str(),
                "  ? for shortcuts",
            ]
        );
        assert_eq!(frame.lines[3], "● line 29");
        assert_eq!((frame.cursor_row, frame.cursor_col), (7, 3));
    }

    #[test]
    fn busy_line_sits_above_the_prompt() {
        let mut v = view(&[], "");
        v.busy = Some(BusyView { frame: 5, secs: 3 });
        let frame = layout(&v, 60, 24);
        let text = frame.lines.join("\n");
        assert!(text.contains("✽ Thinking… (3s · esc to interrupt)\n────"), "{text}");
        assert!(frame.lines.iter().any(|l| l == "❯ "));
        let idle = layout(&view(&[], ""), 60, 24).lines.join("\n");
        assert!(!idle.contains("esc to interrupt"));
    }

    #[test]
    fn wrapped_options_hang_under_their_text() {
        let lines = wrap_option(
            "   2. Yes, and always allow access to /a/long/path from this project",
            40,
        );
        assert_eq!(lines[0], "   2. Yes, and always allow access to /a");
        assert!(lines[1..].iter().all(|l| l.starts_with("      ")), "{lines:?}");
        assert_eq!(
            wrap_option(" Do you want to proceed? It is a long question", 20),
            wrap(" Do you want to proceed? It is a long question", 20)
        );
    }

    #[test]
    fn dialog_replaces_the_prompt() {
        let dialog = Dialog::new(DialogKind::Limit);
        let mut v = view(&[], "typed");
        v.dialog = Some(&dialog);
        let frame = layout(&v, 30, 24);
        assert!(!frame.lines.iter().any(|l| l.starts_with('❯')));
        assert!(!frame.lines.iter().any(|l| l.contains("? for shortcuts")));
        let selected = frame.lines.iter().position(|l| l.starts_with(" ❯ 1.")).unwrap();
        assert_eq!(frame.cursor_row, selected);
        assert_eq!(frame.lines[4], "─".repeat(30));
        // The long title wraps to the width.
        assert_eq!(frame.lines[5], " You've hit your usage limit ·");
    }

    #[test]
    fn tiny_screen_keeps_the_bottom() {
        let frame = layout(&view(&[], "x"), 20, 2);
        assert_eq!(frame.lines, vec!["─".repeat(20), "  ? for shortcuts".to_string()]);
        assert_eq!(frame.cursor_row, 0);
    }

    #[test]
    fn wrapping_and_widths() {
        assert_eq!(wrap("", 5), vec![""]);
        assert_eq!(wrap("abcde", 5), vec!["abcde"]);
        assert_eq!(wrap("abcdef", 5), vec!["abcde", "f"]);
        assert_eq!(wrap("日本語です", 5), vec!["日本", "語で", "す"]);
        assert_eq!(sanitize("a\tb\x1b[31mc\r"), "a    b[31mc");
    }

    #[test]
    fn encode_moves_cursor() {
        let frame = Frame {
            lines: vec!["a".into(), "❯ hi".into()],
            cursor_row: 1,
            cursor_col: 4,
        };
        assert_eq!(encode(&frame), "\x1b[H\x1b[2Ja\r\n❯ hi\x1b[2;5H");
        let banner = Frame {
            lines: vec![BANNER.into()],
            cursor_row: 0,
            cursor_col: 0,
        };
        assert_eq!(
            encode(&banner),
            "\x1b[H\x1b[2J\x1b[31m✻\x1b[0m \x1b[1mWelcome to Fake Code!\x1b[0m\x1b[1;1H"
        );
    }
}
