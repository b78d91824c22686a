//! The shell grammar supervision judges by: a strict parser for the part of
//! the POSIX/bash command language whose effect can be read statically
//! (lists, and-or chains, pipelines, simple commands, words after quote
//! removal, redirections), which refuses every other production (see
//! [`Refusal`]). A command it accepts is read the way bash reads it; the
//! maintained bash parser `brush-parser` is the reference it is tested
//! against (`tests/grammar.rs`), and the sandbox oracle runs what it approves
//! under real bash.

mod lex;

pub(crate) use lex::{Refusal, Word};

use lex::{Op, Tok};

/// A redirection to or from a file (descriptor duplication like `2>&1` is not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub(crate) target: Word,
    /// The file is opened for writing (`>`, `>>`, `>|`, `&>`, `<>`), not only read (`<`).
    pub(crate) write: bool,
}

/// One simple command: its words (the program first) and its redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) words: Vec<Word>,
    pub(crate) redirects: Vec<Redirect>,
}

/// Simple commands joined by `|` or `|&`. With more than one, each runs in
/// its own subshell: a `cd` there moves nothing after the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pipeline {
    pub(crate) commands: Vec<Segment>,
}

/// How an and-or chain continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connector {
    /// `&&`: runs only after a success.
    And,
    /// `||`: runs only after a failure.
    Or,
}

/// Pipelines joined by `&&` and `||`, ended by `;`, a newline or `&`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AndOr {
    pub(crate) first: Pipeline,
    pub(crate) rest: Vec<(Connector, Pipeline)>,
    /// Ended by `&`: it runs in the background, in a subshell of its own.
    pub(crate) background: bool,
}

impl AndOr {
    /// Every pipeline in order, each with the connector that precedes it.
    pub(crate) fn pipelines(&self) -> impl Iterator<Item = (Option<Connector>, &Pipeline)> {
        std::iter::once((None, &self.first)).chain(self.rest.iter().map(|(c, p)| (Some(*c), p)))
    }
}

/// A whole command line: and-or chains in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script {
    pub(crate) lists: Vec<AndOr>,
}

impl Script {
    /// Every simple command, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.lists
            .iter()
            .flat_map(|l| l.pipelines().flat_map(|(_, p)| p.commands.iter()))
    }
}

/// Words that open or close a compound command or change how one runs when
/// they stand where a program name would.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "do", "done", "case", "esac", "while", "until", "for", "in", "function",
    "select", "time", "coproc",
];

struct Parser {
    toks: std::iter::Peekable<std::vec::IntoIter<Tok>>,
}

impl Parser {
    fn simple(&mut self) -> Result<Segment, Refusal> {
        let mut seg = Segment::default();
        while let Some(tok) = self.toks.peek() {
            match tok {
                Tok::Op(_) => break,
                Tok::Word(_) => {
                    let Some(Tok::Word(w)) = self.toks.next() else { break };
                    if seg.words.is_empty() && !w.quoted && RESERVED.contains(&w.text.as_str()) {
                        return Err(Refusal::Compound);
                    }
                    seg.words.push(w);
                }
                Tok::Redir { .. } => {
                    let Some(Tok::Redir { write, dup }) = self.toks.next() else {
                        break;
                    };
                    let Some(Tok::Word(target)) = self.toks.next() else {
                        return Err(Refusal::MissingTarget);
                    };
                    let descriptor = target.text == "-"
                        || (!target.text.is_empty() && target.text.bytes().all(|b| b.is_ascii_digit()));
                    if !(dup && descriptor) {
                        seg.redirects.push(Redirect { target, write });
                    }
                }
            }
        }
        if seg.words.is_empty() {
            return Err(Refusal::EmptySegment);
        }
        Ok(seg)
    }

    /// Newlines are allowed after `|`, `&&` and `||`.
    fn skip_newlines(&mut self) {
        while self.toks.peek() == Some(&Tok::Op(Op::Newline)) {
            self.toks.next();
        }
    }

    fn pipeline(&mut self) -> Result<Pipeline, Refusal> {
        let mut commands = vec![self.simple()?];
        while let Some(Tok::Op(Op::Pipe)) = self.toks.peek() {
            self.toks.next();
            self.skip_newlines();
            commands.push(self.simple()?);
        }
        Ok(Pipeline { commands })
    }

