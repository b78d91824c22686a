//! Small text rules shared by the modules: agent references, control
//! characters, char-boundary clipping and one-line rendering.

/// Agent names as the node has them: 1-63 chars of `a-z`, `0-9` and `-`,
/// starting with a letter, not ending with `-`.
pub(crate) fn is_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && !name.ends_with('-')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// `NAME` or `NAME@NODE` (an agent homed on another node). The node part is
/// 1-253 chars of ASCII letters, digits, `-`, `.` and `_`.
pub(crate) fn is_agent_ref(s: &str) -> bool {
    match s.split_once('@') {
        None => is_agent_name(s),
        Some((name, node)) => {
            is_agent_name(name)
                && !node.is_empty()
                && node.len() <= 253
                && node
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
        }
    }
}

/// C0 and C1 control characters and DEL, as the node's `sendMessage`
/// validation refuses them (newline is handled by the callers).
pub(crate) fn is_control(c: char) -> bool {
    let u = c as u32;
    u < 0x20 || u == 0x7f || (0x80..=0x9f).contains(&u)
}

/// The first control character other than newline, with its byte offset.
pub(crate) fn first_control_but_newline(text: &str) -> Option<(usize, char)> {
    text.char_indices().find(|&(_, c)| c != '\n' && is_control(c))
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char
/// boundary.
pub(crate) fn clip(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `s` on one line for a message: newline as `⏎`, tab as a space, any
/// other control character as U+FFFD, at most `max` bytes (an ellipsis marks
/// the cut). The result is free of control characters.
pub(crate) fn one_line(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max));
    for c in s.chars() {
        let r = match c {
            '\n' => '⏎',
            '\t' => ' ',
            c if is_control(c) => '\u{FFFD}',
            c => c,
        };
        if out.len() + r.len_utf8() > max.saturating_sub('…'.len_utf8()) {
            out.push('…');
            return out;
        }
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_refs() {
        for ok in ["coder", "a", "web-2", "coder@n-1", "coder@host.example_1"] {
            assert!(is_agent_ref(ok), "{ok}");
        }
        for bad in ["", "Coder", "2x", "x-", "coder@", "@n", "a@b@c", "a b", &"a".repeat(64)] {
            assert!(!is_agent_ref(bad), "{bad}");
        }
    }

    #[test]
    fn clipping_and_one_line() {
        assert_eq!(clip("héllo", 2), "h");
        assert_eq!(clip("héllo", 3), "hé");
        assert_eq!(clip("hi", 10), "hi");
        assert_eq!(one_line("a\nb\tc\u{1b}d", 100), "a⏎b c\u{FFFD}d");
        let long = one_line(&"é".repeat(100), 20);
        assert!(long.len() <= 20, "{}", long.len());
        assert!(long.ends_with('…'));
        assert!(first_control_but_newline("a\nb").is_none());
        assert_eq!(first_control_but_newline("a\tb"), Some((1, '\t')));
        assert_eq!(first_control_but_newline("a\u{85}"), Some((1, '\u{85}')));
    }
}
