//! Web Push: a needs-you anywhere in the fleet POSTed to a phone's browser.
//!
//! Each subscription is followed by one task that holds a fleet-wide
//! `events.subscribe` made with the subscription's own token, through the
//! same dispatcher a WebSocket client uses ([`Follow`], which the API
//! implements): it is sent exactly what that token may observe, here and on
//! every member. A hold's push carries an
//! `answer_token` (the token narrowed to answering that one hold, for at
//! most 15 minutes) when the token may answer holds. Deliveries go through
//! a bounded queue to the push service: encrypted for the browser (RFC
//! 8291), signed with the node's VAPID key (RFC 8292), with TTL and urgency,
//! retried with backoff, and the subscription dropped on 404 or 410.
//!
//! `crypto.rs` and `payload.rs` are pure; `endpoint.rs` decides where a
//! push may go; `post.rs` is the HTTP edge.

pub mod crypto;
pub mod endpoint;
pub mod payload;
mod post;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capabilities::{Operation, Resource};
use console_api::{ErrorCode, PushSubscribe, RpcError, methods as m};
use futures_util::future::BoxFuture;
use node_store::store::push::{PushAdd, PushRow};
use node_store::util::{new_id, now_ms};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};
use tokio::task::AbortHandle;

use crate::service::Node;

/// Needs-yous waiting to be POSTed to one subscription.
const QUEUE: usize = 32;
/// Tries of one push before it is given up.
const ATTEMPTS: u32 = 5;
/// The first retry's wait; each next one doubles, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// One POST, connecting to the answer.
const POST_WITHIN: Duration = Duration::from_secs(10);
/// The longest an answer token lives.
pub const ANSWER_TTL: Duration = Duration::from_secs(15 * 60);
/// A follower whose subscription could not be opened tries again after this
/// (doubling to a minute).
const REOPEN_FIRST: Duration = Duration::from_secs(1);
/// A follower that could not reach every member opens its subscription
/// again after this, so a member that was briefly away is followed again
/// (and its outstanding holds pushed).
const REOPEN_PARTIAL: Duration = Duration::from_secs(10);
/// Hold ids a follower remembers having pushed (so reopening does not push
/// them again); the oldest is forgotten first.
const REMEMBERED: usize = 512;

/// `[push]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PushSettings {
    /// Let endpoints be plain http or at loopback and private addresses
    /// (tests, a push relay on the LAN). Off: https and public only.
    pub allow_private: bool,
    /// The VAPID `sub`: how a push service reaches the node's owner.
    pub contact: String,
    /// Subscriptions one token may hold.
    pub max_per_token: u32,
    /// Subscriptions the node keeps in all.
    pub max_subscriptions: u32,
    /// How long a push service keeps a push for an offline phone (a hold's
    /// at most as long as its answer token).
    pub ttl_secs: u32,
}

impl Default for PushSettings {
    fn default() -> PushSettings {
        PushSettings {
            allow_private: false,
            contact: "mailto:owner@localhost".into(),
            max_per_token: 16,
            max_subscriptions: 1000,
            ttl_secs: 3600,
        }
    }
}

impl PushSettings {
    /// Checks the settings, naming what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.contact.starts_with("mailto:") || self.contact.starts_with("https://")) {
            return Err(format!(
                "push.contact: {:?} is not a mailto: or https: URI",
                self.contact
            ));
        }
        if !(1..=1000).contains(&self.max_per_token) || !(1..=100_000).contains(&self.max_subscriptions) {
            return Err("push.max_per_token must be 1..=1000 and push.max_subscriptions 1..=100000".into());
        }
        if !(60..=2_419_200).contains(&self.ttl_secs) {
            return Err("push.ttl_secs must be between 60 and 2419200 (four weeks)".into());
        }
        Ok(())
    }
}

/// How the push subsystem follows what a token may observe: the API's own
/// fleet-wide `events.subscribe`, made with that token (the API implements
/// it and hands it over at start: push sits below the API).
pub trait Follow: Send + Sync {
    /// A fleet-wide subscription of needs-yous and fleet changes with `token`.
    fn follow<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Following, Refused>>;
}

