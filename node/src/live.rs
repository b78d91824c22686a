//! A live conversation: the running CLI's session plus two tasks. The watcher
//! follows the PTY output to keep the status current and tails the CLI's own
//! session file into the attributed transcript. The sender is the conversation's
//! one message queue: it delivers whole messages one at a time, each only when
//! the CLI is IDLE, as one bracketed paste plus Enter, and waits until the CLI
//! has taken it before the next one may start.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::spend::budget::Phase;
use console_api::Status;
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio::task::JoinHandle;

use crate::transcript::Transcripts;
use node_runtime::harness::Harness;
use node_runtime::runtime::Session;
use node_store::util::{new_id, now_ms};

/// Why a message was not delivered.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    #[error("the message queue of this conversation is full ({0} waiting)")]
    QueueFull(usize),
    #[error("the conversation did not become IDLE within {waited_ms} ms (status {})", status_name(*.status))]
    NotIdle { waited_ms: u64, status: Status },
    #[error("the CLI did not take the message within {0} ms")]
    NotTaken(u64),
    #[error("the conversation ended before the message was delivered")]
    Ended,
    #[error("terminal write failed: {0}")]
    Write(String),
    #[error("could not record the message: {0}")]
    Store(String),
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Busy => "BUSY",
        Status::Idle => "IDLE",
        Status::Dialog => "DIALOG",
        Status::Exited => "EXITED",
    }
}

pub struct Delivered {
    pub message_id: String,
    pub delivered_at: u64,
    pub seq: u64,
}

struct SendJob {
    text: String,
    speaker: String,
    reply: oneshot::Sender<Result<Delivered, SendError>>,
}

/// A message typed into the CLI whose echo in the session file we wait for.
struct Pending {
    text: String,
    speaker: String,
    ack: oneshot::Sender<Result<u64, SendError>>,
}

/// Who a supervision nudge is attributed to in the transcript.
pub const NUDGE_SPEAKER: &str = "system";

#[derive(Clone, Copy)]
pub struct LiveLimits {
    pub send_queue: usize,
    pub idle_timeout: Duration,
    pub ack_timeout: Duration,
}

/// What a live conversation is made of.
pub struct LiveParts {
    pub id: String,
    pub agent: String,
    pub session: Arc<dyn Session>,
    pub harness: &'static dyn Harness,
    /// The CLI's own session file, tailed for the transcript...
    pub transcript_file: Option<PathBuf>,
    /// ...from this byte offset (what earlier launches already recorded).
    pub transcript_offset: u64,
    pub transcripts: Arc<Transcripts>,
    pub limits: LiveLimits,
    /// Receives the conversation id when the CLI process ends.
    pub on_exit: mpsc::Sender<String>,
    /// The CLI was launched with its native resume.
    pub resumed: bool,
    /// Where it works: its worktree, the repository in place, or the
    /// agent's own workspace directory (supervision's repository scope).
    pub workspace: PathBuf,
}

pub struct Live {
    pub id: String,
    pub agent: String,
    pub session: Arc<dyn Session>,
    pub harness: &'static dyn Harness,
    status: watch::Receiver<Status>,
    send_tx: mpsc::Sender<SendJob>,
    limits: LiveLimits,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    tail: Arc<tokio::sync::Mutex<Tail>>,
    last_activity: Arc<Mutex<std::time::Instant>>,
    /// The newest tool request the CLI's hooks reported (claude), or its
    /// session file recorded (codex).
    pub hook: Arc<Mutex<Option<node_runtime::harness::hooks::ToolRequest>>>,
    /// How many turn ends the CLI's hooks reported (claude's `Stop`).
    turns_ended: watch::Sender<u64>,
    /// The CLI was launched with its native resume.
    pub resumed: bool,
    /// Where it works (supervision's repository scope).
    pub workspace: PathBuf,
    /// The CLI has been ready for input (IDLE or a dialog) at least once.
    ready: Arc<std::sync::atomic::AtomicBool>,
    /// Flips to true once the node has recorded how the CLI left.
    exit_recorded: watch::Sender<bool>,
    /// Files routine approvals let the agent write in this conversation
    /// (supervision's repository-code rule), at most `MAX_CHANGED`.
    changed: Mutex<Vec<PathBuf>>,
    /// The agent's budget phase as last applied here: while it is not ok
    /// the sender holds every queued message (nudges, mail, advice) and the
    /// CLI is frozen.
    budget: watch::Sender<Phase>,
}

