//! Recall (seed 002 §4, SearchableBucket): what may be stashed, and how a
//! person's or an agent's search text becomes an FTS5 query. No IO: the node
//! keeps the index in SQLite. The query language is deliberately small, so
//! no input can produce an FTS5 syntax error or reach another agent's rows:
//!
//! - words are searched for together (`deploy failed` = both words);
//! - `"a phrase"` matches the words next to each other;
//! - a trailing `*` makes a word a prefix (`deplo*`);
//! - `OR` between two parts matches either;
//! - anything that is not a letter or a digit separates words.

#![cfg_attr(not(test), deny(clippy::unwrap_used))]

/// Most bytes of a search query.
pub const MAX_QUERY_BYTES: usize = 1024;
/// Most words and phrases in one query.
pub const MAX_TERMS: usize = 32;
/// Most bytes of one stashed document.
pub const MAX_DOC_BYTES: usize = 1 << 20;
/// Most bytes of a document's name.
pub const MAX_NAME_BYTES: usize = 200;
/// Most hits one search returns.
pub const MAX_HITS: u32 = 100;

/// Why a query or a document is refused (the message names what was wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct RecallError {
    pub field: &'static str,
    pub reason: String,
}

fn err(field: &'static str, reason: impl Into<String>) -> RecallError {
    RecallError {
        field,
        reason: reason.into(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Words that must appear next to each other (one word: a term).
    Phrase(Vec<String>, bool),
    Or,
}

/// Makes `query` an FTS5 MATCH expression over the `text` column.
pub fn fts_query(query: &str) -> Result<String, RecallError> {
    if query.len() > MAX_QUERY_BYTES {
        return Err(err(
            "query",
            format!("{} bytes is over the limit of {MAX_QUERY_BYTES}", query.len()),
        ));
    }
    let mut parts = vec![];
    let mut rest = query;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let body = &rest[1..];
            let Some(end) = body.find('"') else {
                let at = query.len() - rest.len();
                return Err(err("query", format!("the quote at byte {at} is not closed")));
            };
            let words = words(&body[..end]);
            let after = &body[end + 1..];
            let prefix = after.starts_with('*');
            if !words.is_empty() {
                parts.push(Part::Phrase(words, prefix));
            }
            rest = if prefix { &after[1..] } else { after };
            continue;
        }
        if c.is_whitespace() {
            rest = &rest[c.len_utf8()..];
            continue;
        }
        let end = rest
            .find(|ch: char| ch.is_whitespace() || ch == '"')
            .unwrap_or(rest.len());
        let token = &rest[..end];
        rest = &rest[end..];
        if token == "OR" {
            parts.push(Part::Or);
            continue;
        }
        let prefix = token.ends_with('*');
        let ws = words(token);
        if !ws.is_empty() {
            parts.push(Part::Phrase(ws, prefix));
        }
    }
    // OR only between two parts.
    let mut clean: Vec<Part> = vec![];
    for p in parts {
        match p {
            Part::Or if clean.last().is_none_or(|l| *l == Part::Or) => {}
            p => clean.push(p),
        }
    }
    if clean.last() == Some(&Part::Or) {
        clean.pop();
    }
    let terms = clean.iter().filter(|p| **p != Part::Or).count();
    if terms == 0 {
        return Err(err("query", "has no words to search for"));
    }
    if terms > MAX_TERMS {
        return Err(err("query", format!("{terms} words is over the limit of {MAX_TERMS}")));
    }
    let out: Vec<String> = clean
        .iter()
        .map(|p| match p {
            Part::Or => "OR".to_string(),
            Part::Phrase(ws, prefix) => format!("\"{}\"{}", ws.join(" "), if *prefix { "*" } else { "" }),
        })
        .collect();
    Ok(out.join(" "))
}

/// The words a query looks for, lowercased, each with whether it is a
/// prefix (for marking them in a snippet).
pub fn query_words(query: &str) -> Vec<(String, bool)> {
    let mut out = vec![];
    for raw in query.split_whitespace() {
        if raw == "OR" {
            continue;
        }
        let prefix = raw.trim_end_matches('"').ends_with('*');
        let ws = words(raw);
        let last = ws.len().saturating_sub(1);
        for (i, w) in ws.into_iter().enumerate() {
            out.push((w.to_lowercase(), prefix && i == last));
        }
    }
    out
}

/// Tokens of a snippet, around the first match.
const SNIPPET_BEFORE: usize = 6;
const SNIPPET_TOKENS: usize = 24;

/// A short excerpt of `text` around the first of `words` it holds, with
/// every matching word in `[brackets]` and `...` where it was cut.
pub fn snippet(text: &str, words: &[(String, bool)]) -> String {
    let tokens: Vec<(usize, usize)> = token_spans(text);
    let hit = |(a, b): (usize, usize)| {
        let t = text[a..b].to_lowercase();
        words
            .iter()
            .any(|(w, prefix)| if *prefix { t.starts_with(w.as_str()) } else { t == *w })
    };
    let first = tokens.iter().position(|&t| hit(t)).unwrap_or(0);
    let from = first.saturating_sub(SNIPPET_BEFORE);
    let to = (from + SNIPPET_TOKENS).min(tokens.len());
    if tokens.is_empty() {
        return text.chars().take(160).collect();
    }
    let start = if from == 0 { 0 } else { tokens[from].0 };
    let end = if to == tokens.len() {
        text.len()
    } else {
        tokens[to - 1].1
    };
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    }
    let mut at = start;
    for &(a, b) in &tokens[from..to] {
        out.push_str(&text[at..a]);
        if hit((a, b)) {
            out.push('[');
            out.push_str(&text[a..b]);
            out.push(']');
        } else {
            out.push_str(&text[a..b]);
        }
        at = b;
    }
    out.push_str(&text[at..end]);
    if end < text.len() {
        out.push_str("...");
    }
    out.replace(['\n', '\r', '\t'], " ")
}

