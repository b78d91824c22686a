//! The node's core: the catalog (behind one lock, so catalog commands apply in
//! log order), the live conversations, and every operation the API exposes.
//! Decisions come from `catalog` (pure); this module does the IO around them.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use console_api::{self as api, ConversationState, Status};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::live::{Live, SendError};
use crate::transcript::Transcripts;
use node_runtime::harness;
use node_runtime::runtime::Runtime;
use node_store::catalog::{Catalog, CatalogError, ConvEntry};
use node_store::events::Event;
use node_store::lifecycle::Transition;
use node_store::store::{Store, StoreError};
use node_store::validate;

/// Errors of node operations, each mapping to one API error code.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    /// A bare name several members home (-32009 with the candidates).
    #[error("{message}")]
    Ambiguous { message: String, candidates: Vec<String> },
    #[error("{0}")]
    Forbidden(String),
    #[error("{message}")]
    Busy { message: String, retry_after_ms: u64 },
    /// Another node could not be reached (`node` names it).
    #[error("{message}")]
    Unreachable { node: String, message: String },
    /// The CLI could not be brought up; `setting` names what to fix in the
    /// node's setup when that is the cause.
    #[error("{message}")]
    LaunchFailed {
        message: String,
        setting: Option<String>,
        conversation: String,
    },
    /// The agent's budget cannot cover the next step (-32013).
    #[error("{message}")]
    PausedForBudget {
        message: String,
        retry_after_ms: Option<u64>,
        state: &'static str,
    },
    #[error("{0}")]
    Internal(String),
}

impl From<CatalogError> for NodeError {
    fn from(e: CatalogError) -> NodeError {
        match e {
            CatalogError::Invalid(i) => NodeError::Invalid(i.to_string()),
            CatalogError::NotFound(m) => NodeError::NotFound(m),
            CatalogError::Conflict(m) => NodeError::Conflict(m),
            CatalogError::Forbidden(m) => NodeError::Forbidden(m),
        }
    }
}

impl From<StoreError> for NodeError {
    fn from(e: StoreError) -> NodeError {
        tracing::error!(error = %e, "store error");
        NodeError::Internal("the node could not read or write its store".into())
    }
}

impl From<SendError> for NodeError {
    fn from(e: SendError) -> NodeError {
        match e {
            SendError::QueueFull(_) => NodeError::Busy {
                message: e.to_string(),
                retry_after_ms: 500,
            },
            SendError::NotIdle { .. } => NodeError::Busy {
                message: e.to_string(),
                retry_after_ms: 1000,
            },
            SendError::NotTaken(_) | SendError::Ended => NodeError::Conflict(e.to_string()),
            SendError::Write(_) | SendError::Store(_) => NodeError::Internal(e.to_string()),
        }
    }
}

pub type NodeResult<T> = Result<T, NodeError>;

/// Tunables of the node core.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    pub node_id: String,
    pub data_dir: PathBuf,
    /// The executable that provides `fake-cli` (normally this node's own).
    pub self_exe: PathBuf,
    pub rows: u16,
    pub cols: u16,
    pub send_queue: usize,
    pub send_idle_timeout: Duration,
    pub send_ack_timeout: Duration,
    /// Lifetime of a conversation's instance token (renewed at half of it).
    pub instance_token_ttl: Duration,
    /// Global supervision defaults and the master switch.
    pub supervision: supervision::SupervisionConfig,
    /// `[harnesses.NAME]`: per-CLI program and environment.
    pub harnesses: std::collections::BTreeMap<String, harness::HarnessSettings>,
    /// After a restart, how long to wait for guests to come back (0: pause).
    pub readopt_grace: Duration,
    /// `[tools.NAME]`: the owner-defined tools agents can be granted.
    pub tools: std::collections::BTreeMap<String, node_store::tools::OwnerTool>,
    /// `[mail]`: each sender's rate.
    pub mail_rate: mailbox::RateLimit,
    /// `[budget] max_wait_secs`: the longest wait for accrual.
    pub budget_max_wait: Duration,
    /// `[workspaces] root`: where conversations' worktrees are made.
    pub worktrees: PathBuf,
}

/// What the core hands the conversations subsystem at start: the
/// conversations whose guest may come back (id, key hash), and the exits
/// the live conversations report.
pub struct Startup {
    pub adoptable: Vec<(String, String)>,
    pub exits: mpsc::Receiver<String>,
}

