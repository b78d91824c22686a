//! Searching (`grep`, `rg`) and printing lines (`sed -n`). A pattern is data;
//! every other positional word is a file read. Recursion that follows
//! symbolic links (`grep -R`, `rg -L`) is not allowlisted: a link inside the
//! worktree could lead the search anywhere.

use std::path::Path;

use super::positionals;
use crate::argv::{Arg, Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::paths::Access;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Data, Flag, OptData, Read};

const GREP: &[Opt] = &[
    opt(&["-E", "--extended-regexp"], Flag),
    opt(&["-F", "--fixed-strings"], Flag),
    opt(&["-G", "--basic-regexp"], Flag),
    opt(&["-P", "--perl-regexp"], Flag),
    opt(&["-e", "--regexp"], Data),
    opt(&["-f", "--file"], Read),
    opt(&["-i", "--ignore-case"], Flag),
    opt(&["--no-ignore-case"], Flag),
    opt(&["-v", "--invert-match"], Flag),
    opt(&["-w", "--word-regexp"], Flag),
    opt(&["-x", "--line-regexp"], Flag),
    opt(&["-c", "--count"], Flag),
    opt(&["--color", "--colour"], OptData),
    opt(&["-L", "--files-without-match"], Flag),
    opt(&["-l", "--files-with-matches"], Flag),
    opt(&["-m", "--max-count"], Data),
    opt(&["-o", "--only-matching"], Flag),
    opt(&["-q", "--quiet", "--silent"], Flag),
    opt(&["-s", "--no-messages"], Flag),
    opt(&["-b", "--byte-offset"], Flag),
    opt(&["-H", "--with-filename"], Flag),
    opt(&["-h", "--no-filename"], Flag),
    opt(&["-n", "--line-number"], Flag),
    opt(&["-T", "--initial-tab"], Flag),
    opt(&["-Z", "--null"], Flag),
    opt(&["-A", "--after-context"], Data),
    opt(&["-B", "--before-context"], Data),
    opt(&["-C", "--context"], Data),
    opt(&["-a", "--text"], Flag),
    opt(&["-I"], Flag),
    opt(&["-r", "--recursive"], Flag),
    opt(&["--include"], Data),
    opt(&["--exclude"], Data),
    opt(&["--exclude-dir"], Data),
    opt(&["-z", "--null-data"], Flag),
];

const RG: &[Opt] = &[
    opt(&["-e", "--regexp"], Data),
    opt(&["-f", "--file"], Read),
    opt(&["-F", "--fixed-strings"], Flag),
    opt(&["-i", "--ignore-case"], Flag),
    opt(&["-S", "--smart-case"], Flag),
    opt(&["-s", "--case-sensitive"], Flag),
    opt(&["-v", "--invert-match"], Flag),
    opt(&["-w", "--word-regexp"], Flag),
    opt(&["-x", "--line-regexp"], Flag),
    opt(&["-c", "--count"], Flag),
    opt(&["--count-matches"], Flag),
    opt(&["-l", "--files-with-matches"], Flag),
    opt(&["--files-without-match"], Flag),
    opt(&["--files"], Flag),
    opt(&["-m", "--max-count"], Data),
    opt(&["-o", "--only-matching"], Flag),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-n", "--line-number"], Flag),
    opt(&["-N", "--no-line-number"], Flag),
    opt(&["-H", "--with-filename"], Flag),
    opt(&["-I", "--no-filename"], Flag),
    opt(&["--heading"], Flag),
    opt(&["--no-heading"], Flag),
    opt(&["-A", "--after-context"], Data),
    opt(&["-B", "--before-context"], Data),
    opt(&["-C", "--context"], Data),
    opt(&["-g", "--glob"], Data),
    opt(&["--iglob"], Data),
    opt(&["-t", "--type"], Data),
    opt(&["-T", "--type-not"], Data),
    opt(&["--hidden"], Flag),
    opt(&["--no-ignore"], Flag),
    opt(&["-u", "--unrestricted"], Flag),
    opt(&["--max-depth", "-d"], Data),
    opt(&["--sort"], Data),
    opt(&["--color"], Data),
    opt(&["--json"], Flag),
    opt(&["--vimgrep"], Flag),
    opt(&["-U", "--multiline"], Flag),
    opt(&["-P", "--pcre2"], Flag),
    opt(&["-0", "--null"], Flag),
    opt(&["-a", "--text"], Flag),
    opt(&["-j", "--threads"], Data),
    opt(&["--trim"], Flag),
    opt(&["--column"], Flag),
    opt(&["-r", "--replace"], Data),
    opt(&["--stats"], Flag),
];

const SED: &[Opt] = &[
    opt(&["-n", "--quiet", "--silent"], Flag),
    opt(&["-E", "-r", "--regexp-extended"], Flag),
    opt(&["-z", "--null-data"], Flag),
    opt(&["-u", "--unbuffered"], Flag),
    opt(&["-s", "--separate"], Flag),
    opt(&["--posix"], Flag),
    opt(&["-e", "--expression"], Data),
];

/// `grep` and `rg` read files; `sed -n` only prints.
pub(super) fn judge(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = match prog {
        "grep" => Spec::gnu(GREP),
        "rg" => Spec::gnu(RG),
        _ => return sed(args, ctx, cwd),
    };
    let parsed = parse(prog, &spec, args)?;
    for arg in &parsed {
        if let Arg::Opt(o, Some(v)) = arg
            && o.val == Read
        {
            ctx.check(v, cwd, Access::Read)
                .map_err(|e| no(format!("{prog} {}: {e}", o.names[0])))?;
        }
    }
    let pattern_given = parsed.iter().any(|a| a.is("-e") || a.is("-f") || a.is("--files"));
    let mut words = positionals(&parsed);
    if !pattern_given {
        // The first positional word is the pattern.
        words.next();
    }
    for w in words {
        ctx.operand(w, cwd, Access::Read)?;
    }
    Ok(())
}

/// `sed -n` with scripts that only print (`sed::script_prints_only`); every
/// other positional word is a file it reads.
fn sed(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let parsed = parse("sed", &Spec::gnu(SED), args)?;
    if !parsed.iter().any(|a| a.is("-n")) {
        return Err(no("sed without -n may rewrite files"));
    }
    let mut scripts: Vec<&Word> = parsed
        .iter()
        .filter_map(|a| match a {
            Arg::Opt(o, Some(v)) if o.names[0] == "-e" => Some(v.as_ref()),
            _ => None,
        })
        .collect();
    let mut files = positionals(&parsed);
    if scripts.is_empty() {
        scripts.push(files.next().ok_or_else(|| no("sed without a script"))?);
    }
    if let Some(bad) = scripts.iter().find(|s| !crate::sed::script_prints_only(&s.text)) {
        return Err(no(format!("sed script {:?} does more than print", bad.text)));
    }
    for f in files {
        ctx.operand(f, cwd, Access::Read)?;
    }
    Ok(())
}
