//! TLS for the API listener (rustls, ring): `[tls] cert`/`key` (PEM files),
//! or `[tls] self_signed` (`warren up --tls`), a certificate the node makes
//! at its first start and keeps in `<data_dir>/tls/` (the key 0600), with its
//! SHA-256 fingerprint printed so a phone or a client can check it. Then the
//! API is `https://` and `wss://`, and the fabric publishes the `wss://`
//! endpoint. The accept loop serves the same router as plain HTTP does.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

pub use crate::config::TlsSettings;

/// How long a client has to finish its TLS handshake.
const HANDSHAKE_WITHIN: Duration = Duration::from_secs(10);
/// TLS connections served at once (handshakes included); more wait in the
/// kernel's accept queue.
const MAX_TLS_CONNECTIONS: usize = 1024;

/// A loaded server identity.
pub struct Identity {
    pub config: Arc<rustls::ServerConfig>,
    /// SHA-256 of the leaf certificate (DER), `AB:CD:...`.
    pub fingerprint: String,
    /// Where the leaf certificate is (clients may pin it).
    pub cert_path: PathBuf,
}

/// Where `--tls` keeps its certificate.
pub fn self_signed_paths(data_dir: &Path) -> (PathBuf, PathBuf) {
    let dir = data_dir.join("tls");
    (dir.join("cert.pem"), dir.join("key.pem"))
}

/// The identity `settings` ask for, if any. A self-signed certificate names
/// `localhost`, `127.0.0.1`, `::1` and `names` (the node's name, the
/// `[console] hosts`); it is made once and reused.
pub fn load(settings: &TlsSettings, data_dir: &Path, names: &[String]) -> anyhow::Result<Option<Identity>> {
    let (cert, key) = match (&settings.cert, &settings.key, settings.self_signed) {
        (Some(c), Some(k), false) => (c.clone(), k.clone()),
        (None, None, false) => return Ok(None),
        (None, None, true) => {
            let (c, k) = self_signed_paths(data_dir);
            if !c.exists() || !k.exists() {
                make_self_signed(&c, &k, names)?;
            }
            (c, k)
        }
        (Some(_), Some(_), true) => bail!("[tls]: give cert and key, or self_signed, not both"),
        _ => bail!("[tls]: cert and key go together (both PEM file paths)"),
    };
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert)
        .with_context(|| format!("[tls] cert: reading {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("[tls] cert: {} is not PEM certificates", cert.display()))?;
    let Some(leaf) = chain.first() else {
        bail!("[tls] cert: {} holds no certificate", cert.display());
    };
    let fingerprint = fingerprint(leaf.as_ref());
    let private = PrivateKeyDer::from_pem_file(&key)
        .with_context(|| format!("[tls] key: reading a PEM private key from {}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .context("[tls]: the key does not fit the certificate")?;
    Ok(Some(Identity {
        config: Arc::new(config),
        fingerprint,
        cert_path: cert,
    }))
}

/// `AB:CD:...`: SHA-256 of a DER certificate.
pub fn fingerprint(der: &[u8]) -> String {
    Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn make_self_signed(cert: &Path, key: &Path, names: &[String]) -> anyhow::Result<()> {
    let mut sans = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    for n in names {
        let host = n
            .rsplit_once(':')
            .map_or(n.as_str(), |(h, _)| h)
            .trim_matches(['[', ']']);
        if !host.is_empty() && !sans.iter().any(|s| s == host) {
            sans.push(host.to_string());
        }
    }
    let made = rcgen::generate_simple_self_signed(sans).context("making a self-signed certificate")?;
    if let Some(dir) = cert.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    node_store::util::write_private(key, &made.key_pair.serialize_pem())
        .with_context(|| format!("writing {}", key.display()))?;
    std::fs::write(cert, made.cert.pem()).with_context(|| format!("writing {}", cert.display()))?;
    Ok(())
}

/// Serves `router` over TLS on `listener` until `shutdown` resolves: each
/// connection's handshake (bounded), then HTTP/1.1 with upgrades (the
/// WebSocket), at most `MAX_TLS_CONNECTIONS` at once. Cancel-safe:
/// dropping it stops accepting.
pub async fn serve(
    listener: tokio::net::TcpListener,
    identity: &Identity,
    router: axum::Router,
    shutdown: impl std::future::Future<Output = ()>,
) -> anyhow::Result<()> {
    let acceptor = tokio_rustls::TlsAcceptor::from(identity.config.clone());
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_TLS_CONNECTIONS));
    tokio::pin!(shutdown);
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(s) => s,
                Err(_) => return Ok(()),
            },
            _ = &mut shutdown => return Ok(()),
        };
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return Ok(()),
        };
        // Small frames go out at once (see `server::run`).
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "TCP_NODELAY could not be set");
        }
        let (acceptor, router) = (acceptor.clone(), router.clone());
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_WITHIN, acceptor.accept(tcp)).await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake timed out");
                    return;
                }
            };
            // The handlers read the client's address as plain HTTP gives it.
            let router = router.layer(axum::Extension(axum::extract::ConnectInfo(peer)));
            let service = hyper_util::service::TowerToHyperService::new(router);
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .with_upgrades();
            if let Err(e) = conn.await {
                tracing::debug!(%peer, error = %e, "a TLS connection ended with an error");
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_identity_is_made_once_and_reused() {
        let dir = tempfile::tempdir().expect("dir");
        let s = TlsSettings {
            self_signed: true,
            ..TlsSettings::default()
        };
        let first = load(&s, dir.path(), &["box.lan:7767".into()])
            .expect("load")
            .expect("an identity");
        let again = load(&s, dir.path(), &[]).expect("load").expect("an identity");
        assert_eq!(first.fingerprint, again.fingerprint, "the same certificate");
        assert_eq!(first.fingerprint.len(), 32 * 3 - 1);
        let (_, key) = self_signed_paths(dir.path());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key).expect("key").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the key is private");
        assert!(load(&TlsSettings::default(), dir.path(), &[]).expect("load").is_none());
        let half = TlsSettings {
            cert: Some(first.cert_path.clone()),
            ..TlsSettings::default()
        };
        assert!(load(&half, dir.path(), &[]).is_err(), "a cert without a key");
    }
}
