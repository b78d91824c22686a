//! The adversarial dialog corpus: a data table of dialogs worded like Claude
//! Code, Codex, Gemini CLI and aider, each with its expected outcome and why.
//! Most inputs are asked through every CLI's wording (a command through four
//! shell dialogs, a path through seven edit/create dialogs), so one line of
//! the table is several dialogs.
#![allow(dead_code, unreachable_pub)]

mod attacks;
mod git;
mod home;
mod repo_code;
mod routine;
mod settings;
mod shell;

use std::path::PathBuf;

use supervision::{DecisionContext, Dialog, Verdict, decide_dialog, resolve};

use crate::common::*;

/// What a case expects of `decide_dialog` with supervision on and shipping defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Routine: must be approved.
    Approve,
    /// Must be held (approving it is a false approval).
    Hold,
    /// Would ideally be routine but is held on purpose (the `why` says why):
    /// counted as should-approve, asserted to hold so the list stays exact.
    Overcautious,
}

pub struct Case {
    pub name: String,
    pub dialog: Dialog,
    /// What the agent already changed in this conversation (absolute).
    pub changed: Vec<PathBuf>,
    pub want: Want,
    pub why: &'static str,
}

#[derive(Debug, Clone, Copy)]
pub enum Cli {
    Claude,
    Codex,
    Gemini,
    Aider,
}

pub const CLIS: [Cli; 4] = [Cli::Claude, Cli::Codex, Cli::Gemini, Cli::Aider];

/// A shell-command dialog as `cli` words it.
pub fn shell_dialog(cli: Cli, cmd: &str) -> Dialog {
    match cli {
        Cli::Claude => claude_bash(cmd),
        Cli::Codex => codex_cmd(cmd),
        Cli::Gemini => gemini_shell(cmd),
        Cli::Aider => aider_shell(cmd),
    }
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Every file-write wording for `path`: Claude Code's Edit, Create and Write,
/// Codex's patch (update and add), Gemini CLI's edit, aider's edit and create.
pub fn write_dialogs(path: &str) -> Vec<(&'static str, Dialog)> {
    let claude_write = Dialog {
        title: "Write".into(),
        question: format!("Do you want to write {path}?"),
        ..claude_edit(path)
    };
    let codex_add = Dialog {
        body: format!("*** Add File: {path}"),
        ..codex_patch(path)
    };
    let aider_create = Dialog {
        question: format!("Create new file {path}? (Y)es/(N)o [Yes]:"),
        options: strings(&["(Y)es", "(N)o"]),
        ..aider_edit(path)
    };
    vec![
        ("claude edit", claude_edit(path)),
        ("claude create", claude_create(path)),
        ("claude write", claude_write),
        ("codex patch", codex_patch(path)),
        ("codex add", codex_add),
        ("gemini edit", gemini_edit(path)),
        ("aider edit", aider_edit(path)),
        ("aider create", aider_create),
    ]
}

/// Each command through every CLI's shell dialog.
pub fn cmds(want: Want, why: &'static str, list: &[&str]) -> Vec<Case> {
    list.iter()
        .flat_map(|cmd| {
            CLIS.iter().map(move |cli| Case {
                name: format!("{cli:?} `{cmd}`"),
                dialog: shell_dialog(*cli, cmd),
                changed: Vec::new(),
                want,
                why,
            })
        })
        .collect()
}

/// Each path through every file-write wording.
pub fn edits(want: Want, why: &'static str, list: &[&str]) -> Vec<Case> {
    list.iter()
        .flat_map(|path| {
            write_dialogs(path).into_iter().map(move |(how, dialog)| Case {
                name: format!("{how} {path}"),
                dialog,
                changed: Vec::new(),
                want,
                why,
            })
        })
        .collect()
}

/// One hand-made dialog.
pub fn one(name: &str, dialog: Dialog, want: Want, why: &'static str) -> Vec<Case> {
    vec![Case {
        name: name.to_string(),
        dialog,
        changed: Vec::new(),
        want,
        why,
    }]
}

/// The same cases, after the agent changed `paths` (relative to the worktree)
/// earlier in the conversation.
pub fn after(paths: &[&str], cases: Vec<Case>) -> Vec<Case> {
    cases
        .into_iter()
        .map(|mut c| {
            c.changed = paths.iter().map(|p| PathBuf::from(WORKTREE).join(p)).collect();
            c.name = format!("{} after changing {paths:?}", c.name);
            c
        })
        .collect()
}

/// The whole corpus.
pub fn all() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(home::cases());
    all.extend(git::cases());
    all.extend(settings::cases());
    all.extend(shell::cases());
    all.extend(repo_code::cases());
    all.extend(routine::cases());
    all.extend(attacks::cases());
    all
}

/// The counts the corpus reports.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub cases: usize,
    pub must_hold: usize,
    pub should_approve: usize,
    pub approved: usize,
    pub false_approvals: usize,
    pub overcautious: usize,
}

/// Decides every case; returns the counts and every case whose outcome is
/// not the expected one (with the decision's reason).
pub fn run(cases: &[Case]) -> (Counts, Vec<String>) {
    let (config, agent) = on();
    let policy = resolve(&config, Some(&agent));
    let fs = fs();
    let mut counts = Counts::default();
    let mut wrong = Vec::new();
    for case in cases {
        let scope = scope().with_changed(case.changed.clone());
        let ctx = DecisionContext {
            policy: &policy,
            scope: &scope,
            resolver: &fs,
            learned_rules: &[],
        };
        let d = decide_dialog(&case.dialog, &ctx);
        let approved = d.verdict == Verdict::Approve;
        if std::env::var_os("CORPUS_VERBOSE").is_some() {
            println!("{:?}\t{}\t{}\t{}", d.verdict, d.class, case.name, d.reason);
        }
        counts.cases += 1;
        match case.want {
            Want::Hold => {
                counts.must_hold += 1;
                counts.false_approvals += usize::from(approved);
            }
            Want::Approve | Want::Overcautious => {
                counts.should_approve += 1;
                counts.approved += usize::from(approved);
                counts.overcautious += usize::from(case.want == Want::Overcautious);
            }
        }
        if approved != (case.want == Want::Approve) {
            wrong.push(format!(
                "{}: expected {:?} ({}), got {:?}: {}",
                case.name, case.want, case.why, d.verdict, d.reason
            ));
        }
    }
    (counts, wrong)
}
