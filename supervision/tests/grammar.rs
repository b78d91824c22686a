//! The judge's shell grammar against a maintained bash parser
//! (`brush-parser`): every command the grammar accepts, from the corpus and
//! generated, must parse the same way there: the same lists (and which run
//! in the background), the same and-or connectors, pipelines, simple
//! commands, words after quote removal (and which begin with `~`) and file
//! redirections. A command the grammar refuses is held, so only acceptance
//! needs a second opinion.

mod common;
mod corpus;

use brush_parser::ast::{
    self, Command, CommandPrefixOrSuffixItem, IoFileRedirectKind, IoFileRedirectTarget, IoRedirect,
};
use brush_parser::word::{TildeExpr, WordPiece, WordPieceWithSource};
use brush_parser::{ParserOptions, parse_tokens, uncached_tokenize_str};
use proptest::prelude::*;
use supervision::{Shape, ShapeCommand, shell_shape};

/// How bash reads a word: quote removal, escapes, a leading tilde (any
/// tilde form counts: the judge treats every one as outside the worktree).
fn unquote(raw: &str, pieces: &[WordPieceWithSource], in_double: bool, out: &mut String) -> Result<bool, String> {
    let mut tilde = false;
    for (i, p) in pieces.iter().enumerate() {
        match &p.piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) => out.push_str(t),
            WordPiece::EscapeSequence(e) => {
                let escaped = e.strip_prefix('\\').unwrap_or(e);
                if in_double && !escaped.starts_with(['$', '`', '"', '\\', '\n']) {
                    out.push_str(e);
                } else {
                    out.push_str(escaped);
                }
            }
            WordPiece::DoubleQuotedSequence(inner) => {
                unquote(raw, inner, true, out)?;
            }
            WordPiece::TildeExpansion(t) if i == 0 && !in_double => {
                tilde = true;
                match t {
                    TildeExpr::Home => out.push('~'),
                    TildeExpr::UserHome(u) => {
                        out.push('~');
                        out.push_str(u);
                    }
                    _ => out.push_str(raw.get(p.start_index..p.end_index).unwrap_or_default()),
                }
            }
            other => return Err(format!("an expansion the grammar should have refused: {other:?}")),
        }
    }
    Ok(tilde)
}

fn word(w: &ast::Word, options: &ParserOptions) -> Result<(String, bool), String> {
    let pieces = brush_parser::word::parse(&w.value, options).map_err(|e| format!("word {:?}: {e}", w.value))?;
    let mut text = String::new();
    let tilde = unquote(&w.value, &pieces, false, &mut text)?;
    Ok((text, tilde))
}

fn redirect(r: &IoRedirect, options: &ParserOptions) -> Result<Option<(String, bool)>, String> {
    match r {
        IoRedirect::File(_, kind, IoFileRedirectTarget::Filename(w)) => {
            let write = matches!(
                kind,
                IoFileRedirectKind::Write
                    | IoFileRedirectKind::Append
                    | IoFileRedirectKind::ReadAndWrite
                    | IoFileRedirectKind::Clobber
            );
            Ok(Some((word(w, options)?.0, write)))
        }
        IoRedirect::File(_, kind, IoFileRedirectTarget::Duplicate(w)) => {
            // `>& file`: a file unless it is a descriptor. (`<& word` and
            // `N>& word` with a word that is no number are errors in bash;
            // the grammar checks the word as a file, which holds more.)
            let (text, _) = word(w, options)?;
            let write = matches!(kind, IoFileRedirectKind::DuplicateOutput);
            let descriptor = (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())) || text == "-";
            Ok((!descriptor).then_some((text, write)))
        }
        IoRedirect::File(_, _, IoFileRedirectTarget::Fd(_)) => Ok(None),
        IoRedirect::OutputAndError(w, _) => Ok(Some((word(w, options)?.0, true))),
        other => Err(format!("a redirection the grammar should have refused: {other}")),
    }
}

fn simple(c: &Command, options: &ParserOptions) -> Result<ShapeCommand, String> {
    let Command::Simple(s) = c else {
        return Err(format!("not a simple command: {c}"));
    };
    let mut words = Vec::new();
    let mut redirects = Vec::new();
    let mut items: Vec<&CommandPrefixOrSuffixItem> = Vec::new();
    if let Some(p) = &s.prefix {
        items.extend(p.0.iter());
    }
    let name = s.word_or_name.as_ref();
    let suffix: Vec<&CommandPrefixOrSuffixItem> = s.suffix.iter().flat_map(|x| x.0.iter()).collect();
    for item in items {
        match item {
            CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.extend(redirect(r, options)?),
            // The grammar keeps an assignment as a word; the judge refuses it.
            CommandPrefixOrSuffixItem::AssignmentWord(_, w) => words.push(word(w, options)?),
            other => return Err(format!("a prefix the grammar should have refused: {other:?}")),
        }
    }
    if let Some(n) = name {
        words.push(word(n, options)?);
    }
    for item in suffix {
        match item {
            CommandPrefixOrSuffixItem::Word(w) => words.push(word(w, options)?),
            CommandPrefixOrSuffixItem::AssignmentWord(_, w) => words.push(word(w, options)?),
            CommandPrefixOrSuffixItem::IoRedirect(r) => redirects.extend(redirect(r, options)?),
            other => return Err(format!("a suffix the grammar should have refused: {other:?}")),
        }
    }
    Ok((words, redirects))
}

