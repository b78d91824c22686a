//! One push POSTed to a push service (RFC 8030 §5): to the address the
//! endpoint was checked at, over TLS to its host name (plain http only where
//! private endpoints are allowed), within a deadline.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Request;
use tokio::io::{AsyncRead, AsyncWrite};

use super::endpoint::Endpoint;

/// What the push service answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Posted {
    pub(super) status: u16,
    /// Its `Retry-After` (seconds), on a 429 or 503.
    pub(super) retry_after: Option<Duration>,
}

/// POSTs `body` with `headers` to `ep` at `addr`.
pub(super) async fn post(
    ep: &Endpoint,
    addr: SocketAddr,
    headers: &[(&'static str, String)],
    body: Vec<u8>,
    within: Duration,
) -> Result<Posted, String> {
    match tokio::time::timeout(within, post_now(ep, addr, headers, body)).await {
        Ok(r) => r,
        Err(_) => Err(format!("no answer within {} ms", within.as_millis())),
    }
}

async fn post_now(
    ep: &Endpoint,
    addr: SocketAddr,
    headers: &[(&'static str, String)],
    body: Vec<u8>,
) -> Result<Posted, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| format!("connecting to {addr}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let host = match (ep.tls, ep.port) {
        (true, 443) | (false, 80) => ep.host.clone(),
        _ => format!("{}:{}", ep.host, ep.port),
    };
    let mut request = Request::post(ep.path.as_str())
        .header(hyper::header::HOST, host)
        .header(hyper::header::USER_AGENT, concat!("warren/", env!("CARGO_PKG_VERSION")))
        .header(hyper::header::CONTENT_LENGTH, body.len());
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let request = request
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| format!("request: {e}"))?;
    if ep.tls {
        let stream = crate::outbound::tls_connect(&ep.host, tcp).await?;
        send(stream, request).await
    } else {
        send(tcp, request).await
    }
}

async fn send<S>(io: S, request: Request<Full<Bytes>>) -> Result<Posted, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The answer's body says nothing we use; a little of it is read so the
    // connection closes cleanly.
    let answer = crate::outbound::exchange(io, request, 16 * 1024).await?;
    let retry_after = answer
        .headers
        .get(hyper::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s.min(3600)));
    Ok(Posted {
        status: answer.status.as_u16(),
        retry_after,
    })
}
