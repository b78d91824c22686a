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
        self.port.is_none_or(|p| p == port) && self.names(host)
    }

    /// Whether this entry names `host`, on whatever port.
    pub fn names(&self, host: &str) -> bool {
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

/// The name a guest uses for the node's host (Docker's standard name): the
/// proxy connects to the host's loopback for it, so it is reachable only when
/// a model endpoint or a grant names it.
pub const HOST_NAME: &str = "host.docker.internal";

/// The proxy's verdict on a destination, before any address is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `rule` is the model endpoint or the grant entry that allows it.
    /// `internal_ok`: it may resolve to one of the node's own networks (the
    /// rule names the host, an address, or the operator's model endpoint);
    /// otherwise only public addresses are reached (a granted name that
    /// resolves inward is refused).
    Allowed {
        rule: String,
        internal_ok: bool,
    },
    Refused {
        rule: String,
    },
}

/// Where a guest may go: its model endpoints (`host`, `port`) and its
/// grants, in that order; the first that allows `host:port` decides. Entries
/// that do not parse allow nothing (they were refused when stored).
pub fn decide(model: &[(String, u16)], grants: &[String], host: &str, port: u16) -> Verdict {
    first_rule(model, grants, host, Some(port))
}

/// Whether a guest may look `host` up: some model endpoint or grant names
/// it (on any port). The same verdict as [`decide`], for DNS.
pub fn decide_name(model: &[(String, u16)], grants: &[String], host: &str) -> Verdict {
    first_rule(model, grants, host, None)
}

/// The first model endpoint, then grant, that names `host` (on `port`, or
/// on any port when it is None).
fn first_rule(model: &[(String, u16)], grants: &[String], host: &str, port: Option<u16>) -> Verdict {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let on_port = |p: u16| port.is_none_or(|want| want == p);
    if let Some((h, p)) = model.iter().find(|(h, p)| h.eq_ignore_ascii_case(&host) && on_port(*p)) {
        return Verdict::Allowed {
            rule: format!("model endpoint {h}:{p}"),
            internal_ok: true,
        };
    }
    for entry in grants {
        let Ok(rule) = EgressRule::parse(entry) else { continue };
        let names = match port {
            Some(p) => rule.allows(&host, p),
            None => rule.names(&host),
        };
        if names {
            let internal_ok = match &rule.host {
                HostPattern::V4(_) | HostPattern::V6(_) => true,
                HostPattern::Name(n) => n == HOST_NAME,
                HostPattern::Under(_) => false,
            };
            return Verdict::Allowed {
                rule: entry.clone(),
                internal_ok,
            };
        }
    }
    Verdict::Refused {
        rule: "no grant".into(),
    }
}

/// The model endpoints a guest reaches without a grant: the host and port of
/// every `*_BASE_URL` (and `OPENAI_API_BASE`) in its environment, else its
/// harness's provider.
pub fn model_endpoints(env: &[(String, String)], harness: &str) -> Vec<(String, u16)> {
    let mut out: Vec<(String, u16)> = env
        .iter()
        .filter(|(k, _)| k.ends_with("_BASE_URL") || k == "OPENAI_API_BASE")
        .filter_map(|(_, v)| crate::net::host_of(v))
        .filter(|(h, p)| !h.is_empty() && *p != 0)
        .map(|(h, p)| (h.trim_end_matches('.').to_ascii_lowercase(), p))
        .collect();
    if out.is_empty() {
        let provider: &[&str] = match harness {
            "claude" => &["api.anthropic.com"],
            "codex" => &["api.openai.com", "chatgpt.com"],
            "aider" => &["api.openai.com", "api.anthropic.com"],
            "gemini" => &["generativelanguage.googleapis.com"],
            "opencode" => &["api.anthropic.com", "api.openai.com"],
            _ => &[],
        };
        out = provider.iter().map(|h| (h.to_string(), 443)).collect();
    }
    out.sort();
    out.dedup();
    out
}

/// Which proxy decisions become records: every refusal, up to
/// [`Sampler::REFUSALS_PER_SEC`] per conversation (those over it are counted
/// into the next record), and of the allowed connections the first to each
/// destination, then one in [`Sampler::ALLOWED_EVERY`]. Bounded: at most
/// [`Sampler::MAX_KEYS`] destinations are remembered. Pure: the caller says
/// what time it is.
#[derive(Debug, Default)]
pub struct Sampler {
    /// Per conversation: the second the window started, records in it, refusals left out.
    refused: std::collections::HashMap<String, (u64, u32, u64)>,
    /// Per (conversation, destination, port): allowed connections seen.
    allowed: std::collections::HashMap<(String, String, u16), u64>,
}

impl Sampler {
    pub const REFUSALS_PER_SEC: u32 = 20;
    pub const ALLOWED_EVERY: u64 = 100;
    pub const MAX_KEYS: usize = 4096;

