//! Task methods (seed 001): starting unattended work, reading tasks, and the
//! human's moves on one (stop, recover, discard, resume automatic messages).

use console_api::{RpcError, TaskRecover, TaskRef, methods as m};
use serde_json::Value;
use tasks::Input;

use super::{Call, not_served, to_value};

pub(super) async fn call(c: &mut Call<'_>) -> Result<Value, RpcError> {
    let work = &c.app.tasks;
    let v = match c.method.name {
        m::TASK_START => work.task_start(c.params()?).await?,
        m::TASK_GET => work.task_get(&c.params::<TaskRef>()?.task).await?,
        m::TASK_LIST => work.task_list(c.params()?).await?,
        m::TASK_STOP => work.task_ask(&c.params::<TaskRef>()?.task, Input::StopAsked).await?,
        m::TASK_DISCARD => work.task_ask(&c.params::<TaskRef>()?.task, Input::Discard).await?,
        m::TASK_RESUME_AUTO => work.task_ask(&c.params::<TaskRef>()?.task, Input::ResumeAuto).await?,
        m::TASK_DIFF => to_value(work.task_diff(&c.params::<TaskRef>()?.task).await?)?,
        m::TASK_REVIEW => work.task_review(c.params()?, c.conn.speaks_for().as_deref()).await?,
        m::TASK_DECIDE => work.task_decide(c.params()?, c.conn.speaks_for().as_deref()).await?,
        m::TASK_RECOVER => {
            let p: TaskRecover = c.params()?;
            let extend_secs = p.extend_secs.unwrap_or(0);
            work.task_ask(&p.task, Input::Recover { extend_secs }).await?
        }
        _ => return Err(not_served(c.method)),
    };
    Ok(v)
}
