//! Monitor agents (seed 002 section 12), the node's side: the pure
//! decisions are the `monitor` crate's. Attachments live in the monitor
//! agent's definition (`monitor_*` events, `state.rs`). One watch loop reads
//! every committed transcript event once (never raw PTY bytes) and gives it
//! to the watches whose target it belongs to; hits go to the monitor's wake
//! queue; one wake worker per monitor runs its wakes one at a time: check
//! the breaker, start or continue the monitor's conversation for that target
//! conversation, send the structured trigger message, wait for the turn to
//! end. Advice comes back as `conversation.sendMessage` with the monitor
//! conversation's instance token (`warren-advise`): the node checks the
//! attachment and its breaker, prefixes the text itself and records speaker
//! `monitor:NAME` (`advice.rs`). A trip pauses both conversations, is
//! durable, and waits for a human's `monitor.rearm`.

mod advice;
mod persona;
mod remote;
pub use node_store::folds::monitors as state;
pub use persona::ADVISOR_PERSONA;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use console_api as api;
use monitor::{Action, Delta, Refused, Target, WakeKey, WakeQueue, Watch};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::service::{Node, NodeError, NodeResult};
use node_store::events::Event;
use node_store::util::{new_id, now_ms};
use state::AttachmentEntry;

/// How long a woken monitor may take over its turn before its queue moves on.
const TURN_BOUND: Duration = Duration::from_secs(600);
/// A turn whose busy spell was not seen counts as over once the CLI has
/// been idle this long after the trigger message.
const TURN_SETTLE: Duration = Duration::from_millis(500);

/// The monitors this node runs: a subsystem over the core (`Deref` to the
/// core `Node`), owning its watches, wake queues, workers and delegations.
pub struct Monitors {
    node: Arc<Node>,
    /// Starting, pausing and ending the monitor's own conversations.
    conversations: Arc<crate::conversations::Conversations>,
    /// Reaching a watched conversation homed on another member.
    fleet: Arc<crate::fleet::Fleet>,
    me: Weak<Monitors>,
    /// Attachment id -> its watch (compiled trigger, cursor, breaker).
    watches: Mutex<HashMap<String, Watch>>,
    /// Monitor agent -> its wake queue.
    queues: Mutex<HashMap<String, WakeQueue>>,
    /// Monitor agent -> what wakes its worker.
    workers: Mutex<HashMap<String, Arc<Notify>>>,
    /// Attachment id -> its delegation for a remote target (read once).
    delegations: Mutex<HashMap<String, remote::Held>>,
}

impl std::ops::Deref for Monitors {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Monitors {
    pub fn new(
        node: Arc<Node>,
        conversations: Arc<crate::conversations::Conversations>,
        fleet: Arc<crate::fleet::Fleet>,
    ) -> Arc<Monitors> {
        Arc::new_cyclic(|me| Monitors {
            node,
            conversations,
            fleet,
            me: me.clone(),
            watches: Default::default(),
            queues: Default::default(),
            workers: Default::default(),
            delegations: Default::default(),
        })
    }
}

fn poisoned() -> NodeError {
    NodeError::Internal("monitor state poisoned".into())
}

impl Monitors {
    /// Loads every attachment and starts the watch loop (start-up).
    pub async fn start_monitors(self: &Arc<Self>) {
        let entries: Vec<(String, AttachmentEntry)> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .attachments
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        for (id, entry) in entries {
            if let Err(e) = self.install_watch(&id, &entry) {
                tracing::error!(attachment = %id, error = %e, "a stored attachment would not load");
                continue;
            }
            if entry.spec.target.agent.as_deref().is_some_and(|a| a.contains('@')) {
                self.start_remote_watch(id);
            }
        }
        tokio::spawn(run_watch(Arc::downgrade(self)));
    }

