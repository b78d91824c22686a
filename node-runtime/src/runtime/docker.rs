//! The Docker runtime: every conversation in its own hardened container whose
//! entrypoint is the guest (`warren guest -- CLI ARGS`). The guest owns the
//! PTY and dials back to the node (outbound only: no port into the container);
//! the node drives it over that connection (`guest_link`).
//!
//! A guest has no network (`network_mode: none`: loopback only, no route, no
//! IPv6, no DNS server): its only ways out are two Unix sockets the node
//! serves for it alone (`egress::sockets`), which the guest process forwards
//! from loopback ports: the node's guest endpoint and the egress proxy.
//!
//! The agent's home and workspace are bind-mounted at the same absolute paths
//! as on the host, so every path a harness adapter plans (config dirs, session
//! files, the instance token file) means the same inside and out. The CLI is
//! the image's own: the runtime runs the planned program by its file name.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bollard::Docker;
use bollard::models::{ContainerCreateBody, HostConfig};
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    StopContainerOptionsBuilder,
};
use futures_util::future::BoxFuture;

use super::guest_link::{GuestRegistry, GuestSession};
use super::{LaunchSpec, Runtime, RuntimeError, Session};
use crate::egress::Route;
use crate::egress::sockets::{EGRESS_SOCKET, GUEST_DIR, NODE_SOCKET, PROXY_PORT, Sockets};

/// The labels every container of a node carries.
pub const LABEL_NODE: &str = "warren.node";
pub const LABEL_AGENT: &str = "warren.agent";
pub const LABEL_CONVERSATION: &str = "warren.conversation";
/// The unprivileged user guests run as when the node runs as root.
pub const GUEST_UID: u32 = 10001;
/// The guest's tmpfs for per-conversation secrets (the instance token).
pub const SECRETS_DIR: &str = "/run/warren-secrets";
/// PATH inside guest images.
const GUEST_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long after losing its guest's connection a running container gets to
/// reconnect before it is stopped.
const RECONNECT_GRACE: Duration = Duration::from_secs(30);

/// Limits and timing of guest containers (`[docker]` in warren.toml).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DockerSettings {
    pub memory_mb: u64,
    pub cpus: f64,
    pub pids_limit: i64,
    /// How long a new guest may take to dial back.
    pub launch_timeout_secs: u64,
    /// Size of the tmpfs at /tmp (the root filesystem is read-only).
    pub tmp_mb: u64,
    /// How often containers of this node that no live conversation owns are
    /// stopped and removed (also once at start-up).
    pub reap_interval_secs: u64,
    /// After a restart, how long the node waits for the guests of its live
    /// conversations to come back and be re-adopted (0: pause them at once).
    pub readopt_grace_secs: u64,
}

impl Default for DockerSettings {
    fn default() -> DockerSettings {
        DockerSettings {
            memory_mb: 2048,
            cpus: 1.0,
            pids_limit: 512,
            launch_timeout_secs: 60,
            tmp_mb: 256,
            reap_interval_secs: 30,
            readopt_grace_secs: 20,
        }
    }
}

/// Connects to the local engine and checks it answers (API version negotiated:
/// engines older than this client are common).
pub async fn connect() -> Result<Docker, String> {
    // DOCKER_HOST is honoured as the docker CLI honours it (local sockets only).
    let docker = match std::env::var("DOCKER_HOST").ok().filter(|h| !h.is_empty()) {
        Some(host) if host.starts_with("unix://") => {
            Docker::connect_with_socket(&host, 120, bollard::API_DEFAULT_VERSION)
                .map_err(|e| format!("cannot reach the Docker engine at DOCKER_HOST={host}: {e}"))?
        }
        Some(host) => {
            return Err(format!(
                "DOCKER_HOST={host}: only a local engine on a unix:// socket is supported"
            ));
        }
        None => Docker::connect_with_socket_defaults()
            .map_err(|e| format!("cannot reach the Docker engine's socket: {e}"))?,
    };
    let docker = tokio::time::timeout(Duration::from_secs(5), docker.negotiate_version())
        .await
        .map_err(|_| "the Docker engine did not answer within 5 s".to_string())?
        .map_err(|e| format!("the Docker engine did not answer: {e}"))?;
    docker
        .ping()
        .await
        .map_err(|e| format!("the Docker engine did not answer a ping: {e}"))?;
    Ok(docker)
}