    fn and_or(&mut self) -> Result<AndOr, Refusal> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let connector = match self.toks.peek() {
                Some(Tok::Op(Op::And)) => Connector::And,
                Some(Tok::Op(Op::Or)) => Connector::Or,
                _ => break,
            };
            self.toks.next();
            self.skip_newlines();
            rest.push((connector, self.pipeline()?));
        }
        Ok(AndOr {
            first,
            rest,
            background: false,
        })
    }

    fn script(mut self) -> Result<Script, Refusal> {
        let mut script = Script::default();
        loop {
            // Blank lines (and `;` right after a newline-free list, below) are harmless.
            self.skip_newlines();
            if self.toks.peek().is_none() {
                return Ok(script);
            }
            let mut list = self.and_or()?;
            match self.toks.next() {
                None => {
                    script.lists.push(list);
                    return Ok(script);
                }
                Some(Tok::Op(Op::Semi | Op::Newline)) => {}
                Some(Tok::Op(Op::Amp)) => list.background = true,
                Some(_) => return Err(Refusal::EmptySegment),
            }
            script.lists.push(list);
        }
    }
}

/// Parses `command`. Refuses `$(...)`, backticks, any `$` expansion, process
/// substitution, globs and braces, subshells and groups, compound commands,
/// here-documents, comments, `!`, control or invisible characters, unbalanced
/// quotes, assignments are left to the judge. A trailing `;`, `&` or newline
/// ends the last list; any other empty command is refused.
pub(crate) fn parse(command: &str) -> Result<Script, Refusal> {
    let toks = lex::tokens(command)?;
    Parser {
        toks: toks.into_iter().peekable(),
    }
    .script()
}

/// Every simple command of `command`, in order (see [`parse`]).
pub(crate) fn split(command: &str) -> Result<Vec<Segment>, Refusal> {
    Ok(parse(command)?.segments().cloned().collect())
}

/// A parsed command line as plain data, for comparing this grammar with a
/// reference parser: each list (and whether it runs in the background) as
/// its pipelines (with the connector before each), each pipeline as its
/// simple commands, each simple command as its words (text after quote
/// removal, and whether it began with an unquoted `~`) and its file
/// redirections (target, and whether it is written).
pub type Shape = Vec<(Vec<(Option<&'static str>, Vec<ShapeCommand>)>, bool)>;

/// One simple command of a [`Shape`].
pub type ShapeCommand = (Vec<(String, bool)>, Vec<(String, bool)>);

/// The [`Shape`] of `command`, or why the grammar refuses it.
pub fn shape(command: &str) -> Result<Shape, String> {
    let script = parse(command).map_err(|r| r.to_string())?;
    Ok(script
        .lists
        .iter()
        .map(|list| {
            let pipes = list
                .pipelines()
                .map(|(c, p)| {
                    let c = c.map(|c| match c {
                        Connector::And => "&&",
                        Connector::Or => "||",
                    });
                    let commands = p
                        .commands
                        .iter()
                        .map(|seg| {
                            (
                                seg.words.iter().map(|w| (w.text.clone(), w.tilde)).collect(),
                                seg.redirects.iter().map(|r| (r.target.text.clone(), r.write)).collect(),
                            )
                        })
                        .collect();
                    (c, commands)
                })
                .collect();
            (pipes, list.background)
        })
        .collect())
}

/// What the classifier reads of a command that parses.
pub(crate) struct View {
    /// The words of every simple command and redirection after quote
    /// removal, space-joined (read by the markers besides the text as written).
    pub(crate) words: String,
    /// A command of it prints the whole environment (see [`dumps_environment`]).
    pub(crate) dumps_environment: bool,
}

/// The classifier's [`View`] of a parsed command.
pub(crate) fn view(script: &Script) -> View {
    let mut words = String::new();
    for seg in script.segments() {
        for w in seg.words.iter().chain(seg.redirects.iter().map(|r| &r.target)) {
            words.push_str(&w.text);
            words.push(' ');
        }
        words.push('\n');
    }
    View {
        words,
        dumps_environment: dumps_environment(script),
    }
}

/// True when a command of `script` prints the whole environment (the
/// conversation's credentials with it): `env` or `printenv` alone, `export
/// -p`, `declare -x|-p`, `set` alone, a package manager's `env` script,
/// `make -p`.
fn dumps_environment(script: &Script) -> bool {
    script.segments().any(|seg| {
        let w: Vec<&str> = seg.words.iter().map(|w| w.text.as_str()).collect();
        match w.as_slice() {
            ["env" | "printenv"] | ["set"] => true,
            ["export" | "declare" | "typeset", flags @ ..] => flags.iter().any(|f| f.starts_with('-')),
            ["npm" | "pnpm" | "yarn" | "bun", rest @ ..] => {
                let words: Vec<&str> = rest.iter().copied().filter(|a| !a.starts_with('-')).collect();
                matches!(words.as_slice(), ["env", ..] | ["run" | "run-script", "env", ..])
            }
            ["make", rest @ ..] => rest
                .iter()
                .any(|a| *a == "--print-data-base" || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests;
