//! The modal dialogs (Bash permission, file edit, decision prompt, usage limit): text, options and key handling.

use std::path::Path;

use crate::exec::EDIT_LINE;
use crate::keys::Key;

/// Which dialog is open, with what it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DialogKind {
    Bash {
        cmd: String,
        cwd: String,
    },
    /// A Bash dialog offering only "don't ask again" or "No".
    BashAlways {
        cmd: String,
    },
    Edit {
        path: String,
    },
    Ask {
        question: String,
        options: Vec<String>,
    },
    Limit,
}

/// An open dialog and its current selection (0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dialog {
    pub(crate) kind: DialogKind,
    pub(crate) selected: usize,
}

/// What a key did to a dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DialogInput {
    /// Still open (selection may have moved).
    Open,
    /// This option (0-based) was chosen.
    Chosen(usize),
    /// Dismissed with Esc.
    Cancelled,
}

/// Last option of every decision prompt.
pub(crate) const TYPE_SOMETHING: &str = "Type something.";

impl DialogKind {
    /// The option texts, in order (without numbers).
    pub(crate) fn options(&self) -> Vec<String> {
        match self {
            DialogKind::Bash { cwd, .. } => vec![
                "Yes".to_string(),
                format!("Yes, and always allow access to {cwd} from this project"),
                "Yes, and switch to auto mode · auto mode handles these prompts for you".to_string(),
                "No".to_string(),
            ],
            DialogKind::BashAlways { cmd } => vec![
                format!("Yes, and don't ask again for `{cmd}` commands in this project"),
                "No".to_string(),
            ],
            DialogKind::Edit { .. } => vec![
                "Yes".to_string(),
                "Yes, allow all edits during this session (shift+tab)".to_string(),
                "No, and tell Claude what to do differently (esc)".to_string(),
            ],
            DialogKind::Ask { options, .. } => {
                let mut all = options.clone();
                all.push(TYPE_SOMETHING.to_string());
                all
            }
            DialogKind::Limit => vec![
                "Stop and wait for limit to reset".to_string(),
                "Upgrade your plan".to_string(),
            ],
        }
    }
}

impl Dialog {
    pub(crate) fn new(kind: DialogKind) -> Self {
        Self { kind, selected: 0 }
    }

    /// Applies one key: digits pick at once, arrows move, Enter confirms, Esc or Ctrl-C cancel.
    pub(crate) fn handle(&mut self, key: &Key) -> DialogInput {
        let count = self.kind.options().len();
        match key {
            Key::Char(c) => match c.to_digit(10).map(|d| d as usize) {
                Some(n) if (1..=count).contains(&n) => DialogInput::Chosen(n - 1),
                _ => DialogInput::Open,
            },
            Key::Up => {
                self.selected = self.selected.saturating_sub(1);
                DialogInput::Open
            }
            Key::Down => {
                self.selected = (self.selected + 1).min(count.saturating_sub(1));
                DialogInput::Open
            }
            Key::Enter => DialogInput::Chosen(self.selected),
            Key::Esc | Key::CtrlC => DialogInput::Cancelled,
            _ => DialogInput::Open,
        }
    }

    /// The dialog's lines (replacing the prompt footer), not yet wrapped, and the
    /// index of the selected option's line.
    pub(crate) fn lines(&self, width: usize) -> (Vec<String>, usize) {
        let rule = "─".repeat(width);
        let dashes = format!(" {}", "╌".repeat(width.saturating_sub(2)));
        let mut lines = vec![rule];
        let footer = match &self.kind {
            DialogKind::Bash { cmd, .. } | DialogKind::BashAlways { cmd } => {
                lines.push(" Bash command".into());
                lines.push(" Run a command requested by the fake model".into());
                lines.push(dashes.clone());
                lines.extend(cmd.split('\n').map(|l| format!(" {l}")));
                lines.push(dashes);
                lines.push(" Do you want to proceed?".into());
                " Esc to cancel · Tab to amend"
            }
            DialogKind::Edit { path } => {
                lines.push(" Edit file".into());
                lines.push(format!(" {path}"));
                lines.push(dashes.clone());
                lines.push(format!(" + {EDIT_LINE}"));
                lines.push(dashes);
                lines.push(format!(" Do you want to make this edit to {}?", file_name(path)));
                " Esc to cancel"
            }
            DialogKind::Ask { question, .. } => {
                lines.push(" ☐ Question".into());
                lines.push(String::new());
                lines.extend(question.split('\n').map(|l| format!(" {l}")));
                lines.push(String::new());
                " Enter to select · ↑/↓ to navigate · Esc to cancel"
            }
            DialogKind::Limit => {
                lines.push(" You've hit your usage limit · resets 3pm (UTC)".into());
                lines.push(String::new());
                lines.push(" What do you want to do?".into());
                lines.push(String::new());
                " Enter to confirm · Esc to cancel"
            }
        };
        let selected_line = lines.len() + self.selected;
        for (i, option) in self.kind.options().iter().enumerate() {
            let marker = if i == self.selected { " ❯ " } else { "   " };
            lines.push(format!("{marker}{}. {option}", i + 1));
        }
        lines.push(String::new());
        lines.push(footer.to_string());
        (lines, selected_line)
    }
}

