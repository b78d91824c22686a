//! The browser guard's decisions, pure: which `Host` and `Origin` a request
//! may carry (API.md Transport, "Browsers"). A page on another site, or a
//! DNS-rebinding name that resolves to this node, is refused before any
//! handler runs; clients that send no `Origin` (the CLI, monitors, guests)
//! pass on the Host check alone.
//!
//! Two kinds of allowed host: the *local* ones (the node's listen address and
//! the loopback names with the node's port), which count only on a direct
//! request, and the *named* ones (`[console] hosts`, the published endpoint),
//! which count always. A request that carries `Forwarded` or `X-Forwarded-*`
//! headers came through a proxy: the loopback names say nothing about who is
//! on the other side of it, so only the named hosts count, and the host the
//! browser asked for (`X-Forwarded-Host`, `Forwarded: host=`) must be one.

use std::net::SocketAddr;

/// One allowed host: a name (lowercase) and a port, or any of the node's
/// own ports when the entry gave none.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostEntry {
    name: String,
    port: Option<u16>,
}

/// What the guard accepts on one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// The listener's port: an entry without a port matches it (or no port).
    port: u16,
    local: Vec<HostEntry>,
    named: Vec<HostEntry>,
    /// Further allowed origins (`[console] origins`), lowercase, no trailing `/`.
    origins: Vec<String>,
}

/// The headers of one request that the guard reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    pub host: Option<&'a str>,
    pub origin: Option<&'a str>,
    /// `X-Forwarded-Host`, or the `host=` of `Forwarded`.
    pub forwarded_host: Option<&'a str>,
    /// Any `Forwarded` or `X-Forwarded-*` header was present.
    pub proxied: bool,
}

/// The guard's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// 403 with this short reason.
    Deny(String),
}

impl Policy {
    /// The policy of a listener bound to `addr`: its own address (unless it
    /// is unspecified, `0.0.0.0` or `[::]`, which no browser should name),
    /// `localhost`, `127.0.0.1` and `[::1]` with its port; `named` (entries
    /// `NAME` or `NAME:PORT`, e.g. `[console] hosts` and the published
    /// endpoint's authority) and `origins` (`[console] origins`).
    pub fn new(addr: SocketAddr, named: &[String], origins: &[String]) -> Policy {
        let port = addr.port();
        let mut local = vec![];
        if !addr.ip().is_unspecified() {
            local.push(HostEntry {
                name: match addr {
                    SocketAddr::V4(a) => a.ip().to_string(),
                    SocketAddr::V6(a) => format!("[{}]", a.ip()),
                },
                port: Some(port),
            });
        }
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            local.push(HostEntry {
                name: name.into(),
                port: Some(port),
            });
        }
        Policy {
            port,
            local,
            named: named.iter().filter_map(|n| parse_authority(n)).collect(),
            origins: origins
                .iter()
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .filter(|o| !o.is_empty())
                .collect(),
        }
    }

    /// Whether a request with these headers may go on.
    pub fn judge(&self, f: &Facts<'_>) -> Verdict {
        let Some(host) = f.host else {
            return Verdict::Deny("no Host header".into());
        };
        let Some(host) = parse_authority(host) else {
            return Verdict::Deny("the Host header is not a host name".into());
        };
        if f.proxied {
            // Behind a proxy only the configured names count, for the host
            // the browser asked for as well as the one the proxy dialed.
            if !self.named_allows(&host) {
                return Verdict::Deny(format!(
                    "host {} is not allowed through a proxy: add it to [console] hosts",
                    show(&host)
                ));
            }
            if let Some(fwd) = f.forwarded_host {
                match parse_authority(fwd) {
                    Some(h) if self.named_allows(&h) => {}
                    _ => {
                        return Verdict::Deny("the forwarded host is not allowed: add it to [console] hosts".into());
                    }
                }
            }
        } else if !self.local_allows(&host) && !self.named_allows(&host) {
            return Verdict::Deny(format!(
                "host {} is not allowed: add it to [console] hosts",
                show(&host)
            ));
        }
        match f.origin {
            None => Verdict::Allow,
            Some(origin) if self.origin_allows(origin, f.proxied) => Verdict::Allow,
            Some(_) => Verdict::Deny("cross-origin request refused: the Origin is not this node's".into()),
        }
    }

    fn local_allows(&self, h: &HostEntry) -> bool {
        self.local.iter().any(|e| matches(e, h, self.port))
    }

    fn named_allows(&self, h: &HostEntry) -> bool {
        self.named.iter().any(|e| matches(e, h, self.port))
    }

    /// `http(s)://HOST` for an allowed host (local ones only when direct),
    /// or a configured origin. `null` (sandboxed frames, files) never is.
    fn origin_allows(&self, origin: &str, proxied: bool) -> bool {
        let o = origin.trim().to_ascii_lowercase();
        if self.origins.contains(&o) {
            return true;
        }
        let Some(rest) = o.strip_prefix("http://").or_else(|| o.strip_prefix("https://")) else {
            return false;
        };
        if rest.contains('/') {
            return false;
        }
        let Some(h) = parse_authority(rest) else {
            return false;
        };
        self.named_allows(&h) || (!proxied && self.local_allows(&h))
    }
}

