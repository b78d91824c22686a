//! The real aider CLI under supervision, offline: the project's fake model
//! answers on its OpenAI-compatible side, `run: CMD` makes it suggest a shell
//! command and `create: PATH` a new file, and aider asks its real
//! confirmations. Repo-scoped ones are approved without a human, the rest
//! held; the transcript comes from aider's chat history, spend from its
//! analytics log, and pause + continue uses `--restore-chat-history`.

mod support;

const RUNTIME: &str = "local";

include!("cases/aider.rs");
