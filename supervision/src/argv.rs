//! Options by allowlist: a program's words read the way that program's own
//! option parser reads them (GNU getopt clusters and `--opt=value`, Go's and
//! tsc's whole-name options, camelCase twins), against a table of the options
//! known to be safe. Anything the table does not name is refused, so an
//! abbreviation, a cluster hiding a second option or a config file by another
//! spelling never passes as something routine.

use std::borrow::Cow;

use crate::reason::NotScoped;
use crate::shell::Word;

/// What an option's value is to the judge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Val {
    /// Takes no value.
    Flag,
    /// Data: a number, a name, a pattern; never opened as a file.
    Data,
    /// Data given only glued or after `=` (a GNU optional argument).
    OptData,
    /// Like `OptData`, and also a separate all-digit word (`make -j 4`).
    Count,
    /// A file the program reads.
    Read,
    /// A file or directory the program writes.
    Write,
    /// A file that says what the program runs (a definition).
    Config,
    /// A directory the program changes into before it reads anything.
    Dir,
}

/// One allowlisted option and its spellings (`-n`, `--lines`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opt {
    pub(crate) names: &'static [&'static str],
    pub(crate) val: Val,
}

/// An option entry of a table.
pub(crate) const fn opt(names: &'static [&'static str], val: Val) -> Opt {
    Opt { names, val }
}

/// How a program reads its words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// GNU getopt_long (and clap, argparse, git's parse-options): `-abc` is
    /// `-a -b -c` and an option that takes a value takes the rest of the
    /// cluster or the next word; `--name=value` or `--name value`; options may
    /// follow positional words until `--`.
    Gnu,
    /// Whole names after one or two dashes (`-o x`, `--o=x`, `-run=X`): Go's
    /// flag package and tsc. No clusters.
    Whole,
}

/// A program's option table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) style: Style,
    pub(crate) opts: &'static [Opt],
    /// Long names compare without case, dashes or underscores (tsc's
    /// `--outdir`, vitest's `--outputFile` and `--output-file`).
    pub(crate) loose: bool,
    /// `-20` is a count (head, tail, git log).
    pub(crate) counts: bool,
    /// Options end at the first positional word (a global part before a
    /// subcommand).
    pub(crate) stop_at_positional: bool,
}

impl Spec {
    pub(crate) const fn gnu(opts: &'static [Opt]) -> Spec {
        Spec {
            style: Style::Gnu,
            opts,
            loose: false,
            counts: false,
            stop_at_positional: false,
        }
    }

    pub(crate) const fn whole(opts: &'static [Opt]) -> Spec {
        Spec {
            style: Style::Whole,
            opts,
            loose: false,
            counts: false,
            stop_at_positional: false,
        }
    }

    pub(crate) const fn loose(mut self) -> Spec {
        self.loose = true;
        self
    }

    pub(crate) const fn counts(mut self) -> Spec {
        self.counts = true;
        self
    }

    pub(crate) const fn until_positional(mut self) -> Spec {
        self.stop_at_positional = true;
        self
    }

    fn find(&self, name: &str) -> Option<&'static Opt> {
        let fold = |s: &str| -> String {
            s.chars()
                .filter(|c| !matches!(c, '-' | '_'))
                .flat_map(char::to_lowercase)
                .collect()
        };
        self.opts.iter().find(|o| {
            o.names.iter().any(|n| {
                *n == name
                    || (self.loose && n.len() > 2 && name.len() > 2 && name.starts_with('-') && fold(n) == fold(name))
            })
        })
    }
}

/// One word of a program's arguments, as its parser reads it: the
/// command's own words lent, a value cut out of a word (`--name=value`,
/// `-oFILE`) made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Arg<'w> {
    /// An allowlisted option, with its value when it takes one.
    Opt(&'static Opt, Option<Cow<'w, Word<'w>>>),
    /// A positional word before `--` (or a lone `-`).
    Pos(&'w Word<'w>),
    /// A word after `--`.
    Rest(&'w Word<'w>),
}

impl Arg<'_> {
    /// True when this is the option named `name` (any of its spellings).
    pub(crate) fn is(&self, name: &str) -> bool {
        matches!(self, Arg::Opt(o, _) if o.names.contains(&name))
    }
}

