//! The input: one pending dialog as the node read it from the screen or a CLI hook.

use serde::{Deserialize, Serialize};

use crate::options::PromptKind;
use crate::text::Normalizer;

/// Why a dialog whose frame was not verified is held.
pub const FRAME_UNVERIFIED: &str = "the dialog did not match its CLI's template";

/// Permission when the options offer both an approve and a deny answer and
/// nothing invites a free answer; everything else is a decision (see
/// `options::prompt_kind_of`).
pub fn prompt_kind(dialog: &Dialog) -> PromptKind {
    crate::options::prompt_kind_of(&dialog.title, &dialog.options, dialog.prompt_hint)
}

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
    /// What the CLI's dialog template says each answer is, filled only by an
    /// adapter whose reading of the dialog's frame (footer, option block)
    /// matched one of its CLI's templates exactly. `None`: the frame was not
    /// verified, and supervision answers nothing (it holds).
    pub answers: Option<Answers>,
    /// Why the dialog's content (its command, path or question) was not read
    /// for sure, when it was not: rows shaped like the dialog's own frame
    /// inside the command, a top scrolled off the screen, a wrap that cannot
    /// be undone, a screen that disagrees with the CLI's hook. Supervision
    /// holds such a dialog for a human; the answers still say which keys deny.
    pub doubt: Option<String>,
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

/// What an answer means. Supervision only ever sends these two.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Meaning {
    /// Allow this one action, nothing more.
    ApproveOnce,
    /// Refuse it.
    Deny,
}

impl Meaning {
    pub fn as_str(self) -> &'static str {
        match self {
            Meaning::ApproveOnce => "approve once",
            Meaning::Deny => "deny",
        }
    }
}

/// One answer of a dialog's template: the option it chooses and the keys
/// that choose it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The option chosen (0-based, into [`Dialog::options`]), or `None` for a
    /// key that chooses no option (Escape, which cancels).
    pub option: Option<usize>,
    /// The keys to type, e.g. `"1"`, `"n\r"`, `"\u{1b}"`.
    pub keys: String,
}

/// The answers a CLI's template defines for one dialog, by meaning. Either
/// may be absent: a dialog whose only yes is a standing permission has no
/// approve-once answer; a question has only its dismissal (Escape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Answers {
    pub approve_once: Option<Answer>,
    pub deny: Option<Answer>,
}

/// Escape: the only key that denies without naming an option.
pub const ESCAPE: &str = "\u{1b}";

impl Dialog {
    /// The answer of `meaning`, checked: the template defines it, and the
    /// option it chooses says the same in words (an approve is a plain
    /// one-time yes, never a standing permission, never with non-ASCII
    /// letters; a deny is a plain no, or Escape). Errors say why not.
    pub fn answer(&self, meaning: Meaning) -> Result<&Answer, String> {
        let answers = self.answers.as_ref().ok_or(FRAME_UNVERIFIED)?;
        let answer = match meaning {
            Meaning::ApproveOnce => answers.approve_once.as_ref(),
            Meaning::Deny => answers.deny.as_ref(),
        }
        .ok_or_else(|| format!("its template has no {} answer", meaning.as_str()))?;
        if answer.keys.is_empty() {
            return Err(format!("the {} answer has no keys", meaning.as_str()));
        }
        let Some(i) = answer.option else {
            // No option: only Escape, and only to deny.
            return match (meaning, answer.keys.as_str()) {
                (Meaning::Deny, ESCAPE) => Ok(answer),
                _ => Err(format!("the {} answer names no option", meaning.as_str())),
            };
        };
        let text = self.options.get(i).ok_or_else(|| {
            format!(
                "the {} answer names option {} of {}",
                meaning.as_str(),
                i + 1,
                self.options.len()
            )
        })?;
        let agrees = match meaning {
            Meaning::ApproveOnce => {
                !crate::options::is_standing(text)
                    && !crate::options::has_foreign_letters(text)
                    && crate::options::approve_option(&self.options) == Some(i)
            }
            Meaning::Deny => crate::options::deny_option(&self.options) == Some(i),
        };
        if !agrees {
            return Err(format!(
                "option {} \"{text}\" is not a single-shot {}",
                i + 1,
                meaning.as_str()
            ));
        }
        Ok(answer)
    }

