//! Supervision methods: policy, status, held dialogs and their answers, the
//! audit, nudges, CLI hook reports and learned approval rules.

use console_api::{ErrorCode, RpcError, methods as m};
use serde_json::Value;

use super::{Call, not_served};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let conn = c.conn;
    let node = &c.app.node;
    let v = match c.method.name {
        m::SUPERVISION_GET => {
            c.app
                .supervisor
                .supervision_get(c.params::<console_api::AgentFilter>()?.agent.as_deref())
                .await?
        }
        m::SUPERVISION_SET => c.app.supervisor.supervision_set(c.params()?).await?,
        m::SUPERVISION_STATUS => {
            c.app
                .supervisor
                .supervision_status(c.params::<console_api::AgentFilter>()?.agent.as_deref())
                .await?
        }
        m::SUPERVISION_HOLDS => {
            let mut holds = c
                .app
                .supervisor
                .supervision_holds(c.params::<console_api::AgentFilter>()?.agent.as_deref());
            node_store::redact::redact_value(&node.store().redaction().matcher(), &mut holds);
            holds
        }
        m::SUPERVISION_ANSWER => {
            let a: console_api::SupervisionAnswer = c.params()?;
            if a.learn && !conn.is_local() {
                return Err(RpcError::new(
                    ErrorCode::LocalOnly,
                    "learn: learning a rule is local-only: call supervision.answer on the node's Unix socket (warren.sock)",
                ));
            }
            c.app
                .supervisor
                .supervision_answer(&a.hold, &a.decision, a.learn)
                .await?
        }
        m::SUPERVISION_RULES => {
            c.app
                .supervisor
                .supervision_rules(&c.params::<console_api::AgentRef>()?.agent)
                .await?
        }
        m::SUPERVISION_LEARN => {
            let r: console_api::SupervisionRule = c.params()?;
            c.app
                .supervisor
                .supervision_learn(&r.agent, &r.pattern, true, "local admin via supervision.learn")
                .await?
        }
        m::SUPERVISION_FORGET => {
            let r: console_api::SupervisionRule = c.params()?;
            c.app
                .supervisor
                .supervision_learn(&r.agent, &r.pattern, false, "local admin via supervision.forget")
                .await?
        }
        m::SUPERVISION_AUDIT => {
            let a: console_api::SupervisionAudit = c.params()?;
            c.app
                .supervisor
                .supervision_audit(a.agent.as_deref(), a.limit, a.before_id)
                .await?
        }
        m::SUPERVISION_HOOK => {
            let h: console_api::SupervisionHook = c.params()?;
            c.app
                .supervisor
                .supervision_hook(&h.conversation, &h.event, conn.speaks_for().as_deref())
                .await?
        }
        m::SUPERVISION_NUDGE => {
            let n: console_api::SupervisionNudge = c.params()?;
            c.app
                .supervisor
                .supervision_nudge(&n.agent, n.conversation.as_deref(), n.text)
                .await?
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
