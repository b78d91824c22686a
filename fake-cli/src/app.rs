//! The CLI's state machine: the input line, turns and their actions, dialogs, and the transcript.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::dialog::{Dialog, DialogInput, DialogKind};
use crate::directive::{Action, parse_message};
use crate::exec;
use crate::keys::Key;
use crate::rules::Rules;
use crate::screen::{BusyView, SPINNER, View};
use crate::session::{Entry, Kind, SessionFile};

/// How often the spinner advances.
const SPINNER_STEP: Duration = Duration::from_millis(150);

/// Timing knobs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timing {
    /// Busy time before a turn's first output.
    pub(crate) think: Duration,
    /// Keys arriving this soon after a dialog appears are dropped.
    pub(crate) dialog_guard: Duration,
}

/// Why the CLI wants to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExitRequest {
    /// `/fake exit` or an exit rule.
    Directive,
    /// Ctrl-D on an empty prompt.
    CtrlD,
}

/// A running turn.
struct Turn {
    started: Instant,
    actions: VecDeque<Action>,
    wait: Option<Wait>,
}

/// A busy period inside a turn, with the reply to give when it ends.
struct Wait {
    until: Instant,
    done: Option<String>,
}

struct OpenDialog {
    dialog: Dialog,
    shown_at: Instant,
}

/// The whole CLI state.
pub(crate) struct App {
    session_id: String,
    cwd: PathBuf,
    cwd_text: String,
    session: SessionFile,
    rules: Option<Rules>,
    timing: Timing,
    history: Vec<Entry>,
    input: String,
    queue: VecDeque<String>,
    turn: Option<Turn>,
    dialog: Option<OpenDialog>,
    always_allowed: HashSet<String>,
    exit: Option<ExitRequest>,
    /// Requests recorded with `/fake spend` (numbers their ids).
    spent: u64,
}

impl App {
    pub(crate) fn new(
        session_id: String,
        cwd: PathBuf,
        session: SessionFile,
        history: Vec<Entry>,
        rules: Option<Rules>,
        timing: Timing,
    ) -> Self {
        let cwd_text = cwd.display().to_string();
        Self {
            session_id,
            cwd,
            cwd_text,
            session,
            rules,
            timing,
            history,
            input: String::new(),
            queue: VecDeque::new(),
            turn: None,
            dialog: None,
            always_allowed: HashSet::new(),
            exit: None,
            spent: 0,
        }
    }

    pub(crate) fn session_id(&self) -> &str {
        &self.session_id
    }

    pub(crate) fn exit_request(&self) -> Option<ExitRequest> {
        self.exit
    }

    /// Appends an entry to the session file (flushed) and then to the on-screen history.
    pub(crate) fn record(&mut self, kind: Kind, text: impl Into<String>) -> io::Result<()> {
        let text = text.into();
        self.session.append(kind, &text)?;
        self.history.push(Entry::new(kind, text));
        Ok(())
    }

    fn busy(&self) -> bool {
        self.turn.is_some() && self.dialog.is_none()
    }

    /// Handles one key that arrived at `arrived`.
    pub(crate) fn on_key(&mut self, key: Key, arrived: Instant, now: Instant) -> io::Result<()> {
        if self.exit.is_some() {
            return Ok(());
        }
        if let Some(open) = self.dialog.as_mut() {
            let guard = self.timing.dialog_guard;
            if !guard.is_zero() && arrived < open.shown_at + guard {
                return Ok(());
            }
            let choice = match open.dialog.handle(&key) {
                DialogInput::Open => return Ok(()),
                DialogInput::Chosen(i) => Some(i),
                DialogInput::Cancelled => None,
            };
            if let Some(open) = self.dialog.take() {
                self.resolve(open.dialog.kind, choice)?;
            }
            return self.advance(now);
        }
        match key {
            Key::Char(c) => self.input.push(c),
            Key::Paste(text) => self.input.push_str(&text),
            Key::Enter => self.submit(now)?,
            Key::Backspace => {
                self.input.pop();
            }
            Key::CtrlC if !self.input.is_empty() => self.input.clear(),
            Key::CtrlC | Key::Esc if self.busy() => self.interrupt(now)?,
            Key::CtrlD if self.input.is_empty() => self.exit = Some(ExitRequest::CtrlD),
            _ => {}
        }
        Ok(())
    }

    /// Submits the input line: starts a turn, or queues it behind the running one.
    fn submit(&mut self, now: Instant) -> io::Result<()> {
        if self.input.is_empty() {
            return Ok(());
        }
        let text = std::mem::take(&mut self.input);
        if self.turn.is_some() {
            self.queue.push_back(text);
            Ok(())
        } else {
            self.start_turn(text, now)
        }
    }

