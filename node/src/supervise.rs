//! The supervision watch loop for live conversations, verified send, holds and
//! the audit log. Decisions come from the pure `supervision` crate; this module
//! is the IO around them. Dialogs are read by the harness adapter from their
//! fixed frame (`Harness::supervision_dialog`), and answered by meaning
//! (approve once, deny), never by an option's words on screen. Every keystroke
//! supervision types goes through `verified_send`, which re-reads the screen
//! right before typing and skips unless the dialog is exactly the one decided
//! on and the template still says those keys mean that answer; messages supervision
//! sends (nudges, mail) go through the message queue with the same audit
//! discipline. Every attempted or declined action is exactly one audit row: a
//! send is an `attempted` event committed before typing plus its outcome,
//! folded into one row when read.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use console_api::Status;
use serde_json::{Value, json};
use supervision::{Answer, AuditFields, Decision, DecisionContext, Meaning, Outcome, Trigger, Verdict};

use crate::events::Event;
use crate::harness::Dialog as ScreenDialog;
use crate::live::Live;
use crate::service::{Node, NodeError, NodeResult};
use crate::util::{new_id, now_ms};

/// How long a dialog must stay unchanged before supervision reads it (Claude
/// Code drops keys sent in the first ~200 ms after a dialog appears).
const STABLE_FOR: Duration = Duration::from_millis(250);
/// Most audit rows one read returns.
const MAX_AUDIT: u32 = 200;
/// Most holds kept (oldest dropped first).
const MAX_HOLDS: usize = 1024;
/// A hold's command, content and detail are each cut to this many characters.
const MAX_HOLD_TEXT: usize = 4000;

/// The file system answering the scope rules' one question (symlinks).
pub struct FsResolver;

impl supervision::PathResolver for FsResolver {
    fn link(&self, path: &Path) -> supervision::Link {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => supervision::Link::Link(target),
                Err(_) => supervision::Link::Unknown,
            },
            Ok(_) => supervision::Link::NotLink,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => supervision::Link::NotLink,
            Err(_) => supervision::Link::Unknown,
        }
    }

    /// A `.git` entry, or the shape git itself recognises a git directory by
    /// (`HEAD` with `objects`, `refs` or `commondir` beside it), counted
    /// generously: any of them with a `HEAD` is enough to hold.
    fn git_at(&self, dir: &Path) -> supervision::GitAt {
        let exists = |name: &str| match std::fs::symlink_metadata(dir.join(name)) {
            Ok(_) => Some(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
            Err(_) => None,
        };
        match (exists(".git"), exists("HEAD")) {
            (Some(true), _) => supervision::GitAt::DotGit,
            (Some(false), Some(false)) => supervision::GitAt::Nothing,
            (Some(false), Some(true)) => {
                let parts = [exists("objects"), exists("refs"), exists("commondir")];
                if parts.contains(&None) {
                    supervision::GitAt::Unknown
                } else if parts.contains(&Some(true)) {
                    supervision::GitAt::Bare
                } else {
                    supervision::GitAt::Nothing
                }
            }
            _ => supervision::GitAt::Unknown,
        }
    }

    fn read_small(&self, path: &Path) -> Option<String> {
        const MAX: u64 = 256 * 1024;
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX {
            return None;
        }
        std::fs::read_to_string(path).ok()
    }
}

/// A dialog supervision held for a human.
#[derive(Debug, Clone)]
pub struct Held {
    pub id: String,
    pub agent: String,
    pub conversation: String,
    pub screen: ScreenDialog,
    pub dialog: supervision::Dialog,
    pub class: supervision::DialogClass,
    pub summary: String,
    pub since: u64,
    /// The definitions the agent changed that made the repository-code rule
    /// hold it: a human's approve accepts them as they are.
    pub redefined: Vec<std::path::PathBuf>,
}

impl Held {
    pub fn to_wire(&self) -> Value {
        // What the dialog asks, so a human reads it before answering: the
        // command of a Bash dialog, the diff or text of an edit, the paths it
        // writes, and the dialog as the screen shows it (`detail`).
        let command = self.dialog.command.as_deref().map(bounded);
        let content = (!self.dialog.content.is_empty()).then(|| bounded(&self.dialog.content));
        let detail = bounded(&self.screen.lines.join("\n"));
        let cut = [&command, &content, &Some(detail.clone())]
            .iter()
            .any(|t| t.as_ref().is_some_and(|(_, cut)| *cut));
        json!({
            "id": self.id,
            "agent": self.agent,
            "conversation": self.conversation,
            "dialog_class": self.class,
            "summary": self.summary,
            "since": self.since,
            "options": self.dialog.options,
            "title": self.dialog.title,
            "command": command.map(|c| c.0),
            "content": content.map(|c| c.0),
            "paths": self.dialog.paths,
            "detail": detail.0,
            "detail_truncated": cut,
            "doubt": self.dialog.doubt,
        })
    }
}

