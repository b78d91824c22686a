//! Supervision decisions, pure: which of nine classes a permission dialog is,
//! whether its action provably stays in the agent's worktree (never the
//! agent's home or `~`, never a write to a protected path, never repository
//! code the conversation changed), whether the answer its CLI's template
//! gives (approve once, deny) may be sent, the effective policy (shipping defaults,
//! per-agent overrides, the two-key lock), the mail retry machine and stall
//! nudges. No IO: the file system is asked only through [`PathResolver`], and
//! time comes in as plain durations.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod audit;
pub mod class;
pub mod decide;
pub mod dialog;
pub mod escalate;
#[doc(hidden)]
pub mod fixtures;
pub mod learned;
pub mod mail;
pub mod options;
pub mod paths;
pub mod policy;
pub mod protected;
pub mod runs;
pub mod scope;
pub mod stall;
pub mod url;

mod argv;
mod credentials;
mod ctx;
mod memo;
mod programs;
mod reason;
mod sed;
mod shell;
mod text;
mod walk;

pub use audit::{AuditDecision, AuditFields, Outcome, Trigger};
pub use class::{DialogClass, classify};
pub use decide::{Decision, DecisionContext, PolicySource, Verdict, decide_dialog};
pub use dialog::{Answer, Answers, Dialog, ESCAPE, Meaning};
pub use dialog::{FRAME_UNVERIFIED, prompt_kind};
pub use escalate::{Escalation, always_escalate, escalation_in};
pub use learned::{LearnedRule, simple_command_words};
pub use mail::{
    MAIL_RETRY_BACKOFF, MailEffect, MailEvent, MailMode, MailState, SendOutcome, decide_mail, delivery_mode,
    undelivered,
};
pub use options::{PromptKind, approve_option, deny_option, is_standing, prompt_kind_of};
pub use paths::{GitAt, Link, NoSymlinks, PathResolver, Scope, resolve_path};
pub use policy::{Action, AgentOverride, ClassActions, Policy, SupervisionConfig, resolve};
pub use protected::{PROTECTED, Pattern, Protected, protected_entry};
pub use runs::{DEFINITIONS, Definition, Runner, definition_for_any};
pub use scope::{NotScoped, command_in_scope, repo_scope, repo_scope_writes};
pub use shell::{Shape, ShapeCommand, shape as shell_shape};
pub use stall::{NUDGE_INTERVAL, StallAction, StallEpisode, StallObservation, StallParams, decide_stall};
pub use url::url_allowed;

/// Errors of this crate: invalid configuration and unknown names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid supervision setting: {0}")]
    Invalid(String),
    #[error("unknown dialog class {0:?}")]
    UnknownClass(String),
}
