//! A deliberately small shell lexer: splits a command into segments, words and
//! redirections, and refuses every construct whose effect it cannot see.

use std::fmt;

/// One word after quote removal. `tilde` is set when it began with an unquoted `~`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub(crate) text: String,
    pub(crate) tilde: bool,
}

/// A redirection to or from a file (descriptor duplication like `2>&1` is not recorded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    pub(crate) target: Word,
    /// The file is opened for writing (`>`, `>>`, `>|`, `&>`, `<>`), not only read (`<`).
    pub(crate) write: bool,
}

/// One simple command between `&&`, `||`, `;`, `|`, `&` or a newline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) words: Vec<Word>,
    pub(crate) redirects: Vec<Redirect>,
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
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Sep {
    Newline,
    Plain,
    Background,
}

enum Tok {
    Word(Word),
    Sep(Sep),
    /// A redirection operator; `file` is false for a descriptor duplication.
    Redir {
        file: bool,
        write: bool,
    },
}

/// Characters the lexer will not reason about: controls (but tab and newline),
/// invisible formatting characters, and whitespace other than space, tab and
/// newline (the shell would read a no-break space as part of a word).
fn forbidden_char(c: char) -> bool {
    let plain = matches!(c, ' ' | '\t' | '\n');
    !plain && (c.is_control() || c.is_whitespace() || crate::text::is_invisible(c))
}

struct Lexer<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    toks: Vec<Tok>,
    word: String,
    in_word: bool,
    tilde: bool,
    /// The current word so far came only from unquoted digits (a possible `2>`).
    digits_only: bool,
}

