//! A scripted stand-in for Claude Code's terminal UI, driven by `/fake` directives or a rules file, for tests.
#![cfg_attr(not(test), deny(clippy::unwrap_used))]

mod app;
mod args;
mod dialog;
mod directive;
mod exec;
mod keys;
mod rules;
mod screen;
mod session;
mod spend;
mod term;

use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::{Duration, Instant};

use app::{App, Timing};
use args::{ArgError, SessionChoice, parse_args};
use keys::Decoder;
use rules::RulesError;
use session::{Kind, SessionError, SessionFile};
use term::{Input, RawMode};

/// Longest the main loop sleeps without input.
const MAX_IDLE_WAIT: Duration = Duration::from_millis(100);
/// How long a lone ESC waits for the rest of an escape sequence.
const ESC_WAIT: Duration = Duration::from_millis(30);
/// Bound of the stdin reader's channel (chunks).
const INPUT_QUEUE: usize = 64;

/// Enables bracketed paste.
const PASTE_ON: &str = "\x1b[?2004h";
/// Disables bracketed paste.
const PASTE_OFF: &str = "\x1b[?2004l";
/// Clears the screen, cursor home.
const CLEAR: &str = "\x1b[H\x1b[2J";

/// Why the CLI could not start.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("{0}")]
    Args(#[from] ArgError),
    #[error("{0}")]
    Rules(#[from] RulesError),
    #[error("{0}")]
    Session(#[from] SessionError),
    #[error("{0}")]
    Setup(String),
}

impl StartError {
    fn exit_code(&self) -> i32 {
        match self {
            StartError::Session(SessionError::NotFound(_)) => 1,
            StartError::Setup(_) => 1,
            _ => 2,
        }
    }
}

/// Runs the fake CLI with `args` (program name excluded) and returns the process exit code.
pub fn run(args: Vec<String>) -> i32 {
    match start(&args) {
        Ok(app) => interactive(app),
        Err(e) => {
            eprintln!("{e}");
            e.exit_code()
        }
    }
}

/// Everything before the terminal is touched: flags, rules, session file.
fn start(args: &[String]) -> Result<App, StartError> {
    let args = parse_args(args)?;
    let rules = args.rules.as_deref().map(rules::load_rules).transpose()?;
    let dir = match args.session_dir {
        Some(dir) => dir,
        None => default_session_dir()?,
    };
    std::fs::create_dir_all(&dir)
        .map_err(|e| StartError::Setup(format!("cannot create session dir {}: {e}", dir.display())))?;
    let cwd =
        std::env::current_dir().map_err(|e| StartError::Setup(format!("cannot read the current directory: {e}")))?;
    let timing = Timing {
        think: Duration::from_millis(args.think_ms),
        dialog_guard: Duration::from_millis(args.dialog_guard_ms),
    };
    let (id, file, history, resumed) = match args.session {
        SessionChoice::Resume(id) => {
            let (file, history) = SessionFile::resume(&dir, &id)?;
            (id, file, history, true)
        }
        SessionChoice::NewWithId(id) => {
            let file = SessionFile::create(&dir, &id)?;
            (id, file, Vec::new(), false)
        }
        SessionChoice::New => {
            let id = session::random_id();
            let file = SessionFile::create(&dir, &id)?;
            (id, file, Vec::new(), false)
        }
    };
    let mut app = App::new(id, cwd, file, history, rules, timing);
    if resumed {
        app.record(Kind::System, "resumed")
            .map_err(|e| StartError::Setup(format!("cannot write the session file: {e}")))?;
    }
    Ok(app)
}

fn default_session_dir() -> Result<PathBuf, StartError> {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Ok(PathBuf::from(home).join(".fake-cli").join("sessions")),
        _ => Err(StartError::Setup("HOME is not set; pass --session-dir".to_string())),
    }
}

/// How the main loop ended.
enum End {
    Exit,
    InputClosed,
    Failed,
}

/// Runs the interactive UI until exit; restores the terminal; returns the exit code.
fn interactive(mut app: App) -> i32 {
    let mut raw = RawMode::enable();
    let mut out = io::stdout().lock();
    let (tx, rx) = sync_channel(INPUT_QUEUE);
    let end = match term::spawn_reader(tx) {
        Ok(()) if write_out(&mut out, PASTE_ON).is_ok() => main_loop(&mut app, &rx, &mut out),
        _ => End::Failed,
    };
    // Best effort: the terminal may already be gone.
    let _ = write_out(&mut out, PASTE_OFF);
    raw.restore();
    match end {
        End::Exit => {
            let hint = format!(
                "{CLEAR}Resume this session with:\r\nwarren fake-cli --resume {}\r\n",
                app.session_id()
            );
            let _ = write_out(&mut out, &hint);
            0
        }
        End::InputClosed => 0,
        End::Failed => 1,
    }
}

fn write_out(out: &mut impl Write, text: &str) -> io::Result<()> {
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The event loop: input keys, timers, and a redraw whenever the screen changes.
fn main_loop(app: &mut App, rx: &Receiver<Input>, out: &mut impl Write) -> End {
    let mut decoder = Decoder::default();
    let mut esc_deadline: Option<Instant> = None;
    let mut last_size = None;
    let mut last_frame = String::new();
    loop {
        let now = Instant::now();
        if app.tick(now).is_err() {
            return End::Failed;
        }
        if app.exit_request().is_some() {
            return End::Exit;
        }
        let (rows, cols) = term::window_size();
        let frame = screen::encode(&screen::layout(&app.view(now), cols, rows));
        if last_size != Some((rows, cols)) || frame != last_frame {
            if write_out(out, &frame).is_err() {
                return End::Failed;
            }
            last_size = Some((rows, cols));
            last_frame = frame;
        }
        let mut wait = MAX_IDLE_WAIT;
        for deadline in [esc_deadline, app.next_deadline(now)].into_iter().flatten() {
            wait = wait.min(deadline.saturating_duration_since(now));
        }
        match rx.recv_timeout(wait) {
            Ok(Input::Data(arrived, bytes)) => {
                let now = Instant::now();
                for key in decoder.feed(&bytes) {
                    if app.on_key(key, arrived, now).is_err() {
                        return End::Failed;
                    }
                }
                esc_deadline = decoder.needs_flush().then(|| now + ESC_WAIT);
            }
            Ok(Input::Eof) => return End::InputClosed,
            Ok(Input::Error) | Err(RecvTimeoutError::Disconnected) => return End::Failed,
            Err(RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if esc_deadline.is_some_and(|d| d <= now) {
                    esc_deadline = None;
                    for key in decoder.flush() {
                        if app.on_key(key, now, now).is_err() {
                            return End::Failed;
                        }
                    }
                }
            }
        }
    }
}
