//! The catalog projection: agents and conversations folded from the event log,
//! and the pure decisions that turn a request into events (validation, the
//! one-live-conversation rule, lifecycle transitions). No IO here.

use std::collections::BTreeMap;

use console_api::{ConversationState, Status};

use crate::events::{AgentRecord, CliExit, Event, FreshStart, GrantsRecord, RuleRecord, StoredEvent};
use crate::lifecycle::{self, Transition};
use crate::validate::{self, Invalid};

mod mail;
pub use mail::{MAX_MAIL_REFUSALS, peers_of};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CatalogError {
    #[error("{0}")]
    Invalid(#[from] Invalid),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    Forbidden(String),
}

/// How far an agent's mail reached its CLI (`Event::MailDelivered`), as mail seqs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MailDelivery {
    /// Delivered in any form, a nudge or the full body: never delivered again.
    pub woken: u64,
    /// Typed as the full body: no longer outstanding work.
    pub full_body: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AgentEntry {
    pub record: AgentRecord,
    pub created_at: u64,
    pub updated_at: u64,
    pub archived: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ConvEntry {
    pub id: String,
    pub agent: String,
    pub state: ConversationState,
    pub created_at: u64,
    pub updated_at: u64,
    pub resume_ref: Option<String>,
    pub pause_reason: Option<String>,
    /// While paused after the CLI stopped by itself: how it left.
    pub exit: Option<CliExit>,
    pub launches: u32,
    /// Transcript lines read from the CLI's session file count from this seq
    /// on (set when the conversation continued fresh, with a new file).
    pub cursor_floor: u64,
    /// The hash of the session key of the guest running it (Docker runtime),
    /// while starting or active: what a restarted node re-adopts it by.
    pub guest_key: Option<String>,
    /// A login session (`agent.login`): unsupervised, archived when it ends.
    pub login: bool,
    /// Where it works, when its agent has a workspace.
    pub workspace: Option<Leased>,
}

/// A conversation's workspace: its path (leased until the conversation is
/// archived), branch and baseline commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leased {
    pub path: String,
    pub branch: String,
    pub baseline: String,
}

/// Agents and conversations as of some point of the log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub agents: BTreeMap<String, AgentEntry>,
    pub conversations: BTreeMap<String, ConvEntry>,
    /// Per-agent supervision overrides.
    pub supervision: BTreeMap<String, supervision::AgentOverride>,
    /// The global supervision defaults set at runtime (`config.set`), which
    /// win over warren.toml's `[supervision]`; `None`: warren.toml's apply.
    pub supervision_defaults: Option<supervision::SupervisionConfig>,
    /// How far each agent has acknowledged its inbox.
    pub mail_cursors: BTreeMap<String, u64>,
    /// How far the node has delivered each agent's mail into its CLI.
    pub mail_delivered: BTreeMap<String, MailDelivery>,
    /// Mail to other members' agents: per node name, the seq of the last
    /// message handed over (or refused) there; later ones are pending.
    pub mail_forwarded: BTreeMap<String, u64>,
    /// The newest refusals of mail handed to other members (id, reason), at
    /// most `MAX_MAIL_REFUSALS`.
    pub mail_refused: std::collections::VecDeque<(String, String)>,
    /// Learned approval rules: workspace directory -> confirmed patterns.
    pub approval_rules: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Revocation ids of revoked tokens (hex).
    pub revoked: std::collections::BTreeSet<String>,
    /// Instance token revocation ids issued per conversation and not yet
    /// revoked (what a restarted node revokes).
    pub instance_tokens: BTreeMap<String, std::collections::BTreeSet<String>>,
    /// Each workspace's definitions as a human accepted them.
    pub definitions: crate::folds::definitions::Accepted,
    /// This node's fleet membership, the members it knows, its invites.
    pub fleet: crate::folds::fleet::FleetState,
    /// Monitor attachments (in their monitor agents' definitions).
    pub monitors: crate::folds::monitors::MonitorState,
    /// The agents' spend-rate budgets.
    pub budgets: crate::folds::budget::Budgets,
    /// Unattended tasks (seed 001), folded by the `tasks` crate.
    pub tasks: crate::folds::tasks::Tasks,
    /// Seq of the last event applied.
    pub applied_seq: u64,
}

