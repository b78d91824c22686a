//! Node configuration, layered with figment: built-in defaults < `warren.toml`
//! (in the data dir, or `--config`) < `WARREN_*` environment < command-line flags.

use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuntimeKind {
    /// Docker when the engine answers, else local (with a warning).
    Auto,
    Local,
    Docker,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Largest request frame answered normally; larger ones get -32600.
    pub max_frame_bytes: usize,
    /// Queued notifications per client before it is cut off as too slow.
    pub outbound_queue: usize,
    pub max_subscriptions: usize,
    pub max_in_flight: usize,
    /// Messages waiting per conversation.
    pub send_queue: usize,
    pub send_idle_timeout_ms: u64,
    pub send_ack_timeout_ms: u64,
    /// Authenticated WebSocket connections (a bearer on the upgrade, or
    /// `session.authenticate`), the Unix socket's included.
    pub max_connections: usize,
    /// WebSocket connections not authenticated yet, in all (a pool of their
    /// own: they never take an authenticated client's place).
    pub max_anonymous_connections: usize,
    /// ... and from one address.
    pub max_anonymous_per_source: usize,
    /// How long a connection may stay unauthenticated before it is closed.
    pub auth_deadline_ms: u64,
    /// Refused guest hellos are recorded at most once per this many seconds
    /// and address, with their count (Docker runtime).
    pub guest_refusal_record_secs: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_frame_bytes: 1 << 20,
            outbound_queue: 1024,
            max_subscriptions: 64,
            max_in_flight: 32,
            send_queue: 256,
            send_idle_timeout_ms: 30_000,
            send_ack_timeout_ms: 10_000,
            max_connections: 256,
            max_anonymous_connections: 32,
            max_anonymous_per_source: 8,
            auth_deadline_ms: 5_000,
            guest_refusal_record_secs: 60,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub data_dir: PathBuf,
    /// TCP address of the WebSocket API.
    pub listen: String,
    pub runtime: RuntimeKind,
    pub rows: u16,
    pub cols: u16,
    /// Lifetime of a conversation's instance token; renewed at half of it.
    pub instance_token_ttl_secs: u64,
    /// Further root public keys (hex) whose tokens this node accepts, e.g. the
    /// fleet owner's (`warren fleet init`). The node's own root is always trusted.
    pub trusted_roots: Vec<String>,
    pub limits: Limits,
    /// `[supervision]`: the master switch and global defaults (seed 000).
    pub supervision: supervision::SupervisionConfig,
    /// `[harnesses.NAME]`: where each CLI is and what it needs in its
    /// environment (e.g. `ANTHROPIC_BASE_URL` for claude).
    pub harnesses: std::collections::BTreeMap<String, node_runtime::harness::HarnessSettings>,
    /// `[docker]`: guest container limits and timing.
    pub docker: node_runtime::runtime::docker::DockerSettings,
    /// This node's name in the fleet (default: the host's name).
    pub name: Option<String>,
    /// `[fleet]`: the fabric between nodes.
    pub fleet: crate::fleet::FleetSettings,
    /// `[tools.NAME]`: owner-defined tools an agent can be granted.
    pub tools: std::collections::BTreeMap<String, node_store::tools::OwnerTool>,
    /// `[mail]`: the mailbox's per-sender rate.
    pub mail: MailSettings,
    /// `[budget]`: how agents' spend-rate budgets wait.
    pub budget: BudgetSettings,
    /// `[console]`: the host names and origins browsers may use.
    pub console: crate::console::ConsoleSettings,
    /// `[tls]`: serve the API over TLS (`https://`, `wss://`).
    pub tls: TlsSettings,
    /// `[pricing]`: the live price source and how often it is asked.
    pub pricing: crate::spend::pricing::PricingSettings,
    /// `[workspaces]`: where conversations' worktrees live.
    pub workspaces: WorkspaceSettings,
    /// `[push]`: Web Push to phones (where pushes may go, the VAPID contact).
    #[serde(default)]
    pub push: crate::push::PushSettings,
}

/// `[workspaces]` in warren.toml.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceSettings {
    /// The directory conversations' worktrees are made under
    /// (`ROOT/<agent>/<conversation>`); default `<data_dir>/worktrees`. A
    /// repository owned by another user than the node's needs one that user
    /// can reach (the node's data dir is private to the node).
    pub root: Option<PathBuf>,
}

/// `[mail]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MailSettings {
    /// Sends per second each agent's bucket refills with.
    pub rate_per_sec: f64,
    /// Sends an agent may make at once.
    pub burst: u32,
}

/// `[budget]` in warren.toml.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetSettings {
    /// The longest a budgeted conversation waits for accrual before the node
    /// asks a human (`event.budget.exhausted`).
    pub max_wait_secs: u64,
}

impl Default for BudgetSettings {
    fn default() -> BudgetSettings {
        BudgetSettings {
            max_wait_secs: ::spend::budget::DEFAULT_MAX_WAIT_MS / 1000,
        }
    }
}

impl Default for MailSettings {
    fn default() -> MailSettings {
        let d = mailbox::RateLimit::default();
        MailSettings {
            rate_per_sec: d.per_sec,
            burst: d.burst,
        }
    }
}

