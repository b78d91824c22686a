//! `sed` is routine only as a printer: the scripts `sed -n` may run.

/// `sed -n` scripts that only print: addresses (`12`, `$`, `/re/`, ranges) then `p` or `=`.
pub(crate) fn script_prints_only(script: &str) -> bool {
    let mut chars = script.chars().peekable();
    let skip_ws = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
    };
    let address = |chars: &mut std::iter::Peekable<std::str::Chars<'_>>| -> bool {
        match chars.peek() {
            Some(c) if c.is_ascii_digit() => {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                true
            }
            Some('$') => {
                chars.next();
                true
            }
            Some('/') => {
                chars.next();
                loop {
                    match chars.next() {
                        None | Some('\n') => return false,
                        Some('\\') => {
                            chars.next();
                        }
                        Some('/') => return true,
                        Some(_) => {}
                    }
                }
            }
            _ => true,
        }
    };
    loop {
        skip_ws(&mut chars);
        if chars.peek().is_none() {
            return true;
        }
        if !address(&mut chars) {
            return false;
        }
        if chars.peek() == Some(&',') {
            chars.next();
            if chars.peek() == Some(&'+') {
                chars.next();
            }
            if !address(&mut chars) {
                return false;
            }
        }
        skip_ws(&mut chars);
        match chars.next() {
            Some('p' | '=') => {}
            _ => return false,
        }
        skip_ws(&mut chars);
        match chars.next() {
            None => return true,
            Some(';' | '\n') => {}
            Some(_) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sed_scripts() {
        let cases: &[(&str, bool)] = &[
            ("1,20p", true),
            ("5p", true),
            ("$p", true),
            ("10,$p", true),
            ("/fn main/,/^}/p", true),
            ("/a\\/b/p;3p", true),
            ("1,+3p", true),
            ("=", true),
            ("1w /tmp/x", false),
            ("1e id", false),
            ("s/a/b/", false),
            ("1r /etc/passwd", false),
            ("{p}", false),
            ("/unterminated", false),
        ];
        for (script, want) in cases {
            assert_eq!(script_prints_only(script), *want, "{script}");
        }
    }
}
