//! Which member answers a call: the pure part of routing. A call names what
//! it is about in one param (an agent, a conversation, a hold, or for
//! `agent.create` a node); an agent may be addressed `NAME@NODE` anywhere in
//! the fleet, a bare `NAME` is the local node's agent, else the fleet's only
//! agent of that name.

use serde_json::Value;

/// What a call is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `NAME` or `NAME@NODE`.
    Agent(String),
    Conversation(String),
    Hold(String),
    /// A node by name or id (`agent.create {node}`).
    Node(String),
}

/// The target and the param that named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aim {
    pub target: Target,
    pub field: &'static str,
}

/// Methods about one agent or conversation, routed to its home. Everything
/// else (node, fleet, token and session methods, hooks, mail) is answered
/// where it is asked.
const ROUTED: &[&str] = &[
    "agent.get",
    "agent.update",
    "agent.archive",
    "agent.login",
    "agent.secret.set",
    "agent.secret.unset",
    "agent.secret.list",
    "conversation.start",
    "conversation.continue",
    "conversation.pause",
    "conversation.terminate",
    "conversation.get",
    "conversation.list",
    "conversation.screen",
    "conversation.sendMessage",
    "conversation.sendKeys",
    "conversation.resize",
    "transcript.read",
    "transcript.subscribe",
    "terminal.subscribe",
    "events.subscribe",
    "supervision.get",
    "supervision.set",
    "supervision.status",
    "supervision.holds",
    "supervision.rules",
    "supervision.learn",
    "supervision.forget",
    "supervision.audit",
    "supervision.nudge",
    "mailbox.inbox",
    "mailbox.ack",
    "budget.get",
    "budget.set",
    "budget.topup",
];

/// Methods whose answer is a stream of notifications afterwards.
pub const STREAMS: &[&str] = &["transcript.subscribe", "terminal.subscribe", "events.subscribe"];

/// Methods that merge every member's answer when asked `{fleet: true}`,
/// with the key of the list they answer.
pub const FANOUT: &[(&str, &str)] = &[("agent.list", "agents"), ("conversation.list", "conversations")];

/// What `method` with `params` is about, if it is routed at all.
pub fn aim(method: &str, params: Option<&Value>) -> Option<Aim> {
    let s = |k: &str| {
        params
            .and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    let aim = |target, field| Some(Aim { target, field });
    match method {
        "agent.create" => aim(Target::Node(s("node")?), "node"),
        "supervision.answer" => aim(Target::Hold(s("hold")?), "hold"),
        "usage.get" => match s("scope").as_deref() {
            Some("agent") => aim(Target::Agent(s("id")?), "id"),
            Some("conversation") => aim(Target::Conversation(s("id")?), "id"),
            // `{scope: "node", id: NODE}`: that member's usage.
            Some("node") => aim(Target::Node(s("id")?), "id"),
            _ => None,
        },
        m if ROUTED.contains(&m) => {
            if let Some(c) = s("conversation") {
                aim(Target::Conversation(c), "conversation")
            } else {
                aim(Target::Agent(s("agent")?), "agent")
            }
        }
        _ => None,
    }
}

/// `NAME@NODE` -> (`NAME`, `Some(NODE)`); a bare name has no node.
pub fn split_address(address: &str) -> (&str, Option<&str>) {
    match address.rsplit_once('@') {
        Some((name, node)) => (name, Some(node)),
        None => (address, None),
    }
}

/// `params` with `field` set to `value` (the bare name a home knows).
pub fn with_field(params: Option<Value>, field: &str, value: &str) -> Option<Value> {
    let mut p = params?;
    if let Some(o) = p.as_object_mut() {
        o.insert(field.to_string(), Value::String(value.to_string()));
    }
    Some(p)
}

/// `params` without `field`.
pub fn without_field(params: Option<Value>, field: &str) -> Option<Value> {
    let mut p = params?;
    if let Some(o) = p.as_object_mut() {
        o.remove(field);
    }
    Some(p)
}

/// `params` without a `fleet` flag, for a fan-out method answered here.
pub fn without_fleet_flag(method: &str, params: Option<Value>) -> Option<Value> {
    if FANOUT.iter().any(|(m, _)| *m == method) {
        without_field(params, "fleet")
    } else {
        params
    }
}

/// Whether `{fleet: true}` asks a fan-out method for every member's list.
pub fn wants_fleet(method: &str, params: Option<&Value>) -> Option<&'static str> {
    let (_, key) = FANOUT.iter().find(|(m, _)| *m == method)?;
    let fleet = params.and_then(|p| p.get("fleet")).and_then(Value::as_bool)?;
    fleet.then_some(key)
}

/// Conversation ids an answer names (so their home is remembered).
pub fn conversations_in(result: &Value) -> Vec<String> {
    let id = |v: &Value| v.get("id").and_then(Value::as_str).map(str::to_string);
    let mut out: Vec<String> = result.get("conversation").and_then(id).into_iter().collect();
    if let Some(list) = result.get("conversations").and_then(Value::as_array) {
        out.extend(list.iter().filter_map(id));
    }
    out
}

