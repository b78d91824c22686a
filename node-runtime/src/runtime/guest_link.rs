//! The node's side of the guest connection. A guest (the container's
//! entrypoint, `warren guest`) dials `/guest`, presents its conversation and
//! single-use launch token, and is welcomed with the node's signature over its
//! nonce (the identity pin). The node then drives the PTY contract over that
//! same connection and mirrors the raw byte stream into its own terminal
//! emulator, so `screen()` and `status()` answer locally. Reconnects present
//! the session key from the welcome; a replayed or expired launch token is
//! refused and reported for the audit log. What strangers may cost is
//! bounded by `guest_gate`: a rate per address, hellos checked before they
//! are judged, refusals coalesced per address and window.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ws::{Message, WebSocket};
use futures_util::future::BoxFuture;
use futures_util::{SinkExt, StreamExt};
use guest::ed25519_dalek::SigningKey;
use guest::proto::{self, GuestMsg, NodeMsg};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc, oneshot, watch};

use super::guest_gate::{self, HelloRate, Refusals};
use super::{Chunk, RuntimeError, ScreenSnapshot, Session, StatusFn};
use node_store::util::new_id;

/// How long a guest may take to say hello after connecting.
const HELLO_WITHIN: Duration = Duration::from_secs(10);
/// How long one request to the guest may take.
const REPLY_WITHIN: Duration = Duration::from_secs(5);
/// Frames queued towards one guest.
const OUTBOUND: usize = 256;
/// Raw output chunks buffered per subscriber.
const BYTES_BUFFER: usize = 1024;
/// Used launch tokens remembered (to tell a replay from an unknown token).
const MAX_USED: usize = 4096;

/// What the registry reports for the event log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestNote {
    /// Refused hellos of one address (a replayed, expired or unknown launch
    /// token, an ill-formed hello, one over the address's rate), counted.
    Refused(guest_gate::Refused),
    /// A guest attached; the hash of its session key (for re-adoption).
    Attached { conversation: String, key_hash: String },
}

/// sha256 of a session key, hex: what is stored and compared.
pub fn key_hash(key: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(key.as_bytes()))
}

/// Launches waiting for their guest, and the guests that are attached.
pub struct GuestRegistry {
    key: SigningKey,
    inner: Mutex<Inner>,
    notes: mpsc::Sender<GuestNote>,
    gate: Mutex<Gate>,
    /// The clock the gate's times are read on.
    started: Instant,
}

/// The door's rate and its refusals.
struct Gate {
    rate: HelloRate,
    refusals: Refusals,
}

#[derive(Default)]
struct Inner {
    pending: HashMap<String, Pending>,
    used: HashMap<String, String>,
    /// Attached guests, by conversation: (key hash, session).
    attached: HashMap<String, (String, Arc<GuestSession>)>,
    /// Guests of the node's previous run that may redial (re-adoption).
    adoptable: HashMap<String, Pending>,
}

struct Pending {
    token: String,
    expires: Instant,
    tx: oneshot::Sender<Attached>,
}

/// A guest that presented a valid launch token.
pub struct Attached {
    pub socket: WebSocket,
    pub session_key: String,
    pub pid: u32,
}

/// Why a hello is refused (pure decision over what the registry holds).
#[derive(Debug, PartialEq, Eq)]
pub enum HelloVerdict {
    Launch,
    Reconnect,
    /// A guest of the node's previous run came back.
    Adopt,
    Refuse(String),
}

