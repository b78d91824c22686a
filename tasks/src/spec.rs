//! What `task.start` asks for, and the bad-input rules that refuse it before anything is stored.

use serde::{Deserialize, Deserializer, Serialize};

/// Longest goal accepted, in bytes: the goal becomes the worker's first message.
pub const MAX_GOAL_BYTES: usize = 16 * 1024;
/// Longest acceptance command accepted, in bytes.
pub const MAX_COMMAND_BYTES: usize = 4 * 1024;
/// Most acceptance commands one task may name.
pub const MAX_COMMANDS: usize = 100;
/// Highest `max_repairs` accepted.
pub const MAX_REPAIRS_LIMIT: u32 = 20;
/// Repair rounds when `task.start` names none.
pub const DEFAULT_MAX_REPAIRS: u32 = 3;
/// Shortest deadline accepted: less leaves no room for a turn, checks and a close-out.
pub const MIN_DEADLINE_SECS: u64 = 60;
/// Longest deadline accepted (30 days), so deadline arithmetic in ms cannot overflow.
pub const MAX_DEADLINE_SECS: u64 = 30 * 24 * 3600;

/// `task.start {agent, goal, acceptance, review?, decider?, max_repairs?, deadline_secs?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSpec {
    /// The worker: an agent with a workspace.
    pub agent: String,
    pub goal: String,
    /// Shell commands the node runs in the task's worktree; all must exit 0.
    #[serde(default)]
    pub acceptance: Vec<String>,
    /// `false`, absent or `null` mean no review.
    #[serde(default, deserialize_with = "review_field", skip_serializing_if = "Option::is_none")]
    pub review: Option<ReviewSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decider: Option<DeciderSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_repairs: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_secs: Option<u64>,
}

impl TaskSpec {
    /// `max_repairs`, or [`DEFAULT_MAX_REPAIRS`] when not given.
    pub fn max_repairs_or_default(&self) -> u32 {
        self.max_repairs.unwrap_or(DEFAULT_MAX_REPAIRS)
    }
}

/// `review: {agent}`: another agent that reads the diff and approves or rejects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewSpec {
    pub agent: String,
}

/// `decider: {agent, authority}`: who answers a dialog the policy would hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeciderSpec {
    pub agent: String,
    #[serde(default)]
    pub authority: Authority,
    /// How long the decider has to answer one held dialog before the task parks
    /// (default [`DEFAULT_DECIDER_SECS`], [`MIN_DECIDER_SECS`]..=[`MAX_DECIDER_SECS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

pub const DEFAULT_DECIDER_SECS: u64 = 300;
pub const MIN_DECIDER_SECS: u64 = 10;
pub const MAX_DECIDER_SECS: u64 = 3600;

impl DeciderSpec {
    /// The decider's time limit for one dialog, in milliseconds.
    pub fn timeout_ms(&self) -> u64 {
        self.timeout_secs.unwrap_or(DEFAULT_DECIDER_SECS) * 1000
    }
}

/// Seed 001's permission authority. `Hybrid` (the default) asks the decider only about
/// what the policy would hold; `Decider` routes every dialog to it; `Policy` never asks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Authority {
    Policy,
    #[default]
    Hybrid,
    Decider,
}

impl Authority {
    /// Whether a held dialog goes to the decider's conversation at all.
    pub fn asks_decider(self) -> bool {
        !matches!(self, Authority::Policy)
    }
}

/// `review` is `false | {agent}` on the wire; `true` would name no reviewer.
fn review_field<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ReviewSpec>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Field {
        Flag(bool),
        Spec(ReviewSpec),
    }
    match Option::<Field>::deserialize(d)? {
        None | Some(Field::Flag(false)) => Ok(None),
        Some(Field::Flag(true)) => Err(serde::de::Error::custom(
            "review: true names no reviewer; use {\"agent\": NAME}",
        )),
        Some(Field::Spec(s)) => Ok(Some(s)),
    }
}

/// What the node knows about agents, asked by [`validate`].
pub trait Facts {
    /// Whether an agent of this name exists (and is not archived).
    fn agent_exists(&self, name: &str) -> bool;
    /// Whether the agent works on a workspace (issue 25), so the task gets its own branch.
    fn has_workspace(&self, name: &str) -> bool;
}

