//! Policy: the shipping defaults, per-agent overrides merged field by field, and
//! the two-key lock (master switch AND the agent's opt-in).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::class::DialogClass;
use crate::mail::{MAIL_RETRY_BACKOFF, MailMode};
use crate::stall::{NUDGE_INTERVAL, StallParams};

/// What supervision does with a dialog of some class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    AutoApprove,
    AutoDeny,
    Hold,
}

/// The action for each of the nine classes. Missing fields take the shipping
/// default, so a config may list only what it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ClassActions {
    pub credential_access: Action,
    pub push_remote: Action,
    pub install: Action,
    pub device_access: Action,
    pub network_access: Action,
    pub deletion: Action,
    pub file_write: Action,
    pub command_exec: Action,
    pub unknown: Action,
}

impl Default for ClassActions {
    /// Seed 000's shipping defaults: only `command_exec` and `file_write`
    /// auto-approve (and only when repo-scoped); everything else holds; nothing
    /// auto-denies.
    fn default() -> Self {
        ClassActions {
            credential_access: Action::Hold,
            push_remote: Action::Hold,
            install: Action::Hold,
            device_access: Action::Hold,
            network_access: Action::Hold,
            deletion: Action::Hold,
            file_write: Action::AutoApprove,
            command_exec: Action::AutoApprove,
            unknown: Action::Hold,
        }
    }
}

impl ClassActions {
    pub fn get(&self, class: DialogClass) -> Action {
        match class {
            DialogClass::CredentialAccess => self.credential_access,
            DialogClass::PushRemote => self.push_remote,
            DialogClass::Install => self.install,
            DialogClass::DeviceAccess => self.device_access,
            DialogClass::NetworkAccess => self.network_access,
            DialogClass::Deletion => self.deletion,
            DialogClass::FileWrite => self.file_write,
            DialogClass::CommandExec => self.command_exec,
            DialogClass::Unknown => self.unknown,
        }
    }

    pub fn set(&mut self, class: DialogClass, action: Action) {
        let slot = match class {
            DialogClass::CredentialAccess => &mut self.credential_access,
            DialogClass::PushRemote => &mut self.push_remote,
            DialogClass::Install => &mut self.install,
            DialogClass::DeviceAccess => &mut self.device_access,
            DialogClass::NetworkAccess => &mut self.network_access,
            DialogClass::Deletion => &mut self.deletion,
            DialogClass::FileWrite => &mut self.file_write,
            DialogClass::CommandExec => &mut self.command_exec,
            DialogClass::Unknown => &mut self.unknown,
        };
        *slot = action;
    }
}

/// The default nudge line.
pub const DEFAULT_NUDGE_TEXT: &str = "Check your warren mail and act on it.";

/// The global `[supervision]` section. `Default` is the conservative shipping
/// baseline: off, nudge mail, 20-minute stalls, 2 nudges.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SupervisionConfig {
    /// The master switch.
    pub enabled: bool,
    pub nudge_text: String,
    pub mail_mode: MailMode,
    pub stall_mins: u32,
    pub nudge_retries: u32,
    pub classes: ClassActions,
    /// Test and development knob: a stall threshold in seconds that replaces
    /// `stall_mins` when set. Absent in shipped configs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_secs: Option<u64>,
    /// Test and development knob: the spacing of stall nudges in seconds
    /// (5 minutes when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nudge_interval_secs: Option<u64>,
    /// Test and development knob: the mail retry back-off in seconds (30 when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mail_retry_secs: Option<u64>,
}

impl Default for SupervisionConfig {
    fn default() -> Self {
        SupervisionConfig {
            enabled: false,
            nudge_text: DEFAULT_NUDGE_TEXT.to_string(),
            mail_mode: MailMode::Nudge,
            stall_mins: 20,
            nudge_retries: 2,
            classes: ClassActions::default(),
            stall_secs: None,
            nudge_interval_secs: None,
            mail_retry_secs: None,
        }
    }
}

/// The most nudges one stall episode may send.
pub const MAX_NUDGE_RETRIES: u32 = 20;
/// The longest nudge line, in characters.
pub const MAX_NUDGE_TEXT: usize = 500;

fn check_nudge_text(text: &str) -> Result<(), crate::Error> {
    if text.trim().is_empty() {
        return Err(crate::Error::Invalid("nudge_text is empty".into()));
    }
    if text.chars().count() > MAX_NUDGE_TEXT {
        return Err(crate::Error::Invalid(format!(
            "nudge_text is longer than {MAX_NUDGE_TEXT} characters"
        )));
    }
    if text.chars().any(char::is_control) {
        return Err(crate::Error::Invalid(
            "nudge_text must be one line without control characters".into(),
        ));
    }
    Ok(())
}

