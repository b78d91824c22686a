//! The calling side of routing. A call about what another member homes is
//! forwarded there with the caller's own token and answered as the home
//! answers it; a forwarded subscription is pulled from the home into this
//! connection's bounded queue (the same slow-consumer cut-off as a local
//! one); `{fleet: true}` lists are merged from every member. The home
//! authorizes; this node only authenticates. Local calls never wait on the
//! fabric: a name or id this node homes is answered here before any member
//! is asked.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use console_api::registry::Method;
use console_api::{ErrorCode, Request, Response, RpcError, methods as m};
use fabric::wire::Locate;
use serde_json::{Value, json};

use super::plan::{self, Aim, Refusal, Step, Target, View, Way};
use crate::api::conn::{CLOSE_SLOW, Caller, Conn};
use crate::fleet::Fleet;
use crate::fleet::address::split_address;
use crate::service::{NodeError, NodeResult};
use crate::supervise::Supervisor;

/// How long a fleet-wide list waits for each member.
pub(super) const FANOUT_WITHIN: Duration = Duration::from_secs(5);
/// How long a forwarded subscription keeps retrying an unreachable home.
const PUMP_GIVES_UP: Duration = super::serve::STREAM_IDLE;
/// Conversation homes remembered (they never move).
const MAX_HOMES: usize = 100_000;

/// Where a call is answered.
pub enum Routed {
    /// Here, with these params.
    Here(Option<Value>),
    /// Here and at every member, merged under this list field (the caller
    /// answers its own part first, then [`Router::merge`]).
    FanOut {
        list: &'static str,
        params: Option<Value>,
    },
    /// The answer (a member's).
    Answered(Response),
    Failed(RpcError),
}

impl From<Refusal> for NodeError {
    fn from(r: Refusal) -> NodeError {
        match r {
            Refusal::Ambiguous { message, candidates } => NodeError::Ambiguous { message, candidates },
            Refusal::Unreachable { node, message } => NodeError::Unreachable { node, message },
        }
    }
}

/// The calling side: what it has learned and who the local admin is.
pub struct Router {
    pub(super) fleet: Arc<Fleet>,
    /// Supervision: which dialogs are held here.
    supervisor: Arc<Supervisor>,
    /// Monitors: a monitor conversation's delegations and advice breaker.
    monitors: Arc<crate::monitors::Monitors>,
    /// Conversation id -> home node id, learned from forwarded answers.
    homes: Mutex<HashMap<String, String>>,
    /// Revocation ids of this node's admin token (`admin.token`): its
    /// holder is the local admin, as a caller on the Unix socket is.
    admin_token: Vec<String>,
}

impl Router {
    pub fn new(
        fleet: Arc<Fleet>,
        supervisor: Arc<Supervisor>,
        monitors: Arc<crate::monitors::Monitors>,
        admin_token: Vec<String>,
    ) -> Router {
        Router {
            fleet,
            supervisor,
            monitors,
            homes: Mutex::new(HashMap::new()),
            admin_token,
        }
    }

    fn remember(&self, conversation: String, node_id: &str) {
        if let Ok(mut h) = self.homes.lock() {
            if h.len() >= MAX_HOMES {
                h.clear();
            }
            h.insert(conversation, node_id.to_string());
        }
    }

    fn home_of(&self, conversation: &str) -> Option<String> {
        self.homes.lock().ok()?.get(conversation).cloned()
    }

    /// Whether a token with these ids is this node's admin token.
    fn is_admin_token(&self, ids: &[String]) -> bool {
        !self.admin_token.is_empty() && self.admin_token.as_slice() == ids
    }

