//! The watch of a live conversation: wait for a dialog, read it once it is
//! stable, decide, and answer through verified send or hold it for a human.

use std::sync::Arc;
use std::time::Duration;

use console_api::Status;
use supervision::{Answer, AuditFields, DecisionContext, Meaning, Outcome, Trigger, Verdict};

use super::send::reads_the_same;
use super::{FsResolver, Supervisor, capture};
use crate::live::Live;
use node_runtime::harness::Dialog as ScreenDialog;

/// How long a dialog must stay unchanged before supervision reads it (Claude
/// Code drops keys sent in the first ~200 ms after a dialog appears).
const STABLE_FOR: Duration = Duration::from_millis(250);

impl Supervisor {
    /// Starts the watch loop of a live conversation.
    pub(crate) fn start_supervision(self: &Arc<Self>, id: &str) {
        let weak = Arc::downgrade(self);
        let id = id.to_string();
        tokio::spawn(async move {
            loop {
                let Some(node) = weak.upgrade() else { return };
                let Some(live) = node.live(&id) else {
                    return;
                };
                drop(node);
                let mut status = live.status_watch();
                if status
                    .wait_for(|s| matches!(s, Status::Dialog | Status::Exited))
                    .await
                    .is_err()
                {
                    return;
                }
                if *status.borrow() == Status::Exited {
                    return;
                }
                // Stable: unchanged across two captures.
                let first = capture(&live);
                tokio::time::sleep(STABLE_FOR).await;
                let second = capture(&live);
                let Some(shown) = second.filter(|s| Some(s) == first.as_ref()) else {
                    continue;
                };
                let Some(node) = weak.upgrade() else { return };
                node.handle_dialog(&live, &shown).await;
                let workspace = live.workspace.clone();
                drop(node);
                // Wait until this dialog is gone (answered, changed, or the
                // CLI moved on). A repaint of the same dialog (a resize, say)
                // is not a change: its hold stays, and so does its id. The
                // last drawing seen is kept, so a dialog that sits repainted
                // is compared row by row, not read again every poll.
                let mut drawn = shown.clone();
                loop {
                    if let Ok(Err(_)) = tokio::time::timeout(Duration::from_millis(200), status.changed()).await {
                        // The conversation's watcher is gone: so is this loop.
                        return;
                    }
                    if *status.borrow() == Status::Exited {
                        return;
                    }
                    match capture(&live) {
                        Some(now) if now == drawn => {}
                        Some(now) if reads_the_same(&live, &now, &shown, &workspace) => drawn = now,
                        // Gone: answered, or the CLI moved on.
                        None => break,
                        Some(_) => {
                            // A dialog half repainted (a resize, say) can read
                            // as another for a moment: judge it once the
                            // screen has had time to settle.
                            tokio::time::sleep(STABLE_FOR).await;
                            match capture(&live) {
                                Some(now) if now == drawn => {}
                                Some(now) if reads_the_same(&live, &now, &shown, &workspace) => drawn = now,
                                _ => break,
                            }
                        }
                    }
                }
                // A hold whose dialog went away (answered on the terminal, say) is over.
                if let Some(node) = weak.upgrade() {
                    node.drop_hold_of(&id, &shown);
                }
            }
        });
    }

    async fn handle_dialog(&self, live: &Live, shown: &ScreenDialog) {
        self.spend.observe_limit_screen(live, shown).await;
        // The repository scope is where the conversation works (its
        // worktree); learned rules stay the agent's.
        let dir = (self.agent_home_dirs(&live.agent).0, live.workspace.clone());
        // The CLI's own report of the tool call, when fresh, is the source of
        // the command or path; the adapter checks the screen agrees. A CLI
        // that records the call in its session file wrote it before drawing
        // the dialog: read what it wrote first.
        live.read_session_file().await;
        let now = std::time::Instant::now();
        let hook = live
            .hook
            .lock()
            .ok()
            .and_then(|h| h.as_ref().filter(|r| r.fresh(now)).cloned());
        let dialog = live.harness.supervision_dialog(shown, &dir.1, hook.as_ref());
        let policy = self.supervision_policy(&live.agent).await;
        let learned = self.learned_rules(&self.rules_workspace(&live.agent)).await;
        // What defines repository code, as changed since a human accepted it
        // (durable, per workspace, by any route), and git's hook directories.
        let facts = self.workspace_facts(&dir.1).await;
        let scope = supervision::Scope::new(dir.1.clone())
            .with_agent_home(dir.0.clone())
            .with_changed(live.changed_files().into_iter().chain(facts.changed))
            .with_hook_dirs(facts.hook_dirs)
            .with_escaping_links(facts.escaping_links)
            .with_definitions_unknown(facts.unknown);
        let mut decision = supervision::decide_dialog(
            &dialog,
            &DecisionContext {
                policy: &policy,
                scope: &scope,
                resolver: &FsResolver,
                learned_rules: &learned,
            },
        );
        // Fail safe: once the record of what the agent wrote is full, the
        // repository-code rule could miss a change, so nothing more is routine.
        if decision.verdict == Verdict::Approve && live.changed_is_full() {
            decision.verdict = Verdict::Hold;
            decision.reason = "this conversation's record of changed files is full: held for a human".into();
        }
        // A task whose decider answers every dialog: the policy's approve
        // becomes the decider's question (its deny stands).
        if decision.verdict == Verdict::Approve && self.decider_answers_all(&live.id).await {
            decision.verdict = Verdict::Hold;
            decision.reason = "the task's decider answers every dialog (authority: decider)".into();
        }
        match decision.verdict {
            Verdict::Hold => self.hold(live, shown, dialog, &decision).await,
            Verdict::Approve | Verdict::Deny => {
                let meaning = match decision.verdict {
                    Verdict::Approve => Meaning::ApproveOnce,
                    _ => Meaning::Deny,
                };
                let answer = Answer {
                    option: decision.option,
                    keys: decision.keys.concat(),
                };
                // Supervision off: only the learned-rule path answers (seed
                // 000's legacy path), audited as `legacy_rule`.
                let legacy = !policy.enabled;
                let (outcome, _) = self
                    .verified_send(live, shown, meaning, &answer, |outcome, why| {
                        let mut fields = AuditFields::for_dialog(&decision, outcome, why);
                        if legacy {
                            fields.trigger = Trigger::LegacyRule;
                        }
                        fields
                    })
                    .await;
                if legacy && outcome != Outcome::Sent {
                    // Not typed (the dialog changed or went away): the human
                    // still hears about it, as about any dialog supervision
                    // does not answer.
                    if capture(live).is_some_and(|now| reads_the_same(live, &now, shown, &dir.1)) {
                        let mut held = decision.clone();
                        held.verdict = Verdict::Hold;
                        held.keys.clear();
                        held.source = supervision::PolicySource::SupervisionOff;
                        held.reason = format!("{}; not typed: held for a human", decision.reason);
                        self.hold(live, shown, dialog, &held).await;
                    } else {
                        self.publish(
                            console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                            serde_json::json!({
                                "reason": format!("a learned rule's approval of `{}` was not typed: the dialog changed", decision.subject),
                                "agent": live.agent,
                                "conversation": live.id,
                            }),
                        );
                    }
                    return;
                }
                // What a routine approval let the agent write counts against
                // running repository code later in this conversation.
                if outcome == Outcome::Sent && decision.verdict == Verdict::Approve {
                    live.add_changed(&decision.writes);
                }
            }
        }
    }
}
