//! The compiled keyword [`Trigger`]: which keywords a clean, attributed
//! transcript [`Delta`] contains, after the speaker filter.
//!
//! Matching is one Aho-Corasick automaton over every keyword, run in
//! overlapping mode so that a word-mode keyword rejected at one position
//! (`segfaults`) never hides another keyword, or another occurrence, that
//! overlaps it. The common path (a delta with no hit) allocates nothing.
//!
//! Case. ASCII letters fold fully (`PANIC` = `panic` = `PaNiC`). Non-ASCII
//! letters fold through variants of the keyword: as given, with its non-ASCII
//! letters all lowercased, all uppercased, and title-cased (first letter
//! upper, the other non-ASCII letters lower). So `Échec` finds `échec`,
//! `ÉCHEC` and `Échec`, `straße` finds `STRASSE`; an occurrence whose
//! non-ASCII letters mix cases in any other way (`éCHÉc`) is not found.
//! That is deliberate: full Unicode folding would mean rewriting every delta
//! (and its byte offsets) before the scan, for a rare gain.

use std::collections::HashMap;
use std::ops::Range;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::Error;
use crate::attachment::{Attachment, Case, Keyword, Mode, Speakers};

/// Characters of context kept on each side of a match in an [`Excerpt`].
pub const EXCERPT_CONTEXT_CHARS: usize = 80;

/// Largest estimated DFA, in bytes. Above it the automaton is a contiguous
/// NFA: about half as fast as a cache-resident DFA and ten times smaller,
/// and faster than a DFA that no longer fits the cache (measured with
/// `examples/throughput.rs`: 1,000 keywords DFA ~225 MB/s, NFA ~120 MB/s;
/// 10,000 keywords DFA of 17 MB ~35 MB/s, NFA ~75 MB/s). A DFA over 10,000
/// keywords of 256 bytes would take gigabytes.
const DFA_MAX_BYTES: usize = 8 * 1024 * 1024;

/// One clean transcript delta, as the attributed transcript stream carries
/// it (`{conversation, seq, speaker, text}`), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delta<'a> {
    pub conversation: &'a str,
    pub seq: u64,
    /// `human` | `agent` | `tool` | `system` | `monitor:<agent>`.
    pub speaker: &'a str,
    pub text: &'a str,
}

/// A keyword that fired in one delta: its first occurrence there, with an
/// excerpt, and how often it occurs in the delta.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    pub keyword: Keyword,
    /// Index into the attachment's (deduplicated) keywords.
    pub keyword_index: usize,
    pub seq: u64,
    pub speaker: String,
    /// Byte range of the first occurrence in the delta's text.
    pub range: Range<usize>,
    /// Occurrences of this keyword in the delta (overlapping ones included).
    pub occurrences: u32,
    pub excerpt: Excerpt,
}

/// The first occurrence with up to [`EXCERPT_CONTEXT_CHARS`] characters of
/// context each side, cut on char boundaries; raw text (the trigger message
/// renders it on one line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Excerpt {
    pub before: String,
    pub matched: String,
    pub after: String,
    /// Text precedes `before` in the delta.
    pub cut_before: bool,
    /// Text follows `after` in the delta.
    pub cut_after: bool,
}

/// An attachment's trigger, compiled once.
#[derive(Debug, Clone)]
pub struct Trigger {
    ac: AhoCorasick,
    /// Pattern id -> keyword index (a keyword has up to four case variants).
    pattern_keyword: Vec<u32>,
    keywords: Vec<Keyword>,
    speakers: Speakers,
    monitor: String,
}