/// At most `MAX_HOLD_TEXT` characters of a hold's text, and whether any
/// was cut.
fn bounded(text: &str) -> (String, bool) {
    let mut chars = text.char_indices();
    match chars.nth(MAX_HOLD_TEXT) {
        Some((i, _)) => (text[..i].to_string(), true),
        None => (text.to_string(), false),
    }
}

fn excerpt(d: &ScreenDialog) -> String {
    d.lines.join("\n").chars().take(2000).collect()
}

/// Reads the dialog on screen, if one is showing.
fn capture(live: &Live) -> Option<ScreenDialog> {
    live.harness.dialog(&live.session.screen())
}

impl Node {
    /// Types `answer`'s keys only if the dialog on screen is still exactly
    /// `expected` and its template, read again from the screen, still says
    /// those keys choose `meaning` (for a digit, the option of that number is
    /// the template's approve-once or deny option; Escape only ever denies),
    /// and writes the action's one audit row. A send is recorded durably as
    /// `attempted` before the first key is typed and completed with its outcome
    /// after, so a crash at any point leaves exactly one row for it.
    pub(crate) async fn verified_send(
        &self,
        live: &Live,
        expected: &ScreenDialog,
        meaning: Meaning,
        answer: &Answer,
        fields: impl Fn(Outcome, Option<&str>) -> AuditFields,
    ) -> (Outcome, Option<String>) {
        let pane = excerpt(expected);
        let workspace = self.agent_home_dirs(&live.agent).1;
        let skip = match capture(live) {
            None => Some("the dialog is no longer on screen".to_string()),
            Some(now) if &now != expected => Some("the dialog changed before sending".to_string()),
            Some(now) => {
                let fresh = live.harness.supervision_dialog(&now, &workspace, None);
                match fresh.answer(meaning) {
                    Ok(a) if a == answer => None,
                    Ok(_) => Some(format!("the keys no longer {} on this dialog", meaning.as_str())),
                    Err(e) => Some(format!("the keys were not verified to {}: {e}", meaning.as_str())),
                }
            }
        };
        if let Some(why) = skip {
            let why = why.as_str();
            self.audit(
                &live.agent,
                Some(&live.id),
                fields(Outcome::Skipped, Some(why)),
                pane,
                None,
            )
            .await;
            return (Outcome::Skipped, Some(why.to_string()));
        }
        let write = async {
            match live.session.write(answer.keys.as_bytes().to_vec()).await {
                Ok(()) => (Outcome::Sent, None),
                Err(e) => (Outcome::Failed, Some(format!("terminal write failed: {e}"))),
            }
        };
        let (outcome, why, _) = self.audited(live, pane, &fields, write).await;
        (outcome, why)
    }

    /// Delivers `text` through the conversation's message queue with the
    /// same audit discipline as verified send. Returns the outcome, the reason
    /// it was not sent, and the row's id.
    async fn audited_message(
        &self,
        live: &Live,
        text: String,
        fields: impl Fn(Outcome, Option<&str>) -> AuditFields,
    ) -> (Outcome, Option<String>, Option<u64>) {
        let send = async {
            match live.send_message(text, crate::live::NUDGE_SPEAKER.to_string()).await {
                Ok(_) => (Outcome::Sent, None),
                Err(e) => (Outcome::Skipped, Some(e.to_string())),
            }
        };
        self.audited(live, String::new(), &fields, send).await
    }

    /// The audit discipline of every send: an `attempted` row committed
    /// (FULL) before `send` runs, its outcome after, one row in all; nothing
    /// is sent that could not be recorded. Returns the outcome, why it was
    /// not sent, and the row's id.
    async fn audited(
        &self,
        live: &Live,
        pane: String,
        fields: &impl Fn(Outcome, Option<&str>) -> AuditFields,
        send: impl std::future::Future<Output = (Outcome, Option<String>)>,
    ) -> (Outcome, Option<String>, Option<u64>) {
        let mut attempted = fields(Outcome::Sent, None);
        attempted.outcome = Outcome::Attempted;
        let Some(attempt) = self
            .audit(&live.agent, Some(&live.id), attempted, pane.clone(), None)
            .await
        else {
            return (Outcome::Failed, Some("the audit log could not be written".into()), None);
        };
        let (outcome, why) = send.await;
        self.audit(
            &live.agent,
            Some(&live.id),
            fields(outcome, why.as_deref()),
            pane,
            Some(attempt),
        )
        .await;
        (outcome, why, Some(attempt))
    }

