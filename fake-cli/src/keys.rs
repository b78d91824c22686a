//! Turns raw terminal input bytes into key events: escape sequences, bracketed paste and UTF-8.
//!
//! The decoder is incremental: a sequence split across reads is kept pending until the
//! rest arrives. A pending lone ESC is resolved by the caller calling [`Decoder::flush`]
//! after a short quiet period.

const ESC: u8 = 0x1b;
const PASTE_END: &[u8] = b"\x1b[201~";

/// One decoded key press (or a whole bracketed paste).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Key {
    Char(char),
    /// The verbatim content of a bracketed paste, `\r` turned into `\n`.
    Paste(String),
    Enter,
    Backspace,
    Tab,
    CtrlC,
    CtrlD,
    Esc,
    Up,
    Down,
    Left,
    Right,
    /// Anything else (unknown sequences, stray control bytes, invalid UTF-8).
    Other,
}

/// Incremental key decoder.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// Bytes of an incomplete sequence waiting for more input.
    pending: Vec<u8>,
    /// Content of a bracketed paste that has started but not ended yet.
    paste: Option<Vec<u8>>,
}

/// What the front of a byte buffer decodes to.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Key(Key, usize),
    PasteStart(usize),
    Incomplete,
}

impl Decoder {
    /// Decodes a chunk of input, returning every key it completes.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        let mut data = std::mem::take(&mut self.pending);
        data.extend_from_slice(bytes);
        let mut keys = Vec::new();
        let mut pos = 0;
        loop {
            if let Some(mut paste) = self.paste.take() {
                paste.extend_from_slice(&data[pos..]);
                match find(&paste, PASTE_END) {
                    None => {
                        self.paste = Some(paste);
                        return keys;
                    }
                    Some(end) => {
                        data = paste.split_off(end + PASTE_END.len());
                        paste.truncate(end);
                        keys.push(Key::Paste(paste_text(&paste)));
                        pos = 0;
                        continue;
                    }
                }
            }
            if pos >= data.len() {
                return keys;
            }
            match step(&data[pos..]) {
                Step::Key(key, used) => {
                    keys.push(key);
                    pos += used;
                }
                Step::PasteStart(used) => {
                    self.paste = Some(Vec::new());
                    pos += used;
                }
                Step::Incomplete => {
                    self.pending = data[pos..].to_vec();
                    return keys;
                }
            }
        }
    }

    /// True when an incomplete sequence (typically a lone ESC) waits for more input.
    pub(crate) fn needs_flush(&self) -> bool {
        !self.pending.is_empty() && self.paste.is_none()
    }

    /// Resolves pending bytes after a quiet period: a lone ESC becomes [`Key::Esc`],
    /// any other incomplete sequence is dropped as [`Key::Other`].
    pub(crate) fn flush(&mut self) -> Vec<Key> {
        if self.paste.is_some() {
            return Vec::new();
        }
        let pending = std::mem::take(&mut self.pending);
        match pending.as_slice() {
            [] => Vec::new(),
            [ESC] => vec![Key::Esc],
            _ => vec![Key::Other],
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Paste content as text: CRLF and lone CR become LF.
fn paste_text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).replace("\r\n", "\n").replace('\r', "\n")
}

fn step(b: &[u8]) -> Step {
    let Some(&first) = b.first() else {
        return Step::Incomplete;
    };
    match first {
        ESC => escape(b),
        b'\r' if b.get(1) == Some(&b'\n') => Step::Key(Key::Enter, 2),
        b'\r' | b'\n' => Step::Key(Key::Enter, 1),
        0x7f | 0x08 => Step::Key(Key::Backspace, 1),
        0x03 => Step::Key(Key::CtrlC, 1),
        0x04 => Step::Key(Key::CtrlD, 1),
        b'\t' => Step::Key(Key::Tab, 1),
        c if c < 0x20 => Step::Key(Key::Other, 1),
        _ => utf8(b),
    }
}

fn escape(b: &[u8]) -> Step {
    match b.get(1) {
        None => Step::Incomplete,
        Some(b'[') => csi(b),
        Some(b'O') => match b.get(2) {
            None => Step::Incomplete,
            Some(&c) => Step::Key(arrow(c).unwrap_or(Key::Other), 3),
        },
        // ESC followed by something else: a lone ESC, the next byte decodes on its own.
        Some(_) => Step::Key(Key::Esc, 1),
    }
}

fn arrow(final_byte: u8) -> Option<Key> {
    match final_byte {
        b'A' => Some(Key::Up),
        b'B' => Some(Key::Down),
        b'C' => Some(Key::Right),
        b'D' => Some(Key::Left),
        _ => None,
    }
}

/// Decodes `ESC [ params final`.
fn csi(b: &[u8]) -> Step {
    let mut i = 2;
    while let Some(&c) = b.get(i) {
        match c {
            0x20..=0x3f => i += 1,
            0x40..=0x7e => {
                let params = &b[2..i];
                if params == b"200" && c == b'~' {
                    return Step::PasteStart(i + 1);
                }
                return Step::Key(arrow(c).unwrap_or(Key::Other), i + 1);
            }
            // Malformed: drop what we have so far.
            _ => return Step::Key(Key::Other, i),
        }
    }
    Step::Incomplete
}

