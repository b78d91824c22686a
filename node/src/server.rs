//! Running a node: the data directory (lock, identity, root key, admin token),
//! the store, start-up recovery, the WebSocket and Unix listeners, and a clean
//! stop that pauses every live conversation.

use std::future::Future;
use std::net::SocketAddr;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use axum::serve::ListenerExt;

use crate::api::{self, App, NodeIdentity};
use crate::config::{Config, RuntimeKind};
use crate::service::{CoreConfig, Node};
use node_runtime::harness;
use node_runtime::runtime::Runtime;
use node_runtime::runtime::docker;
use node_runtime::runtime::guest_link::{GuestNote, GuestRegistry};
use node_runtime::runtime::local::LocalRuntime;
use node_store::store::Store;
use node_store::util::{new_id, now_ms};

/// What a started node tells its caller.
#[derive(Debug, Clone)]
pub struct Started {
    pub node_id: String,
    pub addr: SocketAddr,
    pub endpoint: String,
    pub token_path: PathBuf,
    pub socket_path: PathBuf,
    pub data_dir: PathBuf,
    /// With TLS: the certificate's SHA-256 fingerprint and its file.
    pub tls: Option<(String, PathBuf)>,
}

/// Files of the data directory.
pub fn db_path(data_dir: &Path) -> PathBuf {
    data_dir.join("warren.db")
}
pub fn token_path(data_dir: &Path) -> PathBuf {
    data_dir.join("admin.token")
}
pub fn endpoint_path(data_dir: &Path) -> PathBuf {
    data_dir.join("node.json")
}

/// Takes the data directory's lock: one node per data dir. The lock is held
/// as long as the returned file is open.
pub fn lock_data_dir(data_dir: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::create_dir_all(data_dir).with_context(|| format!("creating data dir {}", data_dir.display()))?;
    let _ = std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700));
    let path = data_dir.join("node.lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    use std::os::fd::AsRawFd;
    // SAFETY: flock on a valid open descriptor has no memory effects.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        bail!(
            "another warren node is using the data dir {} (its lock {} is held)",
            data_dir.display(),
            path.display()
        );
    }
    Ok(file)
}

fn write_private(path: &Path, content: &str) -> anyhow::Result<()> {
    node_store::util::write_private(path, content).with_context(|| format!("writing {}", path.display()))
}

