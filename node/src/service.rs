//! The node's core: the catalog (behind one lock, so catalog commands apply in
//! log order), the live conversations, and every operation the API exposes.
//! Decisions come from `catalog` (pure); this module does the IO around them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use console_api::{self as api, ConversationState, Status};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::catalog::{Catalog, CatalogError, ConvEntry, PLANNED_PAUSE};
use crate::events::Event;
use crate::harness::{self, LaunchContext};
use crate::lifecycle::Transition;
use crate::live::{Live, LiveLimits, LiveParts, SendError};
use crate::runtime::{LaunchSpec, Runtime};
use crate::store::{Store, StoreError};
use crate::transcript::Transcripts;
use crate::util::{new_id, new_uuid};
use crate::validate;

/// Errors of node operations, each mapping to one API error code.
#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{message}")]
    Busy { message: String, retry_after_ms: u64 },
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
    /// Itself, for tasks that must not keep the node alive.
    pub(crate) me: std::sync::OnceLock<std::sync::Weak<Node>>,
    /// Dialogs supervision held for a human, by hold id.
    pub(crate) holds: Mutex<std::collections::BTreeMap<String, crate::supervise::Held>>,
    /// The newest seq when this node process opened the log: an audit attempt
    /// after it is of this run (its outcome is coming), one before it that has
    /// no outcome was cut off by a crash.
    pub(crate) run_from_seq: u64,
    /// Server-pushed events (`event.*`): kind and payload.
    pub(crate) events: tokio::sync::broadcast::Sender<(&'static str, Value)>,
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
    ) -> NodeResult<Arc<Node>> {
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

        let (exits, mut exit_rx) = mpsc::channel::<String>(256);
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
            me: std::sync::OnceLock::new(),
            holds: Mutex::new(std::collections::BTreeMap::new()),
            run_from_seq,
            events: tokio::sync::broadcast::channel(1024).0,
        });
        let _ = node.me.set(Arc::downgrade(&node));
        // The tokens of the CLIs that died with the last run die too.
        for id in &orphans {
            node.revoke_recorded_instance_tokens(id).await;
        }
        for (id, key_hash) in adoptable {
            let node = node.clone();
            tokio::spawn(async move { node.readopt(&id, key_hash).await });
        }
        let weak = Arc::downgrade(&node);
        tokio::spawn(async move {
            while let Some(id) = exit_rx.recv().await {
                let Some(node) = weak.upgrade() else { return };
                node.on_cli_exit(&id).await;
            }
        });
        Ok(node)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn runtime_name(&self) -> &'static str {
        self.runtime.name()
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

    /// Re-adopts a conversation whose guest outlived the node's previous run,
    /// or pauses it when the guest does not come back within the grace period.
    async fn readopt(&self, id: &str, key_hash: String) {
        let found = {
            let cat = self.catalog.lock().await;
            cat.conversation(id)
                .ok()
                .cloned()
                .and_then(|c| cat.agent(&c.agent).ok().map(|a| (c, a.record.clone())))
        };
        let Some((entry, agent)) = found else { return };
        let grace = self.cfg.readopt_grace;
        match self.spawn_cli(&entry, &agent, Spawn::Adopt { key_hash, grace }).await {
            Ok((live, _)) => {
                // The guest's CLI reads its fresh token from its token file;
                // the last run's tokens are revoked.
                self.revoke_recorded_instance_tokens(id).await;
                let note = "re-adopted: the guest came back after the node restarted";
                if let Err(e) = self.went_live(id, live, note.into()).await {
                    tracing::warn!(conversation = id, error = %e, "could not record the re-adoption");
                }
                tracing::info!(conversation = id, "re-adopted after restart");
            }
            Err(why) => {
                self.revoke_instance_tokens(id).await;
                self.revoke_recorded_instance_tokens(id).await;
                let reason = format!("node restarted: {why}");
                let mut cat = self.catalog.lock().await;
                if let Ok(e) = cat.decide_transition(id, Transition::Pause, &reason)
                    && self.commit(&mut cat, vec![e]).await.is_ok()
                {
                    drop(cat);
                    let _ = self
                        .transcripts
                        .append(id, "system", "lifecycle", format!("paused: {reason}"))
                        .await;
                }
            }
        }
    }

    /// A guest attached: its key's hash is what a restarted node re-adopts by.
    pub async fn record_guest_attached(&self, conversation: &str, key_hash: String) {
        let e = crate::events::Event::GuestAttached {
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
        let e = crate::events::Event::Guest {
            conversation: conversation.to_string(),
            what: what.to_string(),
            reason: reason.to_string(),
        };
        if let Err(e) = self.store.append(vec![e]).await {
            tracing::error!(error = %e, "could not record a guest event");
        }
    }

    /// The live conversation `id`, if its CLI is running.
    pub(crate) fn live(&self, id: &str) -> Option<Arc<Live>> {
        self.live.lock().ok().and_then(|m| m.get(id).cloned())
    }

    /// Publishes a server event to `events.subscribe` subscribers.
    pub(crate) fn publish(&self, kind: &'static str, payload: Value) {
        let _ = self.events.send((kind, payload));
    }

    /// Follows server events.
    pub fn subscribe_events(&self) -> tokio::sync::broadcast::Receiver<(&'static str, Value)> {
        self.events.subscribe()
    }

    /// (home, workspace) of an agent.
    pub(crate) fn agent_home_dirs(&self, agent: &str) -> (PathBuf, PathBuf) {
        let dir = self.agent_dir(agent);
        (dir.join("home"), dir.join("workspace"))
    }

    /// The agent's effective supervision policy.
    pub(crate) async fn supervision_policy(&self, agent: &str) -> supervision::Policy {
        let cat = self.catalog.lock().await;
        supervision::resolve(&self.cfg.supervision, cat.supervision.get(agent))
    }

    fn status_of(&self, c: &ConvEntry) -> Option<Status> {
        if c.state == ConversationState::Starting {
            return Some(Status::Busy);
        }
        self.live(&c.id).map(|l| l.status())
    }

    fn conv_wire(&self, c: &ConvEntry) -> api::Conversation {
        c.to_wire(self.status_of(c))
    }

    // ---- agents ----

    pub async fn agent_create(&self, p: api::AgentCreate) -> NodeResult<api::Agent> {
        let mut cat = self.catalog.lock().await;
        let name = p.name.clone();
        let e = cat.decide_create_agent(p)?;
        self.commit(&mut cat, vec![e]).await?;
        Ok(cat.agent(&name)?.to_wire())
    }

    pub async fn agent_get(&self, name: &str) -> NodeResult<api::Agent> {
        Ok(self.catalog.lock().await.agent(name)?.to_wire())
    }

    pub async fn agent_list(&self) -> Vec<api::Agent> {
        self.catalog.lock().await.agents.values().map(|a| a.to_wire()).collect()
    }

    pub async fn agent_update(&self, p: api::AgentUpdate) -> NodeResult<api::Agent> {
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

    /// Starts a conversation for `agent`, or returns its live one.
    pub async fn conversation_start(&self, agent: &str) -> NodeResult<api::Conversation> {
        let id = {
            let mut cat = self.catalog.lock().await;
            if let Some(live) = cat.live_conversation_of(agent) {
                return Ok(self.conv_wire(live));
            }
            let a = cat.check_can_start(agent)?;
            harness::adapter(&a.record.harness).map_err(|e| NodeError::Conflict(e.to_string()))?;
            let id = new_id("c-");
            let e = Event::ConversationCreated {
                id: id.clone(),
                agent: agent.to_string(),
                resume_ref: Some(new_uuid()),
            };
            self.commit(&mut cat, vec![e]).await?;
            id
        };
        self.launch(&id, false).await
    }

    /// Relaunches a paused conversation with the CLI's native resume.
    pub async fn conversation_continue(&self, id: &str) -> NodeResult<api::Conversation> {
        {
            let mut cat = self.catalog.lock().await;
            let e = cat.decide_transition(id, Transition::Continue, "")?;
            self.commit(&mut cat, vec![e]).await?;
        }
        self.launch(id, true).await
    }

    async fn launch(&self, id: &str, resume: bool) -> NodeResult<api::Conversation> {
        let (entry, agent) = {
            let cat = self.catalog.lock().await;
            let c = cat.conversation(id)?.clone();
            let a = cat.agent(&c.agent)?.record.clone();
            (c, a)
        };
        let how = if resume { Spawn::Resume } else { Spawn::Fresh };
        match self.spawn_cli(&entry, &agent, how).await {
            Ok((live, note)) => {
                let mut cat = self.catalog.lock().await;
                match cat.decide_transition(id, Transition::Launched, "") {
                    Ok(e) => {
                        self.commit(&mut cat, vec![e]).await?;
                        drop(cat);
                        self.went_live(id, live, note).await?;
                        let cat = self.catalog.lock().await;
                        Ok(self.conv_wire(cat.conversation(id)?))
                    }
                    Err(e) => {
                        // Paused or terminated while it was starting.
                        drop(cat);
                        live.shutdown().await;
                        self.revoke_instance_tokens(id).await;
                        Err(e.into())
                    }
                }
            }
            Err(reason) => {
                tracing::warn!(conversation = id, %reason, "launch failed");
                self.revoke_instance_tokens(id).await;
                let mut cat = self.catalog.lock().await;
                if let Ok(e) = cat.decide_transition(id, Transition::Pause, &format!("launch failed: {reason}")) {
                    self.commit(&mut cat, vec![e]).await?;
                }
                Err(NodeError::Internal(format!("could not launch the CLI: {reason}")))
            }
        }
    }

    /// A CLI is up for `id` (launched, resumed or re-adopted): it joins the
    /// live set, its token renewal and supervision start, and `note` goes to
    /// the transcript.
    async fn went_live(&self, id: &str, live: Arc<Live>, note: String) -> NodeResult<()> {
        if let Ok(mut m) = self.live.lock() {
            m.insert(id.to_string(), live);
        }
        self.start_renewal(id);
        if let Some(me) = self.me.get().and_then(|w| w.upgrade()) {
            me.start_supervision(id);
            me.start_stall_watch(id);
        }
        self.transcripts.append(id, "system", "lifecycle", note).await?;
        Ok(())
    }

    async fn spawn_cli(
        &self,
        c: &ConvEntry,
        agent: &crate::events::AgentRecord,
        how: Spawn,
    ) -> Result<(Arc<Live>, String), String> {
        let resume = !matches!(how, Spawn::Fresh);
        let adapter = harness::adapter(&agent.harness).map_err(|e| e.to_string())?;
        let home = self.agent_dir(&agent.name).join("home");
        let workspace = self.agent_dir(&agent.name).join("workspace");
        for dir in [&home, &workspace] {
            std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        }
        let resume_ref = c.resume_ref.clone().unwrap_or_default();
        let plan = adapter
            .plan(&LaunchContext {
                agent,
                home: &home,
                workspace: &workspace,
                resume_ref: &resume_ref,
                resume,
                self_exe: &self.cfg.self_exe,
                settings: self
                    .cfg
                    .harnesses
                    .get(&agent.harness)
                    .unwrap_or(&harness::HarnessSettings::default()),
            })
            .map_err(|e| e.to_string())?;
        for (rel, body) in &plan.files {
            let path = home.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
            }
            std::fs::write(&path, body).map_err(|e| format!("write {}: {e}", path.display()))?;
        }
        // Resume reading the CLI's session file where the committed transcript
        // ends, so lines it wrote after the last read (e.g. just before a crash)
        // are recorded now, and nothing twice.
        let transcript_offset = match &plan.transcript_file {
            Some(path) => {
                let len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
                let committed = self.store.transcript_cursor(&c.id).await.map_err(|e| e.to_string())?;
                committed.unwrap_or(0).min(len)
            }
            None => 0,
        };
        let mut env = base_env(&home, &c.id, &agent.name, self.cfg.self_exe.parent());
        let (token, token_file) = self
            .issue_and_record_instance_token(&c.id, agent, &home)
            .await
            .map_err(|e| e.to_string())?;
        env.push(("WARREN_TOKEN".into(), token));
        env.push(("WARREN_TOKEN_FILE".into(), token_file.display().to_string()));
        if let Some(url) = self.endpoint.get() {
            env.push(("WARREN_URL".into(), url.clone()));
        }
        env.extend(plan.env);
        let settings = self.cfg.harnesses.get(&agent.harness);
        let spec = LaunchSpec {
            conversation: c.id.clone(),
            agent: agent.name.clone(),
            harness: agent.harness.clone(),
            image: settings.and_then(|s| s.image.clone()),
            mounts: vec![home.clone(), workspace.clone()],
            resources: agent.resources.clone().unwrap_or_default(),
            program: plan.program,
            args: plan.args,
            cwd: workspace,
            env,
            rows: self.cfg.rows,
            cols: self.cfg.cols,
            status: Arc::new(move |s| adapter.status(s)),
        };
        let session = match how {
            Spawn::Adopt { key_hash, grace } => self.runtime.adopt(spec, key_hash, grace).await,
            Spawn::Fresh | Spawn::Resume => self.runtime.launch(spec).await,
        }
        .map_err(|e| e.to_string())?;
        let live = Live::start(LiveParts {
            id: c.id.clone(),
            agent: agent.name.clone(),
            session,
            harness: adapter,
            transcript_file: plan.transcript_file,
            transcript_offset,
            transcripts: self.transcripts.clone(),
            limits: LiveLimits {
                send_queue: self.cfg.send_queue,
                idle_timeout: self.cfg.send_idle_timeout,
                ack_timeout: self.cfg.send_ack_timeout,
            },
            on_exit: self.exits.clone(),
        });
        let note = if resume {
            format!("resumed: {} --resume {resume_ref}", agent.harness)
        } else {
            format!("launched: {} session {resume_ref}", agent.harness)
        };
        Ok((live, note))
    }

    pub(crate) fn agent_dir(&self, agent: &str) -> PathBuf {
        self.cfg.data_dir.join("agents").join(agent)
    }

    pub async fn conversation_pause(&self, id: &str) -> NodeResult<api::Conversation> {
        self.stop(id, Transition::Pause, PLANNED_PAUSE).await
    }

    pub async fn conversation_terminate(&self, id: &str) -> NodeResult<api::Conversation> {
        self.stop(id, Transition::Terminate, "terminated on request").await
    }

    async fn stop(&self, id: &str, t: Transition, reason: &str) -> NodeResult<api::Conversation> {
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
        self.drop_holds(id);
        let verb = if t == Transition::Pause { "paused" } else { "archived" };
        self.transcripts
            .append(id, "system", "lifecycle", format!("{verb}: {reason}"))
            .await?;
        Ok(api::Conversation {
            status: Status::Exited,
            ..wire
        })
    }

    /// The CLI of `id` exited by itself: an unplanned pause.
    async fn on_cli_exit(&self, id: &str) {
        let live = self.live.lock().ok().and_then(|mut m| m.remove(id));
        let Some(live) = live else { return };
        let reason = "the CLI exited";
        {
            let mut cat = self.catalog.lock().await;
            match cat.decide_transition(id, Transition::Pause, reason) {
                Ok(e) => {
                    if let Err(e) = self.commit(&mut cat, vec![e]).await {
                        tracing::error!(conversation = id, error = %e, "could not record the pause");
                    }
                }
                Err(_) => return,
            }
        }
        live.shutdown().await;
        self.revoke_instance_tokens(id).await;
        self.drop_holds(id);
        let _ = self
            .transcripts
            .append(id, "system", "lifecycle", format!("paused: {reason}"))
            .await;
    }

    /// Pauses every live conversation (the node is stopping).
    pub async fn pause_all(&self, reason: &str) {
        let ids: Vec<String> = self
            .live
            .lock()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for id in ids {
            if let Err(e) = self.stop(&id, Transition::Pause, reason).await {
                tracing::warn!(conversation = %id, error = %e, "could not pause on shutdown");
            }
        }
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

    async fn require_live(&self, id: &str) -> NodeResult<Arc<Live>> {
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

    pub async fn live_session(&self, id: &str) -> NodeResult<Arc<dyn crate::runtime::Session>> {
        Ok(self.require_live(id).await?.session.clone())
    }

    pub async fn screen(&self, id: &str) -> NodeResult<api::Screen> {
        let live = self.require_live(id).await?;
        let s = live.session.screen();
        Ok(api::Screen {
            rows: s.rows,
            cols: s.cols,
            lines: s.lines,
            cursor: s.cursor,
            status: live.status(),
        })
    }

    pub async fn send_message(&self, p: api::SendMessage, speaker: &str) -> NodeResult<api::SendMessageResult> {
        validate::message_text(&p.text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let live = self.require_live(&p.conversation).await?;
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

/// The CLI's environment. The node's own executable directory leads `PATH`, so
/// the CLI can call `warren` as a tool (with its instance token in `WARREN_TOKEN`).
/// How a CLI is brought up: a new session, the CLI's native resume, or the
/// re-adoption of a guest that outlived the node.
enum Spawn {
    Fresh,
    Resume,
    Adopt { key_hash: String, grace: Duration },
}

fn base_env(home: &Path, conversation: &str, agent: &str, tools: Option<&Path>) -> Vec<(String, String)> {
    let mut path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    if let Some(dir) = tools {
        path = format!("{}:{path}", dir.display());
    }
    vec![
        ("PATH".into(), path),
        ("HOME".into(), home.display().to_string()),
        ("TERM".into(), "xterm-256color".into()),
        ("LANG".into(), "C.UTF-8".into()),
        ("WARREN_CONVERSATION".into(), conversation.into()),
        ("WARREN_AGENT".into(), agent.into()),
    ]
}