    /// A fold of the audit log that leaves out this run's attempts whose
    /// outcome is not written yet.
    fn audit_fold(&self) -> AuditFold {
        AuditFold {
            run_from_seq: self.run_from_seq,
            ..AuditFold::default()
        }
    }

    /// Writes one audit event and announces the row it completes
    /// (`event.supervision.acted`; an attempt is announced with its outcome).
    /// Returns the event's seq.
    pub(crate) async fn audit(
        &self,
        agent: &str,
        conversation: Option<&str>,
        fields: AuditFields,
        pane: String,
        attempt: Option<u64>,
    ) -> Option<u64> {
        let e = Event::SupervisionActed {
            agent: agent.to_string(),
            conversation: conversation.map(str::to_string),
            fields,
            pane_excerpt: pane,
            attempt,
        };
        match self.store().append(vec![e]).await {
            Ok(stored) => {
                let first = stored.first()?;
                if let Some((_, mut row, link)) = audit_row(first) {
                    match link {
                        Link::Attempt => {}
                        Link::Single => self.publish(console_api::methods::EVENT_SUPERVISION_ACTED, row),
                        Link::Outcome(of) => {
                            row["id"] = json!(of);
                            self.publish(console_api::methods::EVENT_SUPERVISION_ACTED, row);
                        }
                    }
                }
                Some(first.seq)
            }
            Err(e) => {
                tracing::error!(error = %e, "could not write the supervision audit row");
                None
            }
        }
    }

    /// `supervision.nudge`: a human's one-off nudge, typed as one message when
    /// the CLI is idle (the message queue's wait), audited as `manual_nudge`.
    pub async fn supervision_nudge(
        &self,
        agent: &str,
        conversation: Option<&str>,
        text: Option<String>,
    ) -> NodeResult<Value> {
        let policy = self.supervision_policy(agent).await;
        let id = match conversation {
            Some(c) => {
                if self.conversation_agent(c).await.as_deref() != Some(agent) {
                    return Err(NodeError::NotFound(format!(
                        "conversation {c:?} of agent {agent:?} not found"
                    )));
                }
                c.to_string()
            }
            None => self
                .live_conversation_of_agent(agent)
                .await?
                .ok_or_else(|| NodeError::Conflict(format!("agent {agent:?} has no live conversation to nudge")))?,
        };
        let text = text.unwrap_or(policy.nudge_text);
        crate::validate::message_text(&text).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let live = self
            .live(&id)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {id} has no running CLI")))?;
        let reason_of = |why: Option<&str>| match why {
            None => "a human asked for a nudge".to_string(),
            Some(e) => format!("nudge not sent: {e}"),
        };
        let (outcome, why, entry) = self
            .audited_message(&live, text.clone(), |outcome, why| {
                let mut fields = AuditFields::for_action(
                    Trigger::ManualNudge,
                    supervision::AuditDecision::Nudge,
                    outcome,
                    reason_of(why),
                );
                fields.subject = Some(text.chars().take(120).collect());
                if outcome == Outcome::Sent {
                    fields.keys = vec![text.clone()];
                }
                fields
            })
            .await;
        let reason = reason_of(why.as_deref());
        Ok(json!({ "outcome": outcome.as_str(), "entry_id": entry, "reason": reason }))
    }

    /// Starts the watch loop of a live conversation.
    pub(crate) fn start_supervision(self: &Arc<Self>, id: &str) {
        let weak = Arc::downgrade(self);
        let id = id.to_string();
        tokio::spawn(async move {
            loop {
                let Some(node) = weak.upgrade() else { return };
                let Some(live) = node.live(&id) else {
                    return;
                };
                drop(node);
                let mut status = live.status_watch();
                if status
                    .wait_for(|s| matches!(s, Status::Dialog | Status::Exited))
                    .await
                    .is_err()
                {
                    return;
                }
                if *status.borrow() == Status::Exited {
                    return;
                }
                // Stable: unchanged across two captures.
                let first = capture(&live);
                tokio::time::sleep(STABLE_FOR).await;
                let second = capture(&live);
                let Some(shown) = second.filter(|s| Some(s) == first.as_ref()) else {
                    continue;
                };
                let Some(node) = weak.upgrade() else { return };
                node.handle_dialog(&live, &shown).await;
                drop(node);
                // Wait until this dialog is gone (answered, changed, or the CLI moved on).
                loop {
                    if let Ok(Err(_)) = tokio::time::timeout(Duration::from_millis(200), status.changed()).await {
                        // The conversation's watcher is gone: so is this loop.
                        return;
                    }
                    if *status.borrow() == Status::Exited {
                        return;
                    }
                    if capture(&live).as_ref() != Some(&shown) {
                        break;
                    }
                }
                // A hold whose dialog went away (answered on the terminal, say) is over.
                if let Some(node) = weak.upgrade() {
                    node.drop_hold_of(&id, &shown);
                }
            }
        });
    }

