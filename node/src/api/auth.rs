//! Authorization of every call. Each call is checked before it runs, from
//! its method's registry entry: local-only methods refuse the network, the
//! caller's token must not be revoked (checked on every call, cached
//! verifications too), and the token's Datalog must allow the method's
//! operation on the resources it touches (its scope, read from its params).

use std::sync::Arc;
use std::time::SystemTime;

use capabilities::methods::{ActsAs, Scope};
use capabilities::{AuthError, Operation, Request, Resource};
use console_api::registry::{Method, Route};
use console_api::{ErrorCode, RpcError};
use serde_json::{Value, json};

use super::App;
use super::conn::{Caller, Conn};

pub(super) fn local_only(method: &str) -> RpcError {
    RpcError::new(
        ErrorCode::LocalOnly,
        format!("{method} is local-only: call it on the node's Unix socket (warren.sock), not over the network"),
    )
}

fn str_param<'a>(p: Option<&'a Value>, key: &str) -> Option<&'a str> {
    p.and_then(|p| p.get(key)).and_then(Value::as_str)
}

/// The resources a call touches, from its method's scope and its params; a
/// call that answers a hold touches that hold too (`hold:ID`, so a token can
/// be narrowed to one hold: a push's `answer_token`).
async fn resources(app: &Arc<App>, method: &Method, p: Option<&Value>) -> Vec<Resource> {
    let mut r = scope_resources(app, method, p).await;
    if let Route::Hold(field) = method.route
        && let Some(hold) = str_param(p, field)
    {
        r.push(Resource::Hold(hold.to_string()));
    }
    r
}

async fn scope_resources(app: &Arc<App>, method: &Method, p: Option<&Value>) -> Vec<Resource> {
    let conversation = |id: &str| {
        let id = id.to_string();
        async move {
            let mut r = vec![Resource::Conversation(id.clone())];
            if let Some(agent) = app.node.conversation_agent(&id).await {
                r.push(Resource::Agent(agent));
            }
            r
        }
    };
    match method.scope {
        Scope::Node | Scope::Caller => vec![Resource::Node],
        Scope::Tool => match str_param(p, "tool") {
            Some(t) => vec![Resource::Tool(t.to_string())],
            None => vec![Resource::Node],
        },
        Scope::Agent => match str_param(p, method.agent_param) {
            Some(a) => vec![Resource::Agent(a.to_string())],
            None => vec![Resource::Node],
        },
        Scope::Conversation => match str_param(p, "conversation") {
            Some(c) => conversation(c).await,
            None => vec![Resource::Node],
        },
        // A task acts on its worker's conversation; an unknown task needs the node.
        Scope::Task => match str_param(p, "task") {
            Some(t) => match app.node.task_conversation(t).await {
                Some(c) => conversation(&c).await,
                None => vec![Resource::Node],
            },
            None => vec![Resource::Node],
        },
        // `usage.get` names its target as `{scope, id}`.
        Scope::Narrowest if method.route == Route::ScopeId => match (str_param(p, "scope"), str_param(p, "id")) {
            (Some("conversation"), Some(c)) => conversation(c).await,
            (Some("agent"), Some(a)) => vec![Resource::Agent(a.to_string())],
            _ => vec![Resource::Node],
        },
        Scope::Narrowest => {
            if let Some(c) = str_param(p, "conversation") {
                conversation(c).await
            } else if let Some(a) = str_param(p, "agent") {
                vec![Resource::Agent(a.to_string())]
            } else {
                vec![Resource::Node]
            }
        }
    }
}

