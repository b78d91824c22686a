//! The local runtime: the CLI runs as a child of the node under a real PTY
//! (portable-pty), and a vt100 parser keeps its screen. For development and
//! tests; production conversations run in Docker guests.

use super::signals::nz;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use console_api::Status;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use portable_pty::{ChildKiller, CommandBuilder, MasterPty, PtySize, native_pty_system};
use tokio::sync::{broadcast, watch};

use super::{Chunk, LaunchSpec, Runtime, RuntimeError, ScreenSnapshot, Session, StatusFn};

/// Raw output chunks buffered per subscriber before it counts as lagging.
const RAW_CAPACITY: usize = 1024;

pub struct LocalRuntime;

impl Runtime for LocalRuntime {
    fn name(&self) -> &'static str {
        "local"
    }

    fn launch(&self, spec: LaunchSpec) -> BoxFuture<'_, Result<Arc<dyn Session>, RuntimeError>> {
        async move {
            let session = tokio::task::spawn_blocking(move || LocalSession::spawn(spec))
                .await
                .map_err(|e| RuntimeError::Io(e.to_string()))??;
            Ok(session as Arc<dyn Session>)
        }
        .boxed()
    }
}

struct LocalSession {
    master: Mutex<Box<dyn MasterPty + Send>>,
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    parser: Arc<Mutex<super::signals::Terminal>>,
    killer: Mutex<Box<dyn ChildKiller + Send + Sync>>,
    alive: Arc<AtomicBool>,
    exited: watch::Receiver<bool>,
    exit_code: Arc<Mutex<Option<i32>>>,
    raw: broadcast::Sender<Chunk>,
    status: StatusFn,
    pid: Option<u32>,
}

fn size(rows: u16, cols: u16) -> PtySize {
    PtySize {
        rows,
        cols,
        pixel_width: 0,
        pixel_height: 0,
    }
}

impl LocalSession {
    fn spawn(spec: LaunchSpec) -> Result<Arc<LocalSession>, RuntimeError> {
        let program = spec.program.display().to_string();
        let fail = |reason: String| RuntimeError::Launch {
            program: program.clone(),
            reason,
        };
        let pair = native_pty_system()
            .openpty(size(spec.rows, spec.cols))
            .map_err(|e| fail(format!("openpty: {e}")))?;
        let mut cmd = CommandBuilder::new(&spec.program);
        cmd.args(&spec.args);
        cmd.cwd(&spec.cwd);
        cmd.env_clear();
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        let mut child = pair.slave.spawn_command(cmd).map_err(|e| RuntimeError::Setup {
            setting: format!("harnesses.{}.program", spec.harness),
            reason: format!("{}: cannot start {program}: {e}", spec.harness),
        })?;
        drop(pair.slave);
        let pid = child.process_id();
        let killer = child.clone_killer();
        let mut reader = pair.master.try_clone_reader().map_err(|e| fail(e.to_string()))?;
        let writer = pair.master.take_writer().map_err(|e| fail(e.to_string()))?;

        let parser = Arc::new(Mutex::new(super::signals::terminal(spec.rows, spec.cols)));
        let (raw, _) = broadcast::channel(RAW_CAPACITY);
        let alive = Arc::new(AtomicBool::new(true));
        let (exit_tx, exit_rx) = watch::channel(false);
        let exit_code = Arc::new(Mutex::new(None));
        // The reader says when it has read everything, so an exit is announced
        // with the CLI's last words on the screen.
        let (drained_tx, drained_rx) = std::sync::mpsc::sync_channel::<()>(1);

        // Reader thread: the PTY read is blocking.
        {
            let parser = parser.clone();
            let raw = raw.clone();
            std::thread::Builder::new()
                .name(format!("pty-read-{}", spec.conversation))
                .spawn(move || {
                    let mut buf = vec![0u8; 16 * 1024];
                    loop {
                        match reader.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => {
                                let chunk: Chunk = Arc::from(&buf[..n]);
                                if let Ok(mut p) = parser.lock() {
                                    p.process(&chunk);
                                }
                                let _ = raw.send(chunk);
                            }
                        }
                    }
                    let _ = drained_tx.try_send(());
                })
                .map_err(|e| fail(e.to_string()))?;
        }
        // Waiter thread: reaps the child and reports the exit.
        {
            let alive = alive.clone();
            let exit_code = exit_code.clone();
            std::thread::Builder::new()
                .name(format!("pty-wait-{}", spec.conversation))
                .spawn(move || {
                    let status = child.wait();
                    // A grandchild may hold the terminal open: wait for the
                    // reader only briefly.
                    let _ = drained_rx.recv_timeout(std::time::Duration::from_millis(500));
                    if let (Ok(status), Ok(mut code)) = (status, exit_code.lock()) {
                        *code = Some(status.exit_code() as i32);
                    }
                    alive.store(false, Ordering::SeqCst);
                    let _ = exit_tx.send(true);
                })
                .map_err(|e| fail(e.to_string()))?;
        }

