//! Usage methods: token use and cost, the spend ledger's history, and the
//! agents' budgets.

use console_api::{RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let node = &c.app.node;
    let v = match c.method.name {
        m::USAGE_GET => node.usage_get(c.params()?).await?,
        m::SPEND_HISTORY => node.spend_history(c.params()?).await?,
        m::BUDGET_GET => node.budget_get(&c.params::<console_api::AgentRef>()?.agent).await?,
        m::BUDGET_SET => node.budget_set(c.params()?).await?,
        m::BUDGET_TOPUP => node.budget_topup(c.params()?).await?,
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