fn read_or_create(path: &Path, make: impl FnOnce() -> anyhow::Result<String>) -> anyhow::Result<String> {
    match std::fs::read_to_string(path) {
        Ok(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Ok(_) | Err(_) if !path.exists() || std::fs::metadata(path).map(|m| m.len() == 0).unwrap_or(true) => {
            let v = make()?;
            write_private(path, &format!("{v}\n"))?;
            Ok(v)
        }
        Ok(_) => bail!("{} is empty", path.display()),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Runs a node until `shutdown` resolves. `ready` is called once it listens.
pub async fn run(
    cfg: Config,
    self_exe: PathBuf,
    ready: impl FnOnce(&Started),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let data_dir = cfg.data_dir.clone();
    let _lock = lock_data_dir(&data_dir)?;

    let node_id = read_or_create(&data_dir.join("node.id"), || Ok(new_id("n-")))?;
    let root_hex = read_or_create(&data_dir.join("root.key"), || {
        Ok(capabilities::RootKey::generate().private_hex())
    })?;
    let root = capabilities::RootKey::from_private_hex(&root_hex)
        .with_context(|| format!("reading {}", data_dir.join("root.key").display()))?;
    let token_file = token_path(&data_dir);
    let token_ok = std::fs::read_to_string(&token_file).ok().is_some_and(|t| {
        capabilities::Verifier::new(vec![root.public()])
            .verify(t.trim())
            .is_ok()
    });
    if !token_ok {
        let token = root.mint_admin(&node_id)?;
        write_private(&token_file, &format!("{token}\n"))?;
    }
    // The admin token's ids: its holder is this node's local admin.
    let admin_token_ids = std::fs::read_to_string(&token_file)
        .ok()
        .and_then(|t| capabilities::inspect_unverified(t.trim()).ok())
        .map(|i| i.revocation_ids)
        .unwrap_or_default();

    cfg.supervision
        .validate()
        .map_err(|e| anyhow::anyhow!("[supervision] in the config: {e}"))?;
    let (egress, egress_notes) = crate::egress::Gate::new();
    let (runtime, guests): (Arc<dyn Runtime>, Option<GuestSide>) = match cfg.runtime {
        RuntimeKind::Local => (Arc::new(LocalRuntime), None),
        RuntimeKind::Docker => {
            let docker = docker::connect()
                .await
                .map_err(|e| anyhow::anyhow!("--runtime docker: {e}"))?;
            docker_runtime(docker, &node_id, &root_hex, &cfg, &self_exe, egress.clone()).await?
        }
        RuntimeKind::Auto => match docker::connect().await {
            Ok(d) => docker_runtime(d, &node_id, &root_hex, &cfg, &self_exe, egress.clone()).await?,
            Err(e) => {
                eprintln!(
                    "warning: {e}; conversations run as local processes (the local PTY runtime), not in Docker guests"
                );
                (Arc::new(LocalRuntime), None)
            }
        },
    };

    if guests.is_none() {
        eprintln!(
            "note: the local runtime does not isolate: each CLI runs as a process of this node's user, with its files and its network (no egress allow-list); the Docker runtime runs each conversation in a guest"
        );
    }
    let store = Store::open(&db_path(&data_dir))
        .await
        .with_context(|| format!("opening the store {}", db_path(&data_dir).display()))?;
    let root = Arc::new(root);
    let mut roots = vec![root.public()];
    for hex_key in &cfg.trusted_roots {
        roots.push(
            capabilities::public_key_from_hex(hex_key)
                .with_context(|| format!("trusted_roots: {hex_key:?} is not an ed25519 public key in hex"))?,
        );
    }
    crate::tools::check_owner_tools(&cfg.tools).map_err(|e| anyhow::anyhow!("warren.toml {e}"))?;
    if !(cfg.mail.rate_per_sec >= 0.0 && cfg.mail.rate_per_sec.is_finite()) || cfg.mail.burst == 0 {
        anyhow::bail!("warren.toml [mail]: rate_per_sec must be 0 or more and burst at least 1");
    }
    cfg.pricing
        .validate()
        .map_err(|e| anyhow::anyhow!("warren.toml [pricing]: {e}"))?;
    cfg.push
        .validate()
        .map_err(|e| anyhow::anyhow!("warren.toml [push]: {e}"))?;
    let name = cfg.name.clone().unwrap_or_else(host_name);
    // Members' routed requests wait here for the home side (built below,
    // once the dispatcher it answers them through exists).
    let (home_link, asked) = tokio::sync::mpsc::channel(crate::fleet::ASKED_QUEUE);
    let fleet_runtime = crate::fleet::FleetRuntime::open(&data_dir, cfg.fleet.clone(), &node_id, name, home_link)
        .context("setting up the node's fleet identity")?;
    let (node, startup) = Node::open(
        CoreConfig {
            node_id: node_id.clone(),
            data_dir: data_dir.clone(),
            self_exe,
            rows: cfg.rows,
            cols: cfg.cols,
            send_queue: cfg.limits.send_queue,
            send_idle_timeout: Duration::from_millis(cfg.limits.send_idle_timeout_ms),
            send_ack_timeout: Duration::from_millis(cfg.limits.send_ack_timeout_ms),
            instance_token_ttl: Duration::from_secs(cfg.instance_token_ttl_secs.max(2)),
            supervision: cfg.supervision.clone(),
            harnesses: cfg.harnesses.clone(),
            readopt_grace: Duration::from_secs(cfg.docker.readopt_grace_secs),
            tools: cfg.tools.clone(),
            mail_rate: mailbox::RateLimit {
                per_sec: cfg.mail.rate_per_sec,
                burst: cfg.mail.burst,
            },
            budget_max_wait: Duration::from_secs(cfg.budget.max_wait_secs),
            worktrees: cfg
                .workspaces
                .root
                .clone()
                .unwrap_or_else(|| data_dir.join("worktrees")),
        },
        store,
        runtime.clone(),
        root.clone(),
    )
    .await
    .map_err(|e| anyhow::anyhow!("recovering the catalog: {e}"))?;
    // Every agent's secrets are redacted from here on, before any CLI runs.
    crate::secrets::load_redaction(&data_dir, &cfg.tools, node.store().redaction());
    egress.bind(&node);
    let egress_task = tokio::spawn(crate::egress::record(node.clone(), egress_notes));
    let fleet = crate::fleet::Fleet::new(node.clone(), fleet_runtime);

    let listener = tokio::net::TcpListener::bind(&cfg.listen)
        .await
        .with_context(|| format!("binding {}", cfg.listen))?;
    let addr = listener.local_addr()?;
    let mut tls_names = cfg.console.hosts.clone();
    tls_names.extend(cfg.name.clone());
    let tls = api::tls::load(&cfg.tls, &data_dir, &tls_names)?;
    let scheme = if tls.is_some() { "wss" } else { "ws" };
    let endpoint = format!("{scheme}://{addr}{}", console_api::WS_PATH);
    node.set_endpoint(endpoint.clone());
    if let Some(t) = &tls {
        node.set_tls_cert(t.cert_path.clone());
    }
    fleet.load_known_peers();
    let socket_path = data_dir.join("warren.sock");
    let unix = api::unix::bind(&socket_path).with_context(|| format!("binding {}", socket_path.display()))?;

    let started_at = now_ms();
    let verifier = Arc::new(capabilities::Verifier::new(roots));
    fleet.set_verifier(verifier.clone()).await;
    let spend = crate::spend::Spend::new(node.clone(), cfg.pricing.clone());
    spend.start().await;
    let mail = crate::mail::Mail::new(node.clone(), fleet.clone());
    mail.start().await;
    let supervisor = crate::supervise::Supervisor::new(node.clone(), mail.clone(), spend.clone());
    let conversations = crate::conversations::Conversations::new(node.clone(), supervisor.clone(), spend.clone());
    conversations.start(startup);
    let monitors = crate::monitors::Monitors::new(node.clone(), conversations.clone(), fleet.clone());
    let tasks = crate::work::Tasks::new(node.clone(), conversations.clone(), supervisor.clone());
    let push = crate::push::Push::new(
        node.clone(),
        cfg.push.clone(),
        &data_dir,
        verifier.clone(),
        fleet.name().to_string(),
    )?;
    let app = Arc::new(App {
        node: node.clone(),
        conversations: conversations.clone(),
        supervisor: supervisor.clone(),
        monitors: monitors.clone(),
        tasks: tasks.clone(),
        mail,
        spend,
        fleet: fleet.clone(),
        secrets: crate::secrets::Secrets::new(node.clone()),
        egress: egress.clone(),
        tools: crate::tools::Tools::new(node.clone()),
        identity: NodeIdentity {
            node_id: node_id.clone(),
            endpoint: endpoint.clone(),
            started_at,
            root_public_key: root.public_hex(),
        },
        verifier: verifier.clone(),
        limits: cfg.limits.clone(),
        connections: Arc::new(tokio::sync::Semaphore::new(cfg.limits.max_connections)),
        anonymous: api::doors::AnonymousPool::new(
            cfg.limits.max_anonymous_connections,
            cfg.limits.max_anonymous_per_source,
            Duration::from_millis(cfg.limits.auth_deadline_ms),
        ),
        guests: guests.as_ref().map(|g| g.registry.clone()),
        pairing: Default::default(),
        router: api::routing::Router::new(fleet.clone(), supervisor.clone(), monitors.clone(), admin_token_ids),
        push: push.clone(),
    });
    // Calls members forward here run through this same API.
    let home = api::routing::Home::new(
        Arc::new(api::ApiDispatch(app.clone())),
        node.clone(),
        supervisor.clone(),
        app.mail.clone(),
        verifier.clone(),
        cfg.limits.clone(),
    );
    let home_task = tokio::spawn(home.serve(asked));
    if let Err(e) = fleet.start_fleet().await {
        eprintln!("warning: the fabric did not start: {e}");
    }
    if let Some((fleet_id, at)) = node.catalog.lock().await.fleet.left.clone() {
        eprintln!(
            "note: the owner of fleet {fleet_id} removed this node (at {at} ms): it is in no fleet; its agents are kept; `warren fleet join CODE` joins another"
        );
    }
    monitors.start_monitors().await;
    tasks.start_tasks().await;
    push.start(Arc::new(api::PushFollow(app.clone()))).await;
    write_private(
        &endpoint_path(&data_dir),
        &serde_json::json!({
            "node_id": node_id,
            "endpoint": endpoint,
            "pid": std::process::id(),
            "started_at": started_at,
        })
        .to_string(),
    )?;

    let unix_task = tokio::spawn(api::unix::serve(app.clone(), unix));
    let mut side_tasks = vec![];
    // The harnesses' setup, checked where the user makes it: one warning
    // line per problem (a Docker node checks its images in the background).
    for p in node.harness_problems() {
        warn_setup(&p);
    }
    side_tasks.push(tokio::spawn(try_model_endpoints(cfg.harnesses.clone())));
    if let Some(g) = &guests {
        let (runtime, harnesses) = (g.runtime.clone(), cfg.harnesses.clone());
        side_tasks.push(tokio::spawn(async move {
            // The fake harness needs no setup, so it is what a first try uses.
            let mut names: Vec<String> = harnesses
                .keys()
                .filter(|h| harness::adapter(h).is_ok())
                .cloned()
                .collect();
            if !names.iter().any(|h| h == "fake") {
                names.insert(0, "fake".into());
            }
            for note in runtime.first_run_notes(&names).await {
                eprintln!("note: {note} (`warren images build HARNESS` does it ahead)");
            }
            for p in runtime.setup_problems(&harnesses).await {
                warn_setup(&p);
            }
        }));
    }
    if let Some(g) = guests {
        // Guests name the gateway address they were given, and send no Origin.
        let policy = crate::console::guard::Policy::new(g.listener.local_addr()?, &[], &[]);
        let router = api::ws::router(app.clone(), policy);
        side_tasks.push(tokio::spawn(async move {
            let service = router.into_make_service_with_connect_info::<SocketAddr>();
            if let Err(e) = axum::serve(g.listener.tap_io(no_delay), service).await {
                tracing::error!(error = %e, "the guest listener stopped");
            }
        }));
        side_tasks.push(tokio::spawn(record_guest_notes(
            node.clone(),
            g.registry.clone(),
            g.notes,
        )));
        let every = Duration::from_secs(cfg.docker.reap_interval_secs.max(1));
        side_tasks.push(tokio::spawn(reap_orphans(node.clone(), runtime.clone(), every)));
    }
    ready(&Started {
        node_id,
        addr,
        endpoint,
        token_path: token_file,
        socket_path: socket_path.clone(),
        data_dir: data_dir.clone(),
        tls: tls.as_ref().map(|t| (t.fingerprint.clone(), t.cert_path.clone())),
    });
    let mut named = cfg.console.hosts.clone();
    named.extend(
        fleet
            .published_endpoint()
            .as_deref()
            .and_then(crate::console::authority_of),
    );
    let policy = crate::console::guard::Policy::new(addr, &named, &cfg.console.origins);
    let router = api::ws::router(app, policy);
    match &tls {
        Some(identity) => api::tls::serve(listener, identity, router, shutdown)
            .await
            .context("serving the API over TLS")?,
        // Small frames go out at once: without TCP_NODELAY a notification
        // right after an answer waits for the client's delayed ACK (~40 ms
        // on every keystroke's echo).
        None => axum::serve(
            listener.tap_io(no_delay),
            router.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown)
        .await
        .context("serving the API")?,
    }

    tracing::info!("stopping: pausing live conversations");
    conversations.pause_all("node stopped").await;
    unix_task.abort();
    home_task.abort();
    egress_task.abort();
    for t in side_tasks {
        t.abort();
    }
    let _ = std::fs::remove_file(&socket_path);
    Ok(())
}

/// Sets TCP_NODELAY on an accepted connection (see `run`).
fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!(error = %e, "TCP_NODELAY could not be set");
    }
}

/// The guest side of a Docker node: the listener on its network's gateway,
/// the registry of launches, and refused guests for the audit log.
struct GuestSide {
    listener: tokio::net::TcpListener,
    registry: Arc<GuestRegistry>,
    notes: tokio::sync::mpsc::Receiver<GuestNote>,
    runtime: Arc<docker::DockerRuntime>,
}

/// One warning line (on stderr, beside the log) for a problem in a
/// harness's setup (see `harness::setup`).
fn warn_setup(p: &harness::setup::SetupProblem) {
    eprintln!("warning: {}", p.message);
}

/// How long a model endpoint has to accept a connection at start.
const ENDPOINT_TRY: Duration = Duration::from_secs(3);

/// Tries each configured model endpoint once (a TCP connection, nothing
/// sent): one warning per endpoint that refuses or does not answer, naming
/// the setting. The endpoints are the operator's own configuration, the
/// same the CLIs are given.
async fn try_model_endpoints(harnesses: std::collections::BTreeMap<String, harness::HarnessSettings>) {
    for (setting, host, port) in harness::setup::configured_endpoints(&harnesses) {
        let why = match tokio::time::timeout(ENDPOINT_TRY, tokio::net::TcpStream::connect((host.as_str(), port))).await
        {
            Ok(Ok(_)) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!("no answer in {} s", ENDPOINT_TRY.as_secs()),
        };
        let (section, var) = setting.rsplit_once('.').unwrap_or((setting.as_str(), ""));
        let section = section.strip_prefix("harnesses.").unwrap_or(section);
        warn_setup(&harness::setup::SetupProblem {
            message: format!(
                "`[harnesses.{section}] {var}`: the model endpoint {host}:{port} did not accept a connection ({why}); the CLI will not reach its model"
            ),
            setting,
        });
    }
}

/// The Docker runtime: a listener on the host's loopback that each guest
/// reaches through its own socket (guests have no network; nothing listens
/// inside a container), the egress proxies, and the registry that pins the
/// node's identity (its root key) for guests.
async fn docker_runtime(
    docker: bollard::Docker,
    node_id: &str,
    root_hex: &str,
    cfg: &Config,
    self_exe: &Path,
    egress: Arc<crate::egress::Gate>,
) -> anyhow::Result<(Arc<dyn Runtime>, Option<GuestSide>)> {
    let gateway = "127.0.0.1";
    // The same port as the last run when it is free: guests that outlived a
    // restart redial the address they were given.
    let port_file = cfg.data_dir.join("guest.port");
    let last_port: u16 = std::fs::read_to_string(&port_file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    let listener = match tokio::net::TcpListener::bind((gateway, last_port)).await {
        Ok(l) => l,
        Err(e) if last_port != 0 => {
            tracing::warn!(error = %e, last_port, "the guest port of the last run is taken: guests of that run cannot come back");
            tokio::net::TcpListener::bind((gateway, 0)).await?
        }
        Err(e) => {
            return Err(e).with_context(|| format!("binding the guest listener on {gateway}"));
        }
    };
    write_private(&port_file, &format!("{}\n", listener.local_addr()?.port()))?;
    let node_addr = listener.local_addr()?;
    let seed: [u8; 32] = hex::decode(root_hex)
        .ok()
        .and_then(|b| b.try_into().ok())
        .context("root.key is not a 32-byte ed25519 key in hex")?;
    let (note_tx, notes) = tokio::sync::mpsc::channel(256);
    let registry = Arc::new(GuestRegistry::new(
        guest::ed25519_dalek::SigningKey::from_bytes(&seed),
        note_tx,
        Duration::from_secs(cfg.limits.guest_refusal_record_secs.max(1)),
    ));
    tracing::info!(%node_addr, "docker runtime: guests reach the node here, through their sockets");
    let sockets = Arc::new(node_runtime::egress::sockets::Sockets::new(
        cfg.data_dir.join("guests"),
        node_addr,
        egress,
    ));
    let runtime = Arc::new(docker::DockerRuntime::new(
        docker,
        node_id.to_string(),
        node_addr,
        sockets,
        registry.clone(),
        cfg.docker.clone(),
        self_exe.to_path_buf(),
    ));
    Ok((
        runtime.clone(),
        Some(GuestSide {
            listener,
            registry,
            notes,
            runtime,
        }),
    ))
}

/// Refused guests (a replayed or expired launch token, an ill-formed hello,
/// an address over its rate) go to the audit log, counted per address and
/// window (the first of a quiet address at once, the rest each second once
/// their window has passed); attached guests' key hashes to the catalog (for
/// re-adoption).
async fn record_guest_notes(
    node: Arc<Node>,
    registry: Arc<GuestRegistry>,
    mut rx: tokio::sync::mpsc::Receiver<GuestNote>,
) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            note = rx.recv() => match note {
                Some(GuestNote::Refused(r)) => node.record_guest_refusals(&r).await,
                Some(GuestNote::Attached { conversation, key_hash }) => {
                    node.record_guest_attached(&conversation, key_hash).await
                }
                None => return,
            },
            _ = tick.tick() => {
                for r in registry.due_refusals() {
                    node.record_guest_refusals(&r).await;
                }
            }
        }
    }
}

