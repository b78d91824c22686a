//! URL evidence in a dialog and the host allowlist that makes network access repo-scoped.

/// Hosts a network action may reach and still count as scoped (seed 000),
/// over http or https.
pub const ALLOWED_HOSTS: &[&str] = &[
    "localhost",
    "127.0.0.1",
    "registry.npmjs.org",
    "crates.io",
    "static.crates.io",
    "pypi.org",
    "files.pythonhosted.org",
];

/// A host allowed over https only.
pub const HTTPS_ONLY_HOSTS: &[&str] = &["github.com"];

/// Every `scheme://...` substring of `text`, up to whitespace or a quote.
pub(crate) fn find_urls(text: &str) -> Vec<&str> {
    let mut urls = Vec::new();
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let sep = from + found;
        let start = text[..sep]
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || matches!(c, '+' | '.' | '-'))
            .last()
            .map_or(sep, |(i, _)| i);
        let end = text[sep..]
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>' | '|' | ';' | '(' | ')'))
            .map_or(text.len(), |i| sep + i);
        urls.push(&text[start..end]);
        from = sep + 3;
    }
    urls
}

/// True when `url` is `http(s)://` to an allowed host (or `https://github.com`).
/// The host is read after any `user@` part and before any port; an authority
/// with characters a hostname cannot hold (a backslash, say) is refused.
pub fn url_allowed(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "http" && scheme != "https" {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let valid = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':');
    if hostport.is_empty() || !hostport.chars().all(valid) {
        return false;
    }
    if !authority.chars().all(|c| valid(c) || matches!(c, '@' | '%' | '_')) {
        return false;
    }
    let host = match hostport.split_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        Some(_) => return false,
        None => hostport,
    };
    let host = host.to_ascii_lowercase();
    ALLOWED_HOSTS.contains(&host.as_str()) || (scheme == "https" && HTTPS_ONLY_HOSTS.contains(&host.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let cases: &[(&str, bool)] = &[
            ("https://crates.io/api/v1/crates/serde", true),
            ("https://static.crates.io/crates/x.crate", true),
            ("http://localhost:3000/health", true),
            ("http://127.0.0.1:8080", true),
            ("https://registry.npmjs.org/react", true),
            ("https://pypi.org/simple/", true),
            ("https://files.pythonhosted.org/x.whl", true),
            ("https://github.com/rust-lang/rust", true),
            ("HTTPS://GitHub.com/x", true),
            ("http://github.com/x", false),
            ("https://api.github.com/x", false),
            ("https://github.com.evil.example/x", false),
            ("https://crates.io.", false),
            ("https://localhost@evil.example/x", false),
            ("https://evil.example\\@crates.io/", false),
            ("https://crates.io:443/x", true),
            ("https://crates.io:x/", false),
            ("ftp://crates.io/x", false),
            ("file:///etc/passwd", false),
            ("https://", false),
            ("https://[::1]/", false),
            ("https://сrates.io/", false),
        ];
        for (url, want) in cases {
            assert_eq!(url_allowed(url), *want, "{url}");
        }
    }

    #[test]
    fn finds_urls() {
        assert_eq!(
            find_urls("curl -s 'https://crates.io/a' && wget http://x.example/b;ok"),
            vec!["https://crates.io/a", "http://x.example/b"]
        );
        assert_eq!(find_urls("cat file:///etc/passwd"), vec!["file:///etc/passwd"]);
        assert!(find_urls("no urls here").is_empty());
    }
}