fn unknown(prog: &str, word: &str) -> NotScoped {
    NotScoped(format!(
        "{prog} {word}: not an option known to be safe for {prog} (options are allowlisted per program)"
    ))
}

fn needs_value(prog: &str, name: &str) -> NotScoped {
    NotScoped(format!("{prog} {name} without its value"))
}

/// The next word when it is all digits (`make -j 4`), consumed.
fn take_count<'w>(iter: &mut std::slice::Iter<'w, Word<'w>>) -> Option<Cow<'w, Word<'w>>> {
    let next = iter.as_slice().first()?;
    let digits = !next.text.is_empty() && next.text.bytes().all(|b| b.is_ascii_digit());
    digits.then(|| iter.next().map(Cow::Borrowed)).flatten()
}

/// Reads `args` (the words after the program) with `spec`. Errors name the
/// first word that is not an allowlisted option, or an option missing its value.
pub(crate) fn parse<'w>(prog: &str, spec: &Spec, args: &'w [Word<'_>]) -> Result<Vec<Arg<'w>>, NotScoped> {
    let mut out = Vec::with_capacity(args.len());
    let mut iter = args.iter();
    let mut options_over = false;
    while let Some(word) = iter.next() {
        let text = word.text.as_ref();
        if options_over {
            out.push(Arg::Rest(word));
            continue;
        }
        if text == "--" {
            options_over = true;
            continue;
        }
        if !text.starts_with('-') || text == "-" {
            out.push(Arg::Pos(word));
            if spec.stop_at_positional {
                // Everything after the first positional belongs to it (a
                // subcommand and its own words).
                out.extend(iter.by_ref().map(Arg::Pos));
            }
            continue;
        }
        if spec.counts && text[1..].bytes().all(|b| b.is_ascii_digit()) {
            out.push(Arg::Pos(word));
            continue;
        }
        let long = text.starts_with("--") || spec.style == Style::Whole;
        if long {
            let (name, value) = match text.split_once('=') {
                Some((n, v)) => (n, Some(Cow::<Word>::Owned(Word::plain(v)))),
                None => (text, None),
            };
            let lookup = match spec.style {
                // Go and tsc read `--name` as `-name`.
                Style::Whole => name.strip_prefix('-').filter(|n| n.starts_with('-')).unwrap_or(name),
                Style::Gnu => name,
            };
            let o = spec.find(lookup).ok_or_else(|| unknown(prog, name))?;
            let value = match (o.val, value) {
                (Val::Flag, Some(v)) if spec.style == Style::Whole && matches!(v.text.as_ref(), "true" | "false") => {
                    None
                }
                (Val::Flag, Some(_)) => return Err(NotScoped(format!("{prog} {name} takes no value"))),
                (Val::Count, None) => take_count(&mut iter),
                (Val::Flag | Val::OptData, None) => None,
                (_, Some(v)) => Some(v),
                (_, None) => Some(Cow::Borrowed(iter.next().ok_or_else(|| needs_value(prog, name))?)),
            };
            out.push(Arg::Opt(o, value));
            continue;
        }
        // A cluster of short options: `-abc`, `-oFILE`, `-sE` + a value.
        let mut rest = &text[1..];
        while let Some(c) = rest.chars().next() {
            rest = &rest[c.len_utf8()..];
            let name = format!("-{c}");
            let o = spec.find(&name).ok_or_else(|| unknown(prog, text))?;
            match o.val {
                Val::Flag => out.push(Arg::Opt(o, None)),
                Val::OptData if rest.is_empty() => out.push(Arg::Opt(o, None)),
                Val::Count if rest.is_empty() => out.push(Arg::Opt(o, take_count(&mut iter))),
                _ if !rest.is_empty() => {
                    let value = rest.strip_prefix('=').unwrap_or(rest);
                    out.push(Arg::Opt(o, Some(Cow::Owned(Word::plain(value)))));
                    rest = "";
                }
                _ => {
                    let value = iter.next().ok_or_else(|| needs_value(prog, &name))?;
                    out.push(Arg::Opt(o, Some(Cow::Borrowed(value))));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAKE: &[Opt] = &[
        opt(&["-s", "--silent"], Val::Flag),
        opt(&["-f", "--file", "--makefile"], Val::Config),
        opt(&["-C", "--directory"], Val::Dir),
        opt(&["-j", "--jobs"], Val::Count),
    ];
    const GO: &[Opt] = &[
        opt(&["-o"], Val::Write),
        opt(&["-v"], Val::Flag),
        opt(&["-run"], Val::Data),
    ];
    const TSC: &[Opt] = &[opt(&["--outDir"], Val::Write), opt(&["--noEmit"], Val::Flag)];

    fn words(s: &str) -> Vec<Word<'_>> {
        s.split_whitespace().map(Word::plain).collect()
    }

    fn show(args: &[Arg]) -> Vec<String> {
        args.iter()
            .map(|a| match a {
                Arg::Opt(o, None) => o.names[0].to_string(),
                Arg::Opt(o, Some(v)) => format!("{}={}", o.names[0], v.text),
                Arg::Pos(w) => w.text.to_string(),
                Arg::Rest(w) => format!("--{}", w.text),
            })
            .collect()
    }

    #[test]
    fn gnu_clusters_and_values() {
        let spec = Spec::gnu(MAKE);
        let ok = |s: &str| show(&parse("make", &spec, &words(s)).unwrap());
        assert_eq!(ok("-s test"), ["-s", "test"]);
        assert_eq!(ok("-sf mk all"), ["-s", "-f=mk", "all"]);
        assert_eq!(ok("-sfmk"), ["-s", "-f=mk"]);
        assert_eq!(ok("--file=mk -C sub"), ["-f=mk", "-C=sub"]);
        assert_eq!(ok("--directory sub"), ["-C=sub"]);
        assert_eq!(ok("-j4 -j"), ["-j=4", "-j"]);
        assert_eq!(ok("-j 4 test"), ["-j=4", "test"]);
        assert_eq!(ok("-j test"), ["-j", "test"]);
        assert_eq!(ok("all -- -x"), ["all", "---x"]);
        let err = |s: &str| parse("make", &spec, &words(s)).unwrap_err().0;
        // The cluster `-sE...` hides `-E` (eval), which is not allowlisted.
        assert!(err("-sE$(shell_id)").contains("-sE"), "{}", err("-sE$(shell_id)"));
        // Abbreviations are never guessed.
        assert!(err("--ev=x").contains("--ev"));
        assert!(err("--dir=sub").contains("--dir"));
        assert!(err("-p").contains("-p"));
        assert!(err("-f").contains("without its value"));
        assert!(err("--silent=yes").contains("takes no value"));
    }

    #[test]
    fn whole_names() {
        let spec = Spec::whole(GO);
        let ok = |s: &str| show(&parse("go", &spec, &words(s)).unwrap());
        assert_eq!(ok("-o bin/x ./cmd"), ["-o=bin/x", "./cmd"]);
        assert_eq!(ok("--o=bin/y -v=true"), ["-o=bin/y", "-v"]);
        assert_eq!(ok("-run TestX"), ["-run=TestX"]);
        assert!(parse("go", &spec, &words("-ov")).is_err());
        assert!(parse("go", &spec, &words("-ldflags=-extld=sh")).is_err());
        let tsc = Spec::whole(TSC).loose();
        assert_eq!(
            show(&parse("tsc", &tsc, &words("--outdir dist --NOEMIT")).unwrap()),
            ["--outDir=dist", "--noEmit"]
        );
        assert_eq!(
            show(&parse("tsc", &tsc, &words("--out-dir=d")).unwrap()),
            ["--outDir=d"]
        );
    }

    #[test]
    fn counts_and_stops() {
        const HEAD: &[Opt] = &[opt(&["-n", "--lines"], Val::Data)];
        let spec = Spec::gnu(HEAD).counts();
        assert_eq!(show(&parse("head", &spec, &words("-20 f")).unwrap()), ["-20", "f"]);
        let global = Spec::gnu(MAKE).until_positional();
        assert_eq!(
            show(&parse("x", &global, &words("-s sub --weird -q")).unwrap()),
            ["-s", "sub", "--weird", "-q"]
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(ws in proptest::collection::vec("[-a-zA-Z=0-9./]{0,6}", 0..6)) {
            let words: Vec<Word> = ws.iter().map(|w| Word::plain(w.as_str())).collect();
            let _ = parse("make", &Spec::gnu(MAKE), &words);
            let _ = parse("go", &Spec::whole(GO).loose(), &words);
        }
    }
}
