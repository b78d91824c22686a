//! The audit vocabulary: one `supervision_log` row per attempted or declined
//! action (seed 000's columns), built from pure decisions; the node stores it.

use serde::{Deserialize, Serialize};

use crate::class::DialogClass;
use crate::decide::{Decision, PolicySource, Verdict};

/// What started the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    Dialog,
    Mail,
    Stall,
    ManualNudge,
    LegacyRule,
    /// A human answered a held dialog (`supervision.answer`).
    Answer,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Dialog => "dialog",
            Trigger::Mail => "mail",
            Trigger::Stall => "stall",
            Trigger::ManualNudge => "manual_nudge",
            Trigger::LegacyRule => "legacy_rule",
            Trigger::Answer => "answer",
        }
    }
}

/// What was (or would have been) typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditDecision {
    Approve,
    Deny,
    Nudge,
    FullBody,
    Hold,
    Escalate,
}

impl AuditDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            AuditDecision::Approve => "approve",
            AuditDecision::Deny => "deny",
            AuditDecision::Nudge => "nudge",
            AuditDecision::FullBody => "full_body",
            AuditDecision::Hold => "hold",
            AuditDecision::Escalate => "escalate",
        }
    }
}

impl From<Verdict> for AuditDecision {
    fn from(v: Verdict) -> Self {
        match v {
            Verdict::Approve => AuditDecision::Approve,
            Verdict::Deny => AuditDecision::Deny,
            Verdict::Hold => AuditDecision::Hold,
        }
    }
}

/// How the action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Sent,
    Skipped,
    Failed,
    Held,
    /// Recorded durably right before keys are typed. Verified send follows it
    /// with the real outcome; a row that stays `attempted` means the node
    /// stopped while typing, so the keys may or may not have reached the CLI.
    Attempted,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Sent => "sent",
            Outcome::Skipped => "skipped",
            Outcome::Failed => "failed",
            Outcome::Held => "held",
            Outcome::Attempted => "attempted",
        }
    }
}

/// The decision-dependent columns of one `supervision_log` row; the node adds
/// `id`, `at`, the agent, window, session, agent kind and pane excerpt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditFields {
    pub trigger: Trigger,
    pub dialog_class: Option<DialogClass>,
    pub repo_scoped: Option<bool>,
    pub decision: AuditDecision,
    pub policy_source: Option<PolicySource>,
    /// Keys actually sent (empty unless sent).
    pub keys: Vec<String>,
    pub outcome: Outcome,
    pub reason: String,
    pub subject: Option<String>,
}

impl AuditFields {
    /// The row for a dialog decision that ended with `outcome`. A hold is
    /// always `held`; keys are recorded only when they were sent; a skip or
    /// failure keeps the decision's reason and adds `why`.
    pub fn for_dialog(decision: &Decision, outcome: Outcome, why: Option<&str>) -> AuditFields {
        let outcome = if decision.verdict == Verdict::Hold {
            Outcome::Held
        } else {
            outcome
        };
        let reason = match why {
            Some(why) => format!("{}; {why}", decision.reason),
            None => decision.reason.clone(),
        };
        AuditFields {
            trigger: Trigger::Dialog,
            dialog_class: Some(decision.class),
            repo_scoped: Some(decision.repo_scoped),
            decision: decision.verdict.into(),
            policy_source: Some(decision.source),
            keys: if outcome == Outcome::Sent {
                decision.keys.clone()
            } else {
                Vec::new()
            },
            outcome,
            reason,
            subject: Some(decision.subject.clone()),
        }
    }

    /// A row for mail, stall and manual-nudge actions (no dialog class or scope).
    pub fn for_action(
        trigger: Trigger,
        decision: AuditDecision,
        outcome: Outcome,
        reason: impl Into<String>,
    ) -> AuditFields {
        AuditFields {
            trigger,
            dialog_class: None,
            repo_scoped: None,
            decision,
            policy_source: None,
            keys: Vec::new(),
            outcome,
            reason: reason.into(),
            subject: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::PromptKind;

    fn decision(verdict: Verdict) -> Decision {
        Decision {
            verdict,
            option: Some(0),
            keys: vec!["1".into()],
            class: DialogClass::CommandExec,
            prompt: PromptKind::Permission,
            repo_scoped: true,
            source: PolicySource::ClassPolicy,
            reason: "r".into(),
            subject: "cargo test".into(),
            writes: Vec::new(),
            redefined: Vec::new(),
        }
    }

    #[test]
    fn keys_only_when_sent() {
        let sent = AuditFields::for_dialog(&decision(Verdict::Approve), Outcome::Sent, None);
        assert_eq!(sent.keys, vec!["1".to_string()]);
        assert_eq!(sent.decision.as_str(), "approve");
        let skipped = AuditFields::for_dialog(&decision(Verdict::Approve), Outcome::Skipped, Some("screen changed"));
        assert!(skipped.keys.is_empty());
        assert_eq!(skipped.reason, "r; screen changed");
        let held = AuditFields::for_dialog(&decision(Verdict::Hold), Outcome::Sent, None);
        assert_eq!(held.outcome, Outcome::Held);
        assert!(held.keys.is_empty());
        assert_eq!(held.subject.as_deref(), Some("cargo test"));
        let stall = AuditFields::for_action(
            Trigger::Stall,
            AuditDecision::Hold,
            Outcome::Held,
            "escalated after 2 nudges",
        );
        assert_eq!(
            (stall.dialog_class, stall.repo_scoped, stall.policy_source),
            (None, None, None)
        );
    }

    #[test]
    fn names_match_serde() {
        for t in [
            Trigger::Dialog,
            Trigger::Mail,
            Trigger::Stall,
            Trigger::ManualNudge,
            Trigger::LegacyRule,
            Trigger::Answer,
        ] {
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{}\"", t.as_str()));
        }
        for o in [
            Outcome::Sent,
            Outcome::Skipped,
            Outcome::Failed,
            Outcome::Held,
            Outcome::Attempted,
        ] {
            assert_eq!(serde_json::to_string(&o).unwrap(), format!("\"{}\"", o.as_str()));
        }
        for d in [
            AuditDecision::Approve,
            AuditDecision::Deny,
            AuditDecision::Nudge,
            AuditDecision::FullBody,
            AuditDecision::Hold,
            AuditDecision::Escalate,
        ] {
            assert_eq!(serde_json::to_string(&d).unwrap(), format!("\"{}\"", d.as_str()));
        }
    }
}
