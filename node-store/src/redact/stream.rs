//! Redaction of a byte stream (the terminal a subscriber is sent), pure: a
//! value split across two reads is still found. Each step scans the raw
//! bytes already sent that a value could still end in (at most the longest
//! value less one), the bytes held back, and the new chunk.
//!
//! What is held back: the stream's end when it is the beginning of a value
//! at least `HOLD_MIN` bytes long (so at most the longest value less one
//! byte), until the next chunk or a flush. Shorter beginnings go out at
//! once: a chunk that happens to end in a value's first byte or two is
//! common (any letter begins some value when there are fifty), and holding
//! it would delay the terminal's echo; when such a beginning turns out to be
//! a value, the rest of it is replaced as it arrives, so at most
//! `HOLD_MIN - 1` of its first bytes are shown (a value's first bytes are
//! usually its well-known prefix, like `sk-`).

use super::matcher::{Matcher, marker};

/// The shortest beginning of a value that is held back.
pub const HOLD_MIN: usize = 3;

/// One subscriber's redaction state.
#[derive(Debug, Default)]
pub struct StreamRedactor {
    /// Raw bytes already sent (their end): a value may still end past them.
    sent: Vec<u8>,
    /// Raw bytes held back: the beginning of a value, perhaps.
    held: Vec<u8>,
}

impl StreamRedactor {
    /// The bytes to send for `chunk` (perhaps fewer, held back, or more,
    /// released).
    pub fn push(&mut self, m: &Matcher, chunk: &[u8]) -> Vec<u8> {
        self.step(m, chunk, true)
    }

    /// Releases what is held back (the stream paused or ended), redacted.
    pub fn flush(&mut self, m: &Matcher) -> Vec<u8> {
        self.step(m, &[], false)
    }

    /// True while bytes are held back (a flush is due if nothing follows).
    pub fn holding(&self) -> bool {
        !self.held.is_empty()
    }

