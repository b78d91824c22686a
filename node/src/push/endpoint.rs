//! Where a push may be POSTed. A push endpoint is a URL a browser handed
//! to a client, so the node treats it as untrusted: https only, and every
//! address its host resolves to must be public (the node must not become a
//! way to POST into its own network). `[push] allow_private = true` lets
//! plain http and loopback or private addresses through (tests, a LAN push
//! relay). The node connects to the address it checked, never re-resolving.

use std::net::{IpAddr, SocketAddr};

/// The longest endpoint URL accepted.
pub const MAX_URL: usize = 2048;

/// A push endpoint, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub url: String,
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// Path and query.
    pub path: String,
    /// `scheme://host[:port]`: the VAPID JWT's audience.
    pub origin: String,
}

/// Reads `url` as a push endpoint, naming what is wrong.
pub fn parse(url: &str, allow_private: bool) -> Result<Endpoint, String> {
    if url.len() > MAX_URL {
        return Err(format!("endpoint: {} bytes, longer than {MAX_URL}", url.len()));
    }
    let uri: hyper::Uri = url.parse().map_err(|e| format!("endpoint: not a URL ({e})"))?;
    let tls = match uri.scheme_str() {
        Some("https") => true,
        Some("http") if allow_private => false,
        Some("http") => {
            return Err("endpoint: not https (plain http only with [push] allow_private = true)".into());
        }
        _ => return Err(format!("endpoint: {url:?} is not an https:// URL")),
    };
    let authority = uri.authority().ok_or("endpoint: no host")?;
    if authority.as_str().contains('@') {
        return Err("endpoint: a user or password in the URL is not accepted".into());
    }
    let host = authority.host().trim_matches(['[', ']']).to_string();
    if host.is_empty() {
        return Err("endpoint: no host".into());
    }
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    if let Ok(ip) = host.parse::<IpAddr>() {
        check(ip, allow_private)?;
    }
    let scheme = if tls { "https" } else { "http" };
    let origin = match uri.port_u16() {
        Some(p) => format!("{scheme}://{}:{p}", authority.host()),
        None => format!("{scheme}://{}", authority.host()),
    };
    Ok(Endpoint {
        url: url.to_string(),
        path: uri.path_and_query().map(|p| p.as_str()).unwrap_or("/").to_string(),
        host,
        port,
        tls,
        origin,
    })
}

/// Resolves the endpoint's host; every address must pass [`check`].
pub async fn resolve(ep: &Endpoint, allow_private: bool) -> Result<SocketAddr, String> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((ep.host.as_str(), ep.port))
        .await
        .map_err(|e| format!("endpoint: {} does not resolve ({e})", ep.host))?
        .collect();
    let first = *addrs
        .first()
        .ok_or_else(|| format!("endpoint: {} resolves to no address", ep.host))?;
    for a in &addrs {
        check(a.ip(), allow_private).map_err(|e| format!("{e} ({} resolves to it)", ep.host))?;
    }
    Ok(first)
}

/// Refuses an address that is not public, unless private ones are allowed.
pub fn check(ip: IpAddr, allow_private: bool) -> Result<(), String> {
    if allow_private || is_public(ip) {
        return Ok(());
    }
    Err(format!(
        "endpoint: {ip} is not a public address (loopback, private, link-local and the like are refused unless [push] allow_private = true)"
    ))
}

/// Whether `ip` is an address of the public internet (not one of the
/// node's own kinds of network: `node_store::net::is_internal`, which the
/// workspace's clone-URL checks use too).
pub fn is_public(ip: IpAddr) -> bool {
    !node_store::net::is_internal(ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_public_or_not() {
        let cases = [
            ("8.8.8.8", true),
            ("1.1.1.1", true),
            ("127.0.0.1", false),
            ("10.1.2.3", false),
            ("172.16.0.1", false),
            ("192.168.1.1", false),
            ("169.254.169.254", false),
            ("100.64.0.1", false),
            ("0.0.0.0", false),
            ("255.255.255.255", false),
            ("224.0.0.1", false),
            ("198.18.0.1", false),
            ("2001:4860:4860::8888", true),
            ("::1", false),
            ("::", false),
            ("fd00::1", false),
            ("fe80::1", false),
            ("::ffff:10.0.0.1", false),
            ("::ffff:8.8.8.8", true),
            ("2001:db8::1", false),
            ("64:ff9b::a00:1", false),
        ];
        for (ip, want) in cases {
            assert_eq!(is_public(ip.parse().unwrap()), want, "{ip}");
        }
    }

    #[test]
    fn endpoints_are_https_and_public_unless_allowed() {
        let ok = parse("https://push.example.net/wpush/v2/abc?x=1", false).unwrap();
        assert_eq!((ok.host.as_str(), ok.port, ok.tls), ("push.example.net", 443, true));
        assert_eq!(ok.path, "/wpush/v2/abc?x=1");
        assert_eq!(ok.origin, "https://push.example.net");

        let refused = [
            ("http://push.example.net/x", "not https"),
            ("ftp://push.example.net/x", "not an https:// URL"),
            ("https://127.0.0.1/x", "not a public address"),
            ("https://[::1]:8443/x", "not a public address"),
            ("https://10.0.0.5/x", "not a public address"),
            ("https://user:pw@push.example.net/x", "user or password"),
            ("not a url", "endpoint:"),
        ];
        for (url, want) in refused {
            let e = parse(url, false).unwrap_err();
            assert!(e.contains(want), "{url}: {e}");
        }
        let long = format!("https://push.example.net/{}", "a".repeat(MAX_URL));
        assert!(parse(&long, false).unwrap_err().contains("longer than"));

        let local = parse("http://127.0.0.1:9000/p", true).unwrap();
        assert_eq!(
            (local.port, local.tls, local.origin.as_str()),
            (9000, false, "http://127.0.0.1:9000")
        );
    }

    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused() {
        let ep = parse("https://localhost:9/x", false).unwrap();
        let e = resolve(&ep, false).await.unwrap_err();
        assert!(e.contains("not a public address") && e.contains("localhost"), "{e}");
        assert!(resolve(&ep, true).await.unwrap().ip().is_loopback());
    }
}
