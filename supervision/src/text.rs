//! Text helpers shared by the classifiers: normalisation and word-bounded marker search.

/// True for characters that change how text renders or reads without being
/// visible: zero-width spaces and joiners, bidirectional overrides and
/// isolates, the byte-order mark, soft hyphen, the characters HFS+ ignores in
/// file names (so `.g\u{200C}it` is `.git` there), blank fillers.
pub(crate) fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FEFF}'
            | '\u{FFA0}'
    )
}

/// Lower-cases, drops invisible characters, turns typographic apostrophes into
/// `'` and collapses every run of whitespace to one space. Used for matching
/// markers, never for deciding what a command does.
pub(crate) fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    Normalizer::new(&mut out).push(text);
    out
}

/// [`normalize`] of several pieces as if they were joined, appended to `out`
/// as they come (no joined copy is made first). Whitespace is collapsed
/// across the pieces, and none leads what this normaliser writes.
pub(crate) struct Normalizer<'o> {
    out: &'o mut String,
    /// Where this normaliser's text starts in `out`.
    start: usize,
    /// Whitespace was read since the last character written.
    space: bool,
}

impl<'o> Normalizer<'o> {
    pub(crate) fn new(out: &'o mut String) -> Normalizer<'o> {
        Normalizer {
            start: out.len(),
            out,
            space: false,
        }
    }

    /// Reads `text`.
    pub(crate) fn push(&mut self, text: &str) -> &mut Self {
        if text.bytes().all(|b| b.is_ascii_graphic()) {
            // One word (most pieces are one): copied and lower-cased at once.
            if !text.is_empty() {
                self.gap();
                let from = self.out.len();
                self.out.push_str(text);
                self.out[from..].make_ascii_lowercase();
            }
        } else if text.is_ascii() {
            self.push_ascii(text);
        } else {
            self.push_chars(text);
        }
        self
    }

    /// Reads one whitespace character.
    pub(crate) fn space(&mut self) -> &mut Self {
        self.space = true;
        self
    }

    /// Writes the space a run of whitespace before a character stands for.
    fn gap(&mut self) {
        if self.space && self.out.len() > self.start {
            self.out.push(' ');
        }
        self.space = false;
    }

    fn push_chars(&mut self, text: &str) {
        for c in text.chars().filter(|c| !is_invisible(*c)) {
            let c = match c {
                '\u{2018}' | '\u{2019}' | '\u{02BC}' => '\'',
                other => other,
            };
            if c.is_whitespace() {
                self.space = true;
                continue;
            }
            self.gap();
            self.out.extend(c.to_lowercase());
        }
    }

    /// [`Normalizer::push_chars`] for ASCII text. Most text is words
    /// between single spaces: it is copied and lower-cased at once.
    fn push_ascii(&mut self, text: &str) {
        let words = text.trim_matches(' ');
        if !single_spaced(words) {
            return self.push_runs(text);
        }
        self.space |= words.len() < text.len() && text.starts_with(' ');
        if words.is_empty() {
            return;
        }
        self.gap();
        let from = self.out.len();
        self.out.push_str(words);
        self.out[from..].make_ascii_lowercase();
        self.space = text.ends_with(' ');
    }

    /// [`Normalizer::push_ascii`] for any ASCII text: runs of non-space
    /// bytes copied and lower-cased at once, each run of whitespace one space.
    fn push_runs(&mut self, text: &str) {
        let bytes = text.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let gap = i;
            while i < bytes.len() && is_space(bytes[i]) {
                i += 1;
            }
            self.space |= i > gap;
            if i == bytes.len() {
                break;
            }
            self.gap();
            let word = i;
            while i < bytes.len() && !is_space(bytes[i]) {
                i += 1;
            }
            let from = self.out.len();
            self.out.push_str(&text[word..i]);
            self.out[from..].make_ascii_lowercase();
        }
    }
}

/// ASCII whitespace as `char::is_whitespace` reads it.
fn is_space(b: u8) -> bool {
    b.is_ascii_whitespace() || b == 0x0b
}

