//! The real Codex CLI under supervision, offline: the project's fake model
//! answers on its Responses API side, `run: CMD` makes Codex ask to run a
//! command outside its sandbox, and Codex asks its real approval dialog.
//! Repo-scoped commands are approved without a human, the rest held; the
//! transcript comes from Codex's rollout, spend and quota from its
//! `token_count` events, and pause + continue uses `codex resume`.

mod support;

const RUNTIME: &str = "local";

include!("cases/codex.rs");
