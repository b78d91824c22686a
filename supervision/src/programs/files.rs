//! Reading and listing files (`cat`, `head`, `tail`, `wc`, `ls`, `pwd`,
//! `echo`), and the two classes that admit more: deletion (`rm`, `unlink`,
//! `rmdir`) and network access (`curl`, `wget` to allowed hosts).

use std::path::Path;

use super::{option_effects, positionals};
use crate::argv::{Arg, Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::paths::Access;
use crate::reason::{NotScoped, no};
use crate::shell::Word;
use crate::url::url_allowed;

use Val::{Data, Flag, OptData, Write};

const CAT: &[Opt] = &[
    opt(&["-A", "--show-all"], Flag),
    opt(&["-b", "--number-nonblank"], Flag),
    opt(&["-e"], Flag),
    opt(&["-E", "--show-ends"], Flag),
    opt(&["-n", "--number"], Flag),
    opt(&["-s", "--squeeze-blank"], Flag),
    opt(&["-t"], Flag),
    opt(&["-T", "--show-tabs"], Flag),
    opt(&["-u"], Flag),
    opt(&["-v", "--show-nonprinting"], Flag),
];

const HEAD: &[Opt] = &[
    opt(&["-n", "--lines"], Data),
    opt(&["-c", "--bytes"], Data),
    opt(&["-q", "--quiet", "--silent"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-z", "--zero-terminated"], Flag),
];

const TAIL: &[Opt] = &[
    opt(&["-n", "--lines"], Data),
    opt(&["-c", "--bytes"], Data),
    opt(&["-q", "--quiet", "--silent"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-z", "--zero-terminated"], Flag),
    opt(&["-f"], Flag),
    opt(&["--follow"], OptData),
    opt(&["-F"], Flag),
    opt(&["--retry"], Flag),
    opt(&["-s", "--sleep-interval"], Data),
];

const WC: &[Opt] = &[
    opt(&["-c", "--bytes"], Flag),
    opt(&["-m", "--chars"], Flag),
    opt(&["-l", "--lines"], Flag),
    opt(&["-w", "--words"], Flag),
    opt(&["-L", "--max-line-length"], Flag),
];

const LS: &[Opt] = &[
    opt(&["-a", "--all"], Flag),
    opt(&["-A", "--almost-all"], Flag),
    opt(&["-l"], Flag),
    opt(&["-1"], Flag),
    opt(&["-h", "--human-readable"], Flag),
    opt(&["-R", "--recursive"], Flag),
    opt(&["-r", "--reverse"], Flag),
    opt(&["-t"], Flag),
    opt(&["-S"], Flag),
    opt(&["-X"], Flag),
    opt(&["-U"], Flag),
    opt(&["-v"], Flag),
    opt(&["-d", "--directory"], Flag),
    opt(&["-F", "--classify"], OptData),
    opt(&["-p"], Flag),
    opt(&["-i", "--inode"], Flag),
    opt(&["-s", "--size"], Flag),
    opt(&["-n", "--numeric-uid-gid"], Flag),
    opt(&["-g"], Flag),
    opt(&["-o"], Flag),
    opt(&["-G", "--no-group"], Flag),
    opt(&["-m"], Flag),
    opt(&["-x"], Flag),
    opt(&["-C"], Flag),
    opt(&["-Q", "--quote-name"], Flag),
    opt(&["-B", "--ignore-backups"], Flag),
    opt(&["-I", "--ignore"], Data),
    opt(&["--hide"], Data),
    opt(&["--color", "--colour"], OptData),
    opt(&["--sort"], Data),
    opt(&["--time"], Data),
    opt(&["--time-style"], Data),
    opt(&["--full-time"], Flag),
    opt(&["--group-directories-first"], Flag),
    opt(&["--indicator-style"], Data),
];

const PWD: &[Opt] = &[opt(&["-L"], Flag), opt(&["-P"], Flag)];

const RM: &[Opt] = &[
    opt(&["-r", "-R", "--recursive"], Flag),
    opt(&["-f", "--force"], Flag),
    opt(&["-i"], Flag),
    opt(&["-I"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-d", "--dir"], Flag),
];

const RMDIR: &[Opt] = &[opt(&["-p", "--parents"], Flag), opt(&["-v", "--verbose"], Flag)];

const CURL: &[Opt] = &[
    opt(&["-s", "--silent"], Flag),
    opt(&["-S", "--show-error"], Flag),
    opt(&["-L", "--location"], Flag),
    opt(&["-f", "--fail"], Flag),
    opt(&["-i", "--include"], Flag),
    opt(&["-I", "--head"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["-k", "--insecure"], Flag),
    opt(&["--compressed"], Flag),
    opt(&["-o", "--output"], Write),
    opt(&["-X", "--request"], Data),
    opt(&["-H", "--header"], Data),
    opt(&["-A", "--user-agent"], Data),
    opt(&["-d", "--data", "--data-raw", "--data-binary"], Data),
    opt(&["-m", "--max-time"], Data),
    opt(&["--connect-timeout"], Data),
    opt(&["--retry"], Data),
];

const WGET: &[Opt] = &[
    opt(&["-q", "--quiet"], Flag),
    opt(&["--no-verbose"], Flag),
    opt(&["-O", "--output-document"], Write),
    opt(&["-t", "--tries"], Data),
    opt(&["-T", "--timeout"], Data),
    opt(&["-S", "--server-response"], Flag),
];

/// The reading programs: every positional word is a file they read.
pub(super) fn judge(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = match prog {
        // echo's words are data, not files (bash's echo reads only -n, -e,
        // -E, and prints anything else); only its redirections matter.
        "echo" => return Ok(()),
        "cat" => Spec::gnu(CAT),
        "head" => Spec::gnu(HEAD).counts(),
        "tail" => Spec::gnu(TAIL).counts(),
        "wc" => Spec::gnu(WC),
        "ls" => Spec::gnu(LS),
        "pwd" => Spec::gnu(PWD),
        other => return Err(no(format!("{other} is not an allowlisted program"))),
    };
    let parsed = parse(prog, &spec, args)?;
    if prog == "pwd" && positionals(&parsed).next().is_some() {
        return Err(no("pwd takes no operands"));
    }
    for w in positionals(&parsed) {
        // `tail -n +5` style counts are data; anything else is a file.
        if prog == "tail" && w.text.starts_with('+') && w.text[1..].bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if w.text.starts_with('-') && w.text.len() > 1 && !matches!(prog, "head" | "tail") {
            return Err(no(format!("{prog} {}: an option after --", w.text)));
        }
        if matches!(prog, "head" | "tail") && w.text.len() > 1 && w.text[1..].bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        ctx.operand(w, cwd, Access::Read)?;
    }
    Ok(())
}

/// `rm`, `unlink`, `rmdir` in a deletion dialog: every operand is written.
pub(super) fn delete(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = match prog {
        "rm" => Spec::gnu(RM),
        "rmdir" => Spec::gnu(RMDIR),
        _ => Spec::gnu(&[]),
    };
    let parsed = parse(prog, &spec, args)?;
    let mut any = false;
    for w in positionals(&parsed) {
        any = true;
        ctx.operand(w, cwd, Access::Write)?;
    }
    if !any {
        return Err(no(format!("{prog} without a file")));
    }
    Ok(())
}

/// `curl`/`wget` in a network dialog: URLs to allowed hosts only, outputs in
/// scope (never named after the URL), no value read from a file.
pub(super) fn fetch(prog: &str, args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let spec = if prog == "curl" {
        Spec::gnu(CURL)
    } else {
        Spec::gnu(WGET)
    };
    let parsed = parse(prog, &spec, args)?;
    let mut urls = 0;
    for arg in &parsed {
        match arg {
            Arg::Opt(o, Some(v)) if v.text.starts_with('@') || v.text.starts_with('<') => {
                return Err(no(format!(
                    "{prog} {} {}: the value is read from a file",
                    o.names[0], v.text
                )));
            }
            Arg::Pos(w) | Arg::Rest(w) => {
                if !w.text.contains("://") || !url_allowed(&w.text) {
                    return Err(no(format!("{} is not an allowed host", w.text)));
                }
                urls += 1;
            }
            _ => {}
        }
    }
    if urls == 0 {
        return Err(no(format!("{prog} without a URL")));
    }
    let has_output = parsed.iter().any(|a| a.is("-o") || a.is("-O"));
    if prog == "wget" && !has_output {
        return Err(no("wget names the file it writes after the URL"));
    }
    let effects = option_effects(prog, &parsed, ctx, cwd)?;
    ctx.not_inside_protected(prog, &effects.run_dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::Scope;
    use crate::paths::fake::FakeFs;
    use crate::reason::Mode;

    fn ok(prog: &str, line: &str) -> Result<(), String> {
        let scope = Scope::new("/w");
        let fs = FakeFs::default();
        let ctx = Ctx::new(&scope, &fs, Mode::Command);
        let words: Vec<Word> = line.split_whitespace().map(Word::plain).collect();
        judge(prog, &words, &ctx, Path::new("/w")).map_err(|e| e.0)
    }

    #[test]
    fn readers() {
        for (prog, line) in [
            ("cat", "-n src/lib.rs"),
            ("head", "-n 50 src/lib.rs"),
            ("head", "-20 a"),
            ("tail", "-n +5 log"),
            ("tail", "-f target/log.txt"),
            ("wc", "-l a b"),
            ("ls", "-la src"),
            ("ls", "--color=auto -R"),
            ("pwd", ""),
        ] {
            assert_eq!(ok(prog, line), Ok(()), "{prog} {line}");
        }
        for (prog, line, why) in [
            ("wc", "--files0-from=list", "--files0-from"),
            ("cat", "--show-all /etc/passwd", "outside"),
            ("ls", "-L link", "-L"),
            ("head", "-n 5 ../x", "outside"),
            ("pwd", "x", "operands"),
        ] {
            let err = ok(prog, line).unwrap_err();
            assert!(err.contains(why), "{prog} {line}: {err}");
        }
    }
}
