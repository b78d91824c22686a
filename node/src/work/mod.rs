//! Unattended tasks (seed 001), the node's side: the decisions are the
//! `tasks` crate's (validation, the state machine, its events and fold); this
//! subsystem owns the IO around them. A task's state lives in the catalog
//! (`task` events folded by `node_store::folds::tasks`); each task has one
//! serial queue ([`Tasks::input`]) whose worker decides every input against
//! the stored task, records the decision's events, then carries out its
//! effects (`effects.rs`): sending the goal and repairs and watching for the
//! turn's end, running the acceptance commands (`checks.rs`), committing the
//! task branch, stopping the worker. Whatever takes time runs beside the
//! queue and reports back through it, so concurrent turn ends, stops,
//! deadlines and restarts are decided one at a time, in order.

mod checks;
mod decider;
mod effects;
mod observe;
mod review;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use console_api as api;
use node_store::catalog::Catalog;
use node_store::events::Event;
use node_store::util::{new_id, now_ms};
use serde_json::{Value, json};
use tasks::{Input, Placement, Task, TaskObject, TaskSpec};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::service::{Node, NodeError, NodeResult};

/// How many inputs may wait in one task's queue (senders wait when it is full).
const QUEUE: usize = 64;

/// The tasks this node homes: a subsystem over the core (`Deref` to `Node`).
pub struct Tasks {
    node: Arc<Node>,
    /// Starting the worker's conversation, pausing it when the task ends.
    conversations: Arc<crate::conversations::Conversations>,
    /// The dialogs held on a worker's conversation, answered by its decider.
    supervisor: Arc<crate::supervise::Supervisor>,
    me: Weak<Tasks>,
    /// Task id -> its serial queue (while its worker runs).
    queues: Mutex<HashMap<String, mpsc::Sender<Job>>>,
    /// Task id -> what runs beside its queue: a verification round, its deadline timer.
    beside: Mutex<HashMap<String, Beside>>,
}

#[derive(Default)]
struct Beside {
    verification: Option<(u32, JoinHandle<()>)>,
    timer: Option<JoinHandle<()>>,
    /// The reviewer's conversation for this task (its rounds continue it).
    reviewer: Option<String>,
    /// The decider's conversation for this task (each dialog continues it).
    decider: Option<String>,
    /// The time limit of the dialog put to the decider.
    decider_timer: Option<JoinHandle<()>>,
}

impl std::ops::Deref for Tasks {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

/// What `task.start`'s validation asks of the catalog.
struct CatalogFacts<'a>(&'a Catalog);

impl tasks::Facts for CatalogFacts<'_> {
    fn agent_exists(&self, name: &str) -> bool {
        self.0.agents.get(name).is_some_and(|a| !a.archived)
    }

    fn has_workspace(&self, name: &str) -> bool {
        self.0
            .agents
            .get(name)
            .is_some_and(|a| !a.archived && a.record.workspace.is_some())
    }
}

fn not_found(id: &str) -> NodeError {
    NodeError::NotFound(format!("task {id:?} not found"))
}

impl Tasks {
    pub fn new(
        node: Arc<Node>,
        conversations: Arc<crate::conversations::Conversations>,
        supervisor: Arc<crate::supervise::Supervisor>,
    ) -> Arc<Tasks> {
        Arc::new_cyclic(|me| Tasks {
            node,
            conversations,
            supervisor,
            me: me.clone(),
            queues: Default::default(),
            beside: Default::default(),
        })
    }

    /// Start-up: every task not ended gets its queue again and hears that
    /// the node restarted (a verification in flight runs again).
    pub async fn start_tasks(&self) {
        let open: Vec<(String, String)> = {
            let cat = self.catalog.lock().await;
            cat.tasks
                .open()
                .map(|t| (t.id.clone(), t.conversation.clone()))
                .collect()
        };
        for (id, conversation) in open {
            self.input(&id, Input::NodeRestarted).await;
            self.observe(&id, &conversation);
        }
    }

