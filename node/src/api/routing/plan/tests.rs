//! Table tests of the routing decision.

use super::*;
use console_api::methods::{REGISTRY, find};
use serde_json::json;

fn method(name: &str) -> &'static Method {
    find(name).unwrap_or_else(|| panic!("{name} is not registered"))
}

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
    for (name, params, want) in table {
        let got = aim(method(name), Some(params)).map(|a| (a.target, a.field));
        assert_eq!(got, want.clone(), "{name} {params}");
    }
    assert_eq!(aim(method("agent.get"), None), None);
}

/// The registry routes exactly what the hand-kept routing lists routed
/// before it existed (a change here is a change of behaviour).
#[test]
fn the_registry_routes_what_was_routed_before() {
    const ROUTED: &[&str] = &[
        "agent.get",
        "agent.update",
        "agent.archive",
        "agent.login",
        "agent.secret.set",
        "agent.secret.unset",
        "agent.secret.list",
        "egress.audit",
        "conversation.start",
        "conversation.continue",
        "conversation.pause",
        "conversation.terminate",
        "conversation.get",
        "conversation.list",
        "conversation.diff",
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
        "mailbox.outbox",
        "mailbox.unread",
        "mailbox.ack",
        "budget.get",
        "budget.set",
        "budget.topup",
    ];
    for m in REGISTRY {
        let want = match m.name {
            "agent.create" | "monitor.attach" | "node.info" | "monitor.detach" | "monitor.rearm" | "task.get"
            | "task.stop" | "task.recover" | "task.discard" | "task.diff" | "task.resume_auto" => Route::Node("node"),
            "supervision.answer" => Route::Hold("hold"),
            "usage.get" => Route::ScopeId,
            n if ROUTED.contains(&n) => Route::AgentOrConversation,
            _ => Route::Here,
        };
        assert_eq!(m.route, want, "{}", m.name);
        let stream = ["transcript.subscribe", "terminal.subscribe", "events.subscribe"].contains(&m.name);
        assert_eq!(m.stream, stream, "{}", m.name);
        let fanout = match m.name {
            "agent.list" => Some("agents"),
            "conversation.list" => Some("conversations"),
            "supervision.holds" => Some("holds"),
            "monitor.list" => Some("attachments"),
            "task.list" => Some("tasks"),
            "spend.history" => Some("days"),
            "events.subscribe" => Some("events"),
            "mailbox.unread" => Some("agents"),
            _ => None,
        };
        assert_eq!(m.fanout, fanout, "{}", m.name);
        let long = ["conversation.start", "conversation.continue", "agent.login"].contains(&m.name);
        let secs = if long { 600 } else { 15 };
        assert_eq!(bound(m), Duration::from_secs(secs), "{}", m.name);
    }
}

#[test]
fn fan_out_is_asked_for_with_fleet_true() {
    let way_of = |name: &str, p: Value| way(method(name), Some(&p));
    assert_eq!(way_of("agent.list", json!({"fleet": true})), Way::FanOut("agents"));
    assert_eq!(way_of("agent.list", json!({"fleet": false})), Way::Here);
    assert_eq!(
        way_of("conversation.list", json!({"fleet": true, "agent": "a@n2"})),
        Way::FanOut("conversations")
    );
    assert_eq!(way_of("agent.get", json!({"fleet": true})), Way::Here);
    assert!(matches!(way_of("agent.get", json!({"agent": "a@n2"})), Way::Aimed(_)));
    let p = without_fleet_flag(method("agent.list"), Some(json!({"fleet": false})));
    assert_eq!(p, Some(json!({})));
    let p = without_fleet_flag(method("agent.get"), Some(json!({"agent": "a", "fleet": 1})));
    assert_eq!(p, Some(json!({"agent": "a", "fleet": 1})));
}

fn aimed(name: &str, p: &Value) -> Aim {
    aim(method(name), Some(p)).unwrap_or_else(|| panic!("{name} {p} aims at nothing"))
}

fn remote(node_id: &str, params: Value) -> Step {
    Step::Remote {
        node_id: node_id.into(),
        params: Some(params),
    }
}

