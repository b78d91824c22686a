//! Tool methods: invoking an owner-defined tool and its log, and the
//! built-in recall store (search, stash, forget).

use console_api::{RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let conn = c.conn;
    let tools = &c.app.tools;
    let v = match c.method.name {
        m::TOOL_INVOKE => {
            tools
                .invoke(c.params()?, conn.speaks_for().as_deref(), conn.speaks_in().as_deref())
                .await?
        }
        m::TOOL_LOG => tools.log(c.raw().as_ref().unwrap_or(&Value::Null)).await?,
        m::RECALL_SEARCH => tools.recall_search(c.params()?).await?,
        m::RECALL_STASH => tools.recall_stash(c.params()?).await?,
        m::RECALL_FORGET => tools.recall_forget(c.params()?).await?,
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
