//! A terminal screen as styled runs (`conversation.screen {cells: true}`),
//! pure: each row's cells grouped into runs of one style (colours 16/256/RGB,
//! bold, italic, underline, inverse), wide characters kept whole, and the
//! cursor with its visibility. The answer is bounded by a run budget.

use console_api::{CellColor, Cursor, Run, ScreenCells};

/// At most this many runs in one answer (a screen full of alternating
/// colours would otherwise cost a JSON object per cell). The rows past the
/// budget keep their text as one unstyled run.
pub const MAX_RUNS: usize = 6000;

/// The cells of `screen` as runs, at most `max_runs` styled ones.
pub fn styled(screen: &vt100::Screen, max_runs: usize) -> ScreenCells {
    let (rows, cols) = screen.size();
    let (rows, cols) = (rows.get(), cols.get());
    let mut out = Vec::with_capacity(rows as usize);
    let mut budget = max_runs;
    let mut truncated = false;
    for row in 0..rows {
        let runs = row_runs(screen, row, cols);
        if !truncated && runs.len() <= budget {
            budget -= runs.len();
            out.push(runs);
            continue;
        }
        truncated = true;
        out.push(plain(&runs));
    }
    let (row, col) = screen.cursor_position();
    ScreenCells {
        rows: out,
        cursor: Cursor {
            row,
            col,
            visible: !screen.hide_cursor(),
        },
        truncated,
    }
}

/// The style of one cell, as a run without text.
fn style_of(cell: &vt100::Cell) -> Run {
    Run {
        text: String::new(),
        width: 0,
        fg: color(cell.fgcolor()),
        bg: color(cell.bgcolor()),
        bold: cell.bold(),
        italic: cell.italic(),
        underline: cell.underline(),
        inverse: cell.inverse(),
    }
}

fn same_style(a: &Run, b: &Run) -> bool {
    a.fg == b.fg
        && a.bg == b.bg
        && a.bold == b.bold
        && a.italic == b.italic
        && a.underline == b.underline
        && a.inverse == b.inverse
}

fn color(c: vt100::Color) -> Option<CellColor> {
    match c {
        vt100::Color::Default => None,
        vt100::Color::Idx(i) => Some(CellColor::Indexed(i)),
        vt100::Color::Rgb(r, g, b) => Some(CellColor::Rgb(format!("#{r:02x}{g:02x}{b:02x}"))),
    }
}

/// A blank cell that shows nothing: no background, no inverse, no underline.
fn invisible(run: &Run) -> bool {
    run.bg.is_none() && !run.inverse && !run.underline
}

fn row_runs(screen: &vt100::Screen, row: u16, cols: u16) -> Vec<Run> {
    let mut runs: Vec<Run> = vec![];
    for col in 0..cols {
        let Some(cell) = screen.cell(row, col) else { break };
        if cell.is_wide_continuation() {
            continue;
        }
        let style = style_of(cell);
        let text = if cell.has_contents() { cell.contents() } else { " " };
        let width = if cell.is_wide() { 2 } else { 1 };
        match runs.last_mut() {
            Some(last) if same_style(last, &style) => {
                last.text.push_str(text);
                last.width += width;
            }
            _ => runs.push(Run {
                text: text.to_string(),
                width,
                ..style
            }),
        }
    }
    // Trailing blanks that show nothing are left out.
    while let Some(last) = runs.last_mut() {
        if !invisible(last) {
            break;
        }
        let kept = last.text.trim_end_matches(' ').len();
        let cut = (last.text.len() - kept) as u16;
        last.text.truncate(kept);
        last.width -= cut;
        if !last.text.is_empty() {
            break;
        }
        runs.pop();
    }
    runs
}

