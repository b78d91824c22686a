//! Repo scope: whether a dialog's action provably stays inside the agent's
//! worktree (or its other roots): the command allowlist and the per-class rules.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::class::{DialogClass, has_raw_network_tool};
use crate::dialog::Dialog;
use crate::paths::{PathResolver, Scope};
use crate::shell::{self, Segment, Word};
use crate::url::{find_urls, url_allowed};

/// Why an action is not repo-scoped, in words for the audit log and the human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotScoped(pub String);

impl fmt::Display for NotScoped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn no(why: impl Into<String>) -> NotScoped {
    NotScoped(why.into())
}

/// The allowlisted programs (seed 000's list plus the read-only `cd`, `echo`,
/// `pwd`, `head`, `tail`, `wc`). Each has further rules below.
pub const ALLOWED_PROGRAMS: &[&str] = &[
    "cargo", "bun", "npm", "pnpm", "yarn", "go", "make", "pytest", "rg", "grep", "ls", "cat", "tsc", "vitest",
    "eslint", "python", "python3", "sed", "git", "cd", "echo", "pwd", "head", "tail", "wc",
];

/// Git subcommands a routine command may use.
pub const GIT_SUBCOMMANDS: &[&str] = &["status", "diff", "log", "add", "commit", "show"];

const CARGO_SUBCOMMANDS: &[&str] = &[
    "build",
    "b",
    "check",
    "c",
    "test",
    "t",
    "run",
    "r",
    "clippy",
    "fmt",
    "doc",
    "bench",
    "tree",
    "metadata",
    "nextest",
    "fix",
    "version",
    "--version",
];
const JS_SUBCOMMANDS: &[&str] = &[
    "test",
    "t",
    "tst",
    "run",
    "run-script",
    "ls",
    "list",
    "lint",
    "build",
    "typecheck",
    "--version",
];
const GO_SUBCOMMANDS: &[&str] = &[
    "build",
    "test",
    "vet",
    "fmt",
    "run",
    "list",
    "version",
    "doc",
    "--version",
];

/// Which extra programs a class's scope check admits on top of the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Command,
    Deletion,
    Network,
}

struct Ctx<'a> {
    scope: &'a Scope,
    resolver: &'a dyn PathResolver,
    mode: Mode,
}

impl Ctx<'_> {
    fn path(&self, word: &Word, cwd: &Path) -> Result<PathBuf, NotScoped> {
        self.scope
            .check(&word.text, word.tilde, cwd, self.resolver)
            .map_err(NotScoped)
    }

    fn path_str(&self, raw: &str, cwd: &Path) -> Result<PathBuf, NotScoped> {
        self.scope.check(raw, false, cwd, self.resolver).map_err(NotScoped)
    }

    /// Every argument is treated as a possible path: a bare word, an
    /// option's `=value`, an `@file`, the value of `name=value`. Option
    /// clusters that carry a path glued on (`-o/tmp/x`) cannot be read and are refused.
    fn args(&self, args: &[Word], cwd: &Path) -> Result<(), NotScoped> {
        for arg in args {
            self.arg(arg, cwd)?;
        }
        Ok(())
    }

    fn arg(&self, arg: &Word, cwd: &Path) -> Result<(), NotScoped> {
        let text = arg.text.as_str();
        if text.is_empty() || text == "-" || text == "--" {
            return Ok(());
        }
        if arg.tilde {
            return self.path(arg, cwd).map(drop);
        }
        if self.mode == Mode::Network && text.contains("://") {
            return if url_allowed(text) {
                Ok(())
            } else {
                Err(no(format!("{text} is not an allowed host")))
            };
        }
        if let Some(file) = text.strip_prefix('@') {
            self.path_str(file, cwd)?;
        }
        if text.starts_with('-') {
            return match text.split_once('=') {
                Some((_, value)) => self.arg(
                    &Word {
                        text: value.to_string(),
                        tilde: false,
                    },
                    cwd,
                ),
                None if text.contains('/') => Err(no(format!("option {text} carries a path that cannot be checked"))),
                None => Ok(()),
            };
        }
        if let Some((_, value)) = text.split_once('=') {
            self.arg(
                &Word {
                    text: value.to_string(),
                    tilde: false,
                },
                cwd,
            )?;
        }
        self.path(arg, cwd).map(drop)
    }
}

fn forbid(args: &[Word], prog: &str, options: &[&str]) -> Result<(), NotScoped> {
    for arg in args {
        let name = arg.text.split('=').next().unwrap_or_default();
        if options.contains(&name) {
            return Err(no(format!("{prog} {name} can run another program")));
        }
    }
    Ok(())
}

