//! The matcher over known secret values (pure): one Aho-Corasick automaton
//! over every value, built when the set of values changes. Every occurrence
//! of any value is found, overlapping ones included, and each run of bytes
//! they cover becomes `[redacted: NAME]` (the name of the run's first value),
//! so no part of a value survives next to another.

use std::borrow::Cow;
use std::ops::Range;

use aho_corasick::automaton::Automaton;
use aho_corasick::nfa::noncontiguous::{Builder, NFA};
use aho_corasick::{Anchored, BuildError, Input, MatchKind};

/// Values shorter than this are not redacted: a handful of characters would
/// blank ordinary words all over a transcript.
pub const MIN_SECRET_LEN: usize = 6;

/// What a redacted run reads as.
pub fn marker(name: &str) -> String {
    format!("[redacted: {name}]")
}

/// The automaton and the name of each value it finds.
pub struct Matcher {
    nfa: Option<NFA>,
    names: Vec<String>,
    max_len: usize,
    first_bytes: [bool; 256],
}

impl Default for Matcher {
    fn default() -> Matcher {
        Matcher::empty()
    }
}

impl Matcher {
    /// Matches nothing.
    pub fn empty() -> Matcher {
        Matcher {
            nfa: None,
            names: vec![],
            max_len: 0,
            first_bytes: [false; 256],
        }
    }

