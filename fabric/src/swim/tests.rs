use super::*;
use proptest::prelude::*;

fn up(node: &str, status: Status, incarnation: u64) -> Update {
    Update {
        node: node.into(),
        status,
        incarnation,
    }
}

fn fleet() -> Membership {
    let mut m = Membership::new("me", 100, 1000);
    for n in ["a", "b", "c"] {
        m.add(n, 0);
    }
    m
}

/// Brings "a" to `status` at `inc`, the way it would get there.
fn known(status: Status, inc: u64) -> Membership {
    let mut m = fleet();
    m.alive_from("a", inc, 0);
    if status != Status::Alive {
        m.apply("b", &up("a", Status::Suspect, inc), 0);
    }
    if status == Status::Down {
        m.expire(1000);
    }
    assert_eq!(m.status("a"), Some(status), "set up {status:?}@{inc}");
    m
}

#[test]
fn updates_follow_the_incarnation_rules() {
    use Status::*;
    // (known status, known incarnation, update, expected status after);
    // another member's `Down` is read as a suspicion.
    let cases = [
        (Alive, 5, up("a", Suspect, 5), Suspect),
        (Alive, 5, up("a", Suspect, 4), Alive),
        (Alive, 5, up("a", Down, 5), Suspect),
        (Alive, 5, up("a", Alive, 6), Alive),
        (Suspect, 5, up("a", Suspect, 5), Suspect),
        (Suspect, 5, up("a", Alive, 5), Suspect),
        (Suspect, 5, up("a", Alive, 6), Alive),
        (Suspect, 5, up("a", Down, 5), Suspect),
        (Suspect, 5, up("a", Suspect, 6), Suspect),
        (Down, 5, up("a", Alive, 5), Down),
        (Down, 5, up("a", Suspect, 5), Down),
        (Down, 5, up("a", Down, 9), Suspect),
        (Down, 5, up("a", Suspect, 6), Suspect),
        (Down, 5, up("a", Alive, 6), Alive),
    ];
    for (status, inc, u, want) in cases {
        let mut m = known(status, inc);
        let from = if u.status == Alive { "a" } else { "b" };
        m.apply(from, &u, 2000);
        assert_eq!(m.status("a"), Some(want), "{status:?}@{inc} then {u:?}");
    }
}

#[test]
fn a_forged_alive_and_a_stranger_are_refused() {
    let mut m = known(Status::Down, 0);
    // "b" says "a" is alive at a higher incarnation: only "a" may.
    let forged = m.apply("b", &up("a", Status::Alive, 99), 1);
    assert!(
        matches!(&forged, Outcome::Refused(r) if r.contains("only a member itself")),
        "{forged:?}"
    );
    assert_eq!(m.status("a"), Some(Status::Down));
    let stranger = m.apply("b", &up("zed", Status::Suspect, 1), 1);
    assert!(
        matches!(&stranger, Outcome::Refused(r) if r.contains("no member")),
        "{stranger:?}"
    );
    assert_eq!(m.status("zed"), None);
}

#[test]
fn a_stale_incarnation_changes_nothing() {
    let mut m = fleet();
    m.alive_from("a", 7, 0);
    assert_eq!(m.apply("b", &up("a", Status::Suspect, 6), 1), Outcome::Stale);
    assert_eq!(m.apply("b", &up("a", Status::Down, 3), 1), Outcome::Stale);
    assert_eq!(m.status("a"), Some(Status::Alive));
    assert!(m.outgoing("c").deltas.is_empty(), "a stale update is not passed on");
}

#[test]
fn an_oversize_or_garbled_probe_is_refused_whole() {
    let mut m = fleet();
    let many = Probe {
        incarnation: 1,
        deltas: (0..=MAX_DELTAS).map(|_| up("a", Status::Down, 50)).collect(),
    };
    let e = m.heard("b", &many, 0).unwrap_err();
    assert!(e.contains("17 deltas") && e.contains("at most 16"), "{e}");
    assert_eq!(m.status("a"), Some(Status::Alive), "nothing of it was read");
    let long = Probe {
        incarnation: 1,
        deltas: vec![up(&"x".repeat(300), Status::Down, 1)],
    };
    assert!(m.heard("b", &long, 0).unwrap_err().contains("300 bytes"));
    let empty = Probe {
        incarnation: 1,
        deltas: vec![up("", Status::Down, 1)],
    };
    assert!(m.heard("b", &empty, 0).is_err());
}

