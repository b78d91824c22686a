//! Per-agent secrets (seed 002 section 5: the agent's own model credential):
//! environment variables such as an API key, kept for one agent on the node
//! (`<data_dir>/secrets/<agent>.json`, 0600 in a 0700 directory), given only
//! to that agent's CLIs at launch, never logged, never in `agent.get`. The
//! value is deliberately not an event: the log is forever and is replayed,
//! a secret must be removable. Setting and removing one is recorded as an
//! `agent_secret` event naming it (the audit trail), without the value.
//! Every value is also redacted wherever a CLI's output would be kept
//! (`node_store::redact`).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Value, json};

use crate::service::{Node, NodeError, NodeResult};
use node_store::events::Event;
use node_store::validate;

fn secrets_file(data_dir: &Path, agent: &str) -> PathBuf {
    data_dir.join("secrets").join(format!("{agent}.json"))
}

/// The agent's secrets (name -> value); none when it has no file.
pub(crate) fn read(data_dir: &Path, agent: &str) -> NodeResult<BTreeMap<String, String>> {
    let path = secrets_file(data_dir, agent);
    match std::fs::read_to_string(&path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| {
            tracing::error!(agent, error = %e, "an agent's secrets file is not valid JSON");
            NodeError::Internal(format!("the secrets file of agent {agent:?} cannot be read"))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
        Err(e) => {
            tracing::error!(agent, error = %e, "cannot read an agent's secrets file");
            Err(NodeError::Internal(format!(
                "the secrets file of agent {agent:?} cannot be read"
            )))
        }
    }
}

/// Tells the store's redaction every agent's secrets and the owner tools'
/// environment values (when the node opens, before any CLI runs).
pub(crate) fn load_redaction(
    data_dir: &Path,
    tools: &BTreeMap<String, node_store::tools::OwnerTool>,
    redaction: &node_store::redact::Redaction,
) {
    let dir = data_dir.join("secrets");
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let Some(agent) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".json"))
        else {
            continue;
        };
        match read(data_dir, agent) {
            Ok(secrets) => redaction.set_agent_secrets(agent, &secrets),
            Err(e) => tracing::error!(agent, error = %e, "an agent's secrets are not redacted"),
        }
    }
    let env = tools
        .values()
        .flat_map(|t| t.env.iter())
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
        .collect();
    redaction.set_tool_env(env);
}

/// The agents' secrets: a subsystem over the core owning the secrets files
/// (the audit trail of names is the log's).
pub struct Secrets {
    node: Arc<Node>,
}

impl std::ops::Deref for Secrets {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Secrets {
    pub fn new(node: Arc<Node>) -> Arc<Secrets> {
        Arc::new(Secrets { node })
    }

    fn agent_secrets(&self, agent: &str) -> NodeResult<BTreeMap<String, String>> {
        read(&self.cfg.data_dir, agent)
    }

    fn write_secrets(&self, agent: &str, secrets: &BTreeMap<String, String>) -> NodeResult<()> {
        let path = secrets_file(&self.cfg.data_dir, agent);
        let write = || -> std::io::Result<()> {
            let dir = path.parent().unwrap_or(&self.cfg.data_dir);
            std::fs::create_dir_all(dir)?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            if secrets.is_empty() {
                return match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                };
            }
            let body = serde_json::to_string(secrets).map_err(std::io::Error::other)?;
            node_store::util::write_private(&path, &body)
        };
        write().map_err(|e| {
            tracing::error!(agent, error = %e, "cannot write an agent's secrets file");
            NodeError::Internal(format!("the secrets of agent {agent:?} could not be stored"))
        })?;
        // From now on the values are redacted wherever they would be kept.
        self.store.redaction().set_agent_secrets(agent, secrets);
        Ok(())
    }

    async fn record_secret(&self, agent: &str, name: &str, set: bool) -> NodeResult<()> {
        let mut cat = self.catalog.lock().await;
        let e = Event::AgentSecret {
            agent: agent.to_string(),
            name: name.to_string(),
            set,
        };
        self.commit(&mut cat, vec![e]).await
    }

    /// `agent.secret.set` (local-only): the value takes effect at the
    /// agent's next launch.
    pub async fn set(&self, agent: &str, name: &str, value: &str) -> NodeResult<Value> {
        self.catalog.lock().await.agent(agent)?;
        validate::secret_name(name).map_err(|e| NodeError::Invalid(e.to_string()))?;
        validate::secret_value(value).map_err(|e| NodeError::Invalid(e.to_string()))?;
        let mut secrets = self.agent_secrets(agent)?;
        if !secrets.contains_key(name) && secrets.len() >= validate::MAX_SECRETS {
            return Err(NodeError::Conflict(format!(
                "agent {agent:?} has {} secrets, the most it may have",
                validate::MAX_SECRETS
            )));
        }
        secrets.insert(name.to_string(), value.to_string());
        self.write_secrets(agent, &secrets)?;
        self.record_secret(agent, name, true).await?;
        Ok(json!({ "agent": agent, "name": name, "set": true }))
    }

    /// `agent.secret.unset` (local-only).
    pub async fn unset(&self, agent: &str, name: &str) -> NodeResult<Value> {
        self.catalog.lock().await.agent(agent)?;
        let mut secrets = self.agent_secrets(agent)?;
        if secrets.remove(name).is_none() {
            return Err(NodeError::NotFound(format!("agent {agent:?} has no secret {name:?}")));
        }
        self.write_secrets(agent, &secrets)?;
        self.record_secret(agent, name, false).await?;
        Ok(json!({ "agent": agent, "name": name, "set": false }))
    }

    /// `agent.secret.list`: the names only.
    pub async fn list(&self, agent: &str) -> NodeResult<Value> {
        self.catalog.lock().await.agent(agent)?;
        let names: Vec<String> = self.agent_secrets(agent)?.into_keys().collect();
        Ok(json!({ "agent": agent, "names": names }))
    }
}