    fn step(&mut self, m: &Matcher, chunk: &[u8], hold: bool) -> Vec<u8> {
        if m.is_empty() {
            self.sent.clear();
            let mut out = std::mem::take(&mut self.held);
            out.extend_from_slice(chunk);
            return out;
        }
        let keep = m.max_len().saturating_sub(1);
        if self.sent.len() > keep {
            self.sent.drain(..self.sent.len() - keep);
        }
        let u = self.sent.len();
        let mut buf = std::mem::take(&mut self.sent);
        buf.append(&mut self.held);
        buf.extend_from_slice(chunk);
        let runs = m.covered(&buf);
        // Where sending stops: the beginning of a value at the end, and
        // never inside a run (a run's bytes are replaced whole, once).
        let mut b = buf.len();
        if hold && let Some(p) = m.partial_tail(&buf, HOLD_MIN) {
            b = p.max(u);
        }
        while let Some((r, _)) = runs.iter().find(|(r, _)| r.start < b && r.end > b && r.start >= u) {
            b = r.start;
        }
        if runs.iter().any(|(r, _)| r.start < u && r.end > b) {
            // A value begun in what was sent runs past the stop: hold all
            // that is new, and replace it whole once it is complete.
            b = u;
        }
        let mut out = Vec::with_capacity(b - u + 32);
        let mut at = u;
        for (r, name) in &runs {
            if r.end <= u || r.start >= b {
                continue;
            }
            let start = r.start.max(u);
            out.extend_from_slice(&buf[at..start]);
            out.extend_from_slice(marker(name).as_bytes());
            at = r.end.min(b);
        }
        out.extend_from_slice(&buf[at..b]);
        self.held = buf.split_off(b);
        buf.drain(..buf.len().saturating_sub(keep));
        self.sent = buf;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KEY: &str = "sk-ant-0123456789abcdef";
    const TOKEN: &str = "EoQBCkQKBWFnZW50CgdvYnNlcnZl";

    fn matcher() -> Matcher {
        Matcher::new([("KEY", KEY), ("WARREN_TOKEN", TOKEN), ("OTHER", "zz-other-zz")]).expect("matcher")
    }

    /// Everything a subscriber is sent for `chunks`, then a flush.
    fn run(m: &Matcher, chunks: &[&[u8]]) -> Vec<u8> {
        let mut r = StreamRedactor::default();
        let mut out = vec![];
        for c in chunks {
            out.extend(r.push(m, c));
        }
        out.extend(r.flush(m));
        out
    }

    fn contains(hay: &[u8], needle: &str) -> bool {
        hay.windows(needle.len()).any(|w| w == needle.as_bytes())
    }

    #[test]
    fn a_value_in_one_chunk_is_replaced() {
        let out = run(&matcher(), &[format!("key={KEY}\r\n").as_bytes()]);
        assert_eq!(out, b"key=[redacted: KEY]\r\n");
    }

    #[test]
    fn a_value_split_anywhere_never_shows_whole_nor_past_its_first_bytes() {
        let m = matcher();
        let line = format!("\x1b[2Jkey={KEY} and {TOKEN}.");
        for cut in 0..=line.len() {
            let (a, b) = line.as_bytes().split_at(cut);
            let out = run(&m, &[a, b]);
            assert!(!contains(&out, KEY) && !contains(&out, TOKEN), "cut at {cut}");
            for v in [KEY, TOKEN] {
                // At most its first HOLD_MIN - 1 bytes, and none of the rest.
                assert!(!contains(&out, &v[..HOLD_MIN]), "cut at {cut}");
                assert!(!contains(&out, &v[1..]), "cut at {cut}");
            }
            assert!(
                contains(&out, "[redacted: WARREN_TOKEN]."),
                "cut at {cut}: {}",
                String::from_utf8_lossy(&out)
            );
        }
    }

    #[test]
    fn plain_output_is_never_held() {
        let m = matcher();
        let mut r = StreamRedactor::default();
        // A chunk ending in a value's first byte or two goes out whole.
        assert_eq!(r.push(&m, b"echo s"), b"echo s");
        assert_eq!(r.push(&m, b"k"), b"k");
        assert!(!r.holding());
        // Three or more: held until the next chunk.
        assert_eq!(r.push(&m, b" xx sk-a"), b" xx ");
        assert!(r.holding());
        assert_eq!(r.push(&m, b"pple"), b"sk-apple");
        assert!(!r.holding());
    }

    #[test]
    fn a_flush_releases_what_is_held() {
        let m = matcher();
        let mut r = StreamRedactor::default();
        assert_eq!(r.push(&m, b"prompt> sk-ant"), b"prompt> ");
        assert_eq!(r.flush(&m), b"sk-ant");
        assert!(!r.holding());
    }

    #[test]
    fn what_is_held_is_bounded() {
        let m = matcher();
        let mut r = StreamRedactor::default();
        for _ in 0..1000 {
            r.push(&m, b"sk-ant-0123456789abcde");
            assert!(r.held.len() < m.max_len());
            assert!(r.sent.len() < m.max_len());
        }
    }

    #[test]
    fn no_matcher_passes_bytes_through() {
        let empty = Matcher::empty();
        assert_eq!(run(&empty, &[b"abc", b"def"]), b"abcdef");
    }

    proptest! {
        /// However the stream is cut, a value never reaches the subscriber,
        /// and text without any value arrives unchanged.
        #[test]
        fn no_value_survives_any_cuts(
            noise in proptest::collection::vec(proptest::sample::select(vec!["a", "s", "sk", "sk-", "E", "Eo", " ", "\r\n", "zz-", "é"]), 0..40),
            at in proptest::collection::vec(0usize..40, 0..6),
            cuts in proptest::collection::vec(0usize..400, 0..12),
        ) {
            let m = matcher();
            let mut text: Vec<String> = noise.iter().map(|s| s.to_string()).collect();
            let mut with_values = false;
            for (i, a) in at.iter().enumerate() {
                let v = [KEY, TOKEN, "zz-other-zz"][i % 3];
                text.insert((*a).min(text.len()), v.to_string());
                with_values = true;
            }
            let text = text.concat();
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(bytes.len())).collect();
            cuts.sort();
            let mut chunks = vec![];
            let mut from = 0;
            for c in cuts {
                chunks.push(&bytes[from..c]);
                from = c;
            }
            chunks.push(&bytes[from..]);
            let out = run(&m, &chunks);
            for v in [KEY, TOKEN, "zz-other-zz"] {
                prop_assert!(!contains(&out, v), "{:?} in {:?}", v, String::from_utf8_lossy(&out));
            }
            let whole = m.redact_str(&text).into_owned();
            if !with_values && !contains(bytes, "zz-other-zz") {
                prop_assert_eq!(out, whole.into_bytes());
            }
        }
    }
}