        Ok(Arc::new(LocalSession {
            master: Mutex::new(pair.master),
            writer: Arc::new(Mutex::new(writer)),
            parser,
            killer: Mutex::new(killer),
            alive,
            exited: exit_rx,
            exit_code,
            raw,
            status: spec.status,
            pid,
        }))
    }
}

impl Session for LocalSession {
    fn write(&self, bytes: Vec<u8>) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let writer = self.writer.clone();
        let alive = self.alive.load(Ordering::SeqCst);
        async move {
            if !alive {
                return Err(RuntimeError::Exited);
            }
            // A PTY write can block when the CLI does not read: keep it off the runtime.
            tokio::task::spawn_blocking(move || {
                let mut w = writer.lock().map_err(|_| RuntimeError::Io("writer poisoned".into()))?;
                w.write_all(&bytes)
                    .and_then(|_| w.flush())
                    .map_err(|e| RuntimeError::Io(e.to_string()))
            })
            .await
            .map_err(|e| RuntimeError::Io(e.to_string()))?
        }
        .boxed()
    }

    fn resize(&self, rows: u16, cols: u16) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let result = (|| {
            let master = self
                .master
                .lock()
                .map_err(|_| RuntimeError::Io("pty poisoned".into()))?;
            master
                .resize(size(rows, cols))
                .map_err(|e| RuntimeError::Io(e.to_string()))?;
            if let Ok(mut p) = self.parser.lock() {
                p.set_size(nz(rows), nz(cols));
            }
            Ok(())
        })();
        async move { result }.boxed()
    }

    fn close(&self) -> BoxFuture<'_, ()> {
        async move {
            if let Ok(mut k) = self.killer.lock() {
                let _ = k.kill();
            }
            // A CLI frozen for its budget takes the hang-up once it runs again.
            let _ = signal_group(self.pid, libc::SIGCONT);
            let mut exited = self.exited.clone();
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), exited.wait_for(|e| *e)).await;
        }
        .boxed()
    }

    fn screen(&self) -> ScreenSnapshot {
        super::snapshot(&self.parser)
    }

    fn styled_screen(&self) -> ScreenSnapshot {
        super::styled_snapshot(&self.parser)
    }

    fn status(&self) -> Status {
        if !self.alive() {
            return Status::Exited;
        }
        (self.status)(&self.screen())
    }

    fn alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    fn exited(&self) -> watch::Receiver<bool> {
        self.exited.clone()
    }

    fn exit_code(&self) -> Option<i32> {
        self.exit_code.lock().ok().and_then(|c| *c)
    }

    fn subscribe(&self) -> broadcast::Receiver<Chunk> {
        self.raw.subscribe()
    }

    fn pid(&self) -> Option<u32> {
        self.pid
    }

    fn freeze(&self, frozen: bool) -> BoxFuture<'_, Result<(), RuntimeError>> {
        let result = if self.alive() {
            signal_group(self.pid, if frozen { libc::SIGSTOP } else { libc::SIGCONT })
        } else {
            Err(RuntimeError::Exited)
        };
        async move { result }.boxed()
    }
}

/// Sends `signal` to the CLI's process group (portable-pty makes it a
/// session leader, so its group id is its pid).
fn signal_group(pid: Option<u32>, signal: libc::c_int) -> Result<(), RuntimeError> {
    let pid = pid
        .and_then(|p| libc::pid_t::try_from(p).ok())
        .ok_or_else(|| RuntimeError::Io("the CLI has no process id".into()))?;
    // SAFETY: a plain kill(2); a stale group only yields ESRCH.
    let rc = unsafe { libc::kill(-pid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(RuntimeError::Io(std::io::Error::last_os_error().to_string()))
    }
}
