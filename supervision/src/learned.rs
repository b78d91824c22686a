//! Learned approval rules: confirmed per-workspace command patterns that may lift
//! a hold on an already repo-scoped `command_exec`.

use serde::{Deserialize, Serialize};

use crate::shell;

/// A command pattern a human confirmed for a workspace. The pattern is a
/// command's words; a final `*` matches any further words. Each segment of a
/// compound command must match on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LearnedRule {
    pub pattern: String,
    /// Only confirmed rules count.
    pub confirmed: bool,
}

impl LearnedRule {
    pub fn confirmed(pattern: impl Into<String>) -> LearnedRule {
        LearnedRule {
            pattern: pattern.into(),
            confirmed: true,
        }
    }

    /// True when the rule is confirmed and every segment of `command` matches
    /// it. A command that cannot be lexed, has redirections, or a pattern that
    /// is empty never matches.
    pub fn matches(&self, command: &str) -> bool {
        if !self.confirmed {
            return false;
        }
        let pattern: Vec<&str> = self.pattern.split_whitespace().collect();
        let (prefix, open) = match pattern.split_last() {
            Some((&"*", rest)) => (rest, true),
            _ => (pattern.as_slice(), false),
        };
        if prefix.is_empty() {
            return false;
        }
        let Ok(script) = shell::parse(command) else {
            return false;
        };
        !script.is_empty()
            && script.segments().all(|seg| {
                let words: Vec<&str> = seg.words.iter().map(|w| w.text.as_ref()).collect();
                seg.redirects.is_empty()
                    && words.len() >= prefix.len()
                    && words[..prefix.len()] == *prefix
                    && (open || words.len() == prefix.len())
            })
    }
}

/// The words of `command` (after quote removal) if it is exactly one simple
/// command: one segment, no redirection to or from a file, nothing the lexer
/// refuses (`$(...)`, backticks, globs, ...). Otherwise why not, as a phrase
/// that follows "the command": e.g. "has more than one command (&&, ||, ;, | or &)".
pub fn simple_command_words(command: &str) -> Result<Vec<String>, String> {
    let script = shell::parse(command).map_err(|r| format!("has {r}"))?;
    let segments: Vec<_> = script.segments().collect();
    match segments.as_slice() {
        [] => Err("is empty".into()),
        [one] if !one.redirects.is_empty() => Err("has a redirection".into()),
        [one] => Ok(one.words.iter().map(|w| w.text.to_string()).collect()),
        _ => Err("has more than one command (&&, ||, ;, | or &)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching() {
        let cases: &[(&str, &str, bool)] = &[
            ("cargo test", "cargo test", true),
            ("cargo test", "cargo  test", true),
            ("cargo test", "cargo test -p x", false),
            ("cargo test *", "cargo test -p x", true),
            ("cargo test *", "cargo test", true),
            ("cargo test *", "cargo build", false),
            ("cargo test *", "cargo test && cargo test -q", true),
            ("cargo test *", "cargo test && git commit -am x", false),
            ("cargo test *", "cargo test > out.txt", false),
            ("cargo test *", "cargo test $(x)", false),
            ("*", "anything", false),
            ("", "cargo test", false),
        ];
        for (pattern, command, want) in cases {
            assert_eq!(
                LearnedRule::confirmed(*pattern).matches(command),
                *want,
                "{pattern} ~ {command}"
            );
        }
        let unconfirmed = LearnedRule {
            pattern: "cargo test".into(),
            confirmed: false,
        };
        assert!(!unconfirmed.matches("cargo test"));
    }

    #[test]
    fn simple_commands() {
        assert_eq!(
            simple_command_words("cargo  test -p 'a b'"),
            Ok(vec!["cargo".to_string(), "test".into(), "-p".into(), "a b".into()])
        );
        for (cmd, why) in [
            ("cargo build && rm x", "more than one command"),
            ("ls | wc", "more than one command"),
            ("cargo test > out", "redirection"),
            ("echo $(id)", "command substitution"),
            ("ls *.rs", "glob"),
            ("", "empty"),
        ] {
            let err = simple_command_words(cmd).expect_err(cmd);
            assert!(err.contains(why), "{cmd}: {err}");
        }
    }
}
