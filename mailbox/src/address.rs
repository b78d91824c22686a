//! Where a message goes: an agent on the sender's node (`NAME`) or one homed
//! on another member of the fleet (`NAME@NODE`). Parsing only; whether the
//! node is a member is the node's to say.

use crate::MailError;

/// Most bytes of a node's name in an address.
pub const MAX_NODE_NAME: usize = 253;
/// Most bytes of a message id a member may hand over.
pub const MAX_ID_BYTES: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address<'a> {
    Local(&'a str),
    Remote { agent: &'a str, node: &'a str },
}

/// Splits `to` into its agent and (when it names one) its node; both parts
/// must be well formed: the agent 1-63 of `a-z 0-9 -` starting with a
/// letter, the node 1-253 of `A-Z a-z 0-9 . _ -`.
pub fn parse(to: &str) -> Result<Address<'_>, MailError> {
    let bad = |reason: String| MailError::Invalid { field: "to", reason };
    let (agent, node) = match to.split_once('@') {
        Some((a, n)) => (a, Some(n)),
        None => (to, None),
    };
    if !agent_name(agent) {
        return Err(bad(format!(
            "{to:?}: {agent:?} is not an agent name (1-63 chars of a-z, 0-9 and '-', starting with a letter)"
        )));
    }
    match node {
        None => Ok(Address::Local(agent)),
        Some(node) if node_name(node) => Ok(Address::Remote { agent, node }),
        Some(node) => Err(bad(format!(
            "{to:?}: {node:?} is not a node name (1-{MAX_NODE_NAME} chars of A-Z, a-z, 0-9, '.', '_' and '-')"
        ))),
    }
}

fn agent_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && !s.ends_with('-')
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn node_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NODE_NAME
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A message id a member hands over: `mail-` then 1-59 of `A-Z a-z 0-9 -`
/// (what the node's own ids look like), so it is safe to store and show.
pub fn check_id(id: &str) -> Result<(), MailError> {
    let ok = id.len() <= MAX_ID_BYTES
        && id
            .strip_prefix("mail-")
            .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if ok {
        Ok(())
    } else {
        Err(MailError::Invalid {
            field: "id",
            reason: format!("{:?} is not a message id", id.chars().take(80).collect::<String>()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_name_an_agent_and_maybe_its_node() {
        assert_eq!(parse("bob"), Ok(Address::Local("bob")));
        assert_eq!(
            parse("bob@n3"),
            Ok(Address::Remote {
                agent: "bob",
                node: "n3"
            })
        );
        assert_eq!(
            parse("bob-2@build.host_A-1"),
            Ok(Address::Remote {
                agent: "bob-2",
                node: "build.host_A-1"
            })
        );
        let table = [
            ("", "is not an agent name"),
            ("Bob@n3", "is not an agent name"),
            ("@n3", "is not an agent name"),
            ("bob@", "is not a node name"),
            ("bob@n3@n4", "is not a node name"),
            ("bob@n 3", "is not a node name"),
            ("bob@n3/x", "is not a node name"),
        ];
        for (to, why) in table {
            let e = parse(to).expect_err(to).to_string();
            assert!(e.starts_with("to: ") && e.contains(why), "{to:?}: {e}");
        }
        let long = format!("bob@{}", "n".repeat(MAX_NODE_NAME + 1));
        assert!(parse(&long).is_err());
    }

    #[test]
    fn only_node_made_ids_are_taken() {
        assert_eq!(check_id("mail-01HZX3-abc"), Ok(()));
        for bad in [
            "",
            "mail-",
            "msg-1",
            "mail-a b",
            "mail-\u{1b}",
            &format!("mail-{}", "a".repeat(60)),
        ] {
            assert!(check_id(bad).is_err(), "{bad:?}");
        }
    }
}
