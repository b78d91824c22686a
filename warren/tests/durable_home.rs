//! End to end on a real node process (real SQLite file, real PTYs, the fake
//! CLI): the durable agent home survives `kill -9`, conversations resume with
//! the CLI's native resume, transcripts continue without gaps, and replaying
//! the log reproduces the live projections. The same cases run on Docker
//! guests in docker_durable_home.rs.

mod support;

const RUNTIME: &str = "local";

include!("cases/durable_home.rs");
include!("cases/stranded.rs");