/// An entry matches a host with the same name and either the same port,
/// or (an entry that gave none) the node's own port or no port at all.
fn matches(entry: &HostEntry, h: &HostEntry, own_port: u16) -> bool {
    entry.name == h.name
        && match (entry.port, h.port) {
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => false,
            (None, Some(b)) => b == own_port,
            (None, None) => true,
        }
}

fn show(h: &HostEntry) -> String {
    match h.port {
        Some(p) => format!("{}:{p}", h.name),
        None => h.name.clone(),
    }
}

/// `NAME`, `NAME:PORT`, `[V6]` or `[V6]:PORT` (lowercased). None for
/// anything else: empty, userinfo, paths, spaces, a bad port.
fn parse_authority(s: &str) -> Option<HostEntry> {
    let s = s.trim().to_ascii_lowercase();
    if s.is_empty() || s.contains(['@', '/', '\\', ' ', '?', '#']) {
        return None;
    }
    let (name, port) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')?;
        let name = format!("[{}]", &rest[..end]);
        match &rest[end + 1..] {
            "" => (name, None),
            p => (name, Some(p.strip_prefix(':')?.parse::<u16>().ok()?)),
        }
    } else {
        match s.rsplit_once(':') {
            Some((n, p)) => (n.to_string(), Some(p.parse::<u16>().ok()?)),
            None => (s.clone(), None),
        }
    };
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let ok = !bare.is_empty()
        && bare
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    ok.then_some(HostEntry { name, port })
}

