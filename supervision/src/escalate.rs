//! The always-escalate veto: destructive shapes that hold whatever the policy says.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::dialog::Dialog;
use crate::text::normalize;

/// Which destructive shape tripped the veto.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Escalation {
    /// `git push` with `--force`, `-f`, `--force-with-lease` or a `+refspec`.
    ForcePush,
    /// `rm` with both a recursive and a force flag.
    RecursiveForceDelete,
    /// `git reset --hard`.
    HardReset,
    /// `git clean -f`.
    ForceClean,
    /// `sudo rm`.
    SudoRm,
}

impl Escalation {
    pub fn as_str(self) -> &'static str {
        match self {
            Escalation::ForcePush => "force push",
            Escalation::RecursiveForceDelete => "rm -rf",
            Escalation::HardReset => "git reset --hard",
            Escalation::ForceClean => "git clean -f",
            Escalation::SudoRm => "sudo rm",
        }
    }
}

impl fmt::Display for Escalation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

fn is_prog(word: &str, name: &str) -> bool {
    word == name || word.strip_suffix(name).is_some_and(|rest| rest.ends_with('/'))
}

/// A single-dash flag cluster (`-rf`) containing `letter`.
fn short_has(word: &str, letter: char) -> bool {
    word.strip_prefix('-').is_some_and(|rest| {
        !rest.starts_with('-')
            && !rest.is_empty()
            && rest.chars().all(|c| c.is_ascii_alphabetic())
            && rest.contains(letter)
    })
}

fn is_force(word: &str) -> bool {
    short_has(word, 'f') || word == "--force" || word.starts_with("--force-with-lease") || word == "--force-if-includes"
}

/// The words of one command, after `git`/`rm`/`sudo` position `at`.
fn after<'a>(words: &'a [&'a str], at: usize) -> &'a [&'a str] {
    words.get(at + 1..).unwrap_or_default()
}

fn segment_escalation(words: &[&str]) -> Option<Escalation> {
    for (i, word) in words.iter().enumerate() {
        if is_prog(word, "git") {
            let rest = after(words, i);
            let sub = rest.iter().position(|w| matches!(*w, "push" | "reset" | "clean"));
            if let Some(s) = sub {
                let tail = after(rest, s);
                match rest[s] {
                    "push" if tail.iter().any(|w| is_force(w) || (w.starts_with('+') && w.len() > 1)) => {
                        return Some(Escalation::ForcePush);
                    }
                    "reset" if tail.contains(&"--hard") => return Some(Escalation::HardReset),
                    "clean" if tail.iter().any(|w| is_force(w)) => return Some(Escalation::ForceClean),
                    _ => {}
                }
            }
        }
        if is_prog(word, "sudo") && after(words, i).iter().any(|w| is_prog(w, "rm")) {
            return Some(Escalation::SudoRm);
        }
        if is_prog(word, "rm") {
            let rest = after(words, i);
            let recursive = rest.iter().any(|w| short_has(w, 'r') || *w == "--recursive");
            let force = rest.iter().any(|w| short_has(w, 'f') || *w == "--force");
            if recursive && force {
                return Some(Escalation::RecursiveForceDelete);
            }
        }
    }
    None
}

/// The veto for a piece of text (a command or a dialog's words). Reads it
/// loosely on purpose: quotes and escapes are dropped, and it splits on every
/// shell operator and bracket, so a destructive shape inside `$(...)`, a
/// subshell or a string still counts.
pub fn escalation_in(text: &str) -> Option<Escalation> {
    escalation_in_normalized(&normalize(text))
}

/// True when `text` contains `git` or `rm`: one pass over its bytes, for
/// each of the many short segments of a long command (`str::contains`
/// prepares a search per call).
fn names_git_or_rm(text: &str) -> bool {
    let bytes = text.as_bytes();
    (0..bytes.len()).any(|i| match bytes[i] {
        b'r' => bytes.get(i + 1) == Some(&b'm'),
        b'g' => bytes[i + 1..].starts_with(b"it"),
        _ => false,
    })
}

/// True when `text` contains `rm` or one of the git subcommands a shape
/// names (`push`, `reset`, `clean`): one pass over its bytes. Every shape
/// has a word that is, or ends with, one of them.
fn names_a_shape_word(text: &str) -> bool {
    let bytes = text.as_bytes();
    (0..bytes.len()).any(|i| {
        let rest = &bytes[i..];
        match bytes[i] {
            b'r' => rest.starts_with(b"rm") || rest.starts_with(b"reset"),
            b'p' => rest.starts_with(b"push"),
            b'c' => rest.starts_with(b"clean"),
            _ => false,
        }
    })
}

/// `text` split at every shell operator and bracket (all ASCII: the pieces
/// are found byte by byte), as `text.split([';', '&', ...])` splits it.
fn segments(text: &str) -> impl Iterator<Item = &str> {
    // One load per byte (a long command is read through here whole).
    let separator = |b: u8| SEPARATOR[usize::from(b)];
    let mut start = Some(0);
    std::iter::from_fn(move || {
        let from = start?;
        let end = text.as_bytes()[from..]
            .iter()
            .position(|b| separator(*b))
            .map(|i| from + i);
        start = end.map(|e| e + 1);
        Some(&text[from..end.unwrap_or(text.len())])
    })
}

/// The bytes [`segments`] splits at, as a table.
static SEPARATOR: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = matches!(
            b as u8,
            b';' | b'&' | b'|' | b'\n' | b'(' | b')' | b'`' | b'{' | b'}' | b'$'
        );
        b += 1;
    }
    table
};

