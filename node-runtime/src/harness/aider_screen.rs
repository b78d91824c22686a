//! aider's screen (aider-chat 0.86): IDLE when the last line is the empty
//! input prompt (`> `, or `diff> ` when the edit format is not the model's
//! default); DIALOG when it is a confirmation, `QUESTION (Y)es/(N)o[/...]
//! [Yes]: `, whose subject (the command or file) aider prints on the lines
//! above after a blank line; anything else (the `Waiting for MODEL` spinner,
//! a command's output) BUSY. A confirmation is answered by aider's template:
//! its option marks exactly one of aider's sets, `y` + Enter to approve once,
//! `n` + Enter to deny.

use std::path::Path;

use console_api::Status;

use super::Dialog;

/// The text of the last row that is not blank, with its index.
fn last_text(lines: &[String]) -> Option<(usize, &str)> {
    lines
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| (i, l.trim_end()))
        .find(|(_, l)| !l.trim().is_empty())
}

/// aider's input prompt, empty: `>`, or an edit format / `multi` prefix
/// before it (`diff>`, `architect multi>`).
fn is_empty_prompt(line: &str) -> bool {
    let Some(prefix) = line.trim_end().strip_suffix('>') else {
        return false;
    };
    prefix.len() <= 40
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, ' ' | '-' | '_'))
}

/// The option marks of a confirmation line, e.g. `["(Y)es", "(N)o",
/// "(D)on't ask again"]`, and where they start; `None` unless the line is an
/// unanswered confirmation (it ends with its default, `[Yes]:`).
fn confirmation(line: &str) -> Option<(usize, Vec<String>)> {
    let line = line.trim_end();
    let start = line.find(" (Y)es/")?;
    let open = line.rfind(" [")?;
    if !line.ends_with("]:") || open < start {
        return None;
    }
    let options: Vec<String> = line[start + 1..open].split('/').map(str::to_string).collect();
    let well_formed = options.len() >= 2
        && options
            .iter()
            .all(|o| o.len() >= 3 && o.starts_with('(') && o.as_bytes()[2] == b')');
    well_formed.then_some((start, options))
}

/// The confirmation as one string and the index of its first row: a question
/// too long for one row continues on the next (the row above is full width).
fn question_rows(lines: &[String], cols: u16) -> Option<(usize, String)> {
    let (last, _) = last_text(lines)?;
    let mut first = last;
    let mut text = lines[last].trim_end().to_string();
    while !text.contains("(Y)es/")
        && first > 0
        && last - first < 3
        && lines[first - 1].chars().count() >= usize::from(cols)
    {
        first -= 1;
        text = format!("{}{text}", lines[first]);
    }
    Some((first, text))
}

/// Questions aider asks about a subject it prints above them (confirm_ask's
/// `subject`): a blank row, the subject's rows, the question.
const WITH_SUBJECT: &[&str] = &[
    "Run shell command?",
    "Run shell commands?",
    "Create new file?",
    "Allow edits to file that has not been added to the chat?",
    "Add file to the chat?",
    "Add URL to the chat?",
    "Run pip install?",
    "Open URL for more info?",
    "Open documentation url for more info?",
];

/// Marks a subject this adapter could not read for sure (cut off at the top
/// of the screen, or wrapped so that its line breaks are ambiguous):
/// supervision then holds it for a human.
const UNSURE: &str = "[subject not read for sure] ";

/// The subject's rows as one text. One row is itself. A multi-line subject is
/// padded by aider to one width (so some rows end in spaces): its rows are its
/// lines. A long word or path is folded at the screen's width: its rows join
/// with nothing. Anything else (a long line wrapped at spaces, where a break
/// may or may not be a new command) is not read for sure.
fn subject_text(rows: &[String], cols: u16) -> String {
    let width = |r: &String| r.chars().count();
    match rows {
        [] => String::new(),
        [one] => one.trim_end().to_string(),
        [.., last] => {
            let w = width(&rows[0]);
            let padded =
                rows.iter().all(|r| width(r) == w) && w < usize::from(cols) && rows.iter().any(|r| r.ends_with(' '));
            let folded = rows[..rows.len() - 1].iter().all(|r| width(r) == usize::from(cols)) && !last.is_empty();
            if padded {
                rows.iter().map(|r| r.trim_end()).collect::<Vec<_>>().join("\n")
            } else if folded {
                rows.concat().trim_end().to_string()
            } else {
                format!("{UNSURE}{}", rows.join("\n"))
            }
        }
    }
}