    fn install_watch(&self, id: &str, entry: &AttachmentEntry) -> NodeResult<()> {
        let attachment = monitor::validate(&entry.spec).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let mut cursor = monitor::Cursor::new();
        for (conversation, seq) in &entry.fired {
            cursor.skip_to(conversation, *seq);
        }
        let breaker = monitor::BreakerState::replay(attachment.breaker(), entry.breaker.iter());
        let watch = Watch::restore(attachment, cursor, breaker).map_err(|e| NodeError::Invalid(e.to_string()))?;
        self.watches
            .lock()
            .map_err(|_| poisoned())?
            .insert(id.to_string(), watch);
        Ok(())
    }

    /// `monitor.attach`: validated, stored in the monitor's definition, armed.
    /// `delegate`: the caller's token as a call to another member would be
    /// forwarded with (for a target there).
    pub async fn monitor_attach(&self, spec: monitor::AttachmentSpec, delegate: Option<String>) -> NodeResult<Value> {
        let attachment = monitor::validate(&spec).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let mut spec = attachment.spec();
        // A target on another member: the caller's token, narrowed to the
        // attachment, must be good there (so the target exists and the
        // caller may observe it).
        let remote = match attachment.target() {
            Target::Agent(a) => self.remote_home(a).await.map_err(|e| match e {
                NodeError::NotFound(m) => NodeError::NotFound(format!("target.agent: {m}")),
                other => other,
            })?,
            Target::Conversation(_) => None,
        };
        let delegation = match &remote {
            Some((home, name)) => {
                let token = delegate.ok_or_else(|| {
                    NodeError::Forbidden(
                        "target.agent: watching an agent on another member needs a token the fleet trusts".into(),
                    )
                })?;
                let d = Monitors::delegate(&token, name, attachment.inject())?;
                self.call_member(home, &d, "agent.get", json!({ "agent": name }))
                    .await
                    .map_err(|e| match e {
                        NodeError::Forbidden(m) => NodeError::Forbidden(format!("target.agent: {m}")),
                        NodeError::NotFound(m) => NodeError::NotFound(format!("target.agent: {m}")),
                        other => other,
                    })?;
                Some(d)
            }
            None => None,
        };
        {
            let cat = self.catalog.lock().await;
            match cat.agents.get(attachment.monitor()) {
                Some(a) if !a.archived => {}
                Some(_) => {
                    return Err(NodeError::Conflict(format!(
                        "monitor: agent {:?} is archived",
                        attachment.monitor()
                    )));
                }
                None => {
                    return Err(NodeError::NotFound(format!(
                        "monitor: agent {:?} not found on this node (create it first, or use `warren monitor attach`, which does)",
                        attachment.monitor()
                    )));
                }
            }
            match attachment.target() {
                Target::Agent(_) if remote.is_some() => {}
                Target::Agent(a) => {
                    let (name, _) = crate::fleet::address::split_address(a);
                    if name == attachment.monitor() {
                        return Err(NodeError::Invalid("target.agent: a monitor cannot watch itself".into()));
                    }
                    if !cat.agents.contains_key(name) {
                        return Err(NodeError::NotFound(format!("target.agent: agent {name:?} not found")));
                    }
                    spec.target.agent = Some(name.to_string());
                }
                Target::Conversation(c) => {
                    let Some(conv) = cat.conversations.get(c) else {
                        return Err(NodeError::NotFound(format!("target.conversation: {c:?} not found")));
                    };
                    if conv.agent == attachment.monitor() {
                        return Err(NodeError::Invalid(
                            "target.conversation: a monitor cannot watch its own conversation".into(),
                        ));
                    }
                }
            }
        }
        let id = new_id("ma-");
        if let Some(d) = &delegation {
            self.store_delegation(&id, d)?;
        }
        let e = Event::MonitorAttached {
            attachment: id.clone(),
            spec: spec.clone(),
        };
        {
            let mut cat = self.catalog.lock().await;
            self.commit(&mut cat, vec![e]).await?;
        }
        let entry = self
            .catalog
            .lock()
            .await
            .monitors
            .attachments
            .get(&id)
            .cloned()
            .ok_or_else(|| NodeError::Internal("the attachment was not recorded".into()))?;
        self.install_watch(&id, &entry)?;
        if remote.is_some()
            && let Some(me) = self.me.upgrade()
        {
            me.start_remote_watch(id.clone());
        }
        Ok(json!({ "attachment": self.attachment_json(&id, &entry) }))
    }