/// Runs conversations in guest containers.
pub struct DockerRuntime {
    docker: Docker,
    node_id: String,
    /// `ws://127.0.0.1:PORT`: the node's guest endpoint, on the host's
    /// loopback and at the same address on each guest's (forwarded).
    base_url: String,
    node_port: u16,
    sockets: Arc<Sockets>,
    registry: Arc<GuestRegistry>,
    settings: DockerSettings,
    /// Put in the images this node builds (guests run the node's version).
    self_exe: PathBuf,
    /// Images built (or found) by this node process, per harness.
    images: tokio::sync::Mutex<HashMap<String, String>>,
}

/// A container of this node that the reaper removed.
#[derive(Debug, Clone)]
pub struct Reaped {
    pub container: String,
    pub conversation: String,
}

impl DockerRuntime {
    pub fn new(
        docker: Docker,
        node_id: String,
        node: std::net::SocketAddr,
        sockets: Arc<Sockets>,
        registry: Arc<GuestRegistry>,
        settings: DockerSettings,
        self_exe: PathBuf,
    ) -> DockerRuntime {
        DockerRuntime {
            docker,
            node_id,
            base_url: format!("ws://{node}"),
            node_port: node.port(),
            sockets,
            registry,
            settings,
            self_exe,
            images: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The image for a launch: the configured one, else the harness's image
    /// of this node's version, built on demand (once per node process; the
    /// build script reuses an image whose content is unchanged).
    async fn image_for(&self, spec: &LaunchSpec) -> Result<String, String> {
        if let Some(image) = &spec.image {
            self.docker.inspect_image(image).await.map_err(|_| {
                format!(
                    "the configured image {image} is not on this engine: build it with `warren images build {}`",
                    spec.harness
                )
            })?;
            return Ok(image.clone());
        }
        let mut images = self.images.lock().await;
        if let Some(tag) = images.get(&spec.harness) {
            return Ok(tag.clone());
        }
        tracing::info!(harness = %spec.harness, "building (or reusing) the guest image");
        crate::progress::report(format!(
            "building (or reusing) the {} guest image for this warren ({} when nothing is cached)",
            spec.harness,
            crate::progress::build_estimate(&spec.harness)
        ));
        let harness = spec.harness.clone();
        let tag = crate::images::build(&spec.harness, &self.self_exe, |line| {
            tracing::info!(harness = %harness, "image build: {line}");
            crate::progress::report(format!("{harness} image: {line}"));
        })
        .await?;
        crate::progress::report(format!("{} guest image ready: {tag}", spec.harness));
        images.insert(spec.harness.clone(), tag.clone());
        Ok(tag)
    }

    /// The container name of a conversation (unique per node).
    pub fn container_name(&self, conversation: &str) -> String {
        format!("warren-{}-{conversation}", self.node_id)
    }

    /// Stops and removes this node's containers whose conversation is not in
    /// `live` (start-up, and periodically: orphans of a crash or a test).
    pub async fn reap_orphans(&self, live: &[String]) -> Vec<Reaped> {
        let filters = HashMap::from([("label", vec![format!("{LABEL_NODE}={}", self.node_id)])]);
        let opts = ListContainersOptionsBuilder::new().all(true).filters(&filters).build();
        let Ok(list) = self.docker.list_containers(Some(opts)).await else {
            return vec![];
        };
        let mut reaped = vec![];
        for c in list {
            let conversation = c
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL_CONVERSATION).cloned())
                .unwrap_or_default();
            // Live, or being launched right now: not an orphan.
            if live.contains(&conversation) || self.registry.knows(&conversation) {
                continue;
            }
            let Some(id) = c.id else { continue };
            remove(&self.docker, &id).await;
            reaped.push(Reaped {
                container: id,
                conversation,
            });
        }
        reaped
    }