    /// Starts the stall watch of a live conversation: a one-second tick that
    /// feeds `decide_stall` and sends its nudges (as one message each, through
    /// the conversation's message queue, which waits for IDLE) or escalates.
    pub(crate) fn start_stall_watch(self: &Arc<Self>, id: &str) {
        let weak = Arc::downgrade(self);
        let id = id.to_string();
        tokio::spawn(async move {
            let origin = std::time::Instant::now();
            let mut episode = supervision::StallEpisode::default();
            // The mail group being delivered: (newest seq covered, state).
            let mut mail: Option<(u64, supervision::MailState)> = None;
            let mut last_screen = String::new();
            let mut unchanged_since = None;
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tick.tick().await;
                let Some(node) = weak.upgrade() else { return };
                let Some(live) = node.live(&id) else {
                    return;
                };
                let now = origin.elapsed();
                let policy = node.supervision_policy(&live.agent).await;
                if !policy.enabled {
                    // Unsupervised: no screen reads or stall nudges (start
                    // fresh if enabled later). Mail is the mailbox's, not
                    // supervision's: the backlog is surfaced either way.
                    episode = supervision::StallEpisode::default();
                    unchanged_since = None;
                    let unread_top = node.newest_unread_mail(&live.agent).await;
                    node.wake_on_mail(&live, &policy, now, unread_top, &mut mail).await;
                    continue;
                }
                let screen = live.session.screen().text();
                if screen != last_screen || unchanged_since.is_none() {
                    last_screen = screen;
                    unchanged_since = Some(now);
                }
                let unread_top = node.newest_unread_mail(&live.agent).await;
                let unread = unread_top.is_some();
                node.wake_on_mail(&live, &policy, now, unread_top, &mut mail).await;
                let seen = supervision::StallObservation {
                    now,
                    outstanding_work: policy.expect_work || unread,
                    eligible: live.status() == Status::Idle,
                    last_activity: live.last_activity().saturating_duration_since(origin),
                    pane_unchanged_since: unchanged_since,
                };
                let (next, action) = supervision::decide_stall(episode, &seen, &policy.stall_params());
                episode = next;
                node.act_on_stall(&live, action, &policy).await;
            }
        });
    }

    /// Wake-on-mail (seed 000): a new group of unread mail is delivered once
    /// when the CLI is idle, as the nudge text or the messages themselves,
    /// retried once after the backoff, then needs-you (`decide_mail`).
    async fn wake_on_mail(
        &self,
        live: &Live,
        policy: &supervision::Policy,
        now: Duration,
        unread_top: Option<u64>,
        group: &mut Option<(u64, supervision::MailState)>,
    ) {
        use supervision::{MailEffect, MailEvent, MailState, SendOutcome};
        let Some(top) = unread_top else { return };
        match group {
            Some((covered, MailState::Delivered | MailState::DeliveryFailed)) if top > *covered => {
                *group = Some((top, MailState::Queued));
            }
            None => *group = Some((top, MailState::Queued)),
            _ => {}
        }
        let Some((covered, state)) = group.as_mut() else { return };
        let eligible = live.status() == Status::Idle;
        let (next, effect) = supervision::decide_mail(
            *state,
            MailEvent::Tick { now, eligible },
            policy.mail_mode,
            policy.mail_retry_backoff,
        );
        *state = next;
        let MailEffect::Send { mode, retry } = effect else {
            return;
        };
        let (text, decision) = match mode {
            supervision::MailMode::Nudge => (policy.nudge_text.clone(), supervision::AuditDecision::Nudge),
            supervision::MailMode::FullBody => (
                self.mail_lines(&live.agent, *covered).await,
                supervision::AuditDecision::FullBody,
            ),
        };
        let covered_now = *covered;
        let (sent, _, _) = self
            .audited_message(live, text, |outcome, why| {
                let reason = match why {
                    None => format!("mail for the agent{}", if retry { " (retry)" } else { "" }),
                    Some(e) => format!("mail delivery not sent: {e}"),
                };
                let mut fields = AuditFields::for_action(Trigger::Mail, decision, outcome, reason);
                fields.subject = Some(format!("mail up to {covered_now}"));
                fields
            })
            .await;
        let outcome = if sent == Outcome::Sent {
            SendOutcome::Sent
        } else {
            SendOutcome::Skipped
        };
        let (next, effect) = supervision::decide_mail(
            *state,
            MailEvent::Attempted { now, outcome },
            mode,
            policy.mail_retry_backoff,
        );
        *state = next;
        if effect == MailEffect::NeedsYou {
            self.publish(
                console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                json!({ "reason": "mail could not be delivered", "agent": live.agent, "conversation": live.id }),
            );
        }
    }

    async fn act_on_stall(&self, live: &Live, action: supervision::StallAction, policy: &supervision::Policy) {
        use supervision::{AuditDecision, StallAction};
        match action {
            StallAction::Nothing => {}
            StallAction::Nudge { number } => {
                self.audited_message(live, policy.nudge_text.clone(), |outcome, why| {
                    let reason = match why {
                        None => format!("stalled with work outstanding: nudge {number}"),
                        Some(e) => format!("nudge {number} not sent: {e}"),
                    };
                    let mut fields = AuditFields::for_action(Trigger::Stall, AuditDecision::Nudge, outcome, reason);
                    fields.subject = Some(format!("nudge {number}"));
                    fields
                })
                .await;
            }
            StallAction::Escalate { nudges } => {
                let reason = format!("still stalled after {nudges} nudges");
                let mut fields =
                    AuditFields::for_action(Trigger::Stall, AuditDecision::Escalate, Outcome::Held, reason.clone());
                fields.subject = Some("stall".into());
                self.audit(&live.agent, Some(&live.id), fields, String::new(), None)
                    .await;
                self.publish(
                    console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                    json!({ "reason": reason, "agent": live.agent, "conversation": live.id }),
                );
            }
        }
    }

    async fn handle_dialog(&self, live: &Live, shown: &ScreenDialog) {
        self.observe_limit_screen(live, shown).await;
        let dir = self.agent_home_dirs(&live.agent);
        // The CLI's own report of the tool call, when fresh, is the source of
        // the command or path; the adapter checks the screen agrees.
        let now = std::time::Instant::now();
        let hook = live
            .hook
            .lock()
            .ok()
            .and_then(|h| h.as_ref().filter(|r| r.fresh(now)).cloned());
        let dialog = live.harness.supervision_dialog(shown, &dir.1, hook.as_ref());
        let policy = self.supervision_policy(&live.agent).await;
        let learned = self.learned_rules(&dir.1.to_string_lossy()).await;
        // What defines repository code, as changed since a human accepted it
        // (durable, per workspace, by any route), and git's hook directories.
        let facts = self.workspace_facts(&dir.1).await;
        let scope = supervision::Scope::new(dir.1.clone())
            .with_agent_home(dir.0.clone())
            .with_changed(live.changed_files().into_iter().chain(facts.changed))
            .with_hook_dirs(facts.hook_dirs)
            .with_escaping_links(facts.escaping_links)
            .with_definitions_unknown(facts.unknown);
        let mut decision = supervision::decide_dialog(
            &dialog,
            &DecisionContext {
                policy: &policy,
                scope: &scope,
                resolver: &FsResolver,
                learned_rules: &learned,
            },
        );
        // Fail safe: once the record of what the agent wrote is full, the
        // repository-code rule could miss a change, so nothing more is routine.
        if decision.verdict == Verdict::Approve && live.changed_is_full() {
            decision.verdict = Verdict::Hold;
            decision.reason = "this conversation's record of changed files is full: held for a human".into();
        }
        match decision.verdict {
            Verdict::Hold => self.hold(live, shown, dialog, &decision).await,
            Verdict::Approve | Verdict::Deny => {
                let meaning = match decision.verdict {
                    Verdict::Approve => Meaning::ApproveOnce,
                    _ => Meaning::Deny,
                };
                let answer = Answer {
                    option: decision.option,
                    keys: decision.keys.concat(),
                };
                let (outcome, _) = self
                    .verified_send(live, shown, meaning, &answer, |outcome, why| {
                        AuditFields::for_dialog(&decision, outcome, why)
                    })
                    .await;
                // What a routine approval let the agent write counts against
                // running repository code later in this conversation.
                if outcome == Outcome::Sent && decision.verdict == Verdict::Approve {
                    live.add_changed(&decision.writes);
                }
            }
        }
    }

    async fn hold(&self, live: &Live, shown: &ScreenDialog, dialog: supervision::Dialog, decision: &Decision) {
        let held = Held {
            id: new_id("h-"),
            agent: live.agent.clone(),
            conversation: live.id.clone(),
            screen: shown.clone(),
            class: decision.class,
            summary: if decision.subject.is_empty() {
                shown.title.clone()
            } else {
                decision.subject.clone()
            },
            dialog,
            since: now_ms(),
            redefined: decision.redefined.clone(),
        };
        if let Ok(mut h) = self.holds.lock() {
            if h.len() >= MAX_HOLDS
                && let Some(oldest) = h.values().min_by_key(|x| x.since).map(|x| x.id.clone())
            {
                h.remove(&oldest);
            }
            h.insert(held.id.clone(), held);
        }
        let fields = AuditFields::for_dialog(decision, Outcome::Held, None);
        self.audit(&live.agent, Some(&live.id), fields, excerpt(shown), None)
            .await;
        // One needs-you per held dialog (the episode lasts while it is on screen).
        let wire = self.holds.lock().ok().and_then(|h| {
            h.values()
                .find(|x| x.conversation == live.id && &x.screen == shown)
                .map(Held::to_wire)
        });
        if let Some(hold) = wire {
            self.publish(
                console_api::methods::EVENT_SUPERVISION_NEEDS_YOU,
                json!({ "reason": decision.reason, "hold": hold }),
            );
        }
    }

    /// Drops the hold of `conversation` for this exact dialog, if any.
    fn drop_hold_of(&self, conversation: &str, shown: &ScreenDialog) {
        if let Ok(mut h) = self.holds.lock() {
            h.retain(|_, x| !(x.conversation == conversation && &x.screen == shown));
        }
    }

    /// Drops the holds of a conversation whose CLI is gone.
    pub(crate) fn drop_holds(&self, conversation: &str) {
        if let Ok(mut h) = self.holds.lock() {
            h.retain(|_, x| x.conversation != conversation);
        }
    }

    /// `supervision.holds`.
    pub fn supervision_holds(&self, agent: Option<&str>) -> Value {
        let mut holds: Vec<Value> = self
            .holds
            .lock()
            .map(|h| {
                let mut v: Vec<&Held> = h.values().filter(|x| agent.is_none_or(|a| a == x.agent)).collect();
                v.sort_by_key(|x| x.since);
                v.into_iter().map(Held::to_wire).collect()
            })
            .unwrap_or_default();
        holds.truncate(MAX_HOLDS);
        json!({ "holds": holds })
    }

    /// `supervision.answer`: a human's single-shot approve or deny of a held
    /// dialog, by meaning: the keys are the held dialog's template answer
    /// (approve once: its plain yes; deny: its no, or Escape), never an
    /// option picked by its words on screen, and never a standing permission.
    /// A dialog whose template gives no such answer is refused (-32009) and
    /// nothing is typed. Sent through verified send. With `learn` (an
    /// approve; the caller checked it is local), the held command becomes a
    /// learned rule of the agent's workspace once the answer is sent; a
    /// command that cannot be learned is refused before anything is sent.
    pub async fn supervision_answer(&self, hold: &str, decision: &str, learn: bool) -> NodeResult<Value> {
        let held = self
            .holds
            .lock()
            .ok()
            .and_then(|h| h.get(hold).cloned())
            .ok_or_else(|| NodeError::NotFound(format!("hold {hold:?} not found")))?;
        let (meaning, verdict) = match decision {
            "approve" => (Meaning::ApproveOnce, supervision::AuditDecision::Approve),
            "deny" => (Meaning::Deny, supervision::AuditDecision::Deny),
            other => {
                return Err(NodeError::Invalid(format!(
                    "decision: {other:?} is not approve or deny"
                )));
            }
        };
        let answer = held.dialog.answer(meaning).cloned().map_err(|why| {
            NodeError::Conflict(format!(
                "hold {hold}: no verified {} answer ({why}); nothing was typed",
                meaning.as_str()
            ))
        })?;
        let learning = if learn {
            Some(self.check_learn(&held, decision).await?)
        } else {
            None
        };
        let keys = answer.keys.clone();
        let live = self
            .live(&held.conversation)
            .ok_or_else(|| NodeError::Conflict(format!("conversation {} has no running CLI", held.conversation)))?;
        let (outcome, why) = self
            .verified_send(&live, &held.screen, meaning, &answer, |outcome, why| {
                let mut fields = AuditFields::for_action(
                    Trigger::Answer,
                    verdict,
                    outcome,
                    why.map_or_else(|| format!("a human chose {decision}"), str::to_string),
                );
                fields.dialog_class = Some(held.class);
                fields.subject = Some(held.summary.clone());
                if outcome == Outcome::Sent {
                    fields.keys = vec![keys.clone()];
                }
                fields
            })
            .await;
        if let Ok(mut h) = self.holds.lock() {
            h.remove(hold);
        }
        match outcome {
            Outcome::Sent => {
                if verdict == supervision::AuditDecision::Approve {
                    live.accept_changed(&held.redefined);
                    if !held.redefined.is_empty() {
                        let workspace = self.agent_home_dirs(&held.agent).1;
                        self.accept_definitions(&workspace, &held.redefined, "human via supervision.answer")
                            .await;
                    }
                }
                let mut answer = json!({ "outcome": "sent", "keys": keys });
                if let Some(pattern) = learning {
                    // The answer is sent: a failure to learn does not undo it.
                    match self
                        .supervision_learn(&held.agent, &pattern, true, "human via supervision.answer")
                        .await
                    {
                        Ok(learned) => answer["learned"] = learned,
                        Err(e) => answer["learn_error"] = json!(e.to_string()),
                    }
                }
                Ok(answer)
            }
            _ => Err(NodeError::Conflict(format!(
                "hold {hold} was not answered: {}",
                why.unwrap_or_else(|| "the send failed".into())
            ))),
        }
    }

    /// The pattern `supervision.answer {learn: true}` would learn from `held`,
    /// checked against the workspace's rules (valid, under the limit) before
    /// anything is sent. Errors name `learn`.
    async fn check_learn(&self, held: &Held, decision: &str) -> NodeResult<String> {
        if decision != "approve" {
            return Err(NodeError::Invalid("learn: only an approve can be learned".into()));
        }
        if held.class != supervision::DialogClass::CommandExec {
            return Err(NodeError::Invalid(format!(
                "learn: only a command_exec dialog can be learned (this one is {})",
                held.class
            )));
        }
        let command = held
            .dialog
            .command
            .as_deref()
            .ok_or_else(|| NodeError::Invalid("learn: the held dialog shows no command to learn".into()))?;
        let pattern = crate::validate::pattern_of_command(command).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let cat = self.catalog.lock().await;
        cat.decide_approval_rule(&self.rules_workspace(&held.agent), &pattern, true, "")
            .map_err(|e| match NodeError::from(e) {
                NodeError::Conflict(m) => NodeError::Conflict(format!("learn: {m}")),
                other => other,
            })?;
        Ok(pattern)
    }

    /// `supervision.audit`: newest first, at most 200, optionally for one agent
    /// and before an id.
    pub async fn supervision_audit(
        &self,
        agent: Option<&str>,
        limit: Option<u32>,
        before: Option<u64>,
    ) -> NodeResult<Value> {
        let limit = limit.unwrap_or(50).clamp(1, MAX_AUDIT) as usize;
        let mut entries = vec![];
        self.scan_audit(before.unwrap_or(u64::MAX), |a, row| {
            if agent.is_none_or(|want| want == a) {
                entries.push(row);
            }
            entries.len() < limit
        })
        .await?;
        Ok(json!({ "entries": entries }))
    }

    /// The newest audit row of each of `agents`, in one newest-first scan.
    pub(crate) async fn last_audit_rows(
        &self,
        agents: &[String],
    ) -> NodeResult<std::collections::HashMap<String, Value>> {
        let mut found = std::collections::HashMap::new();
        if agents.is_empty() {
            return Ok(found);
        }
        self.scan_audit(u64::MAX, |a, row| {
            if agents.contains(&a) {
                found.entry(a).or_insert(row);
            }
            found.len() < agents.len()
        })
        .await?;
        Ok(found)
    }

    /// Folded audit rows (agent, row) with ids below `before`, newest first,
    /// read a page at a time until `visit` returns false or the log ends.
    async fn scan_audit(&self, mut before: u64, mut visit: impl FnMut(String, Value) -> bool) -> NodeResult<()> {
        let mut fold = self.audit_fold();
        loop {
            let page = self.store().audit_before(before, 500).await?;
            if page.is_empty() {
                return Ok(());
            }
            for e in &page {
                before = e.seq;
                if let Some((agent, row)) = fold.push(e)
                    && !visit(agent, row)
                {
                    return Ok(());
                }
            }
        }
    }
}

