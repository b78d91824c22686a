//! Usage methods: token use and cost, the spend ledger's history, and the
//! agents' budgets.

use console_api::{RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let spend = &c.app.spend;
    let v = match c.method.name {
        m::USAGE_GET => spend.usage_get(c.params()?).await?,
        m::SPEND_HISTORY => spend.spend_history(c.params()?).await?,
        m::BUDGET_GET => spend.budget_get(&c.params::<console_api::AgentRef>()?.agent).await?,
        m::BUDGET_SET => spend.budget_set(c.params()?).await?,
        m::BUDGET_TOPUP => spend.budget_topup(c.params()?).await?,
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
