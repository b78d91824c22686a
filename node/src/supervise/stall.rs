//! The stall watch: nudges for an idle agent with work outstanding, one
//! escalation, and wake-on-mail.

use std::sync::Arc;
use std::time::Duration;

use console_api::Status;
use serde_json::json;
use supervision::{AuditFields, Outcome, Trigger};

use super::Supervisor;
use crate::live::Live;
use crate::mail::MailStanding;

impl Supervisor {
    /// Starts the stall watch of a live conversation: a one-second tick that
    /// feeds `decide_stall` and sends its nudges (as one message each, through
    /// the conversation's message queue, which waits for IDLE) or escalates.
    pub(crate) fn start_stall_watch(self: &Arc<Self>, id: &str) {
        let weak = Arc::downgrade(self);
        let id = id.to_string();
        tokio::spawn(async move {
            let origin = std::time::Instant::now();
            let mut episode = supervision::StallEpisode::default();
            // The mail group being delivered: (newest seq covered, state).
            let mut mail: Option<(u64, supervision::MailState)> = None;
            let mut last_screen = String::new();
            let mut unchanged_since = None;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(node) = weak.upgrade() else { return };
                let Some(live) = node.live(&id) else {
                    return;
                };
                let now = origin.elapsed();
                // A human took over this conversation's task: nothing
                // automatic is typed into it until `task.resume_auto`.
                if node.automatic_messages_held(&id).await {
                    episode = supervision::StallEpisode::default();
                    continue;
                }
                let policy = node.supervision_policy(&live.agent).await;
                // Mail reaches every agent: unsupervised as the full body,
                // supervised in its mail mode (`delivery_mode`).
                let standing = node.mail.standing(&live.agent).await;
                let delivered = node.wake_on_mail(&live, &policy, now, &standing, &mut mail).await;
                if !policy.enabled {
                    // Unsupervised: no screen reads or stall nudges (start
                    // fresh if enabled later).
                    episode = supervision::StallEpisode::default();
                    unchanged_since = None;
                    continue;
                }
                let screen = live.session.screen().text();
                if screen != last_screen || unchanged_since.is_none() {
                    last_screen = screen;
                    unchanged_since = Some(now);
                }
                let standing = if delivered {
                    node.mail.standing(&live.agent).await
                } else {
                    standing
                };
                // Mail typed in full is no outstanding work; unread mail the
                // agent was only nudged about still is.
                let unread = supervision::undelivered(standing.newest, standing.acked, standing.delivered.full_body);
                let seen = supervision::StallObservation {
                    now,
                    outstanding_work: policy.expect_work || unread.is_some(),
                    eligible: live.status() == Status::Idle,
                    last_activity: live.last_activity().saturating_duration_since(origin),
                    pane_unchanged_since: unchanged_since,
                };
                let (next, action) = supervision::decide_stall(episode, &seen, &policy.stall_params());
                episode = next;
                node.act_on_stall(&live, action, &policy).await;
            }
        });
    }

    /// Wake-on-mail (seed 000): a new group of mail not yet delivered is
    /// delivered once when the CLI is idle, as the nudge text or the messages
    /// themselves (`delivery_mode`), retried once after the backoff, then
    /// needs-you (`decide_mail`). A delivery the CLI took is recorded
    /// durably, so no node types it twice. Returns whether one was.
    async fn wake_on_mail(
        &self,
        live: &Live,
        policy: &supervision::Policy,
        now: Duration,
        standing: &MailStanding,
        group: &mut Option<(u64, supervision::MailState)>,
    ) -> bool {
        use supervision::{MailEffect, MailEvent, MailState, SendOutcome};
        let Some(top) = supervision::undelivered(standing.newest, standing.acked, standing.delivered.woken) else {
            return false;
        };
        match group {
            Some((covered, MailState::Delivered | MailState::DeliveryFailed)) if top > *covered => {
                *group = Some((top, MailState::Queued));
            }
            None => *group = Some((top, MailState::Queued)),
            _ => {}
        }
        let Some((covered, state)) = group.as_mut() else {
            return false;
        };
        let eligible = live.status() == Status::Idle;
        let mode = supervision::delivery_mode(policy.enabled, self.has_mail_tool(&live.agent).await, policy.mail_mode);
        let (next, effect) = supervision::decide_mail(
            *state,
            MailEvent::Tick { now, eligible },
            mode,
            policy.mail_retry_backoff,
        );
        *state = next;
        let MailEffect::Send { mode, retry } = effect else {
            return false;
        };
        let (text, decision) = match mode {
            supervision::MailMode::Nudge => (policy.nudge_text.clone(), supervision::AuditDecision::Nudge),
            supervision::MailMode::FullBody => (
                self.mail.undelivered_lines(&live.agent, *covered).await,
                supervision::AuditDecision::FullBody,
            ),
        };
        if text.is_empty() {
            // Read and acknowledged meanwhile: nothing left to deliver.
            *group = None;
            return false;
        }
        let covered_now = *covered;
        let (sent, _, _) = self
            .audited_message(live, text, |outcome, why| {
                let reason = match why {
                    None => format!("mail for the agent{}", if retry { " (retry)" } else { "" }),
                    Some(e) => format!("mail delivery not sent: {e}"),
                };
                let mut fields = AuditFields::for_action(Trigger::Mail, decision, outcome, reason);
                fields.subject = Some(format!("mail up to {covered_now}"));
                fields
            })
            .await;
        let outcome = if sent == Outcome::Sent {
            // The CLI took it (its echo came back as the user's turn).
            let full_body = mode == supervision::MailMode::FullBody;
            self.mail
                .mark_delivered(&live.agent, &live.id, covered_now, full_body)
                .await;
            SendOutcome::Sent
        } else {
            SendOutcome::Skipped
        };
        let (next, effect) = supervision::decide_mail(
            *state,
            MailEvent::Attempted { now, outcome },
            mode,
            policy.mail_retry_backoff,
        );
        *state = next;
        if effect == MailEffect::NeedsYou {
            self.publish(
                console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                json!({ "reason": "mail could not be delivered", "agent": live.agent, "conversation": live.id }),
            );
        }
        outcome == SendOutcome::Sent
    }

    /// Whether `agent` can read its own inbox: it is granted the `mail` tool.
    async fn has_mail_tool(&self, agent: &str) -> bool {
        let cat = self.catalog.lock().await;
        cat.agent(agent)
            .is_ok_and(|a| a.record.grants.tools.iter().any(|t| t == "mail"))
    }

    async fn act_on_stall(&self, live: &Live, action: supervision::StallAction, policy: &supervision::Policy) {
        use supervision::{AuditDecision, StallAction};
        match action {
            StallAction::Nothing => {}
            StallAction::Nudge { number } => {
                self.audited_message(live, policy.nudge_text.clone(), |outcome, why| {
                    let reason = match why {
                        None => format!("stalled with work outstanding: nudge {number}"),
                        Some(e) => format!("nudge {number} not sent: {e}"),
                    };
                    let mut fields = AuditFields::for_action(Trigger::Stall, AuditDecision::Nudge, outcome, reason);
                    fields.subject = Some(format!("nudge {number}"));
                    fields
                })
                .await;
            }
            StallAction::Escalate { nudges } => {
                let reason = format!("still stalled after {nudges} nudges");
                let mut fields =
                    AuditFields::for_action(Trigger::Stall, AuditDecision::Escalate, Outcome::Held, reason.clone());
                fields.subject = Some("stall".into());
                self.audit(&live.agent, Some(&live.id), fields, String::new(), None)
                    .await;
                self.publish(
                    console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                    json!({ "reason": reason, "agent": live.agent, "conversation": live.id }),
                );
            }
        }
    }
}
