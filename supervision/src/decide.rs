//! `decide_dialog`: classification, scope, the veto, the policy and the option
//! choice combined into one decision, always failing toward a hold.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::class::{DialogClass, classify_parsed};
use crate::dialog::prompt_kind;
use crate::dialog::{Dialog, FRAME_UNVERIFIED, Meaning};
use crate::escalate::escalation_in_normalized;
use crate::learned::LearnedRule;
use crate::options::PromptKind;
use crate::paths::{PathResolver, Scope};
use crate::policy::{Action, Policy};
use crate::scope::scope_detail_parsed;

/// What supervision does with the dialog.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Approve,
    Deny,
    Hold,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Approve => "approve",
            Verdict::Deny => "deny",
            Verdict::Hold => "hold",
        }
    }
}

/// Which rule produced the decision (the audit log's `policy_source`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PolicySource {
    /// The class's configured action.
    ClassPolicy,
    /// The always-escalate veto.
    AlwaysEscalate,
    /// A decision prompt, never answered.
    DecisionPrompt,
    /// Auto-approve, but the action is not provably repo-scoped.
    NotRepoScoped,
    /// No single safe option could be told apart.
    AmbiguousOption,
    /// The master switch or the agent's opt-in is off.
    SupervisionOff,
    /// A confirmed learned rule lifted the hold.
    LearnedRule,
    /// The dialog did not match its CLI's template, or its content (command,
    /// path) was not read for sure: nothing is answered without a human.
    FrameUnverified,
}

impl PolicySource {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicySource::ClassPolicy => "class_policy",
            PolicySource::AlwaysEscalate => "always_escalate",
            PolicySource::DecisionPrompt => "decision_prompt",
            PolicySource::NotRepoScoped => "not_repo_scoped",
            PolicySource::AmbiguousOption => "ambiguous_option",
            PolicySource::SupervisionOff => "supervision_off",
            PolicySource::LearnedRule => "learned_rule",
            PolicySource::FrameUnverified => "frame_unverified",
        }
    }
}

impl fmt::Display for PolicySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decision about one dialog, with everything the audit row needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: Verdict,
    /// The chosen option (0-based) when approving or denying.
    pub option: Option<usize>,
    /// The keys to send; empty on a hold.
    pub keys: Vec<String>,
    pub class: DialogClass,
    pub prompt: PromptKind,
    pub repo_scoped: bool,
    pub source: PolicySource,
    /// For a human: why.
    pub reason: String,
    /// What the dialog is about, shortened (its command, first path or title):
    /// the audit log's `subject`.
    pub subject: String,
    /// The files (resolved) the action writes or deletes, when it is
    /// repo-scoped. Once an approval is typed, the node adds them to the
    /// conversation's [`Scope::changed`] for the repository-code rule.
    #[serde(default)]
    pub writes: Vec<PathBuf>,
    /// When the repository-code rule held it: the entries of
    /// [`Scope::changed`] (definitions the agent changed) that did. A human who
    /// approves the dialog has accepted them as they are now, so the node
    /// drops them from the conversation's changed set.
    #[serde(default)]
    pub redefined: Vec<PathBuf>,
}

/// What a decision is made against besides the dialog.
#[derive(Clone, Copy)]
pub struct DecisionContext<'a> {
    pub policy: &'a Policy,
    pub scope: &'a Scope,
    pub resolver: &'a dyn PathResolver,
    /// Learned rules for this workspace (unconfirmed ones are ignored).
    pub learned_rules: &'a [LearnedRule],
}

/// Classes whose auto-approve needs the action to be repo-scoped. The others
/// are never scoped, so an explicit auto-approve mapping for them is the
/// operator's own choice and is honoured.
fn needs_scope(class: DialogClass) -> bool {
    matches!(
        class,
        DialogClass::CommandExec | DialogClass::FileWrite | DialogClass::Deletion | DialogClass::NetworkAccess
    )
}

fn subject(dialog: &Dialog) -> String {
    let text = dialog
        .command
        .clone()
        .or_else(|| dialog.paths.first().cloned())
        .unwrap_or_else(|| dialog.title.trim().to_string());
    let mut short: String = text.chars().take(120).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}

