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

use crate::text::Normalizer;

/// A redirection to or from a file (descriptor duplication like `2>&1` is not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect<'a> {
    pub(crate) target: Word<'a>,
    /// The file is opened for writing (`>`, `>>`, `>|`, `&>`, `<>`), not only read (`<`).
    pub(crate) write: bool,
}

/// One simple command: its words (the program first) and its redirections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Segment<'a> {
    pub(crate) words: Vec<Word<'a>>,
    pub(crate) redirects: Vec<Redirect<'a>>,
}

/// Simple commands joined by `|` or `|&`. With more than one, each runs in
/// its own subshell: a `cd` there moves nothing after the pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pipeline<'a> {
    pub(crate) commands: Vec<Segment<'a>>,
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
pub(crate) struct AndOr<'a> {
    pub(crate) first: Pipeline<'a>,
    pub(crate) rest: Vec<(Connector, Pipeline<'a>)>,
    /// Ended by `&`: it runs in the background, in a subshell of its own.
    pub(crate) background: bool,
}

impl<'a> AndOr<'a> {
    /// Every simple command, in order, given up.
    fn into_segments(self) -> impl Iterator<Item = Segment<'a>> {
        std::iter::once(self.first)
            .chain(self.rest.into_iter().map(|(_, p)| p))
            .flat_map(|p| p.commands)
    }

    /// Every pipeline in order, each with the connector that precedes it.
    pub(crate) fn pipelines(&self) -> impl Iterator<Item = (Option<Connector>, &Pipeline<'a>)> {
        std::iter::once((None, &self.first)).chain(self.rest.iter().map(|(c, p)| (Some(*c), p)))
    }
}

/// A whole command line: and-or chains in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script<'a> {
    pub(crate) lists: Vec<AndOr<'a>>,
}

impl<'a> Script<'a> {
    /// Every simple command, in order.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &Segment<'a>> {
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

struct Parser<'a> {
    lexer: lex::Lexer<'a>,
    /// The token looked at but not taken.
    peeked: Option<Tok<'a>>,
    /// The lexer refused the command (its refusal is the answer).
    lex_failed: bool,
    /// The words of the command being read, gathered here and then moved
    /// into it at once (one allocation of the right size, however many).
    words: Vec<Word<'a>>,
}