/// The first argument that is not an option; failing that, `--version` when
/// the arguments ask for the version.
fn subcommand(args: &[Word]) -> Option<&str> {
    args.iter()
        .find(|w| !w.text.starts_with('-'))
        .map(|w| w.text.as_str())
        .or_else(|| {
            args.iter()
                .any(|w| matches!(w.text.as_str(), "--version" | "-V"))
                .then_some("--version")
        })
}

fn require_subcommand(prog: &str, args: &[Word], allowed: &[&str]) -> Result<(), NotScoped> {
    match subcommand(args) {
        Some(sub) if allowed.contains(&sub) => Ok(()),
        Some(sub) => Err(no(format!("{prog} {sub} is not a routine subcommand"))),
        None => Err(no(format!("{prog} without a subcommand"))),
    }
}

/// `sed -n` scripts that only print: addresses (`12`, `$`, `/re/`, ranges) then `p` or `=`.
fn sed_script_prints_only(script: &str) -> bool {
    let mut chars = script.chars().peekable();
    let skip_ws = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
    };
    let address = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> bool {
        match chars.peek() {
            Some(c) if c.is_ascii_digit() => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                true
            }
            Some('$') => {
                chars.next();
                true
            }
            Some('/') => {
                chars.next();
                loop {
                    match chars.next() {
                        None | Some('\n') => return false,
                        Some('\\') => {
                            chars.next();
                        }
                        Some('/') => return true,
                        Some(_) => {}
                    }
                }
            }
            _ => true,
        }
    };
    loop {
        skip_ws(&mut chars);
        if chars.peek().is_none() {
            return true;
        }
        if !address(&mut chars) {
            return false;
        }
        if chars.peek() == Some(&',') {
            chars.next();
            if chars.peek() == Some(&'+') {
                chars.next();
            }
            if !address(&mut chars) {
                return false;
            }
        }
        skip_ws(&mut chars);
        match chars.next() {
            Some('p' | '=') => {}
            _ => return false,
        }
        skip_ws(&mut chars);
        match chars.next() {
            None => return true,
            Some(';' | '\n') => {}
            Some(_) => return false,
        }
    }
}

fn sed(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let mut quiet = false;
    let mut scripts: Vec<&Word> = Vec::new();
    let mut positional: Vec<&Word> = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        match arg.text.as_str() {
            "-n" | "--quiet" | "--silent" => quiet = true,
            "-E" | "-r" | "--regexp-extended" | "-z" | "--null-data" | "-u" | "--unbuffered" | "--posix" => {}
            flag @ ("-e" | "--expression" | "-ne" | "-en") => {
                quiet |= flag.contains('n');
                scripts.push(iter.next().ok_or_else(|| no("sed -e without a script"))?);
            }
            other if other.starts_with('-') && other != "-" => {
                return Err(no(format!("sed {other} is not a read-only mode")));
            }
            _ => positional.push(arg),
        }
    }
    if !quiet {
        return Err(no("sed without -n may rewrite files"));
    }
    if scripts.is_empty() {
        if positional.is_empty() {
            return Err(no("sed without a script"));
        }
        scripts.push(positional.remove(0));
    }
    if let Some(bad) = scripts.iter().find(|s| !sed_script_prints_only(&s.text)) {
        return Err(no(format!("sed script {:?} does more than print", bad.text)));
    }
    for file in positional {
        ctx.arg(file, cwd)?;
    }
    Ok(())
}

