//! Mail methods: sending to an agent's inbox (here or on another member),
//! reading it, acknowledging it, and the sender's outbox.

use console_api::{RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let conn = c.conn;
    let mail = &c.app.mail;
    let v = match c.method.name {
        m::MAILBOX_SEND => mail.send(c.params()?, conn.speaks_for().as_deref()).await?,
        m::MAILBOX_INBOX => mail.inbox(c.params()?).await?,
        m::MAILBOX_OUTBOX => mail.outbox(c.params()?).await?,
        m::MAILBOX_UNREAD => {
            mail.unread(c.params::<console_api::AgentFilter>()?.agent.as_deref())
                .await?
        }
        m::MAILBOX_ACK => mail.ack(c.params()?).await?,
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
