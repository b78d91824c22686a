//! The owner's tools (`[tools.NAME]` in warren.toml) and which `warren-<tool>`
//! executables an agent's grants mount (pure; seed 002 section 4). The node
//! runs the tools (`node/src/tools/`); this is what it checks them against.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::events::AgentRecord;
use crate::validate::Invalid;

/// `[tools.NAME]` in warren.toml: a command the node runs for an agent that
/// was granted `NAME`. No shell: `argv` is the program and its arguments,
/// and an element that is exactly `{args}` takes the agent's arguments (else
/// they come last). Only the environment variables named in `env` are
/// passed, with their values from the node's own environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnerTool {
    pub argv: Vec<String>,
    #[serde(default)]
    pub env: Vec<String>,
    /// Working directory (default: the agent's workspace).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Most bytes of stdout and of stderr returned (the rest is dropped).
    #[serde(default = "default_output")]
    pub max_output_bytes: usize,
    /// One line the CLI is told about the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

fn default_timeout() -> u64 {
    30
}

fn default_output() -> usize {
    64 * 1024
}

/// Largest output cap an owner may configure.
const MAX_OUTPUT_CAP: usize = 4 << 20;
/// Longest timeout an owner may configure.
const MAX_TIMEOUT_SECS: u64 = 3_600;

/// Checks `[tools]` at start: names, argv, limits.
pub fn check_owner_tools(tools: &BTreeMap<String, OwnerTool>) -> Result<(), String> {
    for (name, t) in tools {
        let at = format!("[tools.{name}]");
        if crate::validate::agent_name(name).is_err() {
            return Err(format!("{at}: a tool name is letters, digits, - and _ (at most 64)"));
        }
        if capabilities::methods::BUILTIN_TOOLS.contains(&name.as_str()) || ["read", "advise"].contains(&name.as_str())
        {
            return Err(format!("{at}: {name:?} is a built-in tool's name"));
        }
        if t.argv.first().is_none_or(|p| p.is_empty()) {
            return Err(format!("{at} argv: needs the program first"));
        }
        if t.timeout_secs == 0 || t.timeout_secs > MAX_TIMEOUT_SECS {
            return Err(format!(
                "{at} timeout_secs: {} is outside 1..={MAX_TIMEOUT_SECS}",
                t.timeout_secs
            ));
        }
        if t.max_output_bytes == 0 || t.max_output_bytes > MAX_OUTPUT_CAP {
            return Err(format!(
                "{at} max_output_bytes: {} is outside 1..={MAX_OUTPUT_CAP}",
                t.max_output_bytes
            ));
        }
        if let Some(bad) = t.env.iter().find(|v| v.is_empty() || v.contains('=')) {
            return Err(format!("{at} env: {bad:?} is not a variable name"));
        }
    }
    Ok(())
}

/// Checks an agent's `grants.tools`: each is a built-in or a configured
/// owner tool (monitors get `read`/`advise` from their attachments, not here).
pub fn check_grants(owner: &BTreeMap<String, OwnerTool>, tools: &[String]) -> Result<(), Invalid> {
    for t in tools {
        if !capabilities::methods::BUILTIN_TOOLS.contains(&t.as_str()) && !owner.contains_key(t) {
            let mut known: Vec<&str> = capabilities::methods::BUILTIN_TOOLS.to_vec();
            known.extend(owner.keys().map(String::as_str));
            return Err(Invalid {
                field: "grants.tools",
                problem: format!(
                    "{t:?} is no tool of this node (built-in or [tools.NAME] in warren.toml): one of {}",
                    known.join(", ")
                ),
            });
        }
    }
    Ok(())
}

