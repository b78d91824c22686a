//! The allowlisted programs, one family per file: each program's table of
//! the options known to be safe (read with its own parsing rules, `argv`),
//! what its positional words are (files it reads, files it may write, data),
//! and whether it runs repository code. A word the table does not know holds.

mod cargo;
mod files;
mod git;
mod go;
mod js;
mod make;
mod python;
mod search;

pub use git::GIT_SUBCOMMANDS;

use std::path::{Path, PathBuf};

use crate::argv::{Arg, Spec, Val};
use crate::ctx::Ctx;
use crate::paths::Access;
use crate::reason::{Mode, NotScoped, no};
use crate::shell::Word;

/// Judges one allowlisted program's words from `cwd`.
pub(crate) fn judge(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    match prog {
        "cat" | "head" | "tail" | "wc" | "ls" | "pwd" | "echo" => files::judge(prog, args, ctx, cwd),
        "grep" | "rg" | "sed" => search::judge(prog, args, ctx, cwd),
        "git" => git::judge(args, ctx, cwd),
        "cargo" => cargo::judge(args, ctx, cwd),
        "npm" | "pnpm" | "yarn" | "bun" | "tsc" | "eslint" | "vitest" => js::judge(prog, args, ctx, cwd),
        "go" => go::judge(args, ctx, cwd),
        "make" => make::judge(args, ctx, cwd),
        "pytest" | "python" | "python3" => python::judge(prog, args, ctx, cwd),
        "rm" | "unlink" | "rmdir" if ctx.mode == Mode::Deletion => files::delete(prog, args, ctx, cwd),
        "curl" | "wget" if ctx.mode == Mode::Network => files::fetch(prog, args, ctx, cwd),
        "env" | "printenv" => Err(no(format!("{prog} runs another program or prints the environment"))),
        "xargs" => Err(no("xargs runs another program")),
        other => Err(no(format!("{other} is not an allowlisted program"))),
    }
}

/// What the value-carrying options of a parsed command do to paths: reads
/// are checked, writes checked and recorded, configuration files checked and
/// returned (definitions the run reads), a directory option returned as the
/// directory the program runs in.
pub(crate) struct Effects {
    pub(crate) named: Vec<PathBuf>,
    pub(crate) run_dir: PathBuf,
}

pub(crate) fn option_effects(prog: &str, parsed: &[Arg<'_>], ctx: &Ctx<'_>, cwd: &Path) -> Result<Effects, NotScoped> {
    let mut run_dir = cwd.to_path_buf();
    let mut named = Vec::new();
    // A directory option moves where the other values are read from.
    for arg in parsed {
        if let Arg::Opt(o, Some(v)) = arg
            && o.val == Val::Dir
        {
            run_dir = ctx
                .path(v, &run_dir, Access::MayWrite)
                .map_err(|e| no(format!("{prog} {}: {e}", o.names[0])))?;
        }
    }
    for arg in parsed {
        let Arg::Opt(o, Some(v)) = arg else { continue };
        let name = o.names[0];
        let special = matches!(v.text.as_ref(), "-" | "/dev/null" | "/dev/stdout" | "/dev/stderr");
        match o.val {
            Val::Read if !special => {
                ctx.check(v, &run_dir, Access::Read)
                    .map_err(|e| no(format!("{prog} {name}: {e}")))?;
            }
            Val::Write if !special => {
                ctx.check(v, &run_dir, Access::Write)
                    .map_err(|e| no(format!("{prog} {name}: {e}")))?;
            }
            Val::Config => {
                if special {
                    return Err(no(format!(
                        "{prog} {name} {}: the program would read what it runs from standard input",
                        v.text
                    )));
                }
                named.push(
                    ctx.path(v, &run_dir, Access::MayWrite)
                        .map_err(|e| no(format!("{prog} {name}: {e}")))?,
                );
            }
            _ => {}
        }
    }
    Ok(Effects { named, run_dir })
}

/// The positional words of a parsed command (before and after `--`).
pub(crate) fn positionals<'a, 'w: 'a>(parsed: &'a [Arg<'w>]) -> impl Iterator<Item = &'a Word<'w>> {
    parsed.iter().filter_map(|a| match a {
        Arg::Pos(w) | Arg::Rest(w) => Some(*w),
        Arg::Opt(..) => None,
    })
}

/// The words of a parsed command as text (for the runner table).
pub(crate) fn texts<'a>(args: &'a [Word<'_>]) -> Vec<&'a str> {
    args.iter().map(|w| w.text.as_ref()).collect()
}

/// A program that may write: it must not run inside a protected directory;
/// every positional word is a path it may write (never protected); the
/// options' files are checked. Returns what the options named and where it
/// runs (the caller records the run of repository code).
pub(crate) fn writer(prog: &str, spec: &Spec, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<Effects, NotScoped> {
    let parsed = crate::argv::parse(prog, spec, args)?;
    let effects = option_effects(prog, &parsed, ctx, cwd)?;
    ctx.not_inside_protected(prog, &effects.run_dir)?;
    for w in positionals(&parsed) {
        if w.text == "-" {
            return Err(no(format!(
                "{prog} -: the program would read what it runs from standard input"
            )));
        }
        if w.text.starts_with('@') {
            return Err(no(format!(
                "{prog} {}: a response file, whose words the judge cannot see",
                w.text
            )));
        }
        may_write_operand(prog, w, ctx, &effects.run_dir)?;
    }
    Ok(effects)
}

/// A positional word of a program that may write: treated as a path (a
/// test filter or target name resolves to a harmless name in the worktree).
/// An option-shaped word after `--` is the program's own business.
pub(crate) fn may_write_operand(prog: &str, w: &Word, ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let text = w.text.as_ref();
    if text.starts_with('-') {
        if let Some((_, value)) = text.split_once('=') {
            return ctx
                .operand(&Word::plain(value), cwd, Access::MayWrite)
                .map_err(|e| no(format!("{prog} {text}: {e}")));
        }
        return if text.contains('/') {
            Err(no(format!(
                "{prog} {text}: an option carrying a path that cannot be checked"
            )))
        } else {
            Ok(())
        };
    }
    if let Some((_, value)) = text.split_once('=') {
        ctx.operand(&Word::plain(value), cwd, Access::MayWrite)?;
    }
    ctx.operand(w, cwd, Access::MayWrite)
}
