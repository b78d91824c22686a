//! `pytest` (also as `python -m pytest`): tests by node id, with the options
//! known to be safe. `-p` (load a plugin), `-o`/`-c` (override or replace
//! the configuration), `--rootdir`, `--confcutdir` and `--basetemp` (a
//! directory pytest empties first) are not allowlisted, nor an `@file` of
//! arguments.

use std::path::Path;

use super::writer;
use crate::argv::{Opt, Spec, Val, opt};
use crate::ctx::Ctx;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Data, Flag, OptData, Write};

const PYTEST: &[Opt] = &[
    opt(&["-x", "--exitfirst"], Flag),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-s"], Flag),
    opt(&["--capture"], Data),
    opt(&["-k"], Data),
    opt(&["-m"], Data),
    opt(&["--tb"], Data),
    opt(&["-l", "--showlocals"], Flag),
    opt(&["-r"], Data),
    opt(&["--lf", "--last-failed"], Flag),
    opt(&["--ff", "--failed-first"], Flag),
    opt(&["--nf", "--new-first"], Flag),
    opt(&["--sw", "--stepwise"], Flag),
    opt(&["--maxfail"], Data),
    opt(&["--durations"], Data),
    opt(&["--co", "--collect-only"], Flag),
    opt(&["--no-header"], Flag),
    opt(&["--no-summary"], Flag),
    opt(&["--junitxml", "--junit-xml"], Write),
    opt(&["--strict-markers"], Flag),
    opt(&["--disable-warnings"], Flag),
    opt(&["--color"], Data),
    opt(&["--doctest-modules"], Flag),
    opt(&["-n", "--numprocesses"], Data),
    opt(&["--version", "-V"], Flag),
    opt(&["-h", "--help"], Flag),
    opt(&["--setup-show"], Flag),
    opt(&["--runxfail"], Flag),
    opt(&["--count"], OptData),
];

pub(super) fn judge(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let args = match prog {
        "pytest" => args,
        _ => match args {
            [m, pytest, rest @ ..] if m.text == "-m" && pytest.text == "pytest" => rest,
            _ => return Err(no(format!("{prog} is routine only as {prog} -m pytest"))),
        },
    };
    // A node id (`tests/test_api.py::test_x`) names its file before `::`.
    let words: Vec<Word> = args
        .iter()
        .map(|w| match w.text.split_once("::") {
            Some((file, _)) if !w.text.starts_with('-') => Word {
                text: file.into(),
                ..w.clone()
            },
            _ => w.clone(),
        })
        .collect();
    let spec = Spec::gnu(PYTEST);
    let effects = writer("pytest", &spec, &words, ctx, cwd)?;
    // pytest collects through symbolic links from each directory it is
    // given (or from where it runs): a file it is given is only read.
    let parsed = crate::argv::parse("pytest", &spec, &words)?;
    let mut roots: Vec<std::path::PathBuf> = super::positionals(&parsed)
        .filter(|w| !w.text.ends_with(".py"))
        .map(|w| effects.run_dir.join(&*w.text))
        .filter_map(|p| crate::paths::resolve_path(&p, ctx.resolver))
        .collect();
    if super::positionals(&parsed).next().is_none() {
        roots.push(effects.run_dir.clone());
    }
    ctx.walk_stays_inside("pytest", &roots)?;
    ctx.ran(prog, &[], &effects.run_dir, effects.named);
    Ok(())
}
