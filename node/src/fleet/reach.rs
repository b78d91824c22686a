//! Reaching the other members: who they are (by name or id), whether one is
//! connected and healthy now, which of them homes an agent, conversation or
//! held dialog, and one request sent to a member over the fabric with a
//! bound (the routing of API calls and the monitors' remote watch both send
//! through here). A home that is not connected or not heard from within
//! `unhealthy_after_ms` answers -32012 at once; a call in flight when its
//! home stops answering fails within `HEALTH_EVERY` of the home turning
//! unhealthy, saying that its outcome is unknown.

use std::time::{Duration, Instant};

use fabric::wire::Locate;
use fabric::{PeerId, Request, Response};

use crate::service::{NodeError, NodeResult};

/// How often a call in flight checks that its home is still healthy.
const HEALTH_EVERY: Duration = Duration::from_millis(200);
/// How long members are given to say whether they home a name.
const LOCATE_WITHIN: Duration = Duration::from_secs(2);
/// Bound of a pull (the home waits at most 1 s before answering).
const PULL_WITHIN: Duration = Duration::from_secs(5);
/// How long a forwarding token minted for the local admin lives.
const OWNER_TOKEN_TTL: Duration = Duration::from_secs(600);

impl super::Fleet {
    /// Whether this node is in a fleet (its fabric runs).
    pub(crate) fn in_fleet(&self) -> bool {
        self.fleet.fabric.get().is_some()
    }

    /// `None` for this node, else the member's node id; an unknown name is
    /// a clear error.
    pub(crate) async fn member_named(&self, n: &str) -> NodeResult<Option<String>> {
        if n == self.fleet.name || n == self.cfg.node_id {
            return Ok(None);
        }
        let found = self
            .members()
            .await
            .into_iter()
            .find(|(id, name)| name == n || id == n)
            .map(|(id, _)| id);
        match found {
            Some(id) => Ok(Some(id)),
            None if self.fleet.fabric.get().is_none() => Err(NodeError::NotFound(format!(
                "node: {n:?} is not this node ({}) and this node is in no fleet",
                self.fleet.name
            ))),
            None => {
                tracing::warn!(node = n, "a call named a node that is not a member");
                Err(NodeError::NotFound(format!(
                    "node: {n:?} is not a member of this fleet (`warren fleet nodes` lists them)"
                )))
            }
        }
    }

    pub(crate) fn member_name(&self, node_id: &str) -> String {
        self.fleet
            .table
            .lock()
            .ok()
            .and_then(|t| t.get(node_id).map(|s| s.record.name.clone()))
            .unwrap_or_else(|| node_id.to_string())
    }

    /// The member's peer, if it is connected and healthy now.
    pub(crate) fn home_peer(&self, node_id: &str) -> NodeResult<PeerId> {
        let (name, peer, ago, healthy) = {
            let t = self
                .fleet
                .table
                .lock()
                .map_err(|_| NodeError::Internal("fleet table poisoned".into()))?;
            let Some(s) = t.get(node_id) else {
                return Err(NodeError::NotFound(format!(
                    "node: {node_id:?} is not a member of this fleet"
                )));
            };
            (
                s.record.name.clone(),
                s.record.peer_id.clone(),
                s.last_seen.elapsed(),
                self.healthy(s),
            )
        };
        let peer: Option<PeerId> = peer.parse().ok();
        let connected = peer.is_some_and(|p| self.fleet.member_of(&p).as_deref() == Some(node_id));
        match peer {
            Some(p) if connected && healthy => Ok(p),
            _ => Err(NodeError::Unreachable {
                node: name.clone(),
                message: format!(
                    "node {name} ({node_id}) cannot be reached now: {}, last heard {:.1} s ago",
                    if connected {
                        "connected but silent"
                    } else {
                        "not connected"
                    },
                    ago.as_secs_f64()
                ),
            }),
        }
    }

