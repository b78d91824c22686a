//! Table and property tests of the grammar.

use super::*;

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
    let s = parse("cd a && cat x || ls; grep y | wc -l & pwd").unwrap();
    assert_eq!(s.lists.len(), 3);
    let first = &s.lists[0];
    assert_eq!(first.rest.len(), 2);
    assert_eq!(first.rest[0].0, Connector::And);
    assert_eq!(first.rest[1].0, Connector::Or);
    assert!(!first.background);
    assert_eq!(s.lists[1].first.commands.len(), 2);
    assert!(s.lists[1].background);
    assert!(!s.lists[2].background);
    // A newline may follow `&&`, `||` and `|`.
    let s = parse("cargo build &&\n cargo test |\n wc -l").unwrap();
    assert_eq!(s.lists.len(), 1);
    assert_eq!(s.lists[0].rest[0].1.commands.len(), 2);
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

proptest::proptest! {
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
