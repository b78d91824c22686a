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

/// One simple command: its words (the program first) and its
/// redirections, lent by the [`Script`] that holds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment<'s> {
    pub(crate) words: &'s [Word<'s>],
    pub(crate) redirects: &'s [Redirect<'s>],
}

impl Segment<'_> {
    /// True when both are the very same command of one script (not only equal).
    pub(crate) fn same(&self, other: &Segment<'_>) -> bool {
        std::ptr::eq(self.words, other.words) && std::ptr::eq(self.redirects, other.redirects)
    }
}

/// How an and-or chain continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connector {
    /// `&&`: runs only after a success.
    And,
    /// `||`: runs only after a failure.
    Or,
}

/// Where a simple command's words and redirections end in the script's arrays
/// (each starts where the one before ended).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct SegmentEnds {
    words: usize,
    redirects: usize,
}

/// Where a pipeline's simple commands end, and the connector before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct PipelineEnd {
    segments: usize,
    connector: Option<Connector>,
}

/// Where an and-or chain's pipelines end, and whether it ended with `&`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ListEnd {
    pipelines: usize,
    background: bool,
}

/// A whole command line: and-or chains of pipelines of simple commands.
/// Held flat (every word in one array, every redirection in another, and
/// where each command, pipeline and chain ends), so a long line costs a few
/// allocations rather than several per command; read through the views
/// [`List`], [`Pipeline`] and [`Segment`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Script<'a> {
    words: Vec<Word<'a>>,
    redirects: Vec<Redirect<'a>>,
    segments: Vec<SegmentEnds>,
    pipelines: Vec<PipelineEnd>,
    lists: Vec<ListEnd>,
}

/// Simple commands joined by `|` or `|&`. With more than one, each runs in
/// its own subshell: a `cd` there moves nothing after the pipeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pipeline<'s> {
    script: &'s Script<'s>,
    /// Its simple commands' indices: `from..to`.
    from: usize,
    to: usize,
}

impl<'s> Pipeline<'s> {
    /// Its simple commands, in order.
    pub(crate) fn commands(&self) -> impl ExactSizeIterator<Item = Segment<'s>> + Clone + 's {
        let script = self.script;
        (self.from..self.to).map(move |i| script.segment(i))
    }

    /// Its only command, when it has one.
    pub(crate) fn lone(&self) -> Option<Segment<'s>> {
        (self.to == self.from + 1).then(|| self.script.segment(self.from))
    }
}

/// Pipelines joined by `&&` and `||`, ended by `;`, a newline or `&`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct List<'s> {
    script: &'s Script<'s>,
    /// Its pipelines' indices: `from..to`.
    from: usize,
    to: usize,
    /// Ended by `&`: it runs in the background, in a subshell of its own.
    pub(crate) background: bool,
}