/// An open subscription: its notifications (JSON-RPC text), why it was cut
/// off when it is, and the verified token. Dropping it ends it.
pub struct Following {
    pub notes: mpsc::Receiver<String>,
    pub cut: watch::Receiver<Option<String>>,
    pub token: Arc<capabilities::Verified>,
    /// The holds outstanding fleet-wide when it opened (each naming its
    /// `node`), as far as the token may observe them: one raised before
    /// the subscription (or while it was being opened again) is pushed too.
    pub held: Vec<Value>,
    /// How many members could not be followed when it opened.
    pub missing: usize,
    /// Ends the subscription when dropped.
    pub guard: Box<dyn Send + Sync>,
}

/// Why a subscription could not be opened.
pub enum Refused {
    /// The token is no longer good (expired, revoked, narrowed away).
    Token(String),
    /// Something that may pass (a member slow to answer).
    Now(String),
}

/// How one subscription's deliveries have gone (for `push.list`).
#[derive(Debug, Clone, Default)]
struct Status {
    delivered: u64,
    failed: u64,
    last_error: Option<String>,
}

/// The push subsystem's handle.
pub struct Push {
    node: Arc<Node>,
    settings: PushSettings,
    vapid: crypto::Vapid,
    verifier: Arc<capabilities::Verifier>,
    own_name: String,
    follow: OnceLock<Arc<dyn Follow>>,
    followers: Mutex<HashMap<String, AbortHandle>>,
    status: Mutex<HashMap<String, Status>>,
}

/// What one open subscription relays with.
struct Heard<'a> {
    row: &'a PushRow,
    kinds: &'a [String],
    verified: &'a capabilities::Verified,
    tx: &'a mpsc::Sender<Value>,
}

/// The hold ids a follower has pushed, at most `REMEMBERED` (oldest out).
#[derive(Default)]
struct Remembered {
    ids: std::collections::HashSet<String>,
    order: std::collections::VecDeque<String>,
}

impl Remembered {
    /// Whether `id` is new (and now remembered).
    fn insert(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_string()) {
            return false;
        }
        self.order.push_back(id.to_string());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.ids.remove(&old);
        }
        true
    }
}

/// Why a follower's subscription ended.
enum Ended {
    /// For good: the subscription is dropped.
    Gone(String),
    /// Open it again after a wait.
    Again(String),
    /// Open it again now (the fleet changed).
    Reopen,
}

fn invalid(message: String) -> RpcError {
    RpcError::new(ErrorCode::InvalidParams, message)
}

