//! Turn actions and the parser that derives them from a submitted message (`/fake ...` lines or an echo).

/// One step of a turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Assistant line with this text.
    Say(String),
    /// Run a shell command without asking, record a tool line.
    Shell(String),
    /// Ask for permission to run a shell command (Bash dialog).
    ToolBash(String),
    /// A Bash permission dialog whose only "yes" is a standing permission.
    ToolBashAlways(String),
    /// Ask for permission to edit a file (edit dialog).
    Edit(String),
    /// Multiple-choice decision prompt.
    Ask { question: String, options: Vec<String> },
    /// Stay busy for `secs`; `label` is how the duration is shown in the reply.
    Busy { secs: f64, label: String },
    /// Record one model request's usage (Claude Code's session format).
    Spend { model: String, input: u64, output: u64 },
    /// Usage-limit menu.
    Limit,
    /// Leave the CLI, printing the resume hint.
    Exit,
}

/// Prefix that marks a directive line.
const DIRECTIVE_PREFIX: &str = "/fake ";

/// Longest accepted busy duration, in seconds.
const MAX_BUSY_SECS: f64 = 86_400.0;

/// The actions for a message: its directive lines in order, or an echo when it has none.
pub(crate) fn parse_message(text: &str) -> Vec<Action> {
    let directives: Vec<Action> = text
        .split('\n')
        .filter_map(|line| line.strip_prefix(DIRECTIVE_PREFIX))
        .map(|rest| parse_directive(rest.trim_end_matches('\r')))
        .collect();
    if directives.is_empty() {
        vec![Action::Say(format!("echo: {text}"))]
    } else {
        directives
    }
}

/// Parses what follows `/fake ` on a directive line.
pub(crate) fn parse_directive(rest: &str) -> Action {
    let rest = rest.trim();
    let (word, arg) = split_word(rest);
    let parsed = match word {
        "say" => Some(Action::Say(arg.to_string())),
        "tool" => match split_word(arg) {
            ("bash", cmd) if !cmd.is_empty() => Some(Action::ToolBash(cmd.to_string())),
            ("bash-always", cmd) if !cmd.is_empty() => Some(Action::ToolBashAlways(cmd.to_string())),
            _ => None,
        },
        "edit" if !arg.is_empty() => Some(Action::Edit(arg.to_string())),
        "ask" => parse_ask(arg),
        "busy" => parse_busy(arg).map(|secs| Action::Busy {
            secs,
            label: arg.to_string(),
        }),
        "spend" => parse_spend(arg),
        "limit" if arg.is_empty() => Some(Action::Limit),
        "exit" if arg.is_empty() => Some(Action::Exit),
        _ => None,
    };
    parsed.unwrap_or_else(|| Action::Say(format!("unknown directive: {rest}")))
}

/// Parses `MODEL INPUT OUTPUT` into an [`Action::Spend`].
pub(crate) fn parse_spend(spec: &str) -> Option<Action> {
    let mut parts = spec.split_whitespace();
    let model = parts.next()?.to_string();
    let input = parts.next()?.parse().ok()?;
    let output = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    Some(Action::Spend { model, input, output })
}

/// Parses `Q | A | B ...` into an [`Action::Ask`]; needs a question and at least one option.
pub(crate) fn parse_ask(spec: &str) -> Option<Action> {
    let mut parts = spec.split('|').map(str::trim);
    let question = parts.next().filter(|q| !q.is_empty())?.to_string();
    let options: Vec<String> = parts.filter(|o| !o.is_empty()).map(String::from).collect();
    if options.is_empty() {
        return None;
    }
    Some(Action::Ask { question, options })
}

/// A busy duration in seconds: finite, not negative, at most a day.
pub(crate) fn parse_busy(arg: &str) -> Option<f64> {
    let secs: f64 = arg.trim().parse().ok()?;
    valid_busy(secs).then_some(secs)
}

/// Whether a busy duration is acceptable.
pub(crate) fn valid_busy(secs: f64) -> bool {
    secs.is_finite() && (0.0..=MAX_BUSY_SECS).contains(&secs)
}

/// Splits off the first whitespace-separated word; the rest is trimmed.
fn split_word(s: &str) -> (&str, &str) {
    let s = s.trim_start();
    match s.find(char::is_whitespace) {
        Some(i) => (&s[..i], s[i..].trim()),
        None => (s, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_message_echoes_whole_text() {
        assert_eq!(
            parse_message("hello\nworld"),
            vec![Action::Say("echo: hello\nworld".into())]
        );
        assert_eq!(
            parse_message("say /fake say x"),
            vec![Action::Say("echo: say /fake say x".into())]
        );
    }

    #[test]
    fn directives_run_in_order_and_other_lines_are_ignored() {
        let msg = "intro\n/fake say one\r\n/fake tool bash touch made.txt\n/fake say two";
        assert_eq!(
            parse_message(msg),
            vec![
                Action::Say("one".into()),
                Action::ToolBash("touch made.txt".into()),
                Action::Say("two".into()),
            ]
        );
    }

    #[test]
    fn each_directive() {
        assert_eq!(parse_directive("say  hi there "), Action::Say("hi there".into()));
        assert_eq!(
            parse_directive("tool bash echo a && echo b"),
            Action::ToolBash("echo a && echo b".into())
        );
        assert_eq!(
            parse_directive("tool bash-always cargo test"),
            Action::ToolBashAlways("cargo test".into())
        );
        assert_eq!(parse_directive("edit notes/a.txt"), Action::Edit("notes/a.txt".into()));
        assert_eq!(
            parse_directive("ask Pick one? | Red | Blue |  Green "),
            Action::Ask {
                question: "Pick one?".into(),
                options: vec!["Red".into(), "Blue".into(), "Green".into()],
            }
        );
        assert_eq!(
            parse_directive("busy 1.5"),
            Action::Busy {
                secs: 1.5,
                label: "1.5".into()
            }
        );
        assert_eq!(parse_directive("limit"), Action::Limit);
        assert_eq!(parse_directive("exit"), Action::Exit);
    }

    #[test]
    fn unknown_and_malformed_directives() {
        let unknown = |x: &str| Action::Say(format!("unknown directive: {x}"));
        assert_eq!(parse_directive("dance"), unknown("dance"));
        assert_eq!(parse_directive("dance now"), unknown("dance now"));
        assert_eq!(parse_directive("tool python x"), unknown("tool python x"));
        assert_eq!(parse_directive("tool bash"), unknown("tool bash"));
        assert_eq!(parse_directive("busy soon"), unknown("busy soon"));
        assert_eq!(
            parse_directive("spend claude-sonnet-4-5 10 2000"),
            Action::Spend {
                model: "claude-sonnet-4-5".into(),
                input: 10,
                output: 2000
            }
        );
        assert_eq!(parse_directive("spend m 1"), unknown("spend m 1"));
        assert_eq!(parse_directive("spend m 1 x"), unknown("spend m 1 x"));
        assert_eq!(parse_directive("busy -1"), unknown("busy -1"));
        assert_eq!(parse_directive("busy inf"), unknown("busy inf"));
        assert_eq!(parse_directive("ask only a question"), unknown("ask only a question"));
        assert_eq!(parse_directive("exit now"), unknown("exit now"));
        assert_eq!(parse_directive("edit"), unknown("edit"));
    }

    #[test]
    fn fake_without_space_is_not_a_directive() {
        assert_eq!(parse_message("/fake"), vec![Action::Say("echo: /fake".into())]);
        assert_eq!(
            parse_message(" /fake say x"),
            vec![Action::Say("echo:  /fake say x".into())]
        );
    }
}