impl Catalog {
    /// The global supervision defaults in force: those set at runtime, else
    /// `configured` (warren.toml's `[supervision]`).
    pub fn supervision_defaults<'a>(
        &'a self,
        configured: &'a supervision::SupervisionConfig,
    ) -> &'a supervision::SupervisionConfig {
        self.supervision_defaults.as_ref().unwrap_or(configured)
    }

    pub fn fold<'a>(events: impl IntoIterator<Item = &'a StoredEvent>) -> Catalog {
        let mut c = Catalog::default();
        for e in events {
            c.apply(e);
        }
        c
    }

    /// Folds one event in. Events that do not apply (which the decisions never
    /// produce) are ignored rather than panicking, so a replay always completes.
    pub fn apply(&mut self, e: &StoredEvent) {
        self.applied_seq = self.applied_seq.max(e.seq);
        let ts = e.ts;
        match &e.event {
            Event::AgentCreated { agent } => {
                self.agents.insert(
                    agent.name.clone(),
                    AgentEntry {
                        record: agent.clone(),
                        created_at: ts,
                        updated_at: ts,
                        archived: false,
                    },
                );
            }
            Event::AgentUpdated { agent } => {
                if let Some(a) = self.agents.get_mut(&agent.name) {
                    a.record = agent.clone();
                    a.updated_at = ts;
                }
            }
            Event::AgentArchived { name } => {
                if let Some(a) = self.agents.get_mut(name) {
                    a.archived = true;
                    a.updated_at = ts;
                }
            }
            Event::ConversationCreated {
                id,
                agent,
                resume_ref,
                login,
            } => {
                self.conversations.insert(
                    id.clone(),
                    ConvEntry {
                        id: id.clone(),
                        agent: agent.clone(),
                        state: ConversationState::Starting,
                        created_at: ts,
                        updated_at: ts,
                        resume_ref: resume_ref.clone(),
                        pause_reason: None,
                        exit: None,
                        launches: 0,
                        cursor_floor: 0,
                        guest_key: None,
                        login: *login,
                        workspace: None,
                    },
                );
            }
            Event::ConversationLaunched { id, .. } => self.set_state(id, ts, ConversationState::Active, None, 1),
            Event::ConversationPaused { id, reason, exit, .. } => {
                self.set_state(id, ts, ConversationState::Paused, Some(reason.clone()), 0);
                if let Some(c) = self.conversations.get_mut(id) {
                    c.exit = exit.clone();
                }
            }
            Event::ConversationContinued { id, fresh } => {
                self.set_state(id, ts, ConversationState::Starting, None, 0);
                if let (Some(c), Some(f)) = (self.conversations.get_mut(id), fresh) {
                    c.resume_ref = Some(f.resume_ref.clone());
                    c.cursor_floor = f.cursor_floor;
                }
            }
            Event::ConversationArchived { id, .. } => self.set_state(id, ts, ConversationState::Archived, None, 0),
            Event::WorkspaceLeased {
                id,
                path,
                branch,
                baseline,
            } => {
                if let Some(c) = self.conversations.get_mut(id) {
                    c.workspace = Some(Leased {
                        path: path.clone(),
                        branch: branch.clone(),
                        baseline: baseline.clone(),
                    });
                }
            }
            Event::MailAcked { agent, cursor } => {
                // No ack can cover mail committed after it: a cursor past its
                // own seq (stored before acks were clamped) folds to that seq.
                let c = self.mail_cursors.entry(agent.clone()).or_default();
                *c = (*c).max((*cursor).min(e.seq));
            }
            Event::MailDelivered {
                agent, upto, full_body, ..
            } => {
                // Only mail committed before it can have been delivered.
                let upto = (*upto).min(e.seq);
                let d = self.mail_delivered.entry(agent.clone()).or_default();
                d.woken = d.woken.max(upto);
                if *full_body {
                    d.full_body = d.full_body.max(upto);
                }
            }
            Event::MailForwarded {
                node,
                upto,
                id,
                refused,
            } => {
                // Only mail committed before it can have been handed over.
                let f = self.mail_forwarded.entry(node.clone()).or_default();
                *f = (*f).max((*upto).min(e.seq));
                if let Some(reason) = refused {
                    if self.mail_refused.len() >= MAX_MAIL_REFUSALS {
                        self.mail_refused.pop_front();
                    }
                    self.mail_refused.push_back((id.clone(), reason.clone()));
                }
            }
            Event::MailSent { .. }
            | Event::SupervisionActed { .. }
            | Event::Guest { .. }
            | Event::Egress { .. }
            | Event::AgentSecret { .. } => {}
            Event::GuestAttached { conversation, key_hash } => {
                if let Some(c) = self.conversations.get_mut(conversation)
                    && matches!(c.state, ConversationState::Starting | ConversationState::Active)
                {
                    c.guest_key = Some(key_hash.clone());
                }
            }
            Event::SupervisionSet { agent, policy } => {
                self.supervision.insert(agent.clone(), policy.clone());
            }
            Event::SupervisionDefaults { defaults } => {
                self.supervision_defaults = defaults.clone();
            }
            Event::InstanceTokenIssued {
                conversation,
                revocation_ids,
            } => {
                self.instance_tokens
                    .entry(conversation.clone())
                    .or_default()
                    .extend(revocation_ids.iter().cloned());
            }
            Event::TokenRevoked { revocation_id } => {
                self.revoked.insert(revocation_id.clone());
                self.instance_tokens.retain(|_, ids| {
                    ids.remove(revocation_id);
                    !ids.is_empty()
                });
            }
            Event::ApprovalRule {
                workspace,
                pattern,
                learned,
                ..
            } => {
                if *learned {
                    self.approval_rules
                        .entry(workspace.clone())
                        .or_default()
                        .insert(pattern.clone());
                } else if let Some(rules) = self.approval_rules.get_mut(workspace) {
                    rules.remove(pattern);
                    if rules.is_empty() {
                        self.approval_rules.remove(workspace);
                    }
                }
            }
            Event::DefinitionsAccepted { .. } => self.definitions.apply(&e.event),
            Event::FleetJoined { .. }
            | Event::FleetMember { .. }
            | Event::FleetRemoved { .. }
            | Event::FleetInvite { .. }
            | Event::FleetInviteUsed { .. } => self.fleet.apply(&e.event),
            Event::MonitorAttached { .. }
            | Event::MonitorDetached { .. }
            | Event::MonitorBreaker { .. }
            | Event::MonitorCursor { .. }
            | Event::MonitorConversation { .. } => self.monitors.apply(ts, &e.event),
            Event::BudgetSet { .. }
            | Event::BudgetToppedUp { .. }
            | Event::BudgetCharged { .. }
            | Event::BudgetWaiting { .. }
            | Event::BudgetResumed { .. }
            | Event::BudgetExhausted { .. } => self.budgets.apply(ts, &e.event),
            Event::Task { task, event } => self.tasks.apply(ts, task, event),
            Event::Transcript { .. }
            | Event::UsageRecorded { .. }
            | Event::ToolInvoked { .. }
            | Event::RecallStashed { .. }
            | Event::RecallForgot { .. } => {}
        }
    }

    fn set_state(&mut self, id: &str, ts: u64, state: ConversationState, reason: Option<String>, launches: u32) {
        if let Some(c) = self.conversations.get_mut(id) {
            c.state = state;
            c.updated_at = ts;
            c.launches += launches;
            // A guest belongs to one run: gone once it stops or restarts.
            if state != ConversationState::Active {
                c.guest_key = None;
            }
            if state == ConversationState::Paused {
                c.pause_reason = reason;
            } else if state != ConversationState::Archived {
                c.pause_reason = None;
                c.exit = None;
            }
        }
    }

    pub fn agent(&self, name: &str) -> Result<&AgentEntry, CatalogError> {
        self.agents
            .get(name)
            .ok_or_else(|| CatalogError::NotFound(format!("agent {name:?} not found")))
    }

    pub fn conversation(&self, id: &str) -> Result<&ConvEntry, CatalogError> {
        self.conversations
            .get(id)
            .ok_or_else(|| CatalogError::NotFound(format!("conversation {id:?} not found")))
    }

    /// The agent's live (starting or active) conversation, if any.
    pub fn live_conversation_of(&self, agent: &str) -> Option<&ConvEntry> {
        self.conversations
            .values()
            .find(|c| c.agent == agent && c.state.is_live())
    }

    /// Conversations recorded as live: after a restart these have no process.
    pub fn live_conversations(&self) -> impl Iterator<Item = &ConvEntry> {
        self.conversations.values().filter(|c| c.state.is_live())
    }

    pub fn decide_create_agent(&self, p: console_api::AgentCreate) -> Result<Event, CatalogError> {
        validate::agent_name(&p.name)?;
        validate::harness(&p.harness)?;
        if self.agents.contains_key(&p.name) {
            return Err(CatalogError::Conflict(format!("agent {:?} already exists", p.name)));
        }
        let agent = AgentRecord {
            name: p.name,
            harness: p.harness,
            persona: p.persona,
            model: p.model,
            grants: grants_record(p.grants.unwrap_or_default()),
            rules: rules_record(p.rules.unwrap_or_default()),
            resources: p.resources,
            workspace: None,
        };
        check_record(&agent)?;
        Ok(Event::AgentCreated { agent })
    }

    pub fn decide_update_agent(&self, p: console_api::AgentUpdate) -> Result<Event, CatalogError> {
        let current = self.agent(&p.agent)?;
        if current.archived {
            return Err(CatalogError::Conflict(format!("agent {:?} is archived", p.agent)));
        }
        let mut agent = current.record.clone();
        if let Some(persona) = p.persona {
            agent.persona = Some(persona);
        }
        if let Some(model) = p.model {
            agent.model = Some(model);
        }
        if let Some(grants) = p.grants {
            agent.grants = grants_record(grants);
        }
        if let Some(rules) = p.rules {
            agent.rules = rules_record(rules);
        }
        if let Some(resources) = p.resources {
            agent.resources = Some(resources);
        }
        check_record(&agent)?;
        Ok(Event::AgentUpdated { agent })
    }

    pub fn decide_archive_agent(&self, name: &str) -> Result<Event, CatalogError> {
        let a = self.agent(name)?;
        if a.archived {
            return Err(CatalogError::Conflict(format!("agent {name:?} is already archived")));
        }
        if let Some(live) = self.live_conversation_of(name) {
            return Err(CatalogError::Conflict(format!(
                "agent {name:?} has a live conversation {}: pause or terminate it first",
                live.id
            )));
        }
        Ok(Event::AgentArchived { name: name.to_string() })
    }

    /// Checks that `agent` may get a new conversation.
    pub fn check_can_start(&self, agent: &str) -> Result<&AgentEntry, CatalogError> {
        let a = self.agent(agent)?;
        if a.archived {
            return Err(CatalogError::Conflict(format!("agent {agent:?} is archived")));
        }
        Ok(a)
    }

    /// Conversation `id` takes workspace `path`: refused (naming the holder)
    /// while another conversation that is not archived holds the same path,
    /// one inside it, or one it is inside.
    pub fn decide_lease(&self, id: &str, path: &str, branch: &str, baseline: &str) -> Result<Event, CatalogError> {
        // A conversation of an archived agent can never run again: its
        // worktree stays for review, but it holds nothing.
        let holder = self.conversations.values().find(|c| {
            c.id != id
                && c.state != ConversationState::Archived
                && self.agents.get(&c.agent).is_some_and(|a| !a.archived)
                && c.workspace.as_ref().is_some_and(|w| paths_overlap(&w.path, path))
        });
        if let Some(h) = holder {
            let held = h.workspace.as_ref().map(|w| w.path.as_str()).unwrap_or_default();
            return Err(CatalogError::Conflict(format!(
                "workspace {path} overlaps {held}, held by conversation {} of agent {:?}: terminate it first",
                h.id, h.agent
            )));
        }
        Ok(Event::WorkspaceLeased {
            id: id.to_string(),
            path: path.to_string(),
            branch: branch.to_string(),
            baseline: baseline.to_string(),
        })
    }

    /// The pause of a conversation whose CLI stopped by itself, with how it left.
    pub fn decide_exit_pause(&self, id: &str, reason: &str, exit: CliExit) -> Result<Event, CatalogError> {
        let mut e = self.decide_transition(id, Transition::Pause, reason)?;
        if let Event::ConversationPaused { exit: slot, .. } = &mut e {
            *slot = Some(exit);
        }
        Ok(e)
    }

    /// `continue`, plain (the CLI's native resume) or fresh (a new session
    /// reference; transcript lines from its file count from `cursor_floor`).
    pub fn decide_continue(&self, id: &str, fresh: Option<FreshStart>) -> Result<Event, CatalogError> {
        let mut e = self.decide_transition(id, Transition::Continue, "")?;
        if let Event::ConversationContinued { fresh: slot, .. } = &mut e {
            *slot = fresh;
        }
        Ok(e)
    }

    /// The event that moves conversation `id` along `t`, or why it cannot move.
    pub fn decide_transition(&self, id: &str, t: Transition, reason: &str) -> Result<Event, CatalogError> {
        let c = self.conversation(id)?;
        lifecycle::next(c.state, t).map_err(|e| CatalogError::Conflict(format!("conversation {id}: {e}")))?;
        if t == Transition::Continue {
            if let Some(live) = self.live_conversation_of(&c.agent) {
                return Err(CatalogError::Conflict(format!(
                    "agent {:?} already has a live conversation {}",
                    c.agent, live.id
                )));
            }
            if self.agents.get(&c.agent).is_some_and(|a| a.archived) {
                return Err(CatalogError::Conflict(format!("agent {:?} is archived", c.agent)));
            }
        }
        let id = id.to_string();
        Ok(match t {
            Transition::Launched => Event::ConversationLaunched {
                id,
                resumed: c.launches > 0,
            },
            Transition::Pause => Event::ConversationPaused {
                id,
                planned: reason == PLANNED_PAUSE,
                reason: reason.to_string(),
                exit: None,
            },
            Transition::Continue => Event::ConversationContinued { id, fresh: None },
            Transition::Terminate => Event::ConversationArchived {
                id,
                reason: reason.to_string(),
            },
        })
    }
}

