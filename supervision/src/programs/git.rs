//! `git`: a few bookkeeping subcommands, each with its own option table, run
//! only where git would find the worktree's own repository. Git discovers its
//! repository by walking up from where it runs; a directory on the way that
//! holds a `.git` or is shaped like a git directory (`HEAD`, `objects`,
//! `refs`) would be used instead, with its config (`core.fsmonitor` runs on
//! `git status`) and hooks. So every directory from git's working directory up
//! to the worktree must hold no repository but the worktree's own.

use std::path::{Path, PathBuf};

use super::{option_effects, positionals, texts};
use crate::argv::{Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::paths::{Access, GitAt};
use crate::reason::{Mode, NotScoped, no};
use crate::shell::Word;

use Val::{Data, Dir, Flag, OptData, Read, Write};

/// Git subcommands a routine command may use.
pub const GIT_SUBCOMMANDS: &[&str] = &["status", "diff", "log", "add", "commit", "show"];

const GLOBAL: &[Opt] = &[
    opt(&["-C"], Dir),
    opt(&["--no-pager", "-P"], Flag),
    opt(&["--no-optional-locks"], Flag),
    opt(&["--version", "-v"], Flag),
];

const STATUS: &[Opt] = &[
    opt(&["-s", "--short"], Flag),
    opt(&["-b", "--branch"], Flag),
    opt(&["--porcelain"], OptData),
    opt(&["--long"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-u", "--untracked-files"], OptData),
    opt(&["--ignored"], OptData),
    opt(&["-z"], Flag),
    opt(&["--show-stash"], Flag),
    opt(&["--ahead-behind"], Flag),
    opt(&["--no-ahead-behind"], Flag),
    opt(&["--renames"], Flag),
    opt(&["--no-renames"], Flag),
];

/// Options shared by diff, log and show (how a change is printed).
const FORMAT: [Opt; 27] = [
    opt(&["--stat"], OptData),
    opt(&["--shortstat"], Flag),
    opt(&["--numstat"], Flag),
    opt(&["--name-only"], Flag),
    opt(&["--name-status"], Flag),
    opt(&["--summary"], Flag),
    opt(&["-p", "--patch", "-u"], Flag),
    opt(&["-s", "--no-patch"], Flag),
    opt(&["-U", "--unified"], Data),
    opt(&["--color"], OptData),
    opt(&["--no-color"], Flag),
    opt(&["-w", "--ignore-all-space"], Flag),
    opt(&["-b", "--ignore-space-change"], Flag),
    opt(&["--ignore-blank-lines"], Flag),
    opt(&["--word-diff"], OptData),
    opt(&["-M", "--find-renames"], OptData),
    opt(&["--relative"], OptData),
    opt(&["-z"], Flag),
    opt(&["--diff-filter"], Data),
    opt(&["--no-ext-diff"], Flag),
    opt(&["--no-textconv"], Flag),
    opt(&["--abbrev"], OptData),
    opt(&["--raw"], Flag),
    opt(&["--minimal"], Flag),
    opt(&["--patience"], Flag),
    opt(&["--histogram"], Flag),
    opt(&["--no-prefix"], Flag),
];

const DIFF: [Opt; 35] = concat(
    FORMAT,
    [
        opt(&["--cached", "--staged"], Flag),
        opt(&["--exit-code"], Flag),
        opt(&["--quiet"], Flag),
        opt(&["--check"], Flag),
        opt(&["-R"], Flag),
        opt(&["--merge-base"], Flag),
        opt(&["--output"], Write),
        opt(&["-a", "--text"], Flag),
    ],
);

const LOG: [Opt; 62] = concat(
    FORMAT,
    [
        opt(&["--oneline"], Flag),
        opt(&["-n", "--max-count"], Data),
        opt(&["--skip"], Data),
        opt(&["--graph"], Flag),
        opt(&["--decorate"], OptData),
        opt(&["--no-decorate"], Flag),
        opt(&["--all"], Flag),
        opt(&["--format", "--pretty"], OptData),
        opt(&["--abbrev-commit"], Flag),
        opt(&["--no-merges"], Flag),
        opt(&["--merges"], Flag),
        opt(&["--first-parent"], Flag),
        opt(&["--reverse"], Flag),
        opt(&["--follow"], Flag),
        opt(&["--since", "--after"], Data),
        opt(&["--until", "--before"], Data),
        opt(&["--author"], Data),
        opt(&["--committer"], Data),
        opt(&["--grep"], Data),
        opt(&["-i", "--regexp-ignore-case"], Flag),
        opt(&["-E", "--extended-regexp"], Flag),
        opt(&["-F", "--fixed-strings"], Flag),
        opt(&["--date"], Data),
        opt(&["--topo-order"], Flag),
        opt(&["--date-order"], Flag),
        opt(&["--left-right"], Flag),
        opt(&["--cherry-pick"], Flag),
        opt(&["--boundary"], Flag),
        opt(&["-G"], Data),
        opt(&["-S"], Data),
        opt(&["--full-history"], Flag),
        opt(&["--ancestry-path"], Flag),
        opt(&["--source"], Flag),
        opt(&["--quiet", "-q"], Flag),
        opt(&["--no-walk"], OptData),
    ],
);

const ADD: &[Opt] = &[
    opt(&["-A", "--all"], Flag),
    opt(&["-u", "--update"], Flag),
    opt(&["-N", "--intent-to-add"], Flag),
    opt(&["-f", "--force"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-n", "--dry-run"], Flag),
    opt(&["--ignore-errors"], Flag),
    opt(&["--chmod"], Data),
];

const COMMIT: &[Opt] = &[
    opt(&["-m", "--message"], Data),
    opt(&["-F", "--file"], Read),
    opt(&["-a", "--all"], Flag),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["--allow-empty"], Flag),
    opt(&["--allow-empty-message"], Flag),
    opt(&["-s", "--signoff"], Flag),
    opt(&["--no-signoff"], Flag),
    opt(&["-n", "--no-verify"], Flag),
    opt(&["--no-gpg-sign"], Flag),
    opt(&["--author"], Data),
    opt(&["--date"], Data),
    opt(&["--no-edit"], Flag),
    opt(&["--amend"], Flag),
    opt(&["--cleanup"], Data),
    opt(&["--fixup"], Data),
    opt(&["--squash"], Data),
    opt(&["--trailer"], Data),
    opt(&["--dry-run"], Flag),
    opt(&["--short"], Flag),
    opt(&["--porcelain"], Flag),
    opt(&["--no-status"], Flag),
    opt(&["-o", "--only"], Flag),
    opt(&["-i", "--include"], Flag),
    opt(&["--reset-author"], Flag),
];

const RM: &[Opt] = &[
    opt(&["--cached"], Flag),
    opt(&["-r"], Flag),
    opt(&["-f", "--force"], Flag),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-n", "--dry-run"], Flag),
    opt(&["--ignore-unmatch"], Flag),
];

const CLEAN: &[Opt] = &[
    opt(&["-n", "--dry-run"], Flag),
    opt(&["-f", "--force"], Flag),
    opt(&["-d"], Flag),
    opt(&["-x"], Flag),
    opt(&["-X"], Flag),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-e", "--exclude"], Data),
];

/// Joins two option tables in a constant.
const fn concat<const A: usize, const B: usize, const C: usize>(a: [Opt; A], b: [Opt; B]) -> [Opt; C] {
    let mut out = [opt(&[], Flag); C];
    let mut i = 0;
    while i < A {
        out[i] = a[i];
        i += 1;
    }
    while i < C {
        out[i] = b[i - A];
        i += 1;
    }
    out
}

fn sub_spec(sub: &str, mode: Mode) -> Option<Spec> {
    Some(match sub {
        "status" => Spec::gnu(STATUS),
        "diff" => Spec::gnu(&DIFF),
        "log" | "show" => Spec::gnu(&LOG).counts(),
        "add" => Spec::gnu(ADD),
        "commit" => Spec::gnu(COMMIT),
        "rm" if mode == Mode::Deletion => Spec::gnu(RM),
        "clean" if mode == Mode::Deletion => Spec::gnu(CLEAN),
        _ => return None,
    })
}

/// Every directory from `dir` up to the worktree's root must hold no
/// repository but the worktree's own, at its root.
fn own_repository(dir: &Path, ctx: &Ctx<'_>) -> Result<(), NotScoped> {
    let root = ctx
        .scope
        .root(ctx.resolver)
        .ok_or_else(|| no("the worktree cannot be resolved"))?;
    let mut at: PathBuf = dir.to_path_buf();
    loop {
        let found = ctx.resolver.git_at(&at);
        if at == root {
            return match found {
                GitAt::DotGit => Ok(()),
                GitAt::Nothing => Err(no(
                    "the worktree holds no .git of its own: git would look for a repository above it",
                )),
                GitAt::Bare => Err(no("the worktree itself is shaped like a bare git directory")),
                GitAt::Unknown => Err(no("what git would find at the worktree cannot be checked")),
            };
        }
        // Inside the worktree's own .git, git uses that directory.
        if at.parent() == Some(root.as_path()) && at.file_name().is_some_and(|n| n == ".git") {
            return Ok(());
        }
        match found {
            GitAt::Nothing => {}
            GitAt::DotGit => {
                return Err(no(format!(
                    "git would use the repository at {} (its .git), not the worktree's own",
                    at.display()
                )));
            }
            GitAt::Bare => {
                return Err(no(format!(
                    "git would use {} as a git directory (it is shaped like one: its config and hooks would run)",
                    at.display()
                )));
            }
            GitAt::Unknown => {
                return Err(no(format!("what git would find at {} cannot be checked", at.display())));
            }
        }
        if !at.pop() || !at.starts_with(&root) {
            return Err(no("git's working directory is outside the worktree"));
        }
    }
}

pub(super) fn judge(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let global = parse("git", &Spec::gnu(GLOBAL).until_positional(), args)?;
    let effects = option_effects("git", &global, ctx, cwd)?;
    let git_cwd = effects.run_dir;
    let mut rest = positionals(&global);
    let Some(sub) = rest.next() else {
        return if global.iter().any(|a| a.is("--version")) {
            Ok(())
        } else {
            Err(no("git without a subcommand"))
        };
    };
    let spec = sub_spec(&sub.text, ctx.mode).ok_or_else(|| {
        let allowed = GIT_SUBCOMMANDS.contains(&sub.text.as_ref());
        no(if allowed {
            format!("git {} is not routine in this dialog", sub.text)
        } else {
            format!("git {} is not a routine subcommand", sub.text)
        })
    })?;
    own_repository(&git_cwd, ctx)?;
    let words: Vec<Word> = rest.cloned().collect();
    let parsed = parse(&format!("git {}", sub.text), &spec, &words)?;
    let sub_effects = option_effects("git", &parsed, ctx, &git_cwd)?;
    // Pathspecs and revisions are read (add and commit copy files into git's
    // own store); `git rm` and `git clean` delete.
    let access = if matches!(sub.text.as_ref(), "rm" | "clean") {
        Access::Write
    } else {
        Access::Read
    };
    for w in positionals(&parsed) {
        ctx.operand(w, &git_cwd, access)?;
    }
    // `git commit` runs the repository's hooks, which may call anything.
    let mut all = vec![sub.text.as_ref()];
    all.extend(texts(&words));
    ctx.ran("git", &all, &git_cwd, sub_effects.named);
    Ok(())
}
