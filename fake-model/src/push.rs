//! A fake push service (the RFC 8030 side a browser's vendor runs) for tests
//! of the node's Web Push: it takes every POST, keeps its path, headers,
//! body and arrival time, and answers each path with the statuses queued
//! for it (201 Created when none is queued).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// POSTs kept before a test reads them (beyond it they are dropped).
const KEPT: usize = 4096;

/// One POST the service received.
#[derive(Debug, Clone)]
pub struct Pushed {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Pushed {
    /// A header's value (case-blind name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone)]
struct Shared {
    tx: mpsc::Sender<Pushed>,
    answers: Arc<Mutex<HashMap<String, VecDeque<u16>>>>,
}

/// A running fake push service; it stops when this is dropped.
pub struct FakePush {
    addr: SocketAddr,
    rx: mpsc::Receiver<Pushed>,
    early: Vec<Pushed>,
    answers: Arc<Mutex<HashMap<String, VecDeque<u16>>>>,
    task: JoinHandle<()>,
}

async fn take(State(s): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> StatusCode {
    let pushed = Pushed {
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: body.to_vec(),
        at: Instant::now(),
    };
    let status = s
        .answers
        .lock()
        .ok()
        .and_then(|mut a| a.get_mut(&pushed.path).and_then(VecDeque::pop_front))
        .unwrap_or(201);
    let _ = s.tx.try_send(pushed);
    StatusCode::from_u16(status).unwrap_or(StatusCode::CREATED)
}

impl FakePush {
    /// Binds `addr` (port 0: any free port) and serves in a spawned task.
    pub async fn start(addr: SocketAddr) -> anyhow::Result<FakePush> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("binding {addr}"))?;
        let addr = listener.local_addr()?;
        let (tx, rx) = mpsc::channel(KEPT);
        let answers: Arc<Mutex<HashMap<String, VecDeque<u16>>>> = Arc::default();
        let shared = Shared {
            tx,
            answers: answers.clone(),
        };
        let app = axum::Router::new()
            .fallback(axum::routing::post(take))
            .with_state(shared);
        let task = tokio::spawn(async move {
            if let Err(err) = axum::serve(listener, app).await {
                tracing::error!(%err, "fake push service stopped");
            }
        });
        Ok(FakePush {
            addr,
            rx,
            early: vec![],
            answers,
            task,
        })
    }

    /// The endpoint URL of `path` on this service.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Answers the next POSTs to `path` with `statuses`, in order.
    pub fn answer(&self, path: &str, statuses: &[u16]) {
        if let Ok(mut a) = self.answers.lock() {
            a.entry(path.to_string()).or_default().extend(statuses);
        }
    }

    /// The next POST to `path` within `within` (others are kept for later
    /// calls), or `None`.
    pub async fn next_to(&mut self, path: &str, within: Duration) -> Option<Pushed> {
        if let Some(i) = self.early.iter().position(|p| p.path == path) {
            return Some(self.early.remove(i));
        }
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(p)) if p.path == path => return Some(p),
                Ok(Some(p)) if self.early.len() < KEPT => self.early.push(p),
                Ok(Some(_)) => {}
                _ => return None,
            }
        }
    }
}

impl Drop for FakePush {
    fn drop(&mut self) {
        self.task.abort();
    }
}