    fn start_turn(&mut self, text: String, now: Instant) -> io::Result<()> {
        self.record(Kind::User, text.as_str())?;
        let actions = self
            .rules
            .as_ref()
            .and_then(|r| r.actions_for(&text))
            .unwrap_or_else(|| parse_message(&text));
        self.turn = Some(Turn {
            started: now,
            actions: actions.into(),
            wait: Some(Wait {
                until: now + self.timing.think,
                done: None,
            }),
        });
        Ok(())
    }

    /// Esc / Ctrl-C while busy: abandon the rest of the turn.
    fn interrupt(&mut self, now: Instant) -> io::Result<()> {
        self.turn = None;
        self.record(Kind::Assistant, "Interrupted")?;
        self.advance(now)
    }

    /// Moves time forward: finishes waits and runs actions that are due.
    pub(crate) fn tick(&mut self, now: Instant) -> io::Result<()> {
        self.advance(now)
    }

    /// Runs the current turn until it waits, opens a dialog, ends or exits;
    /// starts the next queued message when a turn ends.
    fn advance(&mut self, now: Instant) -> io::Result<()> {
        loop {
            if self.exit.is_some() || self.dialog.is_some() {
                return Ok(());
            }
            let Some(turn) = self.turn.as_mut() else {
                return match self.queue.pop_front() {
                    Some(next) => self.start_turn(next, now),
                    None => Ok(()),
                };
            };
            if let Some(wait) = &turn.wait {
                if wait.until > now {
                    return Ok(());
                }
                let done = turn.wait.take().and_then(|w| w.done);
                if let Some(text) = done {
                    self.record(Kind::Assistant, text)?;
                }
                continue;
            }
            match turn.actions.pop_front() {
                Some(action) => self.run_action(action, now)?,
                None => self.turn = None,
            }
        }
    }

    fn run_action(&mut self, action: Action, now: Instant) -> io::Result<()> {
        match action {
            Action::Say(text) => self.record(Kind::Assistant, text),
            Action::Shell(cmd) => self.run_tool(&cmd).map(drop),
            Action::ToolBash(cmd) if self.always_allowed.contains(&cmd) => self.run_bash(&cmd),
            Action::ToolBash(cmd) => {
                let cwd = self.cwd_text.clone();
                self.open_dialog(DialogKind::Bash { cmd, cwd }, now);
                Ok(())
            }
            Action::ToolBashAlways(cmd) if self.always_allowed.contains(&cmd) => self.run_bash(&cmd),
            Action::ToolBashAlways(cmd) => {
                self.open_dialog(DialogKind::BashAlways { cmd }, now);
                Ok(())
            }
            Action::Edit(path) => {
                self.open_dialog(DialogKind::Edit { path }, now);
                Ok(())
            }
            Action::Ask { question, options } => {
                self.open_dialog(DialogKind::Ask { question, options }, now);
                Ok(())
            }
            Action::Limit => {
                self.open_dialog(DialogKind::Limit, now);
                Ok(())
            }
            Action::Spend { model, input, output } => {
                self.spent += 1;
                let Some(path) = crate::spend::usage_file(&self.session_id) else {
                    return self.record(Kind::System, "spend: neither CLAUDE_CONFIG_DIR nor HOME is set");
                };
                let ms = crate::spend::now_ms();
                let line = crate::spend::line(&self.session_id, self.spent, &model, input, output, ms);
                crate::spend::append(&path, &line)?;
                self.record(Kind::Assistant, format!("Spent {input} in, {output} out on {model}"))
            }
            Action::Busy { secs, label } => {
                if let Some(turn) = self.turn.as_mut() {
                    let length = Duration::try_from_secs_f64(secs).unwrap_or_default();
                    turn.wait = Some(Wait {
                        until: now + length,
                        done: Some(format!("Finished busy work ({label} s)")),
                    });
                }
                Ok(())
            }
            Action::Exit => {
                self.record(Kind::System, "exited")?;
                self.exit = Some(ExitRequest::Directive);
                Ok(())
            }
        }
    }

    fn open_dialog(&mut self, kind: DialogKind, now: Instant) {
        self.dialog = Some(OpenDialog {
            dialog: Dialog::new(kind),
            shown_at: now,
        });
    }

