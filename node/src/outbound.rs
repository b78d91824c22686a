//! The node's own outbound HTTPS: one TLS client configuration (the
//! system's roots, ring) for everything the node fetches or posts.

use std::sync::{Arc, OnceLock};

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
