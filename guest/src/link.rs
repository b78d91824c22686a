//! The connection to the node: dial, say hello, check the node's signature,
//! then stream PTY output and answer requests until the CLI exits. Dropped
//! connections are redialled with backoff for as long as the CLI lives.
//!
//! A welcome whose signature does not verify against WARREN_NODE_KEY counts as
//! a failed dial: the guest hangs up without sending anything else and redials
//! with backoff, still presenting the launch token (the impostor never gets a
//! byte of output and never learns a session key).

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::bootstrap::Bootstrap;
use crate::proto::{self, AliveResult, GuestMsg, NodeMsg, ProtoError, QuotaResult};
use crate::pty::{Pty, Sink};

/// Exit code when the node refuses the guest (EX_TEMPFAIL).
pub(crate) const REFUSED_EXIT_CODE: i32 = 75;
/// Frames waiting for the node; a full queue means the node is not reading.
const OUTBOUND_CAPACITY: usize = 256;
const DIAL_TIMEOUT: Duration = Duration::from_secs(10);
const WELCOME_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the guest keeps trying to report the CLI's exit to the node.
const EXIT_GRACE: Duration = Duration::from_secs(2);
const BACKOFF_FIRST: Duration = Duration::from_millis(200);
const BACKOFF_CAP: Duration = Duration::from_secs(5);

/// The link's byte stream: TCP to the node, or its Unix socket.
trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}
impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

type Ws = WebSocketStream<Box<dyn Io>>;

/// The delay before redial number `failures + 1`: 200 ms doubling to a 5 s
/// cap, stretched by `jitter` (0.0..1.0) times 10%.
pub(crate) fn backoff_delay(failures: u32, jitter: f64) -> Duration {
    let base = BACKOFF_FIRST.saturating_mul(1 << failures.min(16)).min(BACKOFF_CAP);
    base.mul_f64(1.0 + 0.1 * jitter.clamp(0.0, 1.0))
}

/// How a connection ended for good.
enum Ending {
    Exited(i32),
    Refused(String),
}

#[derive(Debug, thiserror::Error)]
enum LinkError {
    #[error("dial timed out after {DIAL_TIMEOUT:?}")]
    DialTimeout,
    #[error("no welcome within {WELCOME_TIMEOUT:?}")]
    WelcomeTimeout,
    #[error("websocket: {0}")]
    Ws(#[from] tungstenite::Error),
    #[error(transparent)]
    Proto(#[from] ProtoError),
    #[error("expected a welcome, got a {0} frame")]
    NotWelcome(&'static str),
    #[error("the node closed the connection")]
    Closed,
    #[error("the node is not reading: {OUTBOUND_CAPACITY} frames queued")]
    Backlog,
}

/// What the guest presents in its hello.
struct Credential {
    secret: String,
    /// True once a welcome handed out a session key.
    reconnect: bool,
}

fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(proto::MAX_TEXT_FRAME))
        .max_frame_size(Some(proto::MAX_TEXT_FRAME))
}

fn text(msg: &GuestMsg) -> Message {
    Message::text(proto::encode(msg))
}

/// Serves the node until the CLI exits or the node refuses us; returns the
/// guest's exit code.
pub(crate) async fn run(boot: Bootstrap, pty: Arc<Pty>) -> i32 {
    tokio::select! {
        code = redial_loop(&boot, &pty) => code,
        code = async { let code = pty.wait().await; tokio::time::sleep(EXIT_GRACE).await; code } => {
            tracing::warn!("the CLI exited but the node could not be told");
            code
        }
    }
}

async fn redial_loop(boot: &Bootstrap, pty: &Arc<Pty>) -> i32 {
    let mut credential = Credential {
        secret: boot.launch_token.clone(),
        reconnect: false,
    };
    let mut failures = 0;
    loop {
        let mut welcomed = false;
        match connection(boot, &mut credential, &mut welcomed, pty).await {
            Ok(Ending::Exited(code)) => return code,
            Ok(Ending::Refused(reason)) => {
                eprintln!("warren guest: node refused: {reason}");
                pty.terminate().await;
                return REFUSED_EXIT_CODE;
            }
            Err(e) => tracing::warn!("connection to the node lost: {e}"),
        }
        if welcomed {
            failures = 0;
        }
        let delay = backoff_delay(failures, rand::random());
        failures = failures.saturating_add(1);
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            _ = pty.wait() => {}
        }
    }
}