/// At most this many changed files are remembered per conversation.
const MAX_CHANGED: usize = 4096;

/// Follows the CLI's session file from a byte offset.
struct Tail {
    /// The plan's `transcript_file`; `file` is the session file it leads
    /// to, once there is one.
    path: Option<PathBuf>,
    file: Option<PathBuf>,
    /// Where a tool call the file records goes (`Live::hook`).
    hook: Arc<Mutex<Option<node_runtime::harness::hooks::ToolRequest>>>,
    /// Counts the turn ends the file records (`Live::turns_ended`).
    turns_ended: watch::Sender<u64>,
    offset: u64,
    partial: Vec<u8>,
    pending: Arc<Mutex<VecDeque<Pending>>>,
    harness: &'static dyn Harness,
    transcripts: Arc<Transcripts>,
    conversation: String,
    /// When the CLI last showed activity of its own (not supervision's nudges).
    last_activity: Arc<Mutex<std::time::Instant>>,
}

impl Tail {
    /// Reads new complete lines and appends their entries, in file order.
    async fn poll(&mut self) {
        if self.file.is_none() {
            self.file = self.path.as_deref().and_then(|p| self.harness.session_file(p));
        }
        let Some(path) = self.file.clone() else { return };
        let offset = self.offset;
        let read = tokio::task::spawn_blocking(move || -> std::io::Result<Vec<u8>> {
            let mut f = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
                Err(e) => return Err(e),
            };
            let len = f.metadata()?.len();
            if len <= offset {
                return Ok(vec![]);
            }
            f.seek(SeekFrom::Start(offset))?;
            let mut buf = Vec::with_capacity((len - offset).min(1 << 20) as usize);
            f.take(1 << 20).read_to_end(&mut buf)?;
            Ok(buf)
        })
        .await;
        let bytes = match read {
            Ok(Ok(b)) => b,
            Ok(Err(e)) => {
                tracing::warn!(conversation = %self.conversation, error = %e, "cannot read the CLI's session file");
                return;
            }
            Err(_) => return,
        };
        if bytes.is_empty() {
            return;
        }
        // `offset` counts bytes read; `consumed` those of complete lines.
        let mut consumed = self.offset - self.partial.len() as u64;
        self.offset += bytes.len() as u64;
        self.partial.extend_from_slice(&bytes);
        // Records are lines, or what the harness groups (aider's messages).
        while let Some(len) = self
            .harness
            .session_record_len(&self.partial)
            .filter(|n| (1..=self.partial.len()).contains(n))
        {
            let line: Vec<u8> = self.partial.drain(..len).collect();
            consumed += line.len() as u64;
            let line = String::from_utf8_lossy(line.strip_suffix(b"\n").unwrap_or(&line)).to_string();
            if let Some(request) = self.harness.tool_request(&line)
                && let Ok(mut hook) = self.hook.lock()
            {
                *hook = Some(request);
            }
            if self.harness.turn_ended(&line) {
                self.turns_ended.send_modify(|n| *n += 1);
            }
            if let Some(entry) = self.harness.parse_session_line(&line) {
                self.record(entry, consumed).await;
            }
        }
    }

    async fn record(&mut self, entry: node_runtime::harness::Entry, cursor: u64) {
        // A user line is either a message we delivered (attributed to its
        // sender) or input typed on the raw terminal.
        let mut matched = None;
        if entry.kind == "terminal_input"
            && let Ok(mut q) = self.pending.lock()
            && q.front().is_some_and(|p| p.text.trim_end() == entry.text.trim_end())
        {
            matched = q.pop_front();
        }
        let (speaker, kind) = match &matched {
            Some(p) => (p.speaker.clone(), "message"),
            None => (entry.speaker.to_string(), entry.kind),
        };
        // Supervision's own nudges (delivered as `system`) are not the agent acting.
        if !(matched.is_some() && speaker == NUDGE_SPEAKER)
            && let Ok(mut at) = self.last_activity.lock()
        {
            *at = std::time::Instant::now();
        }
        let result = self
            .transcripts
            .append_at(&self.conversation, &speaker, kind, entry.text, Some(cursor))
            .await
            .map_err(|e| SendError::Store(e.to_string()));
        if let Err(e) = &result {
            tracing::error!(conversation = %self.conversation, error = %e, "transcript append failed");
        }
        if let Some(p) = matched {
            let _ = p.ack.send(result);
        }
    }
}

