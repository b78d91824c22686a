//! The fleet's liveness on the node: the IO around `fabric::swim`. Each
//! period one member is probed (directly, then through up to
//! `INDIRECT_HELPERS` others); probes and acks carry the protocol's deltas;
//! a suspicion of this node is refuted by publishing its record at once.
//! What a node spends on it does not grow with the fleet: one probe sent
//! and, on average, one answered per period.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fabric::swim::{Outcome, Probe};
use fabric::{PeerId, Request, Response};
use node_store::util::now_ms;

/// How many members are asked to probe a member that did not answer.
const INDIRECT_HELPERS: usize = 3;
/// Probes in flight at most (a period's probe may outlast the period).
pub(super) const PROBES_IN_FLIGHT: usize = 2;
/// The record is published again after this long even when unchanged (a
/// member that missed it also gets it in the view exchanged on connection).
///
/// Every member receives (and forwards) every record, so the refresh's cost
/// grows with the fleet: it is rare, changes go out at once anyway.
pub(super) const RECORD_REFRESH: Duration = Duration::from_secs(120);

impl super::Fleet {
    /// One period: suspicions that ran out go down, and one member is probed.
    pub(super) fn liveness_period(self: &Arc<Self>, period: Duration) {
        let (downs, target) = match self.fleet.swim.lock() {
            Ok(mut m) => (m.expire(now_ms()), m.next_target()),
            Err(_) => return,
        };
        for node in downs {
            tracing::info!(node = %self.member_name(&node), "a member did not refute its suspicion: down");
        }
        let Some(target) = target else { return };
        if self.fleet.probing.fetch_add(1, Ordering::SeqCst) >= PROBES_IN_FLIGHT {
            self.fleet.probing.fetch_sub(1, Ordering::SeqCst);
            return;
        }
        let me = self.clone();
        tokio::spawn(async move {
            me.probe(&target, period).await;
            me.fleet.probing.fetch_sub(1, Ordering::SeqCst);
        });
    }

    /// Probes `target`: directly within one period, else through helpers
    /// within another; neither answering suspects it.
    async fn probe(&self, target: &str, period: Duration) {
        if self
            .ask_probe(target, Request::Probe(self.outgoing(target)), period)
            .await
        {
            return;
        }
        let helpers = match self.fleet.swim.lock() {
            Ok(mut m) => m.helpers(target, INDIRECT_HELPERS),
            Err(_) => return,
        };
        let mut asked = tokio::task::JoinSet::new();
        for helper in helpers {
            let Some(me) = self.me_arc() else { return };
            let request = Request::ProbeFor {
                target: target.to_string(),
                probe: self.outgoing(&helper),
            };
            // The helper's own direct probe takes up to a period.
            asked.spawn(async move { me.ask_probe(&helper, request, period * 2).await });
        }
        while let Some(answered) = asked.join_next().await {
            if answered.unwrap_or(false) {
                return;
            }
        }
        let suspected = match self.fleet.swim.lock() {
            Ok(mut m) => matches!(m.probe_failed(target, now_ms()), Outcome::Changed { .. }),
            Err(_) => false,
        };
        if suspected {
            tracing::info!(node = %self.member_name(target), "a member answered no probe: suspected");
            let update = self.fleet.swim.lock().ok().and_then(|m| m.update_of(target));
            if let (Ok(fabric), Some(update)) = (self.fleet.fabric(), update) {
                let _ = fabric.publish(&fabric::Gossip::Suspect(update)).await;
            }
        }
    }

    /// A member's suspicion, told to the fleet: applied as one of its
    /// deltas (this node refutes one of itself at once).
    pub(super) fn heard_suspicion(&self, from: &PeerId, update: &fabric::swim::Update) {
        let Some(member) = self.fleet.member_of(from) else {
            return;
        };
        if let Err(why) = Probe::check_one(update) {
            tracing::warn!(member = %self.member_name(&member), %why, "a suspicion was refused");
            return;
        }
        let outcome = self.fleet.swim.lock().map(|mut m| m.apply(&member, update, now_ms()));
        if let Ok(outcome) = outcome {
            self.take_outcomes(&member, vec![outcome]);
        }
    }