/// Opens the WebSocket to the node: over its Unix socket when given, else
/// over TCP to `node_url`'s address.
async fn dial(boot: &Bootstrap) -> Result<(Ws, tungstenite::handshake::client::Response), LinkError> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let request = boot.node_url.as_str().into_client_request()?;
    let stream: Box<dyn Io> = match &boot.node_socket {
        Some(path) => Box::new(
            tokio::net::UnixStream::connect(path)
                .await
                .map_err(tungstenite::Error::Io)?,
        ),
        None => {
            let at = request
                .uri()
                .authority()
                .map(|a| a.as_str().to_string())
                .unwrap_or_default();
            let tcp = TcpStream::connect(at).await.map_err(tungstenite::Error::Io)?;
            let _ = tcp.set_nodelay(true);
            Box::new(tcp)
        }
    };
    Ok(tokio_tungstenite::client_async_with_config(request, stream, Some(ws_config())).await?)
}

/// One connection: hello, welcome, then serve until it ends.
async fn connection(
    boot: &Bootstrap,
    credential: &mut Credential,
    welcomed: &mut bool,
    pty: &Arc<Pty>,
) -> Result<Ending, LinkError> {
    let (ws, _) = tokio::time::timeout(DIAL_TIMEOUT, dial(boot))
        .await
        .map_err(|_| LinkError::DialTimeout)??;
    let (mut tx, mut rx) = ws.split();
    let nonce = hex::encode(rand::random::<[u8; 32]>());
    let (rows, cols) = pty.size();
    let hello = GuestMsg::Hello {
        conversation: boot.conversation.clone(),
        credential: credential.secret.clone(),
        reconnect: credential.reconnect,
        nonce: nonce.clone(),
        rows,
        cols,
        pid: pty.pid(),
        version: env!("CARGO_PKG_VERSION").into(),
    };
    tx.send(text(&hello)).await?;
    let first = tokio::time::timeout(WELCOME_TIMEOUT, next_text(&mut rx))
        .await
        .map_err(|_| LinkError::WelcomeTimeout)??;
    match proto::decode::<NodeMsg>(&first)? {
        NodeMsg::Welcome { session_key, node_sig } => {
            proto::verify_welcome(&boot.node_key, &boot.conversation, &nonce, &node_sig)?;
            *credential = Credential {
                secret: session_key,
                reconnect: true,
            };
            *welcomed = true;
        }
        NodeMsg::Refused { reason } => return Ok(Ending::Refused(reason)),
        _ => return Err(LinkError::NotWelcome("request")),
    }

    let (queue, outbound) = mpsc::channel(OUTBOUND_CAPACITY);
    let overflow = Arc::new(Notify::new());
    pty.attach(Sink {
        queue: queue.clone(),
        overflow: overflow.clone(),
    });
    let mut writer = tokio::spawn(write_out(tx, outbound));
    let ending = serve(&mut rx, &queue, &overflow, &mut writer, pty).await;
    pty.detach();
    drop(queue);
    match ending {
        // Let the writer deliver `Exited` and close the socket.
        Ok(Ending::Exited(_)) => {
            let _ = tokio::time::timeout(EXIT_GRACE, &mut writer).await;
        }
        _ => writer.abort(),
    }
    ending
}

/// Sends queued frames until every sender is gone, then closes the socket.
async fn write_out(mut tx: SplitSink<Ws, Message>, mut outbound: mpsc::Receiver<Message>) -> tungstenite::Result<()> {
    while let Some(frame) = outbound.recv().await {
        tx.send(frame).await?;
    }
    tx.close().await
}

/// The next text frame; control frames are handled by tungstenite, and
/// binary frames from the node mean nothing, so both are skipped.
async fn next_text(rx: &mut SplitStream<Ws>) -> Result<String, LinkError> {
    loop {
        match rx.next().await {
            None | Some(Ok(Message::Close(_))) => return Err(LinkError::Closed),
            Some(Err(e)) => return Err(e.into()),
            Some(Ok(Message::Text(t))) => return Ok(t.as_str().to_owned()),
            Some(Ok(_)) => {}
        }
    }
}

