//! Terminal IO at the edge: raw mode, window size and the stdin reader thread.

use std::io;
use std::sync::mpsc::SyncSender;
use std::time::Instant;

/// Size used when the terminal cannot tell us: 24 rows by 80 columns.
pub(crate) const FALLBACK_SIZE: (usize, usize) = (24, 80);

/// Puts stdin in raw mode (when it is a terminal) and restores it when dropped.
pub(crate) struct RawMode {
    saved: Option<libc::termios>,
}

impl RawMode {
    /// Switches stdin to raw mode if it is a tty; otherwise does nothing.
    pub(crate) fn enable() -> Self {
        // SAFETY: isatty/tcgetattr/tcsetattr only read or write the termios struct we own.
        unsafe {
            if libc::isatty(libc::STDIN_FILENO) != 1 {
                return Self { saved: None };
            }
            let mut saved: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut saved) != 0 {
                return Self { saved: None };
            }
            let mut raw = saved;
            libc::cfmakeraw(&mut raw);
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &raw) != 0 {
                return Self { saved: None };
            }
            Self { saved: Some(saved) }
        }
    }

    /// Restores the saved terminal settings (once).
    pub(crate) fn restore(&mut self) {
        if let Some(saved) = self.saved.take() {
            // SAFETY: restoring settings previously read from the same fd.
            unsafe {
                libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &saved);
            }
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        self.restore();
    }
}

/// The terminal size as (rows, columns), from stdout or stdin, else [`FALLBACK_SIZE`].
pub(crate) fn window_size() -> (usize, usize) {
    for fd in [libc::STDOUT_FILENO, libc::STDIN_FILENO] {
        // SAFETY: TIOCGWINSZ fills the winsize struct we pass.
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
        if ok && ws.ws_row > 0 && ws.ws_col > 0 {
            return (usize::from(ws.ws_row), usize::from(ws.ws_col));
        }
    }
    FALLBACK_SIZE
}

/// What the stdin reader thread reports.
#[derive(Debug)]
pub(crate) enum Input {
    Data(Instant, Vec<u8>),
    Eof,
    /// A read failed (e.g. EIO once the PTY master is closed).
    Error,
}

/// Starts a thread that reads stdin and forwards each chunk until EOF or an error.
pub(crate) fn spawn_reader(tx: SyncSender<Input>) -> io::Result<()> {
    std::thread::Builder::new()
        .name("fake-cli-stdin".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                // SAFETY: reading into a buffer we own, with its exact length.
                let n = unsafe { libc::read(libc::STDIN_FILENO, buf.as_mut_ptr().cast::<libc::c_void>(), buf.len()) };
                let msg = match n {
                    0 => Input::Eof,
                    n if n > 0 => {
                        let len = usize::try_from(n).unwrap_or(0).min(buf.len());
                        Input::Data(Instant::now(), buf[..len].to_vec())
                    }
                    _ => {
                        if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                            continue;
                        }
                        Input::Error
                    }
                };
                let last = !matches!(msg, Input::Data(..));
                if tx.send(msg).is_err() || last {
                    return;
                }
            }
        })
        .map(|_| ())
}
