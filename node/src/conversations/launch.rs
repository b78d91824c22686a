//! Bringing a conversation's CLI up and noticing it go: `start`, `continue`
//! (the CLI's native resume, a fresh launch when there is nothing to resume,
//! or `fresh: true`), the re-adoption of a guest that outlived the node, and
//! the pause an exit leaves (with the CLI's exit code and last words). The
//! decisions are `exits` (pure); this is the IO around them.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use console_api::{self as api, Status};

use super::Conversations;
use crate::live::{Live, LiveLimits, LiveParts};
use crate::service::{NodeError, NodeResult};
use crate::tools::mount;
use node_runtime::exits::{self, Relaunch, SessionStore};
use node_runtime::harness::{self, HarnessError, LaunchContext, LaunchPlan, setup};
use node_runtime::runtime::{LaunchSpec, RuntimeError};
use node_store::catalog::{Catalog, ConvEntry};
use node_store::events::{AgentRecord, Event, FreshStart};
use node_store::lifecycle::Transition;
use node_store::util::{new_id, new_uuid};

/// How long `start` / `continue` wait for the CLI to be ready for input (or
/// to exit) before they answer; a CLI still starting then answers BUSY.
const READY_BOUND: Duration = Duration::from_secs(10);

/// How a CLI is brought up: a new session, the CLI's native resume, or the
/// re-adoption of a guest that outlived the node.
pub(crate) enum Spawn {
    Fresh,
    /// A fresh launch into the CLI's own login flow.
    Login,
    Resume,
    Adopt {
        key_hash: String,
        grace: Duration,
    },
}

/// Why a launch did not happen: the node's setup (the setting to fix) or the
/// node itself.
#[derive(Debug)]
pub(crate) struct LaunchError {
    /// The setting to fix, when the node's setup is the cause.
    setting: Option<String>,
    message: String,
    internal: bool,
}

impl LaunchError {
    fn setup(setting: impl Into<String>, message: impl Into<String>) -> LaunchError {
        LaunchError {
            setting: Some(setting.into()),
            message: message.into(),
            internal: false,
        }
    }

    fn internal(message: impl std::fmt::Display) -> LaunchError {
        LaunchError {
            setting: None,
            message: message.to_string(),
            internal: true,
        }
    }

    fn into_node_error(self, conversation: &str) -> NodeError {
        if self.internal {
            return NodeError::Internal(format!("could not launch the CLI: {}", self.message));
        }
        NodeError::LaunchFailed {
            message: format!(
                "conversation {conversation}: could not launch the CLI: {}",
                self.message
            ),
            setting: self.setting,
            conversation: conversation.to_string(),
        }
    }
}

impl std::fmt::Display for LaunchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<setup::SetupProblem> for LaunchError {
    fn from(p: setup::SetupProblem) -> LaunchError {
        LaunchError::setup(p.setting, p.message)
    }
}

impl From<RuntimeError> for LaunchError {
    fn from(e: RuntimeError) -> LaunchError {
        match e {
            RuntimeError::Setup { setting, reason } => LaunchError::setup(setting, reason),
            other => LaunchError {
                setting: None,
                message: other.to_string(),
                internal: false,
            },
        }
    }
}

