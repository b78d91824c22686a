//! Policy resolution: shipping defaults, field-by-field overrides, the two-key
//! lock, validation, and the stall and mail parameters it hands on.

use std::collections::BTreeMap;
use std::time::Duration;

use supervision::{
    Action, AgentOverride, ClassActions, DialogClass, Error, MailMode, StallParams, SupervisionConfig, resolve,
};

#[test]
fn shipping_defaults() {
    let c = SupervisionConfig::default();
    assert!(!c.enabled);
    assert_eq!(c.mail_mode, MailMode::Nudge);
    assert_eq!(c.stall_mins, 20);
    assert_eq!(c.nudge_retries, 2);
    assert!(!c.nudge_text.is_empty());
    let expected: &[(DialogClass, Action)] = &[
        (DialogClass::CommandExec, Action::AutoApprove),
        (DialogClass::FileWrite, Action::AutoApprove),
        (DialogClass::NetworkAccess, Action::Hold),
        (DialogClass::CredentialAccess, Action::Hold),
        (DialogClass::Deletion, Action::Hold),
        (DialogClass::PushRemote, Action::Hold),
        (DialogClass::Install, Action::Hold),
        (DialogClass::DeviceAccess, Action::Hold),
        (DialogClass::Unknown, Action::Hold),
    ];
    for (class, action) in expected {
        assert_eq!(c.classes.get(*class), *action, "{class}");
    }
    assert!(
        DialogClass::ALL
            .iter()
            .all(|c| ClassActions::default().get(*c) != Action::AutoDeny)
    );
    assert_eq!(c.validate(), Ok(()));
}

#[test]
fn two_key_lock_truth_table() {
    for master in [false, true] {
        for agent in [None, Some(false), Some(true)] {
            let config = SupervisionConfig {
                enabled: master,
                ..SupervisionConfig::default()
            };
            let row = agent.map(|enabled| AgentOverride {
                enabled,
                ..AgentOverride::default()
            });
            let policy = resolve(&config, row.as_ref());
            let want = master && agent == Some(true);
            assert_eq!(policy.enabled, want, "master={master} agent={agent:?}");
            assert_eq!(policy.off_reason().is_none(), want);
            if !master {
                assert_eq!(policy.off_reason(), Some("the supervision master switch is off"));
            }
        }
    }
}

#[test]
fn overrides_merge_field_by_field() {
    let mut classes = ClassActions::default();
    classes.set(DialogClass::NetworkAccess, Action::AutoDeny);
    let config = SupervisionConfig {
        enabled: true,
        classes,
        nudge_text: "Global nudge.".into(),
        stall_mins: 30,
        ..SupervisionConfig::default()
    };
    let agent = AgentOverride {
        enabled: true,
        classes: BTreeMap::from([
            (DialogClass::CommandExec, Action::Hold),
            (DialogClass::Install, Action::AutoApprove),
        ]),
        nudge_retries: Some(4),
        expect_work: true,
        ..AgentOverride::default()
    };
    let p = resolve(&config, Some(&agent));
    assert_eq!(p.action(DialogClass::CommandExec), Action::Hold);
    assert_eq!(p.action(DialogClass::Install), Action::AutoApprove);
    assert_eq!(
        p.action(DialogClass::NetworkAccess),
        Action::AutoDeny,
        "unmentioned class keeps the global action"
    );
    assert_eq!(p.action(DialogClass::FileWrite), Action::AutoApprove);
    assert_eq!(p.nudge_text, "Global nudge.");
    assert_eq!(p.stall_mins, 30);
    assert_eq!(p.stall_threshold, Duration::from_secs(30 * 60));
    assert_eq!(p.nudge_retries, 4);
    assert_eq!(p.mail_mode, MailMode::Nudge);
    assert!(p.expect_work);

    let agent = AgentOverride {
        enabled: true,
        mail_mode: Some(MailMode::FullBody),
        nudge_text: Some("Agent nudge.".into()),
        stall_mins: Some(5),
        ..AgentOverride::default()
    };
    let p = resolve(&config, Some(&agent));
    assert_eq!(p.mail_mode, MailMode::FullBody);
    assert_eq!(p.nudge_text, "Agent nudge.");
    assert_eq!(p.stall_threshold, Duration::from_secs(300));
    assert_eq!(p.nudge_retries, 2);
    assert_eq!(p.action(DialogClass::CommandExec), Action::AutoApprove);
}