impl Push {
    /// The subsystem, with the VAPID key kept in `data_dir/vapid.key`
    /// (PKCS#8 as hex, made on first start, 0600).
    pub fn new(
        node: Arc<Node>,
        settings: PushSettings,
        data_dir: &Path,
        verifier: Arc<capabilities::Verifier>,
        own_name: String,
    ) -> anyhow::Result<Arc<Push>> {
        let path = data_dir.join("vapid.key");
        let der = match std::fs::read_to_string(&path) {
            Ok(text) => hex::decode(text.trim()).map_err(|e| anyhow::anyhow!("{}: not hex ({e})", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let der = crypto::Vapid::generate().map_err(anyhow::Error::msg)?;
                node_store::util::write_private(&path, &format!("{}\n", hex::encode(&der)))
                    .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
                der
            }
            Err(e) => return Err(anyhow::anyhow!("reading {}: {e}", path.display())),
        };
        let vapid = crypto::Vapid::from_pkcs8(&der).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(Arc::new(Push {
            node,
            settings,
            vapid,
            verifier,
            own_name,
            follow: OnceLock::new(),
            followers: Mutex::new(HashMap::new()),
            status: Mutex::new(HashMap::new()),
        }))
    }

    /// The VAPID public key (base64url), for `node.info`.
    pub fn vapid_public_key(&self) -> &str {
        self.vapid.public_key()
    }

    /// Follows every stored subscription through `follow`.
    pub async fn start(self: &Arc<Self>, follow: Arc<dyn Follow>) {
        let _ = self.follow.set(follow);
        match self.node.store().push_list(None).await {
            Ok(rows) => rows.into_iter().for_each(|r| self.follow(r)),
            Err(e) => tracing::error!(error = %e, "push subscriptions could not be read"),
        }
    }

    fn caller(token: Option<Arc<capabilities::Verified>>) -> Result<Arc<capabilities::Verified>, RpcError> {
        match token {
            Some(t) => Ok(t),
            None => Err(invalid(
                "push subscriptions belong to a token (deliveries are authorized by it): call over a WebSocket with one".into(),
            )),
        }
    }

    fn owner(token: &capabilities::Verified) -> String {
        token.revocation_ids.last().cloned().unwrap_or_default()
    }

    /// `push.subscribe`.
    /// `caller`: the caller's verified token (none on the Unix socket).
    pub async fn subscribe(
        self: &Arc<Self>,
        caller: Option<Arc<capabilities::Verified>>,
        p: PushSubscribe,
    ) -> Result<Value, RpcError> {
        let token = Self::caller(caller)?;
        let allow = self.settings.allow_private;
        let ep = endpoint::parse(&p.endpoint, allow).map_err(invalid)?;
        endpoint::resolve(&ep, allow).await.map_err(invalid)?;
        crypto::Keys::parse(&p.keys.p256dh, &p.keys.auth).map_err(invalid)?;
        let kinds = p.kinds.unwrap_or_default();
        if kinds.len() > payload::KINDS.len() {
            return Err(invalid(format!("kinds: at most {} kinds", payload::KINDS.len())));
        }
        if let Some(bad) = kinds.iter().find(|k| !payload::KINDS.contains(&k.as_str())) {
            return Err(invalid(format!(
                "kinds: unknown kind {bad:?}; known: {}",
                payload::KINDS.join(", ")
            )));
        }
        let text = token.biscuit.to_base64().map_err(|e| invalid(format!("token: {e}")))?;
        let row = PushRow {
            id: new_id("push-"),
            owner: Self::owner(&token),
            endpoint: p.endpoint,
            p256dh: p.keys.p256dh,
            auth: p.keys.auth,
            kinds: json!(kinds).to_string(),
            token: text,
            created_ms: now_ms(),
        };
        let (per, all) = (self.settings.max_per_token, self.settings.max_subscriptions);
        match self.node.store().push_add(&row, per, all).await.map_err(store_error)? {
            // Subscribing an endpoint again replaced its row: its follower goes.
            PushAdd::Added { replaced } => replaced.iter().for_each(|old| self.stop(old)),
            PushAdd::OwnerFull => {
                return Err(RpcError::new(
                    ErrorCode::Conflict,
                    format!(
                        "this token already has {per} push subscriptions (push.max_per_token): unsubscribe one first"
                    ),
                ));
            }
            PushAdd::NodeFull => {
                return Err(RpcError::new(
                    ErrorCode::Conflict,
                    format!("this node already keeps {all} push subscriptions (push.max_subscriptions)"),
                ));
            }
        }
        let id = row.id.clone();
        self.follow(row);
        Ok(json!({ "subscription": id, "kinds": kinds, "vapid_public_key": self.vapid.public_key() }))
    }

    /// `push.unsubscribe`: only the caller's own.
    pub async fn unsubscribe(&self, caller: Option<Arc<capabilities::Verified>>, id: &str) -> Result<Value, RpcError> {
        let token = Self::caller(caller)?;
        let owner = Self::owner(&token);
        if !self
            .node
            .store()
            .push_remove(id, Some(&owner))
            .await
            .map_err(store_error)?
        {
            return Err(RpcError::new(
                ErrorCode::NotFound,
                format!("subscription: {id:?} is not a push subscription of this token"),
            ));
        }
        self.stop(id);
        Ok(json!({ "unsubscribed": true }))
    }

    /// `push.list`: the caller's own, each endpoint shown by its origin.
    pub async fn list(&self, caller: Option<Arc<capabilities::Verified>>) -> Result<Value, RpcError> {
        let token = Self::caller(caller)?;
        let rows = self
            .node
            .store()
            .push_list(Some(&Self::owner(&token)))
            .await
            .map_err(store_error)?;
        let status = self.status.lock().map(|s| s.clone()).unwrap_or_default();
        let subs: Vec<Value> = rows
            .iter()
            .map(|r| {
                let s = status.get(&r.id).cloned().unwrap_or_default();
                let kinds: Value = serde_json::from_str(&r.kinds).unwrap_or(json!([]));
                json!({
                    "subscription": r.id,
                    "origin": endpoint::parse(&r.endpoint, true).map(|e| e.origin).unwrap_or_default(),
                    "kinds": kinds,
                    "created_at": r.created_ms,
                    "delivered": s.delivered,
                    "failed": s.failed,
                    "last_error": s.last_error,
                })
            })
            .collect();
        Ok(json!({ "subscriptions": subs }))
    }

    fn stop(&self, id: &str) {
        if let Some(task) = self.followers.lock().ok().and_then(|mut f| f.remove(id)) {
            task.abort();
        }
        if let Ok(mut s) = self.status.lock() {
            s.remove(id);
        }
    }

    fn note(&self, id: &str, f: impl FnOnce(&mut Status)) {
        if let Ok(mut s) = self.status.lock() {
            f(s.entry(id.to_string()).or_default());
        }
    }

    /// Drops subscription `id` for good (its endpoint is gone, its token
    /// no longer works).
    async fn drop_subscription(&self, id: &str, why: &str) {
        tracing::info!(subscription = id, why, "push subscription dropped");
        if let Err(e) = self.node.store().push_remove(id, None).await {
            tracing::error!(error = %e, "a push subscription could not be removed");
        }
        self.stop(id);
    }

    fn follow(self: &Arc<Self>, row: PushRow) {
        let id = row.id.clone();
        let me = self.clone();
        let task = tokio::spawn(async move { me.run_follower(row).await }).abort_handle();
        if let Some(old) = self.followers.lock().ok().and_then(|mut f| f.insert(id, task)) {
            old.abort();
        }
    }

    async fn run_follower(self: Arc<Self>, row: PushRow) {
        let allow = self.settings.allow_private;
        let keys = crypto::Keys::parse(&row.p256dh, &row.auth);
        let ep = endpoint::parse(&row.endpoint, allow);
        let (keys, ep) = match (keys, ep) {
            (Ok(k), Ok(e)) => (k, e),
            (Err(e), _) | (_, Err(e)) => return self.drop_subscription(&row.id, &e).await,
        };
        let kinds: Vec<String> = serde_json::from_str(&row.kinds).unwrap_or_default();
        let (tx, rx) = mpsc::channel(QUEUE);
        let deliverer = tokio::spawn(self.clone().deliver_all(row.clone(), ep, keys, rx));
        let _stop_with_me = AbortOnDrop(deliverer.abort_handle());
        let mut wait = REOPEN_FIRST;
        let mut pushed = Remembered::default();
        loop {
            let ended = self.listen(&row, &kinds, &tx, &mut pushed).await;
            match ended {
                Ended::Gone(why) => return self.drop_subscription(&row.id, &why).await,
                Ended::Reopen => wait = REOPEN_FIRST,
                Ended::Again(why) => {
                    tracing::debug!(subscription = %row.id, why, "push: following again after a wait");
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_secs(60));
                }
            }
        }
    }

