//! Transcript methods: reading a conversation's transcript, and the live
//! streams (its transcript events, its raw terminal bytes).

use console_api::{RpcError, methods as m};
use serde_json::{Value, json};

use super::{Call, not_served, to_value};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let conn = c.conn;
    let node = &c.app.node;
    let v = match c.method.name {
        m::TRANSCRIPT_READ => to_value(node.transcript_read(c.params()?).await?)?,
        m::TRANSCRIPT_SUBSCRIBE => {
            let sp: console_api::TranscriptSubscribe = c.params()?;
            node.check_subscribe_target(&sp).await?;
            json!({ "subscription": conn.subscribe_transcript(node, sp)? })
        }
        m::TERMINAL_SUBSCRIBE => {
            let id = c.conversation()?;
            let session = node.live_session(&id).await?;
            json!({ "subscription": conn.subscribe_terminal(node, session)? })
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
