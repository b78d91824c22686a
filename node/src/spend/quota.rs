//! Live quota as `usage.get` metrics: the rate-limit windows the ledger read
//! from the CLIs' session files (Codex's `rate_limits`, Claude Code's
//! usage-limit notices) and the usage-limit screens supervision saw, newest
//! per agent and window, dropped once their window has reset.

use serde_json::Value;

use super::LedgerScope;
use crate::live::Live;
use crate::service::NodeResult;
use node_runtime::harness::Dialog as ScreenDialog;
use node_store::store::spend::LedgerQuota;
use node_store::util::now_ms;

impl super::Spend {
    /// The quota metrics of a scope, newest first.
    pub(crate) async fn quota_of(&self, scope: LedgerScope<'_>) -> NodeResult<Value> {
        let filter = scope.filter();
        let samples = self.store().quota_samples(&filter).await?;
        let now = now_ms() as i64;
        let current = ::spend::quota::current(samples.iter().map(|q| (q.agent.as_str(), &q.sample)), now);
        Ok(Value::Array(
            current
                .into_iter()
                .map(|(agent, s)| ::spend::quota::quota_wire(s, agent))
                .collect(),
        ))
    }

    /// Records the limit a usage-limit screen names (Claude Code's "You've
    /// hit your usage limit · resets 3pm"), as the conversation's quota.
    pub(crate) async fn observe_limit_screen(&self, live: &Live, shown: &ScreenDialog) {
        let text = shown.lines.join("\n");
        let Some(mut sample) = ::spend::quota::claude_limit(&text, &live.id, now_ms() as i64) else {
            return;
        };
        // The CLI session, when known, so the session file's own notice of
        // the same limit is one sample with it.
        let session = {
            let cat = self.catalog.lock().await;
            cat.conversation(&live.id).ok().and_then(|c| c.resume_ref.clone())
        };
        if let Some(s) = session {
            sample.session_id = s;
        }
        let q = LedgerQuota {
            agent: live.agent.clone(),
            conversation: Some(live.id.clone()),
            sample,
        };
        if let Err(e) = self.store().quota_write(std::slice::from_ref(&q)).await {
            tracing::warn!(conversation = %live.id, error = %e, "could not record the usage limit shown");
        }
    }
}
