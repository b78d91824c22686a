//! A monitor on this node watching `AGENT@OTHER`: the same watches, fed
//! through the public API of the target's home, as any client would (the
//! fabric forwards it). At attach time the caller's own token (the one a
//! call to that member is forwarded with) is narrowed offline to the target
//! agent, `observe` (and `inject` when advising), and the few methods a
//! monitor needs, plus `control` for `conversation.pause` alone (a trip
//! stops the target too); this node keeps that delegation (a 0600 file,
//! never in the log) and uses it for the subscription. The monitor
//! conversation's `warren-read` / `warren-advise` calls to that member carry
//! it narrowed once more to the monitor's methods (no pause), so the monitor
//! holds no more than the attachment granted, even while dormant; a trip
//! pauses the target with it narrowed to that one conversation and
//! `conversation.pause`.
//!
//! Each round subscribes first (the home queues live events), then catches
//! up every conversation of the target from the cursor with
//! `transcript.read`, then pulls; a delta already evaluated is skipped, so a
//! partition or a home restart misses nothing and matches nothing twice.

use std::path::PathBuf;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use console_api as api;
use serde_json::{Value, json};

use super::Monitors;
use crate::service::{NodeError, NodeResult};
use node_store::util::now_ms;

/// An attachment's delegation as held in memory.
#[derive(Clone)]
pub(super) struct Held {
    /// As stored: the monitor's methods and `conversation.pause`.
    full: String,
    /// Narrowed to the monitor's methods: what its conversation's calls carry.
    calls: String,
}

/// What the monitor's own calls through a delegation may be.
const METHODS: &[&str] = &[
    "agent.get",
    "conversation.get",
    "conversation.list",
    "transcript.read",
    "transcript.subscribe",
    "conversation.sendMessage",
];
/// What a trip calls with the delegation (beside [`METHODS`]).
const PAUSE: &str = "conversation.pause";
/// A pull that keeps failing this long ends the round (then: resubscribe).
const ROUND_GIVES_UP: Duration = Duration::from_secs(20);
/// Catch-up pages.
const PAGE: u64 = 500;

impl Monitors {
    /// The member (id) and bare name of a `NAME@NODE` target on another
    /// member; `None` for an agent of this node.
    pub(crate) async fn remote_home(&self, target: &str) -> NodeResult<Option<(String, String)>> {
        let (name, at) = crate::fleet::address::split_address(target);
        let Some(at) = at else { return Ok(None) };
        Ok(self.fleet.member_named(at).await?.map(|id| (id, name.to_string())))
    }

    fn delegation_path(&self, attachment: &str) -> PathBuf {
        self.cfg.data_dir.join("monitors").join(format!("{attachment}.token"))
    }

    /// The methods a delegation allows: the monitor's, and the trip's pause.
    fn delegated_methods() -> Vec<String> {
        METHODS.iter().chain([&PAUSE]).map(|m| m.to_string()).collect()
    }

    /// Narrows `token` to what an attachment on `agent` needs (`control`
    /// serves `conversation.pause` alone: no other method it allows needs it).
    pub(crate) fn delegate(token: &str, agent: &str, inject: bool) -> NodeResult<String> {
        let mut operations = vec![capabilities::Operation::Observe, capabilities::Operation::Control];
        if inject {
            operations.push(capabilities::Operation::Inject);
        }
        capabilities::attenuate(
            token,
            &capabilities::Restriction {
                agents: vec![agent.to_string()],
                operations,
                methods: Monitors::delegated_methods(),
                ..Default::default()
            },
        )
        .map_err(|e| NodeError::Invalid(format!("the caller's token cannot be delegated: {e}")))
    }

    /// The local admin's delegation for an attachment on `agent` at `home`:
    /// signed by the fleet owner key (only the owner's node holds it), for
    /// that agent, `observe` (+ `inject`) and a monitor's methods, `control`
    /// for `conversation.pause`, unexpiring (detaching deletes it;
    /// `token.revoke` ends it).
    pub fn owner_delegation(&self, home: &str, agent: &str, inject: bool) -> NodeResult<String> {
        let Some(owner) = self.fleet.fleet_owner_root() else {
            // The same refusal a forwarded call of the local admin gets.
            return self.fleet.local_forwarding_token(home);
        };
        let mut operations = vec![capabilities::Operation::Observe, capabilities::Operation::Control];
        if inject {
            operations.push(capabilities::Operation::Inject);
        }
        let rights = operations
            .into_iter()
            .map(|op| capabilities::Right::new(capabilities::Resource::Agent(agent.to_string()), op))
            .collect();
        owner
            .mint(&capabilities::MintSpec {
                rights,
                expires_at: None,
                methods: Some(Monitors::delegated_methods()),
                facts: vec![("issued_by".into(), self.cfg.node_id.clone())],
            })
            .map_err(|e| NodeError::Internal(format!("could not mint the attachment's delegation: {e}")))
    }

