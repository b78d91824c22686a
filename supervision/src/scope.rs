//! Repo scope: whether a dialog's action provably stays inside the agent's
//! worktree, out of the agent's home and off protected paths: the command
//! allowlist, the per-class rules and the repository-code rule (`runs`).

use std::cell::RefCell;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::class::{DialogClass, has_raw_network_tool};
use crate::dialog::Dialog;
use crate::flags::{CONFIG_OPTIONS, DIRECTORY_OPTIONS, OUTPUT_OPTIONS, option_values};
use crate::paths::{Access, PathResolver, Scope, resolve_path};
use crate::runs::{Runner, definition_for, names_read_in_cwd, runner_of};
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

/// A program run that executes repository code: which runner, from where,
/// and any definition file named on its command line (`make -f x`).
struct Run {
    runner: Runner,
    prog: String,
    cwd: PathBuf,
    named: Vec<PathBuf>,
}

struct Ctx<'a> {
    scope: &'a Scope,
    resolver: &'a dyn PathResolver,
    mode: Mode,
    /// What the command or dialog writes (resolved), in order.
    writes: RefCell<Vec<PathBuf>>,
    /// The repository-code runs it makes.
    runs: RefCell<Vec<Run>>,
    /// Entries of `scope.changed` that made a run not routine.
    redefined: RefCell<Vec<PathBuf>>,
}

