//! `make`: targets by name, with the options known to be safe. `-E`/`--eval`
//! (text to evaluate), `-e` (the environment overrides the makefile), `-p`
//! (prints the database: the whole environment), variable overrides on the
//! command line and a makefile read from standard input are not; `-f` names
//! a makefile (a definition) and `-C` the directory make reads its files from.

use std::path::Path;

use super::{positionals, writer};
use crate::argv::{Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Config, Count, Dir, Flag, OptData};

const MAKE: &[Opt] = &[
    opt(&["-j", "--jobs"], Count),
    opt(&["-k", "--keep-going"], Flag),
    opt(&["-S", "--no-keep-going", "--stop"], Flag),
    opt(&["-s", "--silent", "--quiet"], Flag),
    opt(&["--no-silent"], Flag),
    opt(&["-C", "--directory"], Dir),
    opt(&["-f", "--file", "--makefile"], Config),
    opt(&["-B", "--always-make"], Flag),
    opt(&["-n", "--just-print", "--dry-run", "--recon"], Flag),
    opt(&["-w", "--print-directory"], Flag),
    opt(&["--no-print-directory"], Flag),
    opt(&["-O", "--output-sync"], OptData),
    opt(&["-r", "--no-builtin-rules"], Flag),
    opt(&["-R", "--no-builtin-variables"], Flag),
    opt(&["-i", "--ignore-errors"], Flag),
    opt(&["-v", "--version"], Flag),
];

pub(super) fn judge(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = Spec::gnu(MAKE);
    let parsed = parse("make", &spec, args)?;
    if let Some(var) = positionals(&parsed).find(|w| w.text.contains('=')) {
        return Err(no(format!("make {} overrides a variable", var.text)));
    }
    let effects = writer("make", &spec, args, ctx, cwd)?;
    ctx.ran("make", &[], &effects.run_dir, effects.named);
    Ok(())
}