/// Judges a hello: the launch token must be the pending one, unexpired and
/// unused; a reconnect must present the key (compared by hash) of the attached
/// guest, or of one this node waits to re-adopt, before that wait expires.
#[allow(clippy::too_many_arguments)]
pub fn judge_hello(
    conversation: &str,
    credential: &str,
    reconnect: bool,
    pending: Option<(&str, Instant)>,
    used_by: Option<&str>,
    attached_hash: Option<&str>,
    adoptable: Option<(&str, Instant)>,
    now: Instant,
) -> HelloVerdict {
    if reconnect {
        let presented = key_hash(credential);
        return match (attached_hash, adoptable) {
            (Some(k), _) if k == presented => HelloVerdict::Reconnect,
            (None, Some((k, until))) if k == presented && now <= until => HelloVerdict::Adopt,
            (None, Some((k, _))) if k == presented => {
                HelloVerdict::Refuse(format!("reconnect for {conversation}: came back too late"))
            }
            (Some(_), _) | (None, Some(_)) => {
                HelloVerdict::Refuse(format!("reconnect for {conversation}: wrong session key"))
            }
            (None, None) => HelloVerdict::Refuse(format!("reconnect for {conversation}: no such live guest")),
        };
    }
    if used_by.is_some() {
        return HelloVerdict::Refuse(format!("launch token for {conversation} was already used (replay)"));
    }
    match pending {
        Some((token, _)) if token != credential => {
            HelloVerdict::Refuse(format!("launch token for {conversation} does not match"))
        }
        Some((_, expires)) if now > expires => HelloVerdict::Refuse(format!("launch token for {conversation} expired")),
        Some(_) => HelloVerdict::Launch,
        None => HelloVerdict::Refuse(format!("no launch is waiting for {conversation}")),
    }
}

impl GuestRegistry {
    /// A registry whose refusals are recorded at most once per `refusals_every` and address.
    pub fn new(key: SigningKey, notes: mpsc::Sender<GuestNote>, refusals_every: Duration) -> GuestRegistry {
        GuestRegistry {
            key,
            inner: Mutex::new(Inner::default()),
            notes,
            gate: Mutex::new(Gate {
                rate: HelloRate::default(),
                refusals: Refusals::new(refusals_every.as_millis() as u64),
            }),
            started: Instant::now(),
        }
    }

    fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Takes one hello from `source`'s rate; a refusal is counted.
    pub fn admit_hello(&self, source: IpAddr) -> bool {
        let now = self.now_ms();
        let allowed = self.gate.lock().map(|mut g| g.rate.allow(source, now)).unwrap_or(false);
        if !allowed {
            self.refuse(source, "", "too many hellos from this address");
        }
        allowed
    }

    /// Counts a refused hello; the first of a quiet address is reported at once.
    fn refuse(&self, source: IpAddr, conversation: &str, reason: &str) {
        let now = self.now_ms();
        let record = self
            .gate
            .lock()
            .ok()
            .and_then(|mut g| g.refusals.refused(source, conversation, reason, now));
        if let Some(r) = record {
            let _ = self.notes.try_send(GuestNote::Refused(r));
        }
    }

    /// The counted refusals whose window has passed (call it every second or so).
    pub fn due_refusals(&self) -> Vec<guest_gate::Refused> {
        let now = self.now_ms();
        self.gate.lock().map(|mut g| g.refusals.due(now)).unwrap_or_default()
    }

