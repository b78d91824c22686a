//! Membership whose cost per node does not grow with the fleet (SWIM-style,
//! pure: the node's fleet tasks do the sending and the clock).
//!
//! Each protocol period a member probes one other member, in a shuffled
//! round robin, and the probe and its ack carry a few recent changes
//! (`deltas`). A member that answers neither directly nor through others is
//! suspected; a suspicion nobody refutes within `suspect_for_ms` makes it
//! down. A member refutes a suspicion of itself by raising its incarnation.
//!
//! Trust: a probe comes over an authenticated connection from a proven
//! member, so its `incarnation` field is that member speaking for itself.
//! Deltas only ever say `Suspect` or `Down` about others; that a member is
//! alive is believed only from the member itself (its probe or ack, or its
//! own record, which it publishes signed when its incarnation rises). So a
//! member cannot keep a dead one looking alive, and a false suspicion is
//! undone by the suspected member.
//!
//! Down is never passed on: each member turns a suspicion into down on its
//! own clock (a `Down` delta is read as a suspicion). So a member that was
//! cut off, and suspected everyone meanwhile, cannot bring others down when
//! it comes back: its suspicions reach each suspect (a probe or an ack
//! always carries what the sender believes of its receiver), which refutes
//! them long before they run out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Most deltas one probe or ack may carry (more is refused whole).
pub const MAX_DELTAS: usize = 16;
/// Longest node id a delta may name.
pub const MAX_NODE_ID: usize = 253;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Status {
    Alive,
    Suspect,
    Down,
}

/// One change about a member: its status at an incarnation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Update {
    pub node: String,
    pub status: Status,
    pub incarnation: u64,
}

/// What a probe and its ack carry: the sender's own incarnation and a few
/// deltas.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub incarnation: u64,
    pub deltas: Vec<Update>,
}

impl Probe {
    /// The bounds a receiver enforces before it reads any delta.
    pub fn check(&self) -> Result<(), String> {
        if self.deltas.len() > MAX_DELTAS {
            return Err(format!(
                "a membership probe carries {} deltas; at most {MAX_DELTAS} are read",
                self.deltas.len()
            ));
        }
        self.deltas.iter().try_for_each(Probe::check_one)
    }

    /// The bounds of one delta (also told alone, as gossip).
    pub fn check_one(u: &Update) -> Result<(), String> {
        if u.node.is_empty() || u.node.len() > MAX_NODE_ID {
            return Err(format!(
                "a membership delta names a node id of {} bytes (1 to {MAX_NODE_ID})",
                u.node.len()
            ));
        }
        Ok(())
    }
}

/// What one update did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The member's status changed (and the change is passed on).
    Changed { node: String, status: Status },
    /// Older than, or the same as, what is known: ignored.
    Stale,
    /// It suspected this node: this node's incarnation rose (publish the
    /// record now).
    Refuted,
    /// Not believed, with the reason (a forged or unknown-member update).
    Refused(String),
}

#[derive(Debug, Clone)]
struct Entry {
    status: Status,
    incarnation: u64,
    /// When it entered its status (ms, the caller's clock).
    since: u64,
}

#[derive(Debug, Clone)]
struct Queued {
    update: Update,
    sent: u32,
}

/// This node's view of the fleet's liveness.
#[derive(Debug, Clone)]
pub struct Membership {
    me: String,
    incarnation: u64,
    suspect_for_ms: u64,
    members: BTreeMap<String, Entry>,
    order: Vec<String>,
    next: usize,
    seed: u64,
    queue: Vec<Queued>,
}