/// Checks that the connection's caller may make this call.
pub async fn check(app: &Arc<App>, conn: &Arc<Conn>, method: &Method, p: Option<&Value>) -> Result<(), RpcError> {
    let token = match conn.caller() {
        Caller::Local => return Ok(()),
        Caller::Anonymous => {
            return Err(RpcError::new(
                ErrorCode::Unauthenticated,
                "unauthenticated: send `Authorization: Bearer <token>` on the upgrade or call session.authenticate first",
            ));
        }
        Caller::Token(t) => t,
    };
    if method.local_only {
        return Err(local_only(method.name));
    }
    if app.node.any_revoked(&token.revocation_ids) {
        return Err(RpcError::new(
            ErrorCode::Unauthenticated,
            "token refused: it has been revoked",
        ));
    }
    if method.scope == Scope::Caller {
        return Ok(());
    }
    let acts = method.acts_as;
    // `mailbox.ack` acts on the agent its scope names: acting for it is the
    // whole check. Other calls meet their operation on their scope first.
    let whole = acts.is_some_and(|a| method.scope == Scope::Agent && a.param == method.agent_param);
    if !whole {
        let req = Request {
            method: method.name,
            operation: method.operation,
            resources: resources(app, method, p).await,
            node: app.node.node_id(),
            now: SystemTime::now(),
        };
        app.verifier.authorize(&token, &req).map_err(refusal)?;
    }
    match (acts, acts.and_then(|a| str_param(p, a.param))) {
        (Some(a), Some(agent)) => act_for(app, &token, method.name, a, agent),
        // A call without its agent param is refused by the method's params.
        _ => Ok(()),
    }
}

fn refusal(e: AuthError) -> RpcError {
    match e {
        AuthError::Unauthenticated(m) => RpcError::new(ErrorCode::Unauthenticated, format!("token refused: {m}")),
        AuthError::Forbidden { message, failed_check } => {
            RpcError::new(ErrorCode::Forbidden, message).with_data(json!({ "failed_check": failed_check }))
        }
    }
}

/// A call made for `agent` (its registry entry's `acts_as`): the agent's
/// own instance token (with its `observe` on itself, so its methods and
/// expiry still apply), or a token that is no instance token and holds one
/// of the operations on the agent.
fn act_for(
    app: &Arc<App>,
    token: &capabilities::Verified,
    method: &str,
    acts: ActsAs,
    agent: &str,
) -> Result<(), RpcError> {
    let req = |operation| Request {
        method,
        operation,
        resources: vec![Resource::Agent(agent.to_string())],
        node: app.node.node_id(),
        now: SystemTime::now(),
    };
    let field = acts.param;
    match token.agent.as_deref() {
        Some(me) if me == agent => app.verifier.authorize(token, &req(Operation::Observe)).map_err(refusal),
        Some(me) => Err(RpcError::new(
            ErrorCode::Forbidden,
            format!("{field}: this token speaks for agent {me:?} and cannot act for agent {agent:?}"),
        )
        .with_data(json!({ "failed_check": format!("{method} acts for its own agent only") }))),
        None => {
            let mut last = None;
            for op in acts.any_of {
                match app.verifier.authorize(token, &req(*op)) {
                    Ok(()) => return Ok(()),
                    Err(e @ AuthError::Unauthenticated(_)) => return Err(refusal(e)),
                    Err(e) => last = Some(e),
                }
            }
            let wanted: Vec<&str> = acts.any_of.iter().map(|o| o.as_str()).collect();
            tracing::debug!(?last, method, agent, "acting for an agent refused");
            Err(RpcError::new(
                ErrorCode::Forbidden,
                format!(
                    "{field}: {method} for agent {agent:?} needs {} on agent:{agent}, or that agent's own instance token",
                    wanted.join(" or ")
                ),
            )
            .with_data(json!({ "failed_check": format!("right(\"agent:{agent}\", {})", wanted.join("|")) })))
        }
    }
}

/// `monitor.attach` delegates may-observe on its target: the caller must
/// hold it (a target on another member is checked by its home).
pub fn may_observe_target(app: &Arc<App>, conn: &Arc<Conn>, spec: &monitor::AttachmentSpec) -> Result<(), RpcError> {
    let Caller::Token(token) = conn.caller() else {
        return Ok(());
    };
    let resource = match (&spec.target.agent, &spec.target.conversation) {
        (Some(a), _) if a.contains('@') => return Ok(()),
        (Some(a), _) => Resource::Agent(a.clone()),
        (None, Some(c)) => Resource::Conversation(c.clone()),
        (None, None) => return Ok(()),
    };
    let req = Request {
        method: "monitor.attach",
        operation: capabilities::Operation::Observe,
        resources: vec![resource.clone()],
        node: app.node.node_id(),
        now: SystemTime::now(),
    };
    app.verifier.authorize(&token, &req).map_err(|_| {
        RpcError::new(
            ErrorCode::Forbidden,
            format!("target: the caller may not observe {resource}, so it cannot delegate watching it"),
        )
    })
}
