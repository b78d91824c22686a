//! Tasks: the pure decision core of unattended work (seed 001, issue 26).
//!
//! A task gives a worker agent a goal on its own workspace branch; the node verifies every
//! turn's result with acceptance commands it runs itself and, when asked, an independent
//! reviewer; failures become bounded repair rounds; success is a local commit, recorded
//! once; what cannot pass is parked with its branch and evidence.
//!
//! - [`spec`]: [`TaskSpec`] (`task.start`) and [`validate`], the bad-input rules.
//! - [`decide()`]: `(task, input, now) -> events + effects`, refusing invalid transitions.
//! - [`fold`]: [`TaskEvent`], what the node stores, and [`apply`]/[`replay`], the fold
//!   that rebuilds a [`Task`] from them (`replay(log) == live`).
//! - [`wire`]: the `task.get` object.
//!
//! This crate does no IO and reads no clock: time arrives as `now_ms`. The node (its
//! `work` subsystem, `node/src/work/`) owns the IO: it records each [`Decision`]'s
//! events in its log before carrying out its [`Effect`]s in order (running checks, starting the review,
//! sending messages, committing), feeds what it observes back as [`Input`]s through one
//! serial queue per task, and schedules [`Input::Tick`] at [`Task::next_wakeup`].
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod boundary;
pub mod decide;
pub mod fold;
mod io;
pub mod messages;
pub mod spec;
pub mod state;
pub mod wire;

pub use boundary::{HeldFacts, decider_may_approve};
pub use decide::{CheckOutcome, Decision, Effect, Input, Placement, Refused, create, decide};
pub use fold::{Created, FoldError, TaskEvent, apply, replay};
pub use spec::{Authority, DeciderSpec, Facts, Invalid, ReviewSpec, TaskSpec, validate};
pub use state::{Task, TaskState};
pub use wire::TaskObject;