impl Default for Config {
    fn default() -> Config {
        Config {
            data_dir: default_data_dir(),
            listen: "127.0.0.1:7767".into(),
            runtime: RuntimeKind::Auto,
            docker: node_runtime::runtime::docker::DockerSettings::default(),
            rows: 40,
            cols: 120,
            instance_token_ttl_secs: 600,
            trusted_roots: vec![],
            limits: Limits::default(),
            supervision: supervision::SupervisionConfig::default(),
            harnesses: Default::default(),
            name: None,
            fleet: Default::default(),
            tools: Default::default(),
            mail: MailSettings::default(),
            budget: BudgetSettings::default(),
            console: Default::default(),
            tls: Default::default(),
            pricing: Default::default(),
            workspaces: Default::default(),
            push: Default::default(),
        }
    }
}

/// `<user data dir>/warren`, e.g. `~/.local/share/warren`.
pub fn default_data_dir() -> PathBuf {
    dirs::data_dir().unwrap_or_else(|| PathBuf::from(".")).join("warren")
}

/// Values given on the command line (only those set override).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Overrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<RuntimeKind>,
    /// `--tls`: a self-signed certificate (merged into `[tls]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsFlag>,
}

/// What `--tls` sets in `[tls]`.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct TlsFlag {
    pub self_signed: bool,
}

/// Environment variables that belong to the client side, not the node's config.
/// The config keys `WARREN_*` variables may set (`WARREN_SUPERVISION__ENABLED`,
/// ...). Every other `WARREN_*` variable belongs to someone else (the client's
/// URL and token, a CLI's conversation, a test's binary path) and is ignored.
const ENV_KEYS: &[&str] = &[
    "data_dir",
    "name",
    "fleet",
    "listen",
    "runtime",
    "rows",
    "cols",
    "instance_token_ttl_secs",
    "trusted_roots",
    "limits",
    "supervision",
    "harnesses",
    "docker",
    "console",
    "tls",
    "pricing",
];

impl Config {
    /// Loads the layered configuration. The data dir is settled first (flags,
    /// env, default) because `warren.toml` lives in it.
    pub fn load(config_file: Option<&Path>, flags: Overrides) -> Result<Config, Box<figment::Error>> {
        let env = || {
            Env::prefixed("WARREN_").split("__").filter(|k| {
                let top = k.as_str().split(['.']).next().unwrap_or_default();
                let top = top.split("__").next().unwrap_or_default();
                ENV_KEYS.iter().any(|c| top.eq_ignore_ascii_case(c))
            })
        };
        let data_dir: PathBuf = Figment::from(Serialized::defaults(Config::default()))
            .merge(env())
            .merge(Serialized::defaults(&flags))
            .extract_inner("data_dir")
            .map_err(Box::new)?;
        let file = config_file
            .map(Path::to_path_buf)
            .unwrap_or_else(|| data_dir.join("warren.toml"));
        if config_file.is_some() && !file.exists() {
            return Err(Box::new(figment::Error::from(format!(
                "config file {} does not exist",
                file.display()
            ))));
        }
        Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::file(&file))
            .merge(env())
            .merge(Serialized::defaults(flags))
            .extract()
            .map_err(Box::new)
    }
}

/// `[tls]` in warren.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TlsSettings {
    /// The certificate chain, PEM (leaf first).
    pub cert: Option<PathBuf>,
    /// Its private key, PEM (PKCS#8, PKCS#1 or SEC1).
    pub key: Option<PathBuf>,
    /// Make (once) and use a self-signed certificate (`warren up --tls`).
    pub self_signed: bool,
}

#[cfg(test)]
#[allow(clippy::result_large_err)] // figment::Jail's closure type
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order() {
        figment::Jail::expect_with(|jail| {
            let dir = jail.directory().to_path_buf();
            jail.create_file(
                "warren.toml",
                "listen = \"127.0.0.1:1111\"\nrows = 30\n[limits]\nsend_queue = 7\n",
            )?;
            jail.set_env("WARREN_DATA_DIR", dir.display().to_string());
            jail.set_env("WARREN_ROWS", "50");
            jail.set_env("WARREN_URL", "ws://ignored");
            let cfg = Config::load(None, Overrides::default()).map_err(|e| *e)?;
            assert_eq!(cfg.listen, "127.0.0.1:1111", "file beats default");
            assert_eq!(cfg.rows, 50, "env beats file");
            assert_eq!(cfg.limits.send_queue, 7);
            let cfg = Config::load(
                None,
                Overrides {
                    listen: Some("127.0.0.1:2222".into()),
                    ..Default::default()
                },
            )
            .map_err(|e| *e)?;
            assert_eq!(cfg.listen, "127.0.0.1:2222", "flag beats file");
            Ok(())
        });
    }

    #[test]
    fn unknown_keys_and_missing_files_are_errors() {
        figment::Jail::expect_with(|jail| {
            jail.create_file("bad.toml", "listne = \"x\"\n")?;
            let err = Config::load(Some(Path::new("bad.toml")), Overrides::default()).expect_err("typo");
            assert!(err.to_string().contains("listne"), "{err}");
            let err = Config::load(Some(Path::new("nope.toml")), Overrides::default()).expect_err("missing");
            assert!(err.to_string().contains("does not exist"));
            Ok(())
        });
    }
}