    /// Runs a command and records its tool line; returns its exit code.
    fn run_tool(&mut self, cmd: &str) -> io::Result<i32> {
        let out = exec::run_shell(cmd, &self.cwd);
        self.record(Kind::Tool, exec::tool_text(cmd, &out.output))?;
        Ok(out.code)
    }

    /// Runs an approved command: tool line, then `Ran: CMD (exit N)`.
    fn run_bash(&mut self, cmd: &str) -> io::Result<()> {
        let code = self.run_tool(cmd)?;
        self.record(Kind::Assistant, format!("Ran: {cmd} (exit {code})"))
    }

    fn grant(&mut self, option_text: &str) -> io::Result<()> {
        self.record(Kind::System, format!("standing permission granted: {option_text}"))
    }

    /// Carries out a dialog's answer (`None` = cancelled).
    fn resolve(&mut self, kind: DialogKind, choice: Option<usize>) -> io::Result<()> {
        let options = kind.options();
        let option_text = |i: usize| options.get(i).cloned().unwrap_or_default();
        match kind {
            DialogKind::Bash { cmd, .. } => match choice {
                Some(0) => self.run_bash(&cmd),
                Some(i @ (1 | 2)) => {
                    self.grant(&option_text(i))?;
                    if i == 1 {
                        self.always_allowed.insert(cmd.clone());
                    }
                    self.run_bash(&cmd)
                }
                _ => self.record(Kind::Assistant, format!("Permission denied: {cmd}")),
            },
            DialogKind::BashAlways { cmd } => match choice {
                Some(0) => {
                    self.grant(&option_text(0))?;
                    self.always_allowed.insert(cmd.clone());
                    self.run_bash(&cmd)
                }
                _ => self.record(Kind::Assistant, format!("Permission denied: {cmd}")),
            },
            DialogKind::Edit { path } => match choice {
                Some(i @ (0 | 1)) => {
                    if i == 1 {
                        self.grant(&option_text(i))?;
                    }
                    match exec::apply_edit(&self.cwd, &path) {
                        Ok(()) => self.record(Kind::Assistant, format!("Edited {path}")),
                        Err(e) => self.record(Kind::Assistant, format!("Edit failed: {path}: {e}")),
                    }
                }
                _ => self.record(Kind::Assistant, format!("Permission denied: edit {path}")),
            },
            DialogKind::Ask { .. } => match choice {
                Some(i) => self.record(Kind::Assistant, format!("You chose: {}", option_text(i))),
                None => self.record(Kind::Assistant, "Question dismissed"),
            },
            DialogKind::Limit => match choice {
                Some(0) => self.record(Kind::Assistant, "Waiting for the usage limit to reset."),
                Some(_) => self.record(Kind::Assistant, "Upgrade is not available in fake mode."),
                None => self.record(Kind::Assistant, "Dismissed"),
            },
        }
    }

