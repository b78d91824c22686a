//! Calls about what another member homes: forwarded there with the caller's
//! own token and answered as the home answers; forwarded subscriptions
//! pulled from the home into this connection's bounded queue (the same
//! slow-consumer cut-off as local ones); `{fleet: true}` lists merged from
//! every member. The home authorizes; this node only authenticates.

use std::sync::Arc;
use std::time::{Duration, Instant};

use console_api::{ErrorCode, Request, Response, RpcError};
use serde_json::{Value, json};

use super::App;
use super::conn::{CLOSE_SLOW, Caller, Conn};
use crate::fleet::forward::{Plan, bound_of};
use crate::fleet::route;
use crate::service::Node;

/// How long a fleet-wide list waits for each member.
const FANOUT_WITHIN: Duration = Duration::from_secs(5);
/// How long a forwarded subscription keeps retrying an unreachable home.
const PUMP_GIVES_UP: Duration = crate::fleet::serve::STREAM_IDLE;

pub enum Routed {
    /// Answer it here, with these params.
    Here(Option<Value>),
    /// The answer (a member's, or a merged list).
    Answered(Response),
    Failed(RpcError),
}

/// Where `req` is answered, and the answer when it is not here.
pub async fn route(app: &Arc<App>, conn: &Arc<Conn>, req: &Request) -> Routed {
    if let Some(key) = route::wants_fleet(&req.method, req.params.as_ref()) {
        return fanout(app, conn, req, key).await;
    }
    match app.node.plan(&req.method, req.params.clone()).await {
        Ok(Plan::Local(params)) => Routed::Here(route::without_fleet_flag(&req.method, params)),
        Ok(Plan::Remote { node_id, params }) => forward(app, conn, req, &node_id, params).await,
        Err(e) => Routed::Failed(e.into()),
    }
}

/// Whether the caller is this node's local admin (the Unix socket, or the
/// holder of `admin.token`).
pub(crate) fn is_local_admin(app: &Arc<App>, conn: &Arc<Conn>) -> bool {
    match conn.caller() {
        Caller::Local => true,
        Caller::Token(v) => app.node.fleet.routes.is_admin_token(&v.revocation_ids),
        Caller::Anonymous => false,
    }
}

/// The caller's own token, to be checked by the home; a monitor
/// conversation's instance token (trusted here only) is forwarded as the
/// delegation its attachment holds for that member.
pub(crate) async fn token_for(app: &Arc<App>, conn: &Arc<Conn>, node_id: &str) -> Result<String, RpcError> {
    if let Caller::Token(v) = conn.caller()
        && let Some(agent) = &v.agent
        && let Some(t) = app.node.monitor_delegation_for(agent, node_id).await
    {
        return Ok(t);
    }
    match conn.caller() {
        // The admin token's holder is the local admin (the CLI uses it).
        Caller::Token(v) if app.node.fleet.routes.is_admin_token(&v.revocation_ids) => {
            app.node.local_forwarding_token(node_id).map_err(Into::into)
        }
        Caller::Token(v) => v
            .biscuit
            .to_base64()
            .map_err(|e| RpcError::new(ErrorCode::Internal, format!("the token would not serialize: {e}"))),
        Caller::Local => app.node.local_forwarding_token(node_id).map_err(Into::into),
        Caller::Anonymous => Err(RpcError::new(
            ErrorCode::Unauthenticated,
            "unauthenticated: send `Authorization: Bearer <token>` on the upgrade or call session.authenticate first",
        )),
    }
}

fn request_text(req: &Request, params: Option<Value>) -> String {
    json!({ "jsonrpc": "2.0", "id": req.id, "method": req.method, "params": params }).to_string()
}