    fn attachment_json(&self, id: &str, entry: &AttachmentEntry) -> Value {
        let (state, cycles, tripped_at, reason) = self
            .watches
            .lock()
            .ok()
            .and_then(|w| {
                let b = w.get(id)?.breaker().state().clone();
                let tripped = b.tripped;
                Some((
                    if tripped.is_some() { "tripped" } else { "armed" },
                    b.cycles,
                    tripped.map(|t| t.at),
                    tripped.map(|t| t.reason.to_string()),
                ))
            })
            .unwrap_or(("armed", 0, None, None));
        let s = &entry.spec;
        json!({
            "id": id,
            "monitor": s.monitor,
            "target": s.target,
            "trigger": s.trigger,
            "inject": s.inject.unwrap_or(true),
            "breaker": s.breaker,
            "state": state,
            "cycles": cycles,
            "tripped_at": tripped_at,
            "tripped_reason": reason,
            "attached_at": entry.attached_at,
            "monitor_conversations": entry.conversations,
        })
    }

    /// `monitor.list {monitor?, target?}`.
    pub async fn monitor_list(&self, monitor: Option<&str>, target: Option<&str>) -> NodeResult<Value> {
        let entries: Vec<(String, AttachmentEntry)> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .attachments
                .iter()
                .filter(|(_, a)| monitor.is_none_or(|m| a.spec.monitor == m))
                .filter(|(_, a)| {
                    target.is_none_or(|t| {
                        a.spec.target.agent.as_deref() == Some(t) || a.spec.target.conversation.as_deref() == Some(t)
                    })
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let list: Vec<Value> = entries.iter().map(|(id, e)| self.attachment_json(id, e)).collect();
        Ok(json!({ "attachments": list }))
    }

    /// `monitor.detach`: it stops evaluating at once; its conversations stay.
    pub async fn monitor_detach(&self, id: &str) -> NodeResult<Value> {
        let monitor = self.attachment_monitor(id).await?;
        {
            let mut cat = self.catalog.lock().await;
            let e = Event::MonitorDetached {
                attachment: id.to_string(),
            };
            self.commit(&mut cat, vec![e]).await?;
        }
        self.watches.lock().map_err(|_| poisoned())?.remove(id);
        self.forget_delegation(id);
        let next = self
            .queues
            .lock()
            .map_err(|_| poisoned())?
            .entry(monitor.clone())
            .or_default()
            .drop_attachment(id);
        self.follow(&monitor, next);
        Ok(json!({ "detached": true, "attachment": id }))
    }

    /// `monitor.rearm` (a human): a tripped breaker is reset.
    pub async fn monitor_rearm(&self, id: &str) -> NodeResult<Value> {
        self.attachment_monitor(id).await?;
        let events = {
            let mut w = self.watches.lock().map_err(|_| poisoned())?;
            let watch = w
                .get_mut(id)
                .ok_or_else(|| NodeError::NotFound(format!("attachment: {id:?} not found")))?;
            watch.breaker_mut().rearm(now_ms())
        };
        let rearmed = !events.is_empty();
        self.record_breaker(id, events).await?;
        Ok(json!({ "rearmed": rearmed, "attachment": id }))
    }

    async fn attachment_monitor(&self, id: &str) -> NodeResult<String> {
        self.catalog
            .lock()
            .await
            .monitors
            .attachments
            .get(id)
            .map(|a| a.spec.monitor.clone())
            .ok_or_else(|| NodeError::NotFound(format!("attachment: {id:?} not found")))
    }

    async fn record_breaker(&self, id: &str, events: Vec<monitor::BreakerEvent>) -> NodeResult<()> {
        if events.is_empty() {
            return Ok(());
        }
        let events = events
            .into_iter()
            .map(|event| Event::MonitorBreaker {
                attachment: id.to_string(),
                event,
            })
            .collect();
        let mut cat = self.catalog.lock().await;
        self.commit(&mut cat, events).await
    }

    /// One committed transcript event, given to every watch it concerns.
    async fn on_delta(self: &Arc<Self>, ev: &api::TranscriptEvent) {
        if self.watches.lock().map(|w| w.is_empty()).unwrap_or(true) {
            return;
        }
        let agent = self.conversation_agent(&ev.conversation).await;
        let now = now_ms();
        let delta = Delta {
            conversation: &ev.conversation,
            seq: ev.seq,
            speaker: &ev.speaker,
            text: &ev.text,
        };
        let mut fired = vec![];
        if let Ok(mut w) = self.watches.lock() {
            for (id, watch) in w.iter_mut() {
                let a = watch.attachment();
                let concerns = match a.target() {
                    Target::Agent(t) => agent.as_deref() == Some(t.as_str()),
                    Target::Conversation(c) => *c == ev.conversation,
                };
                if !concerns || agent.as_deref() == Some(a.monitor()) {
                    continue;
                }
                let monitor = a.monitor().to_string();
                let e = watch.evaluate(&delta, now);
                if !e.hits.is_empty() || !e.events.is_empty() {
                    fired.push((id.clone(), monitor, e));
                }
            }
        }
        self.fired(ev, fired, now).await;
    }

    /// Stores what the evaluations decided and feeds hits to the monitors'
    /// wake queues.
    async fn fired(&self, ev: &api::TranscriptEvent, fired: Vec<(String, String, monitor::Evaluation)>, now: u64) {
        for (id, monitor, e) in fired {
            let hit = !e.hits.is_empty();
            let mut events: Vec<Event> = e
                .events
                .into_iter()
                .map(|event| Event::MonitorBreaker {
                    attachment: id.clone(),
                    event,
                })
                .collect();
            if hit {
                events.push(Event::MonitorCursor {
                    attachment: id.clone(),
                    conversation: ev.conversation.clone(),
                    seq: ev.seq,
                });
            }
            {
                let mut cat = self.catalog.lock().await;
                if let Err(err) = self.commit(&mut cat, events).await {
                    tracing::error!(attachment = %id, error = %err, "could not record a monitor fact");
                }
            }
            if hit {
                let key = WakeKey {
                    attachment: id.clone(),
                    conversation: ev.conversation.clone(),
                };
                let action = self
                    .queues
                    .lock()
                    .map(|mut q| q.entry(monitor.clone()).or_default().hit(&key, e.hits, now))
                    .unwrap_or(Action::None);
                self.follow(&monitor, action);
            }
        }
    }

    /// Acts on what the wake queue asked for: a wake runs in the monitor's
    /// worker.
    fn follow(&self, monitor: &str, action: Action) {
        if let Action::Wake(_) = action {
            self.worker(monitor).notify_one();
        }
    }

    fn worker(&self, monitor: &str) -> Arc<Notify> {
        let Ok(mut workers) = self.workers.lock() else {
            return Arc::new(Notify::new());
        };
        if let Some(n) = workers.get(monitor) {
            return n.clone();
        }
        let n = Arc::new(Notify::new());
        workers.insert(monitor.to_string(), n.clone());
        tokio::spawn(run_wakes(self.me.clone(), monitor.to_string(), n.clone()));
        n
    }

    /// The pending wake of `monitor`, if its queue has one.
    fn pending_wake(&self, monitor: &str) -> Option<WakeKey> {
        let q = self.queues.lock().ok()?;
        match q.get(monitor)?.state() {
            monitor::WakeState::Pending { head, .. } => Some(head),
            _ => None,
        }
    }

    /// One wake: the breaker, the monitor's conversation, the trigger
    /// message, the turn. Errors are logged; the queue moves on.
    async fn wake(self: &Arc<Self>, monitor: &str, key: &WakeKey) -> bool {
        let allowed = {
            let Ok(mut w) = self.watches.lock() else {
                return false;
            };
            let Some(watch) = w.get_mut(&key.attachment) else {
                return false;
            };
            watch.breaker_mut().on_wake(now_ms())
        };
        match allowed {
            Ok(events) => {
                if let Err(e) = self.record_breaker(&key.attachment, events).await {
                    tracing::error!(error = %e, "could not record a wake");
                }
            }
            Err(Refused::Trips(events)) => {
                let _ = self.record_breaker(&key.attachment, events).await;
                self.trip(&key.attachment, &key.conversation).await;
                return false;
            }
            Err(Refused::Tripped) => return false,
        }
        let conversation = match self.monitor_conversation(monitor, key).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(monitor, error = %e, "the monitor's conversation could not be started");
                return false;
            }
        };
        let (batch, attachment) = {
            let batch = self.queues.lock().ok().and_then(|mut q| q.get_mut(monitor)?.start(key));
            let attachment = self
                .watches
                .lock()
                .ok()
                .and_then(|w| Some(w.get(&key.attachment)?.attachment().clone()));
            match (batch, attachment) {
                (Some(b), Some(a)) => (b, a),
                _ => return false,
            }
        };
        let text = monitor::trigger_message(&attachment, &batch);
        let Some(live) = self.live(&conversation) else {
            return true;
        };
        match live.send_turn(text, "system".into()).await {
            Ok(status) => {
                crate::live::turn_end(status, TURN_BOUND, TURN_SETTLE).await;
            }
            Err(e) => tracing::warn!(monitor, error = %e, "the trigger message was not delivered"),
        }
        true
    }

