//! Repo scope: whether a dialog's action provably stays inside the agent's
//! worktree, out of the agent's home and off protected paths: the command
//! allowlist, the per-class rules and the repository-code rule (`runs`).

use std::path::{Path, PathBuf};

use crate::class::{DialogClass, has_raw_network_tool};
use crate::dialog::Dialog;
use crate::paths::{Access, PathResolver, Scope};
use crate::shell::{self, Segment, Word};
use crate::url::{find_urls, url_allowed};

pub(crate) mod flow;

use crate::ctx::Ctx;
pub use crate::programs::GIT_SUBCOMMANDS;
pub use crate::reason::NotScoped;
pub(crate) use crate::reason::{Mode, no};

/// The allowlisted programs (seed 000's list plus the read-only `cd`, `echo`,
/// `pwd`, `head`, `tail`, `wc`). Each has its own table of the options known
/// to be safe (`programs/`); any other option holds.
pub const ALLOWED_PROGRAMS: &[&str] = &[
    "cargo", "bun", "npm", "pnpm", "yarn", "go", "make", "pytest", "rg", "grep", "ls", "cat", "tsc", "vitest",
    "eslint", "python", "python3", "sed", "git", "cd", "echo", "pwd", "head", "tail", "wc",
];

/// One simple command from `cwd`: how its program is named, its
/// redirections, then its program's own rules. A `cd` is followed by the
/// walk (`flow`); here only its redirections count.
pub(crate) fn segment(seg: &Segment, ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let Some((first, args)) = seg.words.split_first() else {
        return Err(no("an empty command"));
    };
    let prog = first.text.as_ref();
    if first.tilde || prog.contains('/') {
        return Err(no(format!("{prog} is a program named by path")));
    }
    if prog.contains('=') {
        return Err(no(format!("{prog} sets an environment variable for the command")));
    }
    if !prog.is_ascii() {
        return Err(no(format!("{prog} is not an allowlisted program (non-ASCII name)")));
    }
    for redirect in seg.redirects {
        let target = &redirect.target;
        if !target.tilde && matches!(target.text.as_ref(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            continue;
        }
        let access = if redirect.write { Access::Write } else { Access::Read };
        ctx.check(target, cwd, access)
            .map_err(|e| no(format!("redirection: {e}")))?;
    }
    if prog == "cd" {
        return Ok(());
    }
    crate::programs::judge(prog, args, ctx, cwd)
}

fn command_with(command: &str, cwd: Option<&str>, ctx: &Ctx<'_>) -> Result<(), NotScoped> {
    let script = shell::parse(command);
    script_with(&script, cwd, ctx)
}

fn script_with(
    script: &Result<shell::Script, shell::Refusal>,
    cwd: Option<&str>,
    ctx: &Ctx<'_>,
) -> Result<(), NotScoped> {
    let script = script.as_ref().map_err(|r| no(format!("the command uses {r}")))?;
    if script.is_empty() {
        return Err(no("an empty command"));
    }
    let dir = ctx.scope.working_dir(cwd, ctx.resolver).map_err(NotScoped)?;
    let judged = crate::memo::Judged::default();
    flow::walk(script, &dir, ctx, &|seg, at| {
        judged.judge(seg, at, ctx, || segment(&seg, ctx, at))
    })?;
    ctx.check_runs()
}

/// Whether `command`, run from `cwd` (the worktree when `None`), is provably
/// inside `scope`: it parses in the judge's grammar (no expansions,
/// substitutions, globs, groups or here-documents); every simple command, from
/// every directory the shell may be in when it runs (`cd` followed the way the
/// shell follows it), is an allowlisted program with only the options its
/// table knows; every path it may open resolves inside the worktree and
/// outside the agent's home and is no credential file (`/dev/null`,
/// `/dev/stdout` and `/dev/stderr` are allowed as redirection targets);
/// nothing it writes, and nothing a program that may write is pointed at or
/// runs in, is a protected path; and no repository code it runs was
/// redefined. Programs named by path, `env`, `xargs`, variable assignments
/// and non-ASCII program names are never in scope.
pub fn command_in_scope(
    command: &str,
    cwd: Option<&str>,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> Result<(), NotScoped> {
    command_with(command, cwd, &Ctx::new(scope, resolver, Mode::Command))
}

/// A file-write or deletion dialog's target paths: each is written.
fn paths_in_scope(dialog: &Dialog, ctx: &Ctx<'_>) -> Result<(), NotScoped> {
    let cwd = ctx
        .scope
        .working_dir(dialog.cwd.as_deref(), ctx.resolver)
        .map_err(NotScoped)?;
    for p in &dialog.paths {
        if p.contains('$') {
            return Err(no(format!("{p} names a variable, which a human must read")));
        }
        let word = Word {
            tilde: p.starts_with('~'),
            ..Word::plain(p.as_str())
        };
        ctx.check(&word, &cwd, Access::Write)?;
    }
    Ok(())
}

/// Whether the dialog's action is repo-scoped for its class (seed 000):
/// `command_exec` by its command; `file_write` by its target paths (and its
/// command, if it has one); `deletion` by its command (with `rm`, `unlink`,
/// `rmdir`, `git rm`, `git clean` admitted) and paths; `network_access` when
/// every URL is to an allowed host, there is at least one, no ssh/nc-style tool
/// is named, and any command passes the command rules with `curl`/`wget`
/// admitted. Every other class is never scoped. In every class `~` and the
/// agent's home are out, a write to a protected path is out, and running
/// repository code whose definition was changed in this conversation is out.
pub fn repo_scope(
    dialog: &Dialog,
    class: DialogClass,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> Result<(), NotScoped> {
    repo_scope_writes(dialog, class, scope, resolver).map(drop)
}

/// [`repo_scope`], and when scoped, the files (resolved) the action writes
/// or deletes: what the node adds to [`Scope::changed`] once it is approved.
pub fn repo_scope_writes(
    dialog: &Dialog,
    class: DialogClass,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> Result<Vec<PathBuf>, NotScoped> {
    scope_detail(dialog, class, scope, resolver).0
}

/// [`repo_scope_writes`], and the entries of [`Scope::changed`] that made a
/// run of repository code not routine (empty unless that is why).
pub(crate) fn scope_detail(
    dialog: &Dialog,
    class: DialogClass,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> (Result<Vec<PathBuf>, NotScoped>, Vec<PathBuf>) {
    let parsed = command_of(dialog).map(shell::parse);
    scope_detail_parsed(dialog, parsed.as_ref(), class, scope, resolver)
}

/// [`scope_detail`] with the dialog's command already parsed.
pub(crate) fn scope_detail_parsed(
    dialog: &Dialog,
    parsed: Option<&Result<shell::Script, shell::Refusal>>,
    class: DialogClass,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> (Result<Vec<PathBuf>, NotScoped>, Vec<PathBuf>) {
    let mode = match class_mode(dialog, class) {
        Ok(mode) => mode,
        Err(why) => return (Err(why), Vec::new()),
    };
    let ctx = Ctx::new(scope, resolver, mode);
    let mut result: Result<(), NotScoped> = Ok(());
    if matches!(class, DialogClass::FileWrite | DialogClass::Deletion) {
        result = paths_in_scope(dialog, &ctx);
    }
    if let (Ok(()), Some(script)) = (&result, parsed) {
        result = script_with(script, dialog.cwd.as_deref(), &ctx);
    }
    (result.map(|()| ctx.writes.take()), ctx.redefined.take())
}

fn command_of(dialog: &Dialog) -> Option<&str> {
    dialog.command.as_deref().filter(|c| !c.trim().is_empty())
}

/// Each class's own evidence, and the rules any command runs under.
fn class_mode(dialog: &Dialog, class: DialogClass) -> Result<Mode, NotScoped> {
    let cmd = command_of(dialog);
    // Each class's own evidence first; then any command, under that class's rules.
    let mode = match class {
        DialogClass::CommandExec => {
            if cmd.is_none() {
                return Err(no("no command to check"));
            }
            Mode::Command
        }
        DialogClass::FileWrite => {
            if dialog.paths.is_empty() {
                return Err(no("no target path to check"));
            }
            Mode::Command
        }
        DialogClass::Deletion => {
            if dialog.paths.is_empty() && cmd.is_none() {
                return Err(no("no target path to check"));
            }
            Mode::Deletion
        }
        DialogClass::NetworkAccess => {
            let text = dialog.action_text();
            if has_raw_network_tool(&text) || text.contains("git@") {
                return Err(no("ssh/nc-style network access is never scoped"));
            }
            let urls = find_urls(&text);
            if urls.is_empty() {
                return Err(no("no URL to check"));
            }
            if let Some(bad) = urls.iter().find(|u| !url_allowed(u)) {
                return Err(no(format!("{bad} is not an allowed host")));
            }
            Mode::Network
        }
        other => return Err(no(format!("{other} is never repo-scoped"))),
    };
    Ok(mode)
}
