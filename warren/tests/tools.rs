//! Tools as grants on a real node with the local runtime (the Docker runtime
//! runs the same cases in docker_durable_home.rs): the conversation's PATH
//! holds exactly its granted `warren-*` tools, an owner tool runs on the node
//! with a secret the guest never sees, mail waits for the next conversation,
//! and withdrawn grants are refused at once.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

const RUNTIME: &str = "local";

include!("cases/tools.rs");
