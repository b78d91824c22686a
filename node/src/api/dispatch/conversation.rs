//! Conversation methods: starting, continuing, pausing and ending a
//! conversation, reading it and its screen, and typing into it (a message,
//! raw keys, a resize).

use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, not_served, to_value};
use crate::conversations::workspace::with_head;
use tasks::state::TakeoverSource;

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let conn = c.conn;
    let node = &c.app.node;
    let v = match c.method.name {
        m::CONVERSATION_START => {
            let wire = c
                .app
                .conversations
                .conversation_start(&c.params::<console_api::AgentRef>()?.agent)
                .await?;
            json!({ "conversation": with_head(wire).await })
        }
        m::CONVERSATION_CONTINUE => {
            json!({ "conversation": with_head(c.app.conversations.conversation_continue(c.params()?).await?).await })
        }
        m::CONVERSATION_PAUSE => {
            json!({ "conversation": c.app.conversations.conversation_pause(&c.conversation()?).await? })
        }
        m::CONVERSATION_TERMINATE => {
            json!({ "conversation": c.app.conversations.conversation_terminate(&c.conversation()?).await? })
        }
        m::CONVERSATION_GET => {
            let wire = node.conversation_get(&c.conversation()?).await?;
            json!({ "conversation": with_head(wire).await })
        }
        m::CONVERSATION_DIFF => to_value(c.app.conversations.conversation_diff(c.params()?).await?)?,
        m::CONVERSATION_LIST => json!({ "conversations": node.conversation_list(c.params()?).await? }),
        m::CONVERSATION_SCREEN => {
            let read: console_api::ScreenRead = c.params()?;
            let mut screen = node.screen(&read).await?;
            node_store::redact::redact_screen(&node.store().redaction().matcher(), &mut screen);
            to_value(screen)?
        }
        m::CONVERSATION_SEND_MESSAGE => {
            let sent = match conn.speaks_for() {
                // An agent's own token (a monitor advising): never a human.
                Some(agent) => c.app.monitors.send_advice(c.params()?, &agent).await?,
                None => {
                    let msg: console_api::SendMessage = c.params()?;
                    match msg.advice_from.clone() {
                        // A member forwards its monitor's advice: the home
                        // prefixes and attributes it (only then).
                        Some(monitor) if conn.transport() == "fabric" => {
                            c.app.monitors.send_remote_advice(msg, &monitor).await?
                        }
                        Some(_) => {
                            return Err(RpcError::new(
                                ErrorCode::InvalidParams,
                                "advice_from: only a member forwarding its monitor's advice sets it",
                            ));
                        }
                        None => {
                            let conversation = msg.conversation.clone();
                            let sent = node.send_message(msg, conn.speaker()).await?;
                            c.app.tasks.human_input(&conversation, TakeoverSource::Message).await;
                            sent
                        }
                    }
                }
            };
            to_value(sent)?
        }
        m::CONVERSATION_SEND_KEYS => {
            let keys: console_api::SendKeys = c.params()?;
            let conversation = keys.conversation.clone();
            node.send_keys(keys).await?;
            c.app.tasks.human_input(&conversation, TakeoverSource::Keys).await;
            json!({ "sent": true })
        }
        m::CONVERSATION_RESIZE => {
            node.resize(c.params()?).await?;
            json!({ "resized": true })
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