impl Catalog {
    /// The learned approval rules of a workspace, sorted.
    pub fn approval_rules_of(&self, workspace: &str) -> Vec<String> {
        self.approval_rules
            .get(workspace)
            .map(|r| r.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Learns (`learned`) or forgets a workspace's approval rule. The pattern
    /// is validated and stored in its normal form; `None` when learning a rule
    /// the workspace already has. At most `validate::MAX_LEARNED_RULES` per
    /// workspace; forgetting a rule it does not have is not found.
    pub fn decide_approval_rule(
        &self,
        workspace: &str,
        pattern: &str,
        learned: bool,
        by: &str,
    ) -> Result<Option<Event>, CatalogError> {
        let rules = self.approval_rules.get(workspace);
        let has = |p: &str| rules.is_some_and(|r| r.contains(p));
        let pattern = if learned {
            let p = validate::normal_pattern(pattern)?;
            if has(&p) {
                return Ok(None);
            }
            let count = rules.map_or(0, |r| r.len());
            if count >= validate::MAX_LEARNED_RULES {
                return Err(CatalogError::Conflict(format!(
                    "workspace {workspace} has {count} learned rules, the limit of {}: forget one first",
                    validate::MAX_LEARNED_RULES
                )));
            }
            p
        } else {
            // Forget what was stored: the normal form if it has one.
            let p = validate::normal_pattern(pattern).unwrap_or_else(|_| pattern.to_string());
            if !has(&p) {
                return Err(CatalogError::NotFound(format!(
                    "pattern {pattern:?} is not a learned rule of workspace {workspace}"
                )));
            }
            p
        };
        Ok(Some(Event::ApprovalRule {
            workspace: workspace.to_string(),
            pattern,
            learned,
            by: by.to_string(),
        }))
    }
}

/// The reason recorded for a pause that a client asked for.
pub const PLANNED_PAUSE: &str = "paused on request";

fn check_record(a: &AgentRecord) -> Result<(), Invalid> {
    if let Some(p) = &a.persona {
        validate::persona(p)?;
    }
    if let Some(m) = &a.model {
        validate::model(m)?;
    }
    if let Some(r) = &a.resources {
        validate::resources(r)?;
    }
    validate::list("grants.tools", &a.grants.tools)?;
    crate::egress::check_list(&a.grants.egress).map_err(|problem| Invalid {
        field: "grants.egress",
        problem,
    })?;
    match &a.grants.peers {
        None => {}
        Some(serde_json::Value::String(s)) if s == "all" => {}
        Some(serde_json::Value::Array(items)) => {
            for item in items {
                match item.as_str() {
                    // `NAME`, or `NAME@NODE` for an agent homed on another member.
                    Some(name) => mailbox::address::parse(name).map(|_| ()).map_err(|e| Invalid {
                        field: "grants.peers",
                        problem: match e {
                            mailbox::MailError::Invalid { reason, .. } => reason,
                            other => other.to_string(),
                        },
                    })?,
                    None => {
                        return Err(Invalid {
                            field: "grants.peers",
                            problem: "must be \"all\" or a list of agent names".into(),
                        });
                    }
                }
            }
        }
        Some(_) => {
            return Err(Invalid {
                field: "grants.peers",
                problem: "must be \"all\" or a list of agent names".into(),
            });
        }
    }
    if a.rules.len() > validate::MAX_RULES {
        return Err(Invalid {
            field: "rules",
            problem: format!("{} rules is over the limit of {}", a.rules.len(), validate::MAX_RULES),
        });
    }
    let size: usize = a
        .rules
        .iter()
        .map(|r| r.pattern.len() + serde_json::to_string(&r.actions).map(|s| s.len()).unwrap_or(0))
        .sum();
    if size > validate::MAX_RULES_BYTES {
        return Err(Invalid {
            field: "rules",
            problem: format!("{size} bytes is over the limit of {}", validate::MAX_RULES_BYTES),
        });
    }
    for r in &a.rules {
        if let Err(e) = regex::Regex::new(&r.pattern) {
            return Err(Invalid {
                field: "rules",
                problem: format!("pattern {:?} is not a valid regex: {e}", r.pattern),
            });
        }
    }
    Ok(())
}

fn grants_record(g: console_api::Grants) -> GrantsRecord {
    GrantsRecord {
        tools: g.tools,
        peers: g.peers,
        recall: g.recall,
        egress: g.egress,
    }
}

fn rules_record(rules: Vec<console_api::FakeRule>) -> Vec<RuleRecord> {
    rules
        .into_iter()
        .map(|r| RuleRecord {
            pattern: r.pattern,
            actions: r.actions,
        })
        .collect()
}

/// The same path, or one inside the other, by whole components (`/a/b` and
/// `/a/bc` do not overlap); `.` and `..` components are resolved lexically.
pub fn paths_overlap(a: &str, b: &str) -> bool {
    fn parts(p: &str) -> Vec<&str> {
        let mut out: Vec<&str> = vec![];
        for c in p.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    out.pop();
                }
                c => out.push(c),
            }
        }
        out
    }
    let (a, b) = (parts(a), parts(b));
    let n = a.len().min(b.len());
    a[..n] == b[..n]
}

