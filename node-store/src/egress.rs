//! `grants.egress`: where an agent's guest may connect beyond the node and its
//! model endpoint (default deny). An entry is `host`, `host:port`,
//! `*.domain` or `*.domain:port`; a host is a DNS name or an IPv4 address, or
//! an IPv6 address in brackets (`[2001:db8::1]:443`). Names compare without
//! case and without a trailing dot. Pure: parsing, the bad-input rules and
//! matching.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Most entries one agent's allow-list holds.
pub const MAX_EGRESS_ENTRIES: usize = 10_000;

/// One parsed allow-list entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressRule {
    pub host: HostPattern,
    /// `None`: any port.
    pub port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// Exactly this name (lowercase, no trailing dot).
    Name(String),
    /// Any name strictly under this domain (`*.example.com`: `a.example.com`, not
    /// `example.com`).
    Under(String),
    V4(Ipv4Addr),
    V6(Ipv6Addr),
}

impl EgressRule {
    /// Parses one entry; `Err` says what is wrong with it.
    pub fn parse(entry: &str) -> Result<EgressRule, String> {
        let (host, port) = split_port(entry)?;
        let host = if let Some(inner) = host.strip_prefix('[') {
            let inner = inner
                .strip_suffix(']')
                .ok_or_else(|| format!("{entry:?}: an IPv6 address needs its closing `]`"))?;
            let ip: Ipv6Addr = inner
                .parse()
                .map_err(|_| format!("{entry:?}: {inner:?} is not an IPv6 address"))?;
            HostPattern::V6(ip)
        } else if let Ok(ip) = host.parse::<Ipv4Addr>() {
            HostPattern::V4(ip)
        } else if let Some(domain) = host.strip_prefix("*.") {
            let domain = name(entry, domain)?;
            if domain.split('.').count() < 2 {
                return Err(format!(
                    "{entry:?}: a wildcard needs a domain of at least two labels (`*.example.com`), not a whole top-level domain"
                ));
            }
            HostPattern::Under(domain)
        } else {
            HostPattern::Name(name(entry, host)?)
        };
        Ok(EgressRule { host, port })
    }

    /// Whether a connection to `host` (a name, or an address as text) on
    /// `port` is allowed by this entry.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        match &self.host {
            HostPattern::Name(n) => *n == host,
            HostPattern::Under(d) => {
                host.len() > d.len() + 1 && host.ends_with(d.as_str()) && {
                    host.as_bytes()[host.len() - d.len() - 1] == b'.'
                }
            }
            HostPattern::V4(ip) => bare.parse::<Ipv4Addr>().is_ok_and(|h| h == *ip),
            HostPattern::V6(ip) => bare.parse::<Ipv6Addr>().is_ok_and(|h| h == *ip),
        }
    }
}

/// `host[:port]`, the port 1..=65535 when given (the last `:` outside brackets).
fn split_port(entry: &str) -> Result<(&str, Option<u16>), String> {
    if entry.is_empty() {
        return Err("an empty entry".into());
    }
    let split = match entry.rfind(':') {
        Some(i) if !entry[i..].contains(']') && (entry.starts_with('[') || !entry[..i].contains(':')) => Some(i),
        Some(_) if !entry.starts_with('[') => {
            return Err(format!("{entry:?}: write an IPv6 address in brackets (`[::1]:443`)"));
        }
        _ => None,
    };
    let Some(i) = split else { return Ok((entry, None)) };
    let (host, port) = (&entry[..i], &entry[i + 1..]);
    let port: u32 = port
        .parse()
        .map_err(|_| format!("{entry:?}: the port {port:?} is not a number"))?;
    if !(1..=65_535).contains(&port) {
        return Err(format!("{entry:?}: the port {port} is outside 1..=65535"));
    }
    if host.is_empty() {
        return Err(format!("{entry:?}: no host before the port"));
    }
    Ok((host, Some(port as u16)))
}