pub struct Node {
    pub(crate) cfg: CoreConfig,
    pub(crate) store: Store,
    pub(crate) catalog: tokio::sync::Mutex<Catalog>,
    pub(crate) live: Mutex<HashMap<String, Arc<Live>>>,
    pub(crate) transcripts: Arc<Transcripts>,
    pub(crate) runtime: Arc<dyn Runtime>,
    pub(crate) exits: mpsc::Sender<String>,
    pub(crate) root: Arc<capabilities::RootKey>,
    /// Revoked token ids, mirrored from the catalog for a lock-cheap check per call.
    pub(crate) revoked: std::sync::RwLock<std::collections::HashSet<String>>,
    /// Revocation ids of the instance tokens issued per live conversation.
    pub(crate) instance_tokens: Mutex<HashMap<String, Vec<String>>>,
    /// The API endpoint, handed to CLIs with their instance token.
    pub(crate) endpoint: std::sync::OnceLock<String>,
    /// With TLS: the API's certificate (PEM), copied into every home so the
    /// conversation's own `warren` tools trust the node (`WARREN_TOKEN_FILE`'s
    /// directory, `node-cert.pem`).
    pub(crate) tls_cert: std::sync::OnceLock<std::path::PathBuf>,
    /// Itself, for tasks that must not keep the node alive.
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Node>>,
    /// The newest seq when this node process opened the log: an audit attempt
    /// after it is of this run (its outcome is coming), one before it that has
    /// no outcome was cut off by a crash.
    pub(crate) run_from_seq: u64,
    /// Server-pushed events (`event.*`): kind and payload.
    pub(crate) events: tokio::sync::broadcast::Sender<(&'static str, Value)>,
    /// The results of `sendMessage` calls that named an idempotency key.
    pub(crate) sends: crate::idempotent::Recent<api::SendMessageResult>,
    /// The clock the mail rate limits are read on.
    pub(crate) started: std::time::Instant,
}

impl Node {
    /// Folds the catalog from the log, pauses every conversation that was
    /// live when the node last stopped (its process is gone), and starts the
    /// task that pauses conversations whose CLI exits.
    pub async fn open(
        cfg: CoreConfig,
        store: Store,
        runtime: Arc<dyn Runtime>,
        root: Arc<capabilities::RootKey>,
    ) -> NodeResult<(Arc<Node>, Startup)> {
        let run_from_seq = store.max_seq().await?;
        let events = store.catalog_events().await?;
        let mut catalog = Catalog::fold(&events);
        let transcripts = Arc::new(Transcripts::new(store.clone()));

        // Guests may have outlived the node: those get a grace period to come
        // back (re-adoption); every other live conversation's CLI is gone.
        let can_adopt = runtime.can_adopt() && !cfg.readopt_grace.is_zero();
        type IdAndKey = (String, String);
        let (adoptable, orphans): (Vec<IdAndKey>, Vec<IdAndKey>) = catalog
            .live_conversations()
            .map(|c| (c.id.clone(), c.guest_key.clone().unwrap_or_default()))
            .partition(|(_, key)| can_adopt && !key.is_empty());
        let orphans: Vec<String> = orphans.into_iter().map(|(id, _)| id).collect();
        if !orphans.is_empty() {
            let reason = "node restarted: the CLI process was gone";
            let mut out = vec![];
            for id in &orphans {
                out.push(catalog.decide_transition(id, Transition::Pause, reason)?);
            }
            for e in store.append(out).await? {
                catalog.apply(&e);
            }
            for id in &orphans {
                transcripts
                    .append(id, "system", "lifecycle", format!("paused: {reason}"))
                    .await?;
            }
            tracing::info!(
                count = orphans.len(),
                "conversations recorded as live were paused after restart"
            );
        }

        let (exits, exit_rx) = mpsc::channel::<String>(256);
        let revoked = std::sync::RwLock::new(catalog.revoked.iter().cloned().collect());
        let node = Arc::new(Node {
            cfg,
            store,
            catalog: tokio::sync::Mutex::new(catalog),
            live: Mutex::new(HashMap::new()),
            transcripts,
            runtime,
            exits,
            root,
            revoked,
            instance_tokens: Mutex::new(HashMap::new()),
            endpoint: std::sync::OnceLock::new(),
            tls_cert: std::sync::OnceLock::new(),
            me: std::sync::OnceLock::new(),
            run_from_seq,
            events: tokio::sync::broadcast::channel(1024).0,
            sends: Default::default(),
            started: std::time::Instant::now(),
        });
        let _ = node.me.set(Arc::downgrade(&node));
        // The tokens of the CLIs that died with the last run die too.
        for id in &orphans {
            node.revoke_recorded_instance_tokens(id).await;
        }
        Ok((
            node,
            Startup {
                adoptable,
                exits: exit_rx,
            },
        ))
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn runtime_name(&self) -> &'static str {
        self.runtime.name()
    }

