//! The node's own outbound HTTPS: one TLS client configuration (the
//! system's roots, ring) and one HTTP/1.1 exchange for everything the node
//! fetches or posts.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};

/// What the server answered: its status, headers and body (at most the
/// limit the caller gave; more is an error).
pub struct Answer {
    pub status: hyper::StatusCode,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

/// Sends `request` over `io` (HTTP/1.1) and reads the answer.
pub async fn exchange<S, B>(io: S, request: hyper::Request<B>, max_body: usize) -> Result<Answer, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("http: {e}"))?;
    let driver = tokio::spawn(conn);
    let result = async {
        let response = sender.send_request(request).await.map_err(|e| format!("http: {e}"))?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, max_body)
            .collect()
            .await
            .map_err(|e| format!("reading the answer: {e}"))?
            .to_bytes();
        Ok(Answer {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
    .await;
    driver.abort();
    result
}

/// The TLS client configuration, built once.
pub fn tls_client() -> Result<Arc<rustls::ClientConfig>, String> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            let config =
                rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("tls: {e}"))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
            Ok(Arc::new(config))
        })
        .clone()
}

/// Opens TLS to `host` over `tcp`, checking the certificate names `host`.
pub async fn tls_connect(
    host: &str,
    tcp: tokio::net::TcpStream,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, String> {
    let name =
        rustls::pki_types::ServerName::try_from(host.to_string()).map_err(|e| format!("tls name {host}: {e}"))?;
    tokio_rustls::TlsConnector::from(tls_client()?)
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls handshake with {host}: {e}"))
}