    /// Members (ids) that home `what`, and the names of those that could
    /// not be asked.
    pub(crate) async fn locate(&self, what: Locate) -> (Vec<String>, Vec<String>) {
        let members: Vec<String> = self.members().await.into_iter().map(|(id, _)| id).collect();
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return (vec![], vec![]);
        };
        let mut asks = tokio::task::JoinSet::new();
        let mut unreachable = vec![];
        for id in members {
            match self.home_peer(&id) {
                Ok(peer) => {
                    let (fabric, what) = (fabric.clone(), what.clone());
                    asks.spawn(async move {
                        let r = fabric.request_within(peer, Request::Locate(what), LOCATE_WITHIN).await;
                        (id, r)
                    });
                }
                Err(_) => unreachable.push(self.member_name(&id)),
            }
        }
        let mut found = vec![];
        while let Some(done) = asks.join_next().await {
            match done {
                Ok((id, Ok(Response::Located(true)))) => found.push(id),
                Ok((_, Ok(_))) => {}
                Ok((id, Err(_))) => unreachable.push(self.member_name(&id)),
                Err(_) => {}
            }
        }
        found.sort();
        (found, unreachable)
    }

    /// Forwards one JSON-RPC request text to `node_id` with `token`; the
    /// home's answer text, and its stream when the call opened one.
    pub async fn forward(
        &self,
        node_id: &str,
        token: String,
        text: String,
        stream: bool,
        bound: Duration,
    ) -> NodeResult<(String, Option<u64>)> {
        let peer = self.home_peer(node_id)?;
        let fabric = self.fleet.fabric()?.clone();
        let name = self.member_name(node_id);
        let unknown = |why: String| NodeError::Unreachable {
            node: name.clone(),
            message: format!("the call forwarded to node {name} {why}: its outcome is unknown"),
        };
        let call = fabric.request(peer, Request::Api { token, text, stream });
        tokio::pin!(call);
        let deadline = Instant::now() + bound;
        loop {
            tokio::select! {
                answer = &mut call => return match answer {
                    Ok(Response::Api { text, stream }) => Ok((text, stream)),
                    Ok(Response::Refused { reason }) => Err(NodeError::Forbidden(format!("node {name} refused the forwarded call: {reason}"))),
                    Ok(other) => Err(NodeError::Internal(format!("node {name} answered a forwarded call with {other:?}"))),
                    Err(e) => Err(unknown(format!("failed ({e})"))),
                },
                _ = tokio::time::sleep(HEALTH_EVERY) => {
                    if self.home_peer(node_id).is_err() {
                        return Err(unknown("stopped answering while the call was in flight".into()));
                    }
                    if Instant::now() > deadline {
                        return Err(unknown(format!("got no answer within {} s", bound.as_secs())));
                    }
                }
            }
        }
    }

    /// Hands one message to member `node_id` within `within`: how it took
    /// it, or why it could not be asked (then its outcome is unknown and the
    /// same message is handed again later; the member stores it once).
    pub(crate) async fn hand_mail(
        &self,
        node_id: &str,
        item: fabric::MailItem,
        within: Duration,
    ) -> Result<fabric::MailAnswer, String> {
        let peer = self.home_peer(node_id).map_err(|e| e.to_string())?;
        let fabric = self.fleet.fabric().map_err(|e| e.to_string())?.clone();
        match fabric.request_within(peer, Request::Mail(item), within).await {
            Ok(Response::Mail(answer)) => Ok(answer),
            Ok(Response::Refused { reason }) => Err(format!(
                "node {} refused the request: {reason}",
                self.member_name(node_id)
            )),
            Ok(other) => Err(format!(
                "node {} answered mail with {other:?}",
                self.member_name(node_id)
            )),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Whether the owner removed member `name` (by name or node id).
    pub(crate) async fn was_removed(&self, name: &str) -> bool {
        self.catalog
            .lock()
            .await
            .fleet
            .removed
            .values()
            .any(|r| r.node_id == name || self.member_name(&r.node_id) == name)
    }

    /// The next notifications of a forwarded subscription: the batch `next`
    /// names, which moves on once it is taken (start it at 1). An answer
    /// lost on the way is given again by the next pull, so none is missed.
    pub async fn pull(&self, node_id: &str, stream: u64, next: &mut u64) -> NodeResult<(Vec<String>, Option<String>)> {
        let peer = self.home_peer(node_id)?;
        let fabric = self.fleet.fabric()?.clone();
        let asked = Request::Pull { stream, next: *next };
        match fabric.request_within(peer, asked, PULL_WITHIN).await {
            Ok(Response::Notes { notes, ended, batch }) => {
                *next = fabric::pull::taken(*next, batch);
                Ok((notes, ended))
            }
            Ok(other) => Err(NodeError::Internal(format!("a pull was answered with {other:?}"))),
            Err(e) => Err(NodeError::Unreachable {
                node: self.member_name(node_id),
                message: e.to_string(),
            }),
        }
    }

    /// Tells the home a forwarded subscription is no longer wanted.
    pub async fn cancel_remote(&self, node_id: &str, stream: u64) {
        if let (Ok(peer), Ok(fabric)) = (self.home_peer(node_id), self.fleet.fabric().cloned()) {
            let _ = fabric
                .request_within(peer, Request::Cancel { stream }, PULL_WITHIN)
                .await;
        }
    }

    /// A token every member trusts (signed with the fleet owner key), when
    /// this node is in a fleet and holds that key; `None` otherwise (a token
    /// of this node's own root is all it can give).
    pub fn mint_fleet_wide(&self, spec: &capabilities::MintSpec) -> Option<Result<String, capabilities::CapError>> {
        if !self.in_fleet() {
            return None;
        }
        Some(self.fleet.owner_root()?.mint(spec))
    }

    /// The token the local admin's call (the Unix socket, or `admin.token`)
    /// is forwarded with: its authority ends at this node, except on the
    /// owner's node, whose admin holds the fleet owner key and so speaks for
    /// the fleet.
    pub fn local_forwarding_token(&self, node_id: &str) -> NodeResult<String> {
        let Some(owner) = self.fleet.owner_root() else {
            return Err(NodeError::Forbidden(format!(
                "node {} is another member: a forwarded call carries the caller's own token, and this node's local admin (its Unix socket, its admin.token) has no authority beyond it; call with a token the fleet trusts (one signed by the fleet owner key: `warren token mint --key-file OWNER_KEY ...`, then WARREN_URL and WARREN_TOKEN)",
                self.member_name(node_id)
            )));
        };
        let mut cached = self
            .fleet
            .owner_token
            .lock()
            .map_err(|_| NodeError::Internal("owner token cache poisoned".into()))?;
        if let Some((t, at)) = cached.as_ref()
            && at.elapsed() < OWNER_TOKEN_TTL / 2
        {
            return Ok(t.clone());
        }
        let token = owner
            .mint(&capabilities::MintSpec {
                rights: vec![capabilities::Right::new(
                    capabilities::Resource::Node,
                    capabilities::Operation::Admin,
                )],
                expires_at: Some(std::time::SystemTime::now() + OWNER_TOKEN_TTL),
                methods: None,
                facts: vec![("issued_by".into(), self.cfg.node_id.clone())],
            })
            .map_err(|e| NodeError::Internal(format!("could not mint a forwarding token: {e}")))?;
        *cached = Some((token.clone(), Instant::now()));
        Ok(token)
    }

    /// The fleet owner key as a token signer, on the node that holds it.
    pub(crate) fn fleet_owner_root(&self) -> Option<&capabilities::RootKey> {
        self.fleet.owner_root()
    }

    /// The other members, certified by the fleet root and not removed,
    /// whose records this node has seen: (node id, name).
    pub async fn members(&self) -> Vec<(String, String)> {
        let certified: Vec<String> = self.catalog.lock().await.fleet.members.keys().cloned().collect();
        self.fleet
            .table
            .lock()
            .map(|t| {
                t.values()
                    .filter(|s| certified.contains(&s.record.node_id))
                    .map(|s| (s.record.node_id.clone(), s.record.name.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}