impl<'a> Ctx<'a> {
    fn new(scope: &'a Scope, resolver: &'a dyn PathResolver, mode: Mode) -> Ctx<'a> {
        Ctx {
            scope,
            resolver,
            mode,
            writes: RefCell::new(Vec::new()),
            runs: RefCell::new(Vec::new()),
            redefined: RefCell::new(Vec::new()),
        }
    }

    fn path(&self, word: &Word, cwd: &Path, access: Access) -> Result<PathBuf, NotScoped> {
        let resolved = self
            .scope
            .check(&word.text, word.tilde, cwd, access, self.resolver)
            .map_err(NotScoped)?;
        if access == Access::Write {
            self.writes.borrow_mut().push(resolved.clone());
        }
        Ok(resolved)
    }

    fn path_str(&self, raw: &str, cwd: &Path, access: Access) -> Result<PathBuf, NotScoped> {
        let word = Word {
            text: raw.to_string(),
            tilde: false,
        };
        self.path(&word, cwd, access)
    }

    /// Every argument is treated as a possible path: a bare word, an
    /// option's `=value`, an `@file`, the value of `name=value`. Option
    /// clusters that carry a path glued on (`-o/tmp/x`) cannot be read and are refused.
    fn args(&self, args: &[Word], cwd: &Path, access: Access) -> Result<(), NotScoped> {
        for arg in args {
            self.arg(arg, cwd, access)?;
        }
        Ok(())
    }

    fn arg(&self, arg: &Word, cwd: &Path, access: Access) -> Result<(), NotScoped> {
        let text = arg.text.as_str();
        if text.is_empty() || text == "-" || text == "--" {
            return Ok(());
        }
        if arg.tilde {
            return self.path(arg, cwd, access).map(drop);
        }
        if self.mode == Mode::Network && text.contains("://") {
            return if url_allowed(text) {
                Ok(())
            } else {
                Err(no(format!("{text} is not an allowed host")))
            };
        }
        if let Some(file) = text.strip_prefix('@') {
            self.path_str(file, cwd, access)?;
        }
        if text.starts_with('-') {
            return match text.split_once('=') {
                Some((_, value)) => self.arg(
                    &Word {
                        text: value.to_string(),
                        tilde: false,
                    },
                    cwd,
                    access,
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
                access,
            )?;
        }
        self.path(arg, cwd, access).map(drop)
    }

    /// The arguments of a program that may write: none may name a protected
    /// path, nor may it run inside one; the values of its output options are
    /// recorded as written.
    fn writer_args(&self, prog: &str, args: &[Word], cwd: &Path) -> Result<(), NotScoped> {
        if let Some(p) = self.scope.protected(cwd, self.resolver) {
            return Err(no(format!(
                "{prog} would run inside {}, a protected path ({}: {})",
                cwd.display(),
                p.owner,
                p.reason
            )));
        }
        for value in option_values(OUTPUT_OPTIONS, prog, args) {
            if matches!(value.text.as_str(), "-" | "/dev/null" | "/dev/stdout" | "/dev/stderr") {
                continue;
            }
            self.path(&value, cwd, Access::Write)
                .map_err(|e| no(format!("{prog} output: {e}")))?;
        }
        self.args(args, cwd, Access::MayWrite)
    }

    /// Records that `prog` runs repository code from `cwd`.
    fn ran(&self, prog: &str, args: &[Word], cwd: &Path, named: Vec<PathBuf>) {
        let words: Vec<&str> = args.iter().map(|w| w.text.as_str()).collect();
        if let Some(runner) = runner_of(prog, &words) {
            self.runs.borrow_mut().push(Run {
                runner,
                prog: prog.to_string(),
                cwd: cwd.to_path_buf(),
                named,
            });
        }
    }

    /// The repository-code rule: no run may execute a definition (see `runs`)
    /// that the conversation changed before or that this command writes.
    fn check_runs(&self) -> Result<(), NotScoped> {
        let Some(root) = self.scope.root(self.resolver) else {
            return Err(no("the worktree cannot be resolved"));
        };
        let writes = self.writes.borrow();
        let changed: Vec<&PathBuf> = self.scope.changed.iter().chain(writes.iter()).collect();
        let mut first: Option<String> = None;
        let mut hit = |path: &PathBuf, why: String| {
            first.get_or_insert(why);
            let mut redefined = self.redefined.borrow_mut();
            if self.scope.changed.contains(path) && !redefined.contains(path) {
                redefined.push(path.clone());
            }
        };
        for run in self.runs.borrow().iter() {
            let prog = &run.prog;
            for path in &changed {
                let Ok(rel) = path.strip_prefix(&root) else {
                    continue;
                };
                if let Some(def) = definition_for(rel, run.runner) {
                    let why = format!(
                        "{prog} runs repository code and the agent changed {} in this conversation ({}): a \
                         human decides whether to run it",
                        rel.display(),
                        def.reason
                    );
                    hit(path, why);
                }
            }
            let mut read: Vec<PathBuf> = run.named.clone();
            read.extend(names_read_in_cwd(run.runner).filter_map(|n| resolve_path(&run.cwd.join(n), self.resolver)));
            for r in read {
                if let Some(path) = changed.iter().find(|c| **c == &r) {
                    let why = format!(
                        "{prog} reads {}, which the agent changed in this conversation: a human decides whether \
                         to run it",
                        r.display()
                    );
                    hit(path, why);
                }
            }
        }
        first.map_or(Ok(()), |why| Err(no(why)))
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
    if let Some(bad) = scripts.iter().find(|s| !crate::sed::script_prints_only(&s.text)) {
        return Err(no(format!("sed script {:?} does more than print", bad.text)));
    }
    for file in positional {
        ctx.arg(file, cwd, Access::Read)?;
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
                git_cwd = ctx
                    .path(dir, &git_cwd, Access::Read)
                    .map_err(|e| no(format!("git -C: {e}")))?;
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
    // Pathspecs are read (add and commit copy them into git's own store);
    // `--output` writes, `git rm` and `git clean` delete.
    for value in option_values(OUTPUT_OPTIONS, "git", rest) {
        ctx.path(&value, &git_cwd, Access::Write)
            .map_err(|e| no(format!("git output: {e}")))?;
    }
    let access = if matches!(sub.text.as_str(), "rm" | "clean") {
        Access::Write
    } else {
        Access::Read
    };
    ctx.args(rest, &git_cwd, access)?;
    // `git commit` runs the repository's hooks, which may call anything.
    ctx.ran("git", &args[i..], &git_cwd, Vec::new());
    Ok(())
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

/// Runs the per-program rules, then records a repository-code run.
fn program(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    if reads_code_from_stdin(prog, args) {
        return Err(no(format!("{prog} would read its input program from standard input")));
    }
    if prog == "git" {
        return git(args, ctx, cwd);
    }
    program_rules(prog, args, ctx, cwd)?;
    let mut run_cwd = cwd.to_path_buf();
    if prog == "make"
        && let Some(dir) = option_values(DIRECTORY_OPTIONS, "make", args).last()
    {
        run_cwd = ctx.path(dir, cwd, Access::MayWrite)?;
    }
    let mut named = Vec::new();
    for value in option_values(CONFIG_OPTIONS, prog, args) {
        named.push(ctx.path(&value, &run_cwd, Access::MayWrite)?);
    }
    ctx.ran(prog, args, &run_cwd, named);
    Ok(())
}

fn program_rules(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
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
            ctx.writer_args(prog, args, cwd)
        }
        "npm" | "pnpm" | "yarn" | "bun" => {
            forbid(
                args,
                prog,
                &["--script-shell", "--node-options", "--shell", "--call", "-c"],
            )?;
            require_subcommand(prog, args, JS_SUBCOMMANDS)?;
            ctx.writer_args(prog, args, cwd)
        }
        "go" => {
            forbid(
                args,
                prog,
                &["-exec", "--exec", "-toolexec", "--toolexec", "-vettool", "--vettool"],
            )?;
            require_subcommand(prog, args, GO_SUBCOMMANDS)?;
            ctx.writer_args(prog, args, cwd)
        }
        "make" => {
            forbid(args, prog, &["--eval", "-E"])?;
            if let Some(var) = args.iter().find(|a| !a.text.starts_with('-') && a.text.contains('=')) {
                return Err(no(format!("make {} overrides a variable", var.text)));
            }
            ctx.writer_args(prog, args, cwd)
        }
        "rg" => {
            forbid(args, prog, &["--pre", "--hostname-bin"])?;
            ctx.args(args, cwd, Access::Read)
        }
        "python" | "python3" => match args {
            [m, pytest, rest @ ..] if m.text == "-m" && pytest.text == "pytest" => ctx.writer_args(prog, rest, cwd),
            _ => Err(no(format!("{prog} is routine only as {prog} -m pytest"))),
        },
        "sed" => sed(args, ctx, cwd),
        // echo's words are data, not files; only its redirections matter.
        "echo" => Ok(()),
        "pytest" | "tsc" | "vitest" | "eslint" => ctx.writer_args(prog, args, cwd),
        "grep" | "ls" | "cat" | "pwd" | "head" | "tail" | "wc" => ctx.args(args, cwd, Access::Read),
        "rm" | "unlink" | "rmdir" if ctx.mode == Mode::Deletion => ctx.args(args, cwd, Access::Write),
        "curl" | "wget" if ctx.mode == Mode::Network => {
            forbid(args, prog, &["-K", "--config", "-e", "--execute"])?;
            let names_from_url = if prog == "curl" {
                args.iter().any(|a| {
                    matches!(
                        a.text.as_str(),
                        "--remote-name" | "--remote-name-all" | "--remote-header-name"
                    ) || (a.text.starts_with('-') && !a.text.starts_with("--") && a.text.contains(['O', 'J']))
                })
            } else {
                // wget names the file after the URL unless -O gives it (its -o is the log).
                let named = args
                    .iter()
                    .any(|a| a.text.starts_with("-O") || a.text.starts_with("--output-document"));
                !named
                    || args
                        .iter()
                        .any(|a| a.text.starts_with("-P") || a.text.starts_with("--directory-prefix"))
            };
            if names_from_url {
                return Err(no(format!("{prog} names the file it writes after the URL")));
            }
            ctx.writer_args(prog, args, cwd)
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
        let access = if redirect.write { Access::Write } else { Access::Read };
        ctx.path(target, cwd, access)
            .map_err(|e| no(format!("redirection: {e}")))?;
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
        *cwd = ctx.path(&dir, cwd, Access::Read).map_err(|e| no(format!("cd: {e}")))?;
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
    ctx.check_runs()
}

/// Whether `command`, run from `cwd` (the worktree when `None`), is provably
/// inside `scope`: every segment (split on `&&`, `||`, `;`, `|`, `&`, newline)
/// is an allowlisted program used in a routine way; every argument and
/// redirection target resolves inside the worktree and outside the agent's
/// home (`/dev/null`, `/dev/stdout` and `/dev/stderr` are allowed as
/// redirection targets); nothing it writes, and nothing a program that may
/// write is pointed at or runs in, is a protected path; and no repository
/// code it runs was redefined in this conversation. Programs named by path,
/// `env`, `xargs`, variable assignments, `$(...)`, backticks, process
/// substitution, globs and non-ASCII program names are never in scope.
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
            text: p.clone(),
            tilde: p.starts_with('~'),
        };
        ctx.path(&word, &cwd, Access::Write)?;
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
    let mode = match class_mode(dialog, class) {
        Ok(mode) => mode,
        Err(why) => return (Err(why), Vec::new()),
    };
    let ctx = Ctx::new(scope, resolver, mode);
    let mut result = Ok(());
    if matches!(class, DialogClass::FileWrite | DialogClass::Deletion) {
        result = paths_in_scope(dialog, &ctx);
    }
    if let (Ok(()), Some(cmd)) = (&result, command_of(dialog)) {
        result = command_with(cmd, dialog.cwd.as_deref(), &ctx);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::fake::FakeFs;

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