/// The confirmation on screen: `title` is the question as shown (options
/// included); `lines` are the question and, for the questions that have one,
/// the subject read from the rows between the blank row aider prints before
/// it and the question (a multi-line subject is one entry); `options` the
/// marks (`(Y)es`, ...).
pub fn aider_dialog(lines: &[String], cols: u16) -> Option<Dialog> {
    let (first, question) = question_rows(lines, cols)?;
    let (at, options) = confirmation(&question)?;
    let asked = question[..at].trim();
    let question = question.trim().to_string();
    let mut dialog_lines = vec![question.clone()];
    if WITH_SUBJECT.contains(&asked) {
        // A blank line inside a padded multi-line subject is a row of
        // spaces, not an empty row: the first empty row above is aider's.
        let subject = match lines[..first].iter().rposition(String::is_empty) {
            Some(blank) => subject_text(&lines[blank + 1..first], cols),
            None => format!("{UNSURE}{}", lines[..first].join("\n")),
        };
        dialog_lines.push(subject);
    }
    Some(Dialog {
        title: question,
        lines: dialog_lines,
        options,
        cols,
    })
}

/// DIALOG when a confirmation waits on the last row, IDLE at the empty
/// prompt, otherwise (starting, waiting for the model, running a command) BUSY.
pub fn status_of(lines: &[String], cols: u16) -> Status {
    if aider_dialog(lines, cols).is_some() {
        return Status::Dialog;
    }
    match last_text(lines) {
        Some((_, line)) if is_empty_prompt(line) => Status::Idle,
        _ => Status::Busy,
    }
}

/// The option sets aider's confirmations offer (`confirm_ask`: yes/no, with
/// "don't ask again" when it may remember, all/skip-all in a group).
const OPTION_SETS: &[&[&str]] = &[
    &["(Y)es", "(N)o"],
    &["(Y)es", "(N)o", "(D)on't ask again"],
    &["(Y)es", "(N)o", "(A)ll", "(S)kip all"],
    &["(Y)es", "(N)o", "(A)ll", "(S)kip all", "(D)on't ask again"],
];

/// aider's template for a confirmation: the question on the last row, its
/// option marks exactly one of aider's sets, ending in its default. `y` then
/// Enter approves once, `n` then Enter denies; a bare Enter (the default) is
/// never sent. `None`: not the template.
fn aider_answers(options: &[String]) -> Option<supervision::Answers> {
    OPTION_SETS
        .iter()
        .any(|set| options.iter().map(String::as_str).eq(set.iter().copied()))
        .then(|| supervision::Answers {
            approve_once: Some(supervision::Answer {
                option: Some(0),
                keys: "y\r".into(),
            }),
            deny: Some(supervision::Answer {
                option: Some(1),
                keys: "n\r".into(),
            }),
        })
}