    /// The monitor's conversation for this target conversation: continued
    /// when paused, started when there is none (the monitor's other live
    /// conversation, if any, is paused first: one live conversation each).
    async fn monitor_conversation(&self, monitor: &str, key: &WakeKey) -> NodeResult<String> {
        let (known, live_other) = {
            let cat = self.catalog.lock().await;
            let known = cat
                .monitors
                .attachments
                .get(&key.attachment)
                .and_then(|a| a.conversations.get(&key.conversation).cloned())
                .and_then(|id| cat.conversations.get(&id).map(|c| (id, c.state)));
            let live = cat.live_conversation_of(monitor).map(|c| c.id.clone());
            (known, live)
        };
        let wanted = known
            .as_ref()
            .filter(|(_, s)| *s != api::ConversationState::Archived)
            .map(|(id, _)| id.clone());
        if let Some(other) = live_other
            && Some(&other) != wanted.as_ref()
        {
            self.conversations.conversation_pause(&other).await?;
        }
        match known {
            Some((id, api::ConversationState::Active | api::ConversationState::Starting)) => Ok(id),
            Some((id, api::ConversationState::Paused)) => {
                self.conversations
                    .conversation_continue(api::ConversationContinue {
                        conversation: id.clone(),
                        fresh: false,
                    })
                    .await?;
                Ok(id)
            }
            _ => {
                let c = self.conversations.conversation_start(monitor).await?;
                let mut cat = self.catalog.lock().await;
                let e = Event::MonitorConversation {
                    attachment: key.attachment.clone(),
                    target: key.conversation.clone(),
                    conversation: c.id.clone(),
                };
                self.commit(&mut cat, vec![e]).await?;
                Ok(c.id)
            }
        }
    }

