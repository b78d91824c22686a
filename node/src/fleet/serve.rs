//! The home side of forwarded calls. A member's `Api` request runs through
//! the same dispatcher as a call on this node's own WebSocket, on a
//! connection of its own that carries the caller's token, so it is
//! authenticated, checked for revocation and authorized exactly as a local
//! call is. A forwarded subscription keeps that connection: its
//! notifications wait in the connection's bounded queue (a full queue cuts
//! it off, as for a slow local client) until the caller pulls them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use fabric::wire::{Locate, MAX_NOTES};
use fabric::{PeerId, Response};
use tokio::sync::{mpsc, watch};

use crate::api::App;
use crate::api::conn::{Caller, Conn};
use crate::service::Node;

/// Forwarded subscriptions this node keeps for its members at most.
const MAX_STREAMS: usize = 256;
/// How long a pull waits for a first notification before answering none.
const PULL_WAIT: Duration = Duration::from_millis(1000);
/// A forwarded subscription nobody pulled for this long is dropped.
pub const STREAM_IDLE: Duration = Duration::from_secs(30);
/// Most bytes of notifications in one pull's answer.
const MAX_PULL_BYTES: usize = 512 * 1024;

/// What the home keeps for forwarded calls.
#[derive(Default)]
pub struct Streams {
    app: std::sync::OnceLock<Weak<App>>,
    open: Mutex<HashMap<u64, Arc<Stream>>>,
    next: AtomicU64,
}

struct Stream {
    /// The member that opened it (only it may pull or cancel).
    peer: PeerId,
    conn: Arc<Conn>,
    queue: tokio::sync::Mutex<(mpsc::Receiver<String>, watch::Receiver<Option<String>>)>,
    last_pull: Mutex<Instant>,
}

impl Streams {
    /// The API the forwarded calls run through (set once the server is up).
    pub fn set_app(&self, app: &Arc<App>) {
        let _ = self.app.set(Arc::downgrade(app));
    }

    fn app(&self) -> Option<Arc<App>> {
        self.app.get().and_then(Weak::upgrade)
    }

    fn take(&self, id: u64) -> Option<Arc<Stream>> {
        let s = self.open.lock().ok()?.remove(&id)?;
        s.conn.close_all();
        Some(s)
    }

    /// Drops subscriptions nobody pulled for `STREAM_IDLE` (their caller is
    /// gone or cut off for that long).
    pub fn reap(&self) {
        let idle: Vec<u64> = self
            .open
            .lock()
            .map(|o| {
                o.iter()
                    .filter(|(_, s)| s.last_pull.lock().map(|t| t.elapsed() > STREAM_IDLE).unwrap_or(true))
                    .map(|(id, _)| *id)
                    .collect()
            })
            .unwrap_or_default();
        for id in idle {
            tracing::info!(stream = id, "a forwarded subscription was not pulled for 30 s: dropped");
            self.take(id);
        }
    }
}

/// A JSON-RPC error answer to `text` (its id, when it has one).
fn error_text(text: &str, e: console_api::RpcError) -> String {
    let id = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .and_then(|v| serde_json::from_value::<console_api::Id>(v).ok());
    serde_json::to_string(&console_api::Response::err(id, e)).unwrap_or_default()
}