    /// Where `req` (of registered `method`, if it is one) is answered, and
    /// the answer when it is not here.
    pub async fn route(&self, conn: &Arc<Conn>, method: Option<&'static Method>, req: &Request) -> Routed {
        // A method the API does not have is answered here (-32601).
        let Some(method) = method else {
            return Routed::Here(req.params.clone());
        };
        // `agent.create {node: "auto"}`: named now, the member with the most
        // room (so it is placed once, not again by the member it goes to).
        let mut params = req.params.clone();
        if method.name == m::AGENT_CREATE
            && let Some(p) = params.as_mut()
            && p.get("node").and_then(Value::as_str) == Some("auto")
        {
            match self.fleet.roomiest().await {
                Ok(name) => p["node"] = Value::String(name),
                Err(e) => return Routed::Failed(e.into()),
            }
        }
        let aim = match plan::way(method, params.as_ref()) {
            Way::FanOut(list) => {
                return Routed::FanOut {
                    list,
                    params: plan::without_field(params, "fleet"),
                };
            }
            Way::Here => return Routed::Here(plan::without_fleet_flag(method, params)),
            Way::Aimed(aim) => aim,
        };
        match self.place(&aim, params).await {
            Ok(Step::Remote { node_id, params }) => self.forward(conn, method, req, &node_id, params).await,
            // (`place` has asked the members: it answers no `Locate`.)
            Ok(Step::Local(params) | Step::Locate(_, params)) => Routed::Here(plan::without_fleet_flag(method, params)),
            Err(e) => Routed::Failed(e.into()),
        }
    }

    /// What this node knows of an aim's target (only what the decision reads).
    async fn view(&self, aim: &Aim) -> NodeResult<View> {
        let fleet = &self.fleet;
        let in_fleet = fleet.in_fleet();
        let mut view = View {
            in_fleet,
            ..View::default()
        };
        match &aim.target {
            Target::Node(n) => view.member = fleet.member_named(n).await?,
            Target::Agent(address) => match split_address(address) {
                (_, Some(at)) => view.member = fleet.member_named(at).await?,
                (name, None) => {
                    view.here =
                        in_fleet && super::homes(fleet, &self.supervisor, &Locate::Agent(name.to_string())).await
                }
            },
            Target::Conversation(id) if in_fleet => {
                view.here = super::homes(fleet, &self.supervisor, &Locate::Conversation(id.clone())).await;
                if !view.here {
                    view.remembered = self.home_of(id);
                }
            }
            Target::Hold(id) if in_fleet => {
                view.here = super::homes(fleet, &self.supervisor, &Locate::Hold(id.clone())).await
            }
            Target::Conversation(_) | Target::Hold(_) => {}
        }
        Ok(view)
    }

    /// Where an aimed call is answered: decided from this node's view, and
    /// after asking the members when the view does not settle it.
    async fn place(&self, aim: &Aim, params: Option<Value>) -> NodeResult<Step> {
        let view = self.view(aim).await?;
        let (what, params) = match plan::decide(aim, &view, params) {
            Step::Locate(what, params) => (what, params),
            settled => return Ok(settled),
        };
        let (found, unreachable) = self.fleet.locate(what.clone()).await;
        let found: Vec<(String, String)> = found
            .into_iter()
            .map(|id| {
                let name = self.fleet.member_name(&id);
                (id, name)
            })
            .collect();
        let step = plan::located(&what, &found, &unreachable, params)?;
        if let (Locate::Conversation(id), Step::Remote { node_id, .. }) = (&what, &step) {
            self.remember(id.clone(), node_id);
        }
        Ok(step)
    }

    /// Whether the caller is this node's local admin (the Unix socket, or the
    /// holder of `admin.token`).
    pub fn is_local_admin(&self, conn: &Arc<Conn>) -> bool {
        match conn.caller() {
            Caller::Local => true,
            Caller::Token(v) => self.is_admin_token(&v.revocation_ids),
            Caller::Anonymous => false,
        }
    }

