//! Whether a clone URL's host is somewhere the node may fetch from on a
//! caller's behalf: never its own loopback, private, link-local or other
//! non-public networks (the node must not become a way into them).

use node_store::net::{host_of, is_internal};

/// Resolves `url`'s host and refuses it when any address it names is
/// internal (a `file://` URL has none: its path was checked already).
pub async fn check_url(url: &str) -> Result<(), String> {
    let Some((host, port)) = host_of(url) else {
        return Ok(());
    };
    if host.is_empty() {
        return Err(format!("{url:?} names no host"));
    }
    let addrs: Vec<std::net::SocketAddr> = match tokio::net::lookup_host((host.as_str(), port.max(1))).await {
        Ok(a) => a.collect(),
        Err(e) => return Err(format!("cannot resolve host {host:?}: {e}")),
    };
    if addrs.is_empty() {
        return Err(format!("host {host:?} resolves to no address"));
    }
    if let Some(bad) = addrs.iter().find(|a| is_internal(a.ip())) {
        return Err(format!(
            "host {host:?} is on a private or local network ({}): the node does not fetch from its own networks on a caller's behalf; clone it yourself and give the path",
            bad.ip()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_loopback_url_is_refused_and_a_file_url_is_not_looked_up() {
        let e = check_url("http://127.0.0.1:9/x.git").await.expect_err("loopback");
        assert!(e.contains("private or local network"), "{e}");
        check_url("file:///tmp/x.git").await.expect("no host to check");
    }
}