impl Trigger {
    pub fn new(attachment: &Attachment) -> Result<Trigger, Error> {
        let trigger = attachment.trigger();
        let mut patterns: Vec<String> = Vec::with_capacity(trigger.keywords.len());
        let mut pattern_keyword = Vec::with_capacity(trigger.keywords.len());
        for (i, k) in trigger.keywords.iter().enumerate() {
            let index = u32::try_from(i).map_err(|_| Error::Matcher("too many keywords".into()))?;
            for v in variants(&k.text, trigger.case) {
                patterns.push(v);
                pattern_keyword.push(index);
            }
        }
        let kind = if dfa_estimate(&patterns, trigger.case) <= DFA_MAX_BYTES {
            AhoCorasickKind::DFA
        } else {
            AhoCorasickKind::ContiguousNFA
        };
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::Standard)
            .ascii_case_insensitive(trigger.case == Case::Insensitive)
            .kind(Some(kind))
            .build(&patterns)
            .map_err(|e| Error::Matcher(e.to_string()))?;
        Ok(Trigger {
            ac,
            pattern_keyword,
            keywords: trigger.keywords.clone(),
            speakers: trigger.speakers.clone(),
            monitor: attachment.monitor().to_string(),
        })
    }

    pub fn keywords(&self) -> &[Keyword] {
        &self.keywords
    }

    /// Heap bytes of the automaton (for the node's accounting).
    pub fn memory_usage(&self) -> usize {
        self.ac.memory_usage()
    }

    /// Whether a delta of this speaker is matched at all: never this
    /// monitor's own advice (`monitor:NAME`, or `monitor:NAME@NODE` as a
    /// remote node may write it), otherwise as the speaker filter says.
    pub fn admits(&self, speaker: &str) -> bool {
        if self.is_own(speaker) {
            return false;
        }
        match &self.speakers {
            Speakers::All => true,
            Speakers::Only(list) => list.iter().any(|s| s.is(speaker)),
        }
    }

    fn is_own(&self, speaker: &str) -> bool {
        speaker
            .strip_prefix("monitor:")
            .and_then(|rest| rest.strip_prefix(self.monitor.as_str()))
            .is_some_and(|tail| tail.is_empty() || tail.starts_with('@'))
    }

    /// Every occurrence in `text` that counts for its keyword's mode, as
    /// `(keyword index, byte range)`, in the automaton's order (by end).
    /// No speaker filter, no allocation.
    pub fn occurrences<'t>(&'t self, text: &'t str) -> impl Iterator<Item = (usize, Range<usize>)> + 't {
        // Overlapping search is supported by every Standard-kind automaton,
        // which is the only kind `new` builds; an error cannot happen.
        self.ac
            .try_find_overlapping_iter(text)
            .into_iter()
            .flatten()
            .filter_map(move |m| {
                let k = *self.pattern_keyword.get(m.pattern().as_usize())? as usize;
                let keyword = self.keywords.get(k)?;
                let counts = match keyword.mode {
                    Mode::Substring => true,
                    Mode::Word => delimited(text, m.start(), m.end()),
                };
                counts.then(|| (k, m.range()))
            })
    }

    /// The keywords that fire in this delta, one [`Hit`] per keyword (its
    /// first occurrence), ordered by position. Empty when the speaker is not
    /// admitted.
    pub fn hits(&self, delta: &Delta<'_>) -> Vec<Hit> {
        if !self.admits(delta.speaker) {
            return Vec::new();
        }
        let mut hits: Vec<Hit> = Vec::new();
        let mut by_keyword: HashMap<usize, usize> = HashMap::new();
        for (k, range) in self.occurrences(delta.text) {
            if let Some(&at) = by_keyword.get(&k) {
                let hit = &mut hits[at];
                hit.occurrences = hit.occurrences.saturating_add(1);
                if range.start < hit.range.start {
                    hit.excerpt = excerpt(delta.text, range.clone());
                    hit.range = range;
                }
                continue;
            }
            let Some(keyword) = self.keywords.get(k) else { continue };
            by_keyword.insert(k, hits.len());
            hits.push(Hit {
                keyword: keyword.clone(),
                keyword_index: k,
                seq: delta.seq,
                speaker: delta.speaker.to_string(),
                excerpt: excerpt(delta.text, range.clone()),
                range,
                occurrences: 1,
            });
        }
        hits.sort_by_key(|h| (h.range.start, h.keyword_index));
        hits
    }
}