impl Lexer<'_> {
    fn finish_word(&mut self) {
        if self.in_word {
            let text = std::mem::take(&mut self.word);
            self.toks.push(Tok::Word(Word {
                text,
                tilde: self.tilde,
            }));
        }
        self.in_word = false;
        self.tilde = false;
        self.digits_only = true;
    }

    fn push(&mut self, c: char) {
        if !c.is_ascii_digit() {
            self.digits_only = false;
        }
        self.word.push(c);
        self.in_word = true;
    }

    fn single_quoted(&mut self) -> Result<(), Refusal> {
        self.in_word = true;
        self.digits_only = false;
        loop {
            match self.chars.next() {
                None => return Err(Refusal::Unterminated),
                Some('\'') => return Ok(()),
                Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                Some(c) => self.word.push(c),
            }
        }
    }

    fn double_quoted(&mut self) -> Result<(), Refusal> {
        self.in_word = true;
        self.digits_only = false;
        loop {
            match self.chars.next() {
                None => return Err(Refusal::Unterminated),
                Some('"') => return Ok(()),
                Some('$') => {
                    return Err(if self.chars.peek() == Some(&'(') {
                        Refusal::CommandSubstitution
                    } else {
                        Refusal::Expansion
                    });
                }
                Some('`') => return Err(Refusal::Backtick),
                Some('!') => return Err(Refusal::History),
                Some('\\') => match self.chars.next() {
                    None => return Err(Refusal::Unterminated),
                    Some(c @ ('"' | '\\' | '$' | '`')) => self.word.push(c),
                    Some('\n') => {}
                    Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                    Some(c) => {
                        self.word.push('\\');
                        self.word.push(c);
                    }
                },
                Some(c) if forbidden_char(c) => return Err(Refusal::ControlChar),
                Some(c) => self.word.push(c),
            }
        }
    }

    /// After `>` or `<` (and any `2` before it): the rest of the operator.
    fn redirect(&mut self, first: char) -> Result<(), Refusal> {
        let fd_word = self.in_word && self.digits_only;
        if fd_word {
            // `2>`: the digits were the descriptor, not a word.
            self.word.clear();
            self.in_word = false;
        }
        self.finish_word();
        // `>` and its forms write; `<>` opens for reading and writing.
        let mut write = first == '>';
        match (first, self.chars.peek().copied()) {
            (_, Some('(')) => return Err(Refusal::ProcessSubstitution),
            ('<', Some('<')) => return Err(Refusal::HereDoc),
            (_, Some('&')) => {
                self.chars.next();
                // `>&1`, `2>&-`: duplication. `>&file` writes to a file.
                let dup = matches!(self.chars.peek(), Some(c) if c.is_ascii_digit() || *c == '-');
                if dup {
                    while matches!(self.chars.peek(), Some(c) if c.is_ascii_digit() || *c == '-') {
                        self.chars.next();
                    }
                    self.toks.push(Tok::Redir {
                        file: false,
                        write: false,
                    });
                    return Ok(());
                }
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
        self.toks.push(Tok::Redir { file: true, write });
        Ok(())
    }

    fn run(mut self) -> Result<Vec<Tok>, Refusal> {
        while let Some(c) = self.chars.next() {
            match c {
                c if forbidden_char(c) => return Err(Refusal::ControlChar),
                '\n' => {
                    self.finish_word();
                    self.toks.push(Tok::Sep(Sep::Newline));
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
                        self.word.push(c);
                    }
                },
                '$' => {
                    return Err(if self.chars.peek() == Some(&'(') {
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
                    self.word.push('~');
                }
                // `x=~/y` and `a:~/b` expand like assignments; `HEAD~1` is literal.
                '~' if self.word.ends_with('=') || self.word.ends_with(':') => return Err(Refusal::Expansion),
                ';' => {
                    self.finish_word();
                    self.toks.push(Tok::Sep(Sep::Plain));
                }
                '&' => {
                    self.finish_word();
                    match self.chars.peek() {
                        Some('&') => {
                            self.chars.next();
                            self.toks.push(Tok::Sep(Sep::Plain));
                        }
                        Some('>') => {
                            self.chars.next();
                            if self.chars.peek() == Some(&'>') {
                                self.chars.next();
                            }
                            if self.chars.peek() == Some(&'(') {
                                return Err(Refusal::ProcessSubstitution);
                            }
                            self.toks.push(Tok::Redir {
                                file: true,
                                write: true,
                            });
                        }
                        _ => self.toks.push(Tok::Sep(Sep::Background)),
                    }
                }
                '|' => {
                    self.finish_word();
                    if matches!(self.chars.peek(), Some('|' | '&')) {
                        self.chars.next();
                    }
                    self.toks.push(Tok::Sep(Sep::Plain));
                }
                '>' | '<' => self.redirect(c)?,
                c => self.push(c),
            }
        }
        self.finish_word();
        Ok(self.toks)
    }
}

/// Splits `command` into segments. Refuses `$(...)`, backticks, any `$`
/// expansion, process substitution, globs and braces, subshells, here-docs,
/// comments, `!`, control or invisible characters and unbalanced quotes. A
/// trailing `;` or newline is allowed; any other empty segment is refused.
pub(crate) fn split(command: &str) -> Result<Vec<Segment>, Refusal> {
    let toks = Lexer {
        chars: command.chars().peekable(),
        toks: Vec::new(),
        word: String::new(),
        in_word: false,
        tilde: false,
        digits_only: true,
    }
    .run()?;
    let mut segments = Vec::new();
    let mut current = Segment::default();
    let mut toks = toks.into_iter().peekable();
    let mut last_sep = Sep::Newline;
    while let Some(tok) = toks.next() {
        match tok {
            Tok::Word(w) => current.words.push(w),
            Tok::Redir { file, write } => {
                if file {
                    match toks.next() {
                        Some(Tok::Word(target)) => current.redirects.push(Redirect { target, write }),
                        _ => return Err(Refusal::MissingTarget),
                    }
                }
            }
            Tok::Sep(sep) => {
                if current.words.is_empty() {
                    // Blank lines are harmless (`ls;` then a newline too);
                    // `&& ;`, a leading `|` or a lone `&` are not.
                    if current.redirects.is_empty() && sep == Sep::Newline {
                        continue;
                    }
                    return Err(Refusal::EmptySegment);
                }
                last_sep = sep;
                segments.push(std::mem::take(&mut current));
            }
        }
    }
    if current.words.is_empty() {
        if !current.redirects.is_empty() || last_sep == Sep::Background {
            return Err(Refusal::EmptySegment);
        }
    } else {
        segments.push(current);
    }
    Ok(segments)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(cmd: &str) -> Vec<Vec<String>> {
        split(cmd)
            .unwrap()
            .into_iter()
            .map(|s| s.words.into_iter().map(|w| w.text).collect())
            .collect()
    }

    #[test]
    fn splits_on_every_operator() {
        assert_eq!(
            words("cargo test && ls || cat a; grep x | wc -l & pwd\nrg y |& head"),
            vec![
                vec!["cargo", "test"],
                vec!["ls"],
                vec!["cat", "a"],
                vec!["grep", "x"],
                vec!["wc", "-l"],
                vec!["pwd"],
                vec!["rg", "y"],
                vec!["head"],
            ]
        );
    }

    #[test]
    fn removes_quotes_and_escapes() {
        assert_eq!(
            words(r#"grep -n 'a b' "c d" e\ f"#),
            vec![vec!["grep", "-n", "a b", "c d", "e f"]]
        );
        assert_eq!(words(r"c\argo test"), vec![vec!["cargo", "test"]]);
        assert_eq!(words("grep 'x;y' src"), vec![vec!["grep", "x;y", "src"]]);
    }

    #[test]
    fn redirections_are_recorded() {
        let segs = split("cargo test > out.txt 2>&1 2>>err.log &>both < in").unwrap();
        assert_eq!(segs.len(), 1);
        let targets: Vec<_> = segs[0].redirects.iter().map(|r| r.target.text.as_str()).collect();
        assert_eq!(targets, vec!["out.txt", "err.log", "both", "in"]);
        let writes: Vec<_> = segs[0].redirects.iter().map(|r| r.write).collect();
        assert_eq!(writes, vec![true, true, true, false]);
        assert_eq!(segs[0].words.len(), 2);
        let segs = split("cat <> rw >| clobber").unwrap();
        assert!(segs[0].redirects.iter().all(|r| r.write));
        let segs = split("echo hi >& /tmp/x").unwrap();
        assert_eq!(segs[0].redirects[0].target.text, "/tmp/x");
    }

    #[test]
    fn tilde_only_at_word_start() {
        let segs = split("cat ~/notes '~/x'").unwrap();
        assert!(segs[0].words[1].tilde);
        assert!(!segs[0].words[2].tilde);
        assert_eq!(split("cat a=~/b"), Err(Refusal::Expansion));
        assert_eq!(words("git show HEAD~1"), vec![vec!["git", "show", "HEAD~1"]]);
    }

    #[test]
    fn refusals() {
        let cases: &[(&str, Refusal)] = &[
            ("echo $(rm -rf ~)", Refusal::CommandSubstitution),
            ("echo \"$(id)\"", Refusal::CommandSubstitution),
            ("echo `id`", Refusal::Backtick),
            ("diff <(ls) b", Refusal::ProcessSubstitution),
            ("tee >(sh)", Refusal::ProcessSubstitution),
            ("cat $HOME/.ssh/id_rsa", Refusal::Expansion),
            ("cat ${x}", Refusal::Expansion),
            ("ls *.rs", Refusal::Glob),
            ("cat {a,/etc/passwd}", Refusal::Glob),
            ("(cd /etc && cat passwd)", Refusal::Grouping),
            ("cat <<EOF\nx\nEOF", Refusal::HereDoc),
            ("cat <<< hi", Refusal::HereDoc),
            ("cargo test # ok", Refusal::Comment),
            ("! cargo test", Refusal::History),
            ("cargo\u{0} test", Refusal::ControlChar),
            ("cargo test\u{202E}", Refusal::ControlChar),
            ("cargo\u{00A0}test", Refusal::ControlChar),
            ("cargo test\r", Refusal::ControlChar),
            ("; ls", Refusal::EmptySegment),
            ("| ls", Refusal::EmptySegment),
            ("echo 'abc", Refusal::Unterminated),
            ("echo \"abc", Refusal::Unterminated),
            ("ls &&& ls", Refusal::EmptySegment),
            ("ls && ; ls", Refusal::EmptySegment),
            ("cargo test &", Refusal::EmptySegment),
            ("cargo test >", Refusal::MissingTarget),
        ];
        for (cmd, want) in cases {
            assert_eq!(split(cmd).err(), Some(*want), "{cmd:?}");
        }
    }

    #[test]
    fn quoted_specials_are_literal() {
        assert_eq!(words("grep 'fn.*main' src"), vec![vec!["grep", "fn.*main", "src"]]);
        assert_eq!(words("rg '$(x)'"), vec![vec!["rg", "$(x)"]]);
        assert_eq!(words("cargo test;"), vec![vec!["cargo", "test"]]);
        assert_eq!(words("ls;\n\ncat a\n"), vec![vec!["ls"], vec!["cat", "a"]]);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC{0,40}") {
            let _ = split(&s);
        }

        #[test]
        fn plain_words_round_trip(ws in proptest::collection::vec("[a-z0-9_./-]{1,8}", 1..6)) {
            let joined = ws.join(" ");
            let segs = split(&joined);
            proptest::prop_assume!(segs.is_ok());
            let got: Vec<String> = segs.unwrap().remove(0).words.into_iter().map(|w| w.text).collect();
            proptest::prop_assert_eq!(got, ws);
        }
    }
}