    /// One fleet-wide subscription with the row's token, until it ends:
    /// first the holds outstanding when it opened, then each needs-you as
    /// it comes. A hold already pushed is not pushed again.
    async fn listen(
        &self,
        row: &PushRow,
        kinds: &[String],
        tx: &mpsc::Sender<Value>,
        pushed: &mut Remembered,
    ) -> Ended {
        let Some(follow) = self.follow.get() else {
            return Ended::Again("not started".into());
        };
        let Following {
            mut notes,
            mut cut,
            token: verified,
            held,
            missing,
            guard,
        } = match follow.follow(&row.token).await {
            Ok(f) => f,
            Err(Refused::Token(why)) => return Ended::Gone(why),
            Err(Refused::Now(why)) => return Ended::Again(why),
        };
        tracing::debug!(subscription = %row.id, outstanding = held.len(), missing, "push: following needs-yous fleet-wide");
        let heard = Heard {
            row,
            kinds,
            verified: &verified,
            tx,
        };
        for hold in held {
            let node = hold["node"].as_str().unwrap_or(&self.own_name).to_string();
            let event = json!({ "reason": "outstanding", "hold": hold });
            self.relay(&heard, &node, &event, pushed);
        }
        // Without every member, open again after a while to follow them all.
        let partial = async {
            match missing {
                0 => std::future::pending().await,
                _ => tokio::time::sleep(REOPEN_PARTIAL).await,
            }
        };
        tokio::pin!(partial);
        let ended = loop {
            tokio::select! {
                note = notes.recv() => {
                    let Some(text) = note else { break Ended::Again("the subscription closed".into()) };
                    let Ok(v) = serde_json::from_str::<Value>(&text) else { continue };
                    match v["method"].as_str() {
                        Some(m::EVENT_FLEET_CHANGED) => break Ended::Reopen,
                        Some(m::EVENT_SUPERVISION_NEEDS_YOU) => {}
                        _ => continue,
                    }
                    let p = &v["params"];
                    let node = p["node"].as_str().unwrap_or(&self.own_name);
                    self.relay(&heard, node, &p["event"], pushed);
                }
                _ = cut.changed() => {
                    let why = cut.borrow().clone().unwrap_or_default();
                    break Ended::Again(why);
                }
                _ = &mut partial => break Ended::Reopen,
            }
        };
        drop(guard);
        ended
    }

