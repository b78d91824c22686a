//! The CLI under a PTY. A reader thread feeds every output chunk to the vt100
//! parser, to the guest's stdout and, while a node connection is attached, to
//! that connection's outbound queue. A waiter thread reaps the child.

use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::Context;
use portable_pty::{CommandBuilder, MasterPty, PtySize, native_pty_system};
use tokio::sync::mpsc::error::TrySendError;
use tokio::sync::{Notify, mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

use crate::proto::ScreenResult;

/// How long a hung-up CLI gets before SIGKILL.
const HANGUP_GRACE: Duration = Duration::from_secs(2);
/// How long after the child exits the reader may keep draining output.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Where live PTY output goes while a node connection is up.
pub(crate) struct Sink {
    pub(crate) queue: mpsc::Sender<Message>,
    /// Notified when the queue was full and the sink was dropped.
    pub(crate) overflow: Arc<Notify>,
}

/// The screen, plus the attached sink; one lock so that a repaint and the
/// following live bytes never overlap or leave a gap.
struct Tap {
    parser: vt100::Parser,
    sink: Option<Sink>,
}

impl Tap {
    fn feed(&mut self, chunk: &[u8]) {
        self.parser.process(chunk);
        let Some(sink) = &self.sink else { return };
        match sink.queue.try_send(Message::binary(chunk.to_vec())) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                sink.overflow.notify_one();
                self.sink = None;
            }
            Err(TrySendError::Closed(_)) => self.sink = None,
        }
    }
}

pub(crate) struct Pty {
    master: Mutex<Box<dyn MasterPty + Send>>,
    writer: Mutex<Box<dyn Write + Send>>,
    tap: Arc<Mutex<Tap>>,
    pid: u32,
    reaped: Arc<AtomicBool>,
    exit: watch::Receiver<Option<i32>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn pty_size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

fn nz(v: u16) -> NonZeroU16 {
    NonZeroU16::new(v).unwrap_or(NonZeroU16::MIN)
}

/// Bytes that repaint `screen` on a terminal (or parser) in any prior state.
pub(crate) fn repaint(screen: &vt100::Screen) -> Vec<u8> {
    let mut out = b"\x1b[H\x1b[2J".to_vec();
    out.extend_from_slice(screen.contents_formatted().as_bytes());
    out.extend_from_slice(screen.cursor_state_formatted().as_bytes());
    out
}

/// A `waitpid` status as a shell would report it: the exit code, or 128 +
/// the signal number.
pub(crate) fn exit_code(status: libc::c_int) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// Reaps the CLI and returns its exit code. As PID 1 of a container the guest
/// is also the reaper of every orphan, so there it reaps any child until the
/// CLI turns up; elsewhere it waits for the CLI alone.
fn wait_pid(pid: u32) -> i32 {
    let target = if std::process::id() == 1 {
        -1
    } else {
        pid as libc::pid_t
    };
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: waitpid with a valid status pointer.
        let rc = unsafe { libc::waitpid(target, &mut status, 0) };
        if rc == pid as libc::pid_t {
            return exit_code(status);
        }
        if rc == -1 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return 1;
        }
    }
}

/// Sends `signal` to the CLI's process group (it is a session leader) and to
/// the CLI itself.
fn signal_group(pid: u32, signal: libc::c_int) {
    // SAFETY: plain kill(2) calls; a stale pid only yields ESRCH.
    unsafe {
        libc::kill(-(pid as libc::pid_t), signal);
        libc::kill(pid as libc::pid_t, signal);
    }
}

/// Copies PTY output to the tap and stdout until the PTY closes, then says so.
fn spawn_reader(
    mut reader: Box<dyn Read + Send>,
    tap: Arc<Mutex<Tap>>,
    drained: SyncSender<()>,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("pty-read".into()).spawn(move || {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    lock(&tap).feed(&buf[..n]);
                    let mut out = std::io::stdout().lock();
                    let _ = out.write_all(&buf[..n]).and_then(|()| out.flush());
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        let _ = drained.send(());
    })?;
    Ok(())
}