    /// `task.start`: validated (nothing stored on a refusal), the worker's
    /// conversation started on its own worktree and branch, the task
    /// recorded, the goal sent.
    pub async fn task_start(&self, spec: TaskSpec) -> NodeResult<Value> {
        {
            let cat = self.catalog.lock().await;
            tasks::validate(&spec, &CatalogFacts(&cat)).map_err(|e| NodeError::Invalid(e.to_string()))?;
            if let Some(live) = cat.live_conversation_of(&spec.agent) {
                return Err(NodeError::Conflict(format!(
                    "agent {:?} has a live conversation {}: a task works in a conversation of its own; pause that one first",
                    spec.agent, live.id
                )));
            }
        }
        let asked_at = now_ms();
        let conversation = self.conversations.conversation_start(&spec.agent).await?;
        let recorded = self.record_start(&spec, &conversation).await;
        let (task, decision) = match recorded {
            Ok(x) => x,
            Err(e) => {
                // Nothing of the task is stored: the conversation started for
                // it does not run on (one a racing call started is left be).
                if conversation.created_at >= asked_at {
                    let _ = self.conversations.conversation_pause(&conversation.id).await;
                }
                return Err(e);
            }
        };
        self.changed(&task, None);
        self.carry_out(&task, decision.effects).await;
        self.arm_timer(&task);
        self.observe(&task.id, &task.conversation);
        Ok(json!({ "task": TaskObject::from(&task) }))
    }

    /// Places the task on its started conversation and records its creation.
    async fn record_start(
        &self,
        spec: &TaskSpec,
        conversation: &api::Conversation,
    ) -> NodeResult<(Task, tasks::Decision)> {
        let Some(ws) = conversation.workspace.clone() else {
            return Err(NodeError::Conflict(format!(
                "conversation {} of agent {:?} has no workspace",
                conversation.id, spec.agent
            )));
        };
        let placement = Placement {
            id: new_id("t-"),
            conversation: conversation.id.clone(),
            branch: ws.branch,
            baseline: ws.baseline.unwrap_or_default(),
        };
        let (task, decision) = tasks::create(spec, placement, now_ms());
        let mut cat = self.catalog.lock().await;
        if let Some(other) = cat
            .tasks
            .of_conversation(&task.conversation)
            .filter(|t| !t.is_terminal())
        {
            return Err(NodeError::Conflict(format!(
                "conversation {} already works on task {}",
                task.conversation, other.id
            )));
        }
        self.commit(&mut cat, events_of(&task.id, &decision.events)).await?;
        Ok((task, decision))
    }

    pub async fn task_get(&self, id: &str) -> NodeResult<Value> {
        let cat = self.catalog.lock().await;
        let task = cat.tasks.by_id.get(id).ok_or_else(|| not_found(id))?;
        Ok(json!({ "task": TaskObject::from(task) }))
    }

