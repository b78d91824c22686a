//! Prompt kind (permission or decision) and the single-shot option by its
//! words, which never picks a standing permission and refuses to guess: the
//! cross-check of a template's answer (`Dialog::answer`), never the way keys
//! are chosen from a screen.

use serde::{Deserialize, Serialize};

use crate::text::{MarkerSets, normalize};

/// A yes/no permission request, or a genuine question with several answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptKind {
    Permission,
    Decision,
}

/// Option texts that grant more than this one action: seed 000's words plus
/// the wording of Claude Code, Codex, Gemini CLI and aider.
pub const STANDING_MARKERS: &[&str] = &[
    "always",
    "for this session",
    "during this session",
    "this session",
    "don't ask",
    "dont ask",
    "do not ask",
    "never ask",
    "persist",
    "remember",
    "in settings",
    "settings.json",
    "in this conversation",
    "from this project",
    "for this project",
    "auto mode",
    "auto-accept",
    "accept edits",
    "allow all",
    "all edits",
    "bypass",
    "trust",
    "for all",
    "every time",
    "from now on",
];

const APPROVE_WORDS: &[&str] = &[
    "yes", "y", "allow", "approve", "proceed", "accept", "ok", "okay", "continue", "confirm",
];
const DENY_WORDS: &[&str] = &["no", "n", "deny", "reject", "decline", "cancel", "abort", "disallow"];

/// Plain single-shot answers, plainest tier first: among several acceptable
/// options, the unique one in the plainest tier that has any wins.
const PLAIN_APPROVE: &[&[&str]] = &[
    &["yes", "y", "allow", "approve", "proceed", "ok", "accept"],
    &[
        "allow once",
        "yes, allow once",
        "yes, once",
        "yes, proceed",
        "yes, allow",
    ],
];
const PLAIN_DENY: &[&[&str]] = &[&["no", "n", "deny", "reject", "cancel", "decline"]];

/// Options that invite a free answer: the mark of a question, not a permission.
const FREE_ANSWER: &[&str] = &[
    "type something",
    "something else",
    "other (",
    "chat about this",
    "write my own",
];

/// An option's text made comparable: no number prefix, cursor, key hint in
/// parentheses at the end, `(Y)es`-style key marks, or trailing punctuation.
fn clean(option: &str) -> String {
    let mut s = normalize(option);
    for cursor in ["❯", "›", ">", "●", "○", "◯", "*"] {
        if let Some(rest) = s.strip_prefix(cursor) {
            s = rest.trim_start().to_string();
        }
    }
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && s[digits..].starts_with(['.', ')']) {
        s = s[digits + 1..].trim_start().to_string();
    }
    // "(Y)es" -> "yes"; "(D)on't ask again" -> "don't ask again".
    if s.starts_with('(') && s.get(2..3) == Some(")") {
        s = format!("{}{}", &s[1..2], &s[3..]);
    }
    // Trailing key hints: "yes (y)", "no (esc)", "... (shift+tab)".
    while s.ends_with(')') {
        match s.rfind(" (") {
            Some(i) => s.truncate(i),
            None => break,
        }
    }
    s.trim_end_matches(['.', '!', ' ']).to_string()
}

fn first_word(cleaned: &str) -> &str {
    cleaned
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | '!' | ':' | '-' | '—' | '–'))
        .next()
        .unwrap_or_default()
}

/// The standing markers in one automaton: each option of a dialog is read
/// for them several times per decision.
static STANDING: MarkerSets = MarkerSets::new(&[STANDING_MARKERS]);

/// True when the option grants a standing permission (always, this session,
/// auto mode, don't ask again, ...).
pub fn is_standing(option: &str) -> bool {
    STANDING.found(&clean(option)) != 0
}

/// Letters outside ASCII in an option can hide a standing grant behind
/// lookalikes; such options are never chosen.
pub(crate) fn has_foreign_letters(option: &str) -> bool {
    option.chars().any(|c| c.is_alphabetic() && !c.is_ascii())
}

fn is_approve(cleaned: &str) -> bool {
    APPROVE_WORDS.contains(&first_word(cleaned))
}

fn is_deny(cleaned: &str) -> bool {
    let first = first_word(cleaned);
    DENY_WORDS.contains(&first) || cleaned.starts_with("don't allow") || cleaned.starts_with("do not allow")
}

/// Permission when the options offer both an approve and a deny answer and
/// nothing invites a free answer; everything else (a list of choices, a
/// usage-limit menu, no options at all) is a decision. A hint from the capture
/// channel can only make it a decision.
pub fn prompt_kind_of(title: &str, options: &[String], hint: Option<PromptKind>) -> PromptKind {
    if hint == Some(PromptKind::Decision) {
        return PromptKind::Decision;
    }
    let title = normalize(title);
    if title.starts_with('☐') || title.starts_with('☒') || title == "question" {
        return PromptKind::Decision;
    }
    let cleaned: Vec<String> = options.iter().map(|o| clean(o)).collect();
    if cleaned.iter().any(|o| FREE_ANSWER.iter().any(|m| o.contains(m))) {
        return PromptKind::Decision;
    }
    let approve = cleaned.iter().any(|o| is_approve(o));
    let deny = cleaned.iter().any(|o| is_deny(o));
    if approve && deny {
        PromptKind::Permission
    } else {
        PromptKind::Decision
    }
}