    /// Waits (until `ttl` passes) for the guest of the node's previous run
    /// whose session key hashes to `key_hash`.
    pub fn expect_adoption(&self, conversation: &str, key_hash: &str, ttl: Duration) -> oneshot::Receiver<Attached> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut inner) = self.inner.lock() {
            inner.adoptable.insert(
                conversation.to_string(),
                Pending {
                    token: key_hash.to_string(),
                    expires: Instant::now() + ttl,
                    tx,
                },
            );
        }
        rx
    }

    /// The node's public identity as guests pin it (hex).
    pub fn public_hex(&self) -> String {
        hex::encode(self.key.verifying_key().as_bytes())
    }

    /// Registers a launch; the receiver gets the guest once it says hello.
    pub fn expect(&self, conversation: &str, token: &str, ttl: Duration) -> oneshot::Receiver<Attached> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut inner) = self.inner.lock() {
            inner.pending.insert(
                conversation.to_string(),
                Pending {
                    token: token.to_string(),
                    expires: Instant::now() + ttl,
                    tx,
                },
            );
        }
        rx
    }

    /// True while a launch for `conversation` waits or its guest is attached.
    pub fn knows(&self, conversation: &str) -> bool {
        self.inner
            .lock()
            .map(|i| {
                i.pending.contains_key(conversation)
                    || i.attached.contains_key(conversation)
                    || i.adoptable.contains_key(conversation)
            })
            .unwrap_or(true)
    }

    /// Forgets a launch that failed.
    pub fn cancel(&self, conversation: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.pending.remove(conversation);
            inner.adoptable.remove(conversation);
        }
    }

    fn attach(&self, conversation: &str, session_key: &str, session: Arc<GuestSession>) {
        let hash = key_hash(session_key);
        if let Ok(mut inner) = self.inner.lock() {
            inner.attached.insert(conversation.to_string(), (hash.clone(), session));
        }
        let _ = self.notes.try_send(GuestNote::Attached {
            conversation: conversation.to_string(),
            key_hash: hash,
        });
    }

    fn detach(&self, conversation: &str) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.attached.remove(conversation);
        }
    }

    /// Serves one guest connection (the `/guest` route) from `source`.
    pub async fn accept(self: Arc<Self>, mut socket: WebSocket, source: IpAddr) {
        let hello = match tokio::time::timeout(HELLO_WITHIN, socket.recv()).await {
            Ok(Some(Ok(Message::Text(t)))) if t.len() > guest_gate::MAX_HELLO_BYTES => {
                let reason = format!("a hello is at most {} bytes", guest_gate::MAX_HELLO_BYTES);
                self.refuse(source, "", &reason);
                let _ = socket.send(refused(&reason)).await;
                return;
            }
            Ok(Some(Ok(Message::Text(t)))) => proto::decode::<GuestMsg>(&t),
            _ => {
                self.refuse(source, "", "no hello");
                return;
            }
        };
        let Ok(GuestMsg::Hello {
            conversation,
            credential,
            reconnect,
            nonce,
            pid,
            version,
            ..
        }) = hello
        else {
            let reason = "the first frame must be a hello";
            self.refuse(source, "", reason);
            let _ = socket.send(refused(reason)).await;
            return;
        };
        if let Err(reason) = guest_gate::check_hello(&conversation, &credential, &nonce, &version) {
            self.refuse(source, "", &reason);
            let _ = socket.send(refused(&reason)).await;
            return;
        }
        let now = Instant::now();
        let (verdict, pending, attached) = {
            let Ok(mut inner) = self.inner.lock() else { return };
            let verdict = judge_hello(
                &conversation,
                &credential,
                reconnect,
                inner.pending.get(&conversation).map(|p| (p.token.as_str(), p.expires)),
                inner.used.get(&credential).map(String::as_str),
                inner.attached.get(&conversation).map(|(k, _)| k.as_str()),
                inner
                    .adoptable
                    .get(&conversation)
                    .map(|p| (p.token.as_str(), p.expires)),
                now,
            );
            let pending = match verdict {
                HelloVerdict::Launch => {
                    if inner.used.len() >= MAX_USED {
                        inner.used.clear();
                    }
                    inner.used.insert(credential.clone(), conversation.clone());
                    inner.pending.remove(&conversation)
                }
                HelloVerdict::Adopt => inner.adoptable.remove(&conversation),
                _ => None,
            };
            let attached = match verdict {
                HelloVerdict::Reconnect => inner.attached.get(&conversation).map(|(_, s)| s.clone()),
                _ => None,
            };
            (verdict, pending, attached)
        };
        let welcome = |key: &str| {
            Message::Text(
                proto::encode(&NodeMsg::Welcome {
                    session_key: key.to_string(),
                    node_sig: proto::sign_welcome(&self.key, &conversation, &nonce),
                })
                .into(),
            )
        };
        match verdict {
            HelloVerdict::Refuse(reason) => {
                self.refuse(source, &conversation, &reason);
                let _ = socket.send(refused(&reason)).await;
            }
            HelloVerdict::Launch => {
                let Some(p) = pending else { return };
                let session_key = new_id("gk-");
                if socket.send(welcome(&session_key)).await.is_err() {
                    return;
                }
                let _ = p.tx.send(Attached {
                    socket,
                    session_key,
                    pid,
                });
            }
            HelloVerdict::Adopt => {
                let Some(p) = pending else { return };
                if socket.send(welcome(&credential)).await.is_err() {
                    return;
                }
                tracing::info!(%conversation, "a guest of the previous run came back");
                let _ = p.tx.send(Attached {
                    socket,
                    session_key: credential.clone(),
                    pid,
                });
            }
            HelloVerdict::Reconnect => {
                let Some(session) = attached else { return };
                if socket.send(welcome(&credential)).await.is_err() {
                    return;
                }
                tracing::info!(%conversation, "guest reconnected");
                session.serve(socket);
            }
        }
    }
}

