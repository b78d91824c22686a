//! The shell's tokens: words after quote removal, operators and
//! redirections, refusing every construct whose effect cannot be read
//! statically (expansions, substitutions, globs, grouping, here-documents).

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

/// One word after quote removal. `tilde` is set when it began with an
/// unquoted `~`; `quoted` when any part of it was quoted or escaped (so it is
/// never a reserved word or an assignment). Its text is lent by the command
/// when it is one stretch of it (most words are), made when quote removal
/// joined pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word<'a> {
    pub(crate) text: Cow<'a, str>,
    pub(crate) tilde: bool,
    pub(crate) quoted: bool,
}

impl<'a> Word<'a> {
    /// A word made by the judge (an option's value, a default directory).
    pub(crate) fn plain(text: impl Into<Cow<'a, str>>) -> Word<'a> {
        Word {
            text: text.into(),
            tilde: false,
            quoted: false,
        }
    }
}

/// Why a command could not be lexed into plain segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    CommandSubstitution,
    Backtick,
    ProcessSubstitution,
    Expansion,
    Glob,
    Grouping,
    HereDoc,
    Comment,
    History,
    ControlChar,
    Unterminated,
    EmptySegment,
    MissingTarget,
    Compound,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::CommandSubstitution => "command substitution $(...)",
            Refusal::Backtick => "backtick command substitution",
            Refusal::ProcessSubstitution => "process substitution <(...) or >(...)",
            Refusal::Expansion => "a $ expansion",
            Refusal::Glob => "an unquoted glob or brace pattern",
            Refusal::Grouping => "a subshell or command group",
            Refusal::HereDoc => "a here-document or here-string",
            Refusal::Comment => "a # comment",
            Refusal::History => "a ! history or negation",
            Refusal::ControlChar => "a control or invisible character",
            Refusal::Unterminated => "an unterminated quote or escape",
            Refusal::EmptySegment => "an empty command between operators",
            Refusal::MissingTarget => "a redirection without a target",
            Refusal::Compound => "a compound command (if, for, while, case, function, time)",
        })
    }
}

/// A control operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// `&&`
    And,
    /// `||`
    Or,
    /// `|` or `|&`
    Pipe,
    /// `;`
    Semi,
    /// `&`
    Amp,
    /// A newline.
    Newline,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    Word(Word<'a>),
    Op(Op),
    /// A redirection operator; `dup` for `>&` and `<&`, which duplicate a
    /// descriptor when their target is a number or `-`.
    Redir {
        write: bool,
        dup: bool,
    },
}

/// Characters the lexer will not reason about: controls (but tab and newline),
/// invisible formatting characters, and whitespace other than space, tab and
/// newline (the shell would read a no-break space as part of a word).
fn forbidden_char(c: char) -> bool {
    if c.is_ascii() {
        return (c < ' ' && c != '\t' && c != '\n') || c == '\u{7f}';
    }
    c.is_control() || c.is_whitespace() || crate::text::is_invisible(c)
}

/// An ASCII byte that is part of a word wherever it stands inside one (the
/// lexer's fast path copies runs of them at once): a look-up in [`ORDINARY`].
fn ordinary(b: u8) -> bool {
    ORDINARY[usize::from(b)]
}

/// [`ordinary`] for every byte, built once from [`is_ordinary`]: the run of
/// a word is read a byte at a time, and one load is cheaper than the tests.
static ORDINARY: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = is_ordinary(b as u8);
        b += 1;
    }
    table
};

/// The definition [`ORDINARY`] is built from.
const fn is_ordinary(b: u8) -> bool {
    b.is_ascii_graphic()
        && !matches!(
            b,
            b'\''
                | b'"'
                | b'\\'
                | b'$'
                | b'`'
                | b'*'
                | b'?'
                | b'['
                | b']'
                | b'{'
                | b'}'
                | b'('
                | b')'
                | b'!'
                | b'#'
                | b'~'
                | b';'
                | b'&'
                | b'|'
                | b'<'
                | b'>'
                | b'='
                | b':'
        )
}