    /// Whether to record this decision, and how many decisions the record
    /// stands for (None: one).
    pub fn take(
        &mut self,
        conversation: &str,
        dest: &str,
        port: u16,
        allowed: bool,
        now_secs: u64,
    ) -> Option<Option<u64>> {
        if allowed {
            let key = (conversation.to_string(), dest.to_string(), port);
            if self.allowed.len() >= Self::MAX_KEYS && !self.allowed.contains_key(&key) {
                self.allowed.clear();
            }
            let seen = self.allowed.entry(key).or_insert(0);
            *seen += 1;
            return match *seen {
                1 => Some(None),
                n if n % Self::ALLOWED_EVERY == 0 => Some(Some(Self::ALLOWED_EVERY)),
                _ => None,
            };
        }
        if self.refused.len() >= Self::MAX_KEYS && !self.refused.contains_key(conversation) {
            self.refused.clear();
        }
        let (start, used, left_out) = self.refused.entry(conversation.to_string()).or_insert((now_secs, 0, 0));
        if *start != now_secs {
            (*start, *used) = (now_secs, 0);
        }
        if *used >= Self::REFUSALS_PER_SEC {
            *left_out += 1;
            return None;
        }
        *used += 1;
        let count = std::mem::take(left_out);
        Some((count > 0).then_some(count + 1))
    }
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
    fn a_name_may_be_looked_up_when_something_names_it() {
        let model = vec![("api.anthropic.com".to_string(), 443)];
        let grants = vec!["pypi.org:443".to_string(), "*.example.com".to_string()];
        for (name, rule) in [
            ("api.anthropic.com", "model endpoint api.anthropic.com:443"),
            ("PyPI.org.", "pypi.org:443"),
            ("a.example.com", "*.example.com"),
        ] {
            assert!(
                matches!(decide_name(&model, &grants, name), Verdict::Allowed { rule: r, .. } if r == rule),
                "{name}"
            );
        }
        for name in ["example.com", "files.pythonhosted.org", "secret-abc.evil.test"] {
            assert!(
                matches!(decide_name(&model, &grants, name), Verdict::Refused { .. }),
                "{name}"
            );
        }
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

    #[test]
    fn the_verdict_names_what_allowed_it() {
        let model = vec![("host.docker.internal".to_string(), 8080)];
        let grants: Vec<String> = [
            "pypi.org:443",
            "*.example.com",
            "10.0.0.7:5432",
            "host.docker.internal:9000",
            "bad entry",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let allowed = |rule: &str, internal_ok| Verdict::Allowed {
            rule: rule.into(),
            internal_ok,
        };
        let cases: &[(&str, u16, Verdict)] = &[
            (
                "host.docker.internal",
                8080,
                allowed("model endpoint host.docker.internal:8080", true),
            ),
            (
                "HOST.docker.internal.",
                8080,
                allowed("model endpoint host.docker.internal:8080", true),
            ),
            ("pypi.org", 443, allowed("pypi.org:443", false)),
            ("a.example.com", 22, allowed("*.example.com", false)),
            ("10.0.0.7", 5432, allowed("10.0.0.7:5432", true)),
            ("host.docker.internal", 9000, allowed("host.docker.internal:9000", true)),
        ];
        for (host, port, want) in cases {
            assert_eq!(&decide(&model, &grants, host, *port), want, "{host}:{port}");
        }
        for (host, port) in [
            ("host.docker.internal", 8081),
            ("host.docker.internal", 9001),
            ("pypi.org", 80),
            ("example.com", 443),
            ("10.0.0.8", 5432),
            ("bad entry", 1),
            ("evil.test", 443),
        ] {
            assert!(
                matches!(decide(&model, &grants, host, port), Verdict::Refused { .. }),
                "{host}:{port}"
            );
        }
    }

    #[test]
    fn model_endpoints_come_from_base_urls_or_the_provider() {
        let env = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        assert_eq!(
            model_endpoints(
                &env(&[
                    ("ANTHROPIC_BASE_URL", "http://host.docker.internal:8080"),
                    ("HOME", "/h")
                ]),
                "claude"
            ),
            vec![("host.docker.internal".to_string(), 8080)]
        );
        assert_eq!(
            model_endpoints(&env(&[("OPENAI_API_BASE", "https://LLM.example.org/v1")]), "aider"),
            vec![("llm.example.org".to_string(), 443)]
        );
        assert_eq!(
            model_endpoints(&[], "claude"),
            vec![("api.anthropic.com".to_string(), 443)]
        );
        assert!(model_endpoints(&[], "fake").is_empty());
    }

    #[test]
    fn refusals_are_all_counted_and_allowed_ones_sampled() {
        let mut s = Sampler::default();
        let mut recorded = 0u64;
        for _ in 0..25 {
            if let Some(n) = s.take("c1", "evil.test", 443, false, 100) {
                recorded += n.unwrap_or(1);
            }
        }
        assert_eq!(recorded, 20, "at most 20 records a second");
        // The next second's first record stands for the 5 left out too.
        assert_eq!(s.take("c1", "evil.test", 443, false, 101), Some(Some(6)));
        assert_eq!(
            s.take("c2", "evil.test", 443, false, 100),
            Some(None),
            "per conversation"
        );
        assert_eq!(
            s.take("c1", "pypi.org", 443, true, 100),
            Some(None),
            "the first allowed"
        );
        let sampled = (2..=250)
            .filter(|_| s.take("c1", "pypi.org", 443, true, 100).is_some())
            .count();
        assert_eq!(sampled, 2, "then one in 100");
    }
}