/// Byte spans of the letters-and-digits runs of `text`.
fn token_spans(text: &str) -> Vec<(usize, usize)> {
    let mut out = vec![];
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// The letters-and-digits runs of `s` (what FTS5's unicode61 tokenizer keeps).
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// Checks a document to stash.
pub fn check_doc(name: &str, text: &str) -> Result<(), RecallError> {
    check_name(name)?;
    if text.trim().is_empty() {
        return Err(err("text", "is empty"));
    }
    if text.len() > MAX_DOC_BYTES {
        return Err(err(
            "text",
            format!("{} bytes is over the limit of {MAX_DOC_BYTES}", text.len()),
        ));
    }
    if let Some((i, c)) = text
        .char_indices()
        .find(|&(_, c)| c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
    {
        return Err(err(
            "text",
            format!("control character U+{:04X} at byte {i} is not allowed", c as u32),
        ));
    }
    Ok(())
}

/// Checks a document's name.
pub fn check_name(name: &str) -> Result<(), RecallError> {
    if name.trim().is_empty() {
        return Err(err("name", "is empty"));
    }
    if name.len() > MAX_NAME_BYTES {
        return Err(err(
            "name",
            format!("{} bytes is over the limit of {MAX_NAME_BYTES}", name.len()),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(err("name", "has a control character"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn queries_become_quoted_terms() {
        let table: &[(&str, &str)] = &[
            ("deploy failed", "\"deploy\" \"failed\""),
            ("\"exact phrase\" here", "\"exact phrase\" \"here\""),
            ("deplo*", "\"deplo\"*"),
            ("a OR b", "\"a\" OR \"b\""),
            ("OR a OR OR b OR", "\"a\" OR \"b\""),
            ("foo-bar", "\"foo bar\""),
            ("NEAR(a b) AND c:d", "\"NEAR a\" \"b\" \"AND\" \"c d\""),
            ("  \u{e9}t\u{e9}  ", "\"\u{e9}t\u{e9}\""),
            ("\"a\"* b", "\"a\"* \"b\""),
            ("{agent} : x", "\"agent\" \"x\""),
        ];
        for (q, want) in table {
            assert_eq!(fts_query(q).as_deref(), Ok(*want), "{q}");
        }
    }

    #[test]
    fn bad_queries_say_why() {
        let table: &[(&str, &str)] = &[
            ("", "no words"),
            ("&& || ;", "no words"),
            ("\"unclosed", "not closed"),
            ("OR", "no words"),
        ];
        for (q, why) in table {
            let e = fts_query(q).expect_err(q);
            assert!(e.to_string().contains(why), "{q}: {e}");
        }
        let big = "word ".repeat(2_000);
        assert!(
            fts_query(&big)
                .expect_err("10 KB")
                .to_string()
                .contains("over the limit")
        );
        let many = "w ".repeat(MAX_TERMS + 1);
        assert!(fts_query(&many).expect_err("many").to_string().contains("words"));
    }

    #[test]
    fn snippets_mark_the_words_around_the_first_match() {
        let w = query_words("rotation \"signing key\" vau*");
        assert_eq!(
            w,
            [
                ("rotation".into(), false),
                ("signing".into(), false),
                ("key".into(), false),
                ("vau".into(), true)
            ]
        );
        assert_eq!(
            snippet("The Signing key lives in the vault.", &w),
            "The [Signing] [key] lives in the [vault]."
        );
        let long = format!("{} rotation {}", "a ".repeat(30), "b ".repeat(30));
        let s = snippet(&long, &w);
        assert!(
            s.starts_with("...") && s.ends_with("...") && s.contains("[rotation]"),
            "{s}"
        );
        assert_eq!(snippet("two\nlines", &query_words("lines")), "two [lines]");
        assert_eq!(snippet("", &w), "");
    }

    #[test]
    fn documents_are_checked() {
        check_doc("notes.md", "some text\nmore").expect("fine");
        assert!(check_doc("", "x").expect_err("name").to_string().starts_with("name"));
        assert!(check_doc("n", " ").expect_err("empty").to_string().starts_with("text"));
        assert!(
            check_doc("n", "a\u{1b}[2J")
                .expect_err("esc")
                .to_string()
                .contains("U+001B")
        );
        let big = "x".repeat(MAX_DOC_BYTES + 1);
        assert!(
            check_doc("n", &big)
                .expect_err("big")
                .to_string()
                .contains("over the limit")
        );
    }

    proptest! {
        /// Whatever the input, the output is only quoted runs of letters and
        /// digits, `*` and `OR`: nothing FTS5 could read as syntax.
        #[test]
        fn output_is_only_quoted_words(q in "\\PC{0,200}") {
            if let Ok(out) = fts_query(&q) {
                let mut rest = out.as_str();
                while !rest.is_empty() {
                    rest = rest.trim_start();
                    if let Some(r) = rest.strip_prefix("OR") { rest = r; continue; }
                    prop_assert!(rest.starts_with('"'), "{out}");
                    let end = rest[1..].find('"').map(|e| e + 1);
                    prop_assert!(end.is_some(), "{out}");
                    let inner = &rest[1..end.unwrap_or(1)];
                    prop_assert!(inner.chars().all(|c| c.is_alphanumeric() || c == ' '), "{out}");
                    rest = &rest[end.unwrap_or(0) + 1..];
                    if let Some(r) = rest.strip_prefix('*') { rest = r; }
                }
            }
        }
    }
}
