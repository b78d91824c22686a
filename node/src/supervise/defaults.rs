//! The global supervision defaults at runtime: `config.set {supervision}`
//! (local-only). warren.toml's `[supervision]` is the initial value; a
//! `config.set` stores the node's own override whole (a `supervision_defaults`
//! event, folded at start, so it survives a crash and a restart) and it wins
//! over warren.toml until `config.set {supervision: null}` clears it. Every
//! decision reads the defaults from the catalog, so a flipped master switch
//! applies to the next one without a restart.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use supervision::{Action, DialogClass, SupervisionConfig};

use crate::service::{NodeError, NodeResult};
use node_store::events::Event;

/// The fields `config.set {supervision}` takes (warren.toml's `[supervision]`).
const FIELDS: &str = "enabled, classes, mail_mode, nudge_text, stall_mins, nudge_retries, \
     stall_secs, nudge_interval_secs, mail_retry_secs";

impl super::Supervisor {
    /// `config.set {supervision}`: merges the given fields onto the defaults
    /// in force (a whole object replaces them all), validates the result and
    /// stores it; `null` clears the node's override. Nothing is stored when
    /// any field is wrong. Announces `event.supervision.changed`.
    pub async fn config_set(&self, supervision: &Value) -> NodeResult<Value> {
        let mut cat = self.catalog.lock().await;
        let stored = match supervision {
            Value::Null => None,
            Value::Object(given) => Some(patched(cat.supervision_defaults(&self.cfg.supervision), given)?),
            other => {
                return Err(NodeError::Invalid(format!(
                    "supervision: expected an object of [supervision] fields ({FIELDS}) or null, got {other}"
                )));
            }
        };
        let e = Event::SupervisionDefaults { defaults: stored };
        self.commit(&mut cat, vec![e]).await?;
        let defaults = cat.supervision_defaults(&self.cfg.supervision).clone();
        let overridden = cat.supervision_defaults.is_some();
        drop(cat);
        let defaults = serde_json::to_value(&defaults).map_err(|e| NodeError::Internal(e.to_string()))?;
        self.publish(
            console_api::methods::EVENT_SUPERVISION_CHANGED,
            serde_json::json!({ "agent": null, "defaults": defaults }),
        );
        Ok(serde_json::json!({ "supervision": defaults, "overridden": overridden }))
    }
}

/// `current` with the fields of `given` replacing its own, validated whole.
/// Each error names its field (`supervision.FIELD`).
fn patched(current: &SupervisionConfig, given: &Map<String, Value>) -> NodeResult<SupervisionConfig> {
    let mut d = current.clone();
    for (key, v) in given {
        match key.as_str() {
            "enabled" => d.enabled = field(key, v, "true or false")?,
            "nudge_text" => d.nudge_text = field(key, v, "a string")?,
            "mail_mode" => d.mail_mode = field(key, v, "nudge or full_body")?,
            "stall_mins" => d.stall_mins = field(key, v, "a whole number of minutes")?,
            "nudge_retries" => d.nudge_retries = field(key, v, "a whole number")?,
            "stall_secs" => d.stall_secs = field(key, v, "a whole number of seconds or null")?,
            "nudge_interval_secs" => d.nudge_interval_secs = field(key, v, "a whole number of seconds or null")?,
            "mail_retry_secs" => d.mail_retry_secs = field(key, v, "a whole number of seconds or null")?,
            "classes" => {
                let Some(classes) = v.as_object() else {
                    return Err(invalid(format!(
                        "supervision.classes: expected an object of class: action, got {v}"
                    )));
                };
                for (class, action) in classes {
                    let c: DialogClass = class
                        .parse()
                        .map_err(|e| invalid(format!("supervision.classes.{class}: {e}")))?;
                    let a: Action = serde_json::from_value(action.clone()).map_err(|_| {
                        invalid(format!(
                            "supervision.classes.{class}: {action} is not auto_approve, auto_deny or hold"
                        ))
                    })?;
                    d.classes.set(c, a);
                }
            }
            other => {
                return Err(invalid(format!(
                    "supervision.{other}: unknown field; the fields are {FIELDS}"
                )));
            }
        }
    }
    d.validate().map_err(|e| invalid(format!("supervision: {e}")))?;
    Ok(d)
}

fn field<T: DeserializeOwned>(key: &str, v: &Value, want: &str) -> NodeResult<T> {
    serde_json::from_value(v.clone()).map_err(|_| invalid(format!("supervision.{key}: {v} is not {want}")))
}

fn invalid(message: String) -> NodeError {
    NodeError::Invalid(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(v: Value) -> Result<SupervisionConfig, String> {
        let Value::Object(m) = v else { panic!("object") };
        patched(&SupervisionConfig::default(), &m).map_err(|e| e.to_string())
    }

    #[test]
    fn given_fields_replace_and_the_rest_are_kept() {
        let d = patch(json!({
            "enabled": true,
            "mail_mode": "full_body",
            "classes": { "network_access": "auto_deny" },
        }))
        .expect("valid");
        assert!(d.enabled);
        assert_eq!(d.mail_mode, supervision::MailMode::FullBody);
        assert_eq!(d.classes.network_access, Action::AutoDeny);
        assert_eq!(d.classes.command_exec, Action::AutoApprove, "an unnamed class is kept");
        assert_eq!(d.stall_mins, 20, "an unnamed field is kept");
        // The whole object as `supervision.get` shows it round-trips.
        let whole = serde_json::to_value(&d).expect("json");
        assert_eq!(patch(whole).expect("valid"), d);
    }

    #[test]
    fn each_bad_field_is_named() {
        for (given, names) in [
            (
                json!({ "classes": { "teleport": "hold" } }),
                "supervision.classes.teleport",
            ),
            (
                json!({ "classes": { "deletion": "maybe" } }),
                "not auto_approve, auto_deny or hold",
            ),
            (
                json!({ "classes": ["hold"] }),
                "supervision.classes: expected an object",
            ),
            (json!({ "mail_mode": "carrier_pigeon" }), "supervision.mail_mode"),
            (json!({ "enabled": "yes" }), "supervision.enabled"),
            (json!({ "stall_mins": -1 }), "supervision.stall_mins"),
            (json!({ "stall_mins": 0 }), "stall_mins must be at least 1"),
            (json!({ "nudge_text": "two\nlines" }), "nudge_text must be one line"),
            (json!({ "nudge_retries": 99 }), "nudge_retries must be at most"),
            (json!({ "master": true }), "supervision.master: unknown field"),
        ] {
            let e = patch(given.clone()).expect_err("refused");
            assert!(e.contains(names), "{given}: {e}");
        }
    }
}
