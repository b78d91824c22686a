//! Loopback ports that lead out of a guest with no network: each
//! `PORT=PATH` pair of `WARREN_GUEST_FORWARD` (comma separated) listens on
//! `127.0.0.1:PORT` and carries every connection to the Unix socket at `PATH`
//! (the node serves those sockets: its guest endpoint and the egress proxy),
//! so the CLI and its tools use ordinary URLs (`WARREN_URL`, `HTTPS_PROXY`).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::net::{TcpListener, UnixStream};

pub const FORWARD: &str = "WARREN_GUEST_FORWARD";
/// Most connections carried at once per port.
const MAX_CONNECTIONS: usize = 256;

/// The pairs of `WARREN_GUEST_FORWARD`; `Err` names the bad one.
pub fn parse(spec: &str) -> Result<Vec<(u16, PathBuf)>, String> {
    spec.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|pair| {
            let (port, path) = pair
                .split_once('=')
                .ok_or_else(|| format!("{FORWARD}: {pair:?} is not PORT=PATH"))?;
            let port: u16 = port
                .trim()
                .parse()
                .ok()
                .filter(|p| *p != 0)
                .ok_or_else(|| format!("{FORWARD}: {port:?} is not a port (1..=65535)"))?;
            if !path.starts_with('/') {
                return Err(format!("{FORWARD}: {path:?} is not an absolute socket path"));
            }
            Ok((port, PathBuf::from(path)))
        })
        .collect()
}

/// Binds every port of the spec and serves them in the background.
pub async fn start(spec: &str) -> anyhow::Result<()> {
    for (port, path) in parse(spec).map_err(anyhow::Error::msg)? {
        let listener = TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("cannot listen on 127.0.0.1:{port} for {}", path.display()))?;
        tokio::spawn(serve(listener, Arc::new(path)));
    }
    Ok(())
}

async fn serve(listener: TcpListener, path: Arc<PathBuf>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let path = path.clone();
        tokio::spawn(async move {
            let _ = tcp.set_nodelay(true);
            match UnixStream::connect(&*path).await {
                Ok(out) => {
                    let _ = crate::relay::relay(&tcp, &out).await;
                }
                Err(e) => tracing::warn!("cannot reach {}: {e}", path.display()),
            }
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_parse_or_say_which_is_bad() {
        assert_eq!(
            parse("7170=/run/warren/node.sock,3128=/run/warren/egress.sock"),
            Ok(vec![
                (7170, PathBuf::from("/run/warren/node.sock")),
                (3128, PathBuf::from("/run/warren/egress.sock"))
            ])
        );
        assert_eq!(parse(""), Ok(vec![]));
        for (bad, want) in [
            ("7170", "PORT=PATH"),
            ("0=/x", "not a port"),
            ("x=/x", "not a port"),
            ("1=rel", "absolute"),
        ] {
            let e = parse(bad).expect_err(bad);
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