    /// The breaker tripped: an emergency stop. The attachment stops waking
    /// and injecting (its breaker says so, durably); the target and the
    /// monitor's conversation are paused and left intact (a target on
    /// another member by its home, with the attachment's delegation); one
    /// needs-you.
    async fn trip(&self, attachment: &str, target_conversation: &str) {
        let (monitor, monitor_conv, remote) = {
            let cat = self.catalog.lock().await;
            let a = cat.monitors.attachments.get(attachment);
            (
                a.map(|a| a.spec.monitor.clone()).unwrap_or_default(),
                a.and_then(|a| a.conversations.get(target_conversation).cloned()),
                a.and_then(|a| a.spec.target.agent.as_deref())
                    .is_some_and(|t| t.contains('@')),
            )
        };
        if remote && let Err(e) = self.pause_remote_target(attachment, target_conversation).await {
            tracing::warn!(conversation = %target_conversation, error = %e, "could not pause the target on its home after a trip");
        }
        let dropped = self
            .queues
            .lock()
            .ok()
            .map(|mut q| q.entry(monitor.clone()).or_default().drop_attachment(attachment))
            .unwrap_or(Action::None);
        self.follow(&monitor, dropped);
        let reason = format!("monitor {monitor:?}: its breaker tripped");
        for c in std::iter::once(target_conversation.to_string()).chain(monitor_conv) {
            if self.live(&c).is_some()
                && let Err(e) = self.conversations.conversation_pause(&c).await
            {
                tracing::warn!(conversation = %c, error = %e, "could not pause after a trip");
            }
        }
        tracing::warn!(attachment, %monitor, "{reason}: both conversations paused until a human re-arms it");
        let payload = json!({
            "attachment": attachment, "monitor": monitor, "agent": monitor,
            "conversation": target_conversation, "reason": reason,
        });
        self.publish(api::methods::EVENT_MONITOR_TRIPPED, payload.clone());
        self.publish(api::methods::EVENT_SUPERVISION_NEEDS_YOU, payload);
    }
}

impl Monitors {
    /// A target conversation was archived: its monitor conversations are
    /// archived too, and hits still waiting for it are dropped.
    async fn target_archived(&self, target: &str) {
        let mine: Vec<(String, String, String)> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .attachments
                .iter()
                .filter_map(|(id, a)| Some((id.clone(), a.spec.monitor.clone(), a.conversations.get(target)?.clone())))
                .collect()
        };
        for (_, monitor, conversation) in mine {
            let next = self
                .queues
                .lock()
                .ok()
                .map(|mut q| q.entry(monitor.clone()).or_default().drop_conversation(target))
                .unwrap_or(Action::None);
            self.follow(&monitor, next);
            let archived = self
                .catalog
                .lock()
                .await
                .conversations
                .get(&conversation)
                .is_none_or(|c| c.state == api::ConversationState::Archived);
            if !archived && let Err(e) = self.conversations.conversation_terminate(&conversation).await {
                tracing::warn!(%conversation, error = %e, "could not archive a monitor conversation");
            }
        }
    }
}