    /// What is wrong in the harnesses' setup that can be checked at any
    /// time: the settings the node owns, and on the local runtime each
    /// program (`warren up` warns of these at start, `node.info` says them).
    /// The model endpoints and a Docker node's images are checked at start.
    pub fn harness_problems(&self) -> Vec<node_runtime::harness::setup::SetupProblem> {
        use node_runtime::harness::setup;
        let harnesses = &self.cfg.harnesses;
        let mut problems = setup::settings_problems(harnesses);
        if self.runtime_name() == "local" {
            let path = std::env::var("PATH").unwrap_or_default();
            problems.extend(setup::local_problems(harnesses, &self.cfg.self_exe, &path));
        }
        problems
    }

    /// A copy of the catalog (for replay checks and diagnostics).
    pub async fn catalog_snapshot(&self) -> Catalog {
        self.catalog.lock().await.clone()
    }

    pub(crate) async fn commit(&self, catalog: &mut Catalog, events: Vec<Event>) -> NodeResult<()> {
        for e in self.store.append(events).await? {
            catalog.apply(&e);
        }
        Ok(())
    }

    /// A guest attached: its key's hash is what a restarted node re-adopts by.
    pub async fn record_guest_attached(&self, conversation: &str, key_hash: String) {
        let e = node_store::events::Event::GuestAttached {
            conversation: conversation.to_string(),
            key_hash,
        };
        let mut cat = self.catalog.lock().await;
        if let Err(e) = self.commit(&mut cat, vec![e]).await {
            tracing::error!(error = %e, "could not record an attached guest");
        }
    }

    /// The conversations whose CLI may be running: live ones, and those the
    /// catalog records as starting or active (e.g. waiting for their guest to
    /// come back after a restart). The reaper leaves their containers alone.
    pub async fn owned_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .live
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        let cat = self.catalog.lock().await;
        ids.extend(cat.live_conversations().map(|c| c.id.clone()));
        ids.sort();
        ids.dedup();
        ids
    }

    /// Records what the node did to or refused from a guest (the audit log).
    pub async fn record_guest_event(&self, conversation: &str, what: &str, reason: &str) {
        let e = node_store::events::Event::Guest {
            conversation: conversation.to_string(),
            what: what.to_string(),
            reason: reason.to_string(),
            count: None,
            source: None,
        };
        if let Err(e) = self.store.append(vec![e]).await {
            tracing::error!(error = %e, "could not record a guest event");
        }
    }

    /// Records refused guest hellos of one address (one record, their count),
    /// and says so in one log line.
    pub async fn record_guest_refusals(&self, r: &node_runtime::runtime::guest_gate::Refused) {
        tracing::warn!(source = %r.source, count = r.count, conversation = %r.conversation, reason = %r.reason, "guest hellos refused");
        let e = node_store::events::Event::Guest {
            conversation: r.conversation.clone(),
            what: "refused".into(),
            reason: r.reason.clone(),
            count: Some(r.count),
            source: Some(r.source.to_string()),
        };
        if let Err(e) = self.store.append(vec![e]).await {
            tracing::error!(error = %e, "could not record refused guests");
        }
    }

