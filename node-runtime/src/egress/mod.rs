//! The egress proxy: a guest's only way to any network. A guest container has
//! no network interface but loopback (`network_mode: none`); the guest
//! process forwards its loopback proxy port to a Unix socket the node serves
//! for that conversation alone (`sockets`), so the node knows whose every
//! connection is without trusting anything the guest says. Each connection
//! is one `CONNECT host:port` or one plain HTTP request (`head`); the node
//! decides it against the agent's model endpoints and its live
//! `grants.egress` (`node_store::egress::decide`), resolves the name itself,
//! refuses the node's own networks unless the rule names them, and only then
//! connects. Every decision goes to the [`EgressGate`] to be recorded.

pub mod head;
pub mod sockets;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use futures_util::future::BoxFuture;
use node_store::egress::{HOST_NAME, Verdict, decide, decide_name};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Most connections one conversation's proxy carries at once.
pub const MAX_CONNECTIONS: usize = 256;
/// How long a guest has to send its request head.
const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// How long resolving and connecting to a destination may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What the proxy needs of the node: the agent's grants as they are now (a
/// change applies to the next connection) and a place for its decisions.
pub trait EgressGate: Send + Sync {
    fn grants(&self, agent: &str) -> BoxFuture<'_, Vec<String>>;
    fn record(&self, note: EgressNote);
}

/// One decision of the proxy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressNote {
    pub conversation: String,
    pub agent: String,
    pub dest: String,
    pub port: u16,
    pub allowed: bool,
    /// The model endpoint or grant entry that allowed it, or why it was refused.
    pub rule: String,
}

/// Whose connections a proxy socket carries.
#[derive(Debug, Clone)]
pub struct Route {
    pub conversation: String,
    pub agent: String,
    /// The model endpoints (host, port) reached without a grant.
    pub model: Vec<(String, u16)>,
}

/// Serves one proxy connection from a guest to its end.
pub async fn handle<S>(mut guest: S, route: &Route, gate: &dyn EgressGate)
where
    S: AsyncRead + AsyncWrite + Unpin + guest::relay::Socket,
{
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut guest)).await {
        Ok(Ok(h)) => h,
        Ok(Err(e)) => return refuse(&mut guest, "400 Bad Request", &e).await,
        Err(_) => return refuse(&mut guest, "408 Request Timeout", "no request head in time").await,
    };
    let head = match head::parse(&head) {
        Ok(h) => h,
        Err(e) => return refuse(&mut guest, "400 Bad Request", &e).await,
    };
    let (host, port) = (head.host().to_string(), head.port());
    let note = |allowed: bool, rule: String| EgressNote {
        conversation: route.conversation.clone(),
        agent: route.agent.clone(),
        dest: host.clone(),
        port,
        allowed,
        rule,
    };
    let grants = gate.grants(&route.agent).await;
    if matches!(head, head::Head::Resolve { .. }) {
        return resolve(&mut guest, decide_name(&route.model, &grants, &host), &host, gate, note).await;
    }
    let internal_ok = match decide(&route.model, &grants, &host, port) {
        Verdict::Allowed { internal_ok, rule } => {
            gate.record(note(true, rule));
            internal_ok
        }
        Verdict::Refused { rule } => {
            gate.record(note(false, rule));
            let why = format!(
                "warren: egress to {host}:{port} is not granted to agent {:?} (grants.egress)",
                route.agent
            );
            return refuse(&mut guest, "403 Forbidden", &why).await;
        }
    };
    let mut upstream = match tokio::time::timeout(CONNECT_TIMEOUT, connect(&host, port, internal_ok)).await {
        Ok(Ok(s)) => s,
        Ok(Err(Refusal::Internal(ip))) => {
            gate.record(note(false, format!("{ip} is on one of the node's own networks")));
            let why =
                format!("warren: {host} resolves to {ip}, on one of the node's own networks: grant it by address");
            return refuse(&mut guest, "403 Forbidden", &why).await;
        }
        Ok(Err(Refusal::Unreachable(e))) => return refuse(&mut guest, "502 Bad Gateway", &e).await,
        Err(_) => {
            return refuse(
                &mut guest,
                "504 Gateway Timeout",
                "the destination did not answer in time",
            )
            .await;
        }
    };
    let first = match head {
        head::Head::Connect { .. } => {
            if guest
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            rest
        }
        head::Head::Forward { mut request, .. } => {
            request.extend_from_slice(&rest);
            request
        }
        head::Head::Resolve { .. } => return,
    };
    if upstream.write_all(&first).await.is_err() {
        return;
    }
    let _ = guest::relay::relay(&guest, &upstream).await;
}

