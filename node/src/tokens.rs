//! Tokens on the node: revocation (durable, checked on every call) and the
//! per-conversation instance tokens (minted at launch, renewed while live,
//! revoked when the conversation stops).

use std::path::{Path, PathBuf};

use crate::service::{Node, NodeError, NodeResult};
use node_store::events::Event;
use node_store::util::write_private;

/// The TLS node's certificate in a home's `.warren/`, beside the instance token.
pub const NODE_CERT_FILE: &str = "node-cert.pem";
/// The instance token's file name (in the home's `.warren/`, or in a
/// guest's secrets directory).
pub const INSTANCE_TOKEN_FILE: &str = "instance.token";

impl Node {
    /// Where clients (and CLIs, with their instance token) reach this node.
    pub fn set_endpoint(&self, endpoint: String) {
        let _ = self.endpoint.set(endpoint);
    }

    /// The API's TLS certificate (PEM file), when it serves TLS.
    pub fn set_tls_cert(&self, cert: std::path::PathBuf) {
        let _ = self.tls_cert.set(cert);
    }

    pub fn node_id(&self) -> &str {
        &self.cfg.node_id
    }

    pub fn root(&self) -> &capabilities::RootKey {
        &self.root
    }

    /// True if any of `ids` has been revoked.
    pub fn any_revoked(&self, ids: &[String]) -> bool {
        self.revoked
            .read()
            .map(|set| ids.iter().any(|id| set.contains(id)))
            .unwrap_or(true)
    }