/// Decides one dialog. Order, each step able only to hold:
/// 1. supervision off (master switch or the agent's opt-in) -> hold, but
///    for the learned-rule path, which stays as it was before supervision
///    (seed 000): a confirmed rule still approves an already repo-scoped
///    `command_exec` read for sure, in a permission prompt, with no
///    always-escalate shape;
/// 2. content the adapter did not read for sure (`doubt`) -> hold;
/// 3. a decision prompt -> hold;
/// 4. the always-escalate veto -> hold;
/// 5. the class's action: auto-approve needs repo scope (for the scoped
///    classes) and the template's approve-once answer; auto-deny needs its
///    deny answer; hold holds, unless a confirmed learned rule matches an
///    already repo-scoped `command_exec`. An answer is given only when the
///    adapter verified the dialog's frame (`answers`), read its content for
///    sure (no `doubt`) and the answer's option says the same in words (an
///    approve is never a standing permission).
pub fn decide_dialog(dialog: &Dialog, ctx: &DecisionContext<'_>) -> Decision {
    // The command is parsed once: the classifier and the scope read the same words.
    let parsed = dialog
        .command
        .as_deref()
        .filter(|c| !c.trim().is_empty())
        .map(crate::shell::parse);
    let action = dialog.normalized_action_text();
    let class = classify_parsed(dialog, parsed.as_ref().and_then(|p| p.as_ref().ok()), &action);
    let prompt = prompt_kind(dialog);
    let (scoped, redefined) = scope_detail_parsed(dialog, parsed.as_ref(), class, ctx.scope, ctx.resolver);
    let repo_scoped = scoped.is_ok();
    let writes = scoped.clone().unwrap_or_default();
    let what = subject(dialog);
    let hold = |source: PolicySource, reason: String| Decision {
        verdict: Verdict::Hold,
        option: None,
        keys: Vec::new(),
        class,
        prompt,
        repo_scoped,
        source,
        reason,
        subject: what.clone(),
        writes: writes.clone(),
        redefined: redefined.clone(),
    };
    // Answers with the template's answer of that meaning (its option and
    // keys appended to `why`), or holds: when the dialog's frame did not
    // match its CLI's template, when the template's answer does not say the
    // same in words.
    let answer = |verdict: Verdict, source: PolicySource, why: String| {
        let meaning = match verdict {
            Verdict::Deny => Meaning::Deny,
            _ => Meaning::ApproveOnce,
        };
        match dialog.answer(meaning) {
            Ok(a) => {
                let chosen = match a.option {
                    Some(i) => format!(
                        "option {} \"{}\"",
                        i + 1,
                        dialog.options.get(i).map_or("", String::as_str)
                    ),
                    None => "Escape".to_string(),
                };
                Decision {
                    verdict,
                    option: a.option,
                    keys: vec![a.keys.clone()],
                    ..hold(source, format!("{why}; {chosen}"))
                }
            }
            Err(e) if dialog.answers.is_none() => hold(PolicySource::FrameUnverified, e),
            Err(e) => hold(
                PolicySource::AmbiguousOption,
                format!("no single one-time {} option: {e}", verdict.as_str()),
            ),
        }
    };

    // A confirmed learned rule that covers an already repo-scoped command.
    let learned = match (class, dialog.command.as_deref(), repo_scoped) {
        (DialogClass::CommandExec, Some(cmd), true) => ctx.learned_rules.iter().find(|r| r.matches(cmd)),
        _ => None,
    };
    if let Some(off) = ctx.policy.off_reason() {
        // Supervision off equals the behaviour before it (seed 000): the
        // learned-rule path still approves a routine command its rule covers,
        // behind the same checks (read for sure, a permission prompt, no
        // always-escalate shape); everything else waits for a human.
        let routine =
            dialog.doubt.is_none() && prompt == PromptKind::Permission && escalation_in_normalized(&action).is_none();
        return match learned.filter(|_| routine) {
            Some(rule) => answer(
                Verdict::Approve,
                PolicySource::LearnedRule,
                format!("{off}; learned rule `{}` covers `{what}`", rule.pattern),
            ),
            None => hold(
                PolicySource::SupervisionOff,
                format!("{off}; {class} `{what}` waits for a human"),
            ),
        };
    }
    if let Some(doubt) = &dialog.doubt {
        return hold(
            PolicySource::FrameUnverified,
            format!("{FRAME_UNVERIFIED}: {doubt}; `{what}` waits for a human"),
        );
    }
    if prompt == PromptKind::Decision {
        return hold(
            PolicySource::DecisionPrompt,
            "a decision prompt is never answered by supervision".into(),
        );
    }
    if let Some(shape) = escalation_in_normalized(&action) {
        return hold(
            PolicySource::AlwaysEscalate,
            format!("`{what}` is a {shape}: always escalated to a human"),
        );
    }
    match ctx.policy.action(class) {
        Action::AutoApprove => {
            if let (true, Err(why)) = (needs_scope(class), &scoped) {
                return hold(
                    PolicySource::NotRepoScoped,
                    format!("{class} `{what}` is not repo-scoped: {why}"),
                );
            }
            answer(
                Verdict::Approve,
                PolicySource::ClassPolicy,
                format!("{class} is auto_approve and `{what}` stays in scope"),
            )
        }
        Action::AutoDeny => answer(
            Verdict::Deny,
            PolicySource::ClassPolicy,
            format!("{class} is auto_deny"),
        ),
        Action::Hold => match learned {
            Some(rule) => answer(
                Verdict::Approve,
                PolicySource::LearnedRule,
                format!("learned rule `{}` covers `{what}`", rule.pattern),
            ),
            None => hold(
                PolicySource::ClassPolicy,
                format!("{class} is hold: `{what}` waits for a human"),
            ),
        },
    }
}