/// The command's characters, with a look at what comes next.
struct Cursor<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    fn peek(&self) -> Option<char> {
        // Most commands are ASCII: a byte is a character, nothing to decode.
        match *self.src.as_bytes().get(self.pos)? {
            b if b.is_ascii() => Some(char::from(b)),
            _ => self.src[self.pos..].chars().next(),
        }
    }

    /// Where the run of ordinary bytes from here ends, consumed.
    fn ordinary_run(&mut self) -> usize {
        self.run_while(ordinary)
    }

    /// Where the run of ASCII bytes from here that `keep` accepts ends, consumed.
    fn run_while(&mut self, keep: impl Fn(u8) -> bool) -> usize {
        let len = self.src.as_bytes()[self.pos..].iter().take_while(|b| keep(**b)).count();
        self.pos += len;
        self.pos
    }
}

/// The lexer: tokens one at a time.
pub(super) struct Lexer<'a> {
    chars: Cursor<'a>,
    /// Tokens read but not yet taken (a step reads at most a word and an operator).
    ready: VecDeque<Tok<'a>>,
    /// The current word's text while it is one stretch of the command (most
    /// words are: they are copied once, when they end)...
    span: std::ops::Range<usize>,
    /// ...or, once quote removal joined pieces (`.e''nv`), its copy here.
    copied: Option<String>,
    in_word: bool,
    tilde: bool,
    quoted: bool,
    /// The current word so far came only from unquoted digits (a possible `2>`).
    digits_only: bool,
    /// The whole command has been read.
    done: bool,
    /// Plain words and operators are read at once ([`Lexer::plain_token`]); off only to
    /// test that path against the character-by-character reading.
    plain_tokens: bool,
}

impl<'a> Lexer<'a> {
    /// Adds the command's text at `from..to` to the current word: the word
    /// stays a stretch of the command as long as its pieces are adjacent.
    fn take(&mut self, from: usize, to: usize) {
        if from == to {
            return;
        }
        let src = self.chars.src;
        match &mut self.copied {
            Some(text) => text.push_str(&src[from..to]),
            None if self.span.is_empty() => self.span = from..to,
            None if self.span.end == from => self.span.end = to,
            None => {
                let mut text = String::with_capacity(self.span.len() + to - from + 16);
                text.push_str(&src[self.span.clone()]);
                text.push_str(&src[from..to]);
                self.copied = Some(text);
            }
        }
    }

    /// Adds the character just read (`c`) to the current word.
    fn take_last(&mut self, c: char) {
        let to = self.chars.pos;
        self.take(to - c.len_utf8(), to);
    }

    /// The current word's text so far.
    fn text(&self) -> &str {
        self.copied.as_deref().unwrap_or(&self.chars.src[self.span.clone()])
    }

    fn clear_word(&mut self) {
        self.span = 0..0;
        self.copied = None;
    }

    fn finish_word(&mut self) {
        if self.in_word {
            // Lent by the command, or the copy quote removal made.
            let text = match self.copied.take() {
                Some(text) => Cow::Owned(text),
                None => Cow::Borrowed(&self.chars.src[self.span.clone()]),
            };
            self.ready.push_back(Tok::Word(Word {
                text,
                tilde: self.tilde,
                quoted: self.quoted,
            }));
            self.clear_word();
        }
        self.in_word = false;
        self.tilde = false;
        self.quoted = false;
        self.digits_only = true;
    }

    /// A quoted or escaped part of the word. (A word that began with an
    /// unquoted `~` stays marked: bash keeps some such words literal, but
    /// which depends on its version and the machine's users, and the mark
    /// only ever holds more.)
    fn quoting(&mut self) {
        self.quoted = true;
    }

    fn push(&mut self, c: char) {
        if !c.is_ascii_digit() {
            self.digits_only = false;
        }
        let from = self.chars.pos - c.len_utf8();
        self.in_word = true;
        // The rest of a plain run at once.
        let run = self.chars.pos;
        let to = self.chars.ordinary_run();
        if !self.chars.src.as_bytes()[run..to].iter().all(u8::is_ascii_digit) {
            self.digits_only = false;
        }
        self.take(from, to);
    }