    /// What the screen should show at `now`.
    pub(crate) fn view(&self, now: Instant) -> View<'_> {
        let busy = match &self.turn {
            Some(turn) if self.dialog.is_none() => {
                let elapsed = now.saturating_duration_since(turn.started);
                let steps = elapsed.as_millis() / SPINNER_STEP.as_millis();
                Some(BusyView {
                    frame: usize::try_from(steps % SPINNER.len() as u128).unwrap_or(0),
                    secs: elapsed.as_secs(),
                })
            }
            _ => None,
        };
        View {
            session_id: &self.session_id,
            cwd: &self.cwd_text,
            history: &self.history,
            input: &self.input,
            busy,
            dialog: self.dialog.as_ref().map(|d| &d.dialog),
        }
    }

    /// The next moment something changes without input: a wait ending or the spinner moving.
    pub(crate) fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let turn = self.turn.as_ref().filter(|_| self.dialog.is_none())?;
        let elapsed = now.saturating_duration_since(turn.started).as_millis();
        let step = SPINNER_STEP.as_millis();
        let to_next = u64::try_from(step - elapsed % step).unwrap_or(0);
        let spin = now + Duration::from_millis(to_next);
        Some(match &turn.wait {
            Some(wait) => spin.min(wait.until),
            None => spin,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(dir: &std::path::Path, rules: Option<Rules>) -> App {
        let session = SessionFile::create(dir, "t").unwrap();
        let timing = Timing {
            think: Duration::from_millis(10),
            dialog_guard: Duration::from_millis(200),
        };
        App::new("t".into(), dir.to_path_buf(), session, Vec::new(), rules, timing)
    }

    fn typed(app: &mut App, text: &str, now: Instant) {
        for c in text.chars() {
            app.on_key(Key::Char(c), now, now).unwrap();
        }
        app.on_key(Key::Enter, now, now).unwrap();
    }

    fn texts(app: &App) -> Vec<String> {
        app.history.iter().map(|e| e.text.clone()).collect()
    }

    #[test]
    fn echo_after_think_time() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = app(dir.path(), None);
        let t0 = Instant::now();
        typed(&mut a, "hi", t0);
        assert!(a.view(t0).busy.is_some());
        a.tick(t0 + Duration::from_millis(5)).unwrap();
        assert_eq!(texts(&a), ["hi"]);
        a.tick(t0 + Duration::from_millis(10)).unwrap();
        assert_eq!(texts(&a), ["hi", "echo: hi"]);
        assert!(a.view(t0).busy.is_none());
        assert_eq!(a.next_deadline(t0), None);
    }

    #[test]
    fn queued_message_runs_after_current_turn() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = app(dir.path(), None);
        let t0 = Instant::now();
        typed(&mut a, "/fake busy 1", t0);
        a.tick(t0 + Duration::from_millis(10)).unwrap();
        typed(&mut a, "next", t0 + Duration::from_millis(50));
        a.tick(t0 + Duration::from_millis(100)).unwrap();
        assert_eq!(texts(&a), ["/fake busy 1"]);
        a.tick(t0 + Duration::from_millis(1010)).unwrap();
        assert_eq!(texts(&a), ["/fake busy 1", "Finished busy work (1 s)", "next"]);
        a.tick(t0 + Duration::from_millis(1100)).unwrap();
        assert_eq!(texts(&a)[3], "echo: next");
    }

    #[test]
    fn esc_interrupts_busy_work() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = app(dir.path(), None);
        let t0 = Instant::now();
        typed(&mut a, "/fake busy 5\n/fake say after", t0);
        a.tick(t0 + Duration::from_millis(20)).unwrap();
        a.on_key(Key::Esc, t0, t0 + Duration::from_millis(30)).unwrap();
        a.tick(t0 + Duration::from_secs(6)).unwrap();
        assert_eq!(texts(&a), ["/fake busy 5\n/fake say after", "Interrupted"]);
    }

    #[test]
    fn dialog_guard_drops_early_keys_and_later_directives_continue() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = app(dir.path(), None);
        let t0 = Instant::now();
        typed(&mut a, "/fake ask Pick | A | B\n/fake say done", t0);
        let shown = t0 + Duration::from_millis(10);
        a.tick(shown).unwrap();
        assert!(a.view(shown).dialog.is_some());
        let early = shown + Duration::from_millis(100);
        a.on_key(Key::Char('2'), early, early).unwrap();
        assert!(a.view(early).dialog.is_some());
        let late = shown + Duration::from_millis(250);
        a.on_key(Key::Char('2'), late, late).unwrap();
        assert!(a.view(late).dialog.is_none());
        assert_eq!(texts(&a)[1..], ["You chose: B", "done"]);
    }

    #[test]
    fn standing_bash_permission_skips_later_dialogs() {
        let dir = tempfile::tempdir().unwrap();
        let mut a = app(dir.path(), None);
        a.timing.dialog_guard = Duration::ZERO;
        let t0 = Instant::now();
        typed(&mut a, "/fake tool bash echo hi", t0);
        a.tick(t0 + Duration::from_millis(10)).unwrap();
        a.on_key(Key::Char('2'), t0, t0).unwrap();
        let text = texts(&a);
        assert!(text[1].starts_with("standing permission granted: Yes, and always allow access to"));
        assert_eq!(text[2..], ["$ echo hi\nhi", "Ran: echo hi (exit 0)"]);
        typed(&mut a, "/fake tool bash echo hi", t0);
        a.tick(t0 + Duration::from_millis(20)).unwrap();
        assert!(a.dialog.is_none());
        assert_eq!(texts(&a)[6], "Ran: echo hi (exit 0)");
    }

    #[test]
    fn rules_take_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let rules = crate::rules::parse_rules(
            r#"{"rules":[{"match":"^hello (\\w+)","actions":[{"say":"hi $1"},{"exit":true}]}]}"#,
        )
        .unwrap();
        let mut a = app(dir.path(), Some(rules));
        let t0 = Instant::now();
        typed(&mut a, "hello bob", t0);
        a.tick(t0 + Duration::from_millis(10)).unwrap();
        assert_eq!(texts(&a), ["hello bob", "hi bob", "exited"]);
        assert_eq!(a.exit_request(), Some(ExitRequest::Directive));
    }
}
