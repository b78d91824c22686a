//! Addresses a node connects to on someone else's behalf: which host and port
//! a URL names, and which addresses are its own networks (loopback, private,
//! link-local and the other non-public ranges), which it never reaches for a
//! caller (a clone URL) or a guest (egress) unless told to by address. Pure.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The host (and port) a URL git would connect to; None for `file://`.
pub fn host_of(url: &str) -> Option<(String, u16)> {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (s.to_ascii_lowercase(), r),
        // scp-like `user@host:path`.
        None => {
            let (authority, _) = url.split_once(':')?;
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            return Some((host.trim_matches(['[', ']']).to_string(), 22));
        }
    };
    if scheme == "file" {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let hostport = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let default = match scheme.as_str() {
        "https" => 443,
        "http" => 80,
        "ssh" => 22,
        "git" => 9418,
        _ => 0,
    };
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    if let Some(v6) = hostport.strip_prefix('[') {
        let (h, tail) = v6.split_once(']')?;
        let port = tail.strip_prefix(':').and_then(|p| p.parse().ok()).unwrap_or(default);
        return Some((h.to_string(), port));
    }
    match hostport.rsplit_once(':') {
        Some((h, p)) if p.chars().all(|c| c.is_ascii_digit()) && !p.is_empty() => {
            Some((h.to_string(), p.parse().unwrap_or(default)))
        }
        _ => Some((hostport.to_string(), default)),
    }
}

/// An address on one of the node's own (non-public) networks.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => internal_v4(v4),
            None => internal_v6(v6),
        },
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT) and benchmarking.
        || (a == 100 && (64..128).contains(&b))
        || (a == 198 && (b == 18 || b == 19))
        // IETF protocol assignments, 192.0.0.0/24.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || a >= 240
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        // Unique local (fc00::/7) and link-local (fe80::/10).
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // Documentation (2001:db8::/32).
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // NAT64 (64:ff9b::/96) and IPv4-compatible forms carry an IPv4
        // address that may be internal: refused whole.
        || first == 0x0064
        || ip.segments()[..6].iter().all(|s| *s == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_urls() {
        let cases: &[(&str, Option<(&str, u16)>)] = &[
            ("https://example.org/a/b.git", Some(("example.org", 443))),
            ("https://user:pw@example.org:8443/x", Some(("example.org", 8443))),
            ("http://10.0.0.1/x", Some(("10.0.0.1", 80))),
            ("ssh://git@[::1]:2222/x", Some(("::1", 2222))),
            ("git://host/x", Some(("host", 9418))),
            ("git@github.invalid:o/r.git", Some(("github.invalid", 22))),
            ("file:///srv/repo.git", None),
        ];
        for (url, want) in cases {
            assert_eq!(host_of(url), want.map(|(h, p)| (h.to_string(), p)), "{url}");
        }
    }

    #[test]
    fn internal_addresses() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_internal(ip.parse().expect("ip")), "{ip} is internal");
        }
        for ip in ["93.184.216.34", "2606:2800:220:1::1", "8.8.8.8"] {
            assert!(!is_internal(ip.parse().expect("ip")), "{ip} is public");
        }
    }
}
