//! Test harness: runs the `fake-cli` binary in a PTY and watches its screen through a vt100 parser.

use std::io::{Read, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

pub(crate) const ROWS: u16 = 40;
pub(crate) const COLS: u16 = 100;

/// How long any single wait may take before the test fails.
const DEADLINE: Duration = Duration::from_secs(8);
/// Pause between screen checks while waiting.
const POLL: Duration = Duration::from_millis(10);

/// A running fake CLI in a PTY.
pub(crate) struct Cli {
    parser: Arc<Mutex<vt100::Parser>>,
    raw: Arc<Mutex<Vec<u8>>>,
    writer: Option<Box<dyn Write + Send>>,
    master: Option<Box<dyn MasterPty + Send>>,
    child: Box<dyn Child + Send + Sync>,
}

impl Cli {
    /// Starts `fake-cli ARGS` in `cwd` on a ROWS x COLS terminal.
    pub(crate) fn spawn(args: &[&str], cwd: &Path) -> Cli {
        let pair = native_pty_system().openpty(pty_size(ROWS, COLS)).expect("openpty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_fake-cli"));
        cmd.args(args);
        cmd.cwd(cwd);
        cmd.env("HOME", cwd);
        cmd.env("TERM", "xterm-256color");
        let child = pair.slave.spawn_command(cmd).expect("spawn fake-cli");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("pty reader");
        let writer = pair.master.take_writer().expect("pty writer");
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            ROWS.try_into().expect("rows"),
            COLS.try_into().expect("cols"),
            0,
        )));
        let raw = Arc::new(Mutex::new(Vec::new()));
        {
            let parser = Arc::clone(&parser);
            let raw = Arc::clone(&raw);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                loop {
                    match reader.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => {
                            parser.lock().expect("parser").process(&buf[..n]);
                            raw.lock().expect("raw").extend_from_slice(&buf[..n]);
                        }
                    }
                }
            });
        }
        Cli {
            parser,
            raw,
            writer: Some(writer),
            master: Some(pair.master),
            child,
        }
    }

    /// The visible screen, rows joined by `\n` (trailing blanks trimmed by vt100).
    pub(crate) fn screen(&self) -> String {
        let parser = self.parser.lock().expect("parser");
        let (_, cols) = parser.screen().size();
        parser.screen().rows(0, cols.get()).collect::<Vec<_>>().join("\n")
    }

    /// Everything the program wrote so far, lossily decoded.
    pub(crate) fn raw_output(&self) -> String {
        String::from_utf8_lossy(&self.raw.lock().expect("raw")).into_owned()
    }

    /// Waits until `cond` holds for the screen; panics with the screen after the deadline.
    pub(crate) fn wait_for(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let screen = self.screen();
            if cond(&screen) {
                return screen;
            }
            if Instant::now() > deadline {
                panic!("timed out waiting for {what}; screen:\n{screen}");
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits until the screen contains `text`.
    pub(crate) fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), |s| s.contains(text))
    }

    /// Waits until the prompt is up and no turn is running.
    pub(crate) fn wait_idle(&self) -> String {
        self.wait_for("idle prompt", is_idle)
    }

    /// Writes raw bytes to the terminal.
    pub(crate) fn send(&mut self, text: &str) {
        let writer = self.writer.as_mut().expect("terminal open");
        writer.write_all(text.as_bytes()).expect("write to pty");
        writer.flush().expect("flush pty");
    }

    /// Types a message and presses Enter.
    pub(crate) fn submit(&mut self, text: &str) {
        self.send(&format!("{text}\r"));
    }

    /// Resizes the terminal (the program notices on its next loop).
    pub(crate) fn resize(&self, rows: u16, cols: u16) {
        self.master
            .as_ref()
            .expect("terminal open")
            .resize(pty_size(rows, cols))
            .expect("resize");
        self.parser
            .lock()
            .expect("parser")
            .screen_mut()
            .set_size(rows.try_into().expect("rows"), cols.try_into().expect("cols"));
    }

    /// Closes our side of the terminal, as when the node kills the session.
    pub(crate) fn close_terminal(&mut self) {
        self.writer = None;
        self.master = None;
    }

    /// Waits for the process to end and returns its exit code.
    pub(crate) fn wait_exit(&mut self) -> u32 {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status.exit_code();
            }
            if Instant::now() > deadline {
                panic!("fake-cli did not exit; screen:\n{}", self.screen());
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Cli {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn pty_size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

/// Idle: a prompt line at column 0 and no busy marker.
pub(crate) fn is_idle(screen: &str) -> bool {
    screen.lines().any(|l| l.starts_with('❯')) && !screen.contains("esc to interrupt")
}

/// The typed lines of a session file: (type, text).
pub(crate) fn session_lines(path: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(path)
        .expect("read session file")
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("session line is JSON");
            assert!(v["ts_ms"].as_u64().expect("ts_ms") > 1_600_000_000_000);
            (
                v["type"].as_str().expect("type").to_string(),
                v["text"].as_str().expect("text").to_string(),
            )
        })
        .collect()
}