    /// Records revocations durably; they apply to the very next call.
    pub async fn revoke(&self, ids: Vec<String>) -> NodeResult<()> {
        for id in &ids {
            if id.is_empty() || id.len() > 256 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(NodeError::Invalid(format!(
                    "revocation_id: {id:?} is not a hex revocation id (see token.inspect)"
                )));
            }
        }
        let fresh: Vec<String> = {
            let set = self
                .revoked
                .read()
                .map_err(|_| NodeError::Internal("revocation set poisoned".into()))?;
            ids.into_iter()
                .filter(|id| !set.contains(&id.to_ascii_lowercase()))
                .collect()
        };
        if fresh.is_empty() {
            return Ok(());
        }
        let mut cat = self.catalog.lock().await;
        let events = fresh
            .iter()
            .map(|id| Event::TokenRevoked {
                revocation_id: id.to_ascii_lowercase(),
            })
            .collect();
        self.commit(&mut cat, events).await?;
        if let Ok(mut set) = self.revoked.write() {
            set.extend(fresh.into_iter().map(|id| id.to_ascii_lowercase()));
        }
        Ok(())
    }

    /// Mints the conversation's instance token (exactly the agent's grants,
    /// short-lived) and writes it to `<home>/.warren/instance.token` (0600),
    /// or, when the runtime keeps secrets in the guest, names the file there
    /// (the caller hands it over with [`Node::hand_instance_token`]).
    /// Its methods are those of the tools the conversation mounts
    /// (`tools::mounted`, the same list the tools dir is made from), and an
    /// owner tool adds its `tool:NAME` invoke right.
    pub(crate) fn issue_instance_token(
        &self,
        conversation: &str,
        agent: &node_store::events::AgentRecord,
        home: &Path,
        extra: Vec<capabilities::Right>,
        tools: &[String],
    ) -> Result<(String, PathBuf, Vec<String>), NodeError> {
        use capabilities::{MintSpec, Operation, Resource, Right};
        let mut rights = vec![Right::new(Resource::Agent(agent.name.clone()), Operation::Observe)];
        // A monitor's attachments: may-observe, and may-inject where it advises.
        rights.extend(extra);
        for t in tools {
            if self.cfg.tools.contains_key(t) {
                rights.push(Right::new(Resource::Tool(t.clone()), Operation::Invoke));
            }
        }
        // Stashing into (and forgetting from) its own recall.
        if tools.iter().any(|t| t == "recall") {
            rights.push(Right::new(Resource::Agent(agent.name.clone()), Operation::Invoke));
        }
        match &agent.grants.peers {
            Some(serde_json::Value::String(s)) if s == "all" => {
                rights.push(Right::new(Resource::AllAgents, Operation::Message));
            }
            Some(serde_json::Value::Array(peers)) => {
                for p in peers.iter().filter_map(|p| p.as_str()) {
                    rights.push(Right::new(Resource::Agent(p.to_string()), Operation::Message));
                }
            }
            _ => {}
        }
        let expires_at = std::time::SystemTime::now() + self.cfg.instance_token_ttl;
        let token = self
            .root
            .mint(&MintSpec {
                rights,
                expires_at: Some(expires_at),
                methods: Some(capabilities::methods::instance_methods(
                    tools.iter().map(String::as_str),
                )),
                facts: vec![
                    ("agent".into(), agent.name.clone()),
                    ("conversation".into(), conversation.to_string()),
                ],
            })
            .map_err(|e| NodeError::Internal(format!("could not mint the instance token: {e}")))?;
        let ids = capabilities::inspect_unverified(&token)
            .map(|i| i.revocation_ids)
            .map_err(|e| NodeError::Internal(e.to_string()))?;
        // Redacted from before the CLI can print it until it is revoked.
        self.store
            .redaction()
            .add_instance_token(conversation, &token, expires_at);
        if let Ok(mut m) = self.instance_tokens.lock() {
            m.entry(conversation.to_string())
                .or_default()
                .extend(ids.iter().cloned());
        }
        let dir = home.join(".warren");
        std::fs::create_dir_all(&dir).map_err(|e| NodeError::Internal(format!("create {}: {e}", dir.display())))?;
        let path = match self.runtime.secrets_dir() {
            Some(guest) => Path::new(guest).join(INSTANCE_TOKEN_FILE),
            None => {
                let path = dir.join(INSTANCE_TOKEN_FILE);
                write_private(&path, &token)
                    .map_err(|e| NodeError::Internal(format!("write {}: {e}", path.display())))?;
                path
            }
        };
        // Beside it, the certificate a TLS node presents (public), which the
        // conversation's `warren` tools trust (see `warren::client::tls_config`).
        if let Some(cert) = self.tls_cert.get() {
            let to = dir.join(NODE_CERT_FILE);
            std::fs::copy(cert, &to)
                .map_err(|e| NodeError::Internal(format!("copy {} to {}: {e}", cert.display(), to.display())))?;
        }
        Ok((token, path, ids))
    }

    /// Issues the instance token and records its revocation ids durably, so
    /// a restarted node can revoke it whatever became of the CLI.
    pub(crate) async fn issue_and_record_instance_token(
        &self,
        conversation: &str,
        agent: &node_store::events::AgentRecord,
        home: &Path,
        tools: &[String],
    ) -> Result<(String, PathBuf), NodeError> {
        let extra = {
            let cat = self.catalog.lock().await;
            let mut rights = cat.monitors.rights_of(&agent.name);
            rights.extend(cat.tasks.helper_rights_of(&agent.name));
            rights
        };
        let (token, path, ids) = self.issue_instance_token(conversation, agent, home, extra, tools)?;
        let e = node_store::events::Event::InstanceTokenIssued {
            conversation: conversation.to_string(),
            revocation_ids: ids,
        };
        let mut cat = self.catalog.lock().await;
        self.commit(&mut cat, vec![e]).await?;
        Ok((token, path))
    }

    /// Revokes the instance tokens recorded for `conversation` in the log
    /// that this node process did not issue: those of a run it did not see
    /// end (its own are revoked with `revoke_instance_tokens`).
    pub(crate) async fn revoke_recorded_instance_tokens(&self, conversation: &str) {
        let mine: Vec<String> = self
            .instance_tokens
            .lock()
            .ok()
            .and_then(|m| m.get(conversation).cloned())
            .unwrap_or_default();
        let ids: Vec<String> = {
            let cat = self.catalog.lock().await;
            cat.instance_tokens
                .get(conversation)
                .map(|s| s.iter().filter(|id| !mine.contains(id)).cloned().collect())
                .unwrap_or_default()
        };
        if ids.is_empty() {
            return;
        }
        if let Err(e) = self.revoke(ids).await {
            tracing::error!(%conversation, error = %e, "could not revoke the instance tokens of the last run");
        }
    }

    /// Renews the instance token at half its lifetime while the conversation lives.
    pub(crate) fn start_renewal(&self, id: &str) {
        let Some(weak) = self.me.get().cloned() else { return };
        let id = id.to_string();
        let every = self.cfg.instance_token_ttl / 2;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(node) = weak.upgrade() else { return };
                if node.live(&id).is_none() {
                    return;
                }
                let agent = {
                    let cat = node.catalog.lock().await;
                    let Some(c) = cat.conversations.get(&id) else { return };
                    let Some(a) = cat.agents.get(&c.agent) else { return };
                    a.record.clone()
                };
                let home = node.agent_dir(&agent.name).join("home");
                let tools = crate::tools::mount::mounted_now(&*node.catalog.lock().await, &agent, &node.cfg.tools);
                match node.issue_and_record_instance_token(&id, &agent, &home, &tools).await {
                    Ok((token, _)) => {
                        if let Some(live) = node.live(&id) {
                            node.hand_instance_token(&live.session, &token).await;
                        }
                    }
                    Err(e) => tracing::warn!(conversation = %id, error = %e, "instance token renewal failed"),
                }
            }
        });
    }

    /// Gives a guest its instance token over its link, when the runtime keeps
    /// secrets in the guest (else it is in the home's file already).
    pub(crate) async fn hand_instance_token(
        &self,
        session: &std::sync::Arc<dyn node_runtime::runtime::Session>,
        token: &str,
    ) {
        if self.runtime.secrets_dir().is_none() {
            return;
        }
        if let Err(e) = session.hand_secret(INSTANCE_TOKEN_FILE, token).await {
            tracing::warn!(error = %e, "could not hand the guest its instance token");
        }
    }

    /// Revokes every instance token issued to conversation `id`.
    pub(crate) async fn revoke_instance_tokens(&self, id: &str) {
        self.store.redaction().forget_instance_tokens(id);
        let ids = self
            .instance_tokens
            .lock()
            .ok()
            .and_then(|mut m| m.remove(id))
            .unwrap_or_default();
        if ids.is_empty() {
            return;
        }
        if let Err(e) = self.revoke(ids).await {
            tracing::error!(conversation = id, error = %e, "could not revoke the instance tokens");
        }
    }
}