/// An upper estimate of a DFA's size: one state per pattern byte, each a
/// row of 4-byte transitions over the byte classes (rounded up to a power
/// of two, as the DFA strides them).
fn dfa_estimate(patterns: &[String], case: Case) -> usize {
    let mut seen = [false; 256];
    let mut states = 1usize;
    for p in patterns {
        states += p.len();
        for &b in p.as_bytes() {
            let b = if case == Case::Insensitive {
                b.to_ascii_lowercase()
            } else {
                b
            };
            seen[usize::from(b)] = true;
        }
    }
    let classes = seen.iter().filter(|&&s| s).count() + 1;
    states.saturating_mul(classes.next_power_of_two()).saturating_mul(4)
}

/// A word character for `word` mode: Unicode alphanumeric or `_`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The match is neither preceded nor followed by a word character.
fn delimited(text: &str, start: usize, end: usize) -> bool {
    let (Some(pre), Some(post)) = (text.get(..start), text.get(end..)) else {
        return false;
    };
    !pre.chars().next_back().is_some_and(is_word) && !post.chars().next().is_some_and(is_word)
}

/// The patterns for one keyword (see the module doc on case).
fn variants(text: &str, case: Case) -> Vec<String> {
    let mut out = vec![text.to_string()];
    if case == Case::Sensitive || text.is_ascii() {
        return out;
    }
    let map = |upper_first: bool, upper_rest: bool| -> String {
        let mut s = String::with_capacity(text.len());
        for (i, c) in text.chars().enumerate() {
            if c.is_ascii() {
                s.push(c);
            } else if (i == 0 && upper_first) || (i > 0 && upper_rest) {
                s.extend(c.to_uppercase());
            } else {
                s.extend(c.to_lowercase());
            }
        }
        s
    };
    for v in [map(false, false), map(true, true), map(true, false)] {
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn excerpt(text: &str, range: Range<usize>) -> Excerpt {
    let pre = text.get(..range.start).unwrap_or_default();
    let post = text.get(range.end..).unwrap_or_default();
    let from = pre
        .char_indices()
        .rev()
        .nth(EXCERPT_CONTEXT_CHARS - 1)
        .map_or(0, |(i, _)| i);
    let to = post.char_indices().nth(EXCERPT_CONTEXT_CHARS).map(|(i, _)| i);
    Excerpt {
        before: pre[from..].to_string(),
        matched: text.get(range).unwrap_or_default().to_string(),
        after: post[..to.unwrap_or(post.len())].to_string(),
        cut_before: from > 0,
        cut_after: to.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_cover_the_usual_cases() {
        assert_eq!(variants("panic", Case::Insensitive), vec!["panic"]);
        assert_eq!(variants("Échec", Case::Sensitive), vec!["Échec"]);
        let v = variants("Échéance", Case::Insensitive);
        for want in ["Échéance", "échéance", "ÉCHÉANCE"] {
            // the automaton folds ASCII, so variants only fix non-ASCII letters
            assert!(v.iter().any(|p| p.eq_ignore_ascii_case(want)), "{want} in {v:?}");
        }
        let v = variants("straße", Case::Insensitive);
        assert!(v.iter().any(|p| p.eq_ignore_ascii_case("STRASSE")), "{v:?}");
    }

    #[test]
    fn delimiting() {
        let t = "a segfault, segfaults _segfault é";
        assert!(delimited(t, 2, 10));
        assert!(!delimited(t, 12, 20)); // "segfaults" -> followed by 's'
        assert!(!delimited(t, 23, 31)); // "_segfault" -> preceded by '_'
        assert!(delimited("x", 0, 1));
        assert!(!delimited("éx", 2, 3));
    }

    #[test]
    fn excerpts_cut_on_char_boundaries() {
        let text = format!("{}KEY{}", "é".repeat(100), "ü".repeat(100));
        let start = "é".repeat(100).len();
        let e = excerpt(&text, start..start + 3);
        assert_eq!(e.before.chars().count(), EXCERPT_CONTEXT_CHARS);
        assert_eq!(e.after.chars().count(), EXCERPT_CONTEXT_CHARS);
        assert_eq!(e.matched, "KEY");
        assert!(e.cut_before && e.cut_after);
        let e = excerpt("a KEY b", 2..5);
        assert_eq!((e.before.as_str(), e.after.as_str()), ("a ", " b"));
        assert!(!e.cut_before && !e.cut_after);
    }
}
