//! `events.subscribe {fleet: true}`: one subscription on the caller's
//! connection that follows this node's events and every member's. Each
//! member is asked for its own subscription with the caller's token (so it
//! sends only what that token may observe); their notifications are pulled
//! into the local one, each naming its `node`. One task owns the whole
//! subscription: cancelling it (or the client going away) stops every pull
//! and tells each member.

use std::sync::Arc;

use console_api::{ErrorCode, EventsSubscribe, Request, Response, RpcError};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::Router;
use super::forward::{FANOUT_WITHIN, pull_into, request_text};
use crate::api::conn::{Conn, check_kinds};
use crate::service::Node;

/// A member's forwarded subscription: (node id, name, its stream).
type Remote = (String, String, u64);

impl Router {
    /// Answers `events.subscribe {fleet: true}` (`params` without the flag):
    /// `{subscription, unreachable:[{node, reason}]}`.
    pub async fn subscribe_fleet_events(
        &self,
        node: &Arc<Node>,
        conn: &Arc<Conn>,
        req: &Request,
        params: Option<Value>,
    ) -> Response {
        let id = req.id.clone();
        let p: EventsSubscribe = match serde_json::from_value(params.clone().unwrap_or_else(|| json!({}))) {
            Ok(p) => p,
            Err(e) => {
                return Response::err(
                    id,
                    RpcError::new(ErrorCode::InvalidParams, format!("invalid params: {e}")),
                );
            }
        };
        if p.agent.is_some() {
            return Response::err(
                id,
                RpcError::new(
                    ErrorCode::InvalidParams,
                    "agent: a fleet-wide subscription follows every agent; to follow one, subscribe with `agent` (NAME@NODE) and without `fleet`",
                ),
            );
        }
        if let Err(e) = check_kinds(p.kinds.as_deref()) {
            return Response::err(id, e);
        }
        let (remotes, unreachable) = self.open_remote_subscriptions(conn, req, params).await;
        let rx = node.subscribe_events();
        let (fleet, c, own, home) = (
            self.fleet.clone(),
            conn.clone(),
            self.fleet.name().to_string(),
            node.clone(),
        );
        let started = remotes.clone();
        let subscribed = conn.subscribe_with(move |local, gate| {
            tokio::spawn(async move {
                let _ = gate.await;
                // Dropped with this task: every pull is aborted with it.
                let mut pulls = JoinSet::new();
                for (home, name, stream) in remotes {
                    pulls.spawn(pull_into(
                        fleet.clone(),
                        c.clone(),
                        home,
                        stream,
                        local.clone(),
                        Some(name),
                    ));
                }
                c.relay_events(&home, rx, p.kinds, None, &local, Some(&own)).await;
            })
        });
        match subscribed {
            Ok(sub) => Response::ok(id, json!({ "subscription": sub, "unreachable": unreachable })),
            Err(e) => {
                for (home, _, stream) in started {
                    self.fleet.cancel_remote(&home, stream).await;
                }
                Response::err(id, e)
            }
        }
    }

    /// Asks every member for its own subscription (the caller's token, the
    /// same kinds), at once; those that did not answer with one are named
    /// with the reason.
    async fn open_remote_subscriptions(
        &self,
        conn: &Arc<Conn>,
        req: &Request,
        params: Option<Value>,
    ) -> (Vec<Remote>, Vec<Value>) {
        let (mut remotes, mut unreachable) = (vec![], vec![]);
        let mut asks = JoinSet::new();
        for (home, name) in self.fleet.members().await {
            let token = match self.token_for(conn, &home).await {
                Ok(t) => t,
                Err(e) => {
                    unreachable.push(json!({ "node": name, "reason": e.message }));
                    continue;
                }
            };
            let (fleet, text) = (self.fleet.clone(), request_text(req, params.clone()));
            asks.spawn(async move {
                let answer = fleet.forward(&home, token, text, true, FANOUT_WITHIN).await;
                (home, name, answer)
            });
        }
        while let Some(done) = asks.join_next().await {
            let Ok((home, name, answer)) = done else { continue };
            let reason = match answer {
                Ok((_, Some(stream))) => {
                    remotes.push((home, name, stream));
                    continue;
                }
                Ok((text, None)) => serde_json::from_str::<Response>(&text)
                    .ok()
                    .and_then(|r| r.error)
                    .map(|e| e.message)
                    .unwrap_or_else(|| "it opened no subscription".into()),
                Err(e) => e.to_string(),
            };
            unreachable.push(json!({ "node": name, "reason": reason }));
        }
        (remotes, unreachable)
    }
}