    fn single_quoted(&mut self) -> Result<(), Refusal> {
        self.in_word = true;
        self.quoting();
        self.digits_only = false;
        loop {
            // Plain printable ASCII up to the next special byte, at once.
            let from = self.chars.pos;
            let to = self.chars.run_while(|b| (b' '..=b'~').contains(&b) && b != b'\'');
            self.take(from, to);
            match self.chars.next() {
                None => return Err(Refusal::Unterminated),
                Some('\'') => return Ok(()),
                Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                Some(c) => self.take_last(c),
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), Refusal> {
        self.in_word = true;
        self.quoting();
        self.digits_only = false;
        loop {
            let from = self.chars.pos;
            let to = self
                .chars
                .run_while(|b| (b' '..=b'~').contains(&b) && !matches!(b, b'"' | b'$' | b'`' | b'!' | b'\\'));
            self.take(from, to);
            match self.chars.next() {
                None => return Err(Refusal::Unterminated),
                Some('"') => return Ok(()),
                Some('$') => {
                    return Err(if self.chars.peek() == Some('(') {
                        Refusal::CommandSubstitution
                    } else {
                        Refusal::Expansion
                    });
                }
                Some('`') => return Err(Refusal::Backtick),
                Some('!') => return Err(Refusal::History),
                Some('\\') => match self.chars.next() {
                    None => return Err(Refusal::Unterminated),
                    Some(c @ ('"' | '\\' | '$' | '`')) => self.take_last(c),
                    Some('\n') => {}
                    Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                    // The backslash stays, with the character after it.
                    Some(c) => self.take(self.chars.pos - c.len_utf8() - 1, self.chars.pos),
                },
                Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                Some(c) => self.take_last(c),
            }
        }
    }

    /// After `>` or `<` (and any `2` before it): the rest of the operator.
    fn redirect(&mut self, first: char) -> Result<(), Refusal> {
        let fd_word = self.in_word && self.digits_only;
        if fd_word {
            // `2>`: the digits were the descriptor, not a word.
            self.clear_word();
            self.in_word = false;
        }
        self.finish_word();
        // `>` and its forms write; `<>` opens for reading and writing.
        let mut write = first == '>';
        match (first, self.chars.peek()) {
            (_, Some('(')) => return Err(Refusal::ProcessSubstitution),
            ('<', Some('<')) => return Err(Refusal::HereDoc),
            (_, Some('&')) => {
                // `>&1`, `2>&-`: duplication, when the whole next word is a
                // number or `-`; otherwise (`>&1x`, `>&file`) a file, as bash
                // reads it. The parser decides once it has the word.
                self.chars.next();
                self.ready.push_back(Tok::Redir { write, dup: true });
                return Ok(());
            }
            ('>', Some('>' | '|')) => {
                self.chars.next();
            }
            ('<', Some('>')) => {
                self.chars.next();
                write = true;
            }
            _ => {}
        }
        self.ready.push_back(Tok::Redir { write, dup: false });
        Ok(())
    }

    /// The next token, or `None` at the end of the command.
    pub(super) fn next_tok(&mut self) -> Result<Option<Tok<'a>>, Refusal> {
        if self.plain_tokens
            && self.ready.is_empty()
            && !self.in_word
            && let Some(tok) = self.plain_token()
        {
            return Ok(Some(tok));
        }
        while self.ready.is_empty() && !self.done {
            self.step()?;
        }
        Ok(self.ready.pop_front())
    }

    /// The common cases at once, between words: a control operator (`&&`,
    /// `||`, `|`, `|&`, `;`, a newline), or a word that is one run of
    /// ordinary bytes ended by a blank, a newline, `;`, `&`, `|` or the end
    /// (most words are), lent by the command. `None` (with any blanks before
    /// it skipped, which is all [`Lexer::step`] does with them between words)
    /// leaves anything else to the character-by-character reading.
    fn plain_token(&mut self) -> Option<Tok<'a>> {
        let src = self.chars.src;
        let bytes = src.as_bytes();
        let mut at = self.chars.pos;
        while matches!(bytes.get(at), Some(b' ' | b'\t')) {
            at += 1;
        }
        self.chars.pos = at;
        let op = match (bytes.get(at), bytes.get(at + 1)) {
            (Some(b'&'), Some(b'&')) => Some((2, Op::And)),
            (Some(b'|'), Some(b'|')) => Some((2, Op::Or)),
            (Some(b'|'), Some(b'&')) => Some((2, Op::Pipe)),
            (Some(b'|'), _) => Some((1, Op::Pipe)),
            // `;;` and `;&` are refused by the reading below.
            (Some(b';'), next) if !matches!(next, Some(b';' | b'&')) => Some((1, Op::Semi)),
            (Some(b'\n'), _) => Some((1, Op::Newline)),
            _ => None,
        };
        if let Some((len, op)) = op {
            self.chars.pos = at + len;
            return Some(Tok::Op(op));
        }
        let from = at;
        while bytes.get(at).copied().is_some_and(ordinary) {
            at += 1;
        }
        let ended = matches!(bytes.get(at), None | Some(b' ' | b'\t' | b'\n' | b';' | b'&' | b'|'));
        if from == at || !ended {
            return None;
        }
        self.chars.pos = at;
        Some(Tok::Word(Word {
            text: Cow::Borrowed(&src[from..at]),
            tilde: false,
            quoted: false,
        }))
    }

