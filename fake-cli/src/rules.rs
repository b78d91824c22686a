//! The `--rules` file: regex rules that script replies, parsed and matched against messages.

use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;

use crate::directive::{Action, parse_ask, valid_busy};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    rules: Vec<RawRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    #[serde(rename = "match")]
    pattern: String,
    actions: Vec<RawAction>,
}

/// One action object of a rule, e.g. `{"say": "hi"}` or `{"busy": 1.5}`.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum RawAction {
    Say(String),
    Shell(String),
    ToolBash(String),
    Edit(String),
    Ask(String),
    Busy(f64),
    Limit(bool),
    Exit(bool),
}

/// A rule action as loaded: a `say` template expands the match's captures
/// (`$1`, `${name}`); `shell` and `tool_bash` expand only `{{1}}` /
/// `{{name}}` (a shell's own `$VAR` stays as it is); the rest is fixed.
#[derive(Debug)]
enum Step {
    Say(String),
    Shell(String),
    ToolBash(String),
    Fixed(Action),
}

#[derive(Debug)]
struct Rule {
    regex: Regex,
    steps: Vec<Step>,
}

/// A parsed, validated rules file.
#[derive(Debug)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
}

/// Why a rules file could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RulesError {
    #[error("cannot read rules file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("invalid rules file {}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