    /// The live conversation `id`, if its CLI is running.
    pub(crate) fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live.lock().ok().and_then(|m| m.get(id).cloned())
    }

    /// Publishes a server event to `events.subscribe` subscribers.
    pub(crate) fn publish(&self, kind: &'static str, mut payload: Value) {
        // A hold's dialog may show a secret value: subscribers get it redacted.
        node_store::redact::redact_value(&self.store.redaction().matcher(), &mut payload);
        let _ = self.events.send((kind, payload));
    }

    /// Follows server events.
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<(&'static str, Value)> {
        self.events.subscribe()
    }

    /// Where conversations' worktrees are made (`[workspaces] root`).
    pub(crate) fn worktrees_root(&self) -> PathBuf {
        self.cfg.worktrees.clone()
    }

    pub(crate) fn agent_dir(&self, agent: &str) -> PathBuf {
        self.cfg.data_dir.join("agents").join(agent)
    }

    /// (home, workspace) of an agent.
    pub(crate) fn agent_home_dirs(&self, agent: &str) -> (PathBuf, PathBuf) {
        let dir = self.agent_dir(agent);
        (dir.join("home"), dir.join("workspace"))
    }

    /// The agent's effective supervision policy, under the global defaults in
    /// force now (a `config.set` applies to the next decision).
    pub(crate) async fn supervision_policy(&self, agent: &str) -> supervision::Policy {
        let cat = self.catalog.lock().await;
        supervision::resolve(
            cat.supervision_defaults(&self.cfg.supervision),
            cat.supervision.get(agent),
        )
    }

    fn status_of(&self, c: &ConvEntry) -> Option<Status> {
        if c.state == ConversationState::Starting {
            return Some(Status::Busy);
        }
        self.live(&c.id).map(|l| l.status())
    }

    pub(crate) fn conv_wire(&self, c: &ConvEntry) -> api::Conversation {
        let mut w = c.to_wire(self.status_of(c));
        w.budget = self
            .live(&c.id)
            .and_then(|l| node_store::folds::budget::label(l.budget_phase()));
        w
    }

    // ---- agents ----

    pub async fn agent_create(&self, p: api::AgentCreate) -> NodeResult<api::Agent> {
        check_harness(&p.harness)?;
        if let Some(g) = &p.grants {
            node_store::tools::check_grants(&self.cfg.tools, &g.tools)
                .map_err(|e| NodeError::Invalid(e.to_string()))?;
        }
        let budget = match &p.budget {
            Some(b) => Some(node_store::folds::budget::create_event(&p.name, b).map_err(NodeError::Invalid)?),
            None => None,
        };
        let name = p.name.clone();
        let Some(ask) = p.workspace.clone() else {
            let mut cat = self.catalog.lock().await;
            let e = cat.decide_create_agent(p)?;
            self.commit(&mut cat, std::iter::once(e).chain(budget).collect())
                .await?;
            return Ok(cat.agent(&name)?.to_wire());
        };
        // The name and the rest are checked before git runs (a clone can
        // take a while), and again after: a racing create of the same name
        // loses, and its clone is removed.
        self.catalog.lock().await.decide_create_agent(p.clone())?;
        let agent_dir = self.agent_dir(&name);
        let docker = self.runtime_name() == "docker";
        let resolved =
            crate::workspace::agent::resolve(&ask, &self.cfg.data_dir, &agent_dir, &self.worktrees_root(), docker)
                .await
                .map_err(NodeError::Invalid)?;
        let mut cat = self.catalog.lock().await;
        let mut e = match cat.decide_create_agent(p) {
            Ok(e) => e,
            Err(err) => {
                if resolved.url.is_some() {
                    let _ = std::fs::remove_dir_all(&resolved.repo);
                }
                return Err(err.into());
            }
        };
        if let Event::AgentCreated { agent } = &mut e {
            agent.workspace = Some(resolved);
        }
        self.commit(&mut cat, std::iter::once(e).chain(budget).collect())
            .await?;
        Ok(cat.agent(&name)?.to_wire())
    }

    pub async fn agent_get(&self, name: &str) -> NodeResult<api::Agent> {
        Ok(self.catalog.lock().await.agent(name)?.to_wire())
    }

    pub async fn agent_list(&self) -> Vec<api::Agent> {
        self.catalog.lock().await.agents.values().map(|a| a.to_wire()).collect()
    }

    pub async fn agent_update(&self, p: api::AgentUpdate) -> NodeResult<api::Agent> {
        if let Some(g) = &p.grants {
            node_store::tools::check_grants(&self.cfg.tools, &g.tools)
                .map_err(|e| NodeError::Invalid(e.to_string()))?;
        }
        let mut cat = self.catalog.lock().await;
        let name = p.agent.clone();
        let e = cat.decide_update_agent(p)?;
        self.commit(&mut cat, vec![e]).await?;
        Ok(cat.agent(&name)?.to_wire())
    }

    pub async fn agent_archive(&self, name: &str) -> NodeResult<api::Agent> {
        let mut cat = self.catalog.lock().await;
        let e = cat.decide_archive_agent(name)?;
        self.commit(&mut cat, vec![e]).await?;
        Ok(cat.agent(name)?.to_wire())
    }

    // ---- conversations ----

    /// Stops a conversation's CLI (pause or terminate): the transition, the
    /// CLI shut down, its instance tokens revoked, a system line.
    pub(crate) async fn stop(&self, id: &str, t: Transition, reason: &str) -> NodeResult<api::Conversation> {
        let wire = {
            let mut cat = self.catalog.lock().await;
            let e = cat.decide_transition(id, t, reason)?;
            self.commit(&mut cat, vec![e]).await?;
            self.conv_wire(cat.conversation(id)?)
        };
        let live = self.live.lock().ok().and_then(|mut m| m.remove(id));
        if let Some(live) = live {
            live.shutdown().await;
        }
        self.revoke_instance_tokens(id).await;
        let verb = if t == Transition::Pause { "paused" } else { "archived" };
        self.transcripts
            .append(id, "system", "lifecycle", format!("{verb}: {reason}"))
            .await?;
        Ok(api::Conversation {
            status: Status::Exited,
            ..wire
        })
    }

    pub async fn conversation_get(&self, id: &str) -> NodeResult<api::Conversation> {
        let cat = self.catalog.lock().await;
        Ok(self.conv_wire(cat.conversation(id)?))
    }

    pub async fn conversation_list(&self, p: api::ConversationList) -> NodeResult<Vec<api::Conversation>> {
        let cat = self.catalog.lock().await;
        if let Some(agent) = &p.agent {
            cat.agent(agent)?;
        }
        Ok(cat
            .conversations
            .values()
            .filter(|c| p.agent.as_ref().is_none_or(|a| &c.agent == a))
            .filter(|c| p.state.is_none_or(|s| c.state == s))
            .map(|c| self.conv_wire(c))
            .collect())
    }

    /// The id of `agent`'s live conversation, if any (`NotFound` for no such agent).
    pub(crate) async fn live_conversation_of_agent(&self, agent: &str) -> NodeResult<Option<String>> {
        let cat = self.catalog.lock().await;
        cat.agent(agent)?;
        Ok(cat.live_conversation_of(agent).map(|c| c.id.clone()))
    }

    /// The agent a conversation belongs to.
    pub async fn conversation_agent(&self, id: &str) -> Option<String> {
        self.catalog.lock().await.conversations.get(id).map(|c| c.agent.clone())
    }

    /// Whether automatic messages to `conversation` (mail wake-ups, nudges,
    /// monitor advice, a task's repairs) are held: a human took over the
    /// task it works on, until `task.resume_auto`.
    pub(crate) async fn automatic_messages_held(&self, conversation: &str) -> bool {
        let cat = self.catalog.lock().await;
        cat.tasks
            .of_conversation(conversation)
            .is_some_and(|t| !t.is_terminal() && t.takeover.is_some())
    }

    /// The worker's conversation of task `id` (what authorizes a call on it).
    pub async fn task_conversation(&self, id: &str) -> Option<String> {
        self.catalog
            .lock()
            .await
            .tasks
            .by_id
            .get(id)
            .map(|t| t.conversation.clone())
    }

    pub(crate) async fn require_live(&self, id: &str) -> NodeResult<Arc<Live>> {
        if let Some(l) = self.live(id) {
            return Ok(l);
        }
        let cat = self.catalog.lock().await;
        let c = cat.conversation(id)?;
        Err(NodeError::Conflict(format!(
            "conversation {id} is {} and has no running CLI",
            c.state.as_str()
        )))
    }

    pub async fn live_session(&self, id: &str) -> NodeResult<Arc<dyn node_runtime::runtime::Session>> {
        Ok(self.require_live(id).await?.session.clone())
    }

    /// `conversation.screen`: the text, and with `cells` the styled runs.
    pub async fn screen(&self, p: &api::ScreenRead) -> NodeResult<api::Screen> {
        let live = self.require_live(&p.conversation).await?;
        let s = if p.cells {
            live.session.styled_screen()
        } else {
            live.session.screen()
        };
        Ok(api::Screen {
            rows: s.rows,
            cols: s.cols,
            lines: s.lines,
            cursor: s.cursor,
            status: live.status(),
            cells: s.styled,
        })
    }

    /// `conversation.sendMessage`: with an idempotency key, a retry by the
    /// same speaker in the same conversation within 10 minutes gets the first
    /// call's result and types nothing.
    pub async fn send_message(&self, p: api::SendMessage, speaker: &str) -> NodeResult<api::SendMessageResult> {
        let key = match &p.idempotency_key {
            Some(k) if k.is_empty() || k.chars().count() > 128 || k.chars().any(char::is_control) => {
                return Err(NodeError::Invalid(
                    "idempotency_key: 1 to 128 characters, no control characters".into(),
                ));
            }
            Some(k) => Some(format!("{speaker}\u{0}{}\u{0}{k}", p.conversation)),
            None => None,
        };
        self.sends
            .once(key.as_deref(), || self.send_message_now(p, speaker))
            .await
    }

    async fn send_message_now(&self, p: api::SendMessage, speaker: &str) -> NodeResult<api::SendMessageResult> {
        validate::message_text(&p.text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let live = self.require_live(&p.conversation).await?;
        let refused = self
            .catalog
            .lock()
            .await
            .budgets
            .refuse_send(&live.agent, node_store::util::now_ms());
        if let Some(r) = refused {
            return Err(NodeError::PausedForBudget {
                message: r.message,
                retry_after_ms: r.retry_after_ms,
                state: r.state,
            });
        }
        let d = live.send_message(p.text, speaker.to_string()).await?;
        Ok(api::SendMessageResult {
            message_id: d.message_id,
            delivered_at: d.delivered_at,
            seq: d.seq,
        })
    }

    pub async fn send_keys(&self, p: api::SendKeys) -> NodeResult<()> {
        if p.keys.len() > validate::MAX_KEYS_BYTES {
            return Err(NodeError::Invalid(format!(
                "keys: {} bytes is over the limit of {}",
                p.keys.len(),
                validate::MAX_KEYS_BYTES
            )));
        }
        let live = self.require_live(&p.conversation).await?;
        live.session
            .write(p.keys.into_bytes())
            .await
            .map_err(|e| NodeError::Conflict(e.to_string()))
    }

    pub async fn resize(&self, p: api::Resize) -> NodeResult<()> {
        if !(2..=1000).contains(&p.rows) || !(10..=1000).contains(&p.cols) {
            return Err(NodeError::Invalid(format!(
                "rows/cols: {}x{} is outside 2..=1000 x 10..=1000",
                p.rows, p.cols
            )));
        }
        let live = self.require_live(&p.conversation).await?;
        live.session
            .resize(p.rows, p.cols)
            .await
            .map_err(|e| NodeError::Conflict(e.to_string()))
    }

    pub async fn transcript_read(&self, p: api::TranscriptRead) -> NodeResult<api::TranscriptPage> {
        self.catalog.lock().await.conversation(&p.conversation)?;
        let from = match (p.after_seq, p.from_seq) {
            (Some(_), Some(_)) => {
                return Err(NodeError::Invalid("after_seq and from_seq: give at most one".into()));
            }
            (Some(a), None) => a.saturating_add(1),
            (None, Some(f)) => f.max(1),
            (None, None) => 1,
        };
        let limit = p.limit.unwrap_or(100);
        if limit == 0 || limit > 1000 {
            return Err(NodeError::Invalid(format!("limit: {limit} is outside 1..=1000")));
        }
        let events = self.store.transcript_from(&p.conversation, from, limit).await?;
        let next_seq = events.last().map(|e| e.seq + 1).unwrap_or(from);
        Ok(api::TranscriptPage { events, next_seq })
    }

    /// Checks a subscription target exists.
    pub async fn check_subscribe_target(&self, p: &api::TranscriptSubscribe) -> NodeResult<()> {
        let cat = self.catalog.lock().await;
        match (&p.conversation, &p.agent) {
            (Some(c), None) => {
                cat.conversation(c)?;
            }
            (None, Some(a)) => {
                cat.agent(a)?;
                if p.from_seq.is_some() {
                    return Err(NodeError::Invalid(
                        "from_seq: only with `conversation` (seqs are per conversation)".into(),
                    ));
                }
            }
            _ => {
                return Err(NodeError::Invalid(
                    "give exactly one of `conversation` and `agent`".into(),
                ));
            }
        }
        Ok(())
    }
}

/// A harness an agent may be given on this node: a known name (the catalog
/// checks that) with an adapter here.
fn check_harness(harness: &str) -> NodeResult<()> {
    validate::harness(harness).map_err(|e| NodeError::Invalid(e.to_string()))?;
    harness::setup::check_launchable(harness).map_err(|p| NodeError::Invalid(p.message))
}