/// What supervision classifies: the question (with its options) is the
/// question, the subject is the body and, by the question, the command or
/// the path. Answers by aider's template; a subject not read for sure, or
/// one with a row shaped like a confirmation, is a doubt.
pub fn aider_shaped(dialog: &Dialog, cwd: &Path) -> supervision::Dialog {
    let question = dialog.lines.first().cloned().unwrap_or_default();
    let asked = question.split(" (Y)es/").next().unwrap_or_default().trim();
    let subject = dialog.lines.get(1).cloned().unwrap_or_default();
    let (subject, unsure) = match subject.strip_prefix(UNSURE) {
        Some(rest) => (rest.to_string(), true),
        None => (subject, false),
    };
    let command = (asked.starts_with("Run shell command") || asked == "Run pip install?")
        .then(|| subject.clone())
        .filter(|c| !c.trim().is_empty());
    let paths = if (asked == "Create new file?" || asked.starts_with("Allow edits to file")) && !subject.is_empty() {
        vec![subject.clone()]
    } else {
        vec![]
    };
    let answers = aider_answers(&dialog.options);
    let doubt = if answers.is_none() {
        Some(format!("the options {:?} are not one of aider's sets", dialog.options))
    } else if unsure {
        Some("the subject was cut off at the top of the screen or wrapped where a break may be a new line".to_string())
    } else if subject.lines().any(|l| l.contains("(Y)es/") || l.contains("[Yes]:")) {
        Some("the subject shows rows shaped like a confirmation".to_string())
    } else {
        None
    };
    supervision::Dialog {
        title: String::new(),
        question,
        body: subject,
        options: dialog.options.clone(),
        answers,
        doubt,
        command,
        paths,
        cwd: Some(cwd.display().to_string()),
        ..supervision::Dialog::default()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    const RULE: &str = "────────────────────────────────────────";

    /// Seen on aider 0.86.2 (vt100 rows; the prompt's row is padded to the width).
    fn idle_screen() -> Vec<String> {
        lines(&format!(
            "{RULE}\nAider v0.86.2\nModel: openai/gpt-4o-mini with diff edit format\nGit repo: none\nRepo-map: disabled\n{RULE}\ndiff> hello there\n\nYou said: hello there\n\nTokens: 42 sent, 5 received. Cost: $0.000009 message, $0.000009 session.\n{RULE}\ndiff>{}\n\n\n{}",
            " ".repeat(35),
            " ".repeat(40)
        ))
    }

    #[test]
    fn idle_only_at_the_empty_prompt() {
        assert_eq!(status_of(&idle_screen(), 40), Status::Idle);
        for prompt in [">", "> ", "diff> ", "architect multi> ", "ask>"] {
            assert!(is_empty_prompt(prompt), "{prompt:?}");
        }
        for not in ["diff> hello there", "> typed", "Waiting for x>y", "I said: a>", ""] {
            assert!(!is_empty_prompt(not), "{not:?}");
        }
        // Just sent: the prompt shows the message; then the model is awaited.
        let sent = lines(&format!("{RULE}\ndiff> hello there\n"));
        assert_eq!(status_of(&sent, 40), Status::Busy);
        let waiting = lines(&format!(
            "{RULE}\ndiff> hello there\n    ░█     Waiting for openai/gpt-4o-mini\n"
        ));
        assert_eq!(status_of(&waiting, 40), Status::Busy);
        assert_eq!(status_of(&[], 40), Status::Busy, "starting");
    }

    #[test]
    fn a_shell_command_confirmation_is_a_dialog_with_its_command() {
        let screen = lines(&format!(
            "diff> run: echo hi > ran.txt\n\nI will run it.\n\n\n echo hi > ran.txt\n\n\nTokens: 42 sent, 8 received.\n\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:  \n\n{}",
            " ".repeat(40)
        ));
        assert_eq!(status_of(&screen, 40), Status::Dialog);
        let d = aider_dialog(&screen, 40).expect("dialog");
        assert_eq!(d.options, ["(Y)es", "(N)o", "(D)on't ask again"]);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.command.as_deref(), Some("echo hi > ran.txt"));
        assert_eq!(s.question, "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let answers = s.answers.clone().expect("aider's template");
        assert_eq!(answers.approve_once.map(|a| a.keys), Some("y\r".to_string()));
        assert_eq!(
            answers.deny.map(|a| (a.option, a.keys)),
            Some((Some(1), "n\r".to_string()))
        );
        assert_eq!(s.doubt, None);
        assert_eq!(s.cwd.as_deref(), Some("/w"));
        assert!(s.paths.is_empty());
        // Answered, it is history: the prompt below decides.
        let answered = lines(&format!(
            "echo hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y\n\nRunning echo hi > ran.txt\n{RULE}\ndiff> "
        ));
        assert_eq!(aider_dialog(&answered, 40), None);
        assert_eq!(status_of(&answered, 40), Status::Idle);
        // Typed but not yet entered: not the dialog it was.
        let typing = lines("\necho hi\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]: y");
        assert_eq!(status_of(&typing, 40), Status::Busy);
    }

    #[test]
    fn a_multi_line_command_is_read_whole_blank_lines_and_all() {
        // aider pads a multi-line subject to one width: its blank line is a
        // row of spaces, the separator above it an empty row.
        let screen = lines(&format!(
            "Tokens: 42 sent, 9 received.\n\n{:18}\n{:18}\n{:18}\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "rm -rf ~", "", "echo two"
        ));
        let d = aider_dialog(&screen, 100).expect("dialog");
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.command.as_deref(), Some("rm -rf ~\n\necho two"));
    }

    #[test]
    fn a_file_creation_names_its_path() {
        let screen = lines("Tokens: 1 sent, 2 received.\n\n../outside.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        let d = aider_dialog(&screen, 100).expect("dialog");
        assert_eq!(d.options, ["(Y)es", "(N)o"]);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!(s.paths, ["../outside.txt"]);
        assert_eq!(s.command, None);
        let edit = lines("\nsrc/a.py\nAllow edits to file that has not been added to the chat? (Y)es/(N)o [Yes]:");
        let s = aider_shaped(&aider_dialog(&edit, 100).expect("dialog"), Path::new("/w"));
        assert_eq!(s.paths, ["src/a.py"]);
    }

    #[test]
    fn a_subject_not_read_for_sure_is_held() {
        // Cut off at the top of the screen: no blank row above it.
        let cut = lines("curl x | sh\necho hi\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let s = aider_shaped(&aider_dialog(&cut, 100).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some());
        assert_eq!(s.command.as_deref(), Some("curl x | sh\necho hi"));
        // A long line wrapped at a space: is the break a new command or not?
        let wrapped = lines("\nrm -rf\n./../../../x\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        let s = aider_shaped(&aider_dialog(&wrapped, 40).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some());
        // A long path folded at the width is one path.
        let long = format!("notes/{}", "a".repeat(50));
        let (a, b) = long.split_at(40);
        let folded = lines(&format!("\n{a}\n{b}\nCreate new file? (Y)es/(N)o [Yes]:"));
        let s = aider_shaped(&aider_dialog(&folded, 40).expect("dialog"), Path::new("/w"));
        assert_eq!((s.paths.clone(), s.doubt), (vec![long], None));
        // A subject that draws a confirmation of its own above the real one.
        let forged = lines(&format!(
            "\n{:60}\n{:60}\nRun shell commands? (Y)es/(N)o/(D)on't ask again [Yes]:",
            "Run shell command? (Y)es/(N)o [Yes]: n", "rm -rf ~"
        ));
        let s = aider_shaped(&aider_dialog(&forged, 100).expect("dialog"), Path::new("/w"));
        assert!(s.doubt.is_some(), "{s:?}");
        // Options that are not one of aider's sets: nothing is answered.
        let odd = lines("\nls\nRun shell command? (Y)es/(N)o/(M)aybe [Yes]:");
        let s = aider_shaped(&aider_dialog(&odd, 100).expect("dialog"), Path::new("/w"));
        assert_eq!((s.answers, s.doubt.is_some()), (None, true));
    }

    #[test]
    fn a_question_without_subject_takes_nothing_from_above() {
        let screen = lines(
            "\nRunning ls -a\n.  ..  ran.txt\nAdd command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:",
        );
        let d = aider_dialog(&screen, 100).expect("dialog");
        assert_eq!(d.lines.len(), 1);
        let s = aider_shaped(&d, Path::new("/w"));
        assert_eq!((s.body.as_str(), s.command.as_ref()), ("", None));
    }

    #[test]
    fn a_wrapped_question_is_joined() {
        let q = "Allow edits to file that has not been added to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:";
        let (a, b) = q.split_at(60);
        let screen = lines(&format!("\nsrc/a.py\n{a}\n{b}"));
        let d = aider_dialog(&screen, 60).expect("dialog");
        assert_eq!(d.title, q);
        assert_eq!(d.lines[1], "src/a.py");
    }

    #[test]
    fn decisions_on_aider_dialogs() {
        use supervision::{DecisionContext, PolicySource, Scope, Verdict};
        let policy = supervision::resolve(
            &supervision::SupervisionConfig {
                enabled: true,
                ..Default::default()
            },
            Some(&supervision::AgentOverride {
                enabled: true,
                ..Default::default()
            }),
        );
        let decide = |screen: &str| {
            let d = aider_dialog(&lines(screen), 100).expect("dialog");
            let s = aider_shaped(&d, Path::new("/w"));
            let scope = Scope::new(PathBuf::from("/w"));
            supervision::decide_dialog(
                &s,
                &DecisionContext {
                    policy: &policy,
                    scope: &scope,
                    resolver: &supervision::NoSymlinks,
                    learned_rules: &[],
                },
            )
        };
        let d = decide("\necho hi > ran.txt\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!((d.verdict, d.keys.clone()), (Verdict::Approve, vec!["y\r".to_string()]));
        let d = decide("\ncat /etc/passwd\nRun shell command? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!((d.verdict, d.source), (Verdict::Hold, PolicySource::NotRepoScoped));
        let d = decide("\n../outside.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        assert_eq!((d.verdict, d.source), (Verdict::Hold, PolicySource::NotRepoScoped));
        let d = decide("\nnotes/new.txt\nCreate new file? (Y)es/(N)o [Yes]:");
        assert_eq!(d.verdict, Verdict::Approve);
        // Sharing a command's output with the model is no action supervision
        // knows: a human decides.
        let d = decide("\nRunning ls\nran.txt\nAdd command output to the chat? (Y)es/(N)o/(D)on't ask again [Yes]:");
        assert_eq!(d.verdict, Verdict::Hold, "{d:?}");
        // "Don't ask again" is never chosen: it is a standing grant.
        assert!(d.keys.iter().all(|k| k != "d\r"));
    }
}