impl Conversations {
    /// Re-adopts a conversation whose guest outlived the node's previous run,
    /// or pauses it when the guest does not come back within the grace period.
    pub(crate) async fn readopt(&self, id: &str, key_hash: String) {
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

    /// Starts a conversation for `agent`, or returns its live one. An agent
    /// with a workspace has it leased in the same commit that creates the
    /// conversation (two racing starts cannot both hold one path), then its
    /// worktree made before the CLI spawns.
    pub async fn conversation_start(&self, agent: &str) -> NodeResult<api::Conversation> {
        let id = new_id("c-");
        let record = {
            let cat = self.catalog.lock().await;
            if let Some(live) = cat.live_conversation_of(agent) {
                return Ok(self.conv_wire(live));
            }
            cat.check_can_start(agent)?.record.clone()
        };
        let planned = self.plan_workspace(&record, &id).await?;
        {
            let mut cat = self.catalog.lock().await;
            if let Some(live) = cat.live_conversation_of(agent) {
                return Ok(self.conv_wire(live));
            }
            let a = cat.check_can_start(agent)?;
            // An agent created before this node lost an adapter.
            setup::check_launchable(&a.record.harness).map_err(|p| NodeError::LaunchFailed {
                message: format!("agent {agent:?}: {p}"),
                setting: Some(p.setting),
                conversation: String::new(),
            })?;
            let mut events = vec![Self::created(&id, agent, false)];
            if let Some(p) = &planned {
                let l = &p.lease;
                events.push(cat.decide_lease(&id, &l.path, &l.branch, &l.baseline)?);
            }
            self.commit(&mut cat, events).await?;
        }
        if let Some(p) = &planned
            && let Err(e) = self.make_workspace(p).await
        {
            let why = format!("could not make its workspace: {e}");
            let _ = self.node.stop(&id, Transition::Terminate, &why).await;
            return Err(e);
        }
        self.launch(&id, Spawn::Fresh).await
    }

    /// `agent.login` (local-only): a session running the CLI's own login
    /// flow in the agent's guest, against its durable home, for a person to
    /// attach to; it is not supervised and is archived when the CLI exits.
    pub async fn agent_login(&self, agent: &str) -> NodeResult<api::Conversation> {
        let id = {
            let mut cat = self.catalog.lock().await;
            let a = cat.check_can_start(agent)?;
            let harness = a.record.harness.clone();
            if let Some(live) = cat.live_conversation_of(agent) {
                return Err(NodeError::Conflict(format!(
                    "agent {agent:?} has a live conversation {}: pause it before logging in",
                    live.id
                )));
            }
            let adapter = harness::adapter(&harness).map_err(|e| NodeError::Conflict(e.to_string()))?;
            if adapter.login_args().is_none() {
                return Err(NodeError::Conflict(format!(
                    "agent {agent:?}: the {harness} CLI has no login of its own; give the agent its key with `warren agent secret set {agent} NAME`"
                )));
            }
            self.create_conversation(&mut cat, agent, true).await?
        };
        self.launch(&id, Spawn::Login).await
    }

    /// Records a new conversation of `agent` (its resume reference chosen
    /// up front); returns its id.
    async fn create_conversation(&self, cat: &mut Catalog, agent: &str, login: bool) -> NodeResult<String> {
        let id = new_id("c-");
        self.commit(cat, vec![Self::created(&id, agent, login)]).await?;
        Ok(id)
    }

    fn created(id: &str, agent: &str, login: bool) -> Event {
        Event::ConversationCreated {
            id: id.to_string(),
            agent: agent.to_string(),
            resume_ref: Some(new_uuid()),
            login,
        }
    }

    /// Relaunches a paused conversation: with the CLI's native resume, or
    /// (`fresh`) a new CLI session in the same conversation, keeping the
    /// transcript; the CLI's own context is then not restored, and a system
    /// line says so.
    pub async fn conversation_continue(&self, p: api::ConversationContinue) -> NodeResult<api::Conversation> {
        let id = p.conversation.as_str();
        if !p.fresh {
            let mut cat = self.catalog.lock().await;
            let e = cat.decide_continue(id, None)?;
            self.commit(&mut cat, vec![e]).await?;
            drop(cat);
            return self.launch(id, Spawn::Resume).await;
        }
        let resume_ref = new_uuid();
        // Checked before the system line is written, so a refused continue
        // leaves the transcript as it was.
        self.catalog.lock().await.decide_continue(id, None)?;
        let floor = self
            .transcripts
            .append(
                id,
                "system",
                "lifecycle",
                format!("continued fresh: the CLI's own context was not restored (new session {resume_ref})"),
            )
            .await?;
        {
            let mut cat = self.catalog.lock().await;
            let fresh = FreshStart {
                resume_ref,
                cursor_floor: floor,
            };
            let e = cat.decide_continue(id, Some(fresh))?;
            self.commit(&mut cat, vec![e]).await?;
        }
        self.launch(id, Spawn::Fresh).await
    }

    async fn launch(&self, id: &str, how: Spawn) -> NodeResult<api::Conversation> {
        let (entry, agent) = {
            let cat = self.catalog.lock().await;
            let c = cat.conversation(id)?.clone();
            let a = cat.agent(&c.agent)?.record.clone();
            (c, a)
        };
        // The workspace's definitions as this launch finds them, the first time
        // the node sees the workspace (the repository-code rule's baseline).
        let workspace = match &entry.workspace {
            Some(l) => std::path::PathBuf::from(&l.path),
            None => self.agent_home_dirs(&entry.agent).1,
        };
        self.supervisor.workspace_facts(&workspace).await;
        let live = match self.spawn_cli(&entry, &agent, how).await {
            Ok((live, note)) => {
                let mut cat = self.catalog.lock().await;
                match cat.decide_transition(id, Transition::Launched, "") {
                    Ok(e) => {
                        self.commit(&mut cat, vec![e]).await?;
                        drop(cat);
                        self.went_live(id, live.clone(), note).await?;
                        live
                    }
                    Err(e) => {
                        // Paused or terminated while it was starting.
                        drop(cat);
                        live.shutdown().await;
                        self.revoke_instance_tokens(id).await;
                        return Err(e.into());
                    }
                }
            }
            Err(why) => {
                tracing::warn!(conversation = id, reason = %why, "launch failed");
                self.revoke_instance_tokens(id).await;
                let reason = format!("launch failed: {why}");
                let mut cat = self.catalog.lock().await;
                if let Ok(e) = cat.decide_transition(id, Transition::Pause, &reason) {
                    self.commit(&mut cat, vec![e]).await?;
                    drop(cat);
                    self.transcripts
                        .append(id, "system", "lifecycle", format!("paused: {reason}"))
                        .await?;
                }
                return Err(why.into_node_error(id));
            }
        };
        // Answer once the CLI can take input, or say why it could not.
        if live.ready_or_exited(READY_BOUND).await == Status::Exited {
            // Answer once the pause and its reason are recorded.
            live.exit_recorded(READY_BOUND).await;
            // The reason as recorded (one source: `on_cli_exit` decided it).
            let recorded = self
                .catalog
                .lock()
                .await
                .conversation(id)
                .ok()
                .and_then(|c| c.pause_reason.clone());
            let reason = recorded.unwrap_or_else(|| live.exit_facts().1);
            let hint = if reason.starts_with("resume failed") {
                format!("; `warren conv continue {id} --fresh` starts the CLI fresh, keeping the transcript")
            } else {
                String::new()
            };
            return Err(NodeError::LaunchFailed {
                message: format!("conversation {id}: {reason}; it is paused{hint}"),
                setting: None,
                conversation: id.to_string(),
            });
        }
        let cat = self.catalog.lock().await;
        Ok(self.conv_wire(cat.conversation(id)?))
    }

    /// A CLI is up for `id` (launched, resumed or re-adopted): it joins the
    /// live set, its token renewal and supervision start, and `note` goes to
    /// the transcript.
    pub(crate) async fn went_live(&self, id: &str, live: Arc<Live>, note: String) -> NodeResult<()> {
        let exited_already = {
            let Ok(mut m) = self.live.lock() else {
                return Err(NodeError::Internal("the live set is poisoned".into()));
            };
            m.insert(id.to_string(), live.clone());
            live.status() == Status::Exited
        };
        self.spend.budget_on_launch(&live).await;
        // A CLI that exited before it joined the live set had its exit note
        // find nothing to pause (the watcher sets Exited before it sends the
        // note): send it again. A second note finds nothing and does nothing.
        if exited_already {
            let _ = self.exits.try_send(id.to_string());
        }
        self.start_renewal(id);
        let login = self.catalog.lock().await.conversation(id).is_ok_and(|c| c.login);
        if !login {
            self.supervisor.start_supervision(id);
            self.supervisor.start_stall_watch(id);
            self.spend.start_usage_watch(id);
        }
        self.transcripts.append(id, "system", "lifecycle", note).await?;
        Ok(())
    }

    /// Plans the launch with the harness adapter (with its native resume
    /// only when there is something to resume), writes its files, and starts
    /// the CLI on the runtime.
    async fn spawn_cli(
        &self,
        c: &ConvEntry,
        agent: &AgentRecord,
        how: Spawn,
    ) -> Result<(Arc<Live>, String), LaunchError> {
        setup::check_launchable(&agent.harness)?;
        let adapter = harness::adapter(&agent.harness).map_err(LaunchError::internal)?;
        let home = self.agent_dir(&agent.name).join("home");
        let repo = if c.login {
            None
        } else {
            self.workspace_for_launch(c, agent)
                .await
                .map_err(|e| LaunchError::setup("workspace", e.to_string()))?
        };
        let workspace = match &repo {
            Some(r) => r.cwd.clone(),
            None => self.agent_dir(&agent.name).join("workspace"),
        };
        for dir in [&home, &workspace] {
            std::fs::create_dir_all(dir)
                .map_err(|e| LaunchError::setup("data_dir", format!("cannot create {}: {e}", dir.display())))?;
        }
        let resume_ref = c.resume_ref.clone().unwrap_or_default();
        let mut settings = self.cfg.harnesses.get(&agent.harness).cloned().unwrap_or_default();
        // The agent's own secrets (e.g. its model key) are part of the CLI's
        // environment, over any node-wide `[harnesses.NAME.env]`: the adapter
        // plans with them (Claude Code approves the key it will be given).
        let secrets = crate::secrets::read(&self.cfg.data_dir, &agent.name).map_err(LaunchError::internal)?;
        settings.env.extend(secrets.clone());
        // The granted tools (made before the plan: the CLI is told); the
        // instance token is minted from the same list.
        let mounted = mount::mounted_now(&*self.catalog.lock().await, agent, &self.cfg.tools);
        let warren_exe = mount::warren_exe_for_cli(self.runtime_name() == "docker", &self.cfg.self_exe);
        let (tools_dir, tools) = mount::prepare_tools(&mounted, &home, &warren_exe)
            .map_err(|e| LaunchError::internal(NodeError::Internal(format!("the conversation's tools: {e}"))))?;
        let tool_notes = mount::tool_notes(&tools, &self.cfg.tools);
        let plan_for = |resume: bool| -> Result<LaunchPlan, LaunchError> {
            adapter
                .plan(&LaunchContext {
                    tools: &tools,
                    tool_notes: &tool_notes,
                    warren_exe: &warren_exe,
                    agent,
                    home: &home,
                    workspace: &workspace,
                    resume_ref: &resume_ref,
                    resume,
                    self_exe: &self.cfg.self_exe,
                    settings: &settings,
                })
                .map_err(|e| match e {
                    HarnessError::Setting(p) => LaunchError::setup(p.setting, p.message),
                    e => LaunchError::setup(format!("harnesses.{}", agent.harness), e.to_string()),
                })
        };
        // Lines read from the CLI's session file count from the floor on
        // (a fresh continue started a new file).
        let committed = self
            .store
            .transcript_cursor(&c.id, c.cursor_floor)
            .await
            .map_err(LaunchError::internal)?;
        let mut resume = matches!(how, Spawn::Resume | Spawn::Adopt { .. });
        let mut plan = plan_for(resume)?;
        let mut fresh_note = None;
        if matches!(how, Spawn::Resume) {
            let store = match &plan.transcript_file {
                None => SessionStore::Unknown,
                Some(f) if adapter.session_file(f).is_some_and(|f| f.exists()) => SessionStore::Present,
                Some(_) => SessionStore::Missing {
                    recorded: committed.is_some(),
                },
            };
            if exits::relaunch(store) == Relaunch::FreshSameRef {
                resume = false;
                plan = plan_for(false)?;
                fresh_note = Some(format!(
                    "launched fresh: the CLI never wrote session {resume_ref}, so there was nothing to resume; same reference, empty context"
                ));
            }
        }
        if matches!(how, Spawn::Login) {
            let args = adapter
                .login_args()
                .ok_or_else(|| LaunchError::internal("no login flow"))?;
            plan.args.extend(args.iter().map(|a| a.to_string()));
        }
        if self.runtime.name() == "local" {
            setup::check_program(
                &agent.harness,
                &plan.program,
                settings.program.is_some(),
                &std::env::var("PATH").unwrap_or_default(),
            )?;
        }
        for (rel, body) in &plan.files {
            let path = home.join(rel);
            let write = || -> std::io::Result<()> {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, body)
            };
            write().map_err(|e| LaunchError::setup("data_dir", format!("cannot write {}: {e}", path.display())))?;
        }
        // Resume reading the CLI's session file where the committed transcript
        // ends, so lines it wrote after the last read (e.g. just before a crash)
        // are recorded now, and nothing twice.
        let transcript_offset = match plan.transcript_file.as_deref().and_then(|p| adapter.session_file(p)) {
            Some(path) => {
                let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                committed.unwrap_or(0).min(len)
            }
            None => 0,
        };
        // The granted tools lead PATH; nothing else of warren is on it.
        let mut env = base_env(&home, &c.id, &agent.name, tools_dir.as_deref());
        let (token, token_file) = self
            .issue_and_record_instance_token(&c.id, agent, &home, &mounted)
            .await
            .map_err(LaunchError::internal)?;
        // In a guest, the token is handed over its link once it is up.
        if self.runtime.secrets_dir().is_none() {
            env.push(("WARREN_TOKEN".into(), token.clone()));
        }
        env.push(("WARREN_TOKEN_FILE".into(), token_file.display().to_string()));
        if let Some(url) = self.endpoint.get() {
            env.push(("WARREN_URL".into(), url.clone()));
        }
        env.extend(plan.env);
        env.retain(|(k, _)| !secrets.contains_key(k));
        env.extend(secrets);
        let (extra_mounts, run_as, mounts) = match repo {
            Some(r) => {
                env.extend(r.env);
                (r.mounts, r.run_as, vec![home.clone()])
            }
            None => (vec![], None, vec![home.clone(), workspace.clone()]),
        };
        let spec = LaunchSpec {
            conversation: c.id.clone(),
            agent: agent.name.clone(),
            harness: agent.harness.clone(),
            image: settings.image.clone(),
            mounts,
            extra_mounts,
            run_as,
            resources: agent.resources.clone().unwrap_or_default(),
            program: plan.program,
            args: plan.args,
            cwd: workspace.clone(),
            env,
            rows: self.cfg.rows,
            cols: self.cfg.cols,
            status: Arc::new(move |s| adapter.status(s)),
        };
        let cwd_for_live = workspace;
        let session = match how {
            Spawn::Adopt { key_hash, grace } => self.runtime.adopt(spec, key_hash, grace).await,
            Spawn::Fresh | Spawn::Resume | Spawn::Login => self.runtime.launch(spec).await,
        }?;
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
            resumed: resume,
            workspace: cwd_for_live,
        });
        // After `Live` reads the CLI's output: a CLI that exits at once must
        // not print to nobody while the token is handed over.
        self.hand_instance_token(&live.session, &token).await;
        let note = match fresh_note {
            Some(n) => n,
            None if resume => format!("resumed: {} --resume {resume_ref}", agent.harness),
            None => format!("launched: {} session {resume_ref}", agent.harness),
        };
        Ok((live, note))
    }

    /// The CLI of `id` exited by itself: an unplanned pause whose reason says
    /// how it left (exit code, its last words; "resume failed" when a
    /// `--resume` launch never got ready).
    pub(crate) async fn on_cli_exit(&self, id: &str) {
        let live = self.live.lock().ok().and_then(|mut m| m.remove(id));
        let Some(live) = live else { return };
        let (exit, reason) = live.exit_facts();
        let mut line = format!("paused: {reason}");
        {
            let mut cat = self.catalog.lock().await;
            // A login session ends with its CLI.
            let decided = match cat.conversation(id) {
                Ok(c) if c.login => {
                    line = format!("archived: login finished: {reason}");
                    cat.decide_transition(id, Transition::Terminate, &format!("login finished: {reason}"))
                }
                _ => cat.decide_exit_pause(id, &reason, exit),
            };
            match decided {
                Ok(e) => {
                    if let Err(e) = self.commit(&mut cat, vec![e]).await {
                        tracing::error!(conversation = id, error = %e, "could not record the pause");
                    }
                }
                Err(_) => {
                    live.mark_exit_recorded();
                    return;
                }
            }
        }
        live.shutdown().await;
        self.revoke_instance_tokens(id).await;
        self.supervisor.drop_holds(id);
        let _ = self.transcripts.append(id, "system", "lifecycle", line).await;
        live.mark_exit_recorded();
    }
}

/// The CLI's environment. The conversation's tools dir leads `PATH` (its
/// tools act with the instance token in `WARREN_TOKEN_FILE`); the `warren`
/// client itself is not on it.
fn base_env(home: &Path, conversation: &str, agent: &str, tools: Option<&Path>) -> Vec<(String, String)> {
    let node_path = std::env::var("PATH").unwrap_or_else(|_| "/usr/local/bin:/usr/bin:/bin".into());
    let mut path = cli_path(&node_path);
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

/// The node's PATH without any directory that holds a `warren` client: the
/// CLI reaches warren only through its mounted tools.
fn cli_path(node_path: &str) -> String {
    node_path
        .split(':')
        .filter(|d| !d.is_empty() && !Path::new(d).join("warren").exists())
        .collect::<Vec<_>>()
        .join(":")
}