/// Answers the guest's resolver: the addresses of a name something allows
/// (one per line), or a refusal, which is recorded like a refused connection.
async fn resolve<S, F>(guest: &mut S, verdict: Verdict, host: &str, gate: &dyn EgressGate, note: F)
where
    S: AsyncWrite + Unpin,
    F: Fn(bool, String) -> EgressNote,
{
    let internal_ok = match verdict {
        Verdict::Allowed { internal_ok, .. } => internal_ok,
        Verdict::Refused { rule } => {
            gate.record(note(false, format!("lookup: {rule}")));
            return refuse(guest, "403 Forbidden", &format!("warren: no grant names {host}")).await;
        }
    };
    let addrs = match tokio::time::timeout(CONNECT_TIMEOUT, addresses(host)).await {
        Ok(Ok(a)) => a,
        _ => vec![],
    };
    let addrs: Vec<String> = addrs
        .into_iter()
        .filter(|ip| internal_ok || !node_store::net::is_internal(*ip))
        .map(|ip| ip.to_string())
        .collect();
    let body = addrs.join("\n");
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = guest.write_all(reply.as_bytes()).await;
    let _ = guest.shutdown().await;
}

/// Reads up to the end of the head; returns it and what came after it.
async fn read_head<S: AsyncRead + Unpin>(s: &mut S) -> Result<(Vec<u8>, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before a request head".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head::head_len(&buf) {
            let rest = buf.split_off(end);
            return Ok((buf, rest));
        }
        if buf.len() > head::MAX_HEAD {
            return Err(format!("the request head is over {} bytes", head::MAX_HEAD));
        }
    }
}

enum Refusal {
    Internal(IpAddr),
    Unreachable(String),
}

/// Resolves `host` (the node's host name means its loopback) and connects
/// to the first address that answers, refusing inward addresses unless
/// `internal_ok`.
async fn connect(host: &str, port: u16, internal_ok: bool) -> Result<TcpStream, Refusal> {
    let addrs: Vec<SocketAddr> = addresses(host)
        .await
        .map_err(|e| Refusal::Unreachable(format!("cannot resolve {host}: {e}")))?
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect();
    if !internal_ok && let Some(bad) = addrs.iter().find(|a| node_store::net::is_internal(a.ip())) {
        return Err(Refusal::Internal(bad.ip()));
    }
    let mut last = format!("{host} resolves to no address");
    for a in addrs {
        match TcpStream::connect(a).await {
            Ok(s) => {
                let _ = s.set_nodelay(true);
                return Ok(s);
            }
            Err(e) => last = format!("cannot connect to {host}:{port} ({a}): {e}"),
        }
    }
    Err(Refusal::Unreachable(last))
}

/// What the node resolves `host` to: the host's loopback for its name, an
/// address as itself, any other name by the node's resolver.
async fn addresses(host: &str) -> std::io::Result<Vec<IpAddr>> {
    if host == HOST_NAME {
        return Ok(vec![IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    }
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![ip]);
    }
    Ok(tokio::net::lookup_host((host, 0)).await?.map(|a| a.ip()).collect())
}

/// Answers the guest's client with `status` and a one-line reason.
async fn refuse<S: AsyncWrite + Unpin>(guest: &mut S, status: &str, why: &str) {
    let body = format!("{why}\n");
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = guest.write_all(reply.as_bytes()).await;
    let _ = guest.shutdown().await;
}