fn git(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let mut git_cwd = cwd.to_path_buf();
    let mut i = 0;
    while let Some(arg) = args.get(i) {
        match arg.text.as_str() {
            "-C" => {
                let dir = args.get(i + 1).ok_or_else(|| no("git -C without a directory"))?;
                git_cwd = ctx.path(dir, &git_cwd).map_err(|e| no(format!("git -C: {e}")))?;
                i += 2;
            }
            "--no-pager" | "-P" | "--no-optional-locks" => i += 1,
            other if other.starts_with('-') => return Err(no(format!("git {other} changes what git runs or where"))),
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return Err(no("git without a subcommand"));
    };
    let sub_ok = GIT_SUBCOMMANDS.contains(&sub.text.as_str())
        || (ctx.mode == Mode::Deletion && matches!(sub.text.as_str(), "rm" | "clean"));
    if !sub_ok {
        return Err(no(format!("git {} is not a routine subcommand", sub.text)));
    }
    let rest = &args[i + 1..];
    for arg in rest {
        let name = arg.text.split('=').next().unwrap_or_default();
        if matches!(
            name,
            "--ext-diff" | "--textconv" | "--exec" | "--upload-pack" | "--git-dir" | "--work-tree"
        ) {
            return Err(no(format!("git {name} can run another program or move the repository")));
        }
    }
    ctx.args(rest, &git_cwd)
}

/// Programs for which a `-` argument is just "read text from standard input".
const TEXT_READERS: &[&str] = &["cat", "grep", "rg", "head", "tail", "wc", "sed", "echo"];

/// A `-` argument (`-`, `-f-`, `--file=-`) for a program that could take its
/// program text from standard input (`echo '...' | make -f -`).
fn reads_code_from_stdin(prog: &str, args: &[Word]) -> bool {
    !TEXT_READERS.contains(&prog)
        && args.iter().any(|a| {
            let t = a.text.as_str();
            t == "-"
                || t.ends_with("=-")
                || (t.len() > 2 && t.starts_with('-') && !t.starts_with("--") && t.ends_with('-'))
        })
}

fn program(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    if reads_code_from_stdin(prog, args) {
        return Err(no(format!("{prog} would read its input program from standard input")));
    }
    match prog {
        "cargo" => {
            forbid(args, prog, &["--config", "-Z"])?;
            if args.iter().any(|a| a.text.starts_with("-Z")) {
                return Err(no("cargo -Z enables unstable behaviour"));
            }
            let args = match args.first() {
                Some(first) if first.text.starts_with('+') => &args[1..],
                _ => args,
            };
            require_subcommand(prog, args, CARGO_SUBCOMMANDS)?;
            ctx.args(args, cwd)
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            forbid(
                args,
                prog,
                &["--script-shell", "--node-options", "--shell", "--call", "-c"],
            )?;
            require_subcommand(prog, args, JS_SUBCOMMANDS)?;
            ctx.args(args, cwd)
        }
        "go" => {
            forbid(
                args,
                prog,
                &["-exec", "--exec", "-toolexec", "--toolexec", "-vettool", "--vettool"],
            )?;
            require_subcommand(prog, args, GO_SUBCOMMANDS)?;
            ctx.args(args, cwd)
        }
        "make" => {
            forbid(args, prog, &["--eval", "-E"])?;
            if let Some(var) = args.iter().find(|a| !a.text.starts_with('-') && a.text.contains('=')) {
                return Err(no(format!("make {} overrides a variable", var.text)));
            }
            ctx.args(args, cwd)
        }
        "rg" => {
            forbid(args, prog, &["--pre", "--hostname-bin"])?;
            ctx.args(args, cwd)
        }
        "python" | "python3" => match args {
            [m, pytest, rest @ ..] if m.text == "-m" && pytest.text == "pytest" => ctx.args(rest, cwd),
            _ => Err(no(format!("{prog} is routine only as {prog} -m pytest"))),
        },
        "sed" => sed(args, ctx, cwd),
        "git" => git(args, ctx, cwd),
        // echo's words are data, not files; only its redirections matter.
        "echo" => Ok(()),
        "pytest" | "grep" | "ls" | "cat" | "tsc" | "vitest" | "eslint" | "pwd" | "head" | "tail" | "wc" => {
            ctx.args(args, cwd)
        }
        "rm" | "unlink" | "rmdir" if ctx.mode == Mode::Deletion => ctx.args(args, cwd),
        "curl" | "wget" if ctx.mode == Mode::Network => {
            forbid(args, prog, &["-K", "--config", "-e", "--execute"])?;
            ctx.args(args, cwd)
        }
        "env" => Err(no("env runs another program")),
        "xargs" => Err(no("xargs runs another program")),
        other => Err(no(format!("{other} is not an allowlisted program"))),
    }
}

fn segment(seg: &Segment, ctx: &Ctx<'_>, cwd: &mut PathBuf) -> Result<(), NotScoped> {
    let Some((first, args)) = seg.words.split_first() else {
        return Err(no("an empty command"));
    };
    let prog = first.text.as_str();
    if first.tilde || prog.contains('/') {
        return Err(no(format!("{prog} is a program named by path")));
    }
    if prog.contains('=') {
        return Err(no(format!("{prog} sets an environment variable for the command")));
    }
    if !prog.is_ascii() {
        return Err(no(format!("{prog} is not an allowlisted program (non-ASCII name)")));
    }
    for redirect in &seg.redirects {
        let target = &redirect.target;
        if !target.tilde && matches!(target.text.as_str(), "/dev/null" | "/dev/stdout" | "/dev/stderr") {
            continue;
        }
        ctx.path(target, cwd).map_err(|e| no(format!("redirection: {e}")))?;
    }
    if prog == "cd" {
        let dir = match args {
            [] => Word {
                text: "~".into(),
                tilde: true,
            },
            [dir] if dir.text != "-" => dir.clone(),
            _ => return Err(no("cd with options or a previous directory")),
        };
        *cwd = ctx.path(&dir, cwd).map_err(|e| no(format!("cd: {e}")))?;
        return Ok(());
    }
    program(prog, args, ctx, cwd)
}

fn command_with(command: &str, cwd: Option<&str>, ctx: &Ctx<'_>) -> Result<(), NotScoped> {
    let segments = shell::split(command).map_err(|r| no(format!("the command uses {r}")))?;
    if segments.is_empty() {
        return Err(no("an empty command"));
    }
    let mut dir = ctx.scope.working_dir(cwd, ctx.resolver).map_err(NotScoped)?;
    for seg in &segments {
        segment(seg, ctx, &mut dir)?;
    }
    Ok(())
}

/// Whether `command`, run from `cwd` (the worktree when `None`), is provably
/// inside `scope`: every segment (split on `&&`, `||`, `;`, `|`, `&`, newline)
/// is an allowlisted program used in a routine way, and every argument and
/// redirection target resolves inside a root (`/dev/null`, `/dev/stdout` and
/// `/dev/stderr` are allowed as redirection targets). Programs named by path, `env`, `xargs`, variable
/// assignments, `$(...)`, backticks, process substitution, globs and
/// non-ASCII program names are never in scope.
pub fn command_in_scope(
    command: &str,
    cwd: Option<&str>,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> Result<(), NotScoped> {
    command_with(
        command,
        cwd,
        &Ctx {
            scope,
            resolver,
            mode: Mode::Command,
        },
    )
}

fn paths_in_scope(dialog: &Dialog, scope: &Scope, resolver: &dyn PathResolver) -> Result<(), NotScoped> {
    let cwd = scope.working_dir(dialog.cwd.as_deref(), resolver).map_err(NotScoped)?;
    for p in &dialog.paths {
        scope.check(p, p.starts_with('~'), &cwd, resolver).map_err(NotScoped)?;
    }
    Ok(())
}

/// Whether the dialog's action is repo-scoped for its class (seed 000):
/// `command_exec` by its command; `file_write` by its target paths (and its
/// command, if it has one); `deletion` by its command (with `rm`, `unlink`,
/// `rmdir`, `git rm`, `git clean` admitted) and paths; `network_access` when
/// every URL is to an allowed host, there is at least one, no ssh/nc-style tool
/// is named, and any command passes the command rules with `curl`/`wget`
/// admitted. Every other class is never scoped.
pub fn repo_scope(
    dialog: &Dialog,
    class: DialogClass,
    scope: &Scope,
    resolver: &dyn PathResolver,
) -> Result<(), NotScoped> {
    let cmd = dialog.command.as_deref().filter(|c| !c.trim().is_empty());
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
            paths_in_scope(dialog, scope, resolver)?;
            Mode::Command
        }
        DialogClass::Deletion => {
            if dialog.paths.is_empty() && cmd.is_none() {
                return Err(no("no target path to check"));
            }
            paths_in_scope(dialog, scope, resolver)?;
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
    cmd.map_or(Ok(()), |c| {
        command_with(c, dialog.cwd.as_deref(), &Ctx { scope, resolver, mode })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::fake::FakeFs;

    #[test]
    fn sed_scripts() {
        let cases: &[(&str, bool)] = &[
            ("1,20p", true),
            ("5p", true),
            ("$p", true),
            ("10,$p", true),
            ("/fn main/,/^}/p", true),
            ("/a\\/b/p;3p", true),
            ("1,+3p", true),
            ("=", true),
            ("1w /tmp/x", false),
            ("1e id", false),
            ("s/a/b/", false),
            ("1r /etc/passwd", false),
            ("{p}", false),
            ("/unterminated", false),
        ];
        for (script, want) in cases {
            assert_eq!(sed_script_prints_only(script), *want, "{script}");
        }
    }

    #[test]
    fn cd_moves_the_working_directory() {
        let fs = FakeFs::default();
        let scope = Scope::new("/w");
        assert!(command_in_scope("cd sub && cat ../Cargo.toml", None, &scope, &fs).is_ok());
        assert!(command_in_scope("cd sub && cat ../../etc/passwd", None, &scope, &fs).is_err());
        assert!(command_in_scope("cd /etc && cat passwd", None, &scope, &fs).is_err());
        assert!(command_in_scope("cd - && ls", None, &scope, &fs).is_err());
    }
}
