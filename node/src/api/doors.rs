//! Who gets a WebSocket. Authenticated clients (a bearer on the upgrade, or
//! `session.authenticate` later) share `[limits] max_connections`; a client
//! with no token yet waits in a small pool of its own
//! (`max_anonymous_connections`, at most `max_anonymous_per_source` from one
//! address) for at most `auth_deadline_ms`, so nothing anonymous can keep an
//! authenticated client out. `Slots` is the pure count; `AnonymousPool` the
//! lock around it and the slot a connection holds.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

/// The address limits count by: an IPv4 address, or an IPv6 address's /64
/// (one host's usual share, so its 2^64 addresses count as one).
pub fn source_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !0xffff_ffff_ffff_ffffu128)),
        },
        v4 => v4,
    }
}

/// Why an unauthenticated upgrade was turned away.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "too many unauthenticated connections from this address ({0}): send a bearer token on the upgrade, or call session.authenticate at once"
    )]
    FromSource(usize),
    #[error("too many unauthenticated connections ({0}): send a bearer token on the upgrade")]
    Full(usize),
}

/// The unauthenticated connections, counted in all and per address (pure).
#[derive(Debug, Default)]
pub struct Slots {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

impl Slots {
    /// Takes a slot for `source`, within both limits.
    pub fn admit(&mut self, source: IpAddr, max_total: usize, max_per_source: usize) -> Result<(), Refusal> {
        let mine = self.by_source.get(&source).copied().unwrap_or(0);
        if mine >= max_per_source {
            return Err(Refusal::FromSource(max_per_source));
        }
        if self.total >= max_total {
            return Err(Refusal::Full(max_total));
        }
        self.total += 1;
        *self.by_source.entry(source).or_default() += 1;
        Ok(())
    }

    /// Gives back a slot `admit` took.
    pub fn release(&mut self, source: IpAddr) {
        if let Some(n) = self.by_source.get_mut(&source) {
            *n -= 1;
            if *n == 0 {
                self.by_source.remove(&source);
            }
            self.total = self.total.saturating_sub(1);
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }
}

/// The pool of unauthenticated connections and its limits.
pub struct AnonymousPool {
    slots: Arc<Mutex<Slots>>,
    max_total: usize,
    max_per_source: usize,
    /// How long a connection may stay unauthenticated.
    pub deadline: Duration,
}

impl AnonymousPool {
    pub fn new(max_total: usize, max_per_source: usize, deadline: Duration) -> AnonymousPool {
        AnonymousPool {
            slots: Default::default(),
            max_total,
            max_per_source,
            deadline,
        }
    }

    /// A slot for an unauthenticated connection from `source`.
    pub fn admit(&self, source: IpAddr) -> Result<AnonymousSlot, Refusal> {
        let source = source_key(source);
        let mut slots = self.slots.lock().map_err(|_| Refusal::Full(self.max_total))?;
        slots.admit(source, self.max_total, self.max_per_source)?;
        Ok(AnonymousSlot {
            slots: self.slots.clone(),
            source,
        })
    }
}

/// One unauthenticated connection's place; dropping it frees the place.
pub struct AnonymousSlot {
    slots: Arc<Mutex<Slots>>,
    source: IpAddr,
}

impl Drop for AnonymousSlot {
    fn drop(&mut self) {
        if let Ok(mut s) = self.slots.lock() {
            s.release(self.source);
        }
    }
}

/// What a WebSocket connection holds while it is open.
pub enum Admission {
    /// A place among the authenticated connections.
    Authenticated(OwnedSemaphorePermit),
    /// A place in the unauthenticated pool (until it authenticates).
    Anonymous(AnonymousSlot),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    #[test]
    fn each_address_and_the_pool_are_bounded() {
        let mut s = Slots::default();
        assert_eq!(s.admit(ip(1), 3, 2), Ok(()));
        assert_eq!(s.admit(ip(1), 3, 2), Ok(()));
        assert_eq!(s.admit(ip(1), 3, 2), Err(Refusal::FromSource(2)));
        assert_eq!(s.admit(ip(2), 3, 2), Ok(()));
        assert_eq!(s.admit(ip(3), 3, 2), Err(Refusal::Full(3)));
        s.release(ip(1));
        assert_eq!(s.admit(ip(3), 3, 2), Ok(()));
        // Releasing what was never taken changes nothing.
        s.release(ip(9));
        assert_eq!(s.total(), 3);
    }

    #[test]
    fn an_ipv6_host_counts_as_its_64() {
        let a: IpAddr = "2001:db8:1:2::1".parse().expect("ip");
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().expect("ip");
        let c: IpAddr = "2001:db8:1:3::1".parse().expect("ip");
        assert_eq!(source_key(a), source_key(b));
        assert_ne!(source_key(a), source_key(c));
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert_eq!(source_key(mapped), ip(1));
        assert_eq!(source_key(ip(7)), ip(7));
    }

    #[test]
    fn a_dropped_slot_is_free_again() {
        let pool = AnonymousPool::new(1, 1, Duration::from_secs(1));
        let slot = pool.admit(ip(1)).expect("room");
        assert!(pool.admit(ip(2)).is_err());
        drop(slot);
        assert!(pool.admit(ip(2)).is_ok());
    }

    proptest::proptest! {
        /// Any interleaving of admits and releases keeps both bounds and
        /// counts exactly the slots held.
        #[test]
        fn bounds_hold(ops in proptest::collection::vec((0u8..4, proptest::bool::ANY), 0..200)) {
            let mut s = Slots::default();
            let mut held: Vec<IpAddr> = vec![];
            for (who, take) in ops {
                if take {
                    if s.admit(ip(who), 5, 2).is_ok() {
                        held.push(ip(who));
                    }
                } else if let Some(i) = held.iter().position(|h| *h == ip(who)) {
                    held.remove(i);
                    s.release(ip(who));
                }
                proptest::prop_assert!(s.total() <= 5);
                proptest::prop_assert_eq!(s.total(), held.len());
                for w in 0..4 {
                    proptest::prop_assert!(held.iter().filter(|h| **h == ip(w)).count() <= 2);
                }
            }
        }
    }
}
