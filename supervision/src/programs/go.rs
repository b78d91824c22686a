//! `go`: build, test, vet, format and describe packages of the module. Go's
//! flags are whole names (`-o x`, `--o=x`); the ones that name programs or
//! files that change the build (`-exec`, `-toolexec`, `-ldflags`,
//! `-gcflags`, `-overlay`, `-modfile`) are not allowlisted, and a package
//! with a version (`MODULE@latest`) is a download and install by another name.

use std::path::Path;

use super::{positionals, writer};
use crate::argv::{Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Data, Flag, Write};

/// Build and test flags the allowlisted subcommands share.
const FLAGS: &[Opt] = &[
    opt(&["-o"], Write),
    opt(&["-v"], Flag),
    opt(&["-x"], Flag),
    opt(&["-a"], Flag),
    opt(&["-race"], Flag),
    opt(&["-count"], Data),
    opt(&["-run"], Data),
    opt(&["-skip"], Data),
    opt(&["-timeout"], Data),
    opt(&["-short"], Flag),
    opt(&["-cover"], Flag),
    opt(&["-covermode"], Data),
    opt(&["-coverprofile"], Write),
    opt(&["-tags"], Data),
    opt(&["-p"], Data),
    opt(&["-parallel"], Data),
    opt(&["-failfast"], Flag),
    opt(&["-bench"], Data),
    opt(&["-benchmem"], Flag),
    opt(&["-benchtime"], Data),
    opt(&["-json"], Flag),
    opt(&["-trimpath"], Flag),
    opt(&["-mod"], Data),
    opt(&["-buildvcs"], Data),
    opt(&["-l"], Flag),
    opt(&["-n"], Flag),
    opt(&["-m"], Flag),
    opt(&["-f"], Data),
    opt(&["-e"], Flag),
    opt(&["-deps"], Flag),
    opt(&["-test"], Flag),
    opt(&["-all"], Flag),
];

const SUBCOMMANDS: &[&str] = &["build", "test", "vet", "fmt", "run", "list", "version", "doc"];

pub(super) fn judge(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let Some((sub, rest)) = args.split_first() else {
        return Err(no("go without a subcommand"));
    };
    if !SUBCOMMANDS.contains(&sub.text.as_ref()) {
        return Err(no(format!("go {} is not a routine subcommand", sub.text)));
    }
    let spec = Spec::whole(FLAGS);
    let parsed = parse("go", &spec, rest)?;
    for a in &parsed {
        if let crate::argv::Arg::Opt(o, Some(v)) = a
            && o.names[0] == "-mod"
            && !matches!(v.text.as_ref(), "readonly" | "vendor")
        {
            return Err(no(format!("go -mod={}: may change go.mod or download", v.text)));
        }
    }
    if let Some(w) = positionals(&parsed).find(|w| w.text.contains('@')) {
        return Err(no(format!(
            "go {} {}: a versioned package is downloaded and built (an install by another name)",
            sub.text, w.text
        )));
    }
    // Package patterns (`./...`), files and import paths are all checked as
    // paths the build may write: an import path resolves to a harmless name
    // in the worktree, a pattern or file outside it holds.
    let effects = writer(&format!("go {}", sub.text), &spec, rest, ctx, cwd)?;
    ctx.ran("go", &[sub.text.as_ref()], &effects.run_dir, effects.named);
    Ok(())
}