/// A refused `task.start`: the field at fault and why. The node answers -32602 with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct Invalid {
    /// `agent`, `goal`, `acceptance`, `acceptance[3]`, `max_repairs`, `deadline_secs`,
    /// `review.agent`, `decider.agent` or `decider.timeout_secs`.
    pub field: String,
    pub message: String,
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> Invalid {
    Invalid {
        field: field.into(),
        message: message.into(),
    }
}

/// Checks a `task.start` against the "Bad input" rules; the first fault wins.
pub fn validate(spec: &TaskSpec, facts: &dyn Facts) -> Result<(), Invalid> {
    if spec.agent.trim().is_empty() {
        return Err(invalid("agent", "empty agent name"));
    }
    if !facts.agent_exists(&spec.agent) {
        return Err(invalid("agent", format!("no agent named {:?}", spec.agent)));
    }
    if !facts.has_workspace(&spec.agent) {
        return Err(invalid(
            "agent",
            format!(
                "agent {:?} has no workspace; a task needs its own branch (agent.create --repo)",
                spec.agent
            ),
        ));
    }
    if spec.goal.trim().is_empty() {
        return Err(invalid("goal", "empty goal"));
    }
    if spec.goal.len() > MAX_GOAL_BYTES {
        return Err(invalid(
            "goal",
            format!("{} bytes, over the limit of {MAX_GOAL_BYTES}", spec.goal.len()),
        ));
    }
    if spec.acceptance.len() > MAX_COMMANDS {
        return Err(invalid(
            "acceptance",
            format!("{} commands, over the limit of {MAX_COMMANDS}", spec.acceptance.len()),
        ));
    }
    for (i, cmd) in spec.acceptance.iter().enumerate() {
        let field = format!("acceptance[{i}]");
        if cmd.trim().is_empty() {
            return Err(invalid(field, "empty command"));
        }
        if cmd.len() > MAX_COMMAND_BYTES {
            return Err(invalid(
                field,
                format!("{} bytes, over the limit of {MAX_COMMAND_BYTES}", cmd.len()),
            ));
        }
        if cmd.contains('\0') {
            return Err(invalid(field, "contains a NUL byte, which no argv can carry"));
        }
    }
    if spec.acceptance.is_empty() && spec.review.is_none() {
        return Err(invalid(
            "acceptance",
            "no acceptance command and no review: nothing independent would verify the work",
        ));
    }
    if let Some(n) = spec.max_repairs
        && n > MAX_REPAIRS_LIMIT
    {
        return Err(invalid(
            "max_repairs",
            format!("{n} is over the limit of {MAX_REPAIRS_LIMIT}"),
        ));
    }
    if let Some(secs) = spec.deadline_secs {
        if secs < MIN_DEADLINE_SECS {
            return Err(invalid(
                "deadline_secs",
                format!("{secs} s is under the minimum of {MIN_DEADLINE_SECS} s"),
            ));
        }
        if secs > MAX_DEADLINE_SECS {
            return Err(invalid(
                "deadline_secs",
                format!("{secs} s is over the maximum of {MAX_DEADLINE_SECS} s"),
            ));
        }
    }
    if let Some(review) = &spec.review {
        check_other_agent("review.agent", "reviewer", &review.agent, spec, facts)?;
    }
    if let Some(decider) = &spec.decider {
        check_other_agent("decider.agent", "decider", &decider.agent, spec, facts)?;
        if let Some(secs) = decider.timeout_secs
            && !(MIN_DECIDER_SECS..=MAX_DECIDER_SECS).contains(&secs)
        {
            return Err(invalid(
                "decider.timeout_secs",
                format!("{secs} s is outside {MIN_DECIDER_SECS}..={MAX_DECIDER_SECS} s"),
            ));
        }
    }
    Ok(())
}

/// A reviewer or decider must exist and must not be the worker: nothing verifies itself.
fn check_other_agent(field: &str, role: &str, name: &str, spec: &TaskSpec, facts: &dyn Facts) -> Result<(), Invalid> {
    if name.trim().is_empty() {
        return Err(invalid(field, format!("empty {role} name")));
    }
    if name == spec.agent {
        return Err(invalid(field, format!("the worker {name:?} cannot be its own {role}")));
    }
    if !facts.agent_exists(name) {
        return Err(invalid(field, format!("no agent named {name:?}")));
    }
    Ok(())
}