    /// Reads one character (and what it starts).
    fn step(&mut self) -> Result<(), Refusal> {
        let Some(c) = self.chars.next() else {
            self.finish_word();
            self.done = true;
            return Ok(());
        };
        match c {
            c if forbidden_char(c) => return Err(Refusal::ControlChar),
            '\n' => {
                self.finish_word();
                self.ready.push_back(Tok::Op(Op::Newline));
            }
            ' ' | '\t' => self.finish_word(),
            '\'' => self.single_quoted()?,
            '"' => self.double_quoted()?,
            '\\' => match self.chars.next() {
                None => return Err(Refusal::Unterminated),
                Some('\n') => {}
                Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                Some(c) => {
                    self.digits_only = false;
                    self.in_word = true;
                    self.quoting();
                    self.take_last(c);
                }
            },
            '$' => {
                return Err(if self.chars.peek() == Some('(') {
                    Refusal::CommandSubstitution
                } else {
                    Refusal::Expansion
                });
            }
            '`' => return Err(Refusal::Backtick),
            '*' | '?' | '[' | ']' | '{' | '}' => return Err(Refusal::Glob),
            '(' | ')' => return Err(Refusal::Grouping),
            '!' => return Err(Refusal::History),
            '#' if !self.in_word => return Err(Refusal::Comment),
            '~' if !self.in_word => {
                self.tilde = true;
                self.digits_only = false;
                self.in_word = true;
                self.take_last('~');
            }
            // `x=~/y` and `a:~/b` expand like assignments; `HEAD~1` is literal.
            '~' if self.text().ends_with('=') || self.text().ends_with(':') => return Err(Refusal::Expansion),
            ';' => {
                self.finish_word();
                // `;;`, `;&` and `;;&` end case items: outside a case, bash
                // refuses them.
                if matches!(self.chars.peek(), Some(';' | '&')) {
                    return Err(Refusal::EmptySegment);
                }
                self.ready.push_back(Tok::Op(Op::Semi));
            }
            '&' => {
                self.finish_word();
                match self.chars.peek() {
                    Some('&') => {
                        self.chars.next();
                        self.ready.push_back(Tok::Op(Op::And));
                    }
                    Some('>') => {
                        self.chars.next();
                        if self.chars.peek() == Some('>') {
                            self.chars.next();
                        }
                        if self.chars.peek() == Some('(') {
                            return Err(Refusal::ProcessSubstitution);
                        }
                        self.ready.push_back(Tok::Redir {
                            write: true,
                            dup: false,
                        });
                    }
                    _ => self.ready.push_back(Tok::Op(Op::Amp)),
                }
            }
            '|' => {
                self.finish_word();
                match self.chars.peek() {
                    Some('|') => {
                        self.chars.next();
                        self.ready.push_back(Tok::Op(Op::Or));
                    }
                    Some('&') => {
                        self.chars.next();
                        self.ready.push_back(Tok::Op(Op::Pipe));
                    }
                    _ => self.ready.push_back(Tok::Op(Op::Pipe)),
                }
            }
            '>' | '<' => self.redirect(c)?,
            c => self.push(c),
        }
        Ok(())
    }
}

/// The tokens of `command`, read as they are asked for (see [`Refusal`] for
/// what is refused).
pub(super) fn tokens(command: &str) -> Lexer<'_> {
    Lexer {
        chars: Cursor { src: command, pos: 0 },
        ready: VecDeque::with_capacity(4),
        span: 0..0,
        copied: None,
        in_word: false,
        tilde: false,
        quoted: false,
        digits_only: true,
        done: false,
        plain_tokens: true,
    }
}

/// [`tokens`] read a character at a time throughout (no plain-token path).
#[cfg(test)]
pub(super) fn tokens_char_by_char(command: &str) -> Lexer<'_> {
    Lexer {
        plain_tokens: false,
        ..tokens(command)
    }
}