/// Reaps the CLI, lets the reader pass on its last words, then publishes the
/// exit code.
fn spawn_waiter(
    pid: u32,
    child: Box<dyn portable_pty::Child + Send + Sync>,
    reaped: Arc<AtomicBool>,
    drained: Receiver<()>,
    exit: watch::Sender<Option<i32>>,
) -> std::io::Result<()> {
    std::thread::Builder::new().name("pty-wait".into()).spawn(move || {
        let code = wait_pid(pid);
        reaped.store(true, Ordering::SeqCst);
        drop(child);
        let _ = drained.recv_timeout(DRAIN_GRACE);
        let _ = exit.send(Some(code));
    })?;
    Ok(())
}

impl Pty {
    /// Spawns `program args` under a new PTY of `size` in the current
    /// directory, with the guest's environment minus `hide`.
    pub(crate) fn spawn(program: &str, args: &[String], size: (u16, u16), hide: &[&str]) -> anyhow::Result<Arc<Pty>> {
        let (rows, cols) = size;
        let pair = native_pty_system()
            .openpty(pty_size(rows, cols))
            .context("cannot open a PTY")?;
        let mut cmd = CommandBuilder::new(program);
        cmd.args(args);
        // portable-pty would otherwise start the child in $HOME.
        cmd.cwd(std::env::current_dir().context("cannot read the current directory")?);
        for name in hide {
            cmd.env_remove(name);
        }
        let child = pair
            .slave
            .spawn_command(cmd)
            .with_context(|| format!("cannot start {program}"))?;
        drop(pair.slave);
        let pid = child.process_id().context("the CLI has no pid")?;
        let reader = pair.master.try_clone_reader().context("cannot read the PTY")?;
        let writer = pair.master.take_writer().context("cannot write the PTY")?;
        let tap = Arc::new(Mutex::new(Tap {
            parser: vt100::Parser::new(nz(rows), nz(cols), 0),
            sink: None,
        }));
        let reaped = Arc::new(AtomicBool::new(false));
        let (exit_tx, exit) = watch::channel(None);
        let (drained_tx, drained) = std::sync::mpsc::sync_channel::<()>(1);

        spawn_reader(reader, tap.clone(), drained_tx)?;
        spawn_waiter(pid, child, reaped.clone(), drained, exit_tx)?;
        Ok(Arc::new(Pty {
            master: Mutex::new(pair.master),
            writer: Mutex::new(writer),
            tap,
            pid,
            reaped,
            exit,
        }))
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    pub(crate) fn alive(&self) -> bool {
        !self.reaped.load(Ordering::SeqCst)
    }

    /// Waits for the CLI to exit (and its output to drain); returns its exit code.
    pub(crate) async fn wait(&self) -> i32 {
        let mut exit = self.exit.clone();
        match exit.wait_for(Option::is_some).await {
            Ok(code) => code.unwrap_or(1),
            Err(_) => 1,
        }
    }

    /// Writes bytes to the PTY, blocking the calling thread.
    pub(crate) fn write_blocking(&self, bytes: &[u8]) -> std::io::Result<()> {
        let mut w = lock(&self.writer);
        w.write_all(bytes).and_then(|()| w.flush())
    }

    /// Writes bytes to the PTY. A CLI that does not read can block the write,
    /// so it runs off the async runtime.
    pub(crate) async fn write(self: &Arc<Self>, bytes: Vec<u8>) -> Result<(), String> {
        if !self.alive() {
            return Err("the CLI has exited".into());
        }
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.write_blocking(&bytes))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("cannot write to the PTY: {e}"))
    }

    pub(crate) fn resize(&self, rows: u16, cols: u16) -> Result<(), String> {
        if rows == 0 || cols == 0 {
            return Err(format!("rows and cols must be at least 1, got {rows}x{cols}"));
        }
        lock(&self.master)
            .resize(pty_size(rows, cols))
            .map_err(|e| format!("cannot resize the PTY: {e}"))?;
        lock(&self.tap).parser.set_size(nz(rows), nz(cols));
        Ok(())
    }

    /// (rows, cols) of the screen.
    pub(crate) fn size(&self) -> (u16, u16) {
        let (rows, cols) = lock(&self.tap).parser.screen().size();
        (rows.get(), cols.get())
    }

    pub(crate) fn screen(&self) -> ScreenResult {
        let tap = lock(&self.tap);
        let screen = tap.parser.screen();
        let (rows, cols) = screen.size();
        ScreenResult {
            rows: rows.get(),
            cols: cols.get(),
            lines: screen
                .rows(0, cols.get())
                .map(|l| l.trim_end_matches(' ').to_owned())
                .collect(),
            cursor: screen.cursor_position(),
        }
    }

    /// Starts streaming to a connection: first a frame repainting the current
    /// screen, then every live chunk.
    pub(crate) fn attach(&self, sink: Sink) {
        let mut tap = lock(&self.tap);
        let frame = Message::binary(repaint(tap.parser.screen()));
        if sink.queue.try_send(frame).is_ok() {
            tap.sink = Some(sink);
        }
    }

    /// Stops streaming; output keeps going to stdout only.
    pub(crate) fn detach(&self) {
        lock(&self.tap).sink = None;
    }

    /// Freezes (SIGSTOP) or thaws (SIGCONT) the CLI's process group: a
    /// conversation waiting for its budget keeps its CLI warm but still.
    pub(crate) fn freeze(&self, frozen: bool) -> Result<(), String> {
        if !self.alive() {
            return Err("the CLI has exited".into());
        }
        signal_group(self.pid, if frozen { libc::SIGSTOP } else { libc::SIGCONT });
        Ok(())
    }

    /// Hangs up the CLI (SIGHUP to its process group), gives it 2 s, then
    /// SIGKILLs it. Returns once it has exited, or after another 2 s.
    pub(crate) async fn terminate(&self) {
        if !self.alive() {
            return;
        }
        signal_group(self.pid, libc::SIGHUP);
        // A CLI frozen for its budget takes the hang-up once it runs again.
        signal_group(self.pid, libc::SIGCONT);
        if tokio::time::timeout(HANGUP_GRACE, self.wait()).await.is_err() {
            if self.alive() {
                signal_group(self.pid, libc::SIGKILL);
            }
            let _ = tokio::time::timeout(HANGUP_GRACE, self.wait()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repaint_reproduces_screen_and_cursor() {
        let mut source = vt100::Parser::new(nz(5), nz(20), 0);
        source.process(b"hello\r\n\x1b[1mbold\x1b[0m world\r\nab");
        let mut mirror = vt100::Parser::new(nz(5), nz(20), 0);
        mirror.process(b"stale junk everywhere\r\nmore junk");
        mirror.process(&repaint(source.screen()));
        assert_eq!(mirror.screen().contents(), source.screen().contents());
        assert_eq!(mirror.screen().cursor_position(), (2, 2));
    }

    #[test]
    fn feeding_a_full_sink_drops_it_and_signals_overflow() {
        let (queue, _rx) = mpsc::channel(1);
        let overflow = Arc::new(Notify::new());
        let mut tap = Tap {
            parser: vt100::Parser::new(nz(2), nz(10), 0),
            sink: Some(Sink { queue, overflow }),
        };
        tap.feed(b"a");
        assert!(tap.sink.is_some());
        tap.feed(b"b");
        assert!(tap.sink.is_none());
        assert_eq!(tap.parser.screen().contents(), "ab");
    }

    #[test]
    fn exit_codes_follow_the_shell_convention() {
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(libc::SIGKILL), 137);
        assert_eq!(exit_code(libc::SIGHUP), 129);
    }
}