fn push(queue: &mpsc::Sender<Message>, msg: &GuestMsg) -> Result<(), LinkError> {
    queue.try_send(text(msg)).map_err(|e| match e {
        mpsc::error::TrySendError::Full(_) => LinkError::Backlog,
        mpsc::error::TrySendError::Closed(_) => LinkError::Closed,
    })
}

/// Answers requests in arrival order until the CLI exits or the link fails.
async fn serve(
    rx: &mut SplitStream<Ws>,
    queue: &mpsc::Sender<Message>,
    overflow: &Notify,
    writer: &mut JoinHandle<tungstenite::Result<()>>,
    pty: &Arc<Pty>,
) -> Result<Ending, LinkError> {
    loop {
        tokio::select! {
            code = pty.wait() => {
                push(queue, &GuestMsg::Exited { code })?;
                return Ok(Ending::Exited(code));
            }
            () = overflow.notified() => return Err(LinkError::Backlog),
            _ = &mut *writer => return Err(LinkError::Closed),
            frame = next_text(rx) => {
                let frame = frame?;
                let reply = match proto::decode::<NodeMsg>(&frame) {
                    Ok(NodeMsg::Refused { reason }) => return Ok(Ending::Refused(reason)),
                    Ok(NodeMsg::Welcome { .. }) => return Err(LinkError::NotWelcome("second welcome")),
                    Ok(request) => answer(pty, request).await,
                    Err(e) => match proto::request_id(&frame) {
                        Some(id) => GuestMsg::reply(id, Err(e.to_string())),
                        None => return Err(e.into()),
                    },
                };
                push(queue, &reply)?;
            }
        }
    }
}

/// Writes a secret into the secrets directory (0600, replaced whole: a
/// reader never sees half of it).
fn write_secret(name: &str, value: &str) -> Result<(), String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if !proto::secret_name_ok(name) {
        return Err(format!("{name:?} is not a secret's file name"));
    }
    let dir = std::env::var_os(proto::SECRETS_DIR).ok_or_else(|| format!("{} is not set", proto::SECRETS_DIR))?;
    let dir = std::path::Path::new(&dir);
    let tmp = dir.join(format!(".{name}.new"));
    let write = || -> std::io::Result<()> {
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(value.as_bytes())?;
        std::fs::rename(&tmp, dir.join(name))
    };
    write().map_err(|e| format!("writing {name} into {}: {e}", dir.display()))
}

fn json<T: serde::Serialize>(value: &T) -> Option<Value> {
    serde_json::to_value(value).ok()
}

/// Carries out one request and builds its reply.
async fn answer(pty: &Arc<Pty>, request: NodeMsg) -> GuestMsg {
    let id = request.id().unwrap_or_default();
    let outcome = match request {
        NodeMsg::Write { data, .. } => match proto::decode_write(&data) {
            Ok(bytes) => pty.write(bytes).await.map(|()| None),
            Err(e) => Err(e.to_string()),
        },
        NodeMsg::Resize { rows, cols, .. } => pty.resize(rows, cols).map(|()| None),
        NodeMsg::Screen { .. } => Ok(json(&pty.screen())),
        NodeMsg::Alive { .. } => Ok(json(&AliveResult { alive: pty.alive() })),
        NodeMsg::Quota { .. } => Ok(json(&QuotaResult { metrics: vec![] })),
        NodeMsg::Close { .. } => {
            pty.terminate().await;
            Ok(None)
        }
        NodeMsg::Ping { .. } => Ok(None),
        NodeMsg::Freeze { frozen, .. } => pty.freeze(frozen).map(|()| None),
        NodeMsg::Secret { name, value, .. } => write_secret(&name, &value.0).map(|()| None),
        NodeMsg::Welcome { .. } | NodeMsg::Refused { .. } => Err("not a request".into()),
    };
    GuestMsg::reply(id, outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_200ms_to_a_5s_cap() {
        let ms = |f| backoff_delay(f, 0.0).as_millis();
        assert_eq!(
            [ms(0), ms(1), ms(2), ms(3), ms(4), ms(5), ms(60)],
            [200, 400, 800, 1600, 3200, 5000, 5000]
        );
        assert_eq!(backoff_delay(0, 1.0).as_millis(), 220);
        assert_eq!(backoff_delay(u32::MAX, 0.5).as_millis(), 5250);
    }
}
