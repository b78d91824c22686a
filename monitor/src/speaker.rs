//! `Speaker`: who said a transcript delta (`human`, `agent`, `tool`,
//! `system`, `monitor:<agent>`), as named in a trigger's speaker filter.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::text::is_agent_ref;

/// One speaker of an attributed transcript. On the wire it is the plain
/// string the transcript carries.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Speaker {
    Human,
    /// The target agent's own output.
    Agent,
    Tool,
    System,
    /// Advice injected by the monitor agent of this name (`NAME` or
    /// `NAME@NODE`).
    Monitor(String),
}

impl Speaker {
    /// The transcript's speaker string, or `None` when it names no speaker.
    pub fn parse(s: &str) -> Option<Speaker> {
        Some(match s {
            "human" => Speaker::Human,
            "agent" => Speaker::Agent,
            "tool" => Speaker::Tool,
            "system" => Speaker::System,
            _ => {
                let name = s.strip_prefix("monitor:")?;
                if !is_agent_ref(name) {
                    return None;
                }
                Speaker::Monitor(name.to_string())
            }
        })
    }

    /// Whether a delta's speaker string is this speaker (no allocation).
    pub fn is(&self, speaker: &str) -> bool {
        match self {
            Speaker::Human => speaker == "human",
            Speaker::Agent => speaker == "agent",
            Speaker::Tool => speaker == "tool",
            Speaker::System => speaker == "system",
            Speaker::Monitor(name) => speaker.strip_prefix("monitor:") == Some(name.as_str()),
        }
    }
}

impl fmt::Display for Speaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Speaker::Human => f.write_str("human"),
            Speaker::Agent => f.write_str("agent"),
            Speaker::Tool => f.write_str("tool"),
            Speaker::System => f.write_str("system"),
            Speaker::Monitor(name) => write!(f, "monitor:{name}"),
        }
    }
}

impl TryFrom<String> for Speaker {
    type Error = String;

    fn try_from(s: String) -> Result<Speaker, String> {
        Speaker::parse(&s).ok_or_else(|| format!("{s:?} is not a speaker (human, agent, tool, system, monitor:NAME)"))
    }
}

impl From<Speaker> for String {
    fn from(s: Speaker) -> String {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_print() {
        let cases = [
            ("human", Some(Speaker::Human)),
            ("agent", Some(Speaker::Agent)),
            ("tool", Some(Speaker::Tool)),
            ("system", Some(Speaker::System)),
            ("monitor:lint", Some(Speaker::Monitor("lint".into()))),
            ("monitor:lint@n-2", Some(Speaker::Monitor("lint@n-2".into()))),
            ("monitor:", None),
            ("monitor:Bad", None),
            ("robot", None),
            ("Human", None),
            ("", None),
        ];
        for (s, want) in cases {
            let got = Speaker::parse(s);
            assert_eq!(got, want, "{s:?}");
            if let Some(sp) = got {
                assert_eq!(sp.to_string(), s);
                assert!(sp.is(s));
            }
        }
        assert!(!Speaker::Monitor("lint".into()).is("monitor:linter"));
        assert!(!Speaker::Human.is("agent"));
    }

    #[test]
    fn serde_is_the_plain_string() {
        let s: Speaker = serde_json::from_str("\"monitor:lint\"").unwrap();
        assert_eq!(s, Speaker::Monitor("lint".into()));
        assert_eq!(serde_json::to_string(&Speaker::Tool).unwrap(), "\"tool\"");
        assert!(serde_json::from_str::<Speaker>("\"robot\"").is_err());
    }
}
