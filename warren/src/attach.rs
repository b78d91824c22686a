//! `warren conv attach`: an interactive terminal on a conversation. The local
//! terminal goes raw; keystrokes go out with `sendKeys`, the PTY's raw bytes
//! come back through `terminal.subscribe`. A detach key (default Ctrl-]) ends it.

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use base64::Engine;
use console_api::methods as m;
use serde_json::json;
use tokio::sync::mpsc;

use crate::client::Client;

/// `ctrl-X` -> the control byte of X.
pub fn parse_detach_key(spec: &str) -> anyhow::Result<u8> {
    let lower = spec.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("ctrl-") else {
        bail!("detach key {spec:?} must look like ctrl-] or ctrl-q");
    };
    let mut chars = rest.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if ('@'..='_').contains(&c.to_ascii_uppercase()) => Ok(c.to_ascii_uppercase() as u8 - b'@'),
        _ => bail!("detach key {spec:?} must be ctrl- followed by one of a-z [ \\ ] ^ _"),
    }
}

struct RawMode {
    saved: libc::termios,
}

impl RawMode {
    fn enable() -> anyhow::Result<RawMode> {
        // SAFETY: tcgetattr/tcsetattr on stdin with a valid termios struct.
        unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(0, &mut t) != 0 {
                bail!("stdin is not a terminal: attach needs an interactive terminal");
            }
            let saved = t;
            libc::cfmakeraw(&mut t);
            if libc::tcsetattr(0, libc::TCSANOW, &t) != 0 {
                bail!("cannot put the terminal in raw mode");
            }
            Ok(RawMode { saved })
        }
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores the attributes read in `enable`.
        unsafe {
            libc::tcsetattr(0, libc::TCSANOW, &self.saved);
        }
    }
}

fn term_size() -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ fills a winsize struct.
    unsafe {
        let mut ws: libc::winsize = std::mem::zeroed();
        if libc::ioctl(1, libc::TIOCGWINSZ, &mut ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0 {
            Some((ws.ws_row, ws.ws_col))
        } else {
            None
        }
    }
}

pub async fn run(mut client: Client, conversation: &str, detach: u8) -> anyhow::Result<()> {
    let screen = client
        .call(m::CONVERSATION_SCREEN, json!({ "conversation": conversation }))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some((rows, cols)) = term_size() {
        let _ = client
            .call(
                m::CONVERSATION_RESIZE,
                json!({ "conversation": conversation, "rows": rows, "cols": cols }),
            )
            .await;
    }
    client
        .call(m::TERMINAL_SUBSCRIBE, json!({ "conversation": conversation }))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let raw = RawMode::enable()?;
    let mut stdout = std::io::stdout();
    // Paint the current screen first; the live bytes continue from here.
    let lines: Vec<String> = screen
        .get("lines")
        .and_then(|l| l.as_array())
        .map(|a| a.iter().map(|x| x.as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default();
    write!(stdout, "\x1b[H\x1b[2J{}", lines.join("\r\n")).context("writing to the terminal")?;
    stdout.flush()?;

    let (keys_tx, mut keys_rx) = mpsc::channel::<Vec<u8>>(64);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 1024];
        loop {
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if keys_tx.blocking_send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
            }
        }
    });

    let b64 = base64::engine::general_purpose::STANDARD;
    let result: anyhow::Result<()> = loop {
        tokio::select! {
            keys = keys_rx.recv() => {
                let Some(mut keys) = keys else { break Ok(()) };
                let stop = keys.iter().position(|b| *b == detach);
                if let Some(i) = stop {
                    keys.truncate(i);
                }
                if !keys.is_empty() {
                    let text = String::from_utf8_lossy(&keys).to_string();
                    if let Err(e) = client.call(m::CONVERSATION_SEND_KEYS, json!({ "conversation": conversation, "keys": text })).await {
                        break Err(anyhow::anyhow!("{e}"));
                    }
                }
                if stop.is_some() {
                    break Ok(());
                }
            }
            note = client.next_notification(Duration::from_millis(200)) => {
                match note {
                    Ok(Some(n)) if n.method == m::NOTIFY_TERMINAL_DATA => {
                        if let Some(data) = n.params.get("data").and_then(|d| d.as_str())
                            && let Ok(bytes) = b64.decode(data)
                        {
                            stdout.write_all(&bytes)?;
                            stdout.flush()?;
                        }
                    }
                    Ok(_) => {}
                    Err(e) => break Err(e),
                }
            }
        }
    };
    drop(raw);
    println!("\r\n[detached from {conversation}]");
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detach_keys() {
        assert_eq!(parse_detach_key("ctrl-]").expect("ok"), 0x1d);
        assert_eq!(parse_detach_key("Ctrl-Q").expect("ok"), 0x11);
        assert!(parse_detach_key("q").is_err());
        assert!(parse_detach_key("ctrl-qq").is_err());
    }
}
