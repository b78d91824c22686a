//! The home side of routing. A member's forwarded call runs through the same
//! dispatcher as a call on this node's own WebSocket (the [`Dispatch`]
//! handle the home is built with), on a connection of its own that carries
//! the caller's token, so it is authenticated, checked for revocation and
//! authorized exactly as a local call is. A forwarded subscription keeps that
//! connection: its notifications wait in the connection's bounded queue (a
//! full queue cuts it off, as for a slow local client) until the caller
//! pulls them, in numbered batches: a batch whose answer was lost on the way
//! is given again, so a broken connection loses none (`fabric::pull`). The
//! home also tells members whether it homes an agent, conversation or held
//! dialog, and takes the mail members' agents send to its own. It is an
//! actor: the fleet hands it members' requests through a bounded queue, each
//! answered in a task of its own.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use console_api::{ErrorCode, Id, Response as RpcResponse, RpcError};
use fabric::pull::{Batches, Step};
use fabric::wire::MAX_NOTES;
use fabric::{PeerId, Request, Response};
use futures_util::future::BoxFuture;
use tokio::sync::{mpsc, watch};

use crate::api::conn::{Caller, Conn};
use crate::fleet::Asked;
use crate::service::Node;
use crate::supervise::Supervisor;

/// Forwarded subscriptions this node keeps for its members at most.
const MAX_STREAMS: usize = 256;
/// How long a pull waits for a first notification before answering none.
const PULL_WAIT: Duration = Duration::from_millis(1000);
/// A forwarded subscription nobody pulled for this long is dropped.
pub const STREAM_IDLE: Duration = Duration::from_secs(30);
/// How often idle subscriptions are looked for.
const REAP_EVERY: Duration = Duration::from_secs(1);
/// Most bytes of notifications in one pull's answer.
const MAX_PULL_BYTES: usize = 512 * 1024;

/// The API's dispatcher, as the home side calls it: one request text on a
/// connection, answered as this node's WebSocket answers it.
pub trait Dispatch: Send + Sync {
    fn answer<'a>(&'a self, conn: &'a Arc<Conn>, text: &'a str) -> BoxFuture<'a, Option<RpcResponse>>;
}

/// The home side: the dispatcher it runs forwarded calls through, and the
/// forwarded subscriptions it serves.
pub struct Home {
    dispatch: Arc<dyn Dispatch>,
    node: Arc<Node>,
    supervisor: Arc<Supervisor>,
    mail: Arc<crate::mail::Mail>,
    verifier: Arc<capabilities::Verifier>,
    limits: crate::config::Limits,
    open: Mutex<HashMap<u64, Arc<Stream>>>,
    next: AtomicU64,
}

struct Stream {
    /// The member that opened it (only it may pull or cancel).
    peer: PeerId,
    conn: Arc<Conn>,
    queue: tokio::sync::Mutex<Queue>,
    last_pull: Mutex<Instant>,
}

/// A subscription's notifications, its cut-off reason, and the batches
/// given (one pull at a time).
struct Queue {
    rx: mpsc::Receiver<String>,
    kill: watch::Receiver<Option<String>>,
    batches: Batches,
}

/// A JSON-RPC error answer to `text` (its id, when it has one).
fn error_text(text: &str, e: RpcError) -> String {
    let id = serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|v| v.get("id").cloned())
        .and_then(|v| serde_json::from_value::<Id>(v).ok());
    serde_json::to_string(&RpcResponse::err(id, e)).unwrap_or_default()
}

impl Home {
    /// A home answering through `dispatch`; connections get `limits`' queue
    /// and subscription bounds, tokens are checked by `verifier`.
    pub fn new(
        dispatch: Arc<dyn Dispatch>,
        node: Arc<Node>,
        supervisor: Arc<Supervisor>,
        mail: Arc<crate::mail::Mail>,
        verifier: Arc<capabilities::Verifier>,
        limits: crate::config::Limits,
    ) -> Arc<Home> {
        Arc::new(Home {
            dispatch,
            node,
            supervisor,
            mail,
            verifier,
            limits,
            open: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
        })
    }