/// Reads and parses a rules file.
pub(crate) fn load_rules(path: &Path) -> Result<Rules, RulesError> {
    let text = std::fs::read_to_string(path).map_err(|source| RulesError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    parse_rules(&text).map_err(|message| RulesError::Invalid {
        path: path.to_path_buf(),
        message,
    })
}

/// Parses rules JSON, compiling every regex and checking every action.
pub(crate) fn parse_rules(json: &str) -> Result<Rules, String> {
    let file: RulesFile = serde_json::from_str(json).map_err(|e| e.to_string())?;
    let mut rules = Vec::with_capacity(file.rules.len());
    for (i, raw) in file.rules.into_iter().enumerate() {
        let regex = Regex::new(&raw.pattern).map_err(|e| format!("rule {i}: bad match regex: {e}"))?;
        let mut steps = Vec::with_capacity(raw.actions.len());
        for action in raw.actions {
            steps.extend(step(action).map_err(|e| format!("rule {i}: {e}"))?);
        }
        rules.push(Rule { regex, steps });
    }
    Ok(Rules { rules })
}

/// Checks and converts one action; `limit` or `exit` set to false is no step at all.
fn step(raw: RawAction) -> Result<Option<Step>, String> {
    let action = match raw {
        RawAction::Say(template) => return Ok(Some(Step::Say(template))),
        RawAction::Shell(cmd) => return Ok(Some(Step::Shell(cmd))),
        RawAction::ToolBash(cmd) => return Ok(Some(Step::ToolBash(cmd))),
        RawAction::Edit(path) => Action::Edit(path),
        RawAction::Ask(spec) => {
            parse_ask(&spec).ok_or_else(|| format!("ask needs \"QUESTION | OPTION | ...\", got {spec:?}"))?
        }
        RawAction::Busy(secs) if !valid_busy(secs) => {
            return Err(format!("busy must be between 0 and 86400 seconds, got {secs}"));
        }
        RawAction::Busy(secs) => Action::Busy {
            secs,
            label: secs.to_string(),
        },
        RawAction::Limit(true) => Action::Limit,
        RawAction::Exit(true) => Action::Exit,
        RawAction::Limit(false) | RawAction::Exit(false) => return Ok(None),
    };
    Ok(Some(Step::Fixed(action)))
}

impl Rules {
    /// The actions of the first rule whose regex matches anywhere in `message`.
    pub(crate) fn actions_for(&self, message: &str) -> Option<Vec<Action>> {
        self.rules.iter().find_map(|rule| {
            let caps = rule.regex.captures(message)?;
            let actions = rule.steps.iter().map(|step| match step {
                Step::Say(template) => {
                    let mut out = String::new();
                    caps.expand(template, &mut out);
                    Action::Say(out)
                }
                Step::Shell(t) => Action::Shell(braced(t, &caps, &rule.regex)),
                Step::ToolBash(t) => Action::ToolBash(braced(t, &caps, &rule.regex)),
                Step::Fixed(action) => action.clone(),
            });
            Some(actions.collect())
        })
    }
}

/// `{{1}}` / `{{name}}` in a command, replaced by that capture (empty when
/// it did not participate).
fn braced(template: &str, caps: &regex::Captures<'_>, regex: &Regex) -> String {
    let mut out = template.to_string();
    for i in 0..caps.len() {
        let text = caps.get(i).map_or("", |m| m.as_str());
        out = out.replace(&format!("{{{{{i}}}}}"), text);
    }
    for name in regex.capture_names().flatten() {
        let text = caps.name(name).map_or("", |m| m.as_str());
        out = out.replace(&format!("{{{{{name}}}}}"), text);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_take_braced_captures_and_keep_shell_variables() {
        let rules = parse_rules(
            r#"{"rules":[{"match":"read (?P<conv>c-\\w+) now (\\d+)","actions":[{"shell":"warren-advise {{conv}} 'n={{2}}' $HOME {{9}}"},{"tool_bash":"echo {{1}}"}]}]}"#,
        )
        .unwrap();
        assert_eq!(
            rules.actions_for("please read c-42 now 7"),
            Some(vec![
                Action::Shell("warren-advise c-42 'n=7' $HOME {{9}}".into()),
                Action::ToolBash("echo c-42".into()),
            ])
        );
    }

    #[test]
    fn first_matching_rule_wins_with_captures() {
        let rules = parse_rules(
            r#"{"rules":[
                {"match":"^deploy (\\w+) to (\\w+)","actions":[{"say":"deploying $1 to ${2}!"},{"tool_bash":"echo deploy"}]},
                {"match":"deploy","actions":[{"say":"second"}]},
                {"match":"wait","actions":[{"busy":2},{"limit":true},{"exit":false},{"shell":"ls"},{"edit":"a.txt"},{"ask":"Q | A | B"},{"exit":true}]}
            ]}"#,
        )
        .unwrap();
        assert_eq!(
            rules.actions_for("deploy web to prod now"),
            Some(vec![
                Action::Say("deploying web to prod!".into()),
                Action::ToolBash("echo deploy".into()),
            ])
        );
        assert_eq!(
            rules.actions_for("please deploy"),
            Some(vec![Action::Say("second".into())])
        );
        assert_eq!(
            rules.actions_for("x wait x"),
            Some(vec![
                Action::Busy {
                    secs: 2.0,
                    label: "2".into()
                },
                Action::Limit,
                Action::Shell("ls".into()),
                Action::Edit("a.txt".into()),
                Action::Ask {
                    question: "Q".into(),
                    options: vec!["A".into(), "B".into()]
                },
                Action::Exit,
            ])
        );
        assert_eq!(rules.actions_for("nothing here"), None);
    }

    #[test]
    fn missing_capture_expands_to_empty() {
        let rules = parse_rules(r#"{"rules":[{"match":"(a)|(b)","actions":[{"say":"[$1][$2]"}]}]}"#).unwrap();
        assert_eq!(rules.actions_for("b"), Some(vec![Action::Say("[][b]".into())]));
    }

    #[test]
    fn invalid_files_are_rejected() {
        assert!(parse_rules("not json").is_err());
        assert!(
            parse_rules(r#"{"rules":[{"match":"(","actions":[]}]}"#)
                .unwrap_err()
                .contains("regex")
        );
        assert!(parse_rules(r#"{"rules":[{"match":"a","actions":[{"dance":1}]}]}"#).is_err());
        assert!(parse_rules(r#"{"rules":[{"match":"a","actions":[{"busy":-1}]}]}"#).is_err());
        assert!(parse_rules(r#"{"rules":[{"match":"a","actions":[{"ask":"no options"}]}]}"#).is_err());
        assert!(parse_rules(r#"{"rules":[{"match":"a"}]}"#).is_err());
        assert!(parse_rules(r#"{"rulez":[]}"#).is_err());
    }

    #[test]
    fn load_names_the_file() {
        let err = load_rules(Path::new("/nonexistent/rules.json")).err().unwrap();
        assert!(err.to_string().contains("/nonexistent/rules.json"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.json");
        std::fs::write(&path, "{").unwrap();
        let err = load_rules(&path).err().unwrap();
        assert!(err.to_string().contains("bad.json"), "{err}");
    }
}
