//! One client connection's state: authentication, its bounded outbound queue,
//! and its subscriptions. Notifications are offered with `try_send`: a client
//! whose queue is full is cut off with a close reason, so a slow reader never
//! slows the node or other clients.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use console_api::{ErrorCode, Notification, RpcError, methods as m};
use serde_json::json;
use tokio::sync::{broadcast, mpsc, watch};
use tokio::task::AbortHandle;

use crate::service::Node;
use crate::transcript::as_transcript;
use node_runtime::runtime::Session;

/// How long a terminal subscriber's held-back bytes (the beginning of a
/// secret value, perhaps) wait for the rest before they go out.
pub const TERMINAL_FLUSH: Duration = Duration::from_millis(50);

/// Why the server closes a connection.
pub const CLOSE_SLOW: &str = "subscriber too slow: outbound queue full";

/// Who is calling on a connection.
#[derive(Clone)]
pub enum Caller {
    /// The Unix socket: local admin authority, no token.
    Local,
    /// A WebSocket client and the token it presented.
    Token(Arc<capabilities::Verified>),
    /// Nothing presented yet.
    Anonymous,
}

pub struct Conn {
    transport: &'static str,
    caller: Mutex<Caller>,
    out: mpsc::Sender<String>,
    kill: watch::Sender<Option<String>>,
    subs: Mutex<HashMap<String, AbortHandle>>,
    next_sub: AtomicU64,
    max_subs: usize,
    /// Subscriptions wait on these until their `{subscription}` answer is queued.
    gates: Mutex<Vec<tokio::sync::oneshot::Sender<()>>>,
    /// The client's address (a WebSocket's peer), for per-source limits.
    peer: std::sync::OnceLock<std::net::IpAddr>,
    /// The connection's place among the node's connections (a WebSocket's).
    admission: Mutex<Option<super::doors::Admission>>,
}

impl Conn {
    /// A new connection; the caller owns the receiving end of `out` and
    /// watches the returned kill receiver.
    pub fn new(
        transport: &'static str,
        caller: Caller,
        queue: usize,
        max_subs: usize,
    ) -> (Arc<Conn>, mpsc::Receiver<String>, watch::Receiver<Option<String>>) {
        let (out, rx) = mpsc::channel(queue);
        let (kill, kill_rx) = watch::channel(None);
        let conn = Arc::new(Conn {
            transport,
            caller: Mutex::new(caller),
            out,
            kill,
            subs: Mutex::new(HashMap::new()),
            next_sub: AtomicU64::new(1),
            max_subs,
            gates: Mutex::new(Vec::new()),
            peer: std::sync::OnceLock::new(),
            admission: Mutex::new(None),
        });
        (conn, rx, kill_rx)
    }

    /// Records the client's address (once).
    pub fn set_peer(&self, peer: std::net::IpAddr) {
        let _ = self.peer.set(peer);
    }

    /// The client's address, when it has one (not on the Unix socket).
    pub fn peer(&self) -> Option<std::net::IpAddr> {
        self.peer.get().copied()
    }

    /// Holds `admission` while the connection is open (replacing, and so
    /// freeing, the one it held).
    pub fn admit(&self, admission: super::doors::Admission) {
        if let Ok(mut a) = self.admission.lock() {
            *a = Some(admission);
        }
    }

    /// True while the connection holds a place in the unauthenticated pool.
    pub fn admitted_anonymously(&self) -> bool {
        self.admission
            .lock()
            .map(|a| matches!(*a, Some(super::doors::Admission::Anonymous(_))))
            .unwrap_or(false)
    }

    /// Gives the connection's place back (it is closing).
    pub fn release_admission(&self) {
        if let Ok(mut a) = self.admission.lock() {
            a.take();
        }
    }

    /// Fires when the connection is cut off.
    pub fn killed(&self) -> watch::Receiver<Option<String>> {
        self.kill.subscribe()
    }

