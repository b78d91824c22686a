//! A small JSON-RPC client over the node's WebSocket, used by every CLI verb,
//! the benchmarks and the end-to-end tests. Notifications that arrive while a
//! call waits are kept (bounded) for `next_notification`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use console_api::{Notification, Request, Response, RpcError};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// Notifications kept while waiting for a response.
const MAX_BUFFERED: usize = 100_000;

/// Where the node is and how to authenticate to it.
#[derive(Debug, Clone)]
pub struct Target {
    pub url: String,
    pub token: Option<String>,
}

impl Target {
    /// `WARREN_URL` / `WARREN_TOKEN` (or flags) win; otherwise the local node of
    /// `data_dir` (its `node.json` and `admin.token`). The local admin token is
    /// only ever sent to the local node's own endpoint.
    pub fn resolve(url: Option<String>, token: Option<String>, data_dir: &Path) -> anyhow::Result<Target> {
        let local_endpoint = || -> anyhow::Result<String> {
            let path = node::server::endpoint_path(data_dir);
            let text = std::fs::read_to_string(&path).with_context(|| {
                format!(
                    "no WARREN_URL given and no local node found ({} is missing: is `warren up` running with this data dir?)",
                    path.display()
                )
            })?;
            let v: Value = serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
            Ok(v.get("endpoint")
                .and_then(Value::as_str)
                .ok_or_else(|| anyhow!("{} has no endpoint", path.display()))?
                .to_string())
        };
        let (url, local) = match url {
            Some(u) => {
                let local = local_endpoint().is_ok_and(|e| e == u);
                (u, local)
            }
            None => (local_endpoint()?, true),
        };
        let token = match token {
            Some(t) => Some(t),
            None if local => std::fs::read_to_string(node::server::token_path(data_dir))
                .ok()
                .map(|t| t.trim().to_string()),
            None => None,
        };
        Ok(Target { url, token })
    }
}

pub struct Client {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: i64,
    notes: VecDeque<Notification>,
    closed: Option<String>,
    /// Takes `request.progress` notifications as they arrive (else they are
    /// kept with the others).
    on_progress: Option<ProgressFn>,
}

/// What takes a `request.progress` notification's params.
type ProgressFn = Box<dyn FnMut(&Value) + Send>;

/// The TLS trust of a `wss://` connection: the system's roots, the PEM
/// certificates in `WARREN_CA_FILE` (a node's self-signed `tls/cert.pem`,
/// say), inside a conversation the node's certificate beside its instance
/// token, and `extra`. Signatures use ring, the provider the node uses.
pub fn tls_config(extra: &[PathBuf]) -> anyhow::Result<rustls::ClientConfig> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    // Inside a conversation: the certificate the node put beside the
    // instance token. Extra files that are missing are skipped;
    // WARREN_CA_FILE must exist.
    let beside_token = std::env::var_os("WARREN_TOKEN_FILE")
        .map(PathBuf::from)
        .and_then(|t| t.parent().map(|d| d.join(node::tokens::NODE_CERT_FILE)));
    let present = extra.iter().cloned().chain(beside_token).filter(|p| p.exists());
    let env = std::env::var_os("WARREN_CA_FILE").map(PathBuf::from);
    for path in present.chain(env) {
        let path = &path;
        for cert in CertificateDer::pem_file_iter(path).with_context(|| format!("reading {}", path.display()))? {
            let cert = cert.with_context(|| format!("{} is not PEM certificates", path.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("{}: not a usable certificate", path.display()))?;
        }
    }
    Ok(
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

impl Client {
    pub async fn connect(target: &Target) -> anyhow::Result<Client> {
        Client::connect_trusting(target, &[]).await
    }

    /// Like `connect`; a `wss://` node may also present a certificate from
    /// `certs` (PEM files; missing ones are skipped), e.g. the local node's
    /// self-signed one.
    pub async fn connect_trusting(target: &Target, certs: &[PathBuf]) -> anyhow::Result<Client> {
        let mut req = target
            .url
            .as_str()
            .into_client_request()
            .with_context(|| format!("bad node URL {}", target.url))?;
        if let Some(t) = &target.token {
            req.headers_mut().insert(
                "Authorization",
                format!("Bearer {t}")
                    .parse()
                    .context("token is not a valid header value")?,
            );
        }
        let connector = if target.url.starts_with("wss://") {
            Some(tokio_tungstenite::Connector::Rustls(std::sync::Arc::new(tls_config(
                certs,
            )?)))
        } else {
            None
        };
        let (ws, _) = match tokio_tungstenite::connect_async_tls_with_config(req, None, false, connector).await {
            Ok(ok) => ok,
            Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
                let body = resp
                    .body()
                    .as_ref()
                    .map(|b| String::from_utf8_lossy(b).trim().to_string())
                    .unwrap_or_default();
                bail!("the node refused the connection ({}): {body}", resp.status());
            }
            Err(e) => return Err(e).with_context(|| format!("connecting to {}", target.url)),
        };
        Ok(Client {
            ws,
            next_id: 1,
            notes: VecDeque::new(),
            closed: None,
            on_progress: None,
        })
    }

    /// Hands every `request.progress` notification to `f` from now on.
    pub fn on_progress(&mut self, f: impl FnMut(&Value) + Send + 'static) {
        self.on_progress = Some(Box::new(f));
    }

    /// Sends a raw text frame (tests of malformed input use this).
    pub async fn send_raw(&mut self, text: String) -> anyhow::Result<()> {
        self.ws.send(Message::Text(text.into())).await?;
        Ok(())
    }

    /// Reads frames until a response arrives (notifications are kept).
    pub async fn read_response(&mut self) -> anyhow::Result<Response> {
        loop {
            let text = self.read_text().await?;
            let v: Value = serde_json::from_str(&text).context("the node sent invalid JSON")?;
            if v.get("id").is_some() || v.get("result").is_some() || v.get("error").is_some() {
                return Ok(serde_json::from_value(v)?);
            }
            let Ok(n) = serde_json::from_value::<Notification>(v) else {
                continue;
            };
            if n.method == console_api::methods::NOTIFY_REQUEST_PROGRESS
                && let Some(f) = self.on_progress.as_mut()
            {
                f(&n.params);
            } else if self.notes.len() < MAX_BUFFERED {
                self.notes.push_back(n);
            }
        }
    }

    async fn read_text(&mut self) -> anyhow::Result<String> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => return Ok(t.to_string()),
                Some(Ok(Message::Close(frame))) => {
                    let reason = frame.map(|f| f.reason.to_string()).unwrap_or_default();
                    self.closed = Some(reason.clone());
                    bail!("the node closed the connection: {reason}");
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
                None => bail!("the node closed the connection"),
            }
        }
    }

    /// The close reason, once the node has closed the connection.
    pub fn close_reason(&self) -> Option<&str> {
        self.closed.as_deref()
    }

    /// Calls `method`; `Err(Ok(rpc_error))` is an error answer from the node,
    /// `Err(Err(e))` a transport failure.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        let text =
            serde_json::to_string(&Request::new(id, method, params)).map_err(|e| CallError::Transport(e.into()))?;
        self.ws
            .send(Message::Text(text.into()))
            .await
            .map_err(|e| CallError::Transport(e.into()))?;
        loop {
            let resp = self.read_response().await.map_err(CallError::Transport)?;
            if resp.id != Some(console_api::Id::Num(id)) {
                continue;
            }
            return match (resp.result, resp.error) {
                (_, Some(e)) => Err(CallError::Rpc(e)),
                (Some(v), None) => Ok(v),
                (None, None) => Ok(Value::Null),
            };
        }
    }

    /// The next notification, waiting at most `timeout`.
    pub async fn next_notification(&mut self, timeout: Duration) -> anyhow::Result<Option<Notification>> {
        if let Some(n) = self.notes.pop_front() {
            return Ok(Some(n));
        }
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let text = match tokio::time::timeout(left, self.read_text()).await {
                Ok(t) => t?,
                Err(_) => return Ok(None),
            };
            if let Ok(n) = serde_json::from_str::<Notification>(&text) {
                return Ok(Some(n));
            }
        }
    }

    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}