async fn forward(app: &Arc<App>, conn: &Arc<Conn>, req: &Request, node_id: &str, params: Option<Value>) -> Routed {
    let node = &app.node;
    let token = match token_for(app, conn, node_id).await {
        Ok(t) => t,
        Err(e) => return Routed::Failed(e),
    };
    // A monitor's advice: its breaker decides here, the home attributes it.
    let params = match conn.speaks_for() {
        Some(monitor) if req.method == console_api::methods::CONVERSATION_SEND_MESSAGE => {
            match node.remote_advice(&monitor, node_id, params).await {
                Ok(p) => Some(p),
                Err(e) => return Routed::Failed(e.into()),
            }
        }
        _ => params,
    };
    let stream = route::STREAMS.contains(&req.method.as_str());
    let started = Instant::now();
    let answer = node
        .forward(node_id, token, request_text(req, params), stream, bound_of(&req.method))
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
            format!("node {} gave an answer that is not JSON-RPC", node.member_name(node_id)),
        ));
    };
    if let Some(result) = &resp.result {
        for c in route::conversations_in(result) {
            node.fleet.routes.remember(c, node_id);
        }
    }
    if let (Some(sid), Some(result)) = (stream_id, resp.result.as_mut()) {
        match pump(node, conn, node_id, sid) {
            Ok(local) => result["subscription"] = json!(local),
            Err(e) => {
                node.cancel_remote(node_id, sid).await;
                return Routed::Failed(e);
            }
        }
    }
    Routed::Answered(resp)
}

/// Tells the home when a forwarded subscription's pump stops for any reason
/// (cancelled, the connection closed, the home ended it).
struct CancelOnDrop {
    node: Arc<Node>,
    home: String,
    stream: u64,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let (node, home, stream) = (self.node.clone(), self.home.clone(), self.stream);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { node.cancel_remote(&home, stream).await });
        }
    }
}

/// A local subscription fed by pulling the home's.
fn pump(node: &Arc<Node>, conn: &Arc<Conn>, home: &str, stream: u64) -> Result<String, RpcError> {
    let (node, c, home) = (node.clone(), conn.clone(), home.to_string());
    conn.subscribe_with(move |local, gate| {
        tokio::spawn(async move {
            let _cancel = CancelOnDrop {
                node: node.clone(),
                home: home.clone(),
                stream,
            };
            let _ = gate.await;
            let mut failing_since: Option<Instant> = None;
            loop {
                match node.pull(&home, stream).await {
                    Ok((notes, ended)) => {
                        failing_since = None;
                        for n in notes {
                            if let Some(t) = route::renamed_note(&n, &local)
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
                                let name = node.member_name(&home);
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
        })
    })
}

/// `{fleet: true}`: this node's list and every member's, each item naming
/// its node; members that did not answer are listed with the reason.
async fn fanout(app: &Arc<App>, conn: &Arc<Conn>, req: &Request, key: &'static str) -> Routed {
    let params = route::without_field(req.params.clone(), "fleet");
    let local = match super::call(app, conn, &req.method, params.clone()).await {
        Ok(v) => v,
        Err(e) => return Routed::Failed(e),
    };
    let node = &app.node;
    let tag = |list: &Value, name: &str| -> Vec<Value> {
        let mut items = list.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        for i in items.iter_mut() {
            i["node"] = json!(name);
        }
        items
    };
    let mut items = tag(&local, &node.fleet.name);
    let mut unreachable = vec![];
    let mut asks = tokio::task::JoinSet::new();
    for (id, name) in node.members().await {
        let token = match token_for(app, conn, &id).await {
            Ok(t) => t,
            Err(e) => {
                unreachable.push(json!({ "node": name, "reason": e.message }));
                continue;
            }
        };
        let (node, text) = (node.clone(), request_text(req, params.clone()));
        asks.spawn(async move {
            let r = node.forward(&id, token, text, false, FANOUT_WITHIN).await;
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
            }) => items.extend(tag(&result, &name)),
            Ok(Response { error: Some(e), .. }) => unreachable.push(json!({ "node": name, "reason": e.message })),
            Ok(_) => unreachable.push(json!({ "node": name, "reason": "an empty answer" })),
            Err(reason) => unreachable.push(json!({ "node": name, "reason": reason })),
        }
    }
    Routed::Answered(Response::ok(
        req.id.clone(),
        json!({ key: items, "unreachable": unreachable }),
    ))
}