#[test]
fn a_suspicion_of_this_node_is_refuted_by_a_higher_incarnation() {
    let mut m = fleet();
    assert_eq!(m.apply("a", &up("me", Status::Suspect, 100), 0), Outcome::Refuted);
    assert_eq!(m.incarnation(), 101);
    assert_eq!(m.outgoing("a").incarnation, 101);
    // An old suspicion (of an incarnation already left behind) is stale.
    assert_eq!(m.apply("a", &up("me", Status::Down, 100), 0), Outcome::Stale);
    assert_eq!(m.apply("a", &up("me", Status::Down, 101), 0), Outcome::Refuted);
    assert_eq!(m.incarnation(), 102);
}

#[test]
fn an_unanswered_probe_suspects_and_an_unrefuted_suspicion_goes_down() {
    let mut m = fleet();
    assert_eq!(
        m.probe_failed("a", 10),
        Outcome::Changed {
            node: "a".into(),
            status: Status::Suspect
        }
    );
    assert!(m.healthy("a"), "a suspect is still given its time");
    assert!(m.expire(1009).is_empty());
    assert_eq!(m.expire(1010), vec!["a".to_string()]);
    assert!(!m.healthy("a"));
    // The suspicion is passed on; the verdict is this node's own.
    assert_eq!(m.outgoing("b").deltas, vec![up("a", Status::Suspect, 0)]);
    for _ in 0..30 {
        m.outgoing("b");
    }
    assert!(m.outgoing("b").deltas.is_empty(), "passed on a bounded number of times");
    // Whoever talks to "a" tells it what it believes of it, first.
    assert_eq!(m.alive_from("a", 0, 2000), Outcome::Stale);
    assert_eq!(m.outgoing("a").deltas, vec![up("a", Status::Down, 0)]);
    // "a" hears it and refutes: a higher incarnation, from itself.
    let mut a = Membership::new("a", 0, 1000);
    a.add("me", 0);
    let told = m.outgoing("a");
    assert_eq!(a.heard("me", &told, 2000), Ok(vec![Outcome::Stale, Outcome::Refuted]));
    assert_eq!(a.incarnation(), 1);
    let back = a.outgoing("me");
    m.heard("a", &back, 2001).expect("within bounds");
    assert!(m.healthy("a"));
}

#[test]
fn each_round_probes_every_member_once_in_a_new_order() {
    let mut m = Membership::new("me", 1, 1000);
    for i in 0..20 {
        m.add(&format!("n{i}"), 0);
    }
    m.add("me", 0);
    let mut rounds = vec![];
    for _ in 0..3 {
        let mut round: Vec<String> = (0..20).filter_map(|_| m.next_target()).collect();
        let order = round.clone();
        round.sort();
        round.dedup();
        assert_eq!(round.len(), 20, "every member once, never itself");
        rounds.push(order);
    }
    assert_ne!(rounds[0], rounds[1], "a new order each round");
    m.remove("n3");
    let next: Vec<String> = (0..19).filter_map(|_| m.next_target()).collect();
    assert!(!next.contains(&"n3".to_string()));
    assert_eq!(m.helpers("n0", 3).len(), 3);
    assert!(!m.helpers("n0", 30).contains(&"n0".to_string()));
}

proptest! {
    /// Whatever members say, in any order: nobody but a member itself
    /// makes it alive again, incarnations never go back, nothing sent is
    /// over the bound, and this node's incarnation only rises.
    #[test]
    fn no_sequence_of_updates_breaks_the_rules(
        ops in prop::collection::vec((0usize..4, 0usize..4, 0u8..3, 0u64..6), 1..80)
    ) {
        let names = ["me", "a", "b", "c"];
        let mut m = Membership::new("me", 2, 5);
        for n in &names[1..] {
            m.add(n, 0);
        }
        let mut last_inc = m.incarnation();
        for (t, (from, node, status, inc)) in ops.into_iter().enumerate() {
            let status = [Status::Alive, Status::Suspect, Status::Down][status as usize];
            let (from, node) = (names[from], names[node]);
            let before = m.members.get(node).cloned();
            let u = Update { node: node.into(), status, incarnation: inc };
            m.apply(from, &u, t as u64);
            if let (Some(b), Some(a)) = (before, m.members.get(node)) {
                prop_assert!(a.incarnation >= b.incarnation);
                if a.status == Status::Alive && b.status != Status::Alive {
                    prop_assert_eq!(from, node, "made alive by another member");
                }
            }
            prop_assert!(m.incarnation() >= last_inc);
            last_inc = m.incarnation();
            m.expire(t as u64);
            prop_assert!(m.outgoing(names[t % 4]).deltas.len() <= MAX_DELTAS);
        }
    }
}