    /// Sends one probe (or probe request) to member `node`; whether it was
    /// acknowledged. The ack's deltas are taken in.
    async fn ask_probe(&self, node: &str, request: Request, within: Duration) -> bool {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return false;
        };
        let Some(peer) = self.peer_of(node) else { return false };
        match fabric.request_within(peer, request, within).await {
            Ok(Response::Ack(probe)) => {
                // It answered (alive), even if its deltas are refused.
                if let Err(why) = self.heard_probe(node, &probe) {
                    tracing::warn!(member = %self.member_name(node), %why, "an ack's deltas were refused");
                }
                true
            }
            _ => false,
        }
    }

    /// The connected peer of member `node`, if any.
    fn peer_of(&self, node: &str) -> Option<PeerId> {
        let peers = self.fleet.peers.lock().ok()?;
        peers
            .iter()
            .find(|(_, i)| i.member.as_deref() == Some(node))
            .map(|(p, _)| *p)
    }

    /// This node's incarnation and the deltas to pass on to member `to`.
    fn outgoing(&self, to: &str) -> Probe {
        self.fleet.swim.lock().map(|mut m| m.outgoing(to)).unwrap_or_default()
    }

    /// A probe or ack from member `node` (over its own connection): the
    /// member is heard from now, and its deltas are applied. `Err` names a
    /// probe over the protocol's bounds (nothing of it is applied).
    fn heard_probe(&self, node: &str, probe: &Probe) -> Result<(), String> {
        let outcomes = self
            .fleet
            .swim
            .lock()
            .map_err(|_| "poisoned".to_string())?
            .heard(node, probe, now_ms())?;
        if let Ok(mut t) = self.fleet.table.lock()
            && let Some(s) = t.get_mut(node)
        {
            s.last_seen = Instant::now();
            s.lost = false;
            s.heard = true;
        }
        self.take_outcomes(node, outcomes);
        Ok(())
    }

    /// What member `node`'s news did: a suspicion of this node is refuted
    /// by publishing its record (with the higher incarnation) at once.
    fn take_outcomes(&self, node: &str, outcomes: Vec<Outcome>) {
        for outcome in outcomes {
            match outcome {
                Outcome::Refuted => {
                    tracing::info!("this node was suspected: its incarnation rose, its record goes out now");
                    if let Some(me) = self.me_arc() {
                        tokio::spawn(async move { me.publish_record(true).await });
                    }
                }
                Outcome::Refused(why) => {
                    tracing::warn!(member = %self.member_name(node), %why, "a membership delta was refused")
                }
                Outcome::Changed { node, status } => {
                    tracing::debug!(node = %self.member_name(&node), ?status, "membership changed")
                }
                Outcome::Stale => {}
            }
        }
    }

    /// A member's probe: applied, then acknowledged with this node's deltas.
    pub(super) fn answer_probe(&self, peer: &PeerId, probe: &Probe) -> Response {
        match self.take_probe(peer, probe) {
            Ok(node) => Response::Ack(self.outgoing(&node)),
            Err(reason) => Response::Refused { reason },
        }
    }

    /// A member's probe taken in: the member, or why it is refused.
    fn take_probe(&self, peer: &PeerId, probe: &Probe) -> Result<String, String> {
        let node = self
            .fleet
            .member_of(peer)
            .ok_or_else(|| "prove membership first".to_string())?;
        self.heard_probe(&node, probe).map(|()| node)
    }

    /// A member asks this node to probe `target` for it.
    pub(super) async fn answer_probe_for(&self, peer: &PeerId, target: &str, probe: &Probe) -> Response {
        let asker = match self.take_probe(peer, probe) {
            Ok(asker) => asker,
            Err(reason) => return Response::Refused { reason },
        };
        let period = Duration::from_millis(self.fleet.settings.heartbeat_ms.max(100));
        if self
            .ask_probe(target, Request::Probe(self.outgoing(target)), period)
            .await
        {
            Response::Ack(self.outgoing(&asker))
        } else {
            Response::Refused {
                reason: format!("{target} did not answer a probe"),
            }
        }
    }

    /// Publishes this node's record when it changed, after
    /// `RECORD_REFRESH`, or when `now`.
    pub(super) async fn publish_record(&self, now: bool) {
        let Ok(fabric) = self.fleet.fabric().cloned() else {
            return;
        };
        let record = self.fleet_record().await;
        let due = now
            || self.fleet.published.lock().is_ok_and(|p| match &*p {
                None => true,
                Some((last, at)) => {
                    at.elapsed() >= RECORD_REFRESH
                        || fabric::NodeRecord {
                            sent_at: record.sent_at,
                            ..last.clone()
                        } != record
                }
            });
        if !due {
            return;
        }
        match fabric.publish(&fabric::Gossip::Heartbeat(record.clone())).await {
            Ok(_) => {
                if let Ok(mut p) = self.fleet.published.lock() {
                    *p = Some((record, Instant::now()));
                }
            }
            // No member to send it to yet: tried again next period.
            Err(e) => tracing::debug!(error = %e, "record not published"),
        }
    }
}