/// The last component of a path, or the path itself.
fn file_name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bash_dialog_text() {
        let d = Dialog::new(DialogKind::Bash {
            cmd: "touch made.txt".into(),
            cwd: "/w".into(),
        });
        let (lines, sel) = d.lines(12);
        assert_eq!(
            lines,
            vec![
                "────────────",
                " Bash command",
                " Run a command requested by the fake model",
                " ╌╌╌╌╌╌╌╌╌╌",
                " touch made.txt",
                " ╌╌╌╌╌╌╌╌╌╌",
                " Do you want to proceed?",
                " ❯ 1. Yes",
                "   2. Yes, and always allow access to /w from this project",
                "   3. Yes, and switch to auto mode · auto mode handles these prompts for you",
                "   4. No",
                "",
                " Esc to cancel · Tab to amend",
            ]
        );
        assert_eq!(sel, 7);
    }

    #[test]
    fn edit_dialog_text() {
        let d = Dialog::new(DialogKind::Edit {
            path: "src/notes.txt".into(),
        });
        let (lines, _) = d.lines(6);
        assert_eq!(
            lines,
            vec![
                "──────",
                " Edit file",
                " src/notes.txt",
                " ╌╌╌╌",
                " + edited by fake-cli",
                " ╌╌╌╌",
                " Do you want to make this edit to notes.txt?",
                " ❯ 1. Yes",
                "   2. Yes, allow all edits during this session (shift+tab)",
                "   3. No, and tell Claude what to do differently (esc)",
                "",
                " Esc to cancel",
            ]
        );
    }

    #[test]
    fn ask_dialog_text_and_navigation() {
        let mut d = Dialog::new(DialogKind::Ask {
            question: "Which?".into(),
            options: vec!["A".into(), "B".into()],
        });
        assert_eq!(d.handle(&Key::Down), DialogInput::Open);
        let (lines, sel) = d.lines(4);
        assert_eq!(
            lines,
            vec![
                "────",
                " ☐ Question",
                "",
                " Which?",
                "",
                "   1. A",
                " ❯ 2. B",
                "   3. Type something.",
                "",
                " Enter to select · ↑/↓ to navigate · Esc to cancel",
            ]
        );
        assert_eq!(sel, 6);
        assert_eq!(d.handle(&Key::Down), DialogInput::Open);
        assert_eq!(d.handle(&Key::Down), DialogInput::Open);
        assert_eq!(d.selected, 2);
        assert_eq!(d.handle(&Key::Up), DialogInput::Open);
        assert_eq!(d.handle(&Key::Enter), DialogInput::Chosen(1));
    }

    #[test]
    fn limit_dialog_text() {
        let d = Dialog::new(DialogKind::Limit);
        let (lines, _) = d.lines(3);
        assert_eq!(
            lines,
            vec![
                "───",
                " You've hit your usage limit · resets 3pm (UTC)",
                "",
                " What do you want to do?",
                "",
                " ❯ 1. Stop and wait for limit to reset",
                "   2. Upgrade your plan",
                "",
                " Enter to confirm · Esc to cancel",
            ]
        );
    }

    #[test]
    fn digits_and_cancel() {
        let mut d = Dialog::new(DialogKind::Limit);
        assert_eq!(d.handle(&Key::Char('2')), DialogInput::Chosen(1));
        assert_eq!(d.handle(&Key::Char('3')), DialogInput::Open);
        assert_eq!(d.handle(&Key::Char('0')), DialogInput::Open);
        assert_eq!(d.handle(&Key::Char('x')), DialogInput::Open);
        assert_eq!(d.handle(&Key::Esc), DialogInput::Cancelled);
        assert_eq!(d.handle(&Key::Up), DialogInput::Open);
        assert_eq!(d.selected, 0);
    }
}
