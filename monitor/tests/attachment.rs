//! `validate`: every refusal names its field; defaults are filled in.

mod common;

use common::*;
use monitor::{BreakerConfig, Case, DEFAULT_MAX_CYCLES, Error, Keyword, Mode, Speaker, Speakers, Target, validate};
use serde_json::{Value, json};

fn base() -> Value {
    json!({
        "monitor": "lint",
        "target": { "agent": "coder" },
        "trigger": { "keywords": [{ "text": "segfault", "mode": "word" }] }
    })
}

/// `base()` with the field at a JSON pointer set (its parent must exist).
fn with(pointer: &str, value: Value) -> Value {
    let mut v = base();
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let obj = v
        .pointer_mut(parent)
        .and_then(Value::as_object_mut)
        .expect("parent exists in base");
    obj.insert(key.to_string(), value);
    v
}

fn refusal(v: Value) -> (String, String) {
    match validate(&spec(v)) {
        Err(Error::Invalid { field, problem }) => (field, problem),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn defaults_are_filled_in() {
    let a = validate(&spec(base())).unwrap();
    assert_eq!(a.monitor(), "lint");
    assert_eq!(a.target(), &Target::Agent("coder".into()));
    assert!(a.inject(), "inject defaults to true");
    assert_eq!(a.trigger().case, Case::Insensitive);
    assert_eq!(a.trigger().speakers, Speakers::All);
    assert_eq!(
        a.trigger().keywords,
        vec![Keyword {
            text: "segfault".into(),
            mode: Mode::Word
        }]
    );
    assert_eq!(a.breaker(), BreakerConfig::default());
    assert_eq!(a.breaker().max_cycles, DEFAULT_MAX_CYCLES);
    assert_eq!(a.breaker().max_cycles, 5);
    assert_eq!(a.own_speaker(), "monitor:lint");
    // mode defaults to substring
    let a = validate(&spec(with("/trigger/keywords", json!([{ "text": "panic" }])))).unwrap();
    assert_eq!(a.trigger().keywords[0].mode, Mode::Substring);
}

#[test]
fn everything_given_is_kept() {
    let a = validate(&spec(json!({
        "monitor": "lint",
        "target": { "conversation": "c-9a" },
        "trigger": {
            "keywords": [{ "text": "Panic", "mode": "substring" }, { "text": "oom", "mode": "word" }],
            "case_sensitive": true,
            "speakers": ["agent", "tool", "monitor:style", "agent"]
        },
        "inject": false,
        "breaker": { "max_cycles": 3, "max_wakes": 7, "window_mins": 60 }
    })))
    .unwrap();
    assert_eq!(a.target(), &Target::Conversation("c-9a".into()));
    assert!(!a.inject());
    assert_eq!(a.trigger().case, Case::Sensitive);
    assert_eq!(
        a.trigger().speakers,
        Speakers::Only(vec![Speaker::Agent, Speaker::Tool, Speaker::Monitor("style".into())]),
        "deduplicated, in order"
    );
    assert_eq!(
        a.breaker(),
        BreakerConfig {
            max_cycles: 3,
            max_wakes: 7,
            window_mins: 60
        }
    );
    assert_eq!(a.breaker().window_ms(), 3_600_000);
    // the normalized spec validates to the same attachment
    assert_eq!(validate(&a.spec()).unwrap(), a);
}

#[test]
fn duplicate_keywords_are_dropped() {
    let a = attachment(
        kws(&[
            ("panic", "word"),
            ("PANIC", "word"),
            ("panic", "substring"),
            ("panic", "word"),
        ]),
        json!({}),
    );
    let texts: Vec<_> = a.trigger().keywords.iter().map(|k| (k.text.as_str(), k.mode)).collect();
    assert_eq!(texts, vec![("panic", Mode::Word), ("panic", Mode::Substring)]);
    // case-sensitive keeps case variants apart
    let a = attachment(
        kws(&[("panic", "word"), ("PANIC", "word")]),
        json!({ "case_sensitive": true }),
    );
    assert_eq!(a.trigger().keywords.len(), 2);
}

#[test]
fn refusals_name_the_field() {
    let many: Vec<Value> = (0..10_001).map(|i| json!({ "text": format!("k{i}") })).collect();
    let max: Vec<Value> = (0..10_000).map(|i| json!({ "text": format!("k{i}") })).collect();
    assert!(
        validate(&spec(with("/trigger/keywords", Value::Array(max)))).is_ok(),
        "10,000 is allowed"
    );
    // 1,024 keywords of 256 bytes fill the total; one byte more is refused
    let full: Vec<Value> = (0..1024).map(|i| json!({ "text": format!("{i:0>256}") })).collect();
    assert!(validate(&spec(with("/trigger/keywords", Value::Array(full.clone())))).is_ok());
    let mut too_much = full;
    too_much.push(json!({ "text": "x" }));
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            with("/trigger/keywords", json!([])),
            "trigger.keywords",
            "at least one keyword",
        ),
        (
            with("/trigger/keywords", Value::Array(many)),
            "trigger.keywords",
            "10001 keywords is over the limit of 10000",
        ),
        (
            with("/trigger/keywords", json!([{ "text": "ok" }, { "text": "" }])),
            "trigger.keywords[1].text",
            "is empty",
        ),
        (
            with("/trigger/keywords", json!([{ "text": "   " }])),
            "trigger.keywords[0].text",
            "is only whitespace",
        ),
        (
            with("/trigger/keywords", json!([{ "text": "x".repeat(10 * 1024) }])),
            "trigger.keywords[0].text",
            "10240 bytes is over the limit of 256",
        ),
        (
            with("/trigger/keywords", json!([{ "text": "x".repeat(257) }])),
            "trigger.keywords[0].text",
            "257 bytes is over the limit of 256",
        ),
        (
            with("/trigger/keywords", Value::Array(too_much)),
            "trigger.keywords",
            "more than 262144 bytes of keywords in total (the limit is reached at keyword 1024)",
        ),
        (
            with("/trigger/keywords", json!([{ "text": "a\nb" }])),
            "trigger.keywords[0].text",
            "control character U+000A at byte 1",
        ),
        (
            with("/trigger/speakers", json!(["agent", "tool", "robot"])).clone(),
            "trigger.speakers[2]",
            "\"robot\" is not a speaker (human, agent, tool, system, monitor:NAME)",
        ),
        (
            with("/trigger/speakers", json!([])),
            "trigger.speakers",
            "at least one speaker",
        ),
        (
            with("/trigger/speakers", json!(["monitor:lint"])),
            "trigger.speakers[0]",
            "is this monitor itself",
        ),
        (
            with("/trigger/speakers", json!(["monitor:"])),
            "trigger.speakers[0]",
            "is not a speaker",
        ),
        (
            with("/breaker", json!({ "max_cycles": 0 })),
            "breaker.max_cycles",
            "0 is out of range 1..=100",
        ),
        (
            with("/breaker", json!({ "max_cycles": 101 })),
            "breaker.max_cycles",
            "101 is out of range 1..=100",
        ),
        (
            with("/breaker", json!({ "max_wakes": 0 })),
            "breaker.max_wakes",
            "0 is out of range 1..=1000",
        ),
        (
            with("/breaker", json!({ "max_wakes": 1001 })),
            "breaker.max_wakes",
            "out of range 1..=1000",
        ),
        (
            with("/breaker", json!({ "window_mins": 0 })),
            "breaker.window_mins",
            "out of range 1..=1440",
        ),
        (
            with("/breaker", json!({ "window_mins": 1441 })),
            "breaker.window_mins",
            "1441 is out of range 1..=1440",
        ),
        (
            with("/breaker", json!({ "window_mins": 99_999_999_999u64 })),
            "breaker.window_mins",
            "out of range",
        ),
        (
            with("/target", json!({ "agent": "coder", "conversation": "c-1" })),
            "target",
            "names both an agent and a conversation",
        ),
        (
            with("/target", json!({})),
            "target",
            "names neither an agent nor a conversation",
        ),
        (
            with("/target", json!({ "agent": "lint" })),
            "target.agent",
            "a monitor cannot monitor itself",
        ),
        (
            with("/target", json!({ "agent": "Coder!" })),
            "target.agent",
            "is not an agent",
        ),
        (
            with("/target", json!({ "conversation": "" })),
            "target.conversation",
            "is not a conversation id",
        ),
        (
            with("/target", json!({ "conversation": "c 1" })),
            "target.conversation",
            "is not a conversation id",
        ),
        (with("/monitor", json!("Lint")), "monitor", "is not a valid agent name"),
    ];
    for (v, field, problem) in cases {
        let (f, p) = refusal(v);
        assert_eq!(f, field, "{p}");
        assert!(p.contains(problem), "{field}: {p:?} should contain {problem:?}");
    }
}