    /// Title and question: where file-write and delete-file markers are read.
    pub(crate) fn heading_text(&self) -> String {
        let mut out = String::with_capacity(self.title.len() + self.question.len() + 1);
        Normalizer::new(&mut out).push(&self.title).space().push(&self.question);
        out
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

    /// [`Dialog::action_text`], normalised (`text::normalize`), without the
    /// joined copy.
    pub(crate) fn normalized_action_text(&self) -> String {
        let command = self.command.as_deref();
        let len = self.title.len() + self.question.len() + self.body.len() + command.map_or(0, str::len);
        let mut out = String::with_capacity(len + 3);
        let mut text = Normalizer::new(&mut out);
        text.push(&self.title)
            .space()
            .push(&self.question)
            .space()
            .push(&self.body);
        if let Some(cmd) = command {
            text.space().push(cmd);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(options: &[&str], approve: Option<usize>, deny: Option<Answer>) -> Dialog {
        Dialog {
            options: options.iter().map(|o| o.to_string()).collect(),
            answers: Some(Answers {
                approve_once: approve.map(|i| Answer {
                    option: Some(i),
                    keys: (i + 1).to_string(),
                }),
                deny,
            }),
            ..Dialog::default()
        }
    }

    fn key(option: Option<usize>, keys: &str) -> Option<Answer> {
        Some(Answer {
            option,
            keys: keys.into(),
        })
    }

    #[test]
    fn answers_are_checked_against_the_options_words() {
        let bash = ["Yes", "Yes, and always allow access to /w from this project", "No"];
        let d = claude(&bash, Some(0), key(Some(2), "3"));
        assert_eq!(d.answer(Meaning::ApproveOnce).map(|a| a.keys.as_str()), Ok("1"));
        assert_eq!(d.answer(Meaning::Deny).map(|a| a.keys.as_str()), Ok("3"));
        // A template pointing its approve at a standing option, or its deny
        // at a yes, is refused: a deny never becomes a yes.
        let cases: Vec<(Dialog, Meaning)> = vec![
            (claude(&bash, Some(1), None), Meaning::ApproveOnce),
            (claude(&bash, None, key(Some(0), "1")), Meaning::Deny),
            (claude(&bash, None, key(Some(1), "2")), Meaning::Deny),
            (claude(&["No", "Yes"], Some(0), None), Meaning::ApproveOnce),
            (claude(&["Yes", "Yes", "No"], Some(0), None), Meaning::ApproveOnce),
            (claude(&["Y\u{0435}s", "No"], Some(0), None), Meaning::ApproveOnce),
            (claude(&bash, Some(5), None), Meaning::ApproveOnce),
            (claude(&bash, None, key(None, "1")), Meaning::Deny),
            (claude(&bash, None, key(None, "")), Meaning::Deny),
            (claude(&bash, None, None), Meaning::Deny),
            (Dialog::default(), Meaning::Deny),
        ];
        for (d, meaning) in cases {
            assert!(d.answer(meaning).is_err(), "{meaning:?} of {d:?}");
        }
        // Escape denies without naming an option; it never approves.
        let d = claude(&bash, None, key(None, ESCAPE));
        assert_eq!(d.answer(Meaning::Deny).map(|a| a.option), Ok(None));
        let mut esc_approve = d.clone();
        esc_approve.answers = Some(Answers {
            approve_once: key(None, ESCAPE),
            deny: None,
        });
        assert!(esc_approve.answer(Meaning::ApproveOnce).is_err());
    }

    #[test]
    fn deserializes_with_missing_fields() {
        let d: Dialog = serde_json::from_str(r#"{"title":"Bash command","command":"cargo test"}"#).unwrap();
        assert_eq!(d.title, "Bash command");
        assert_eq!(d.command.as_deref(), Some("cargo test"));
        assert!(d.options.is_empty());
    }
}
