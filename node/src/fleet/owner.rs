//! The fleet owner key on this node: read at start-up, or made (or read)
//! and installed on the running node by `fleet.init`, which then founds the
//! fleet at once, the way start-up does (like `docker swarm init` on a
//! running daemon).

use std::path::Path;

use ed25519_dalek::SigningKey;
use serde_json::{Value, json};

use super::FleetRuntime;
use crate::service::{NodeError, NodeResult};

/// The owner key, as a certificate signer and as a token signer (the
/// owner's node forwards its local admin's calls with a token it signs).
pub(super) struct Owner {
    key: SigningKey,
    root: capabilities::RootKey,
}

impl Owner {
    /// An owner key from its private half (32 bytes in hex); the error names
    /// what is wrong, never the key.
    fn from_hex(text: &str) -> Result<Owner, String> {
        let seed: [u8; 32] = hex::decode(text.trim())
            .ok()
            .and_then(|b| b.try_into().ok())
            .ok_or("it is not an owner key (32 bytes in hex)")?;
        let key = SigningKey::from_bytes(&seed);
        let root = capabilities::RootKey::from_private_hex(&hex::encode(key.to_bytes()))
            .map_err(|e| format!("it is not usable as a token signer: {e}"))?;
        Ok(Owner { key, root })
    }

    /// Reads the owner key file.
    pub(super) fn read(path: &Path) -> anyhow::Result<Owner> {
        use anyhow::Context;
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading the owner key {}", path.display()))?;
        Owner::from_hex(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    fn public_hex(&self) -> String {
        hex::encode(self.key.verifying_key().as_bytes())
    }
}

impl FleetRuntime {
    /// The fleet owner key, on the node that holds it.
    pub(crate) fn owner(&self) -> Option<&SigningKey> {
        self.owner.get().map(|o| &o.key)
    }

    /// The owner key as a token signer, on the node that holds it.
    pub(super) fn owner_root(&self) -> Option<&capabilities::RootKey> {
        self.owner.get().map(|o| &o.root)
    }
}

impl super::Fleet {
    /// `fleet.init` (local-only): founds the fleet on this running node. The
    /// owner key is `owner_key` (hex) when given, else the one this node
    /// already holds or finds in its owner key file, else a new one, written
    /// there (0600) so a restart keeps it. Refused on a node in a fleet
    /// already, and when a given key differs from the one the node has.
    pub async fn fleet_init(&self, owner_key: Option<&str>) -> NodeResult<Value> {
        if let Some(id) = self.catalog.lock().await.fleet.fleet_id() {
            return Err(NodeError::Conflict(format!(
                "this node is in fleet {id} already: `warren fleet invite` (on the node holding the owner key) prints a join code for another node"
            )));
        }
        let given = owner_key
            .map(Owner::from_hex)
            .transpose()
            .map_err(|e| NodeError::Invalid(format!("owner_key: {e}")))?;
        let file = self.fleet.owner_file.clone();
        let on_disk = match self.fleet.owner.get() {
            Some(_) => None,
            None if file.exists() => Some(Owner::read(&file).map_err(|e| NodeError::Conflict(format!("{e:#}")))?),
            None => None,
        };
        let held = self
            .fleet
            .owner
            .get()
            .map(Owner::public_hex)
            .or_else(|| on_disk.as_ref().map(Owner::public_hex));
        if let (Some(held), Some(given)) = (&held, &given)
            && *held != given.public_hex()
        {
            return Err(NodeError::Conflict(format!(
                "this node already has a fleet owner key ({}, public key {held}) and the one given differs: remove that file first, or init without a key to use it",
                file.display()
            )));
        }
        let wrote = if self.fleet.owner.get().is_none() && on_disk.is_none() {
            let owner = match given {
                Some(o) => o,
                None => {
                    let seed: [u8; 32] = rand::random();
                    Owner::from_hex(&hex::encode(seed)).map_err(NodeError::Internal)?
                }
            };
            write_owner_key(&file, &owner)?;
            let _ = self.fleet.owner.set(owner);
            true
        } else {
            if let Some(o) = on_disk {
                let _ = self.fleet.owner.set(o);
            }
            false
        };
        let public_key = self.fleet.owner.get().map(Owner::public_hex).unwrap_or_default();
        self.found_fleet().await?;
        self.ensure_fabric().await?;
        let (fleet_id, members) = {
            let cat = self.catalog.lock().await;
            (cat.fleet.fleet_id().map(str::to_string), cat.fleet.members.len() + 1)
        };
        tracing::info!(fleet = ?fleet_id, "fleet founded on the running node");
        Ok(json!({
            "fleet_id": fleet_id,
            "node_id": self.cfg.node_id,
            "members": members,
            "public_key": public_key,
            "owner_key_file": file,
            "wrote_owner_key": wrote,
        }))
    }
}

/// Writes the owner key file (0600, never over an existing one).
fn write_owner_key(path: &Path, owner: &Owner) -> NodeResult<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(path)?;
        writeln!(f, "{}", hex::encode(owner.key.to_bytes()))?;
        f.sync_all()
    };
    write().map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => NodeError::Conflict(format!(
            "{} appeared meanwhile (another init?): run `warren fleet init` again to use it",
            path.display()
        )),
        _ => NodeError::Internal(format!("writing the owner key {}: {e}", path.display())),
    })
}