    fn container_env(&self, spec: &LaunchSpec, token: &str) -> Vec<String> {
        let mut env: Vec<String> = spec
            .env
            .iter()
            .filter(|(k, _)| k != "PATH" && k != "WARREN_URL")
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        // The host's PATH means nothing in the guest, but a conversation's
        // tools dir (under its home, mounted at the same path) leads it.
        let tools = spec
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .and_then(|(_, p)| p.split(':').next())
            .filter(|first| first.ends_with("/.warren/tools"));
        // (The guest's PATH holds no `warren`: the image keeps it at GUEST_WARREN.)
        match tools {
            Some(dir) => env.push(format!("PATH={dir}:{GUEST_PATH}")),
            None => env.push(format!("PATH={GUEST_PATH}")),
        }
        env.push(format!("WARREN_URL={}{}", self.base_url, console_api::WS_PATH));
        env.push(format!("{}={}/guest", guest::bootstrap::NODE_URL, self.base_url));
        env.push(format!("{}={}", guest::bootstrap::NODE_KEY, self.registry.public_hex()));
        env.push(format!("{}={}", guest::bootstrap::CONVERSATION, spec.conversation));
        env.push(format!("{}={token}", guest::bootstrap::LAUNCH_TOKEN));
        env.push(format!("{}={}", guest::bootstrap::ROWS, spec.rows));
        env.push(format!("{}={}", guest::bootstrap::COLS, spec.cols));
        env.push(format!("{}={SECRETS_DIR}", guest::proto::SECRETS_DIR));
        // Its two ways out, on loopback; every HTTP client is sent through
        // the proxy, and nothing else leads anywhere.
        let proxy_port = if self.node_port == PROXY_PORT {
            PROXY_PORT + 1
        } else {
            PROXY_PORT
        };
        env.push(format!(
            "{}={}={GUEST_DIR}/{NODE_SOCKET},{proxy_port}={GUEST_DIR}/{EGRESS_SOCKET}",
            guest::forward::FORWARD,
            self.node_port
        ));
        env.push(format!("{}={GUEST_DIR}/{EGRESS_SOCKET}", guest::dns::DNS));
        env.push(format!("{}={GUEST_DIR}/{NODE_SOCKET}", guest::bootstrap::NODE_SOCKET));
        let proxy = format!("http://127.0.0.1:{proxy_port}");
        for k in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
        ] {
            env.retain(|e| !e.starts_with(&format!("{k}=")));
            env.push(format!("{k}={proxy}"));
        }
        for k in ["NO_PROXY", "no_proxy"] {
            env.retain(|e| !e.starts_with(&format!("{k}=")));
            env.push(format!("{k}=127.0.0.1,localhost"));
        }
        env
    }

    fn container_body(
        &self,
        spec: &LaunchSpec,
        image: &str,
        token: &str,
        user: &str,
        sockets: &Path,
    ) -> ContainerCreateBody {
        // This node's own binary (the fake CLI is a verb of it) is the
        // image's, which is off the guest's PATH.
        let program = if spec.program == self.self_exe {
            crate::layout::GUEST_WARREN.to_string()
        } else {
            program_name(&spec.program)
        };
        let mut cmd = vec![program];
        cmd.extend(spec.args.iter().cloned());
        let labels = HashMap::from([
            (LABEL_NODE.to_string(), self.node_id.clone()),
            (LABEL_AGENT.to_string(), spec.agent.clone()),
            (LABEL_CONVERSATION.to_string(), spec.conversation.clone()),
        ]);
        let mut binds: Vec<String> = spec.mounts.iter().map(|p| format!("{0}:{0}:rw", p.display())).collect();
        // The granted tools: read-only over the writable home, so the agent
        // cannot add, swap or remove one.
        for home in &spec.mounts {
            let tools = crate::layout::tools_dir(home);
            if tools.is_dir() {
                binds.push(format!("{0}:{0}:ro", tools.display()));
            }
        }
        // In order: a read-only mount over part of a writable one comes after it.
        for m in &spec.extra_mounts {
            let mode = if m.read_only { "ro" } else { "rw" };
            binds.push(format!("{0}:{0}:{mode}", m.path.display()));
        }
        binds.push(format!("{}:{GUEST_DIR}:ro", sockets.display()));
        ContainerCreateBody {
            image: Some(image.to_string()),
            cmd: Some(cmd),
            env: Some(self.container_env(spec, token)),
            working_dir: Some(spec.cwd.display().to_string()),
            user: Some(user.to_string()),
            labels: Some(labels),
            tty: Some(false),
            open_stdin: Some(false),
            host_config: Some(HostConfig {
                binds: Some(binds),
                network_mode: Some("none".into()),
                // Names resolve through the guest's own resolver, which asks
                // the node (and may bind port 53 as an unprivileged user).
                dns: Some(vec!["127.0.0.1".into()]),
                sysctls: Some(HashMap::from([(
                    "net.ipv4.ip_unprivileged_port_start".to_string(),
                    "0".to_string(),
                )])),
                cap_drop: Some(vec!["ALL".into()]),
                security_opt: Some(super::seccomp::security_opts(&spec.harness)),
                pids_limit: Some(spec.resources.pids.unwrap_or(self.settings.pids_limit)),
                memory: Some((spec.resources.memory_mb.unwrap_or(self.settings.memory_mb) * 1024 * 1024) as i64),
                nano_cpus: Some((spec.resources.cpus.unwrap_or(self.settings.cpus) * 1e9) as i64),
                readonly_rootfs: Some(true),
                tmpfs: Some(HashMap::from([
                    (
                        "/tmp".to_string(),
                        format!("rw,nosuid,nodev,size={}m", self.settings.tmp_mb),
                    ),
                    // Secrets live in memory only, gone with the container.
                    (
                        SECRETS_DIR.to_string(),
                        "rw,nosuid,nodev,noexec,size=1m,mode=1777".to_string(),
                    ),
                ])),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    async fn launch_guest(&self, spec: LaunchSpec) -> Result<Arc<dyn Session>, RuntimeError> {
        let fail = |reason: String| RuntimeError::Launch {
            program: format!("the {} guest", spec.harness),
            reason,
        };
        let image = self.image_for(&spec).await.map_err(|reason| RuntimeError::Setup {
            setting: format!("harnesses.{}.image", spec.harness),
            reason,
        })?;
        let user = guest_user(&spec.mounts, spec.run_as).map_err(fail)?;
        let (sockets, run) = self.open_sockets(&spec).map_err(fail)?;
        let name = self.container_name(&spec.conversation);
        // A leftover of an earlier run of this conversation would block the
        // name (it may be being removed right now: wait until it is gone).
        remove(&self.docker, &name).await;
        for _ in 0..100 {
            if self.docker.inspect_container(&name, None).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let token = hex::encode(rand::random::<[u8; 32]>());
        let ttl = Duration::from_secs(self.settings.launch_timeout_secs);
        let attached = self.registry.expect(&spec.conversation, &token, ttl);
        let opts = CreateContainerOptionsBuilder::new().name(&name).build();
        let created = self
            .docker
            .create_container(Some(opts), self.container_body(&spec, &image, &token, &user, &sockets))
            .await
            .map_err(|e| fail(format!("creating the container: {e}")));
        let id = match created {
            Ok(c) => c.id,
            Err(e) => {
                self.registry.cancel(&spec.conversation);
                return Err(e);
            }
        };
        if let Err(e) = self.docker.start_container(&id, None).await {
            self.registry.cancel(&spec.conversation);
            remove(&self.docker, &id).await;
            return Err(fail(format!("starting the container: {e}")));
        }
        // A guest that cannot start its CLI exits at once: say so then, with
        // its words, rather than after the whole dial-back timeout.
        let exited = async {
            use futures_util::StreamExt;
            let mut wait = self.docker.wait_container(&id, None);
            match wait.next().await {
                Some(Ok(r)) => Some(r.status_code),
                Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => Some(code),
                _ => None,
            }
        };
        let outcome = tokio::select! {
            a = tokio::time::timeout(ttl, attached) => match a {
                Ok(Ok(a)) => Ok(a),
                _ => Err(None),
            },
            code = exited => Err(Some(code)),
        };
        match outcome {
            Ok(attached) => Ok(self.start_session(&spec, id, attached, run)),
            Err(exit) => {
                self.registry.cancel(&spec.conversation);
                let logs = logs_tail(&self.docker, &id).await;
                remove(&self.docker, &id).await;
                Err(match exit {
                    Some(code) => RuntimeError::Setup {
                        setting: format!("harnesses.{}.program", spec.harness),
                        reason: format!(
                            "the {h} guest could not start `{}` (guests run the file name of `[harnesses.{h}] program` from the image) and exited with code {}: {logs}",
                            program_name(&spec.program),
                            code.map_or("unknown".to_string(), |c| c.to_string()),
                            h = spec.harness,
                        ),
                    },
                    None => fail(format!(
                        "the guest did not dial back within {ttl:?}; its last output: {logs}"
                    )),
                })
            }
        }
    }
}

impl DockerRuntime {
    async fn adopt_guest(
        &self,
        spec: LaunchSpec,
        key_hash: String,
        grace: Duration,
    ) -> Result<Arc<dyn Session>, RuntimeError> {
        let fail = |reason: String| RuntimeError::Launch {
            program: format!("the {} guest", spec.harness),
            reason,
        };
        let name = self.container_name(&spec.conversation);
        let running = self
            .docker
            .inspect_container(&name, None)
            .await
            .ok()
            .filter(|c| c.state.as_ref().and_then(|s| s.running).unwrap_or(false))
            .and_then(|c| c.id)
            .ok_or_else(|| fail(format!("its container {name} is not running")))?;
        let (_, run) = self.open_sockets(&spec).map_err(fail)?;
        let attached = self.registry.expect_adoption(&spec.conversation, &key_hash, grace);
        let attached = match tokio::time::timeout(grace, attached).await {
            Ok(Ok(a)) => a,
            _ => {
                self.registry.cancel(&spec.conversation);
                return Err(fail(format!("its guest did not come back within {grace:?}")));
            }
        };
        Ok(self.start_session(&spec, running, attached, run))
    }

    /// The session over an attached guest, and the task that notices its
    /// container going away.
    fn start_session(
        &self,
        spec: &LaunchSpec,
        id: String,
        attached: super::guest_link::Attached,
        run: u64,
    ) -> Arc<dyn Session> {
        let docker = self.docker.clone();
        let stop_id = id.clone();
        let stopper = Box::new(move || -> BoxFuture<'static, ()> {
            let docker = docker.clone();
            let id = stop_id.clone();
            Box::pin(async move { remove(&docker, &id).await })
        });
        let session = GuestSession::start(
            spec.conversation.clone(),
            self.registry.clone(),
            attached,
            spec.rows,
            spec.cols,
            spec.status.clone(),
            stopper,
        );
        let (sockets, conversation) = (self.sockets.clone(), spec.conversation.clone());
        let watch = watch_container(self.docker.clone(), id, session.clone());
        tokio::spawn(async move {
            watch.await;
            sockets.close(&conversation, Some(run));
        });
        session
    }

    /// The conversation's sockets: its egress is decided against its agent's
    /// model endpoints (from its environment) and live grants.
    fn open_sockets(&self, spec: &LaunchSpec) -> Result<(PathBuf, u64), String> {
        self.sockets.open(Route {
            conversation: spec.conversation.clone(),
            agent: spec.agent.clone(),
            model: node_store::egress::model_endpoints(&spec.env, &spec.harness),
        })
    }
}

/// Marks the session exited when its container is gone, or has lost its
/// guest's connection for longer than the grace period.
async fn watch_container(docker: Docker, id: String, session: Arc<GuestSession>) {
    let mut connected = session.connected();
    let mut exited = session.exited();
    loop {
        tokio::select! {
            _ = exited.wait_for(|e| *e) => break,
            _ = connected.wait_for(|c| !*c) => {}
        }
        let since = tokio::time::Instant::now();
        loop {
            if *exited.borrow() || session.is_connected() {
                break;
            }
            let running = docker
                .inspect_container(&id, None)
                .await
                .ok()
                .and_then(|c| c.state)
                .and_then(|s| s.running)
                .unwrap_or(false);
            if !running || since.elapsed() > RECONNECT_GRACE {
                session.mark_exited();
                break;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        if *exited.borrow() {
            break;
        }
    }
    // The CLI is gone: so is its container (docker logs lived as long as it).
    remove(&docker, &id).await;
}

/// Stops (2 s grace) and removes a container; absent is fine.
async fn remove(docker: &Docker, id: &str) {
    let _ = docker
        .stop_container(id, Some(StopContainerOptionsBuilder::new().t(2).build()))
        .await;
    let _ = docker
        .remove_container(id, Some(RemoveContainerOptionsBuilder::new().force(true).build()))
        .await;
}

impl DockerRuntime {
    /// What stops each configured harness from launching here: a section
    /// with no adapter, a configured image that is not on the engine, no
    /// image definition to build from, or a program the image does not have.
    /// For `warren up`'s warnings; runs a throwaway container per image.
    pub async fn setup_problems(
        &self,
        harnesses: &std::collections::BTreeMap<String, crate::harness::HarnessSettings>,
    ) -> Vec<crate::harness::setup::SetupProblem> {
        use crate::harness::setup::{SetupProblem, no_adapter_section};
        let mut out = vec![];
        for (name, settings) in harnesses {
            let Ok(adapter) = crate::harness::adapter(name) else {
                out.push(no_adapter_section(name));
                continue;
            };
            let image = match &settings.image {
                Some(image) => {
                    if self.docker.inspect_image(image).await.is_err() {
                        out.push(SetupProblem {
                            setting: format!("harnesses.{name}.image"),
                            message: format!(
                                "`[harnesses.{name}] image` in warren.toml is {image:?}, which is not on this Docker engine: build it with `warren images build {name}` or remove the setting"
                            ),
                        });
                        continue;
                    }
                    Some(image.clone())
                }
                None => {
                    let defined = crate::images::deploy_dir(&self.self_exe)
                        .is_some_and(|d| d.join("images").join(name).join("Dockerfile").is_file());
                    if !defined {
                        out.push(SetupProblem {
                            setting: format!("harnesses.{name}.image"),
                            message: format!(
                                "{name}: no image definition deploy/images/{name}/Dockerfile was found, so its guest image cannot be built: set `[harnesses.{name}] image` or WARREN_DEPLOY_DIR"
                            ),
                        });
                    }
                    None
                }
            };
            // Only a configured program can be wrong in an image the project built.
            if let (Some(image), Some(_)) = (image, &settings.program) {
                let program = program_name(&adapter.program(settings, &self.self_exe));
                if let Err(why) = self.image_has_program(&image, &program).await {
                    out.push(SetupProblem {
                        setting: format!("harnesses.{name}.program"),
                        message: format!(
                            "`[harnesses.{name}] program` in warren.toml: guests run `{program}` from the image {image}, and {why}"
                        ),
                    });
                }
            }
        }
        out
    }

    /// What a first conversation of each of `harnesses` will build on this
    /// engine (for `warren up` to say up front); empty when every image is
    /// there.
    pub async fn first_run_notes(&self, harnesses: &[String]) -> Vec<String> {
        let present = |reference: String| async move {
            let filters = HashMap::from([("reference", vec![reference])]);
            let opts = bollard::query_parameters::ListImagesOptionsBuilder::default()
                .filters(&filters)
                .build();
            self.docker.list_images(Some(opts)).await.is_ok_and(|l| !l.is_empty())
        };
        let base = present("warren/debian:bookworm".into()).await;
        let mut out = vec![];
        for h in harnesses {
            let guest = present(format!("warren/guest-{h}")).await;
            out.extend(crate::progress::first_run_plan(h, base, guest));
        }
        out
    }

    /// Whether `program` is a command in `image` (a throwaway container runs
    /// `command -v` in it).
    async fn image_has_program(&self, image: &str, program: &str) -> Result<(), String> {
        use futures_util::StreamExt;
        let body = ContainerCreateBody {
            image: Some(image.to_string()),
            entrypoint: Some(vec!["/bin/sh".into(), "-c".into()]),
            cmd: Some(vec!["command -v \"$0\"".to_string(), program.to_string()]),
            network_disabled: Some(true),
            labels: Some(HashMap::from([(LABEL_NODE.to_string(), self.node_id.clone())])),
            ..Default::default()
        };
        let created = self
            .docker
            .create_container(None::<bollard::query_parameters::CreateContainerOptions>, body)
            .await
            .map_err(|e| format!("the check could not run: {e}"))?;
        let result = async {
            self.docker
                .start_container(&created.id, None)
                .await
                .map_err(|e| format!("the check could not run: {e}"))?;
            let mut wait = self.docker.wait_container(&created.id, None);
            match wait.next().await {
                Some(Ok(r)) if r.status_code == 0 => Ok(()),
                _ => Err("the image has no such command".to_string()),
            }
        }
        .await;
        remove(&self.docker, &created.id).await;
        result
    }
}

/// What a guest runs for a planned program: its file name, from the image.
pub fn program_name(program: &Path) -> String {
    program
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| program.display().to_string())
}

async fn logs_tail(docker: &Docker, id: &str) -> String {
    use futures_util::StreamExt;
    let opts = bollard::query_parameters::LogsOptionsBuilder::new()
        .stdout(true)
        .stderr(true)
        .tail("20")
        .build();
    let mut out = String::new();
    let mut logs = docker.logs(id, Some(opts));
    while let Some(Ok(chunk)) = logs.next().await {
        out.push_str(&chunk.to_string());
        if out.len() > 4096 {
            break;
        }
    }
    out.trim().to_string()
}

/// The user the guest runs as: the node's own user, or (when the node runs as
/// root) `run_as` (a repository's owner) or else an unprivileged uid; the
/// mounted dirs are made that user's.
fn guest_user(mounts: &[PathBuf], run_as: Option<(u32, u32)>) -> Result<String, String> {
    // SAFETY: getuid/getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    if uid != 0 {
        return Ok(format!("{uid}:{gid}"));
    }
    let (uid, gid) = run_as.filter(|(u, _)| *u != 0).unwrap_or((GUEST_UID, GUEST_UID));
    for m in mounts {
        chown_tree(m, uid, gid).map_err(|e| format!("giving {} to uid {uid}: {e}", m.display()))?;
    }
    Ok(format!("{uid}:{gid}"))
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

impl Runtime for DockerRuntime {
    fn name(&self) -> &'static str {
        "docker"
    }

    /// In the conversation's guest, which mounts its worktree at the same path.
    fn exec(&self, spec: super::exec::ExecSpec) -> BoxFuture<'_, super::exec::ExecOutcome> {
        Box::pin(async move {
            let container = self.container_name(&spec.conversation);
            super::exec::run_in_container(&self.docker, &container, &spec).await
        })
    }

    fn can_adopt(&self) -> bool {
        true
    }

    fn secrets_dir(&self) -> Option<&'static str> {
        Some(SECRETS_DIR)
    }

    fn exec_in_guest(&self) -> bool {
        true
    }

    fn adopt(
        &self,
        spec: LaunchSpec,
        key_hash: String,
        grace: Duration,
    ) -> BoxFuture<'_, Result<Arc<dyn Session>, RuntimeError>> {
        Box::pin(async move {
            let conversation = spec.conversation.clone();
            let adopted = self.adopt_guest(spec, key_hash, grace).await;
            if adopted.is_err() {
                self.sockets.close(&conversation, None);
            }
            adopted
        })
    }

    fn launch(&self, spec: LaunchSpec) -> BoxFuture<'_, Result<Arc<dyn Session>, RuntimeError>> {
        Box::pin(async move {
            let conversation = spec.conversation.clone();
            let launched = self.launch_guest(spec).await;
            if launched.is_err() {
                self.sockets.close(&conversation, None);
            }
            launched
        })
    }

    fn reap<'a>(&'a self, live: &'a [String]) -> BoxFuture<'a, Vec<(String, String)>> {
        Box::pin(async move {
            self.reap_orphans(live)
                .await
                .into_iter()
                .map(|r| (r.container, r.conversation))
                .collect()
        })
    }
}