#[test]
fn decisions_follow_what_this_node_knows() {
    let fleet = View {
        in_fleet: true,
        ..View::default()
    };
    let alone = View::default();
    let here = View {
        in_fleet: true,
        here: true,
        ..View::default()
    };
    let member = |id: &str| View {
        in_fleet: true,
        member: Some(id.into()),
        ..View::default()
    };
    let p = json!({"agent": "a@n2", "x": 1});
    // An address names its node: the home knows the bare name.
    assert_eq!(
        decide(&aimed("agent.get", &p), &member("id-2"), Some(p.clone())),
        remote("id-2", json!({"agent": "a", "x": 1}))
    );
    assert_eq!(
        decide(&aimed("agent.get", &p), &fleet, Some(p.clone())),
        Step::Local(Some(json!({"agent": "a", "x": 1})))
    );
    // A bare name: here when this node has it or is in no fleet, else ask.
    let p = json!({"agent": "a"});
    for view in [&alone, &here] {
        assert_eq!(
            decide(&aimed("agent.get", &p), view, Some(p.clone())),
            Step::Local(Some(p.clone()))
        );
    }
    assert_eq!(
        decide(&aimed("agent.get", &p), &fleet, Some(p.clone())),
        Step::Locate(Locate::Agent("a".into()), Some(p.clone()))
    );
    // `{node}` names a member; this node's own name is dropped.
    let p = json!({"name": "a", "harness": "fake", "node": "n2"});
    assert_eq!(
        decide(&aimed("agent.create", &p), &member("id-2"), Some(p.clone())),
        remote("id-2", p.clone())
    );
    assert_eq!(
        decide(&aimed("agent.create", &p), &fleet, Some(p.clone())),
        Step::Local(Some(json!({"name": "a", "harness": "fake"})))
    );
    // A conversation: here, at its remembered home, else ask.
    let p = json!({"conversation": "c-1"});
    for view in [&alone, &here] {
        assert_eq!(
            decide(&aimed("conversation.get", &p), view, Some(p.clone())),
            Step::Local(Some(p.clone()))
        );
    }
    let known = View {
        in_fleet: true,
        remembered: Some("id-3".into()),
        ..View::default()
    };
    assert_eq!(
        decide(&aimed("conversation.get", &p), &known, Some(p.clone())),
        remote("id-3", p.clone())
    );
    assert_eq!(
        decide(&aimed("conversation.get", &p), &fleet, Some(p.clone())),
        Step::Locate(Locate::Conversation("c-1".into()), Some(p.clone()))
    );
    // A hold: here, else ask.
    let p = json!({"hold": "h-1", "decision": "deny"});
    assert_eq!(
        decide(&aimed("supervision.answer", &p), &here, Some(p.clone())),
        Step::Local(Some(p.clone()))
    );
    assert_eq!(
        decide(&aimed("supervision.answer", &p), &fleet, Some(p.clone())),
        Step::Locate(Locate::Hold("h-1".into()), Some(p.clone()))
    );
}

#[test]
fn asking_the_members_settles_it_or_says_why_not() {
    let p = Some(json!({"agent": "a"}));
    let found = |ids: &[(&str, &str)]| -> Vec<(String, String)> {
        ids.iter().map(|(i, n)| (i.to_string(), n.to_string())).collect()
    };
    let agent = Locate::Agent("a".into());
    assert_eq!(
        located(&agent, &found(&[("id-2", "two")]), &[], p.clone()),
        Ok(remote("id-2", json!({"agent": "a"})))
    );
    match located(&agent, &found(&[("id-2", "two"), ("id-3", "three")]), &[], p.clone()) {
        Err(Refusal::Ambiguous { message, candidates }) => {
            assert_eq!(candidates, vec!["a@two", "a@three"]);
            assert!(message.contains("address one as NAME@NODE"), "{message}");
        }
        other => panic!("ambiguous expected, got {other:?}"),
    }
    // Nobody has it: a plain not-found here, unless the one silent member might.
    assert_eq!(located(&agent, &[], &[], p.clone()), Ok(Step::Local(p.clone())));
    assert_eq!(
        located(&agent, &[], &["two".into(), "three".into()], p.clone()),
        Ok(Step::Local(p.clone()))
    );
    match located(&agent, &[], &["two".into()], p.clone()) {
        Err(Refusal::Unreachable { node, message }) => {
            assert_eq!(node, "two");
            assert!(message.contains("node two cannot be reached now"), "{message}");
        }
        other => panic!("unreachable expected, got {other:?}"),
    }
    // A conversation or hold lives on one member: the first that says so.
    let conv = Locate::Conversation("c-1".into());
    assert_eq!(
        located(&conv, &found(&[("id-2", "two"), ("id-3", "three")]), &[], p.clone()),
        Ok(remote("id-2", json!({"agent": "a"})))
    );
}

#[test]
fn fields_are_rewritten() {
    let p = with_field(Some(json!({"agent": "a@n3", "x": 1})), "agent", "a");
    assert_eq!(p, Some(json!({"agent": "a", "x": 1})));
    assert_eq!(
        without_field(Some(json!({"fleet": true, "state": "active"})), "fleet"),
        Some(json!({"state": "active"}))
    );
    assert_eq!(with_field(None, "agent", "a"), None);
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
    let renamed: Value = serde_json::from_str(&renamed_note(note, "s-2", None).expect("renamed")).expect("json");
    assert_eq!(renamed["params"], json!({"subscription": "s-2", "data": "aGk="}));
    let from: Value = serde_json::from_str(&renamed_note(note, "s-2", Some("n2")).expect("renamed")).expect("json");
    assert_eq!(
        from["params"],
        json!({"subscription": "s-2", "data": "aGk=", "node": "n2"})
    );
    assert_eq!(renamed_note("not json", "s-1", None), None);
    assert_eq!(
        renamed_note(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "s-1", None),
        None
    );
}

#[test]
fn merged_totals_add_up_and_names_join_once() {
    let mut total = serde_json::Map::new();
    let answers = [
        json!({"days": [], "usd": 1.25, "unparseable_files": 2, "unpriced_models": ["m1"]}),
        json!({"days": [], "usd": 0.5, "unparseable_files": 0, "unpriced_models": ["m1", "m2"]}),
        json!({"agents": []}),
    ];
    for a in &answers {
        add_totals(&mut total, a);
    }
    assert_eq!(
        Value::Object(total),
        json!({"usd": 1.75, "unparseable_files": 2, "unpriced_models": ["m1", "m2"]})
    );
    // A list without totals merges to nothing more.
    let mut none = serde_json::Map::new();
    add_totals(&mut none, &json!({"holds": [{"usd": 9}]}));
    assert!(none.is_empty());
}