/// Every committed transcript event, once, to the watches.
async fn run_watch(node: Weak<Monitors>) {
    let mut rx = match node.upgrade() {
        Some(n) => n.store().subscribe(),
        None => return,
    };
    loop {
        match rx.recv().await {
            Ok(e) => {
                let Some(n) = node.upgrade() else { return };
                if let Some(ev) = crate::transcript::as_transcript(&e) {
                    n.on_delta(&ev).await;
                } else if let Event::ConversationArchived { id, .. } = &e.event {
                    // Off the loop: archiving waits for the CLI to stop.
                    let (n, id) = (n.clone(), id.clone());
                    tokio::spawn(async move { n.target_archived(&id).await });
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::error!(missed, "the monitor watch loop fell behind: events were not evaluated");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// One monitor's wakes, one at a time.
async fn run_wakes(node: Weak<Monitors>, monitor: String, notify: Arc<Notify>) {
    loop {
        notify.notified().await;
        loop {
            let Some(n) = node.upgrade() else { return };
            let Some(key) = n.pending_wake(&monitor) else { break };
            let ran = n.wake(&monitor, &key).await;
            let next = n
                .queues
                .lock()
                .ok()
                .map(|mut q| {
                    let queue = q.entry(monitor.clone()).or_default();
                    if ran {
                        queue.finish()
                    } else {
                        // Not started (tripped, detached, no conversation): its batch goes.
                        queue.drop_attachment(&key.attachment)
                    }
                })
                .unwrap_or(Action::None);
            if next == Action::None && n.pending_wake(&monitor).is_none() {
                break;
            }
        }
    }
}