    pub async fn task_list(&self, p: api::TaskList) -> NodeResult<Value> {
        if let Some(s) = &p.state
            && !tasks::TaskState::ALL.iter().any(|t| t.as_str() == s)
        {
            let all: Vec<&str> = tasks::TaskState::ALL.iter().map(|t| t.as_str()).collect();
            return Err(NodeError::Invalid(format!(
                "state: {s:?} is not a task state (one of {})",
                all.join(", ")
            )));
        }
        let cat = self.catalog.lock().await;
        let mut tasks: Vec<&Task> = cat
            .tasks
            .by_id
            .values()
            .filter(|t| p.agent.as_ref().is_none_or(|a| &t.agent == a))
            .filter(|t| p.state.as_ref().is_none_or(|s| t.state().as_str() == s))
            .collect();
        tasks.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.id.cmp(&b.id)));
        let tasks: Vec<TaskObject> = tasks.into_iter().map(TaskObject::from).collect();
        Ok(json!({ "tasks": tasks }))
    }

    /// `task.stop`, `task.recover`, `task.discard`, `task.resume_auto`: one
    /// input through the task's queue; the answer is the task after it.
    pub async fn task_ask(&self, id: &str, input: Input) -> NodeResult<Value> {
        if self.task_conversation(id).await.is_none() {
            return Err(not_found(id));
        }
        match self.decided(id, input).await {
            Some(Ok(())) => self.task_get(id).await,
            Some(Err(refused)) => Err(NodeError::Conflict(format!("task {id}: {refused}"))),
            None => Err(NodeError::Internal(format!("task {id}: its queue stopped"))),
        }
    }

    /// A human typed into, or sent a message to, `conversation`: the task it
    /// works on stops its automatic messages until `task.resume_auto`.
    pub async fn human_input(&self, conversation: &str, source: tasks::state::TakeoverSource) {
        let id = {
            let cat = self.catalog.lock().await;
            cat.tasks
                .of_conversation(conversation)
                .filter(|t| !t.is_terminal() && t.takeover.is_none())
                .map(|t| t.id.clone())
        };
        // Decided before the human's call answers: what it sees next holds.
        if let Some(id) = id {
            self.decided(&id, Input::HumanTookOver { source }).await;
        }
    }

    /// Queues `input` for task `id` and waits until it is decided: whether
    /// the task took it; `None` when its queue stopped.
    async fn decided(&self, id: &str, input: Input) -> Option<Result<(), tasks::Refused>> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(id, Job { input, done: Some(tx) }).await?;
        rx.await.ok()
    }

    /// Queues an observation for task `id` (in order with its others).
    pub(crate) async fn input(&self, id: &str, input: Input) {
        let _ = self.send(id, Job { input, done: None }).await;
    }

    /// Sends `job` to the queue of task `id`; a queue that closed between
    /// lookup and send (its task just ended) is replaced once.
    async fn send(&self, id: &str, job: Job) -> Option<()> {
        match self.queue(id).send(job).await {
            Ok(()) => Some(()),
            Err(mpsc::error::SendError(job)) => self.queue(id).send(job).await.ok(),
        }
    }

    /// The queue of task `id`, its worker started on first use.
    fn queue(&self, id: &str) -> mpsc::Sender<Job> {
        let mut queues = match self.queues.lock() {
            Ok(q) => q,
            Err(p) => p.into_inner(),
        };
        if let Some(q) = queues.get(id)
            && !q.is_closed()
        {
            return q.clone();
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        queues.insert(id.to_string(), tx.clone());
        tokio::spawn(run_queue(self.me.clone(), id.to_string(), rx));
        tx
    }

    /// Decides one input against the stored task, records its events, then
    /// carries out its effects. True once the task has ended.
    async fn step(&self, id: &str, input: Input) -> (bool, Result<(), tasks::Refused>) {
        let name = input.name();
        let (before, task, decision) = {
            let mut cat = self.catalog.lock().await;
            let Some(task) = cat.tasks.by_id.get(id) else {
                return (true, Ok(()));
            };
            let before = (task.state(), task.reason.clone(), task.takeover.is_some());
            let decision = match tasks::decide(task, input, now_ms()) {
                Ok(d) => d,
                Err(refused) => {
                    tracing::debug!(task = id, input = name, %refused, "a task input was refused");
                    return (task.is_terminal(), Err(refused));
                }
            };
            if let Err(e) = self.commit(&mut cat, events_of(id, &decision.events)).await {
                tracing::error!(task = id, input = name, error = %e, "could not record a task decision");
                return (false, Ok(()));
            }
            let Some(task) = cat.tasks.by_id.get(id).cloned() else {
                return (true, Ok(()));
            };
            (before, task, decision)
        };
        if (task.state(), task.reason.clone(), task.takeover.is_some()) != before {
            self.changed(&task, Some(before.0));
        }
        self.carry_out(&task, decision.effects).await;
        self.arm_timer(&task);
        (task.is_terminal(), Ok(()))
    }

    /// Publishes `event.task.changed` (its state, reason or takeover changed).
    fn changed(&self, task: &Task, from: Option<tasks::TaskState>) {
        tracing::info!(
            task = %task.id,
            from = from.map(|s| s.as_str()),
            to = task.state().as_str(),
            reason = task.reason.as_deref(),
            "task state"
        );
        self.publish(
            api::methods::EVENT_TASK_CHANGED,
            json!({
                "task": task.id,
                "agent": task.agent,
                "conversation": task.conversation,
                "state": task.state().as_str(),
                "reason": task.reason,
                "human_takeover": task.takeover.is_some(),
            }),
        );
    }

    /// (Re)arms the task's deadline timer at its next wake-up.
    fn arm_timer(&self, task: &Task) {
        let Ok(mut beside) = self.beside.lock() else {
            return;
        };
        let b = beside.entry(task.id.clone()).or_default();
        if let Some(old) = b.timer.take() {
            old.abort();
        }
        let Some(at) = task.next_wakeup().filter(|_| !task.is_terminal()) else {
            return;
        };
        let me = self.me.clone();
        let id = task.id.clone();
        b.timer = Some(tokio::spawn(async move {
            let wait = at.saturating_sub(now_ms());
            tokio::time::sleep(std::time::Duration::from_millis(wait)).await;
            if let Some(t) = me.upgrade() {
                t.input(&id, Input::Tick).await;
            }
        }));
    }

    /// A task ended: what ran beside its queue stops, and its reviewer's
    /// conversation is paused (the worker's was, by the decision).
    async fn forget(&self, id: &str) {
        let b = self.beside.lock().ok().and_then(|mut b| b.remove(id));
        if let Ok(mut q) = self.queues.lock() {
            q.remove(id);
        }
        let Some(b) = b else { return };
        b.verification.into_iter().for_each(|(_, h)| h.abort());
        b.timer.into_iter().chain(b.decider_timer).for_each(|h| h.abort());
        for helper in b.reviewer.into_iter().chain(b.decider) {
            if self.live(&helper).is_some()
                && let Err(e) = self.conversations.conversation_pause(&helper).await
            {
                tracing::warn!(task = id, conversation = %helper, error = %e, "a helper's conversation would not pause");
            }
        }
    }
}

