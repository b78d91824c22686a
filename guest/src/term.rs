//! The guest's own terminal, when `docker run -it` gives it one: raw mode,
//! keystrokes forwarded to the PTY, window size followed through SIGWINCH.

use std::io::Read;
use std::sync::Arc;

use tokio::signal::unix::{SignalKind, signal};

use crate::pty::Pty;

pub(crate) fn stdin_is_tty() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDIN_FILENO) == 1 }
}

/// (rows, cols) of the terminal on stdin, if it reports a usable size.
pub(crate) fn terminal_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills a winsize struct.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        (libc::ioctl(libc::STDIN_FILENO, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
            .then_some((ws.ws_row, ws.ws_col))
    }
}

/// Keeps stdin in raw mode; restores the saved attributes when dropped.
pub(crate) struct RawMode {
    saved: libc::termios,
}

impl RawMode {
    pub(crate) fn enable() -> std::io::Result<RawMode> {
        // SAFETY: tcgetattr/tcsetattr on stdin with a valid termios struct.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(libc::STDIN_FILENO, &mut t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            let saved = t;
            libc::cfmakeraw(&mut t);
            if libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &t) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(RawMode { saved })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `enable`.
        unsafe {
            libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, &self.saved);
        }
    }
}

/// Copies stdin to the PTY on a thread of its own until stdin ends.
pub(crate) fn forward_stdin(pty: Arc<Pty>) -> std::io::Result<()> {
    std::thread::Builder::new().name("stdin".into()).spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 4096];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if pty.write_blocking(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
    })?;
    Ok(())
}

/// Resizes the PTY to the terminal's size on every SIGWINCH.
pub(crate) async fn follow_window_size(pty: Arc<Pty>) {
    let Ok(mut winch) = signal(SignalKind::window_change()) else {
        return;
    };
    // Catch up with a resize that landed before the handler was installed.
    loop {
        if let Some((rows, cols)) = terminal_size() {
            let _ = pty.resize(rows, cols);
        }
        if winch.recv().await.is_none() {
            return;
        }
    }
}