/// A DNS name: 1-253 bytes, labels of 1-63 letters, digits and `-` (not at
/// either end), lowercased, one trailing dot dropped.
fn name(entry: &str, host: &str) -> Result<String, String> {
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    if host.is_empty() || host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(format!(
            "{entry:?} is not a host[:port] pattern (`host`, `host:port`, `*.domain` or `*.domain:port`)"
        ));
    }
    Ok(host)
}

/// Checks a whole allow-list: at most [`MAX_EGRESS_ENTRIES`], each entry valid.
pub fn check_list(entries: &[String]) -> Result<Vec<EgressRule>, String> {
    if entries.len() > MAX_EGRESS_ENTRIES {
        return Err(format!(
            "{} entries is over the limit of {MAX_EGRESS_ENTRIES}",
            entries.len()
        ));
    }
    entries.iter().map(|e| EgressRule::parse(e)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_parse_or_say_why() {
        let good: &[(&str, HostPattern, Option<u16>)] = &[
            ("example.com", HostPattern::Name("example.com".into()), None),
            (
                "API.Example.com.:443",
                HostPattern::Name("api.example.com".into()),
                Some(443),
            ),
            (
                "*.pypi-mirror.org:443",
                HostPattern::Under("pypi-mirror.org".into()),
                Some(443),
            ),
            ("10.0.0.7:5432", HostPattern::V4(Ipv4Addr::new(10, 0, 0, 7)), Some(5432)),
            (
                "[2001:db8::1]:8443",
                HostPattern::V6("2001:db8::1".parse().expect("v6")),
                Some(8443),
            ),
            ("[::1]", HostPattern::V6(Ipv6Addr::LOCALHOST), None),
            ("localhost", HostPattern::Name("localhost".into()), None),
        ];
        for (entry, host, port) in good {
            let rule = EgressRule::parse(entry).unwrap_or_else(|e| panic!("{entry}: {e}"));
            assert_eq!((&rule.host, rule.port), (host, *port), "{entry}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "empty"),
            ("*", "not a host"),
            ("*:443", "not a host"),
            ("*.com", "two labels"),
            ("*.*", "not a host"),
            ("example.com:0", "outside"),
            ("example.com:65536", "outside"),
            ("example.com:https", "not a number"),
            (":443", "no host"),
            ("http://example.com", "not a number"),
            ("example.com/path", "not a host"),
            ("exa mple.com", "not a host"),
            ("-bad.com", "not a host"),
            ("2001:db8::1", "brackets"),
            ("[2001:db8::1", "closing"),
            ("[nope]:1", "not an IPv6"),
            ("10.0.0.0/8", "not a host"),
        ];
        for (entry, why) in bad {
            let e = EgressRule::parse(entry).expect_err(entry);
            assert!(e.contains(why), "{entry:?}: {e}");
        }
    }

    #[test]
    fn matching_is_exact_by_name_port_and_domain() {
        let r = |s: &str| EgressRule::parse(s).expect("rule");
        assert!(r("example.com:443").allows("Example.COM.", 443));
        assert!(!r("example.com:443").allows("example.com", 444));
        assert!(r("example.com").allows("example.com", 1));
        assert!(!r("example.com").allows("www.example.com", 443));
        assert!(r("*.example.com").allows("a.b.example.com", 80));
        assert!(!r("*.example.com").allows("example.com", 80));
        assert!(!r("*.example.com").allows("badexample.com", 80));
        assert!(r("10.0.0.7").allows("10.0.0.7", 22));
        assert!(!r("10.0.0.7").allows("10.0.0.8", 22));
        assert!(r("[::1]:9").allows("[::1]", 9));
        assert!(r("[::1]:9").allows("0:0:0:0:0:0:0:1", 9));
    }

    #[test]
    fn a_list_is_bounded() {
        let many: Vec<String> = (0..MAX_EGRESS_ENTRIES + 1)
            .map(|i| format!("h{i}.example.com"))
            .collect();
        assert!(check_list(&many).expect_err("too many").contains("10000"));
        assert_eq!(
            check_list(&many[..MAX_EGRESS_ENTRIES]).map(|v| v.len()),
            Ok(MAX_EGRESS_ENTRIES)
        );
    }
}