    /// Answers members' requests from `asked` until it closes, and drops
    /// subscriptions nobody pulls.
    pub async fn serve(self: Arc<Home>, mut asked: mpsc::Receiver<Asked>) {
        let mut reap = tokio::time::interval(REAP_EVERY);
        reap.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                next = asked.recv() => {
                    let Some(Asked { peer, request, reply }) = next else { return };
                    let home = self.clone();
                    tokio::spawn(async move {
                        let _ = reply.send(home.answer(peer, request).await);
                    });
                }
                _ = reap.tick() => self.reap(),
            }
        }
    }

    async fn answer(&self, peer: PeerId, request: Request) -> Response {
        match request {
            Request::Api { token, text, stream } => self.api(peer, &token, &text, stream).await,
            Request::Pull { stream, next } => self.pull(peer, stream, next).await,
            Request::Cancel { stream } => self.cancel(peer, stream),
            Request::Locate(what) => Response::Located(super::homes(&self.node, &self.supervisor, &what).await),
            // A member's agent wrote to one of ours (the member was checked
            // to be who the message says it is from).
            Request::Mail(item) => Response::Mail(self.mail.receive(item).await),
            _ => Response::Refused {
                reason: "not a request for the home side of routing".into(),
            },
        }
    }

    fn take(&self, id: u64) -> Option<Arc<Stream>> {
        let s = self.open.lock().ok()?.remove(&id)?;
        s.conn.close_all();
        Some(s)
    }

    /// Drops subscriptions nobody pulled for `STREAM_IDLE` (their caller is
    /// gone or cut off for that long).
    fn reap(&self) {
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

    /// A member forwarded a client's call: answer it as this node's own
    /// WebSocket would, with the client's token.
    async fn api(&self, peer: PeerId, token: &str, text: &str, stream: bool) -> Response {
        let (conn, rx, kill) = Conn::new(
            "fabric",
            Caller::Anonymous,
            self.limits.outbound_queue,
            self.limits.max_subscriptions,
        );
        if let Err(e) = conn.authenticate(&self.verifier, token, |ids| self.node.any_revoked(ids)) {
            return Response::Api {
                text: error_text(text, e),
                stream: None,
            };
        }
        let answer = self.dispatch.answer(&conn, text).await;
        let ok = answer.as_ref().is_some_and(|r| r.error.is_none());
        let text = answer.and_then(|r| serde_json::to_string(&r).ok()).unwrap_or_default();
        if !(stream && ok) {
            conn.close_all();
            return Response::Api { text, stream: None };
        }
        let Ok(mut open) = self.open.lock() else {
            return Response::Refused {
                reason: "internal error".into(),
            };
        };
        if open.len() >= MAX_STREAMS {
            conn.close_all();
            let e = RpcError::new(
                ErrorCode::Busy,
                format!("this node already serves {MAX_STREAMS} forwarded subscriptions (the limit)"),
            )
            .with_data(serde_json::json!({ "retry_after_ms": 1000 }));
            return Response::Api {
                text: error_text(&text, e),
                stream: None,
            };
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst) + 1;
        // Notifications may flow from now on: the caller has the answer.
        conn.open_gates();
        open.insert(
            id,
            Arc::new(Stream {
                peer,
                conn,
                queue: tokio::sync::Mutex::new(Queue {
                    rx,
                    kill,
                    batches: Batches::default(),
                }),
                last_pull: Mutex::new(Instant::now()),
            }),
        );
        Response::Api { text, stream: Some(id) }
    }

    /// Batch `next` of a forwarded subscription: the one given before when
    /// its answer was lost, else the notifications queued, or the first
    /// within `PULL_WAIT`, bounded in count and bytes.
    async fn pull(&self, peer: PeerId, id: u64, next: u64) -> Response {
        let stream = self.open.lock().ok().and_then(|o| o.get(&id).cloned());
        let ended = |why: &str| Response::Notes {
            notes: vec![],
            ended: Some(why.to_string()),
            batch: 0,
        };
        let Some(stream) = stream.filter(|s| s.peer == peer) else {
            return ended("no such subscription: it ended, or was not pulled for 30 s");
        };
        if let Ok(mut t) = stream.last_pull.lock() {
            *t = Instant::now();
        }
        let mut queue = stream.queue.lock().await;
        match queue.batches.on_pull(next) {
            Step::Again(batch, notes) => {
                tracing::info!(
                    stream = id,
                    batch,
                    "a pull's answer was lost on the way: its batch is given again"
                );
                return Response::Notes {
                    notes,
                    ended: None,
                    batch,
                };
            }
            Step::Stale => {
                return Response::Notes {
                    notes: vec![],
                    ended: None,
                    batch: 0,
                };
            }
            Step::OutOfStep => {
                drop(queue);
                self.take(id);
                return ended(&format!("a pull asked for batch {next}, which was never given"));
            }
            Step::Fresh => {}
        }
        let Queue { rx, kill, batches } = &mut *queue;
        let mut notes = vec![];
        let mut bytes = 0;
        let cut = |kill: &watch::Receiver<Option<String>>| kill.borrow().clone();
        if let Some(reason) = cut(kill) {
            drop(queue);
            self.take(id);
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
                    self.take(id);
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
        let batch = batches.give(next, &notes);
        drop(queue);
        if reason.is_some() {
            self.take(id);
        }
        Response::Notes {
            notes,
            ended: reason,
            batch,
        }
    }

    fn cancel(&self, peer: PeerId, id: u64) -> Response {
        let mine = self
            .open
            .lock()
            .ok()
            .is_some_and(|o| o.get(&id).is_some_and(|s| s.peer == peer));
        if mine {
            self.take(id);
        }
        Response::Notes {
            notes: vec![],
            ended: Some("cancelled".into()),
            batch: 0,
        }
    }
}
