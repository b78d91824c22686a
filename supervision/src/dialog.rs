//! The input: one pending dialog as the node read it from the screen or a CLI hook.

use serde::{Deserialize, Serialize};

use crate::options::PromptKind;

/// A pending dialog. The node fills it from the screen (title, question, body,
/// option rows) or from a structured hook (command, paths, cwd); fields it could
/// not read stay empty, and an empty field never makes a decision more
/// permissive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dialog {
    /// The dialog's heading, e.g. `"Bash command"` or `"Edit file"`.
    pub title: String,
    /// The question line, e.g. `"Do you want to proceed?"`.
    pub question: String,
    /// Everything between title and question that describes the action: the
    /// tool's description, the command as shown.
    pub body: String,
    /// File content the dialog shows (an edit's diff, a new file's text). It
    /// is data, not an action: no marker and no veto reads it, so an edit that
    /// mentions `https://` or `rm -rf` in its text is still a file write.
    pub content: String,
    /// Option texts in screen order, without their numbers or cursor.
    pub options: Vec<String>,
    /// The keys that choose each option, parallel to `options`. Empty (or a
    /// different length) means "the option's number": `"1"` for the first.
    pub option_keys: Vec<String>,
    /// The shell command the dialog asks to run, when known.
    pub command: Option<String>,
    /// Files the dialog would write or delete, when known.
    pub paths: Vec<String>,
    /// The directory the command would run in (defaults to the worktree).
    pub cwd: Option<String>,
    /// What the capture channel knows about the prompt (a hook can tell a
    /// question tool from a permission request). Combined with what the options
    /// say; either one saying "decision" makes it a decision.
    pub prompt_hint: Option<PromptKind>,
}

impl Dialog {
    /// The keys that choose option `index` (0-based), or `None` past the end.
    pub fn keys_for(&self, index: usize) -> Option<String> {
        if index >= self.options.len() {
            return None;
        }
        if self.option_keys.len() == self.options.len() {
            return self.option_keys.get(index).cloned();
        }
        Some((index + 1).to_string())
    }

    /// Title and question: where file-write and delete-file markers are read.
    pub(crate) fn heading_text(&self) -> String {
        crate::text::normalize(&format!("{}\n{}", self.title, self.question))
    }

    /// Title, question, body and command, one per line, as written: what the
    /// veto and the network scope rule read.
    pub(crate) fn action_text(&self) -> String {
        let mut text = format!("{}\n{}\n{}", self.title, self.question, self.body);
        if let Some(cmd) = &self.command {
            text.push('\n');
            text.push_str(cmd);
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_default_to_numbers() {
        let d = Dialog {
            options: vec!["Yes".into(), "No".into()],
            ..Dialog::default()
        };
        assert_eq!(d.keys_for(0).as_deref(), Some("1"));
        assert_eq!(d.keys_for(1).as_deref(), Some("2"));
        assert_eq!(d.keys_for(2), None);
    }

    #[test]
    fn explicit_keys_win_when_parallel() {
        let mut d = Dialog {
            options: vec!["Yes".into(), "No".into(), "Don't ask again".into()],
            option_keys: vec!["y".into(), "n".into(), "d".into()],
            ..Dialog::default()
        };
        assert_eq!(d.keys_for(1).as_deref(), Some("n"));
        d.option_keys.pop();
        assert_eq!(d.keys_for(1).as_deref(), Some("2"));
    }

    #[test]
    fn deserializes_with_missing_fields() {
        let d: Dialog = serde_json::from_str(r#"{"title":"Bash command","command":"cargo test"}"#).unwrap();
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.command.as_deref(), Some("cargo test"));
        assert!(d.options.is_empty());
    }
}