fn refused(reason: &str) -> Message {
    Message::Text(
        proto::encode(&NodeMsg::Refused {
            reason: reason.to_string(),
        })
        .into(),
    )
}

type Waiters = Mutex<HashMap<u64, oneshot::Sender<Result<Option<Value>, String>>>>;

/// A CLI running in a guest, driven over its connection.
pub struct GuestSession {
    conversation: String,
    registry: Arc<GuestRegistry>,
    out: Mutex<Option<mpsc::Sender<Message>>>,
    waiters: Waiters,
    next_id: AtomicU64,
    parser: Mutex<super::signals::Terminal>,
    status_fn: StatusFn,
    bytes: broadcast::Sender<Chunk>,
    exited_tx: watch::Sender<bool>,
    exited_rx: watch::Receiver<bool>,
    /// The CLI's exit code, once the guest reported it.
    exit_code: Mutex<Option<i32>>,
    connected: watch::Sender<bool>,
    /// Stops the container (close, and exits noticed by the runtime).
    stopper: Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>,
}

impl GuestSession {
    pub fn start(
        conversation: String,
        registry: Arc<GuestRegistry>,
        attached: Attached,
        rows: u16,
        cols: u16,
        status_fn: StatusFn,
        stopper: Box<dyn Fn() -> BoxFuture<'static, ()> + Send + Sync>,
    ) -> Arc<GuestSession> {
        let (exited_tx, exited_rx) = watch::channel(false);
        let (bytes, _) = broadcast::channel(BYTES_BUFFER);
        let session = Arc::new(GuestSession {
            conversation: conversation.clone(),
            registry: registry.clone(),
            out: Mutex::new(None),
            waiters: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            parser: Mutex::new(super::signals::terminal(rows, cols)),
            status_fn,
            bytes,
            exited_tx,
            exited_rx,
            exit_code: Mutex::new(None),
            connected: watch::channel(false).0,
            stopper,
        });
        registry.attach(&conversation, &attached.session_key, session.clone());
        session.clone().serve(attached.socket);
        session
    }