/// The `host=` of a `Forwarded` header (RFC 7239), first element.
pub fn forwarded_host(forwarded: &str) -> Option<&str> {
    let first = forwarded.split(',').next()?;
    first.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case("host")
            .then(|| v.trim().trim_matches('"'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> Policy {
        Policy::new(
            "127.0.0.1:7767".parse().expect("addr"),
            &["warren.example".into(), "box.lan:9000".into()],
            &["https://console.example/".into()],
        )
    }

    fn direct<'a>(host: &'a str, origin: Option<&'a str>) -> Facts<'a> {
        Facts {
            host: Some(host),
            origin,
            ..Facts::default()
        }
    }

    fn allowed(p: &Policy, f: Facts<'_>) -> bool {
        p.judge(&f) == Verdict::Allow
    }

    #[test]
    fn hosts_on_a_direct_request() {
        let p = policy();
        for host in [
            "127.0.0.1:7767",
            "localhost:7767",
            "LOCALHOST:7767",
            "[::1]:7767",
            "warren.example",
            "warren.example:7767",
            "box.lan:9000",
        ] {
            assert!(allowed(&p, direct(host, None)), "{host} should pass");
        }
        for host in [
            // Another port of a loopback name: another service.
            "localhost:8080",
            "localhost",
            "127.0.0.1",
            // DNS rebinding: a name the attacker controls, resolving here.
            "evil.example:7767",
            "attacker.localhost:7767",
            "warren.example:8080",
            "box.lan",
            "box.lan:9001",
            "",
            "user@localhost:7767",
            "localhost:7767/x",
            "localhost:99999",
        ] {
            assert!(!allowed(&p, direct(host, None)), "{host} should be refused");
        }
        match p.judge(&Facts::default()) {
            Verdict::Deny(r) => assert!(r.contains("Host"), "{r}"),
            Verdict::Allow => panic!("no Host passed"),
        }
    }

    #[test]
    fn origins_when_present() {
        let p = policy();
        let host = "127.0.0.1:7767";
        for origin in [
            "http://127.0.0.1:7767",
            "http://localhost:7767",
            "http://[::1]:7767",
            "https://warren.example",
            "http://warren.example:7767",
            "https://console.example",
        ] {
            assert!(allowed(&p, direct(host, Some(origin))), "{origin} should pass");
        }
        for origin in [
            "https://evil.example",
            "http://localhost:8080",
            "http://localhost",
            "null",
            "",
            "file://",
            "ws://127.0.0.1:7767",
            "http://127.0.0.1:7767/path",
            "https://console.example.evil",
        ] {
            assert!(!allowed(&p, direct(host, Some(origin))), "{origin:?} should be refused");
        }
        match p.judge(&direct(host, Some("https://evil.example"))) {
            Verdict::Deny(r) => assert!(r.contains("Origin"), "{r}"),
            Verdict::Allow => panic!("foreign origin passed"),
        }
    }

    #[test]
    fn a_proxied_request_is_not_local() {
        let p = policy();
        let proxied = |host, fwd, origin| Facts {
            host: Some(host),
            origin,
            forwarded_host: fwd,
            proxied: true,
        };
        // A local proxy dialing the loopback name: not enough.
        assert!(!allowed(&p, proxied("127.0.0.1:7767", None, None)));
        assert!(!allowed(&p, proxied("localhost:7767", Some("warren.example"), None)));
        // Named hosts pass, and so must the host the browser asked for.
        assert!(allowed(
            &p,
            proxied("warren.example", Some("warren.example"), Some("https://warren.example"))
        ));
        assert!(!allowed(&p, proxied("warren.example", Some("evil.example"), None)));
        // A loopback origin through a proxy is somebody else's page.
        assert!(!allowed(
            &p,
            proxied("warren.example", None, Some("http://localhost:7767"))
        ));
        assert!(allowed(
            &p,
            proxied("warren.example", None, Some("https://console.example"))
        ));
    }

    #[test]
    fn the_listen_address_counts_unless_unspecified() {
        let p = Policy::new("10.1.2.3:7000".parse().expect("addr"), &[], &[]);
        assert!(allowed(&p, direct("10.1.2.3:7000", Some("http://10.1.2.3:7000"))));
        assert!(allowed(&p, direct("localhost:7000", None)));
        let any = Policy::new("0.0.0.0:7000".parse().expect("addr"), &[], &[]);
        assert!(!allowed(&any, direct("0.0.0.0:7000", None)));
        assert!(allowed(&any, direct("127.0.0.1:7000", None)));
        let v6 = Policy::new("[::1]:7000".parse().expect("addr"), &[], &[]);
        assert!(allowed(&v6, direct("[::1]:7000", Some("http://[::1]:7000"))));
    }

    #[test]
    fn forwarded_host_is_read_from_the_first_element() {
        assert_eq!(
            forwarded_host("for=1.2.3.4;host=a.example;proto=https"),
            Some("a.example")
        );
        assert_eq!(
            forwarded_host("host=\"b.example:8443\", host=c"),
            Some("b.example:8443")
        );
        assert_eq!(forwarded_host("for=1.2.3.4"), None);
    }
}