/// [`escalation_in`] for text already normalised (`text::normalize`).
pub(crate) fn escalation_in_normalized(text: &str) -> Option<Escalation> {
    // Every shape names git or rm: most text has neither (the whole text is
    // searched by `str::contains`, which reads long text faster).
    if !text.contains("git") && !text.contains("rm") {
        return None;
    }
    // Quotes and escapes dropped from each word (as if from the whole text:
    // they never separate words or segments here).
    let quote = |c: char| matches!(c, '\'' | '"' | '\\');
    // One list of words for every segment without quotes (most of them).
    let mut plain: Vec<&str> = Vec::new();
    for segment in segments(text) {
        if !names_git_or_rm(segment) {
            continue;
        }
        if !segment.contains(quote) {
            // The words are the segment's own text: without a word a shape
            // needs, there is none to find (`git status`).
            if !names_a_shape_word(segment) {
                continue;
            }
            plain.clear();
            plain.extend(segment.split_whitespace());
            if let Some(found) = segment_escalation(&plain) {
                return Some(found);
            }
            continue;
        }
        let owned: Vec<std::borrow::Cow<'_, str>> = segment
            .split_whitespace()
            .map(|w| {
                if w.contains(quote) {
                    std::borrow::Cow::Owned(w.replace(quote, ""))
                } else {
                    std::borrow::Cow::Borrowed(w)
                }
            })
            .filter(|w| !w.is_empty())
            .collect();
        let words: Vec<&str> = owned.iter().map(|w| w.as_ref()).collect();
        if let Some(found) = segment_escalation(&words) {
            return Some(found);
        }
    }
    None
}

/// The veto for a dialog: its command, title, question and body.
pub fn always_escalate(dialog: &Dialog) -> Option<Escalation> {
    escalation_in(&dialog.action_text())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The byte-level splitting and search read text as `str::split`
        /// and `str::contains` do.
        #[test]
        fn byte_scans_agree_with_str(parts in proptest::collection::vec(proptest::sample::select(vec![
            "git", "rm", "g", "it", "r", "m", "push", "pus", "reset", "rese", "clean", "clea", "n", ";", "&&", "|", "\n", "(", ")", "`", "{", "}", "$", " ", "é", "x",
        ]), 0..24)) {
            let text: String = parts.concat();
            let want: Vec<&str> = text.split([';', '&', '|', '\n', '(', ')', '`', '{', '}', '$']).collect();
            proptest::prop_assert_eq!(segments(&text).collect::<Vec<_>>(), want);
            proptest::prop_assert_eq!(names_git_or_rm(&text), text.contains("git") || text.contains("rm"));
            let shape_word = ["rm", "push", "reset", "clean"].iter().any(|w| text.contains(w));
            proptest::prop_assert_eq!(names_a_shape_word(&text), shape_word);
        }
    }

    #[test]
    fn shapes() {
        use Escalation::*;
        let cases: &[(&str, Option<Escalation>)] = &[
            ("git push --force", Some(ForcePush)),
            ("git push -f origin main", Some(ForcePush)),
            ("git push origin main -f", Some(ForcePush)),
            ("git push -uf origin main", Some(ForcePush)),
            ("git push --force-with-lease=main", Some(ForcePush)),
            ("git push origin +main", Some(ForcePush)),
            ("git -C /w push --force", Some(ForcePush)),
            ("/usr/bin/git push --force", Some(ForcePush)),
            ("GIT PUSH --FORCE", Some(ForcePush)),
            ("git push origin main", None),
            ("git push --follow-tags", None),
            ("rm -rf target", Some(RecursiveForceDelete)),
            ("rm -fr target", Some(RecursiveForceDelete)),
            ("rm -Rf target", Some(RecursiveForceDelete)),
            ("rm -r -f target", Some(RecursiveForceDelete)),
            ("rm --recursive --force target", Some(RecursiveForceDelete)),
            ("/bin/rm -rf /", Some(RecursiveForceDelete)),
            ("echo $(rm -rf ~)", Some(RecursiveForceDelete)),
            ("cargo test && rm -rf ~", Some(RecursiveForceDelete)),
            ("bash -c 'rm -rf build'", Some(RecursiveForceDelete)),
            ("rm -r target", None),
            ("rm -f a.o", None),
            ("rm target/x.o", None),
            ("git reset --hard HEAD~1", Some(HardReset)),
            ("git reset --soft HEAD~1", None),
            ("git clean -fdx", Some(ForceClean)),
            ("git clean --force", Some(ForceClean)),
            ("git clean -n", None),
            ("sudo rm /etc/hosts", Some(SudoRm)),
            ("sudo -u root rm x", Some(SudoRm)),
            ("sudo apt update", None),
            ("cargo test -- --force-run", None),
            ("npm run format", None),
            ("git status; git push -f", Some(ForcePush)),
        ];
        for (text, want) in cases {
            assert_eq!(escalation_in(text), *want, "{text}");
        }
    }

    #[test]
    fn dialog_text_counts() {
        let d = Dialog {
            title: "Allow command?".into(),
            body: "$ git push --force origin main".into(),
            ..Dialog::default()
        };
        assert_eq!(always_escalate(&d), Some(Escalation::ForcePush));
    }
}