    /// One needs-you on `node` queued for delivery, when the subscription
    /// wants its kind and it is not a hold pushed already.
    fn relay(&self, heard: &Heard<'_>, node: &str, event: &Value, pushed: &mut Remembered) {
        let kind = payload::kind_of(event);
        if !heard.kinds.is_empty() && !heard.kinds.iter().any(|k| k == kind) {
            return;
        }
        let hold = event.pointer("/hold/id").and_then(Value::as_str);
        if hold.is_some_and(|h| !pushed.insert(h)) {
            return;
        }
        let mut body = payload::build(kind, node, event, now_ms());
        if let Some(t) = hold.and_then(|h| self.answer_token(heard.verified, &heard.row.token, h)) {
            body["answer_token"] = json!(t);
        }
        if heard.tx.try_send(body).is_err() {
            tracing::warn!(subscription = %heard.row.id, "push queue full: a needs-you was not pushed");
            self.note(&heard.row.id, |s| s.failed += 1);
        }
    }

    /// The token narrowed to answering `hold`, when the token may answer holds.
    fn answer_token(&self, verified: &capabilities::Verified, token: &str, hold: &str) -> Option<String> {
        let now = SystemTime::now();
        let req = capabilities::Request {
            method: m::SUPERVISION_ANSWER,
            operation: Operation::Supervise,
            resources: vec![Resource::Node, Resource::Hold(hold.to_string())],
            node: self.node.node_id(),
            now,
        };
        self.verifier.authorize(verified, &req).ok()?;
        capabilities::answer_only(token, hold, now + ANSWER_TTL).ok()
    }

    async fn deliver_all(
        self: Arc<Self>,
        row: PushRow,
        ep: endpoint::Endpoint,
        keys: crypto::Keys,
        mut rx: mpsc::Receiver<Value>,
    ) {
        while let Some(body) = rx.recv().await {
            if let Err(gone) = self.deliver(&row, &ep, &keys, &body).await {
                return self.drop_subscription(&row.id, &gone).await;
            }
        }
    }