impl Membership {
    /// `incarnation`: where this node starts (its start time in ms, so a
    /// restarted node outranks what was said of its last life).
    pub fn new(me: &str, incarnation: u64, suspect_for_ms: u64) -> Membership {
        let seed = me.bytes().fold(0x9e37_79b9_7f4a_7c15u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        }) | 1;
        Membership {
            me: me.to_string(),
            incarnation,
            suspect_for_ms,
            members: BTreeMap::new(),
            order: Vec::new(),
            next: 0,
            seed,
            queue: Vec::new(),
        }
    }

    pub fn incarnation(&self) -> u64 {
        self.incarnation
    }

    /// A proven member (known from its certificate): alive until heard
    /// otherwise. Adding a known one changes nothing.
    pub fn add(&mut self, node: &str, now: u64) {
        if node != self.me && !self.members.contains_key(node) {
            self.members.insert(
                node.to_string(),
                Entry {
                    status: Status::Alive,
                    incarnation: 0,
                    since: now,
                },
            );
        }
    }

    /// A removed member is forgotten.
    pub fn remove(&mut self, node: &str) {
        self.members.remove(node);
        self.queue.retain(|q| q.update.node != node);
    }

    pub fn status(&self, node: &str) -> Option<Status> {
        self.members.get(node).map(|e| e.status)
    }

    /// What this node believes of `node`, as a delta.
    pub fn update_of(&self, node: &str) -> Option<Update> {
        self.members.get(node).map(|e| Update {
            node: node.to_string(),
            status: e.status,
            incarnation: e.incarnation,
        })
    }

    /// Whether `node` counts as healthy: anything but down (a suspect is
    /// given its time to refute).
    pub fn healthy(&self, node: &str) -> bool {
        self.status(node).is_some_and(|s| s != Status::Down)
    }

    /// The member to probe this period: a shuffled round robin over the
    /// members (each is probed once per round, in a new order each round).
    pub fn next_target(&mut self) -> Option<String> {
        if self.next >= self.order.len() {
            self.order = self.members.keys().cloned().collect();
            for i in (1..self.order.len()).rev() {
                let j = (self.random() % (i as u64 + 1)) as usize;
                self.order.swap(i, j);
            }
            self.next = 0;
        }
        while self.next < self.order.len() {
            let node = self.order[self.next].clone();
            self.next += 1;
            if self.members.contains_key(&node) {
                return Some(node);
            }
        }
        None
    }

    /// Up to `k` members other than `target` to ask to probe it (alive ones).
    pub fn helpers(&mut self, target: &str, k: usize) -> Vec<String> {
        let mut alive: Vec<String> = self
            .members
            .iter()
            .filter(|(n, e)| n.as_str() != target && e.status == Status::Alive)
            .map(|(n, _)| n.clone())
            .collect();
        let mut out = Vec::new();
        while out.len() < k && !alive.is_empty() {
            let i = (self.random() % alive.len() as u64) as usize;
            out.push(alive.swap_remove(i));
        }
        out
    }

    /// What this node sends with a probe or an ack: its incarnation and
    /// the deltas least passed on so far. Each delta is passed on a few
    /// times (about 3 log2 of the fleet) and then dropped.
    ///
    /// The first delta is what this node believes of `to` when that is not
    /// alive, so a suspect hears of it from whoever talks to it, and refutes.
    pub fn outgoing(&mut self, to: &str) -> Probe {
        let limit = self.retransmits();
        let mut deltas: Vec<Update> = self
            .update_of(to)
            .filter(|u| u.status != Status::Alive)
            .into_iter()
            .collect();
        self.queue.sort_by_key(|q| q.sent);
        let room = MAX_DELTAS - deltas.len();
        deltas.extend(
            self.queue
                .iter_mut()
                .filter(|q| q.update.node != to)
                .take(room)
                .map(|q| {
                    q.sent += 1;
                    q.update.clone()
                }),
        );
        self.queue.retain(|q| q.sent < limit);
        Probe {
            incarnation: self.incarnation,
            deltas,
        }
    }

    /// A probe or ack from member `from` (over its own connection): its
    /// own incarnation, then its deltas. Refused whole when over bounds.
    pub fn heard(&mut self, from: &str, probe: &Probe, now: u64) -> Result<Vec<Outcome>, String> {
        probe.check()?;
        let mut out = vec![self.alive_from(from, probe.incarnation, now)];
        for u in &probe.deltas {
            out.push(self.apply(from, u, now));
        }
        Ok(out)
    }

    /// `node` speaks for itself (a probe, an ack, its own record) at
    /// `incarnation`: alive, unless that incarnation was already suspected.
    pub fn alive_from(&mut self, node: &str, incarnation: u64, now: u64) -> Outcome {
        let u = Update {
            node: node.to_string(),
            status: Status::Alive,
            incarnation,
        };
        self.apply(node, &u, now)
    }

    /// One delta from member `from`.
    pub fn apply(&mut self, from: &str, u: &Update, now: u64) -> Outcome {
        if u.node == self.me {
            if u.status != Status::Alive && u.incarnation >= self.incarnation {
                self.incarnation = u.incarnation + 1;
                return Outcome::Refuted;
            }
            return Outcome::Stale;
        }
        if u.status == Status::Alive && u.node != from {
            return Outcome::Refused(format!("{from} said {} is alive: only a member itself says so", u.node));
        }
        let Some(e) = self.members.get_mut(&u.node) else {
            return Outcome::Refused(format!("{from} spoke of {}, which is no member", u.node));
        };
        // Down is each member's own verdict: another's is a suspicion here.
        let u = &Update {
            status: u.status.min(Status::Suspect),
            ..u.clone()
        };
        let newer = u.incarnation > e.incarnation;
        let same = u.incarnation == e.incarnation;
        let takes = newer || (same && e.status == Status::Alive);
        if !takes {
            return Outcome::Stale;
        }
        let changed = e.status != u.status;
        e.incarnation = u.incarnation;
        if !changed {
            return Outcome::Stale;
        }
        e.status = u.status;
        e.since = now;
        if u.status == Status::Suspect {
            self.spread(u.clone());
        }
        Outcome::Changed {
            node: u.node.clone(),
            status: u.status,
        }
    }

    /// Neither `node` nor anyone asked for it answered this period.
    pub fn probe_failed(&mut self, node: &str, now: u64) -> Outcome {
        match self.members.get(node) {
            Some(e) if e.status == Status::Alive => {
                let u = Update {
                    node: node.to_string(),
                    status: Status::Suspect,
                    incarnation: e.incarnation,
                };
                let me = self.me.clone();
                self.apply(&me, &u, now)
            }
            _ => Outcome::Stale,
        }
    }

    /// Suspicions nobody refuted in time become down (here only: the
    /// verdict is not passed on); the members that went down.
    pub fn expire(&mut self, now: u64) -> Vec<String> {
        let mut downs = vec![];
        for (n, e) in &mut self.members {
            if e.status == Status::Suspect && now.saturating_sub(e.since) >= self.suspect_for_ms {
                e.status = Status::Down;
                e.since = now;
                downs.push(n.clone());
            }
        }
        downs
    }

    fn spread(&mut self, update: Update) {
        self.queue.retain(|q| q.update.node != update.node);
        self.queue.push(Queued { update, sent: 0 });
    }

    fn retransmits(&self) -> u32 {
        let n = self.members.len() as u32 + 2;
        3 * (u32::BITS - n.leading_zeros())
    }

    /// xorshift64: enough to spread probe orders; nothing secret rides on it.
    fn random(&mut self) -> u64 {
        let mut x = self.seed;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.seed = x;
        x
    }
}

#[cfg(test)]
mod tests;