/// The index of the one safe option shaped by `wanted`, or `None` when there is
/// none or the choice is ambiguous. Standing grants and options with non-ASCII
/// letters are never candidates; among several candidates, a unique plain one
/// ("Yes", "No") wins, otherwise nothing is chosen.
fn choose(options: &[String], wanted: fn(&str) -> bool, plain: &[&[&str]]) -> Option<usize> {
    let candidates: Vec<(usize, String)> = options
        .iter()
        .enumerate()
        .filter(|(_, o)| !has_foreign_letters(o) && !is_standing(o))
        .map(|(i, o)| (i, clean(o)))
        .filter(|(_, c)| wanted(c))
        .collect();
    match candidates.as_slice() {
        [] => None,
        [(i, _)] => Some(*i),
        many => {
            for tier in plain {
                let mut plain_ones = many.iter().filter(|(_, c)| tier.contains(&c.as_str()));
                match (plain_ones.next(), plain_ones.next()) {
                    (Some((i, _)), None) => return Some(*i),
                    (Some(_), Some(_)) => return None,
                    _ => {}
                }
            }
            None
        }
    }
}

/// The single-shot approve option, if exactly one can be told apart.
pub fn approve_option(options: &[String]) -> Option<usize> {
    choose(options, is_approve, PLAIN_APPROVE)
}

/// The single-shot deny option, if exactly one can be told apart.
pub fn deny_option(options: &[String]) -> Option<usize> {
    choose(options, is_deny, PLAIN_DENY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialog::{Dialog, prompt_kind};

    fn opts(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn clean_strips_decoration() {
        let cases: &[(&str, &str)] = &[
            ("❯ 1. Yes", "yes"),
            ("2. No", "no"),
            ("(Y)es", "yes"),
            ("(D)on't ask again", "don't ask again"),
            ("Yes (y)", "yes"),
            (
                "No, and tell Claude what to do differently (esc)",
                "no, and tell claude what to do differently",
            ),
            (
                "Yes, allow all edits during this session (shift+tab)",
                "yes, allow all edits during this session",
            ),
            ("Yes.", "yes"),
        ];
        for (raw, want) in cases {
            assert_eq!(clean(raw), *want, "{raw}");
        }
    }

    #[test]
    fn choices() {
        // (options, approve, deny)
        let cases: &[(&[&str], Option<usize>, Option<usize>)] = &[
            (
                &[
                    "Yes",
                    "Yes, and always allow access to /w from this project",
                    "Yes, and switch to auto mode · auto mode handles these prompts for you",
                    "No",
                ],
                Some(0),
                Some(3),
            ),
            (
                &[
                    "Yes",
                    "Yes, allow all edits during this session (shift+tab)",
                    "No, and tell Claude what to do differently (esc)",
                ],
                Some(0),
                Some(2),
            ),
            (&["Yes, allow once", "Yes, allow always", "No (esc)"], Some(0), Some(2)),
            (
                &[
                    "Yes",
                    "Yes, and don't ask again for this command",
                    "No, provide feedback",
                ],
                Some(0),
                Some(2),
            ),
            (&["(Y)es", "(N)o", "(D)on't ask again"], Some(0), Some(1)),
            (&["Yes", "Yes"], None, None),
            (&["Yes, deploy to staging", "Yes, deploy to prod", "No"], None, Some(2)),
            (&["Yes, and always allow", "No"], None, Some(1)),
            (
                &["Yes, remember this choice", "No, and remember this choice"],
                None,
                None,
            ),
            (&["Yes, for this session", "No"], None, Some(1)),
            (&["Allow in this conversation", "Deny"], None, Some(1)),
            (&["Yes, save to settings.json", "No"], None, Some(1)),
            (&["Yes", "Yes, persist"], Some(0), None),
            (&["Yes", "Yes, allow once", "No"], Some(0), Some(2)),
            (&["Yes, allow once", "Yes, deploy it", "No"], Some(0), Some(2)),
            (&["No", "No"], None, None),
            (&["Yеs", "No"], None, Some(1)),
            (&["Yes", "Yes, аlways", "No"], Some(0), Some(2)),
            (&["Proceed", "Cancel"], Some(0), Some(1)),
            (&[], None, None),
            (&["No", "No, never ask again"], None, Some(0)),
        ];
        for (options, approve, deny) in cases {
            let options = opts(options);
            assert_eq!(approve_option(&options), *approve, "approve in {options:?}");
            assert_eq!(deny_option(&options), *deny, "deny in {options:?}");
        }
    }

    #[test]
    fn prompt_kinds() {
        let d = |title: &str, options: &[&str]| Dialog {
            title: title.into(),
            options: opts(options),
            ..Dialog::default()
        };
        let cases: Vec<(Dialog, PromptKind)> = vec![
            (d("Bash command", &["Yes", "No"]), PromptKind::Permission),
            (d("", &["(Y)es", "(N)o", "(D)on't ask again"]), PromptKind::Permission),
            (
                d("☐ Question", &["Postgres", "SQLite", "Type something."]),
                PromptKind::Decision,
            ),
            (d("☐ Database", &["Yes", "No", "Type something."]), PromptKind::Decision),
            (
                d("", &["Stop and wait for limit to reset", "Upgrade your plan"]),
                PromptKind::Decision,
            ),
            (d("Bash command", &["Yes"]), PromptKind::Decision),
            (d("Bash command", &[]), PromptKind::Decision),
            (
                Dialog {
                    prompt_hint: Some(PromptKind::Decision),
                    ..d("Bash command", &["Yes", "No"])
                },
                PromptKind::Decision,
            ),
            (
                Dialog {
                    prompt_hint: Some(PromptKind::Permission),
                    ..d("", &["Red", "Blue"])
                },
                PromptKind::Decision,
            ),
        ];
        for (dialog, want) in cases {
            assert_eq!(prompt_kind(&dialog), want, "{dialog:?}");
        }
    }
}