/// Reaps containers of this node whose conversation is neither live nor
/// recorded as active (a guest being re-adopted): at start-up and every
/// `every` (`[docker] reap_interval_secs`).
async fn reap_orphans(node: Arc<Node>, runtime: Arc<dyn Runtime>, every: Duration) {
    loop {
        let live = node.owned_ids().await;
        for (container, conversation) in runtime.reap(&live).await {
            let reason = format!("container {container} stopped and removed: its conversation is not live");
            node.record_guest_event(&conversation, "reaped", &reason).await;
        }
        tokio::time::sleep(every).await;
    }
}

/// `warren admin rebuild`: with the node stopped, refolds the transcript
/// projection from the event log and folds the catalog, and reports both.
pub async fn rebuild(data_dir: &Path) -> anyhow::Result<serde_json::Value> {
    let _lock = lock_data_dir(data_dir)?;
    let db = db_path(data_dir);
    if !db.exists() {
        bail!("no store at {}", db.display());
    }
    let transcript_events = Store::rebuild_transcript(&db).await?;
    let store = Store::open(&db).await?;
    let (events, _) = store.log_summary().await?;
    let catalog = node_store::catalog::Catalog::fold(&store.catalog_events().await?);
    let agents: Vec<_> = catalog.agents.values().map(|a| a.to_wire()).collect();
    let conversations: Vec<_> = catalog.conversations.values().map(|c| c.to_wire(None)).collect();
    Ok(serde_json::json!({
        "events": events,
        "transcript_events": transcript_events,
        "agents": agents.len(),
        "conversations": conversations.len(),
        "catalog": { "agents": agents, "conversations": conversations },
    }))
}

/// The host's name (the default node name in a fleet).
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "warren".into())
}
