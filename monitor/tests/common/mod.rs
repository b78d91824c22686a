//! Shared fixtures: attachment specs built from JSON the way a client sends
//! them, compiled triggers and deltas.
#![allow(dead_code, unreachable_pub)]

use monitor::{Attachment, AttachmentSpec, Delta, Hit, Trigger, validate};
use serde_json::{Value, json};

pub const MONITOR: &str = "lint";
pub const CONV: &str = "c-1";

/// `monitor.attach` params from JSON.
pub fn spec(v: Value) -> AttachmentSpec {
    serde_json::from_value(v).expect("a well-formed spec")
}

/// A valid spec watching agent `coder` with these keywords and trigger
/// extras (`case_sensitive`, `speakers`).
pub fn spec_with(keywords: Value, extra: Value) -> AttachmentSpec {
    let mut trigger = json!({ "keywords": keywords });
    if let (Some(t), Some(e)) = (trigger.as_object_mut(), extra.as_object()) {
        t.extend(e.clone());
    }
    spec(json!({ "monitor": MONITOR, "target": { "agent": "coder" }, "trigger": trigger }))
}

pub fn attachment(keywords: Value, extra: Value) -> Attachment {
    validate(&spec_with(keywords, extra)).expect("valid")
}

pub fn trigger(keywords: Value, extra: Value) -> Trigger {
    Trigger::new(&attachment(keywords, extra)).expect("builds")
}

/// Keywords `[{text, mode}]` from `(text, mode)` pairs.
pub fn kws(list: &[(&str, &str)]) -> Value {
    Value::Array(list.iter().map(|(t, m)| json!({ "text": t, "mode": m })).collect())
}

pub fn delta<'a>(seq: u64, speaker: &'a str, text: &'a str) -> Delta<'a> {
    Delta {
        conversation: CONV,
        seq,
        speaker,
        text,
    }
}

/// The keyword texts of the hits, in order.
pub fn fired(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| h.keyword.text.clone()).collect()
}