/// A row's text as one unstyled run (none for an empty row).
fn plain(runs: &[Run]) -> Vec<Run> {
    if runs.is_empty() {
        return vec![];
    }
    vec![Run {
        text: runs.iter().map(|r| r.text.as_str()).collect(),
        width: runs.iter().map(|r| r.width).sum(),
        ..Run::default()
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn screen(rows: u16, cols: u16, bytes: &[u8]) -> vt100::Parser {
        let mut p = vt100::Parser::new(super::super::signals::nz(rows), super::super::signals::nz(cols), 0);
        p.process(bytes);
        p
    }

    fn run(text: &str) -> Run {
        Run {
            text: text.into(),
            width: text.chars().count() as u16,
            ..Run::default()
        }
    }

    #[test]
    fn plain_text_is_one_run_per_row_without_trailing_blanks() {
        let p = screen(3, 10, b"hello\r\n\r\nx");
        let c = styled(p.screen(), MAX_RUNS);
        assert_eq!(c.rows, vec![vec![run("hello")], vec![], vec![run("x")]]);
        assert_eq!(
            c.cursor,
            Cursor {
                row: 2,
                col: 1,
                visible: true
            }
        );
        assert!(!c.truncated);
    }

    #[test]
    fn sixteen_256_and_rgb_colours() {
        let p = screen(
            1,
            20,
            b"\x1b[31mr\x1b[92mg\x1b[38;5;208mo\x1b[38;2;1;2;255mb\x1b[44mB\x1b[0m.",
        );
        let c = styled(p.screen(), MAX_RUNS);
        let r = &c.rows[0];
        assert_eq!(r.len(), 6, "{r:?}");
        assert_eq!((r[0].text.as_str(), &r[0].fg), ("r", &Some(CellColor::Indexed(1))));
        assert_eq!(r[1].fg, Some(CellColor::Indexed(10)));
        assert_eq!(r[2].fg, Some(CellColor::Indexed(208)));
        assert_eq!(r[3].fg, Some(CellColor::Rgb("#0102ff".into())));
        assert_eq!(
            (&r[4].fg, &r[4].bg),
            (&Some(CellColor::Rgb("#0102ff".into())), &Some(CellColor::Indexed(4)))
        );
        assert_eq!(r[5], run("."));
    }

    #[test]
    fn attributes_split_runs_and_serialize_only_when_set() {
        let p = screen(1, 20, b"\x1b[1mB\x1b[22;3mI\x1b[23;4mU\x1b[24;7mV\x1b[27m  ");
        let c = styled(p.screen(), MAX_RUNS);
        let r = &c.rows[0];
        assert!(r[0].bold && !r[0].italic);
        assert!(r[1].italic && !r[1].bold);
        assert!(r[2].underline);
        assert!(r[3].inverse);
        assert_eq!(r.len(), 4, "trailing default blanks dropped: {r:?}");
        let json = serde_json::to_value(&r[0]).expect("json");
        assert_eq!(json, serde_json::json!({ "text": "B", "width": 1, "bold": true }));
    }

    #[test]
    fn an_inverse_or_coloured_blank_at_the_end_is_kept() {
        // A block cursor drawn by the program itself is an inverse space.
        let p = screen(1, 10, b"> \x1b[7m \x1b[0m");
        let c = styled(p.screen(), MAX_RUNS);
        assert_eq!(c.rows[0].len(), 2);
        assert_eq!(c.rows[0][0], run("> "));
        assert!(c.rows[0][1].inverse && c.rows[0][1].text == " ");
    }

    #[test]
    fn wide_characters_are_one_character_two_columns() {
        let p = screen(1, 10, "a漢b".as_bytes());
        let c = styled(p.screen(), MAX_RUNS);
        assert_eq!(
            c.rows[0],
            vec![Run {
                text: "a漢b".into(),
                width: 4,
                ..Run::default()
            }]
        );
        assert_eq!(c.cursor.col, 4);
    }

    #[test]
    fn the_cursor_position_and_a_hidden_cursor() {
        let p = screen(5, 20, b"abc\x1b[3;7H\x1b[?25l");
        let c = styled(p.screen(), MAX_RUNS);
        assert_eq!(
            c.cursor,
            Cursor {
                row: 2,
                col: 6,
                visible: false
            }
        );
        let p = screen(5, 20, b"\x1b[?25l\x1b[?25h");
        assert!(styled(p.screen(), MAX_RUNS).cursor.visible);
    }

    #[test]
    fn the_run_budget_bounds_the_answer() {
        // Every cell its own colour: 10 runs a row.
        let mut bytes = vec![];
        for row in 0..4 {
            for i in 0..10u8 {
                bytes.extend(format!("\x1b[3{}m{}", i % 8, row).as_bytes());
            }
            bytes.extend(b"\x1b[0m\r\n");
        }
        let p = screen(5, 10, &bytes[..bytes.len() - 2]);
        let c = styled(p.screen(), 25);
        assert!(c.truncated);
        let runs: usize = c.rows.iter().map(Vec::len).sum();
        assert!(runs <= 25 + c.rows.len(), "{runs}");
        assert_eq!(c.rows[0].len(), 10);
        assert_eq!(c.rows[1].len(), 10);
        assert_eq!(
            c.rows[2],
            vec![run("2222222222")],
            "over budget: text kept, style dropped"
        );
        assert_eq!(c.rows[3], vec![run("3333333333")]);
    }
}