#[test]
fn seconds_knobs_for_tests() {
    let config = SupervisionConfig {
        stall_secs: Some(3),
        nudge_interval_secs: Some(1),
        mail_retry_secs: Some(2),
        ..SupervisionConfig::default()
    };
    let p = resolve(&config, None);
    assert_eq!(
        p.stall_params(),
        StallParams {
            threshold: Duration::from_secs(3),
            interval: Duration::from_secs(1),
            retries: 2
        }
    );
    assert_eq!(p.mail_retry_backoff, Duration::from_secs(2));
    let agent_minutes = AgentOverride {
        stall_mins: Some(1),
        ..AgentOverride::default()
    };
    assert_eq!(
        resolve(&config, Some(&agent_minutes)).stall_threshold,
        Duration::from_secs(60)
    );
    let shipped = resolve(&SupervisionConfig::default(), None);
    assert_eq!(shipped.nudge_interval, Duration::from_secs(300));
    assert_eq!(shipped.mail_retry_backoff, Duration::from_secs(30));
}

#[test]
fn partial_config_deserializes_onto_defaults() {
    let json = r#"{"enabled": true, "stall_mins": 10, "classes": {"network_access": "auto_deny"}}"#;
    let c: SupervisionConfig = serde_json::from_str(json).unwrap();
    assert!(c.enabled);
    assert_eq!(c.stall_mins, 10);
    assert_eq!(c.nudge_retries, 2);
    assert_eq!(c.classes.network_access, Action::AutoDeny);
    assert_eq!(c.classes.command_exec, Action::AutoApprove);
    let o: AgentOverride =
        serde_json::from_str(r#"{"enabled": true, "classes": {"deletion": "auto_approve"}}"#).unwrap();
    assert_eq!(o.classes.get(&DialogClass::Deletion), Some(&Action::AutoApprove));
    assert_eq!(o.mail_mode, None);
    assert!(serde_json::from_str::<AgentOverride>(r#"{"classes": {"bogus": "hold"}}"#).is_err());
    assert!(serde_json::from_str::<SupervisionConfig>(r#"{"classes": {"command_exec": "yes"}}"#).is_err());
    // Shipped configs do not carry the test knobs.
    let out = serde_json::to_string(&SupervisionConfig::default()).unwrap();
    assert!(!out.contains("stall_secs"));
}

#[test]
fn validation() {
    let bad_configs = [
        SupervisionConfig {
            nudge_text: "  ".into(),
            ..SupervisionConfig::default()
        },
        SupervisionConfig {
            nudge_text: "line one\nline two".into(),
            ..SupervisionConfig::default()
        },
        SupervisionConfig {
            nudge_text: "x".repeat(501),
            ..SupervisionConfig::default()
        },
        SupervisionConfig {
            stall_mins: 0,
            ..SupervisionConfig::default()
        },
        SupervisionConfig {
            nudge_retries: 21,
            ..SupervisionConfig::default()
        },
        SupervisionConfig {
            stall_secs: Some(0),
            ..SupervisionConfig::default()
        },
    ];
    for c in &bad_configs {
        assert!(matches!(c.validate(), Err(Error::Invalid(_))), "{c:?}");
    }
    let bad_agent = AgentOverride {
        nudge_text: Some("\u{1b}[2J".into()),
        ..AgentOverride::default()
    };
    assert!(bad_agent.validate().is_err());
    assert!(AgentOverride::default().validate().is_ok());
    assert_eq!("nope".parse::<DialogClass>(), Err(Error::UnknownClass("nope".into())));
}
