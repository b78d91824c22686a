//! Table and property tests of the grammar.

use super::*;

/// A simple command taken out of its script.
#[derive(Debug, PartialEq)]
struct Owned {
    words: Vec<Word<'static>>,
    redirects: Vec<Redirect<'static>>,
}

fn owned(w: &Word<'_>) -> Word<'static> {
    Word {
        text: w.text.to_string().into(),
        ..*w
    }
}

/// Every simple command of `cmd`, in order.
fn split(cmd: &str) -> Result<Vec<Owned>, Refusal> {
    Ok(parse(cmd)?
        .segments()
        .map(|seg| Owned {
            words: seg.words.iter().map(owned).collect(),
            redirects: seg
                .redirects
                .iter()
                .map(|r| Redirect {
                    target: owned(&r.target),
                    write: r.write,
                })
                .collect(),
        })
        .collect())
}

fn words(cmd: &str) -> Vec<Vec<String>> {
    split(cmd)
        .unwrap()
        .into_iter()
        .map(|s| s.words.into_iter().map(|w| w.text.into_owned()).collect())
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
fn structure_is_kept() {
    // Each list as (the connector before each pipeline, its number of commands), and `&`.
    type Lists = Vec<(Vec<(Option<Connector>, usize)>, bool)>;
    let shape = |cmd: &str| -> Lists {
        let s = parse(cmd).unwrap();
        s.lists()
            .map(|l| {
                (
                    l.pipelines().map(|(c, p)| (c, p.commands().len())).collect(),
                    l.background,
                )
            })
            .collect()
    };
    let (and, or) = (Some(Connector::And), Some(Connector::Or));
    assert_eq!(
        shape("cd a && cat x || ls; grep y | wc -l & pwd"),
        vec![
            (vec![(None, 1), (and, 1), (or, 1)], false),
            (vec![(None, 2)], true),
            (vec![(None, 1)], false),
        ]
    );
    // A newline may follow `&&`, `||` and `|`.
    assert_eq!(
        shape("cargo build &&\n cargo test |\n wc -l"),
        vec![(vec![(None, 1), (and, 2)], false)]
    );
    // A lone command is a pipeline's only one.
    let s = parse("ls | wc; pwd").unwrap();
    let lone: Vec<_> = s
        .lists()
        .flat_map(|l| {
            l.pipelines()
                .map(|(_, p)| p.lone().map(|c| c.words.len()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(lone, vec![None, Some(1)]);
}

#[test]
fn removes_quotes_and_escapes() {
    assert_eq!(
        words(r#"grep -n 'a b' "c d" e\ f"#),
        vec![vec!["grep", "-n", "a b", "c d", "e f"]]
    );
    assert_eq!(words(r"c\argo test"), vec![vec!["cargo", "test"]]);
    assert_eq!(words("grep 'x;y' src"), vec![vec!["grep", "x;y", "src"]]);
    assert_eq!(words("cat .e''nv"), vec![vec!["cat", ".env"]]);
    assert_eq!(
        words("cat config/api''_key.txt"),
        vec![vec!["cat", "config/api_key.txt"]]
    );
    let seg = &split("cat .e''nv plain").unwrap()[0];
    assert!(seg.words[1].quoted);
    assert!(!seg.words[2].quoted);
}

#[test]
fn redirections_are_recorded() {
    let segs = split("cargo test > out.txt 2>&1 2>>err.log &>both < in").unwrap();
    assert_eq!(segs.len(), 1);
    let targets: Vec<_> = segs[0].redirects.iter().map(|r| r.target.text.as_ref()).collect();
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
        ("cat $'\\x2e'env", Refusal::Expansion),
        ("ls *.rs", Refusal::Glob),
        ("cat {a,/etc/passwd}", Refusal::Glob),
        ("cat x{1..3}", Refusal::Glob),
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
        ("ls;; ls", Refusal::EmptySegment),
        ("true;&>x echo", Refusal::EmptySegment),
        ("ls & ; ls", Refusal::EmptySegment),
        ("cargo test >", Refusal::MissingTarget),
        ("if true; then cat x; fi", Refusal::Compound),
        ("for f in a; do cat f; done", Refusal::Compound),
        ("while cat x; do ls; done", Refusal::Compound),
        ("time cargo test", Refusal::Compound),
        ("ls; function", Refusal::Compound),
    ];
    for (cmd, want) in cases {
        assert_eq!(parse(cmd).err(), Some(*want), "{cmd:?}");
    }
}

#[test]
fn quoted_specials_are_literal() {
    assert_eq!(words("grep 'fn.*main' src"), vec![vec!["grep", "fn.*main", "src"]]);
    assert_eq!(words("rg '$(x)'"), vec![vec!["rg", "$(x)"]]);
    assert_eq!(words("cargo test;"), vec![vec!["cargo", "test"]]);
    assert_eq!(words("cargo test &"), vec![vec!["cargo", "test"]]);
    assert_eq!(words("ls;\n\ncat a\n"), vec![vec!["ls"], vec!["cat", "a"]]);
    // A quoted reserved word is an ordinary word.
    assert_eq!(words("'if' x"), vec![vec!["if", "x"]]);
    assert_eq!(words("cat if"), vec![vec!["cat", "if"]]);
}

/// Every token of `lexer` (and the refusal that ends them, if one does).
fn all_tokens(mut lexer: lex::Lexer<'_>) -> Vec<Result<Tok<'_>, Refusal>> {
    let mut out = vec![];
    loop {
        match lexer.next_tok() {
            Ok(Some(tok)) => out.push(Ok(tok)),
            Ok(None) => return out,
            Err(e) => {
                out.push(Err(e));
                return out;
            }
        }
    }
}

#[test]
fn plain_words_end_where_the_shell_ends_them() {
    let cases: &[(&str, Vec<Vec<&str>>)] = &[
        ("ab;cd", vec![vec!["ab"], vec!["cd"]]),
        ("ab|cd", vec![vec!["ab"], vec!["cd"]]),
        ("ab&&cd||ef", vec![vec!["ab"], vec!["cd"], vec!["ef"]]),
        ("ab\tcd\nef", vec![vec!["ab", "cd"], vec!["ef"]]),
        ("a#b c", vec![vec!["a#b", "c"]]),
        ("a=b c", vec![vec!["a=b", "c"]]),
        ("a~b c:d", vec![vec!["a~b", "c:d"]]),
        ("ab'c d' e", vec![vec!["abc d", "e"]]),
        ("ab\\ c", vec![vec!["ab c"]]),
        ("x 12>y z", vec![vec!["x", "z"]]),
        ("  x  ", vec![vec!["x"]]),
    ];
    for (cmd, want) in cases {
        assert_eq!(&words(cmd), want, "{cmd:?}");
    }
    let redirected = split("x 12>y z").unwrap();
    assert_eq!(redirected[0].redirects[0].target.text, "y");
    assert!(
        split("ab\rcd").is_err(),
        "a carriage return after a plain run is refused"
    );
}

proptest::proptest! {
    /// The plain-word path reads every command exactly as the
    /// character-by-character reading does (tokens, and refusals).
    #[test]
    fn plain_words_are_read_as_characters_are(s in "[ab2 \t\n;&|<>='\"\\\\#~:$!*.\r-]{0,24}") {
        proptest::prop_assert_eq!(all_tokens(lex::tokens(&s)), all_tokens(lex::tokens_char_by_char(&s)));
    }

    #[test]
    fn never_panics(s in "\\PC{0,40}") {
        let _ = parse(&s);
    }

    #[test]
    fn plain_words_round_trip(ws in proptest::collection::vec("[a-z0-9_./-]{1,8}", 1..6)) {
        let joined = ws.join(" ");
        let segs = split(&joined);
        proptest::prop_assume!(segs.is_ok());
        let got: Vec<String> = segs.unwrap().remove(0).words.into_iter().map(|w| w.text.into_owned()).collect();
        proptest::prop_assert_eq!(got, ws);
    }
}