/// True when `text` has no whitespace but single spaces between other bytes
/// (when `text` has no space at either end).
pub(crate) fn single_spaced(text: &str) -> bool {
    // Tab, newline, vertical tab, form feed, carriage return.
    let control = |b: u8| b.wrapping_sub(b'\t') < 5;
    let bytes = text.as_bytes();
    let Some(&last) = bytes.last() else {
        return true;
    };
    // No early exit, so the loop is vectorised: most text passes.
    let odd = bytes
        .iter()
        .zip(&bytes[1..])
        .fold(false, |odd, (&b, &next)| odd | control(b) | (b == b' ' && next == b' '));
    !odd && !control(last)
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
}

/// Finds `marker` (already lower-case) in normalised `text` as a whole word:
/// where the marker begins or ends with a letter or digit, the neighbouring
/// character on that side must not be one (`_`, `-`, `.`, `/` count as
/// separators, so `GITHUB_TOKEN` contains `token` but `format` does not contain
/// `rm`). A marker ending in a letter may also be followed by a plural `s`.
pub(crate) fn contains_marker(text: &str, marker: &str) -> bool {
    let (Some(first), Some(last)) = (marker.chars().next(), marker.chars().next_back()) else {
        return false;
    };
    let mut from = 0;
    while let Some(found) = text[from..].find(marker) {
        let start = from + found;
        let end = start + marker.len();
        let before_ok = !is_word_char(first) || text[..start].chars().next_back().is_none_or(|c| !is_word_char(c));
        let after_ok = !is_word_char(last) || {
            let mut rest = text[end..].chars();
            match rest.next() {
                None => true,
                Some('s') if last.is_alphabetic() => rest.next().is_none_or(|c| !is_word_char(c)),
                Some(c) => !is_word_char(c),
            }
        };
        if before_ok && after_ok {
            return true;
        }
        from = start + first.len_utf8();
    }
    false
}

/// True when any of `markers` is in `text` (see [`contains_marker`]).
pub(crate) fn contains_any(text: &str, markers: &[&str]) -> bool {
    markers.iter().any(|m| contains_marker(text, m))
}

/// True when the match of a marker at `start..end` of `text` stands as a
/// whole word (see [`contains_marker`]).
fn bounded(text: &str, start: usize, end: usize) -> bool {
    let marker = &text[start..end];
    let (Some(first), Some(last)) = (marker.chars().next(), marker.chars().next_back()) else {
        return false;
    };
    let before_ok = !is_word_char(first) || text[..start].chars().next_back().is_none_or(|c| !is_word_char(c));
    let after_ok = !is_word_char(last) || {
        let mut rest = text[end..].chars();
        match rest.next() {
            None => true,
            Some('s') if last.is_alphabetic() => rest.next().is_none_or(|c| !is_word_char(c)),
            Some(c) => !is_word_char(c),
        }
    };
    before_ok && after_ok
}