    /// The caller's own token, to be checked by the home; a monitor
    /// conversation's instance token (trusted here only) is forwarded as the
    /// delegation its attachment holds for that member.
    pub async fn token_for(&self, conn: &Arc<Conn>, node_id: &str) -> Result<String, RpcError> {
        let fleet = &self.fleet;
        if let Caller::Token(v) = conn.caller()
            && let Some(agent) = &v.agent
            && let Some(t) = self.monitors.monitor_delegation_for(agent, node_id).await
        {
            return Ok(t);
        }
        match conn.caller() {
            // The admin token's holder is the local admin (the CLI uses it).
            Caller::Token(v) if self.is_admin_token(&v.revocation_ids) => {
                fleet.local_forwarding_token(node_id).map_err(Into::into)
            }
            Caller::Token(v) => v
                .biscuit
                .to_base64()
                .map_err(|e| RpcError::new(ErrorCode::Internal, format!("the token would not serialize: {e}"))),
            Caller::Local => fleet.local_forwarding_token(node_id).map_err(Into::into),
            Caller::Anonymous => Err(RpcError::new(
                ErrorCode::Unauthenticated,
                "unauthenticated: send `Authorization: Bearer <token>` on the upgrade or call session.authenticate first",
            )),
        }
    }

    /// Sends the call to its home and relays the home's answer (and stream).
    async fn forward(
        &self,
        conn: &Arc<Conn>,
        method: &'static Method,
        req: &Request,
        node_id: &str,
        params: Option<Value>,
    ) -> Routed {
        let fleet = &self.fleet;
        let token = match self.token_for(conn, node_id).await {
            Ok(t) => t,
            Err(e) => return Routed::Failed(e),
        };
        // A monitor's advice: its breaker decides here, the home attributes it.
        let params = match conn.speaks_for() {
            Some(monitor) if method.name == m::CONVERSATION_SEND_MESSAGE => {
                match self.monitors.remote_advice(&monitor, node_id, params).await {
                    Ok(p) => Some(p),
                    Err(e) => return Routed::Failed(e.into()),
                }
            }
            _ => params,
        };
        let started = Instant::now();
        let answer = fleet
            .forward(
                node_id,
                token,
                request_text(req, params),
                method.stream,
                plan::bound(method),
            )
            .await;
        tracing::debug!(method = %req.method, home = node_id, ok = answer.is_ok(), micros = started.elapsed().as_micros() as u64, "forwarded");
        let (text, stream_id) = match answer {
            Ok(a) => a,
            Err(e) => return Routed::Failed(e.into()),
        };
        let Ok(mut resp) = serde_json::from_str::<Response>(&text) else {
            if req.id.is_none() {
                return Routed::Answered(Response::ok(None, Value::Null));
            }
            return Routed::Failed(RpcError::new(
                ErrorCode::Internal,
                format!(
                    "node {} gave an answer that is not JSON-RPC",
                    fleet.member_name(node_id)
                ),
            ));
        };
        if let Some(result) = &resp.result {
            for c in plan::conversations_in(result) {
                self.remember(c, node_id);
            }
        }
        if let (Some(sid), Some(result)) = (stream_id, resp.result.as_mut()) {
            match pump(fleet, conn, node_id, sid) {
                Ok(local) => result["subscription"] = json!(local),
                Err(e) => {
                    fleet.cancel_remote(node_id, sid).await;
                    return Routed::Failed(e);
                }
            }
        }
        Routed::Answered(resp)
    }

