//! `cargo`: its global options, a `+toolchain` name (a name rustup resolves,
//! never a path: `+/abs/path` would run a program from anywhere), and the
//! subcommands that build, test, lint and describe the workspace, each with
//! the options known to be safe. Every cargo run is repository code (build
//! scripts, aliases, toolchain files).

use std::path::Path;

use super::{positionals, writer};
use crate::argv::{Opt, Spec, Val, opt, parse};
use crate::ctx::Ctx;
use crate::reason::{NotScoped, no};
use crate::shell::Word;

use Val::{Config, Data, Flag, Write};

const GLOBAL: &[Opt] = &[
    opt(&["-q", "--quiet"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["--color"], Data),
    opt(&["--frozen"], Flag),
    opt(&["--locked"], Flag),
    opt(&["--offline"], Flag),
    opt(&["-V", "--version"], Flag),
];

/// Options of the building subcommands (build, check, test, run, clippy,
/// doc, bench, fix, nextest run).
const BUILD: &[Opt] = &[
    opt(&["-q", "--quiet"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["--color"], Data),
    opt(&["--frozen"], Flag),
    opt(&["--locked"], Flag),
    opt(&["--offline"], Flag),
    opt(&["-p", "--package"], Data),
    opt(&["--workspace", "--all"], Flag),
    opt(&["--exclude"], Data),
    opt(&["--lib"], Flag),
    opt(&["--bins"], Flag),
    opt(&["--bin"], Data),
    opt(&["--examples"], Flag),
    opt(&["--example"], Data),
    opt(&["--tests"], Flag),
    opt(&["--test"], Data),
    opt(&["--benches"], Flag),
    opt(&["--bench"], Data),
    opt(&["--all-targets"], Flag),
    opt(&["--doc"], Flag),
    opt(&["-F", "--features"], Data),
    opt(&["--all-features"], Flag),
    opt(&["--no-default-features"], Flag),
    opt(&["-r", "--release"], Flag),
    opt(&["--profile"], Data),
    opt(&["--target"], Data),
    opt(&["--target-dir"], Write),
    opt(&["-j", "--jobs"], Data),
    opt(&["--keep-going"], Flag),
    opt(&["--message-format"], Data),
    opt(&["--manifest-path"], Config),
    opt(&["--no-run"], Flag),
    opt(&["--no-fail-fast"], Flag),
    opt(&["--no-deps"], Flag),
    opt(&["--open"], Flag),
    opt(&["--allow-dirty"], Flag),
    opt(&["--allow-staged"], Flag),
    opt(&["--allow-no-vcs"], Flag),
    opt(&["--broken-code"], Flag),
    opt(&["--timings"], Flag),
    opt(&["-E", "--filterset"], Data),
];

const FMT: &[Opt] = &[
    opt(&["--check"], Flag),
    opt(&["--all"], Flag),
    opt(&["-p", "--package"], Data),
    opt(&["-q", "--quiet"], Flag),
    opt(&["-v", "--verbose"], Flag),
    opt(&["--manifest-path"], Config),
    opt(&["--message-format"], Data),
];

const TREE: &[Opt] = &[
    opt(&["-p", "--package"], Data),
    opt(&["--workspace"], Flag),
    opt(&["-e", "--edges"], Data),
    opt(&["-i", "--invert"], Data),
    opt(&["--depth"], Data),
    opt(&["--prefix"], Data),
    opt(&["--no-dedupe"], Flag),
    opt(&["-d", "--duplicates"], Flag),
    opt(&["--format"], Data),
    opt(&["--format-version"], Data),
    opt(&["--no-deps"], Flag),
    opt(&["-F", "--features"], Data),
    opt(&["--all-features"], Flag),
    opt(&["--no-default-features"], Flag),
    opt(&["--frozen"], Flag),
    opt(&["--locked"], Flag),
    opt(&["--offline"], Flag),
    opt(&["--manifest-path"], Config),
    opt(&["-q", "--quiet"], Flag),
];

/// A `+toolchain` word names an installed toolchain: letters, digits, `.`,
/// `-` and `_` only.
fn toolchain_name(word: &str) -> Option<&str> {
    let name = word.strip_prefix('+')?;
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    plain.then_some(name)
}

pub(super) fn judge(args: &[Word], ctx: &Ctx<'_>, cwd: &Path) -> Result<(), NotScoped> {
    let mut args = args;
    if let Some(first) = args.first().filter(|w| w.text.starts_with('+')) {
        toolchain_name(&first.text).ok_or_else(|| {
            no(format!(
                "cargo {}: a toolchain named by anything but a plain name may be a program anywhere",
                first.text
            ))
        })?;
        args = &args[1..];
    }
    let global = parse("cargo", &Spec::gnu(GLOBAL).until_positional(), args)?;
    let mut rest = positionals(&global);
    let Some(sub) = rest.next() else {
        return if global.iter().any(|a| a.is("--version")) {
            Ok(())
        } else {
            Err(no("cargo without a subcommand"))
        };
    };
    let mut words: Vec<Word> = rest.cloned().collect();
    let spec = match sub.text.as_ref() {
        "build" | "b" | "check" | "c" | "test" | "t" | "run" | "r" | "clippy" | "doc" | "bench" | "fix" => {
            Spec::gnu(BUILD)
        }
        "nextest" => {
            // `cargo nextest run|list ...`
            match words.first().map(|w| w.text.as_ref()) {
                Some("run" | "list" | "r") => {
                    words.remove(0);
                    Spec::gnu(BUILD)
                }
                _ => return Err(no("cargo nextest is routine only as run or list")),
            }
        }
        "fmt" => Spec::gnu(FMT),
        "tree" | "metadata" => Spec::gnu(TREE),
        "version" => Spec::gnu(&[]),
        other => return Err(no(format!("cargo {other} is not a routine subcommand"))),
    };
    let effects = writer(&format!("cargo {}", sub.text), &spec, &words, ctx, cwd)?;
    if sub.text == "doc" {
        // rustdoc's source walk follows links.
        ctx.walk_stays_inside("cargo doc", std::slice::from_ref(&effects.run_dir))?;
    }
    // The runner is cargo as a whole (aliases, toolchain files, build scripts).
    ctx.ran("cargo", &[sub.text.as_ref()], &effects.run_dir, effects.named);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toolchains_are_names() {
        assert_eq!(toolchain_name("+nightly"), Some("nightly"));
        assert_eq!(toolchain_name("+1.80.0"), Some("1.80.0"));
        assert_eq!(
            toolchain_name("+stable-x86_64-unknown-linux-gnu"),
            Some("stable-x86_64-unknown-linux-gnu")
        );
        assert_eq!(toolchain_name("+/abs/path"), None);
        assert_eq!(toolchain_name("+../tc"), None);
        assert_eq!(toolchain_name("+"), None);
    }
}
