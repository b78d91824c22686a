//! Advice: a monitor conversation's `conversation.sendMessage` into a target
//! (what `warren-advise` calls with its instance token). The token's
//! may-inject came from an advising attachment; here the node checks that
//! attachment is still there and its breaker allows it, prefixes the text
//! itself (a monitor cannot speak as a human) and delivers it through the
//! same atomic queue as any message, as speaker `monitor:NAME`.

use console_api as api;

use monitor::Target;

use super::Monitors;
use crate::service::{NodeError, NodeResult};
use node_store::util::now_ms;

impl Monitors {
    /// The breaker's word on one injection of `attachment`: refused when
    /// tripped; `true` when this one trips it (it is still delivered). Its
    /// events are stored. Allowed advice is remembered by the watch, so its
    /// echo in the target does not wake the monitor again.
    pub(crate) async fn allow_inject(&self, attachment: &str, advice: &str) -> NodeResult<bool> {
        let now = now_ms();
        let allowed = self
            .watches
            .lock()
            .map_err(|_| NodeError::Internal("monitor state poisoned".into()))?
            .get_mut(attachment)
            .map(|w| {
                let allowed = w.breaker_mut().on_inject(now);
                if allowed.is_ok() {
                    w.remember_advice(advice, now);
                }
                allowed
            });
        let Some(Ok(events)) = allowed else {
            return Err(NodeError::Conflict(format!(
                "attachment {attachment}: its breaker is tripped; nothing is injected until a human re-arms it (`warren monitor rearm {attachment}`)"
            )));
        };
        let trips = events
            .iter()
            .any(|e| matches!(e, monitor::BreakerEvent::Tripped { .. }));
        self.record_breaker(attachment, events).await?;
        Ok(trips)
    }

    /// Advice a member forwards from its monitor: prefixed and attributed
    /// here, the home; the breaker decided on the monitor's node.
    pub async fn send_remote_advice(&self, p: api::SendMessage, monitor: &str) -> NodeResult<api::SendMessageResult> {
        node_store::validate::agent_name(monitor).map_err(|e| NodeError::Invalid(format!("advice_from: {e}")))?;
        let text = monitor::advise(monitor, &p.text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let live = self.require_live(&p.conversation).await?;
        let d = live.send_message(text, format!("monitor:{monitor}")).await?;
        Ok(api::SendMessageResult {
            message_id: d.message_id,
            delivered_at: d.delivered_at,
            seq: d.seq,
        })
    }

    /// `conversation.sendMessage` by the conversation of agent `speaker`
    /// (an instance token): advice, when `speaker` is a monitor advising
    /// the target.
    pub async fn send_advice(&self, p: api::SendMessage, speaker: &str) -> NodeResult<api::SendMessageResult> {
        let target_agent = self.conversation_agent(&p.conversation).await;
        let attachments: Vec<String> = {
            let cat = self.catalog.lock().await;
            cat.monitors
                .of_monitor(speaker)
                .filter(|(_, a)| a.spec.inject.unwrap_or(true))
                .map(|(id, _)| id.clone())
                .collect()
        };
        // The advising attachment that covers this conversation.
        let chosen = {
            let w = self
                .watches
                .lock()
                .map_err(|_| NodeError::Internal("monitor state poisoned".into()))?;
            attachments.into_iter().find(|id| {
                w.get(id).is_some_and(|watch| match watch.attachment().target() {
                    Target::Agent(a) => target_agent.as_deref() == Some(a.as_str()),
                    Target::Conversation(c) => *c == p.conversation,
                })
            })
        };
        let Some(attachment) = chosen else {
            return Err(NodeError::Forbidden(format!(
                "agent {speaker:?} advises no attachment covering {}: only a monitor attached with inject may send into another agent's conversation",
                p.conversation
            )));
        };
        let text = monitor::advise(speaker, &p.text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        if self.automatic_messages_held(&p.conversation).await {
            return Err(NodeError::Conflict(format!(
                "{}: a human took over its task; advice waits until `task.resume_auto`",
                p.conversation
            )));
        }
        let trips = self.allow_inject(&attachment, &p.text).await?;
        let live = self.require_live(&p.conversation).await?;
        let d = live.send_message(text, format!("monitor:{speaker}")).await?;
        if trips {
            // The advice that completes the last allowed cycle is delivered,
            // then the breaker stops both sides.
            self.trip(&attachment, &p.conversation).await;
        }
        Ok(api::SendMessageResult {
            message_id: d.message_id,
            delivered_at: d.delivered_at,
            seq: d.seq,
        })
    }
}