#[derive(Debug)]
pub enum CallError {
    Rpc(RpcError),
    Transport(anyhow::Error),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "{e}"),
            CallError::Transport(e) => write!(f, "{e:#}"),
        }
    }
}

impl std::error::Error for CallError {}

impl CallError {
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            CallError::Rpc(e) => Some(e),
            CallError::Transport(_) => None,
        }
    }
}

/// The data dir a client verb looks in for the local node.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.or_else(|| std::env::var_os("WARREN_DATA_DIR").map(PathBuf::from))
        .unwrap_or_else(node::config::default_data_dir)
}

/// One call over the local node's Unix socket (`<data_dir>/warren.sock`):
/// local admin authority, for what the network may not do (minting admin or
/// supervise rights).
pub async fn unix_call(data_dir: &Path, method: &str, params: Value) -> Result<Value, CallError> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let path = data_dir.join("warren.sock");
    let stream = tokio::net::UnixStream::connect(&path)
        .await
        .with_context(|| format!("connecting to the local node's socket {}", path.display()))
        .map_err(CallError::Transport)?;
    let (r, mut w) = stream.into_split();
    let mut line =
        serde_json::to_string(&Request::new(1, method, params)).map_err(|e| CallError::Transport(e.into()))?;
    line.push('\n');
    w.write_all(line.as_bytes())
        .await
        .map_err(|e| CallError::Transport(e.into()))?;
    let mut lines = BufReader::new(r).lines();
    let answer = lines
        .next_line()
        .await
        .map_err(|e| CallError::Transport(e.into()))?
        .ok_or_else(|| CallError::Transport(anyhow!("the node closed its socket without answering")))?;
    let resp: Response = serde_json::from_str(&answer).map_err(|e| CallError::Transport(e.into()))?;
    match (resp.result, resp.error) {
        (_, Some(e)) => Err(CallError::Rpc(e)),
        (Some(v), None) => Ok(v),
        (None, None) => Ok(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_local_admin_token_only_goes_to_the_local_node() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            node::server::endpoint_path(dir.path()),
            r#"{"endpoint":"ws://127.0.0.1:9/v1/ws"}"#,
        )
        .expect("node.json");
        std::fs::write(node::server::token_path(dir.path()), "tok\n").expect("token");
        let t = Target::resolve(None, None, dir.path()).expect("local");
        assert_eq!(
            (t.url.as_str(), t.token.as_deref()),
            ("ws://127.0.0.1:9/v1/ws", Some("tok"))
        );
        let t = Target::resolve(Some("ws://127.0.0.1:9/v1/ws".into()), None, dir.path()).expect("same");
        assert_eq!(t.token.as_deref(), Some("tok"));
        let t = Target::resolve(Some("ws://elsewhere:7767/v1/ws".into()), None, dir.path()).expect("remote");
        assert_eq!(t.token, None, "never send the local admin token elsewhere");
        let t = Target::resolve(
            Some("ws://elsewhere:7767/v1/ws".into()),
            Some("given".into()),
            dir.path(),
        )
        .expect("x");
        assert_eq!(t.token.as_deref(), Some("given"));
        let empty = tempfile::tempdir().expect("tempdir");
        let err = Target::resolve(None, None, empty.path()).expect_err("no node");
        assert!(err.to_string().contains("is `warren up` running"), "{err}");
    }
}