    /// Drives one connection until it ends (the first, or a reconnect).
    fn serve(self: Arc<Self>, socket: WebSocket) {
        let (tx, mut rx) = mpsc::channel::<Message>(OUTBOUND);
        if let Ok(mut out) = self.out.lock() {
            *out = Some(tx);
        }
        self.connected.send_replace(true);
        let (mut sink, mut stream) = socket.split();
        tokio::spawn(async move {
            let writer = tokio::spawn(async move {
                while let Some(m) = rx.recv().await {
                    if sink.send(m).await.is_err() {
                        return;
                    }
                }
            });
            while let Some(Ok(msg)) = stream.next().await {
                match msg {
                    Message::Binary(b) => self.output(&b),
                    Message::Text(t) => self.control(&t),
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            writer.abort();
            self.connected.send_replace(false);
            if let Ok(mut out) = self.out.lock() {
                *out = None;
            }
            self.fail_waiters("the guest connection closed");
        });
    }

    fn output(&self, bytes: &[u8]) {
        if let Ok(mut p) = self.parser.lock() {
            p.process(bytes);
        }
        let _ = self.bytes.send(Arc::from(bytes));
    }

    fn control(&self, text: &str) {
        match proto::decode::<GuestMsg>(text) {
            Ok(GuestMsg::Reply { id, ok, error, result }) => {
                let waiter = self.waiters.lock().ok().and_then(|mut w| w.remove(&id));
                if let Some(w) = waiter {
                    let _ = w.send(if ok {
                        Ok(result)
                    } else {
                        Err(error.unwrap_or_else(|| "the guest refused".into()))
                    });
                }
            }
            Ok(GuestMsg::Exited { code }) => {
                tracing::info!(conversation = %self.conversation, code, "the CLI in the guest exited");
                if let Ok(mut c) = self.exit_code.lock() {
                    *c = Some(code);
                }
                self.mark_exited();
            }
            Ok(GuestMsg::Hello { .. }) => {}
            Err(e) => tracing::warn!(conversation = %self.conversation, error = %e, "bad frame from a guest"),
        }
    }

    fn fail_waiters(&self, why: &str) {
        let waiters: Vec<_> = self
            .waiters
            .lock()
            .map(|mut w| w.drain().map(|(_, tx)| tx).collect())
            .unwrap_or_default();
        for w in waiters {
            let _ = w.send(Err(why.to_string()));
        }
    }

    /// The CLI is gone (it exited, or its container did).
    pub fn mark_exited(&self) {
        if !*self.exited_rx.borrow() {
            self.exited_tx.send_replace(true);
            self.registry.detach(&self.conversation);
        }
    }

    pub fn is_connected(&self) -> bool {
        *self.connected.borrow()
    }

    pub fn connected(&self) -> watch::Receiver<bool> {
        self.connected.subscribe()
    }

    async fn request(&self, make: impl FnOnce(u64) -> NodeMsg) -> Result<Option<Value>, RuntimeError> {
        if *self.exited_rx.borrow() {
            return Err(RuntimeError::Exited);
        }
        let Some(out) = self.out.lock().ok().and_then(|o| o.clone()) else {
            return Err(RuntimeError::Io("the guest is not connected".into()));
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut w) = self.waiters.lock() {
            w.insert(id, tx);
        }
        let forget = || self.waiters.lock().ok().map(|mut w| w.remove(&id));
        let frame = Message::Text(proto::encode(&make(id)).into());
        if out.try_send(frame).is_err() {
            forget();
            return Err(RuntimeError::Io("the guest is not reading (queue full)".into()));
        }
        match tokio::time::timeout(REPLY_WITHIN, rx).await {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(e))) => Err(RuntimeError::Io(e)),
            Ok(Err(_)) => Err(RuntimeError::Io("the guest connection closed".into())),
            Err(_) => {
                forget();
                Err(RuntimeError::Io(format!(
                    "the guest did not answer within {REPLY_WITHIN:?}"
                )))
            }
        }
    }
}

impl Session for GuestSession {
    fn write(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), RuntimeError>> {
        Box::pin(async move {
            self.request(|id| NodeMsg::Write {
                id,
                data: proto::encode_write(&bytes),
            })
            .await
            .map(|_| ())
        })
    }