/// Several marker tables matched in one pass over a text: which tables have
/// a marker in it as a whole word, as a bit set (bit `i` for table `i`).
pub(crate) struct MarkerSets {
    tables: &'static [&'static [&'static str]],
    automaton: std::sync::OnceLock<Option<Markers>>,
}

/// How many pieces of a text [`MarkerSets::found`] walks at once.
const LANES: usize = 4;

/// The tables' markers in one automaton, and the table bit of each marker.
/// The DFA is walked directly (not through `AhoCorasick`, which dispatches
/// each byte's step dynamically): a 4 KB command is read twice per decision.
struct Markers {
    dfa: aho_corasick::dfa::DFA,
    owner: Vec<u32>,
}

/// The table bits of the whole-word markers that end at `end` in state
/// `sid` (a special state: a match, or the dead state, which has none), and
/// are not in `set` yet.
#[cold]
fn matched(
    dfa: &aho_corasick::dfa::DFA,
    owner: &[u32],
    text: &str,
    sid: aho_corasick::automaton::StateID,
    end: usize,
    mut set: u32,
) -> u32 {
    use aho_corasick::automaton::Automaton;
    if !dfa.is_match(sid) {
        return set;
    }
    for i in 0..dfa.match_len(sid) {
        let pattern = dfa.match_pattern(sid, i);
        let bit = owner[pattern.as_usize()];
        if set & bit == 0 && bounded(text, end - dfa.pattern_len(pattern), end) {
            set |= bit;
        }
    }
    set
}

impl MarkerSets {
    pub(crate) const fn new(tables: &'static [&'static [&'static str]]) -> MarkerSets {
        MarkerSets {
            tables,
            automaton: std::sync::OnceLock::new(),
        }
    }

    /// The bit set of tables with a whole-word marker in `text` (normalised).
    pub(crate) fn found(&self, text: &str) -> u32 {
        self.found_repeating(text, None)
    }

    /// [`MarkerSets::found`], when `text[from..]` (if `repeat` is
    /// `Some(from)`) is known to repeat an earlier stretch of the text, with
    /// a space or the start before each copy and a space or the end after
    /// it: every marker wholly inside the repeat is then found in the
    /// earlier copy too, as a whole word there as well, so only markers that
    /// end within the longest marker's length of `from` are looked for in it.
    pub(crate) fn found_repeating(&self, text: &str, repeat: Option<usize>) -> u32 {
        use aho_corasick::Anchored;
        use aho_corasick::automaton::Automaton;
        let built = self.automaton.get_or_init(|| {
            let mut patterns = Vec::new();
            let mut owner = Vec::new();
            for (i, table) in self.tables.iter().enumerate() {
                for m in table.iter() {
                    patterns.push(*m);
                    owner.push(1u32 << i);
                }
            }
            aho_corasick::dfa::DFA::builder()
                .match_kind(aho_corasick::MatchKind::Standard)
                .prefilter(false)
                .build(&patterns)
                .ok()
                .map(|dfa| Markers { dfa, owner })
        });
        // Not built, or no unanchored start (neither can happen with these
        // tables and this builder): search one by one.
        let one_by_one = || {
            self.tables
                .iter()
                .enumerate()
                .filter(|(_, t)| contains_any(text, t))
                .fold(0, |set, (i, _)| set | (1 << i))
        };
        let Some(Markers { dfa, owner }) = built else {
            return one_by_one();
        };
        let lead = dfa.max_pattern_len().saturating_sub(1);
        let end = repeat.map_or(text.len(), |from| text.len().min(from + lead));
        let bytes = &text.as_bytes()[..end];
        // The text is read in `LANES` pieces stepped together: one DFA walk is
        // a chain of dependent table loads, several independent ones overlap.
        // Each lane starts early enough (the longest marker, less one byte)
        // to see every marker that ends in its piece, and reports only those.
        let piece = bytes.len().div_ceil(LANES).max(1);
        let Ok(start) = dfa.start_state(Anchored::No) else {
            return one_by_one();
        };
        // Per lane: the first byte read, the first byte a match may end at to
        // be reported here, and the end of its piece.
        let lanes: [(usize, usize, usize); LANES] = std::array::from_fn(|k| {
            let from = (k * piece).min(bytes.len());
            (from.saturating_sub(lead), from, ((k + 1) * piece).min(bytes.len()))
        });
        let mut set = 0;
        // All lanes together for as long as the shortest, then each to its end.
        let together = lanes.iter().map(|(first, _, end)| end - first).min().unwrap_or(0);
        // The lanes' states are four locals (held in registers, where an
        // array indexed by lane is stored and loaded at every step), and each
        // lane reads its own slice (no bounds check per byte).
        const _: () = assert!(LANES == 4);
        let [mut s0, mut s1, mut s2, mut s3] = [start; LANES];
        let run = |k: usize| &bytes[lanes[k].0..lanes[k].0 + together];
        let lane_bytes = run(0).iter().zip(run(1)).zip(run(2)).zip(run(3));
        for (i, (((b0, b1), b2), b3)) in lane_bytes.enumerate() {
            s0 = dfa.next_state(Anchored::No, s0, *b0);
            s1 = dfa.next_state(Anchored::No, s1, *b1);
            s2 = dfa.next_state(Anchored::No, s2, *b2);
            s3 = dfa.next_state(Anchored::No, s3, *b3);
            let special = dfa.is_special(s0) | dfa.is_special(s1) | dfa.is_special(s2) | dfa.is_special(s3);
            if special {
                for (k, sid) in [s0, s1, s2, s3].into_iter().enumerate() {
                    let (first, report, _) = lanes[k];
                    let at = first + i;
                    if dfa.is_special(sid) && at >= report {
                        set |= matched(dfa, owner, text, sid, at + 1, set);
                    }
                }
            }
        }
        let mut sids = [s0, s1, s2, s3];
        for (k, (first, report, end)) in lanes.iter().enumerate() {
            for (at, byte) in bytes.iter().enumerate().take(*end).skip(first + together) {
                sids[k] = dfa.next_state(Anchored::No, sids[k], *byte);
                if dfa.is_special(sids[k]) && at >= *report {
                    set |= matched(dfa, owner, text, sids[k], at + 1, set);
                }
            }
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_collapses_and_lowercases() {
        assert_eq!(normalize("  Bash   Command\n\tDo"), "bash command do");
        assert_eq!(normalize("Don\u{2019}t ask"), "don't ask");
        assert_eq!(normalize("cu\u{200B}rl"), "curl");
    }

    #[test]
    fn marker_sets_agree_with_one_by_one() {
        static SETS: MarkerSets = MarkerSets::new(&[&["rm", "token"], &[".env", "https://"], &["npm i"]]);
        for text in [
            "rm -rf x",
            "npm run format",
            "github_token=1 cat .env.local",
            "see https://x and npm i y",
            "tokenizer .environment",
            "",
        ] {
            let want = SETS
                .tables
                .iter()
                .enumerate()
                .filter(|(_, t)| contains_any(text, t))
                .fold(0, |set, (i, _)| set | (1 << i));
            assert_eq!(SETS.found(text), want, "{text:?}");
        }
        assert_eq!(normalize("A\tB  C\n"), "a b c");
    }

    proptest::proptest! {
        /// Texts long enough to be read in several lanes, with markers (whole,
        /// glued to words, plural) wherever the pieces happen to split.
        #[test]
        fn marker_lanes_agree_with_one_by_one(parts in proptest::collection::vec(proptest::sample::select(vec![
            "rm", "token", ".env", "https://", "npm i", "x", "confirm", " ", "s", "-", "a", "é", "npm", " i",
            "tokens", ".", "/",
        ]), 0..120)) {
            static SETS: MarkerSets = MarkerSets::new(&[&["rm", "token"], &[".env", "https://"], &["npm i"]]);
            let text: String = parts.concat();
            let want = SETS
                .tables
                .iter()
                .enumerate()
                .filter(|(_, t)| contains_any(&text, t))
                .fold(0, |set, (i, _)| set | (1 << i));
            proptest::prop_assert_eq!(SETS.found(&text), want, "{:?}", text);
        }
    }

    proptest::proptest! {
        /// Pieces read one by one normalise as the joined text does, char by
        /// char (the ASCII fast paths agree with the general reading).
        #[test]
        fn pieces_normalize_as_the_joined_text(parts in proptest::collection::vec(proptest::collection::vec(
            proptest::sample::select(vec![
                "a", "B", " ", "  ", "\t", "\n", "\u{0b}", "\r", "x y", "\u{2019}", "\u{200B}", "É", "\u{a0}", ".",
            ]), 0..6), 0..6)) {
            let pieces: Vec<String> = parts.iter().map(|p| p.concat()).collect();
            let joined = pieces.concat();
            let mut want = String::new();
            Normalizer::new(&mut want).push_chars(&joined);
            let mut got = String::from("prefix ");
            let mut n = Normalizer::new(&mut got);
            for p in &pieces {
                n.push(p);
            }
            proptest::prop_assert_eq!(&got["prefix ".len()..], want.as_str());
            proptest::prop_assert_eq!(normalize(&joined), want);
        }
    }

    #[test]
    fn markers_are_word_bounded() {
        let cases: &[(&str, &str, bool)] = &[
            ("rm -rf x", "rm", true),
            ("npm run format", "rm", false),
            ("confirm", "rm", false),
            ("github_token=1", "token", true),
            ("tokens", "token", true),
            ("tokenizer", "token", false),
            ("cat .env.local", ".env", true),
            ("cat .environment", ".env", false),
            ("server.pem", ".pem", true),
            ("npm install x", "npm i", false),
            ("npm i x", "npm i", true),
            ("see https://x", "https://", true),
            ("git  push", "git push", false),
            ("", "rm", false),
        ];
        for (text, marker, want) in cases {
            assert_eq!(contains_marker(text, marker), *want, "{marker:?} in {text:?}");
        }
    }
}