/// The tools a launch of `agent` mounts, without the `warren-` prefix, in a
/// stable order: its granted built-ins and owner tools that exist, `recall`
/// when `grants.recall` is set, and a monitor's `read` (watching) and
/// `advise` (an attachment that may inject).
pub fn mounted(
    agent: &AgentRecord,
    owner: &BTreeMap<String, OwnerTool>,
    watching: bool,
    advising: bool,
) -> Vec<String> {
    let mut out: Vec<String> = vec![];
    let mut add = |t: &str| {
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    };
    for t in &agent.grants.tools {
        if capabilities::methods::BUILTIN_TOOLS.contains(&t.as_str()) || owner.contains_key(t) {
            add(t);
        }
    }
    if agent.grants.recall {
        add("recall");
    }
    if watching {
        add("read");
    }
    if advising {
        add("advise");
    }
    out
}

/// Whether the agent's current definition still grants `tool` (a grant
/// withdrawn while a conversation runs is refused at once).
pub fn still_granted(agent: &AgentRecord, tool: &str) -> bool {
    agent.grants.tools.iter().any(|t| t == tool) || (tool == "recall" && agent.grants.recall)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An owner tool running `argv`, as warren.toml would give it.
    fn tool(argv: &[&str]) -> OwnerTool {
        serde_json::from_value(serde_json::json!({ "argv": argv })).expect("an owner tool")
    }

    fn agent(tools: &[&str], recall: bool) -> AgentRecord {
        let mut a: AgentRecord = serde_json::from_value(serde_json::json!({
            "name": "a", "harness": "fake", "grants": {}
        }))
        .expect("record");
        a.grants.tools = tools.iter().map(|s| s.to_string()).collect();
        a.grants.recall = recall;
        a
    }

    #[test]
    fn the_mounted_set_is_the_grant() {
        let owner = BTreeMap::from([("deploy".to_string(), tool(&["/bin/true"]))]);
        let a = agent(&["mail", "deploy", "gone", "mail"], true);
        assert_eq!(mounted(&a, &owner, false, false), ["mail", "deploy", "recall"]);
        assert_eq!(mounted(&agent(&[], false), &owner, true, false), ["read"]);
        assert_eq!(mounted(&agent(&[], false), &owner, true, true), ["read", "advise"]);
        assert!(mounted(&agent(&[], false), &owner, false, false).is_empty());
        assert!(still_granted(&a, "recall") && still_granted(&a, "deploy") && !still_granted(&a, "supervision"));
    }

    #[test]
    fn grants_name_known_tools() {
        let owner = BTreeMap::from([("deploy".to_string(), tool(&["/bin/true"]))]);
        check_grants(&owner, &["mail".into(), "deploy".into()]).expect("known");
        let e = check_grants(&owner, &["dpeloy".into()]).expect_err("typo");
        assert!(
            e.problem.contains("dpeloy") && e.problem.contains("deploy"),
            "{}",
            e.problem
        );
    }

    #[test]
    fn owner_tools_are_checked_at_start() {
        let cases: &[(&str, OwnerTool, &str)] = &[
            ("mail", tool(&["/bin/true"]), "built-in"),
            ("x y", tool(&["/bin/true"]), "tool name"),
            ("t", tool(&[]), "program first"),
            (
                "t",
                OwnerTool {
                    timeout_secs: 0,
                    ..tool(&["/bin/true"])
                },
                "timeout_secs",
            ),
            (
                "t",
                OwnerTool {
                    max_output_bytes: usize::MAX,
                    ..tool(&["/bin/true"])
                },
                "max_output_bytes",
            ),
            (
                "t",
                OwnerTool {
                    env: vec!["A=B".into()],
                    ..tool(&["/bin/true"])
                },
                "env",
            ),
        ];
        for (name, t, why) in cases {
            let e = check_owner_tools(&BTreeMap::from([(name.to_string(), t.clone())])).expect_err(why);
            assert!(e.contains(why), "{name}: {e}");
        }
        check_owner_tools(&BTreeMap::from([("deploy".to_string(), tool(&["/bin/true"]))])).expect("fine");
    }
}
