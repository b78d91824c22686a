//! What a push says, pure: a needs-you event (as `events.subscribe` relays
//! it, from this node or a member) read as one of the kinds a subscription
//! chooses, and the JSON the phone decrypts.

use serde_json::{Value, json};

/// The needs-you kinds a subscription may choose.
pub const KINDS: [&str; 5] = ["hold", "escalation", "breaker", "budget", "task"];

/// The longest summary and title carried (a push is at most ~4 KB).
const MAX_TEXT: usize = 160;

/// Which kind of needs-you `event` (a `needs_you` payload) is.
pub fn kind_of(event: &Value) -> &'static str {
    if event.get("hold").is_some() {
        "hold"
    } else if event.get("attachment").is_some() {
        "breaker"
    } else if event.get("available_usd").is_some() {
        "budget"
    } else if event.get("task").is_some() {
        "task"
    } else {
        "escalation"
    }
}

fn text<'a>(v: &'a Value, pointer: &str) -> Option<&'a str> {
    v.pointer(pointer).and_then(Value::as_str)
}

fn bounded(s: &str) -> String {
    match s.char_indices().nth(MAX_TEXT) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// The payload for `event` of `kind` on `node`, at `at_ms` (no answer token).
pub fn build(kind: &str, node: &str, event: &Value, at_ms: u64) -> Value {
    let agent = text(event, "/agent")
        .or_else(|| text(event, "/hold/agent"))
        .unwrap_or("an agent");
    let conversation = text(event, "/conversation").or_else(|| text(event, "/hold/conversation"));
    let reason = text(event, "/reason").unwrap_or("");
    let title = match kind {
        "hold" => format!(
            "{agent} asks: {}",
            text(event, "/hold/summary").unwrap_or("a permission")
        ),
        "breaker" => format!("{agent}: a monitor's breaker tripped"),
        "budget" => format!("{agent}: its budget is exhausted"),
        "task" => format!("{agent}: a task needs you ({reason})"),
        _ => format!("{agent} needs you: {reason}"),
    };
    let mut v = json!({
        "kind": kind,
        "node": node,
        "agent": agent,
        "title": bounded(&title),
        "at": at_ms,
    });
    if let Some(c) = conversation {
        v["conversation"] = json!(c);
    }
    if kind == "hold" {
        v["hold"] = json!({
            "id": text(event, "/hold/id"),
            "dialog_class": text(event, "/hold/dialog_class"),
            "summary": bounded(text(event, "/hold/summary").unwrap_or("")),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_needs_you_reads_as_its_kind() {
        let cases = [
            (json!({"reason": "r", "hold": {"id": "h", "agent": "a"}}), "hold"),
            (json!({"attachment": "x", "monitor": "m", "agent": "m"}), "breaker"),
            (
                json!({"agent": "a", "available_usd": 0.0, "usd_per_hour": null}),
                "budget",
            ),
            (json!({"agent": "a", "task": "t-1", "reason": "r"}), "task"),
            (json!({"agent": "a", "reason": "still stalled"}), "escalation"),
        ];
        for (event, want) in cases {
            assert_eq!(kind_of(&event), want, "{event}");
            assert!(KINDS.contains(&want));
        }
    }

    #[test]
    fn a_hold_payload_names_the_hold_and_is_bounded() {
        let long = "x".repeat(1000);
        let event = json!({"reason": "held", "hold": {
            "id": "h-1", "agent": "coder", "conversation": "c-1",
            "dialog_class": "bash", "summary": long, "detail": "not carried"}});
        let v = build("hold", "n2", &event, 7);
        assert_eq!(v["kind"], "hold");
        assert_eq!(v["node"], "n2");
        assert_eq!(
            (v["agent"].as_str(), v["conversation"].as_str()),
            (Some("coder"), Some("c-1"))
        );
        assert_eq!(v["hold"]["id"], "h-1");
        assert_eq!(v["hold"]["dialog_class"], "bash");
        assert!(v["hold"]["summary"].as_str().unwrap().chars().count() <= MAX_TEXT + 1);
        assert!(v["title"].as_str().unwrap().starts_with("coder asks: xxx"));
        assert!(v.get("detail").is_none() && v["hold"].get("detail").is_none());
        assert_eq!(v["at"], 7);
    }
}