    /// POSTs one push, retrying; `Err` when the subscription is gone.
    async fn deliver(
        &self,
        row: &PushRow,
        ep: &endpoint::Endpoint,
        keys: &crypto::Keys,
        body: &Value,
    ) -> Result<(), String> {
        let hold = body["kind"] == "hold";
        let ttl = if hold {
            self.settings.ttl_secs.min(ANSWER_TTL.as_secs() as u32)
        } else {
            self.settings.ttl_secs
        };
        let urgency = if hold { "high" } else { "normal" };
        let plain = serde_json::to_vec(body).unwrap_or_default();
        let mut wait = FIRST_BACKOFF;
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            let posted = self.post_once(ep, keys, &plain, ttl, urgency).await;
            tracing::debug!(subscription = %row.id, posted = ?posted.as_ref().map_err(|_| ()), "push: POSTed");
            match posted {
                Ok(p) if (200..300).contains(&p.status) => {
                    self.note(&row.id, |s| s.delivered += 1);
                    return Ok(());
                }
                Ok(p) if p.status == 404 || p.status == 410 => {
                    return Err(format!(
                        "the push service answered {}: the subscription is gone",
                        p.status
                    ));
                }
                Ok(p) if p.status == 429 || p.status >= 500 => {
                    last = format!("HTTP {}", p.status);
                    wait = p.retry_after.unwrap_or(wait).min(MAX_BACKOFF);
                }
                Ok(p) => {
                    last = format!("HTTP {}: refused, not retried", p.status);
                    break;
                }
                Err(Refusal::Address(e)) => return Err(e),
                Err(Refusal::Failed(e)) => last = e,
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(MAX_BACKOFF);
        }
        tracing::warn!(subscription = %row.id, error = %last, "a push was not delivered");
        self.note(&row.id, |s| {
            s.failed += 1;
            s.last_error = Some(last);
        });
        Ok(())
    }

    async fn post_once(
        &self,
        ep: &endpoint::Endpoint,
        keys: &crypto::Keys,
        plain: &[u8],
        ttl: u32,
        urgency: &str,
    ) -> Result<post::Posted, Refusal> {
        // Checked again at every delivery: a name may come to resolve inward.
        let addr = endpoint::resolve(ep, self.settings.allow_private).await.map_err(|e| {
            if e.contains("not a public") {
                Refusal::Address(e)
            } else {
                Refusal::Failed(e)
            }
        })?;
        let body = crypto::encrypt(plain, keys).map_err(Refusal::Failed)?;
        let exp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
            + 12 * 3600;
        let auth = self
            .vapid
            .authorization(&ep.origin, &self.settings.contact, exp)
            .map_err(Refusal::Failed)?;
        let headers = [
            ("ttl", ttl.to_string()),
            ("urgency", urgency.to_string()),
            ("content-encoding", "aes128gcm".to_string()),
            ("content-type", "application/octet-stream".to_string()),
            ("authorization", auth),
        ];
        post::post(ep, addr, &headers, body, POST_WITHIN)
            .await
            .map_err(Refusal::Failed)
    }
}

enum Refusal {
    /// The endpoint now resolves to an address it may not be sent to.
    Address(String),
    Failed(String),
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn store_error(e: node_store::store::StoreError) -> RpcError {
    tracing::error!(error = %e, "push store");
    RpcError::new(ErrorCode::Internal, "internal error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_pushed_once_and_the_oldest_is_forgotten_first() {
        let mut r = Remembered::default();
        assert!(r.insert("h-0"));
        assert!(!r.insert("h-0"), "pushed already");
        for i in 1..=REMEMBERED {
            assert!(r.insert(&format!("h-{i}")));
        }
        assert_eq!(r.order.len(), REMEMBERED);
        assert!(r.insert("h-0"), "the oldest was forgotten");
        assert!(!r.insert(&format!("h-{REMEMBERED}")), "the newest is kept");
    }
}