/// Task `id` when `caller` (an instance token's agent) is the agent its
/// `helper` names (its reviewer, its decider), else -32003 saying who may.
fn task_of_helper<'a>(
    cat: &'a Catalog,
    id: &str,
    caller: Option<&str>,
    helper: fn(&Task) -> Option<&str>,
    may: &str,
) -> NodeResult<&'a Task> {
    let task = cat.tasks.by_id.get(id).ok_or_else(|| not_found(id))?;
    let agent = helper(task);
    if agent.is_none() || agent != caller {
        return Err(NodeError::Forbidden(format!(
            "task {}: only its {may}{}",
            task.id,
            agent.map(|a| format!(" (agent {a})")).unwrap_or_default()
        )));
    }
    Ok(task)
}

fn events_of(id: &str, events: &[tasks::TaskEvent]) -> Vec<Event> {
    events
        .iter()
        .map(|e| Event::Task {
            task: id.to_string(),
            event: e.clone(),
        })
        .collect()
}

/// One input for a task's queue; `done` hears whether it was taken.
struct Job {
    input: Input,
    done: Option<tokio::sync::oneshot::Sender<Result<(), tasks::Refused>>>,
}

/// A task's serial queue: one input at a time, until the task ends.
async fn run_queue(me: Weak<Tasks>, id: String, mut rx: mpsc::Receiver<Job>) {
    let mut closed = false;
    while let Some(job) = rx.recv().await {
        let Some(tasks) = me.upgrade() else {
            return;
        };
        let (ended, taken) = tasks.step(&id, job.input).await;
        if let Some(done) = job.done {
            let _ = done.send(taken);
        }
        // Once its task ended the queue closes: what is still in it gets its
        // answer (the ended task refuses it); later sends open a new queue.
        if ended && !closed {
            closed = true;
            tasks.forget(&id).await;
            rx.close();
        }
    }
}