impl<'a> Parser<'a> {
    fn peek(&mut self) -> Result<Option<&Tok<'a>>, Refusal> {
        if self.peeked.is_none() {
            self.peeked = self.lex()?;
        }
        Ok(self.peeked.as_ref())
    }

    fn next(&mut self) -> Result<Option<Tok<'a>>, Refusal> {
        match self.peeked.take() {
            Some(tok) => Ok(Some(tok)),
            None => self.lex(),
        }
    }

    fn lex(&mut self) -> Result<Option<Tok<'a>>, Refusal> {
        self.lexer.next_tok().inspect_err(|_| self.lex_failed = true)
    }

    fn simple(&mut self) -> Result<Segment<'a>, Refusal> {
        let mut seg = Segment::default();
        self.words.clear();
        loop {
            // Taken at once (a word is moved once, not peeked then taken);
            // an operator, which ends the command, is put back.
            match self.next()? {
                None => break,
                Some(op @ Tok::Op(_)) => {
                    self.peeked = Some(op);
                    break;
                }
                Some(Tok::Word(w)) => {
                    if self.words.is_empty() && !w.quoted && RESERVED.contains(&&*w.text) {
                        return Err(Refusal::Compound);
                    }
                    self.words.push(w);
                }
                Some(Tok::Redir { write, dup }) => {
                    let Some(Tok::Word(target)) = self.next()? else {
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
        if self.words.is_empty() {
            return Err(Refusal::EmptySegment);
        }
        seg.words = self.words.drain(..).collect();
        Ok(seg)
    }

    /// Newlines are allowed after `|`, `&&` and `||`.
    fn skip_newlines(&mut self) -> Result<(), Refusal> {
        while self.peek()? == Some(&Tok::Op(Op::Newline)) {
            self.next()?;
        }
        Ok(())
    }

    fn pipeline(&mut self) -> Result<Pipeline<'a>, Refusal> {
        let mut commands = vec![self.simple()?];
        while let Some(Tok::Op(Op::Pipe)) = self.peek()? {
            self.next()?;
            self.skip_newlines()?;
            commands.push(self.simple()?);
        }
        Ok(Pipeline { commands })
    }

    fn and_or(&mut self) -> Result<AndOr<'a>, Refusal> {
        let first = self.pipeline()?;
        let mut rest = Vec::new();
        loop {
            let connector = match self.peek()? {
                Some(Tok::Op(Op::And)) => Connector::And,
                Some(Tok::Op(Op::Or)) => Connector::Or,
                _ => break,
            };
            self.next()?;
            self.skip_newlines()?;
            rest.push((connector, self.pipeline()?));
        }
        Ok(AndOr {
            first,
            rest,
            background: false,
        })
    }

    fn script(&mut self) -> Result<Script<'a>, Refusal> {
        let mut script = Script::default();
        loop {
            // Blank lines (and `;` right after a newline-free list, below) are harmless.
            self.skip_newlines()?;
            if self.peek()?.is_none() {
                return Ok(script);
            }
            let mut list = self.and_or()?;
            match self.next()? {
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
pub(crate) fn parse(command: &str) -> Result<Script<'_>, Refusal> {
    let mut parser = Parser {
        lexer: lex::tokens(command),
        peeked: None,
        words: Vec::new(),
        lex_failed: false,
    };
    let refused = match parser.script() {
        Ok(script) => return Ok(script),
        Err(refused) => refused,
    };
    // The tokens are read as the grammar asks for them, but what the lexer
    // refuses anywhere in the command is the answer, before any refusal of
    // the grammar: read on to find out.
    if !parser.lex_failed {
        loop {
            match parser.lexer.next_tok() {
                Ok(Some(_)) => {}
                Ok(None) => break,
                Err(lexed) => return Err(lexed),
            }
        }
    }
    Err(refused)
}

/// Every simple command of `command`, in order (see [`parse`]).
pub(crate) fn split(command: &str) -> Result<Vec<Segment<'_>>, Refusal> {
    Ok(parse(command)?
        .lists
        .into_iter()
        .flat_map(AndOr::into_segments)
        .collect())
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
                                seg.words.iter().map(|w| (w.text.to_string(), w.tilde)).collect(),
                                seg.redirects
                                    .iter()
                                    .map(|r| (r.target.text.to_string(), r.write))
                                    .collect(),
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

/// The words of every simple command and redirection of `script` after
/// quote removal, in the order the classifier reads them.
fn viewed_words<'s>(script: &'s Script<'_>) -> impl Iterator<Item = &'s Word<'s>> {
    script
        .segments()
        .flat_map(|seg| seg.words.iter().chain(seg.redirects.iter().map(|r| &r.target)))
}

/// Reads [`viewed_words`] into `text`, as `normalize` reads them
/// space-joined (the classifier reads markers in them besides the text as
/// written).
pub(crate) fn view_words(script: &Script, text: &mut Normalizer<'_>) {
    for w in viewed_words(script) {
        text.push(&w.text).space();
    }
}

/// True when `command` (ASCII, words between single spaces) is exactly
/// [`viewed_words`] of `script` joined by spaces: [`view_words`] then reads
/// `command` lower-cased, and a long command of plain words (a read of many
/// files) is copied at once instead of word by word.
pub(crate) fn words_are_text(script: &Script, command: &str) -> bool {
    let padded = command.starts_with(' ') || command.ends_with(' ');
    if !command.is_ascii() || padded || !crate::text::single_spaced(command) {
        return false;
    }
    // Where the next word must start; each after the first follows a space.
    let mut at = 0;
    for (i, w) in viewed_words(script).enumerate() {
        if i > 0 {
            if command.as_bytes().get(at) != Some(&b' ') {
                return false;
            }
            at += 1;
        }
        let Some(here) = command.get(at..at + w.text.len()) else {
            return false;
        };
        // A word lent from this very place of the command is equal to it
        // without comparing bytes (most are).
        let lent = std::ptr::eq(w.text.as_ptr(), here.as_ptr());
        if !lent && here != w.text {
            return false;
        }
        at += w.text.len();
    }
    at == command.len()
}

/// True when a command of `script` prints the whole environment (the
/// conversation's credentials with it): `env` or `printenv` alone, `export
/// -p`, `declare -x|-p`, `set` alone, a package manager's `env` script,
/// `make -p`.
pub(crate) fn dumps_environment(script: &Script) -> bool {
    script.segments().any(|seg| {
        let Some((prog, rest)) = seg.words.split_first() else {
            return false;
        };
        let mut rest = rest.iter().map(|w| w.text.as_ref());
        match prog.text.as_ref() {
            "env" | "printenv" | "set" => rest.next().is_none(),
            "export" | "declare" | "typeset" => rest.any(|f| f.starts_with('-')),
            "npm" | "pnpm" | "yarn" | "bun" => {
                let mut words = rest.filter(|a| !a.starts_with('-'));
                match words.next() {
                    Some("env") => true,
                    Some("run" | "run-script") => words.next() == Some("env"),
                    _ => false,
                }
            }
            "make" => rest
                .any(|a| a == "--print-data-base" || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests;