impl Live {
    /// Starts the watcher and sender tasks for a freshly launched session.
    pub fn start(parts: LiveParts) -> Arc<Live> {
        let LiveParts {
            id,
            agent,
            session,
            harness,
            transcript_file,
            transcript_offset,
            transcripts,
            limits,
            on_exit,
            resumed,
            workspace,
        } = parts;
        let ready = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pending = Arc::new(Mutex::new(VecDeque::new()));
        let last_activity = Arc::new(Mutex::new(std::time::Instant::now()));
        let hook = Arc::new(Mutex::new(None));
        let turns_ended = watch::channel(0).0;
        let tail = Arc::new(tokio::sync::Mutex::new(Tail {
            turns_ended: turns_ended.clone(),
            last_activity: last_activity.clone(),
            path: transcript_file,
            file: None,
            hook: hook.clone(),
            offset: transcript_offset,
            partial: vec![],
            pending: pending.clone(),
            harness,
            transcripts,
            conversation: id.clone(),
        }));
        let (status_tx, status_rx) = watch::channel(session.status());
        let (send_tx, send_rx) = mpsc::channel(limits.send_queue);

        let watcher = tokio::spawn(watch_loop(
            id.clone(),
            session.clone(),
            tail.clone(),
            status_tx,
            on_exit,
            ready.clone(),
        ));
        let budget = watch::channel(Phase::Ok).0;
        let sender = tokio::spawn(send_loop(
            session.clone(),
            status_rx.clone(),
            budget.subscribe(),
            send_rx,
            pending,
            limits,
        ));
        Arc::new(Live {
            id,
            agent,
            session,
            harness,
            status: status_rx,
            send_tx,
            limits,
            tasks: Mutex::new(vec![watcher, sender]),
            tail,
            last_activity,
            hook,
            turns_ended,
            resumed,
            workspace,
            ready,
            exit_recorded: watch::channel(false).0,
            changed: Mutex::new(Vec::new()),
            budget,
        })
    }

    /// Reads what the CLI wrote to its session file since the last read.
    pub async fn read_session_file(&self) {
        self.tail.lock().await.poll().await;
    }

    /// Applies the agent's budget phase: the gate open and the CLI running
    /// when ok, else frozen with its queue held.
    /// Freezes or thaws the CLI when the gate changes (nothing when it already
    /// stands so; a CLI that would not is logged).
    pub async fn set_budget_phase(&self, phase: Phase) {
        let open = phase == Phase::Ok;
        if (*self.budget.borrow() == Phase::Ok) != open {
            // Frozen before the gate closes, thawed before it opens: a
            // message is never typed into a stopped CLI.
            if let Err(e) = self.session.freeze(!open).await {
                tracing::warn!(conversation = %self.id, error = %e, open, "could not freeze or thaw the CLI for its budget");
            }
        }
        self.budget.send_replace(phase);
    }

