//! Monitor-agent decisions, pure: which attachments are valid, which attributed
//! transcript deltas fire a keyword trigger (each delta evaluated exactly once),
//! how hits coalesce into serial wakes per monitor, when the per-attachment
//! circuit breaker trips, and the text a woken monitor receives and injects.
//! No IO: the node subscribes to transcripts, persists events, starts monitor
//! conversations and sends messages; time comes in as unix milliseconds.
//!
//! The pieces, in the order a delta meets them: [`validate`] turns an
//! [`AttachmentSpec`] (the `monitor.attach` params) into an [`Attachment`];
//! a [`Watch`] per attachment holds its compiled [`Trigger`], its [`Cursor`]
//! and its [`Breaker`] and turns each [`Delta`] into [`Hit`]s; a
//! [`WakeQueue`] per monitor coalesces hits into [`Batch`]es and wakes serially;
//! [`trigger_message`] renders a batch for the monitor's conversation and
//! [`advise`] the advice it injects.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod advice;
pub mod attachment;
pub mod breaker;
pub mod cursor;
pub mod matcher;
pub mod speaker;
pub mod trigger_message;
pub mod wake;
pub mod watch;

mod text;

pub use advice::{ADVICE_PREFIX_MAX_BYTES, MAX_ADVICE_BYTES, advice_text, advise, validate_advice};
pub use attachment::{Attachment, BreakerConfig, Case, Keyword, Mode, Speakers, Target, TriggerConfig};
pub use attachment::{
    AttachmentSpec, BreakerSpec, DEFAULT_MAX_CYCLES, DEFAULT_MAX_WAKES, DEFAULT_WINDOW_MINS, KeywordSpec,
    MAX_CONVERSATION_ID_BYTES, MAX_KEYWORD_BYTES, MAX_KEYWORDS, MAX_KEYWORDS_TOTAL_BYTES, TargetSpec, TriggerSpec,
    validate,
};
pub use breaker::{Breaker, BreakerEvent, BreakerState, Refused, TripReason, Tripped, apply};
pub use cursor::Cursor;
pub use matcher::{Delta, EXCERPT_CONTEXT_CHARS, Excerpt, Hit, Trigger};
pub use speaker::Speaker;
pub use trigger_message::{MAX_TRIGGER_MESSAGE_BYTES, trigger_message};
pub use wake::{
    Action, Batch, BatchKeyword, MAX_BATCH_EXCERPTS, MAX_EXCERPTS_PER_KEYWORD, WakeKey, WakeQueue, WakeState,
};
pub use watch::{ADVICE_ECHO_MS, ADVICE_REMEMBERED, Evaluation, Watch};

/// Errors of this crate. Every message names the field and the rule it broke,
/// so the node can return it to the caller as is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// A field of `monitor.attach` (or an advice text) breaks a rule.
    #[error("{field}: {problem}")]
    Invalid { field: String, problem: String },
    /// The keyword automaton could not be built (a size limit of the
    /// matcher; validated attachments stay far below it).
    #[error("trigger.keywords: the keyword matcher could not be built: {0}")]
    Matcher(String),
}

impl Error {
    pub(crate) fn invalid(field: impl Into<String>, problem: impl Into<String>) -> Error {
        Error::Invalid {
            field: field.into(),
            problem: problem.into(),
        }
    }
}