impl<'s> List<'s> {
    /// Every pipeline in order, each with the connector that precedes it
    /// (none before the first).
    pub(crate) fn pipelines(&self) -> impl Iterator<Item = (Option<Connector>, Pipeline<'s>)> + 's {
        let script = self.script;
        (self.from..self.to).map(move |i| {
            let (before, end) = bounds(&script.pipelines, i);
            (
                end.connector,
                Pipeline {
                    script,
                    from: before.segments,
                    to: end.segments,
                },
            )
        })
    }
}

/// The `i`th entry of `ends` and the one before it (all zero before the
/// first): the item's start and end.
fn bounds<T: Copy + Default>(ends: &[T], i: usize) -> (T, T) {
    let before = i.checked_sub(1).map_or_else(T::default, |b| ends[b]);
    (before, ends[i])
}

impl<'a> Script<'a> {
    /// The `i`th simple command.
    fn segment<'s>(&'s self, i: usize) -> Segment<'s> {
        let (from, end) = bounds(&self.segments, i);
        Segment {
            words: &self.words[from.words..end.words],
            redirects: &self.redirects[from.redirects..end.redirects],
        }
    }

    /// Every simple command, in order.
    pub(crate) fn segments<'s>(&'s self) -> impl ExactSizeIterator<Item = Segment<'s>> + 's {
        (0..self.segments.len()).map(move |i| self.segment(i))
    }

    /// Every and-or chain, in order.
    pub(crate) fn lists<'s>(&'s self) -> impl Iterator<Item = List<'s>> + 's {
        (0..self.lists.len()).map(move |i| {
            let (before, end) = bounds(&self.lists, i);
            List {
                script: self,
                from: before.pipelines,
                to: end.pipelines,
                background: end.background,
            }
        })
    }

    /// True when it has no command at all (a blank line).
    pub(crate) fn is_empty(&self) -> bool {
        self.lists.is_empty()
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
    /// What has been read so far.
    script: Script<'a>,
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

    fn simple(&mut self) -> Result<(), Refusal> {
        let first = self.script.words.len();
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
                    if self.script.words.len() == first && !w.quoted && RESERVED.contains(&&*w.text) {
                        return Err(Refusal::Compound);
                    }
                    self.script.words.push(w);
                }
                Some(Tok::Redir { write, dup }) => {
                    let Some(Tok::Word(target)) = self.next()? else {
                        return Err(Refusal::MissingTarget);
                    };
                    let descriptor = target.text == "-"
                        || (!target.text.is_empty() && target.text.bytes().all(|b| b.is_ascii_digit()));
                    if !(dup && descriptor) {
                        self.script.redirects.push(Redirect { target, write });
                    }
                }
            }
        }
        if self.script.words.len() == first {
            return Err(Refusal::EmptySegment);
        }
        self.script.segments.push(SegmentEnds {
            words: self.script.words.len(),
            redirects: self.script.redirects.len(),
        });
        Ok(())
    }

    /// Newlines are allowed after `|`, `&&` and `||`.
    fn skip_newlines(&mut self) -> Result<(), Refusal> {
        while self.peek()? == Some(&Tok::Op(Op::Newline)) {
            self.next()?;
        }
        Ok(())
    }

    fn pipeline(&mut self, connector: Option<Connector>) -> Result<(), Refusal> {
        self.simple()?;
        while let Some(Tok::Op(Op::Pipe)) = self.peek()? {
            self.next()?;
            self.skip_newlines()?;
            self.simple()?;
        }
        self.script.pipelines.push(PipelineEnd {
            segments: self.script.segments.len(),
            connector,
        });
        Ok(())
    }

    fn and_or(&mut self) -> Result<(), Refusal> {
        self.pipeline(None)?;
        loop {
            let connector = match self.peek()? {
                Some(Tok::Op(Op::And)) => Connector::And,
                Some(Tok::Op(Op::Or)) => Connector::Or,
                _ => break,
            };
            self.next()?;
            self.skip_newlines()?;
            self.pipeline(Some(connector))?;
        }
        Ok(())
    }

    fn script(&mut self) -> Result<(), Refusal> {
        loop {
            // Blank lines (and `;` right after a newline-free list, below) are harmless.
            self.skip_newlines()?;
            if self.peek()?.is_none() {
                return Ok(());
            }
            self.and_or()?;
            let background = match self.next()? {
                None | Some(Tok::Op(Op::Semi | Op::Newline)) => false,
                Some(Tok::Op(Op::Amp)) => true,
                Some(_) => return Err(Refusal::EmptySegment),
            };
            self.script.lists.push(ListEnd {
                pipelines: self.script.pipelines.len(),
                background,
            });
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
        lex_failed: false,
        script: Script::default(),
    };
    let refused = match parser.script() {
        Ok(()) => return Ok(parser.script),
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
        .lists()
        .map(|list| {
            let pipes = list
                .pipelines()
                .map(|(c, p)| {
                    let c = c.map(|c| match c {
                        Connector::And => "&&",
                        Connector::Or => "||",
                    });
                    let commands = p
                        .commands()
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