    pub(crate) fn forget_delegation(&self, attachment: &str) {
        if let Ok(mut held) = self.delegations.lock() {
            held.remove(attachment);
        }
        let _ = std::fs::remove_file(self.delegation_path(attachment));
    }

    pub(crate) fn store_delegation(&self, attachment: &str, token: &str) -> NodeResult<()> {
        let path = self.delegation_path(attachment);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| NodeError::Internal(format!("{}: {e}", dir.display())))?;
        }
        node_store::util::write_private(&path, token)
            .map_err(|e| NodeError::Internal(format!("{}: {e}", path.display())))
    }

    /// The attachment's delegation and its narrowing for the monitor's own
    /// calls: kept in memory once read (every call the monitor makes to that
    /// member needs it).
    fn held(&self, attachment: &str) -> Option<Held> {
        let mut held = self.delegations.lock().ok()?;
        if let Some(h) = held.get(attachment) {
            return Some(h.clone());
        }
        let full = std::fs::read_to_string(self.delegation_path(attachment)).ok()?;
        let full = full.trim().to_string();
        let calls = match for_calls(&full) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(%attachment, error = %e, "an attachment's delegation would not narrow");
                return None;
            }
        };
        let h = Held { full, calls };
        held.insert(attachment.to_string(), h.clone());
        Some(h)
    }

    /// The whole delegation: the watch's subscription and reads, the trip's pause.
    fn delegation(&self, attachment: &str) -> Option<String> {
        self.held(attachment).map(|h| h.full)
    }

    /// The attachment of `monitor` whose target is homed on member
    /// `node_id` (an advising one when `advising`).
    async fn remote_attachment_of(&self, monitor: &str, node_id: &str, advising: bool) -> Option<String> {
        let candidates: Vec<(String, String)> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .of_monitor(monitor)
                .filter(|(_, a)| !advising || a.spec.inject.unwrap_or(true))
                .filter_map(|(id, a)| Some((id.clone(), a.spec.target.agent.clone()?)))
                .collect()
        };
        for (id, target) in candidates {
            if matches!(self.remote_home(&target).await, Ok(Some((home, _))) if home == node_id) {
                return Some(id);
            }
        }
        None
    }

    /// The delegation a monitor's call to member `node_id` is forwarded
    /// with (its instance token is trusted by this node only).
    pub async fn monitor_delegation_for(&self, monitor: &str, node_id: &str) -> Option<String> {
        let id = self.remote_attachment_of(monitor, node_id, false).await?;
        self.held(&id).map(|h| h.calls)
    }

    /// A JSON-RPC call at member `home` with `token`: its result, or its
    /// error as the node's own.
    pub(crate) async fn call_member(&self, home: &str, token: &str, method: &str, params: Value) -> NodeResult<Value> {
        let text = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
        let (answer, _) = self
            .fleet
            .forward(home, token.to_string(), text, false, Duration::from_secs(15))
            .await?;
        let r: api::Response =
            serde_json::from_str(&answer).map_err(|e| NodeError::Internal(format!("{method}: {e}")))?;
        match (r.result, r.error) {
            (Some(v), _) => Ok(v),
            (None, Some(e)) => Err(match e.code {
                -32004 => NodeError::NotFound(e.message),
                -32001 | -32003 => NodeError::Forbidden(e.message),
                -32602 => NodeError::Invalid(e.message),
                _ => NodeError::Conflict(e.message),
            }),
            (None, None) => Err(NodeError::Internal(format!("{method}: an empty answer"))),
        }
    }

    /// `sendMessage` by a monitor's conversation into a conversation homed
    /// on `home`: the breaker decides here (it is this node's), the home
    /// prefixes and attributes (`advice_from`, honoured only on calls a
    /// member forwards). The params to forward.
    pub(crate) async fn remote_advice(&self, monitor: &str, home: &str, params: Option<Value>) -> NodeResult<Value> {
        let p: api::SendMessage = api::rpc::params(params).map_err(|e| NodeError::Invalid(e.message))?;
        monitor::validate_advice(&p.text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let Some(attachment) = self.remote_attachment_of(monitor, home, true).await else {
            return Err(NodeError::Forbidden(format!(
                "agent {monitor:?} advises no attachment on that member"
            )));
        };
        let trips = self.allow_inject(&attachment, &p.text).await?;
        if trips {
            // Delivered, then stopped: both sides paused (the target by
            // its home, with the delegation narrowed to it).
            let me = self.me.upgrade();
            let (a, c) = (attachment.clone(), p.conversation.clone());
            if let Some(me) = me {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    me.trip(&a, &c).await;
                });
            }
        }
        Ok(json!({ "conversation": p.conversation, "text": p.text, "advice_from": monitor }))
    }

    /// A trip's pause of `conversation`, homed on another member, with the
    /// attachment's delegation narrowed to that conversation and
    /// `conversation.pause`.
    pub(crate) async fn pause_remote_target(&self, attachment: &str, conversation: &str) -> NodeResult<()> {
        let target = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .attachments
                .get(attachment)
                .and_then(|a| a.spec.target.agent.clone())
        };
        let home = match target {
            Some(t) => self.remote_home(&t).await?.map(|(home, _)| home),
            None => None,
        };
        let (Some(home), Some(full)) = (home, self.delegation(attachment)) else {
            return Err(NodeError::NotFound(format!(
                "attachment {attachment:?}: no target on another member, or no delegation for it"
            )));
        };
        let token = for_pause(&full, conversation)
            .map_err(|e| NodeError::Internal(format!("the delegation would not narrow to {conversation:?}: {e}")))?;
        self.call_member(&home, &token, PAUSE, json!({ "conversation": conversation }))
            .await
            .map(|_| ())
    }

    pub(crate) fn start_remote_watch(self: &Arc<Self>, attachment: String) {
        tokio::spawn(run_remote(Arc::downgrade(self), attachment));
    }

    /// One attachment's watch, fed a delta of its remote target.
    async fn on_remote_delta(&self, attachment: &str, ev: &api::TranscriptEvent) {
        let now = now_ms();
        let delta = monitor::Delta {
            conversation: &ev.conversation,
            seq: ev.seq,
            speaker: &ev.speaker,
            text: &ev.text,
        };
        let fired = self.watches.lock().ok().and_then(|mut w| {
            let watch = w.get_mut(attachment)?;
            let monitor = watch.attachment().monitor().to_string();
            let e = watch.evaluate(&delta, now);
            (!e.hits.is_empty() || !e.events.is_empty()).then(|| (attachment.to_string(), monitor, e))
        });
        if let Some(f) = fired {
            self.fired(ev, vec![f], now).await;
        }
    }

    fn remote_cursor(&self, attachment: &str, conversation: &str) -> u64 {
        self.watches
            .lock()
            .ok()
            .and_then(|w| w.get(attachment)?.cursor().last(conversation))
            .unwrap_or(0)
    }

    /// Subscribe, catch up, pull: until the subscription ends or its home
    /// stays unreachable.
    async fn remote_round(&self, attachment: &str, home: &str, agent: &str, token: &str, since: u64) -> NodeResult<()> {
        let sub = json!({ "jsonrpc": "2.0", "id": 1, "method": "transcript.subscribe", "params": { "agent": agent } });
        let (answer, stream) = self
            .fleet
            .forward(home, token.to_string(), sub.to_string(), true, Duration::from_secs(15))
            .await?;
        let Some(stream) = stream else {
            return Err(NodeError::Conflict(format!(
                "the target's home refused the subscription: {answer}"
            )));
        };
        let result = self
            .catch_up_and_pull(attachment, home, agent, token, since, stream)
            .await;
        self.fleet.cancel_remote(home, stream).await;
        result
    }

    async fn catch_up_and_pull(
        &self,
        attachment: &str,
        home: &str,
        agent: &str,
        token: &str,
        since: u64,
        stream: u64,
    ) -> NodeResult<()> {
        let list = self
            .call_member(home, token, "conversation.list", json!({ "agent": agent }))
            .await?;
        for conv in list["conversations"].as_array().into_iter().flatten() {
            let Some(id) = conv["id"].as_str() else { continue };
            // Conversations last active before the attachment are not its business.
            if conv["updated_at"].as_u64().unwrap_or(0) < since {
                continue;
            }
            loop {
                let after = self.remote_cursor(attachment, id);
                let page = self
                    .call_member(
                        home,
                        token,
                        "transcript.read",
                        json!({ "conversation": id, "after_seq": after, "limit": PAGE }),
                    )
                    .await?;
                let events: Vec<api::TranscriptEvent> =
                    serde_json::from_value(page["events"].clone()).unwrap_or_default();
                for ev in &events {
                    self.on_remote_delta(attachment, ev).await;
                }
                if (events.len() as u64) < PAGE || self.remote_cursor(attachment, id) <= after {
                    break;
                }
            }
        }
        let mut failing_since: Option<Instant> = None;
        let mut next = 1;
        loop {
            if !self.watches.lock().is_ok_and(|w| w.contains_key(attachment)) {
                return Ok(());
            }
            match self.fleet.pull(home, stream, &mut next).await {
                Ok((notes, ended)) => {
                    failing_since = None;
                    for n in notes {
                        let Ok(v) = serde_json::from_str::<Value>(&n) else {
                            continue;
                        };
                        if let Ok(ev) = serde_json::from_value::<api::TranscriptEvent>(v["params"]["event"].clone()) {
                            self.on_remote_delta(attachment, &ev).await;
                        }
                    }
                    if let Some(why) = ended {
                        return Err(NodeError::Conflict(format!("the subscription ended: {why}")));
                    }
                }
                Err(e) => {
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > ROUND_GIVES_UP {
                        return Err(e);
                    }
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }
}

/// A delegation narrowed to the monitor's own calls (no pause).
fn for_calls(full: &str) -> Result<String, capabilities::CapError> {
    capabilities::attenuate(
        full,
        &capabilities::Restriction {
            methods: METHODS.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        },
    )
}

/// A delegation narrowed to pausing `conversation`, and nothing else.
fn for_pause(full: &str, conversation: &str) -> Result<String, capabilities::CapError> {
    capabilities::attenuate(
        full,
        &capabilities::Restriction {
            conversations: vec![conversation.to_string()],
            operations: vec![capabilities::Operation::Control],
            methods: vec![PAUSE.to_string()],
            ..Default::default()
        },
    )
}

/// Rounds of one remote attachment until it is detached.
async fn run_remote(node: Weak<Monitors>, attachment: String) {
    let mut backoff = Duration::from_millis(500);
    loop {
        let Some(n) = node.upgrade() else { return };
        let spec = {
            let cat = n.catalog.lock().await;
            cat.monitors
                .attachments
                .get(&attachment)
                .map(|a| (a.spec.target.agent.clone(), a.attached_at))
        };
        let Some((Some(target), attached_at)) = spec else {
            return;
        };
        let Some(token) = n.delegation(&attachment) else {
            tracing::error!(%attachment, "a remote attachment has no delegation: it cannot watch");
            return;
        };
        let started = Instant::now();
        let round = match n.remote_home(&target).await {
            Ok(Some((home, agent))) => n.remote_round(&attachment, &home, &agent, &token, attached_at).await,
            Ok(None) => return,
            Err(e) => Err(e),
        };
        if let Err(e) = round {
            tracing::info!(%attachment, error = %e, "remote watch: resubscribing");
        }
        drop(n);
        // A round that ran a while was a working subscription: start over quickly.
        if started.elapsed() > Duration::from_secs(30) {
            backoff = Duration::from_millis(500);
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(5));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use capabilities::{Operation, Request, Resource, Verifier};

    fn allows(v: &Verifier, token: &str, method: &str, operation: Operation, conversation: &str) -> bool {
        let t = v.verify_uncached(token).expect("verifies");
        let req = Request {
            method,
            operation,
            resources: vec![
                Resource::Conversation(conversation.into()),
                Resource::Agent("coder".into()),
            ],
            node: "n-2",
            now: std::time::SystemTime::now(),
        };
        v.run_datalog(&t, &req).is_ok()
    }

    /// The delegation pauses the target's conversations and stops nothing
    /// else; the monitor's calls carry it without the pause; a trip's token
    /// pauses that one conversation only.
    #[test]
    fn the_pause_right_is_the_trips_alone_and_for_one_conversation() {
        let root = capabilities::RootKey::generate();
        let v = Verifier::new(vec![root.public()]);
        let admin = root.mint_admin("n-1").expect("admin token");
        let full = Monitors::delegate(&admin, "coder", true).expect("delegate");
        assert!(allows(&v, &full, PAUSE, Operation::Control, "c-1"));
        assert!(!allows(&v, &full, "conversation.terminate", Operation::Control, "c-1"));
        assert!(!allows(&v, &full, "conversation.sendKeys", Operation::Terminal, "c-1"));
        assert!(allows(&v, &full, "transcript.read", Operation::Observe, "c-1"));

        let calls = for_calls(&full).expect("calls");
        assert!(!allows(&v, &calls, PAUSE, Operation::Control, "c-1"));
        assert!(allows(&v, &calls, "transcript.read", Operation::Observe, "c-1"));
        assert!(allows(&v, &calls, "conversation.sendMessage", Operation::Inject, "c-1"));

        let pause = for_pause(&full, "c-1").expect("pause");
        assert!(allows(&v, &pause, PAUSE, Operation::Control, "c-1"));
        assert!(!allows(&v, &pause, PAUSE, Operation::Control, "c-2"));
        assert!(!allows(&v, &pause, "transcript.read", Operation::Observe, "c-1"));

        // Watch-only: no inject, the pause still.
        let watch = Monitors::delegate(&admin, "coder", false).expect("delegate");
        assert!(!allows(
            &v,
            &watch,
            "conversation.sendMessage",
            Operation::Inject,
            "c-1"
        ));
        assert!(allows(
            &v,
            &for_pause(&watch, "c-1").expect("pause"),
            PAUSE,
            Operation::Control,
            "c-1"
        ));
    }
}