    /// The agent's budget phase as last applied to this conversation.
    pub fn budget_phase(&self) -> Phase {
        *self.budget.borrow()
    }

    /// The files routine approvals let the agent write so far.
    pub fn changed_files(&self) -> Vec<PathBuf> {
        self.changed.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// The changed-file record cannot take more (supervision then holds).
    pub fn changed_is_full(&self) -> bool {
        self.changed.lock().map(|c| c.len() >= MAX_CHANGED).unwrap_or(true)
    }

    /// Remembers files a routine approval let the agent write.
    pub fn add_changed(&self, files: &[PathBuf]) {
        if let Ok(mut c) = self.changed.lock() {
            for f in files {
                if !c.contains(f) && c.len() < MAX_CHANGED {
                    c.push(f.clone());
                }
            }
        }
    }

    /// A human approved running code despite these changes: they no longer count.
    pub fn accept_changed(&self, files: &[PathBuf]) {
        if let Ok(mut c) = self.changed.lock() {
            c.retain(|p| !files.contains(p));
        }
    }

    /// The node has recorded this CLI's exit (the pause and its system line).
    pub fn mark_exit_recorded(&self) {
        self.exit_recorded.send_replace(true);
    }

    /// Waits (up to `bound`) until the node has recorded this CLI's exit.
    pub async fn exit_recorded(&self, bound: Duration) {
        let mut rx = self.exit_recorded.subscribe();
        let _ = tokio::time::timeout(bound, rx.wait_for(|r| *r)).await;
    }

    /// Whether the CLI has been ready for input (IDLE or a dialog) yet.
    pub fn was_ready(&self) -> bool {
        self.ready.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits up to `bound` for the CLI to be ready for input or to exit;
    /// returns the status then (BUSY if it is still starting).
    pub async fn ready_or_exited(&self, bound: Duration) -> Status {
        let mut status = self.status.clone();
        let settled = |s: &Status| matches!(s, Status::Idle | Status::Dialog | Status::Exited);
        let _ = tokio::time::timeout(bound, status.wait_for(settled)).await;
        self.status()
    }

    /// How the CLI left, for the pause reason: its exit code and the last
    /// lines of its screen. Call once it has exited.
    pub fn exit_facts(&self) -> (node_store::events::CliExit, String) {
        let lines = node_runtime::exits::last_lines(&self.session.screen().lines);
        let code = self.session.exit_code();
        let reason = node_runtime::exits::exit_reason(&node_runtime::exits::ExitFacts {
            resumed: self.resumed,
            ready: self.was_ready(),
            code,
            lines: &lines,
            missing_session: self.harness.missing_session_words(&lines),
        });
        let exit = node_store::events::CliExit {
            code,
            last_lines: lines,
        };
        (exit, reason)
    }

    pub fn status(&self) -> Status {
        *self.status.borrow()
    }

    /// The CLI did something of its own (e.g. a hook fired).
    pub fn touch(&self) {
        if let Ok(mut at) = self.last_activity.lock() {
            *at = std::time::Instant::now();
        }
    }

    /// When the CLI last did something of its own.
    pub fn last_activity(&self) -> std::time::Instant {
        self.last_activity
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|_| std::time::Instant::now())
    }

    /// Follows the status as it changes.
    pub fn status_watch(&self) -> watch::Receiver<Status> {
        self.status.clone()
    }

    /// The CLI's hook said its turn ended.
    pub fn hook_turn_ended(&self) {
        self.turns_ended.send_modify(|n| *n += 1);
    }

    /// Sends a message that starts a turn; what [`turn_end`] watches for
    /// that turn's end (taken before the message, so its start is not missed).
    pub async fn send_turn(&self, text: String, speaker: String) -> Result<TurnWatch, SendError> {
        let watch = self.turn_watch();
        self.send_message(text, speaker).await?;
        Ok(watch)
    }

    fn turn_watch(&self) -> TurnWatch {
        TurnWatch {
            status: self.status.clone(),
            hooks: self.harness.reports_turn_end().then(|| self.turns_ended.subscribe()),
            busy_before: self.status() != Status::Idle,
        }
    }

    /// Queues a whole message; resolves when the CLI has taken it.
    pub async fn send_message(&self, text: String, speaker: String) -> Result<Delivered, SendError> {
        let (reply, rx) = oneshot::channel();
        self.send_tx
            .try_send(SendJob { text, speaker, reply })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => SendError::QueueFull(self.limits.send_queue),
                mpsc::error::TrySendError::Closed(_) => SendError::Ended,
            })?;
        rx.await.map_err(|_| SendError::Ended)?
    }

    /// Ends the CLI, records what it wrote last, and stops the tasks.
    pub async fn shutdown(&self) {
        let tasks: Vec<JoinHandle<()>> = self.tasks.lock().map(|mut t| t.drain(..).collect()).unwrap_or_default();
        // Stop the sender first: queued messages fail with `Ended`.
        if let Some(sender) = tasks.get(1) {
            sender.abort();
        }
        self.session.close().await;
        // Take the tail first so the watcher is never stopped halfway through
        // recording what it read; then read what the CLI wrote last.
        let mut tail = self.tail.lock().await;
        if let Some(watcher) = tasks.first() {
            watcher.abort();
        }
        tail.poll().await;
    }
}