    fn resize(&self, rows: u16, cols: u16) -> BoxFuture<'_, Result<(), RuntimeError>> {
        Box::pin(async move {
            self.request(|id| NodeMsg::Resize { id, rows, cols }).await?;
            if let Ok(mut p) = self.parser.lock() {
                p.set_size(super::signals::nz(rows), super::signals::nz(cols));
            }
            Ok(())
        })
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if !*self.exited_rx.borrow() {
                let _ = self.request(|id| NodeMsg::Close { id }).await;
                let mut exited = self.exited_rx.clone();
                let _ = tokio::time::timeout(Duration::from_secs(3), exited.wait_for(|e| *e)).await;
            }
            self.mark_exited();
            (self.stopper)().await;
        })
    }

    fn screen(&self) -> ScreenSnapshot {
        super::snapshot(&self.parser)
    }

    fn styled_screen(&self) -> ScreenSnapshot {
        super::styled_snapshot(&self.parser)
    }

    fn status(&self) -> console_api::Status {
        if !self.alive() {
            return console_api::Status::Exited;
        }
        (self.status_fn)(&self.screen())
    }

    fn alive(&self) -> bool {
        !*self.exited_rx.borrow()
    }

    fn exited(&self) -> watch::Receiver<bool> {
        self.exited_rx.clone()
    }

    fn exit_code(&self) -> Option<i32> {
        self.exit_code.lock().ok().and_then(|c| *c)
    }

    fn subscribe(&self) -> broadcast::Receiver<Chunk> {
        self.bytes.subscribe()
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn freeze(&self, frozen: bool) -> BoxFuture<'_, Result<(), RuntimeError>> {
        Box::pin(async move { self.request(|id| NodeMsg::Freeze { id, frozen }).await.map(|_| ()) })
    }

    fn hand_secret(&self, name: &str, value: &str) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let (name, value) = (name.to_string(), guest::proto::SecretValue(value.to_string()));
        Box::pin(async move { self.request(|id| NodeMsg::Secret { id, name, value }).await.map(|_| ()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hellos_are_judged() {
        let now = Instant::now();
        let later = now + Duration::from_secs(60);
        let launch = |cred: &str, pending: Option<(&str, Instant)>, used: Option<&str>| {
            judge_hello("c1", cred, false, pending, used, None, None, now)
        };
        assert_eq!(launch("t", Some(("t", later)), None), HelloVerdict::Launch);
        let replay = launch("t", None, Some("c1"));
        assert!(
            matches!(&replay, HelloVerdict::Refuse(r) if r.contains("replay")),
            "{replay:?}"
        );
        let wrong = launch("x", Some(("t", later)), None);
        assert!(
            matches!(&wrong, HelloVerdict::Refuse(r) if r.contains("does not match")),
            "{wrong:?}"
        );
        let expired = judge_hello("c1", "t", false, Some(("t", now)), None, None, None, later);
        assert!(
            matches!(&expired, HelloVerdict::Refuse(r) if r.contains("expired")),
            "{expired:?}"
        );
        let unknown = launch("t", None, None);
        assert!(
            matches!(&unknown, HelloVerdict::Refuse(r) if r.contains("no launch")),
            "{unknown:?}"
        );
    }

    #[test]
    fn reconnects_present_the_key_by_hash() {
        let now = Instant::now();
        let later = now + Duration::from_secs(20);
        let k = key_hash("k");
        let judge = |cred: &str, attached: Option<&str>, adoptable: Option<(&str, Instant)>, at: Instant| {
            judge_hello("c1", cred, true, None, None, attached, adoptable, at)
        };
        assert_eq!(judge("k", Some(&k), None, now), HelloVerdict::Reconnect);
        assert!(matches!(judge("x", Some(&k), None, now), HelloVerdict::Refuse(r) if r.contains("wrong")));
        assert!(matches!(judge("k", None, None, now), HelloVerdict::Refuse(r) if r.contains("no such")));
        // The previous run's guest, within the grace period and after it.
        assert_eq!(judge("k", None, Some((&k, later)), now), HelloVerdict::Adopt);
        assert!(matches!(judge("k", None, Some((&k, now)), later), HelloVerdict::Refuse(r) if r.contains("too late")));
        assert!(matches!(judge("x", None, Some((&k, later)), now), HelloVerdict::Refuse(r) if r.contains("wrong")));
        // A launch token is never a session key.
        assert!(matches!(
            judge_hello("c1", "k", false, None, None, Some(&k), None, now),
            HelloVerdict::Refuse(_)
        ));
    }
}