fn utf8(b: &[u8]) -> Step {
    let len = match b[0] {
        0x00..=0x7f => 1,
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => return Step::Key(Key::Other, 1),
    };
    if b.len() < len {
        return if b[1..].iter().all(|c| c & 0xc0 == 0x80) {
            Step::Incomplete
        } else {
            Step::Key(Key::Other, 1)
        };
    }
    match std::str::from_utf8(&b[..len]).ok().and_then(|s| s.chars().next()) {
        Some(c) => Step::Key(Key::Char(c), len),
        None => Step::Key(Key::Other, 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<Key> {
        s.chars().map(Key::Char).collect()
    }

    #[test]
    fn plain_text_and_controls() {
        let mut d = Decoder::default();
        let mut want = chars("hi");
        want.extend([
            Key::Backspace,
            Key::Backspace,
            Key::CtrlC,
            Key::CtrlD,
            Key::Tab,
            Key::Enter,
        ]);
        assert_eq!(d.feed(b"hi\x7f\x08\x03\x04\t\r"), want);
        assert!(!d.needs_flush());
    }

    #[test]
    fn crlf_is_one_enter() {
        let mut d = Decoder::default();
        assert_eq!(
            d.feed(b"a\r\nb\n"),
            vec![Key::Char('a'), Key::Enter, Key::Char('b'), Key::Enter]
        );
    }

    #[test]
    fn utf8_split_across_chunks() {
        let mut d = Decoder::default();
        let bytes = "é❯".as_bytes();
        assert_eq!(d.feed(&bytes[..1]), vec![]);
        assert_eq!(d.feed(&bytes[1..3]), vec![Key::Char('é')]);
        assert_eq!(d.feed(&bytes[3..]), vec![Key::Char('❯')]);
    }

    #[test]
    fn invalid_utf8_is_other() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\xffa"), vec![Key::Other, Key::Char('a')]);
    }

    #[test]
    fn arrows_whole_and_split() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b[A\x1b[B\x1bOA"), vec![Key::Up, Key::Down, Key::Up]);
        assert_eq!(d.feed(b"\x1b"), vec![]);
        assert!(d.needs_flush());
        assert_eq!(d.feed(b"["), vec![]);
        assert_eq!(d.feed(b"B"), vec![Key::Down]);
        assert!(!d.needs_flush());
        assert_eq!(d.feed(b"\x1b[1;5C"), vec![Key::Right]);
    }

    #[test]
    fn lone_esc_needs_flush() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b"), vec![]);
        assert!(d.needs_flush());
        assert_eq!(d.flush(), vec![Key::Esc]);
        assert!(!d.needs_flush());
        assert_eq!(d.flush(), vec![]);
    }

    #[test]
    fn esc_followed_by_other_byte_is_esc_then_byte() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b1"), vec![Key::Esc, Key::Char('1')]);
        assert_eq!(d.feed(b"\x1b\x1b"), vec![Key::Esc]);
        assert_eq!(d.flush(), vec![Key::Esc]);
    }

    #[test]
    fn incomplete_csi_flushes_as_other() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b[12"), vec![]);
        assert_eq!(d.flush(), vec![Key::Other]);
        assert_eq!(d.feed(b"x"), vec![Key::Char('x')]);
    }

    #[test]
    fn paste_in_one_chunk() {
        let mut d = Decoder::default();
        let keys = d.feed(b"\x1b[200~line one\rline two\r\nthree\x1b[201~\r");
        assert_eq!(keys, vec![Key::Paste("line one\nline two\nthree".into()), Key::Enter]);
    }

    #[test]
    fn paste_split_everywhere() {
        let input = b"x\x1b[200~a\rb\x1b[A\x1b[201~y";
        for cut in 0..input.len() {
            let mut d = Decoder::default();
            let mut keys = d.feed(&input[..cut]);
            keys.extend(d.feed(&input[cut..]));
            assert_eq!(
                keys,
                vec![Key::Char('x'), Key::Paste("a\nb\x1b[A".into()), Key::Char('y')],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn paste_byte_by_byte() {
        let input = "\x1b[200~héllo\nwörld\x1b[201~".as_bytes();
        let mut d = Decoder::default();
        let mut keys = Vec::new();
        for b in input {
            keys.extend(d.feed(std::slice::from_ref(b)));
        }
        assert_eq!(keys, vec![Key::Paste("héllo\nwörld".into())]);
    }

    #[test]
    fn flush_during_paste_keeps_paste() {
        let mut d = Decoder::default();
        assert_eq!(d.feed(b"\x1b[200~abc\x1b"), vec![]);
        assert!(!d.needs_flush());
        assert_eq!(d.flush(), vec![]);
        assert_eq!(d.feed(b"[201~"), vec![Key::Paste("abc".into())]);
    }
}
