//! Why a CLI stopped and how to bring it back, as pure decisions: the pause
//! reason a CLI's exit leaves (its exit code and what it said), and whether a
//! `continue` can use the CLI's native resume or must start it fresh because
//! the session the resume reference names was never written.

/// At most this many trailing screen lines are kept with an exit.
pub const MAX_LAST_LINES: usize = 6;
/// Each kept line is cut at this many characters.
pub const MAX_LINE_CHARS: usize = 200;

/// What the node knows about the CLI's own session store for a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStore {
    /// The adapter names no session file: trust the CLI's resume.
    Unknown,
    /// The session file the resume reference names is there.
    Present,
    /// It is not there. `recorded`: the transcript holds lines read from it,
    /// so it did exist and was removed behind the node's back.
    Missing { recorded: bool },
}

/// How `continue` relaunches the CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relaunch {
    /// The CLI's native resume with the conversation's reference.
    Resume,
    /// The CLI never wrote the session: launch it fresh with the same
    /// reference (there is nothing to resume, and saying so is honest).
    FreshSameRef,
}

/// A plain `continue`: resume what exists. A session that never existed is
/// started fresh; one that existed and is gone is still resumed, so the CLI
/// itself says what it can't find (and the pause says "resume failed").
pub fn relaunch(store: SessionStore) -> Relaunch {
    match store {
        SessionStore::Missing { recorded: false } => Relaunch::FreshSameRef,
        SessionStore::Unknown | SessionStore::Present | SessionStore::Missing { recorded: true } => Relaunch::Resume,
    }
}

/// Everything the pause reason of an exit is made from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExitFacts<'a> {
    /// The launch was the CLI's native resume.
    pub resumed: bool,
    /// The CLI was ready for input (IDLE or a dialog) at least once.
    pub ready: bool,
    pub code: Option<i32>,
    /// The last lines of its screen (see [`last_lines`]).
    pub lines: &'a [String],
    /// The adapter's reading of those lines: the CLI's own words for a
    /// session it could not find, when it printed them.
    pub missing_session: Option<&'a str>,
}

/// The pause reason for a CLI that stopped by itself.
pub fn exit_reason(f: &ExitFacts<'_>) -> String {
    let code = match f.code {
        Some(c) => format!("exit code {c}"),
        None => "exit code unknown".to_string(),
    };
    let said = || match (f.missing_session, f.lines.last()) {
        (Some(words), _) => Some(words.to_string()),
        (None, Some(_)) => Some(f.lines.join(" | ")),
        (None, None) => None,
    };
    match (f.resumed, f.ready) {
        // The CLI's own words that the session is missing are a failed
        // resume even when it drew its screen first (Codex does).
        (true, true) if f.missing_session.is_some() => {
            format!("resume failed: {} ({code})", f.missing_session.unwrap_or_default())
        }
        (true, false) => match said() {
            Some(words) => format!("resume failed: {words} ({code})"),
            None => format!("resume failed: the CLI exited before it was ready ({code}) and printed nothing"),
        },
        (false, false) => match said() {
            Some(words) => format!("the CLI exited before it was ready ({code}): {words}"),
            None => format!("the CLI exited before it was ready ({code}) and printed nothing"),
        },
        (_, true) if f.lines.is_empty() => format!("the CLI exited ({code})"),
        (_, true) => format!("the CLI exited ({code}): {}", f.lines.join(" | ")),
    }
}

/// The last non-blank lines of a screen (at most [`MAX_LAST_LINES`], each
/// trimmed and cut at [`MAX_LINE_CHARS`] characters), top to bottom.
pub fn last_lines(screen: &[String]) -> Vec<String> {
    let mut out: Vec<String> = screen
        .iter()
        .rev()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty())
        .take(MAX_LAST_LINES)
        .map(|l| l.chars().take(MAX_LINE_CHARS).collect())
        .collect();
    out.reverse();
    out
}