/// The reference parser's reading of `command` as a [`Shape`].
fn reference(command: &str) -> Result<Shape, String> {
    let options = ParserOptions::default();
    let tokens = uncached_tokenize_str(command, &options.tokenizer_options()).map_err(|e| format!("tokens: {e}"))?;
    let program = parse_tokens(&tokens, &options).map_err(|e| format!("parse: {e}"))?;
    let mut out = Vec::new();
    for list in &program.complete_commands {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let mut pipes = Vec::new();
            let mut push = |connector: Option<&'static str>, p: &ast::Pipeline| -> Result<(), String> {
                if p.bang || p.timed.is_some() {
                    return Err("a negated or timed pipeline".into());
                }
                let cmds = p.seq.iter().map(|c| simple(c, &options)).collect::<Result<_, _>>()?;
                pipes.push((connector, cmds));
                Ok(())
            };
            push(None, &and_or.first)?;
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) => push(Some("&&"), p)?,
                    ast::AndOr::Or(p) => push(Some("||"), p)?,
                }
            }
            out.push((pipes, matches!(sep, ast::SeparatorOperator::Async)));
        }
    }
    Ok(out)
}

/// `theirs` with a word's tilde mark raised wherever the grammar marks the
/// same word: a `~prefix` whose expansion depends on the machine (`~~`,
/// `~name`) counts as a tilde here, which only ever holds more.
fn conservative(ours: &Shape, mut theirs: Shape) -> Shape {
    for (list, their_list) in ours.iter().zip(theirs.iter_mut()) {
        for ((_, cmds), (_, their_cmds)) in list.0.iter().zip(their_list.0.iter_mut()) {
            for ((words, _), (their_words, _)) in cmds.iter().zip(their_cmds.iter_mut()) {
                for ((text, tilde), (their_text, their_tilde)) in words.iter().zip(their_words.iter_mut()) {
                    if *tilde && text == their_text && text.starts_with('~') {
                        *their_tilde = true;
                    }
                }
            }
        }
    }
    theirs
}

/// Compares the two readings of `command` when the grammar accepts it.
fn agree(command: &str) -> Result<bool, String> {
    let Ok(ours) = shell_shape(command) else {
        return Ok(false);
    };
    let theirs =
        reference(command).map_err(|e| format!("{command:?}: accepted here, refused by the reference: {e}"))?;
    let theirs = conservative(&ours, theirs);
    if ours != theirs {
        return Err(format!("{command:?}:\n  ours   {ours:?}\n  theirs {theirs:?}"));
    }
    Ok(true)
}

#[test]
fn the_corpus_reads_the_same() {
    let mut compared = 0;
    let mut wrong = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for case in corpus::all() {
        let Some(cmd) = case.dialog.command.clone() else {
            continue;
        };
        if !seen.insert(cmd.clone()) {
            continue;
        }
        match agree(&cmd) {
            Ok(true) => compared += 1,
            Ok(false) => {}
            Err(e) => wrong.push(e),
        }
    }
    assert!(wrong.is_empty(), "{} disagreements:\n{}", wrong.len(), wrong.join("\n"));
    println!("grammar: {compared} distinct corpus commands read the same by brush-parser");
    assert!(compared > 400, "only {compared} commands compared");
}

#[test]
fn hand_picked_shapes_read_the_same() {
    for cmd in [
        "a 'b c' \"d e\" f\\ g",
        "cd a && cat x || ls; grep y | wc -l & pwd",
        "echo x > out 2>&1 2>>err &>both < in",
        "cat <> rw >| clobber",
        "echo \"a\\$b\\\\c\\\"d\\q\"",
        "cargo build &&\n cargo test |\n wc -l",
        "ls;\n\ncat a\n",
        "cat ~/x ~root/y '~/z' a~b",
        "x=1",
        "cat a=b",
        "echo 2>x 3<y",
        "git log --format='%h %s' -n 3",
        "make -j4 >&/dev/null",
        "rg -n 'fn\\s+main' src |& head",
    ] {
        if let Err(e) = agree(cmd) {
            panic!("{e}");
        }
    }
}

/// Pieces a generated command is made of: words, quotes, escapes,
/// operators, redirections, newlines.
fn piece() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "a",
        "b1",
        "-x",
        "--y=z",
        "./p",
        "../q",
        "~",
        "~/h",
        "a~b",
        "x=y",
        " ",
        " ",
        " ",
        "  ",
        "'s q'",
        "''",
        "\"d q\"",
        "\"\\\"\"",
        "\"\\\\\"",
        "\"\\x\"",
        "\\ ",
        "\\a",
        "\\\\",
        "\\'",
        ";",
        "&&",
        "||",
        "|",
        "|&",
        "&",
        "\n",
        ">",
        ">>",
        "<",
        "2>",
        "2>&1",
        ">&2",
        "&>",
        "<>",
        ">|",
        "'a'\"b\"c",
        "\"'\"",
        "'\"'",
        "%",
        "@",
        ",",
        ":",
        "+",
        "=",
        "-",
        "--",
        "\\\n",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn generated_commands_read_the_same(parts in prop::collection::vec(piece(), 1..12)) {
        let cmd: String = parts.concat();
        if let Err(e) = agree(&cmd) {
            prop_assert!(false, "{}", e);
        }
    }
}