#[test]
fn boundaries_that_pass() {
    for (pointer, value) in [
        ("/breaker", json!({ "max_cycles": 1, "max_wakes": 1, "window_mins": 1 })),
        (
            "/breaker",
            json!({ "max_cycles": 100, "max_wakes": 1000, "window_mins": 1440 }),
        ),
        ("/trigger/keywords", json!([{ "text": "é".repeat(128) }])), // 256 bytes
        ("/target", json!({ "agent": "coder@n-2" })),
        ("/target", json!({ "agent": "lint@n-2" })), // the same name on another node
        (
            "/trigger/speakers",
            json!(["human", "agent", "tool", "system", "monitor:style@n-2"]),
        ),
    ] {
        let v = with(pointer, value.clone());
        assert!(validate(&spec(v)).is_ok(), "{pointer} = {value}");
    }
}

#[test]
fn the_wire_shape_is_strict() {
    for bad in [
        json!({ "monitor": "lint", "target": { "agent": "coder" }, "trigger": { "keywords": [] }, "extra": 1 }),
        json!({ "monitor": "lint", "target": { "agent": "coder" }, "trigger": { "keywords": [{ "text": "a", "mode": "regex" }] } }),
        json!({ "monitor": "lint", "target": { "agent": "coder", "node": "x" }, "trigger": { "keywords": [] } }),
        json!({ "monitor": "lint", "target": { "agent": "coder" }, "trigger": { "keywords": [] }, "breaker": { "max_cycles": -1 } }),
    ] {
        assert!(
            serde_json::from_value::<monitor::AttachmentSpec>(bad.clone()).is_err(),
            "{bad}"
        );
    }
    // and the spec serializes back to what a client sends
    let s = spec(base());
    assert_eq!(serde_json::to_value(&s).unwrap(), base());
}