/// The first of `lines` containing `marker` (how a CLI says it found no
/// session), for adapters whose CLI prints a fixed phrase.
pub fn line_with<'a>(lines: &'a [String], marker: &str) -> Option<&'a str> {
    lines.iter().map(String::as_str).find(|l| l.contains(marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn continue_resumes_only_what_exists() {
        let table = [
            (SessionStore::Unknown, Relaunch::Resume),
            (SessionStore::Present, Relaunch::Resume),
            (SessionStore::Missing { recorded: false }, Relaunch::FreshSameRef),
            (SessionStore::Missing { recorded: true }, Relaunch::Resume),
        ];
        for (store, want) in table {
            assert_eq!(relaunch(store), want, "{store:?}");
        }
    }

    #[test]
    fn exit_reasons_say_what_the_cli_said() {
        let said = lines(&["No conversation found with session ID: abc"]);
        let noise = lines(&["some banner", "Error: bad flag"]);
        let cases: [(ExitFacts<'_>, &str); 7] = [
            (
                ExitFacts {
                    resumed: true,
                    ready: false,
                    code: Some(1),
                    lines: &said,
                    missing_session: Some("No conversation found with session ID: abc"),
                },
                "resume failed: No conversation found with session ID: abc (exit code 1)",
            ),
            // Drawn first, then the words (Codex): still a failed resume.
            (
                ExitFacts {
                    resumed: true,
                    ready: true,
                    code: Some(1),
                    lines: &said,
                    missing_session: Some("No conversation found with session ID: abc"),
                },
                "resume failed: No conversation found with session ID: abc (exit code 1)",
            ),
            (
                ExitFacts {
                    resumed: true,
                    ready: false,
                    code: Some(2),
                    lines: &noise,
                    missing_session: None,
                },
                "resume failed: some banner | Error: bad flag (exit code 2)",
            ),
            (
                ExitFacts {
                    resumed: true,
                    ready: false,
                    code: None,
                    lines: &[],
                    missing_session: None,
                },
                "resume failed: the CLI exited before it was ready (exit code unknown) and printed nothing",
            ),
            (
                ExitFacts {
                    resumed: false,
                    ready: false,
                    code: Some(127),
                    lines: &noise,
                    missing_session: None,
                },
                "the CLI exited before it was ready (exit code 127): some banner | Error: bad flag",
            ),
            (
                ExitFacts {
                    resumed: false,
                    ready: true,
                    code: Some(0),
                    lines: &noise,
                    missing_session: None,
                },
                "the CLI exited (exit code 0): some banner | Error: bad flag",
            ),
            (
                ExitFacts {
                    resumed: true,
                    ready: true,
                    code: Some(0),
                    lines: &[],
                    missing_session: None,
                },
                "the CLI exited (exit code 0)",
            ),
        ];
        for (facts, want) in cases {
            assert_eq!(exit_reason(&facts), want);
        }
    }

    #[test]
    fn last_lines_are_the_bottom_non_blank_ones_bounded() {
        let mut screen = lines(&["top", "", "  a  ", "b", "", ""]);
        assert_eq!(last_lines(&screen), lines(&["top", "a", "b"]));
        screen = (0..20).map(|i| format!("line {i}")).collect();
        let got = last_lines(&screen);
        assert_eq!(got.len(), MAX_LAST_LINES);
        assert_eq!(got.last().map(String::as_str), Some("line 19"));
        let long = vec!["x".repeat(1000)];
        assert_eq!(last_lines(&long)[0].chars().count(), MAX_LINE_CHARS);
        assert!(last_lines(&lines(&["", "   "])).is_empty());
    }

    #[test]
    fn a_marker_picks_the_cli_s_own_line() {
        let l = lines(&["banner", "No conversation found with session ID: x", "bye"]);
        assert_eq!(
            line_with(&l, "No conversation found"),
            Some("No conversation found with session ID: x")
        );
        assert_eq!(line_with(&l, "nope"), None);
    }
}
