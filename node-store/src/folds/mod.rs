//! The pure folds of each subsystem's events, applied by the catalog: the
//! fleet's membership, monitors' attachments and breakers, budgets, and the
//! workspaces' accepted definitions.

pub mod budget;
pub mod definitions;
pub mod fleet;
pub mod monitors;
pub mod tasks;