fn check_counts(stall_mins: Option<u32>, nudge_retries: Option<u32>) -> Result<(), crate::Error> {
    if stall_mins == Some(0) {
        return Err(crate::Error::Invalid("stall_mins must be at least 1".into()));
    }
    if nudge_retries.is_some_and(|n| n > MAX_NUDGE_RETRIES) {
        return Err(crate::Error::Invalid(format!(
            "nudge_retries must be at most {MAX_NUDGE_RETRIES}"
        )));
    }
    Ok(())
}

impl SupervisionConfig {
    /// Rejects values the node must not act on: an empty or multi-line nudge,
    /// a zero stall threshold, an unbounded nudge count.
    pub fn validate(&self) -> Result<(), crate::Error> {
        check_nudge_text(&self.nudge_text)?;
        check_counts(Some(self.stall_mins), Some(self.nudge_retries))?;
        if self.stall_secs == Some(0) {
            return Err(crate::Error::Invalid("stall_secs must be at least 1".into()));
        }
        Ok(())
    }
}

/// One agent's stored overrides: only the fields it changes. An agent with no
/// stored override is not supervised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct AgentOverride {
    /// The agent's own opt-in (the second key).
    pub enabled: bool,
    /// Per-class actions that replace the global ones; unlisted classes keep the global action.
    pub classes: BTreeMap<DialogClass, Action>,
    pub mail_mode: Option<MailMode>,
    pub nudge_text: Option<String>,
    pub stall_mins: Option<u32>,
    pub nudge_retries: Option<u32>,
    /// "Expect this agent to act on mail": counts as outstanding work for stalls.
    pub expect_work: bool,
}

impl AgentOverride {
    pub fn validate(&self) -> Result<(), crate::Error> {
        if let Some(text) = &self.nudge_text {
            check_nudge_text(text)?;
        }
        check_counts(self.stall_mins, self.nudge_retries)
    }
}

/// The effective policy for one agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policy {
    /// Supervision acts on this agent: master AND agent opt-in.
    pub enabled: bool,
    /// The master switch as it was.
    pub master: bool,
    /// The agent's own opt-in as it was (false without a stored override).
    pub agent_opted_in: bool,
    pub classes: ClassActions,
    pub mail_mode: MailMode,
    pub nudge_text: String,
    pub stall_mins: u32,
    pub nudge_retries: u32,
    pub expect_work: bool,
    /// The stall threshold (from `stall_secs` when set, else `stall_mins`).
    pub stall_threshold: Duration,
    pub nudge_interval: Duration,
    pub mail_retry_backoff: Duration,
}

/// Merges an agent's override onto the global defaults, field by field, and
/// applies the two-key lock: `enabled = defaults.enabled && agent.is_some_and(|a| a.enabled)`.
pub fn resolve(defaults: &SupervisionConfig, agent: Option<&AgentOverride>) -> Policy {
    let mut classes = defaults.classes;
    if let Some(a) = agent {
        for (class, action) in &a.classes {
            classes.set(*class, *action);
        }
    }
    let agent_opted_in = agent.is_some_and(|a| a.enabled);
    let agent_stall_mins = agent.and_then(|a| a.stall_mins);
    let stall_mins = agent_stall_mins.unwrap_or(defaults.stall_mins);
    // An agent that sets its own minutes wins over the global seconds knob.
    let stall_threshold = match (agent_stall_mins, defaults.stall_secs) {
        (None, Some(secs)) => Duration::from_secs(secs),
        _ => Duration::from_secs(u64::from(stall_mins) * 60),
    };
    Policy {
        enabled: defaults.enabled && agent_opted_in,
        master: defaults.enabled,
        agent_opted_in,
        classes,
        mail_mode: agent.and_then(|a| a.mail_mode).unwrap_or(defaults.mail_mode),
        nudge_text: agent
            .and_then(|a| a.nudge_text.clone())
            .unwrap_or_else(|| defaults.nudge_text.clone()),
        stall_mins,
        nudge_retries: agent.and_then(|a| a.nudge_retries).unwrap_or(defaults.nudge_retries),
        expect_work: agent.is_some_and(|a| a.expect_work),
        stall_threshold,
        nudge_interval: defaults.nudge_interval_secs.map_or(NUDGE_INTERVAL, Duration::from_secs),
        mail_retry_backoff: defaults.mail_retry_secs.map_or(MAIL_RETRY_BACKOFF, Duration::from_secs),
    }
}

impl Policy {
    /// The configured action for a class.
    pub fn action(&self, class: DialogClass) -> Action {
        self.classes.get(class)
    }

    /// Why supervision is off for this agent, or `None` when it is on.
    pub fn off_reason(&self) -> Option<&'static str> {
        match (self.master, self.agent_opted_in) {
            (false, _) => Some("the supervision master switch is off"),
            (true, false) => Some("this agent has not opted in to supervision"),
            (true, true) => None,
        }
    }

    /// The stall parameters for `decide_stall`.
    pub fn stall_params(&self) -> StallParams {
        StallParams {
            threshold: self.stall_threshold,
            interval: self.nudge_interval,
            retries: self.nudge_retries,
        }
    }
}
