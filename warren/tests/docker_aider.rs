//! The real aider tier inside the `aider` guest image: the same round trip,
//! supervision approve and hold scenarios, spend and resume as aider.rs,
//! through node -> container -> guest -> real aider -> the fake model server.
//! Needs a Docker engine: without one these fail.

mod support;

const RUNTIME: &str = "docker";

include!("cases/aider.rs");
