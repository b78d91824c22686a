//! The head of a request a guest sends its egress proxy: `CONNECT host:port`
//! (a tunnel, for TLS and anything else) or an absolute-form plain HTTP
//! request (`GET http://host:port/path`), which is passed on in origin form
//! with `Connection: close`, so one proxied connection carries one request to
//! the one destination that was checked. Pure.

/// Most bytes of a request head (request line and headers).
pub const MAX_HEAD: usize = 16 * 1024;

/// What the guest asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    /// A tunnel to `host:port`: answer `200`, then copy bytes both ways.
    Connect { host: String, port: u16 },
    /// One plain HTTP request to `host:port`; `request` is its head rewritten
    /// for the origin (sent before the rest of the stream).
    Forward { host: String, port: u16, request: Vec<u8> },
    /// The guest's resolver asks for a name's addresses (`RESOLVE name
    /// HTTP/1.1`): answered with one address per line, or refused.
    Resolve { host: String },
}

impl Head {
    pub fn host(&self) -> &str {
        match self {
            Head::Connect { host, .. } | Head::Forward { host, .. } | Head::Resolve { host } => host,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Head::Connect { port, .. } | Head::Forward { port, .. } => *port,
            Head::Resolve { .. } => 53,
        }
    }
}

/// The length of the head in `buf` (through its blank line), once it is all there.
pub fn head_len(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete head (as [`head_len`] measured it); `Err` says what is
/// wrong, for a `400` the guest's client shows.
pub fn parse(head: &[u8]) -> Result<Head, String> {
    let text = std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or_default();
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!("{line:?} is not an HTTP request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(format!("{version:?}: the proxy speaks HTTP/1.x"));
    }
    if method == "RESOLVE" {
        let (host, _) = authority(target, Some(53))?;
        return Ok(Head::Resolve { host });
    }
    if method.eq_ignore_ascii_case("CONNECT") {
        let (host, port) = authority(target, None)?;
        return Ok(Head::Connect { host, port });
    }
    let Some(rest) = strip_prefix_ignore_case(target, "http://") else {
        return Err(format!(
            "{target:?}: send plain HTTP as an absolute http:// URL, and anything else (https) with CONNECT"
        ));
    };
    let (auth, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let (host, port) = authority(auth, Some(80))?;
    let mut request = format!("{method} {path} {version}\r\n");
    let mut has_host = false;
    for h in lines.filter(|l| !l.is_empty()) {
        let name = h.split(':').next().unwrap_or_default().trim();
        if ["proxy-connection", "proxy-authorization", "connection", "keep-alive"]
            .iter()
            .any(|n| name.eq_ignore_ascii_case(n))
        {
            continue;
        }
        has_host |= name.eq_ignore_ascii_case("host");
        request.push_str(h);
        request.push_str("\r\n");
    }
    if !has_host {
        request.push_str(&format!("Host: {auth}\r\n"));
    }
    request.push_str("Connection: close\r\n\r\n");
    Ok(Head::Forward {
        host,
        port,
        request: request.into_bytes(),
    })
}

fn strip_prefix_ignore_case<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)).then(|| &s[prefix.len()..])
}

/// `host:port` or `[v6]:port` (the port may default); the host lowercased,
/// without brackets or a trailing dot.
fn authority(auth: &str, default_port: Option<u16>) -> Result<(String, u16), String> {
    let auth = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
        let (h, tail) = v6
            .split_once(']')
            .ok_or_else(|| format!("{auth:?}: an IPv6 address needs its closing `]`"))?;
        (h, tail.strip_prefix(':'))
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        }
    };
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("{auth:?}: {p:?} is not a port (1..=65535)"))?,
        None => default_port.ok_or_else(|| format!("{auth:?}: CONNECT needs host:port"))?,
    };
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '/') {
        return Err(format!("{auth:?} names no host"));
    }
    Ok((host, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward(head: &str) -> (String, u16, String) {
        match parse(head.as_bytes()).expect("parses") {
            Head::Forward { host, port, request } => (host, port, String::from_utf8(request).expect("utf8")),
            other => panic!("not a forward: {other:?}"),
        }
    }

    #[test]
    fn connect_targets() {
        let cases: &[(&str, &str, u16)] = &[
            (
                "CONNECT api.example.com:443 HTTP/1.1\r\nHost: x\r\n\r\n",
                "api.example.com",
                443,
            ),
            (
                "connect API.Example.COM.:8443 HTTP/1.0\r\n\r\n",
                "api.example.com",
                8443,
            ),
            ("CONNECT [2001:db8::1]:22 HTTP/1.1\r\n\r\n", "2001:db8::1", 22),
            ("CONNECT 10.0.0.1:5432 HTTP/1.1\r\n\r\n", "10.0.0.1", 5432),
        ];
        for (head, host, port) in cases {
            assert_eq!(
                parse(head.as_bytes()),
                Ok(Head::Connect {
                    host: host.to_string(),
                    port: *port
                }),
                "{head}"
            );
        }
    }

    #[test]
    fn plain_http_goes_on_in_origin_form_with_connection_close() {
        let (host, port, req) = forward(
            "GET http://host.docker.internal:8080/v1/messages?x=1 HTTP/1.1\r\nHost: host.docker.internal:8080\r\nProxy-Connection: keep-alive\r\nConnection: keep-alive\r\nX-A: b\r\n\r\n",
        );
        assert_eq!((host.as_str(), port), ("host.docker.internal", 8080));
        assert_eq!(
            req,
            "GET /v1/messages?x=1 HTTP/1.1\r\nHost: host.docker.internal:8080\r\nX-A: b\r\nConnection: close\r\n\r\n"
        );
        let (host, port, req) = forward("POST http://Example.org HTTP/1.1\r\nContent-Length: 2\r\n\r\n");
        assert_eq!((host.as_str(), port), ("example.org", 80));
        assert!(req.starts_with("POST / HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("Host: Example.org\r\n"), "a missing Host is added: {req}");
    }

    #[test]
    fn a_lookup_names_its_host() {
        assert_eq!(
            parse(b"RESOLVE Example.COM. HTTP/1.1\r\n\r\n"),
            Ok(Head::Resolve {
                host: "example.com".into()
            })
        );
    }

    #[test]
    fn bad_heads_say_what_is_wrong() {
        let cases: &[(&str, &str)] = &[
            ("CONNECT example.com HTTP/1.1\r\n\r\n", "needs host:port"),
            ("CONNECT example.com:0 HTTP/1.1\r\n\r\n", "is not a port"),
            ("CONNECT example.com:70000 HTTP/1.1\r\n\r\n", "is not a port"),
            ("GET https://example.com/ HTTP/1.1\r\n\r\n", "CONNECT"),
            ("GET /relative HTTP/1.1\r\n\r\n", "absolute http://"),
            ("GET http://x/ SPDY/3\r\n\r\n", "HTTP/1.x"),
            ("hello\r\n\r\n", "not an HTTP request line"),
            ("CONNECT [::1:443 HTTP/1.1\r\n\r\n", "closing"),
            ("CONNECT :443 HTTP/1.1\r\n\r\n", "names no host"),
        ];
        for (head, want) in cases {
            let e = parse(head.as_bytes()).expect_err(head);
            assert!(e.contains(want), "{head:?}: {e}");
        }
    }

    #[test]
    fn the_head_ends_at_its_blank_line() {
        assert_eq!(head_len(b"CONNECT a:1 HTTP/1.1\r\n\r\nrest"), Some(24));
        assert_eq!(head_len(b"CONNECT a:1 HTTP/1.1\r\n"), None);
    }
}