/// How an audit event relates to the row it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// A whole row (holds, skips, mail, stall and nudge actions).
    Single,
    /// Written before typing; its outcome follows.
    Attempt,
    /// Completes the attempt with this seq.
    Outcome(u64),
}

/// An audit event as the wire's audit row (seed 000's columns), with its
/// agent and how it links to other events.
fn audit_row(e: &crate::events::StoredEvent) -> Option<(&str, Value, Link)> {
    let Event::SupervisionActed {
        agent,
        conversation,
        fields,
        pane_excerpt,
        attempt,
    } = &e.event
    else {
        return None;
    };
    let link = match attempt {
        Some(of) => Link::Outcome(*of),
        None if fields.outcome == Outcome::Attempted => Link::Attempt,
        None => Link::Single,
    };
    let mut row = serde_json::to_value(fields).unwrap_or(Value::Null);
    if let Some(obj) = row.as_object_mut() {
        obj.insert("id".into(), json!(e.seq));
        obj.insert("at".into(), json!(e.ts));
        obj.insert("agent".into(), json!(agent));
        obj.insert("conversation".into(), json!(conversation));
        obj.insert("pane_excerpt".into(), json!(pane_excerpt));
    }
    Some((agent, row, link))
}

/// Most outcomes kept waiting for their attempt while folding (an attempt is
/// written right before its outcome, so only a few are ever in flight).
const MAX_PENDING_OUTCOMES: usize = 4096;

