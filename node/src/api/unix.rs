//! The local Unix socket `<data_dir>/warren.sock` (mode 0600): newline-delimited
//! JSON-RPC. Reaching it is local admin authority, so connections start
//! authenticated.

use std::path::Path;
use std::sync::Arc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::App;
use super::conn::{Caller, Conn};
use tokio::io::AsyncReadExt;

pub fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let listener = UnixListener::bind(path)?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

pub async fn serve(app: Arc<App>, listener: UnixListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let Ok(permit) = app.connections.clone().try_acquire_owned() else {
            continue;
        };
        let app = app.clone();
        tokio::spawn(async move {
            serve_one(app, stream).await;
            drop(permit);
        });
    }
}

async fn serve_one(app: Arc<App>, stream: UnixStream) {
    let (read, mut write) = stream.into_split();
    let (conn, mut out_rx, mut kill_rx) = Conn::new(
        "unix",
        Caller::Local,
        app.limits.outbound_queue,
        app.limits.max_subscriptions,
    );
    let writer = tokio::spawn(async move {
        loop {
            tokio::select! {
                msg = out_rx.recv() => match msg {
                    Some(mut text) => {
                        text.push('\n');
                        if write.write_all(text.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                _ = kill_rx.changed() => return,
            }
        }
    });
    let limit = app.limits.max_frame_bytes;
    let mut reader = BufReader::new(read);
    let in_flight = Arc::new(Semaphore::new(app.limits.max_in_flight));
    let mut line = Vec::new();
    loop {
        line.clear();
        // Read at most limit+1 bytes of one line: an oversize line is answered
        // with an error and the rest of it skipped.
        let n = match (&mut reader).take(limit as u64 + 1).read_until(b'\n', &mut line).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => break,
        };
        let complete = line.last() == Some(&b'\n');
        if !complete && n > limit {
            let mut skipped = 0usize;
            loop {
                let buf = match reader.fill_buf().await {
                    Ok(b) if !b.is_empty() => b,
                    _ => break,
                };
                let (used, done) = match buf.iter().position(|b| *b == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (buf.len(), false),
                };
                reader.consume(used);
                skipped += used;
                if done {
                    break;
                }
            }
            if let Ok(t) = serde_json::to_string(&super::too_large(n + skipped, limit)) {
                conn.respond(t).await;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line).trim().to_string();
        if text.is_empty() {
            continue;
        }
        if !super::spawn_request(&app, &conn, &in_flight, text).await {
            break;
        }
    }
    conn.close_all();
    drop(conn);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
}