    /// `{fleet: true}`: this node's list (`local`, answered by the caller)
    /// and every member's, each item naming its node; members that did not
    /// answer are listed with the reason.
    pub async fn merge(
        &self,
        conn: &Arc<Conn>,
        req: &Request,
        list: &'static str,
        params: Option<Value>,
        local: Value,
    ) -> Response {
        let fleet = &self.fleet;
        let tag = |answer: &Value, name: &str| -> Vec<Value> {
            let mut items = answer.get(list).and_then(Value::as_array).cloned().unwrap_or_default();
            for i in items.iter_mut() {
                i["node"] = json!(name);
            }
            items
        };
        let mut items = tag(&local, fleet.name());
        let mut totals = serde_json::Map::new();
        plan::add_totals(&mut totals, &local);
        let mut unreachable = vec![];
        let mut asks = tokio::task::JoinSet::new();
        for (id, name) in fleet.members().await {
            let token = match self.token_for(conn, &id).await {
                Ok(t) => t,
                Err(e) => {
                    unreachable.push(json!({ "node": name, "reason": e.message }));
                    continue;
                }
            };
            let (fleet, text) = (fleet.clone(), request_text(req, params.clone()));
            asks.spawn(async move {
                let r = fleet.forward(&id, token, text, false, FANOUT_WITHIN).await;
                (name, r)
            });
        }
        while let Some(done) = asks.join_next().await {
            let Ok((name, answer)) = done else { continue };
            let parsed = answer
                .map_err(|e| e.to_string())
                .and_then(|(text, _)| serde_json::from_str::<Response>(&text).map_err(|e| e.to_string()));
            match parsed {
                Ok(Response {
                    result: Some(result), ..
                }) => {
                    plan::add_totals(&mut totals, &result);
                    items.extend(tag(&result, &name));
                }
                Ok(Response { error: Some(e), .. }) => unreachable.push(json!({ "node": name, "reason": e.message })),
                Ok(_) => unreachable.push(json!({ "node": name, "reason": "an empty answer" })),
                Err(reason) => unreachable.push(json!({ "node": name, "reason": reason })),
            }
        }
        totals.insert(list.to_string(), Value::Array(items));
        totals.insert("unreachable".to_string(), Value::Array(unreachable));
        Response::ok(req.id.clone(), Value::Object(totals))
    }
}

pub(super) fn request_text(req: &Request, params: Option<Value>) -> String {
    json!({ "jsonrpc": "2.0", "id": req.id, "method": req.method, "params": params }).to_string()
}

/// Tells the home when a forwarded subscription's pump stops for any reason
/// (cancelled, the connection closed, the home ended it).
struct CancelOnDrop {
    fleet: Arc<Fleet>,
    home: String,
    stream: u64,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (fleet, home, stream) = (self.fleet.clone(), self.home.clone(), self.stream);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { fleet.cancel_remote(&home, stream).await });
        }
    }
}

/// A local subscription fed by pulling the home's.
fn pump(fleet: &Arc<Fleet>, conn: &Arc<Conn>, home: &str, stream: u64) -> Result<String, RpcError> {
    let (fleet, c, home) = (fleet.clone(), conn.clone(), home.to_string());
    conn.subscribe_with(move |local, gate| {
        tokio::spawn(async move {
            let _ = gate.await;
            pull_into(fleet, c, home, stream, local, None).await;
        })
    })
}

/// Pulls the home's stream `stream` into the local subscription `local`
/// (each notification naming `origin`, when given) until the client is gone,
/// the home ends it, or the home stays unreachable too long (the client is
/// then cut off with the reason, so no gap is silent). The home is told when
/// this stops for any reason, an abort included.
pub(super) async fn pull_into(
    fleet: Arc<Fleet>,
    c: Arc<Conn>,
    home: String,
    stream: u64,
    local: String,
    origin: Option<String>,
) {
    let _cancel = CancelOnDrop {
        fleet: fleet.clone(),
        home: home.clone(),
        stream,
    };
    let mut failing_since: Option<Instant> = None;
    let mut next = 1;
    loop {
        match fleet.pull(&home, stream, &mut next).await {
            Ok((notes, ended)) => {
                failing_since = None;
                for n in notes {
                    if let Some(t) = plan::renamed_note(&n, &local, origin.as_deref())
                        && !c.push(t)
                    {
                        return;
                    }
                }
                if let Some(why) = ended {
                    // The client learns its stream ended (it
                    // reconnects and resumes from its cursor).
                    if why == CLOSE_SLOW {
                        c.cut_off(CLOSE_SLOW);
                    } else {
                        let name = fleet.member_name(&home);
                        c.cut_off(&format!("subscription {local} ended at node {name}: {why}"));
                    }
                    return;
                }
            }
            Err(e) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if since.elapsed() > PUMP_GIVES_UP {
                    c.cut_off(&format!("subscription {local}: {e}"));
                    return;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}