impl AgentEntry {
    pub fn to_wire(&self) -> console_api::Agent {
        let r = &self.record;
        console_api::Agent {
            name: r.name.clone(),
            harness: r.harness.clone(),
            persona: r.persona.clone(),
            model: r.model.clone(),
            grants: console_api::Grants {
                tools: r.grants.tools.clone(),
                peers: r.grants.peers.clone(),
                recall: r.grants.recall,
                egress: r.grants.egress.clone(),
            },
            rules: r
                .rules
                .iter()
                .map(|x| console_api::FakeRule {
                    pattern: x.pattern.clone(),
                    actions: x.actions.clone(),
                })
                .collect(),
            resources: r.resources.clone(),
            workspace: r.workspace.clone(),
            created_at: self.created_at,
            updated_at: self.updated_at,
            archived: self.archived,
        }
    }
}

impl ConvEntry {
    /// The wire object; `status` comes from the live process (EXITED if none).
    pub fn to_wire(&self, status: Option<Status>) -> console_api::Conversation {
        console_api::Conversation {
            id: self.id.clone(),
            agent: self.agent.clone(),
            state: self.state,
            status: status.unwrap_or(Status::Exited),
            created_at: self.created_at,
            updated_at: self.updated_at,
            resume_ref: self.resume_ref.clone(),
            pause_reason: self.pause_reason.clone(),
            launches: self.launches,
            exit_code: self.exit.as_ref().and_then(|x| x.code),
            last_lines: self.exit.as_ref().map(|x| x.last_lines.clone()).unwrap_or_default(),
            budget: None,
            workspace: self.workspace.as_ref().map(|w| console_api::ConversationWorkspace {
                path: w.path.clone(),
                branch: w.branch.clone(),
                baseline: Some(w.baseline.clone()),
                head: None,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