/// A notification of a forwarded subscription, renamed to the local
/// subscription id; `None` when it is not a notification.
pub fn renamed_note(text: &str, local: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(text).ok()?;
    let params = v.get_mut("params")?.as_object_mut()?;
    params.insert("subscription".into(), Value::String(local.to_string()));
    serde_json::to_string(&v).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A method, its params, and what it should aim at.
    type Case = (&'static str, Value, Option<(Target, &'static str)>);

    #[test]
    fn calls_aim_at_what_they_name() {
        let table: &[Case] = &[
            (
                "agent.get",
                json!({"agent": "a@n3"}),
                Some((Target::Agent("a@n3".into()), "agent")),
            ),
            (
                "conversation.sendMessage",
                json!({"conversation": "c-1", "text": "hi"}),
                Some((Target::Conversation("c-1".into()), "conversation")),
            ),
            (
                "transcript.subscribe",
                json!({"agent": "a"}),
                Some((Target::Agent("a".into()), "agent")),
            ),
            (
                "transcript.subscribe",
                json!({"conversation": "c-2", "agent": "a"}),
                Some((Target::Conversation("c-2".into()), "conversation")),
            ),
            (
                "agent.create",
                json!({"name": "a", "harness": "fake", "node": "n2"}),
                Some((Target::Node("n2".into()), "node")),
            ),
            ("agent.create", json!({"name": "a", "harness": "fake"}), None),
            (
                "supervision.answer",
                json!({"hold": "h-1", "decision": "approve"}),
                Some((Target::Hold("h-1".into()), "hold")),
            ),
            (
                "usage.get",
                json!({"scope": "agent", "id": "a@n2"}),
                Some((Target::Agent("a@n2".into()), "id")),
            ),
            (
                "usage.get",
                json!({"scope": "conversation", "id": "c-3"}),
                Some((Target::Conversation("c-3".into()), "id")),
            ),
            ("usage.get", json!({"scope": "node"}), None),
            (
                "usage.get",
                json!({"scope": "node", "id": "n2"}),
                Some((Target::Node("n2".into()), "id")),
            ),
            ("supervision.status", json!({}), None),
            ("conversation.list", json!({"state": "active"}), None),
            ("node.info", json!({}), None),
            ("events.subscribe", json!({"kinds": ["event.supervision.acted"]}), None),
            (
                "events.subscribe",
                json!({"agent": "w@n2"}),
                Some((Target::Agent("w@n2".into()), "agent")),
            ),
            ("token.revoke", json!({"revocation_id": "ab"}), None),
            ("mailbox.send", json!({"to": "b@n2", "text": "x"}), None),
            ("agent.get", json!({"agent": 5}), None),
        ];
        for (method, params, want) in table {
            let got = aim(method, Some(params)).map(|a| (a.target, a.field));
            let want = want.clone();
            assert_eq!(got, want, "{method} {params}");
        }
        assert_eq!(aim("agent.get", None), None);
    }

    #[test]
    fn addresses_split_at_the_last_at() {
        assert_eq!(split_address("coder@n3"), ("coder", Some("n3")));
        assert_eq!(split_address("coder"), ("coder", None));
        assert_eq!(split_address("coder@"), ("coder", Some("")));
        assert_eq!(split_address("a@b@n-1"), ("a@b", Some("n-1")));
    }

    #[test]
    fn fields_are_rewritten_and_fan_out_is_asked_for() {
        let p = with_field(Some(json!({"agent": "a@n3", "x": 1})), "agent", "a");
        assert_eq!(p, Some(json!({"agent": "a", "x": 1})));
        assert_eq!(
            without_field(Some(json!({"fleet": true, "state": "active"})), "fleet"),
            Some(json!({"state": "active"}))
        );
        assert_eq!(wants_fleet("agent.list", Some(&json!({"fleet": true}))), Some("agents"));
        assert_eq!(wants_fleet("agent.list", Some(&json!({"fleet": false}))), None);
        assert_eq!(
            wants_fleet("conversation.list", Some(&json!({"fleet": true}))),
            Some("conversations")
        );
        assert_eq!(wants_fleet("agent.get", Some(&json!({"fleet": true}))), None);
    }

    #[test]
    fn answers_name_their_conversations_and_notes_are_renamed() {
        assert_eq!(conversations_in(&json!({"conversation": {"id": "c-1"}})), vec!["c-1"]);
        assert_eq!(
            conversations_in(&json!({"conversations": [{"id": "c-1"}, {"id": "c-2"}, {"x": 1}]})),
            vec!["c-1", "c-2"]
        );
        assert!(conversations_in(&json!({"agent": {"name": "a"}})).is_empty());
        let note = r#"{"jsonrpc":"2.0","method":"terminal.data","params":{"subscription":"s-9","data":"aGk="}}"#;
        let renamed: Value = serde_json::from_str(&renamed_note(note, "s-2").expect("renamed")).expect("json");
        assert_eq!(renamed["params"], json!({"subscription": "s-2", "data": "aGk="}));
        assert_eq!(renamed_note("not json", "s-1"), None);
        assert_eq!(renamed_note(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "s-1"), None);
    }
}
