//! The rights vocabulary: resources and operations, and their spelling inside
//! tokens (`right("agent:coder", "observe")`).

use std::fmt;
use std::str::FromStr;

/// What a right lets its holder do: declared with the method registry (each
/// method names the operation it needs), spelled the same in tokens.
pub use console_api::registry::Operation;

/// What a right is about.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Resource {
    /// The whole node: a right on it covers everything the node holds.
    Node,
    /// Every agent of the fleet (`agent:*`).
    AllAgents,
    Agent(String),
    Conversation(String),
    /// An owner-defined tool of the node's warren.toml (`tool:NAME`).
    Tool(String),
    /// One held dialog (`hold:ID`): a call that answers a hold touches it,
    /// so a token can be narrowed to that one hold. No right names a hold.
    Hold(String),
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::Node => f.write_str("node"),
            Resource::AllAgents => f.write_str("agent:*"),
            Resource::Agent(a) => write!(f, "agent:{a}"),
            Resource::Conversation(c) => write!(f, "conversation:{c}"),
            Resource::Tool(t) => write!(f, "tool:{t}"),
            Resource::Hold(h) => write!(f, "hold:{h}"),
        }
    }
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

impl FromStr for Resource {
    type Err = String;
    fn from_str(s: &str) -> Result<Resource, String> {
        let bad =
            || format!("resource {s:?} must be `node`, `agent:*`, `agent:NAME`, `conversation:ID` or `tool:NAME`");
        if s == "node" {
            return Ok(Resource::Node);
        }
        if s == "agent:*" {
            return Ok(Resource::AllAgents);
        }
        if let Some(a) = s.strip_prefix("agent:") {
            return valid_name(a).then(|| Resource::Agent(a.to_string())).ok_or_else(bad);
        }
        if let Some(c) = s.strip_prefix("conversation:") {
            return valid_name(c)
                .then(|| Resource::Conversation(c.to_string()))
                .ok_or_else(bad);
        }
        if let Some(t) = s.strip_prefix("tool:") {
            return valid_name(t).then(|| Resource::Tool(t.to_string())).ok_or_else(bad);
        }
        Err(bad())
    }
}

/// One right: an operation on a resource.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Right {
    pub resource: Resource,
    pub operation: Operation,
}

impl Right {
    pub fn new(resource: Resource, operation: Operation) -> Right {
        Right { resource, operation }
    }

    /// `RESOURCE:OPERATION`, e.g. `agent:coder:observe` (the CLI's spelling).
    pub fn parse_cli(s: &str) -> Result<Right, String> {
        let (resource, operation) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("right {s:?} must look like RESOURCE:OPERATION, e.g. agent:coder:observe"))?;
        Ok(Right::new(resource.parse()?, operation.parse()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_and_operations_round_trip() {
        for s in ["node", "agent:*", "agent:coder-1", "conversation:c-00ab"] {
            assert_eq!(s.parse::<Resource>().expect(s).to_string(), s);
        }
        for bad in ["", "agent:", "agent:a b", "conversation:\"x", "nodes", "agent:a\",\"b"] {
            assert!(bad.parse::<Resource>().is_err(), "{bad}");
        }
        for o in Operation::ALL {
            assert_eq!(o.as_str().parse::<Operation>(), Ok(o));
        }
        assert!("read".parse::<Operation>().expect_err("unknown").contains("observe"));
        let r = Right::parse_cli("agent:coder:observe").expect("parse");
        assert_eq!(r, Right::new(Resource::Agent("coder".into()), Operation::Observe));
        assert!(Right::parse_cli("observe").is_err());
    }
}