/// How a turn that a message started came to an end (see [`turn_end`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnEnd {
    /// Busy after the message, then idle again (or idle for the settle time).
    Ended,
    /// Still busy when the bound ran out.
    Bound,
    /// The CLI went away.
    Gone,
}

/// A turn's signals, taken before the message that starts it.
pub struct TurnWatch {
    status: watch::Receiver<Status>,
    /// The hook's count of turn ends, for a CLI that reports them.
    hooks: Option<watch::Receiver<u64>>,
    /// A turn was in flight when it was taken (the message waits for it).
    busy_before: bool,
}

/// A CLI that reports turn ends still counts as done once idle this long
/// (its hook may have failed, or reported before the watch began).
const HOOK_FALLBACK: Duration = Duration::from_secs(15);

/// Waits for the turn a message just started to end: the CLI's own report
/// where it makes one, else the screen: busy after the message, then idle
/// again (a turn so quick that its busy spell was never seen ends once idle
/// for `settle`).
pub async fn turn_end(watch: TurnWatch, bound: Duration, settle: Duration) -> TurnEnd {
    let TurnWatch {
        mut status,
        mut hooks,
        busy_before,
    } = watch;
    // The message waited for the turn in flight: that turn's report is not this one's.
    if busy_before && let Some(h) = &mut hooks {
        h.borrow_and_update();
    }
    let started = std::time::Instant::now();
    let mut seen_busy = false;
    let mut idle_since: Option<std::time::Instant> = None;
    loop {
        let now = *status.borrow_and_update();
        seen_busy |= now != Status::Idle;
        idle_since = match (now, idle_since) {
            (Status::Idle, Some(t)) => Some(t),
            (Status::Idle, None) => Some(std::time::Instant::now()),
            _ => None,
        };
        let ended = match &mut hooks {
            Some(h) => h.has_changed().unwrap_or(false) || idle_since.is_some_and(|t| t.elapsed() > HOOK_FALLBACK),
            None => now == Status::Idle && (seen_busy || started.elapsed() > settle),
        };
        if ended {
            return TurnEnd::Ended;
        }
        if started.elapsed() > bound {
            return TurnEnd::Bound;
        }
        // Waiting on the hook's count marks it seen: its change is the end.
        let hook_changed = async {
            match &mut hooks {
                Some(h) => h.changed().await.is_ok(),
                None => std::future::pending::<bool>().await,
            }
        };
        tokio::select! {
            r = status.changed() => if r.is_err() { return TurnEnd::Gone },
            true = hook_changed => return TurnEnd::Ended,
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
    }
}

async fn watch_loop(
    id: String,
    session: Arc<dyn Session>,
    tail: Arc<tokio::sync::Mutex<Tail>>,
    status_tx: watch::Sender<Status>,
    on_exit: mpsc::Sender<String>,
    ready: Arc<std::sync::atomic::AtomicBool>,
) {
    let mut raw = session.subscribe();
    let mut exited = session.exited();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        let mut done = false;
        tokio::select! {
            r = raw.recv() => {
                if let Err(broadcast::error::RecvError::Closed) = r {
                    done = true;
                }
            }
            _ = tick.tick() => {}
            r = exited.wait_for(|e| *e) => { let _ = r; done = true; }
        }
        tail.lock().await.poll().await;
        let status = session.status();
        if matches!(status, Status::Idle | Status::Dialog) {
            ready.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        status_tx.send_if_modified(|s| {
            let changed = *s != status;
            *s = status;
            changed
        });
        if done || !session.alive() {
            status_tx.send_replace(Status::Exited);
            let _ = on_exit.send(id).await;
            return;
        }
    }
}

async fn send_loop(
    session: Arc<dyn Session>,
    mut status: watch::Receiver<Status>,
    mut budget: watch::Receiver<Phase>,
    mut jobs: mpsc::Receiver<SendJob>,
    pending: Arc<Mutex<VecDeque<Pending>>>,
    limits: LiveLimits,
) {
    while let Some(job) = jobs.recv().await {
        // A message waits for the budget as it waits for IDLE (without a
        // bound: the budget's own timer or a human opens it).
        if budget.wait_for(|p| *p == Phase::Ok).await.is_err() {
            let _ = job.reply.send(Err(SendError::Ended));
            continue;
        }
        let result = deliver(&session, &mut status, &pending, &limits, job.text, job.speaker).await;
        let _ = job.reply.send(result);
    }
}

async fn deliver(
    session: &Arc<dyn Session>,
    status: &mut watch::Receiver<Status>,
    pending: &Arc<Mutex<VecDeque<Pending>>>,
    limits: &LiveLimits,
    text: String,
    speaker: String,
) -> Result<Delivered, SendError> {
    let idle = tokio::time::timeout(limits.idle_timeout, status.wait_for(|s| *s == Status::Idle))
        .await
        .map(|r| r.map(|_| ()));
    match idle {
        Ok(Ok(_)) => {}
        Ok(Err(_)) => return Err(SendError::Ended),
        Err(_) => {
            return Err(SendError::NotIdle {
                waited_ms: limits.idle_timeout.as_millis() as u64,
                status: *status.borrow(),
            });
        }
    }
    let (ack, ack_rx) = oneshot::channel();
    if let Ok(mut q) = pending.lock() {
        q.push_back(Pending {
            text: text.clone(),
            speaker,
            ack,
        });
    }
    let mut bytes = Vec::with_capacity(text.len() + 16);
    bytes.extend_from_slice(b"\x1b[200~");
    bytes.extend_from_slice(text.as_bytes());
    bytes.extend_from_slice(b"\x1b[201~\r");
    if let Err(e) = session.write(bytes).await {
        drop_pending(pending, &text);
        return Err(SendError::Write(e.to_string()));
    }
    match tokio::time::timeout(limits.ack_timeout, ack_rx).await {
        Ok(Ok(Ok(seq))) => Ok(Delivered {
            message_id: new_id("m-"),
            delivered_at: now_ms(),
            seq,
        }),
        Ok(Ok(Err(e))) => Err(e),
        Ok(Err(_)) => Err(SendError::Ended),
        Err(_) => {
            drop_pending(pending, &text);
            Err(SendError::NotTaken(limits.ack_timeout.as_millis() as u64))
        }
    }
}

fn drop_pending(pending: &Arc<Mutex<VecDeque<Pending>>>, text: &str) {
    if let Ok(mut q) = pending.lock() {
        q.retain(|p| p.text != text);
    }
}