impl Node {
    /// A member forwarded a client's call: answer it as this node's own
    /// WebSocket would, with the client's token.
    pub(crate) async fn answer_api(&self, peer: PeerId, token: &str, text: &str, stream: bool) -> Response {
        let streams = &self.fleet.streams;
        let Some(app) = streams.app() else {
            return Response::Refused {
                reason: "this node is still starting".into(),
            };
        };
        let (conn, rx, kill) = Conn::new(
            "fabric",
            Caller::Anonymous,
            app.limits.outbound_queue,
            app.limits.max_subscriptions,
        );
        if let Err(e) = conn.authenticate(&app.verifier, token, |ids| self.any_revoked(ids)) {
            return Response::Api {
                text: error_text(text, e),
                stream: None,
            };
        }
        let answer = crate::api::handle_text(&app, &conn, text).await;
        let ok = answer.as_ref().is_some_and(|r| r.error.is_none());
        let text = answer.and_then(|r| serde_json::to_string(&r).ok()).unwrap_or_default();
        if !(stream && ok) {
            conn.close_all();
            return Response::Api { text, stream: None };
        }
        let Ok(mut open) = streams.open.lock() else {
            return Response::Refused {
                reason: "internal error".into(),
            };
        };
        if open.len() >= MAX_STREAMS {
            conn.close_all();
            let e = console_api::RpcError::new(
                console_api::ErrorCode::Busy,
                format!("this node already serves {MAX_STREAMS} forwarded subscriptions (the limit)"),
            )
            .with_data(serde_json::json!({ "retry_after_ms": 1000 }));
            return Response::Api {
                text: error_text(&text, e),
                stream: None,
            };
        }
        let id = streams.next.fetch_add(1, Ordering::SeqCst) + 1;
        // Notifications may flow from now on: the caller has the answer.
        conn.open_gates();
        open.insert(
            id,
            Arc::new(Stream {
                peer,
                conn,
                queue: tokio::sync::Mutex::new((rx, kill)),
                last_pull: Mutex::new(Instant::now()),
            }),
        );
        Response::Api { text, stream: Some(id) }
    }

    /// The next notifications of a forwarded subscription: those queued, or
    /// the first within `PULL_WAIT`, bounded in count and bytes.
    pub(crate) async fn answer_pull(&self, peer: PeerId, id: u64) -> Response {
        let streams = &self.fleet.streams;
        let stream = streams.open.lock().ok().and_then(|o| o.get(&id).cloned());
        let ended = |why: &str| Response::Notes {
            notes: vec![],
            ended: Some(why.to_string()),
        };
        let Some(stream) = stream.filter(|s| s.peer == peer) else {
            return ended("no such subscription: it ended, or was not pulled for 30 s");
        };
        if let Ok(mut t) = stream.last_pull.lock() {
            *t = Instant::now();
        }
        let mut queue = stream.queue.lock().await;
        let (rx, kill) = &mut *queue;
        let mut notes = vec![];
        let mut bytes = 0;
        let cut = |kill: &watch::Receiver<Option<String>>| kill.borrow().clone();
        if let Some(reason) = cut(kill) {
            drop(queue);
            streams.take(id);
            return ended(&reason);
        }
        tokio::select! {
            first = rx.recv() => match first {
                Some(n) => {
                    bytes += n.len();
                    notes.push(n);
                }
                None => {
                    drop(queue);
                    streams.take(id);
                    return ended("the subscription ended");
                }
            },
            _ = kill.changed() => {}
            _ = tokio::time::sleep(PULL_WAIT) => {}
        }
        while notes.len() < MAX_NOTES && bytes < MAX_PULL_BYTES {
            match rx.try_recv() {
                Ok(n) => {
                    bytes += n.len();
                    notes.push(n);
                }
                Err(_) => break,
            }
        }
        let reason = cut(kill);
        drop(queue);
        if reason.is_some() {
            streams.take(id);
        }
        Response::Notes { notes, ended: reason }
    }

    pub(crate) fn answer_cancel(&self, peer: PeerId, id: u64) -> Response {
        let streams = &self.fleet.streams;
        let mine = streams
            .open
            .lock()
            .ok()
            .is_some_and(|o| o.get(&id).is_some_and(|s| s.peer == peer));
        if mine {
            streams.take(id);
        }
        Response::Notes {
            notes: vec![],
            ended: Some("cancelled".into()),
        }
    }

    /// Whether this node homes what a member asks about.
    pub(crate) async fn answer_locate(&self, what: Locate) -> Response {
        Response::Located(match what {
            Locate::Agent(name) => self.catalog.lock().await.agents.contains_key(&name),
            Locate::Conversation(id) => self.conversation_agent(&id).await.is_some(),
            Locate::Hold(id) => self.holds.lock().is_ok_and(|h| h.contains_key(&id)),
        })
    }
}
