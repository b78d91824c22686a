//! The durable-home suite (tests/cases/durable_home.rs) on the Docker
//! runtime: every conversation in its own guest container built from this
//! test build's `warren`. Needs a Docker engine: without one these fail.

mod support;

const RUNTIME: &str = "docker";

include!("cases/durable_home.rs");
include!("cases/stranded.rs");
include!("cases/monitors.rs");
include!("cases/tools.rs");
