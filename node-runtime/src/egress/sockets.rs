//! Each guest's two ways out, as Unix sockets in a directory of its own that
//! is mounted (read-only) at [`GUEST_DIR`] in its container: `node.sock`
//! reaches the node's guest endpoint (the guest link and the API its tools
//! call) and nothing else, `egress.sock` is its egress proxy. Which socket a
//! connection came in on says whose it is: nothing the guest sends can claim
//! another conversation.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::net::{TcpStream, UnixListener};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::{EgressGate, MAX_CONNECTIONS, Route};

/// Where a guest finds its sockets.
pub const GUEST_DIR: &str = "/run/warren";
pub const NODE_SOCKET: &str = "node.sock";
pub const EGRESS_SOCKET: &str = "egress.sock";
/// The guest's loopback port for its egress proxy (`HTTPS_PROXY`).
pub const PROXY_PORT: u16 = 3128;
/// The longest path a Unix socket address holds (`sun_path` less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// One opening of a conversation's sockets: its number and the tasks serving them.
type Run = (u64, Vec<JoinHandle<()>>);

/// The open socket directories of this node's guests.
pub struct Sockets {
    root: PathBuf,
    /// The node's guest endpoint, on the host's loopback.
    node: SocketAddr,
    gate: Arc<dyn EgressGate>,
    /// Per conversation: the run that opened them (see [`Sockets::close`]) and its tasks.
    open: Mutex<HashMap<String, Run>>,
    runs: std::sync::atomic::AtomicU64,
}

impl Sockets {
    pub fn new(root: PathBuf, node: SocketAddr, gate: Arc<dyn EgressGate>) -> Sockets {
        Sockets {
            root,
            node,
            gate,
            open: Mutex::new(HashMap::new()),
            runs: Default::default(),
        }
    }

    /// The host directory of a conversation's sockets.
    pub fn dir(&self, conversation: &str) -> PathBuf {
        self.root.join(conversation)
    }

    /// Opens (or reopens, after a restart) a conversation's sockets; returns
    /// their directory, to be mounted at [`GUEST_DIR`], and the run's number.
    pub fn open(&self, route: Route) -> Result<(PathBuf, u64), String> {
        // The directory stays (a running guest that outlived the node has it
        // mounted: a new one would be another inode); its sockets are new.
        self.stop(&route.conversation, None);
        let dir = self.dir(&route.conversation);
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        // Guests run as another user: they may enter it (it holds only sockets).
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("setting the mode of {}: {e}", dir.display()))?;
        let node = bind(&dir.join(NODE_SOCKET))?;
        let egress = bind(&dir.join(EGRESS_SOCKET))?;
        let to = self.node;
        let conversation = route.conversation.clone();
        let route = Arc::new(route);
        let gate = self.gate.clone();
        let tasks = vec![
            tokio::spawn(serve(node, move |guest| async move {
                if let Ok(up) = TcpStream::connect(to).await {
                    let _ = up.set_nodelay(true);
                    let _ = guest::relay::relay(&guest, &up).await;
                }
            })),
            tokio::spawn(serve(egress, move |guest| {
                let (route, gate) = (route.clone(), gate.clone());
                async move { super::handle(guest, &route, &*gate).await }
            })),
        ];
        let run = self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut open) = self.open.lock() {
            open.insert(conversation, (run, tasks));
        }
        Ok((dir, run))
    }

    /// Stops serving a conversation's sockets and removes their directory;
    /// with `run`, only if they are still that run's (a late close of an
    /// ended run leaves a newer launch alone).
    pub fn close(&self, conversation: &str, run: Option<u64>) {
        if self.stop(conversation, run) {
            let _ = std::fs::remove_dir_all(self.dir(conversation));
        }
    }

    /// Stops serving a conversation's sockets (those of `run`, when given);
    /// false when `run` no longer has them: a newer run has them, or one is
    /// being opened now (it took them over before it registered), or they
    /// were closed already. Only the run that holds them removes them.
    fn stop(&self, conversation: &str, run: Option<u64>) -> bool {
        let tasks = {
            let Ok(mut open) = self.open.lock() else { return false };
            if let Some(r) = run
                && open.get(conversation).is_none_or(|(now, _)| *now != r)
            {
                return false;
            }
            open.remove(conversation)
        };
        for t in tasks.into_iter().flat_map(|(_, t)| t) {
            t.abort();
        }
        true
    }
}

/// Binds a socket any user may connect to (a stale one is replaced).
fn bind(path: &Path) -> Result<UnixListener, String> {
    if path.as_os_str().len() > MAX_SOCKET_PATH {
        return Err(format!(
            "{} is over {MAX_SOCKET_PATH} bytes, too long for a Unix socket: choose a shorter data_dir",
            path.display()
        ));
    }
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path).map_err(|e| format!("binding {}: {e}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))
        .map_err(|e| format!("setting the mode of {}: {e}", path.display()))?;
    Ok(listener)
}

/// Accepts connections for as long as the task lives, at most
/// [`MAX_CONNECTIONS`] at once (one over it is closed at once).
async fn serve<F, Fut>(listener: UnixListener, each: F)
where
    F: Fn(tokio::net::UnixStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            return;
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            tracing::warn!("a guest is over {MAX_CONNECTIONS} connections at once: one refused");
            continue;
        };
        let fut = each(stream);
        tokio::spawn(async move {
            fut.await;
            drop(permit);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::future::BoxFuture;

    struct NoGrants;
    impl EgressGate for NoGrants {
        fn grants(&self, _agent: &str) -> BoxFuture<'_, Vec<String>> {
            Box::pin(async { vec![] })
        }
        fn record(&self, _note: super::super::EgressNote) {}
    }

    fn route() -> Route {
        Route {
            conversation: "c-1".into(),
            agent: "a".into(),
            model: vec![],
        }
    }

    #[tokio::test]
    async fn only_the_run_that_holds_the_sockets_removes_them() {
        let root = tempfile::tempdir().expect("dir");
        let sockets = Sockets::new(
            root.path().to_path_buf(),
            "127.0.0.1:9".parse().expect("addr"),
            Arc::new(NoGrants),
        );
        let (dir, first) = sockets.open(route()).expect("open");
        let (_, second) = sockets.open(route()).expect("reopen");
        assert_ne!(first, second);
        // The first run's late close leaves the second run's sockets alone.
        sockets.close("c-1", Some(first));
        assert!(dir.join(NODE_SOCKET).exists() && dir.join(EGRESS_SOCKET).exists());
        // So does a close of a run that was taken over before it registered
        // (nothing registered for it): the new opening's directory stays.
        sockets.stop("c-1", None);
        sockets.close("c-1", Some(second));
        assert!(dir.exists(), "a late close removed a directory it no longer holds");
        // The holder's close removes them.
        let (_, third) = sockets.open(route()).expect("open again");
        sockets.close("c-1", Some(third));
        assert!(!dir.exists());
        // An unconditional close (a launch that failed) always removes them.
        let (dir, _) = sockets.open(route()).expect("open");
        sockets.close("c-1", None);
        assert!(!dir.exists());
    }
}