    /// A matcher over `(name, value)` pairs. A value given under several
    /// names is reported under the first of them in name order; values
    /// shorter than `MIN_SECRET_LEN` are left out. Fails only when the
    /// values are too many for one automaton (billions of bytes).
    pub fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Matcher, BuildError> {
        let mut pairs: Vec<(&str, &str)> = secrets
            .into_iter()
            .filter(|(_, v)| v.len() >= MIN_SECRET_LEN)
            .map(|(n, v)| (v, n))
            .collect();
        pairs.sort();
        pairs.dedup_by(|b, a| a.0 == b.0);
        if pairs.is_empty() {
            return Ok(Matcher::empty());
        }
        let nfa = Builder::new()
            .match_kind(MatchKind::Standard)
            .build(pairs.iter().map(|(v, _)| v.as_bytes()))?;
        let mut first_bytes = [false; 256];
        for (v, _) in &pairs {
            first_bytes[v.as_bytes()[0] as usize] = true;
        }
        Ok(Matcher {
            max_len: pairs.iter().map(|(v, _)| v.len()).max().unwrap_or(0),
            names: pairs.iter().map(|(_, n)| n.to_string()).collect(),
            nfa: Some(nfa),
            first_bytes,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.nfa.is_none()
    }

    /// How many values it matches.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// The longest value, in bytes.
    pub fn max_len(&self) -> usize {
        self.max_len
    }

    /// The byte runs of `hay` that values cover, in order and disjoint, each
    /// with the name of the first value in it.
    pub fn covered(&self, hay: &[u8]) -> Vec<(Range<usize>, &str)> {
        let Some(nfa) = &self.nfa else { return vec![] };
        let Ok(found) = nfa.try_find_overlapping_iter(Input::new(hay)) else {
            return vec![];
        };
        let mut all: Vec<(Range<usize>, usize)> = found.map(|m| (m.range(), m.pattern().as_usize())).collect();
        if all.is_empty() {
            return vec![];
        }
        all.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
        let mut out: Vec<(Range<usize>, &str)> = vec![];
        for (r, p) in all {
            match out.last_mut() {
                Some((last, _)) if r.start <= last.end => last.end = last.end.max(r.end),
                _ => out.push((r, self.names.get(p).map(String::as_str).unwrap_or("secret"))),
            }
        }
        out
    }

    /// `text` with every covered run replaced by its marker.
    pub fn redact_str<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let runs = self.covered(text.as_bytes());
        if runs.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (r, name) in runs {
            // Values are UTF-8 and so is `text`: a run starts and ends on
            // character boundaries.
            out.push_str(text.get(at..r.start).unwrap_or_default());
            out.push_str(&marker(name));
            at = r.end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        Cow::Owned(out)
    }

    /// The earliest position `p` in `hay` from which the rest (at least
    /// `min_len` bytes) is the beginning of some value, so more bytes could
    /// complete it: what a stream holds back. Within a step budget; past it,
    /// the earliest position not yet ruled out (holding more never leaks).
    pub fn partial_tail(&self, hay: &[u8], min_len: usize) -> Option<usize> {
        let nfa = self.nfa.as_ref()?;
        let from = hay.len().saturating_sub(self.max_len.saturating_sub(1));
        let last = hay.len().checked_sub(min_len.max(1))?;
        if from > last {
            return None;
        }
        // Unanchored, the automaton ends in its start state exactly when no
        // suffix of the window begins a value: the common case, O(window).
        let mut sid = nfa.start_state(Anchored::No).ok()?;
        for &b in &hay[from..] {
            sid = nfa.next_state(Anchored::No, sid, b);
        }
        if nfa.is_start(sid) {
            return None;
        }
        let start = nfa.start_state(Anchored::Yes).ok()?;
        let mut budget = 16 * (hay.len() - from) + 4096;
        for p in from..=last {
            if !self.first_bytes[hay[p] as usize] {
                continue;
            }
            let mut s = start;
            let mut alive = true;
            for &b in &hay[p..] {
                if budget == 0 {
                    return Some(p);
                }
                budget -= 1;
                s = nfa.next_state(Anchored::Yes, s, b);
                if nfa.is_dead(s) {
                    alive = false;
                    break;
                }
            }
            if alive {
                return Some(p);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pairs: &[(&str, &str)]) -> Matcher {
        Matcher::new(pairs.iter().copied()).expect("matcher")
    }

    #[test]
    fn values_become_their_names_markers() {
        let m = m(&[("API_KEY", "sk-abc123def"), ("TOKEN", "EoQBCj-token-body")]);
        assert_eq!(m.redact_str("nothing here"), "nothing here");
        assert!(matches!(m.redact_str("nothing here"), Cow::Borrowed(_)));
        assert_eq!(
            m.redact_str("key=sk-abc123def token=EoQBCj-token-body!"),
            "key=[redacted: API_KEY] token=[redacted: TOKEN]!"
        );
        assert_eq!(
            m.redact_str("sk-abc123defsk-abc123def"),
            "[redacted: API_KEY]",
            "adjacent runs are one"
        );
        assert_eq!(m.redact_str("é sk-abc123def ü"), "é [redacted: API_KEY] ü");
    }

    #[test]
    fn overlapping_values_leave_nothing_of_either() {
        let m = m(&[("A", "xxabcdef"), ("B", "cdefghij")]);
        assert_eq!(m.redact_str("..xxabcdefghij.."), "..[redacted: A]..");
        let m2 = self::m(&[("SHORT", "abcdef"), ("LONG", "abcdefghij")]);
        assert_eq!(m2.redact_str("abcdefghij"), "[redacted: LONG]");
    }

    #[test]
    fn short_values_and_duplicates() {
        let m = m(&[("TINY", "abc"), ("B_NAME", "same-value"), ("A_NAME", "same-value")]);
        assert_eq!(m.len(), 1);
        assert_eq!(m.redact_str("abc same-value"), "abc [redacted: A_NAME]");
        assert!(Matcher::new([]).expect("empty").is_empty());
    }

    #[test]
    fn the_partial_tail_is_the_earliest_beginning_of_a_value() {
        let m = m(&[("K", "secret-value-1"), ("L", "other-secret")]);
        assert_eq!(m.partial_tail(b"hello secr", 3), Some(6));
        assert_eq!(m.partial_tail(b"hello se", 3), None, "shorter than the hold minimum");
        assert_eq!(m.partial_tail(b"hello se", 1), Some(6));
        assert_eq!(m.partial_tail(b"hello world", 1), None);
        assert_eq!(m.partial_tail(b"x other-secre", 3), Some(2));
        assert_eq!(m.partial_tail(b"", 1), None);
    }
}