    pub fn transport(&self) -> &'static str {
        self.transport
    }

    /// Who a message sent on this connection is attributed to.
    pub fn speaker(&self) -> &'static str {
        "human"
    }

    /// Verifies `token` and makes it this connection's authority.
    pub fn authenticate(
        &self,
        verifier: &capabilities::Verifier,
        token: &str,
        is_revoked: impl Fn(&[String]) -> bool,
    ) -> Result<(), RpcError> {
        let v = verifier
            .verify(token)
            .and_then(|v| capabilities::usable_at(&v, std::time::SystemTime::now()).map(|()| v))
            .map_err(|e| RpcError::new(ErrorCode::Unauthenticated, format!("token refused: {e}")))?;
        if is_revoked(&v.revocation_ids) {
            return Err(RpcError::new(
                ErrorCode::Unauthenticated,
                "token refused: it has been revoked",
            ));
        }
        if let Ok(mut c) = self.caller.lock() {
            *c = Caller::Token(v);
        }
        Ok(())
    }

    pub fn caller(&self) -> Caller {
        self.caller.lock().map(|c| c.clone()).unwrap_or(Caller::Anonymous)
    }

    /// The agent an instance token speaks for.
    pub fn speaks_for(&self) -> Option<String> {
        match self.caller() {
            Caller::Token(t) => t.agent.clone(),
            _ => None,
        }
    }

    /// The conversation an instance token was issued for.
    pub fn speaks_in(&self) -> Option<String> {
        match self.caller() {
            Caller::Token(t) => t.conversation.clone(),
            _ => None,
        }
    }

    pub fn is_local(&self) -> bool {
        matches!(self.caller(), Caller::Local)
    }

    /// Queues a response, waiting for room (responses are bounded by the
    /// number of requests in flight), then lets new subscriptions start.
    pub async fn respond(&self, text: String) {
        let _ = self.out.send(text).await;
        self.open_gates();
    }

    /// Lets subscriptions waiting for their answer start.
    pub fn open_gates(&self) {
        let gates: Vec<_> = self.gates.lock().map(|mut g| g.drain(..).collect()).unwrap_or_default();
        for g in gates {
            let _ = g.send(());
        }
    }

    fn gate(&self) -> tokio::sync::oneshot::Receiver<()> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        if let Ok(mut g) = self.gates.lock() {
            g.push(tx);
        }
        rx
    }

    /// Offers a notification; a full queue cuts the client off.
    fn notify(&self, method: &str, params: serde_json::Value) -> bool {
        match serde_json::to_string(&Notification::new(method, params)) {
            Ok(text) => self.push(text),
            Err(_) => true,
        }
    }

    /// Offers a notification already serialized (a forwarded one); a full
    /// queue cuts the client off.
    pub fn push(&self, text: String) -> bool {
        match self.out.try_send(text) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.cut_off(CLOSE_SLOW);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Offers a notification that may be lost: a full queue drops it (the
    /// client is not cut off for missing progress).
    pub fn notify_lossy(&self, method: &str, params: serde_json::Value) {
        if let Ok(text) = serde_json::to_string(&Notification::new(method, params)) {
            let _ = self.out.try_send(text);
        }
    }

    pub fn cut_off(&self, reason: &str) {
        tracing::warn!(transport = self.transport, reason, "closing client connection");
        self.kill.send_replace(Some(reason.to_string()));
    }

    fn add_sub(&self, task: tokio::task::JoinHandle<()>, id: String) -> Result<String, RpcError> {
        let mut subs = self
            .subs
            .lock()
            .map_err(|_| RpcError::new(ErrorCode::Internal, "internal error"))?;
        subs.insert(id.clone(), task.abort_handle());
        Ok(id)
    }

    /// A subscription served by `start` (given its id and the gate it
    /// waits on until the `{subscription}` answer is queued).
    pub fn subscribe_with(
        self: &Arc<Self>,
        start: impl FnOnce(String, tokio::sync::oneshot::Receiver<()>) -> tokio::task::JoinHandle<()>,
    ) -> Result<String, RpcError> {
        let id = self.reserve_sub()?;
        let task = start(id.clone(), self.gate());
        self.add_sub(task, id)
    }

    fn reserve_sub(&self) -> Result<String, RpcError> {
        let subs = self
            .subs
            .lock()
            .map_err(|_| RpcError::new(ErrorCode::Internal, "internal error"))?;
        if subs.len() >= self.max_subs {
            return Err(RpcError::new(
                ErrorCode::Busy,
                format!(
                    "this connection already has {} subscriptions (the limit)",
                    self.max_subs
                ),
            )
            .with_data(json!({ "retry_after_ms": 1000 })));
        }
        Ok(format!("s-{}", self.next_sub.fetch_add(1, Ordering::SeqCst)))
    }

    pub fn cancel(&self, id: &str) -> Result<(), RpcError> {
        let handle = self.subs.lock().ok().and_then(|mut s| s.remove(id));
        match handle {
            Some(h) => {
                h.abort();
                Ok(())
            }
            None => Err(RpcError::new(
                ErrorCode::NotFound,
                format!("subscription {id:?} not found"),
            )),
        }
    }

    /// Ends every subscription (the connection is closing).
    pub fn close_all(&self) {
        if let Ok(mut subs) = self.subs.lock() {
            for (_, h) in subs.drain() {
                h.abort();
            }
        }
    }

    /// Stored events from `from_seq` first, then live ones, with no gap and no
    /// duplicate at the seam: the live receiver is opened before the stored
    /// read, and live events at or below the last delivered seq are skipped.
    pub fn subscribe_transcript(
        self: &Arc<Self>,
        node: &Arc<Node>,
        p: console_api::TranscriptSubscribe,
    ) -> Result<String, RpcError> {
        let id = self.reserve_sub()?;
        let mut live = node.store().subscribe();
        let conn = self.clone();
        let node = node.clone();
        let sub = id.clone();
        let gate = self.gate();
        let task = tokio::spawn(async move {
            let _ = gate.await;
            let mut filter = Filter::new(p.conversation.clone(), p.agent.clone());
            // last delivered seq per conversation
            let mut last: HashMap<String, u64> = HashMap::new();
            if let (Some(conv), Some(from)) = (&p.conversation, p.from_seq) {
                let start = from.max(1);
                last.insert(conv.clone(), start - 1);
                if !catch_up(&node, &conn, &sub, conv, &mut last).await {
                    return;
                }
            }
            loop {
                match live.recv().await {
                    Ok(e) => {
                        let Some(ev) = as_transcript(&e) else { continue };
                        if !filter.matches(&node, &ev.conversation).await {
                            continue;
                        }
                        let seen = last.get(&ev.conversation).copied();
                        if seen.is_some_and(|s| ev.seq <= s) {
                            continue;
                        }
                        if let Some(s) = seen
                            && ev.seq > s + 1
                        {
                            // Should not happen (commits are in seq order); fill from the store.
                            if !catch_up(&node, &conn, &sub, &ev.conversation, &mut last).await {
                                return;
                            }
                            continue;
                        }
                        if let Some(why) = conn.lapsed(&node) {
                            conn.cut_off(&why);
                            return;
                        }
                        last.insert(ev.conversation.clone(), ev.seq);
                        if !conn.notify(m::NOTIFY_TRANSCRIPT_EVENT, json!({ "subscription": sub, "event": ev })) {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // We fell behind the in-process feed: re-read what we missed.
                        let convs: Vec<String> = last.keys().cloned().collect();
                        for conv in convs {
                            if !catch_up(&node, &conn, &sub, &conv, &mut last).await {
                                return;
                            }
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
        self.add_sub(task, id)
    }

    /// Why this connection's token no longer holds (revoked or expired since
    /// it signed in), if it does not.
    pub fn lapsed(&self, node: &Node) -> Option<String> {
        let Caller::Token(t) = self.caller() else {
            return None;
        };
        if node.any_revoked(&t.revocation_ids) {
            return Some("token refused: it has been revoked".into());
        }
        capabilities::usable_at(&t, std::time::SystemTime::now())
            .err()
            .map(|e| format!("token refused: {e}"))
    }

    /// `events.subscribe`: server events of the wanted kinds, as notifications
    /// named by their kind.
    pub fn subscribe_events(
        self: &Arc<Self>,
        node: &Arc<Node>,
        kinds: Option<Vec<String>>,
        agent: Option<String>,
    ) -> Result<String, RpcError> {
        check_kinds(kinds.as_deref())?;
        let rx = node.subscribe_events();
        let (conn, node) = (self.clone(), node.clone());
        self.subscribe_with(move |sub, gate| {
            tokio::spawn(async move {
                let _ = gate.await;
                conn.relay_events(&node, rx, kinds, agent, &sub, None).await;
            })
        })
    }

    /// Sends this node's events of the wanted kinds (about `agent`, when
    /// given) as notifications of subscription `sub`, each naming `origin`
    /// when given (a fleet-wide subscription's own part); returns when the
    /// client is gone or too slow (cut off).
    pub async fn relay_events(
        self: &Arc<Self>,
        node: &Node,
        mut rx: broadcast::Receiver<(&'static str, serde_json::Value)>,
        kinds: Option<Vec<String>>,
        agent: Option<String>,
        sub: &str,
        origin: Option<&str>,
    ) {
        loop {
            match rx.recv().await {
                Ok((kind, payload)) => {
                    if kinds.as_ref().is_some_and(|k| !k.iter().any(|x| x == kind)) {
                        continue;
                    }
                    // A token revoked or expired since it signed in gets no more.
                    if let Some(why) = self.lapsed(node) {
                        self.cut_off(&why);
                        return;
                    }
                    if agent.as_ref().is_some_and(|a| !about_agent(&payload, a)) {
                        continue;
                    }
                    let mut params = json!({ "subscription": sub, "event": payload });
                    if let Some(node) = origin {
                        params["node"] = json!(node);
                    }
                    if !self.notify(kind, params) {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    self.cut_off(&format!("event subscriber too slow: {n} events dropped"));
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// The CLI's output bytes, with known secret values redacted (a value
    /// split across reads included: `redact::StreamRedactor`; what it holds
    /// back goes out with the next chunk or after `TERMINAL_FLUSH`).
    pub fn subscribe_terminal(
        self: &Arc<Self>,
        node: &Arc<Node>,
        session: Arc<dyn Session>,
    ) -> Result<String, RpcError> {
        let redaction = node.store().redaction().clone();
        let node = node.clone();
        let id = self.reserve_sub()?;
        let mut rx = session.subscribe();
        let conn = self.clone();
        let sub = id.clone();
        let gate = self.gate();
        let task = tokio::spawn(async move {
            let _ = gate.await;
            let b64 = base64::engine::general_purpose::STANDARD;
            let send = |bytes: Vec<u8>| {
                bytes.is_empty()
                    || conn.notify(
                        m::NOTIFY_TERMINAL_DATA,
                        json!({ "subscription": sub, "data": b64.encode(&bytes) }),
                    )
            };
            let mut stream = node_store::redact::StreamRedactor::default();
            loop {
                let holding = stream.holding();
                tokio::select! {
                    got = rx.recv() => match got {
                        Ok(chunk) => {
                            if let Some(why) = conn.lapsed(&node) {
                                conn.cut_off(&why);
                                return;
                            }
                            if !send(stream.push(&redaction.matcher(), &chunk)) {
                                return;
                            }
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) => {
                            conn.cut_off(&format!("terminal subscriber too slow: {n} output chunks dropped"));
                            return;
                        }
                        Err(broadcast::error::RecvError::Closed) => {
                            send(stream.flush(&redaction.matcher()));
                            return;
                        }
                    },
                    _ = tokio::time::sleep(TERMINAL_FLUSH), if holding => {
                        if !send(stream.flush(&redaction.matcher())) {
                            return;
                        }
                    }
                }
            }
        });
        self.add_sub(task, id)
    }
}

/// `events.subscribe`'s kinds: each one the API has, else -32602 naming it.
pub fn check_kinds(kinds: Option<&[String]>) -> Result<(), RpcError> {
    match kinds
        .into_iter()
        .flatten()
        .find(|k| !console_api::methods::EVENT_KINDS.contains(&k.as_str()))
    {
        Some(bad) => Err(RpcError::new(
            ErrorCode::InvalidParams,
            format!(
                "kinds: unknown event kind {bad:?}; known: {}",
                console_api::methods::EVENT_KINDS.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// Whether an event's payload is about `agent` (its `agent`, or its hold's).
fn about_agent(payload: &serde_json::Value, agent: &str) -> bool {
    payload.get("agent").and_then(|v| v.as_str()) == Some(agent)
        || payload.pointer("/hold/agent").and_then(|v| v.as_str()) == Some(agent)
}

/// Sends stored events of `conv` after `last[conv]`, page by page. Catch-up
/// waits for queue room (bounded by 10 s) instead of dropping.
async fn catch_up(node: &Arc<Node>, conn: &Arc<Conn>, sub: &str, conv: &str, last: &mut HashMap<String, u64>) -> bool {
    loop {
        let after = last.get(conv).copied().unwrap_or(0);
        let page = match node.store().transcript_from(conv, after + 1, 500).await {
            Ok(p) => p,
            Err(e) => {
                tracing::error!(error = %e, "catch-up read failed");
                conn.cut_off("internal error while reading the transcript");
                return false;
            }
        };
        if page.is_empty() {
            return true;
        }
        for ev in page {
            last.insert(conv.to_string(), ev.seq);
            let text = match serde_json::to_string(&Notification::new(
                m::NOTIFY_TRANSCRIPT_EVENT,
                json!({ "subscription": sub, "event": ev }),
            )) {
                Ok(t) => t,
                Err(_) => continue,
            };
            match tokio::time::timeout(Duration::from_secs(10), conn.out.send(text)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return false,
                Err(_) => {
                    conn.cut_off(CLOSE_SLOW);
                    return false;
                }
            }
        }
    }
}

/// Which conversations a subscription wants.
struct Filter {
    conversation: Option<String>,
    agent: Option<String>,
    mine: HashSet<String>,
    others: HashSet<String>,
}

impl Filter {
    fn new(conversation: Option<String>, agent: Option<String>) -> Filter {
        Filter {
            conversation,
            agent,
            mine: HashSet::new(),
            others: HashSet::new(),
        }
    }

    async fn matches(&mut self, node: &Arc<Node>, conv: &str) -> bool {
        if let Some(c) = &self.conversation {
            return c == conv;
        }
        let Some(agent) = &self.agent else { return false };
        if self.mine.contains(conv) {
            return true;
        }
        if self.others.contains(conv) {
            return false;
        }
        let owner = node.conversation_agent(conv).await;
        let is_mine = owner.as_deref() == Some(agent.as_str());
        if is_mine {
            self.mine.insert(conv.to_string());
        } else if self.others.len() < 10_000 {
            self.others.insert(conv.to_string());
        }
        is_mine
    }
}