/// Folds audit events read newest first into rows: an outcome is held back
/// until its attempt, and the pair becomes one row with the attempt's id and
/// time. An attempt with no outcome stays `attempted`.
#[derive(Default)]
struct AuditFold {
    outcomes: std::collections::HashMap<u64, Value>,
    /// Attempts after this seq belong to the running node: one without an
    /// outcome yet is in flight and left out (the outcome is coming).
    run_from_seq: u64,
}

impl AuditFold {
    fn push(&mut self, e: &crate::events::StoredEvent) -> Option<(String, Value)> {
        let (agent, row, link) = audit_row(e)?;
        let agent = agent.to_string();
        match link {
            Link::Single => Some((agent, row)),
            Link::Outcome(of) => {
                if self.outcomes.len() < MAX_PENDING_OUTCOMES {
                    self.outcomes.insert(of, row);
                }
                None
            }
            Link::Attempt => match self.outcomes.remove(&e.seq) {
                Some(mut done) => {
                    done["id"] = row["id"].clone();
                    done["at"] = row["at"].clone();
                    Some((agent, done))
                }
                None if e.seq > self.run_from_seq => None,
                None => {
                    let mut row = row;
                    let reason = row["reason"].as_str().unwrap_or_default().to_string();
                    row["reason"] = json!(format!(
                        "{reason}; no outcome recorded: the node stopped while typing, the keys may have been sent"
                    ));
                    Some((agent, row))
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::StoredEvent;
    use supervision::AuditDecision;

    fn event(seq: u64, outcome: Outcome, attempt: Option<u64>) -> StoredEvent {
        StoredEvent {
            seq,
            ts: seq * 10,
            event: Event::SupervisionActed {
                agent: "a".into(),
                conversation: Some("c".into()),
                fields: AuditFields::for_action(Trigger::Dialog, AuditDecision::Approve, outcome, "r"),
                pane_excerpt: String::new(),
                attempt,
            },
        }
    }

    fn fold(events: &[StoredEvent]) -> Vec<(u64, u64, String)> {
        let mut f = AuditFold::default();
        events
            .iter()
            .rev()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| {
                (
                    r["id"].as_u64().unwrap_or(0),
                    r["at"].as_u64().unwrap_or(0),
                    r["outcome"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn an_attempt_and_its_outcome_are_one_row_with_the_attempts_id() {
        let rows = fold(&[
            event(1, Outcome::Held, None),
            event(2, Outcome::Attempted, None),
            event(3, Outcome::Skipped, None),
            event(4, Outcome::Sent, Some(2)),
            event(5, Outcome::Attempted, None),
            event(6, Outcome::Failed, Some(5)),
        ]);
        assert_eq!(
            rows,
            vec![
                (5, 50, "failed".to_string()),
                (3, 30, "skipped".to_string()),
                (2, 20, "sent".to_string()),
                (1, 10, "held".to_string()),
            ]
        );
    }

    #[test]
    fn an_attempt_cut_off_by_a_crash_stays_one_attempted_row() {
        // The attempt (seq 8) is older than this run (which began at seq 100).
        let mut f = AuditFold {
            run_from_seq: 100,
            ..AuditFold::default()
        };
        let rows: Vec<Value> = [event(8, Outcome::Attempted, None), event(7, Outcome::Held, None)]
            .iter()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| r)
            .collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0]["outcome"], "attempted");
        assert!(
            rows[0]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("keys may have been sent")),
            "{}",
            rows[0]
        );
    }

    #[test]
    fn an_attempt_of_this_run_is_left_out_until_its_outcome() {
        let mut f = AuditFold {
            run_from_seq: 7,
            ..AuditFold::default()
        };
        let rows: Vec<u64> = [event(8, Outcome::Attempted, None), event(7, Outcome::Held, None)]
            .iter()
            .filter_map(|e| f.push(e))
            .map(|(_, r)| r["id"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(rows, vec![7]);
    }
}
