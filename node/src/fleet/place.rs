//! Placement, pure: where `agent.create {node: "auto"}` homes an agent. The
//! healthy member with the most room: the fewest live conversations per CPU
//! (counting the new one), then the most memory, then the name, so the same
//! view always gives the same member.

use serde_json::Value;

/// One member as `fleet.nodes` reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct Room {
    pub name: String,
    pub healthy: bool,
    pub live: u64,
    pub cpus: u64,
    pub memory_mb: u64,
}

impl Room {
    /// A `fleet.nodes` entry; `None` for a member not heard from yet.
    pub fn of(node: &Value) -> Option<Room> {
        Some(Room {
            name: node["name"].as_str()?.to_string(),
            healthy: node["healthy"].as_bool().unwrap_or(false),
            live: node["live_conversations"].as_u64().unwrap_or(0),
            cpus: node["capacity"]["cpus"].as_u64().unwrap_or(1).max(1),
            memory_mb: node["capacity"]["memory_mb"].as_u64().unwrap_or(0),
        })
    }
}

/// The member with the most room, among the healthy ones.
pub fn roomiest(rooms: &[Room]) -> Option<&Room> {
    rooms.iter().filter(|r| r.healthy).min_by(|a, b| {
        // (live + 1) / cpus, compared without dividing.
        ((u128::from(a.live) + 1) * u128::from(b.cpus))
            .cmp(&((u128::from(b.live) + 1) * u128::from(a.cpus)))
            .then(b.memory_mb.cmp(&a.memory_mb))
            .then(a.name.cmp(&b.name))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn room(name: &str, healthy: bool, live: u64, cpus: u64, memory_mb: u64) -> Room {
        Room {
            name: name.into(),
            healthy,
            live,
            cpus,
            memory_mb,
        }
    }

    #[test]
    fn the_least_loaded_healthy_member_is_chosen() {
        let cases: Vec<(Vec<Room>, Option<&str>)> = vec![
            (vec![], None),
            (vec![room("a", false, 0, 8, 0)], None),
            (vec![room("a", true, 3, 2, 0), room("b", true, 1, 2, 0)], Some("b")),
            // Per CPU: 4 live on 8 CPUs has more room than 1 on 1.
            (vec![room("a", true, 1, 1, 0), room("b", true, 4, 8, 0)], Some("b")),
            // The unhealthy one is empty but not chosen.
            (vec![room("a", false, 0, 8, 0), room("b", true, 5, 2, 0)], Some("b")),
            // Ties: more memory, then the name.
            (
                vec![room("a", true, 1, 2, 1000), room("b", true, 1, 2, 4000)],
                Some("b"),
            ),
            (
                vec![room("c", true, 1, 2, 1000), room("b", true, 1, 2, 1000)],
                Some("b"),
            ),
        ];
        for (rooms, want) in cases {
            assert_eq!(roomiest(&rooms).map(|r| r.name.as_str()), want, "{rooms:?}");
        }
    }

    #[test]
    fn a_fleet_nodes_entry_reads_as_a_room() {
        let v = serde_json::json!({"name": "n2", "healthy": true, "live_conversations": 3,
            "capacity": {"cpus": 4, "memory_mb": 2048, "guests": 3}});
        assert_eq!(Room::of(&v), Some(room("n2", true, 3, 4, 2048)));
        assert_eq!(Room::of(&serde_json::json!({"name": null})), None);
    }

    proptest! {
        /// The choice does not depend on the order members are listed in.
        #[test]
        fn the_choice_is_the_same_in_any_order(
            rooms in proptest::collection::vec((any::<bool>(), 0u64..20, 1u64..16, 0u64..4), 1..12),
            seed in any::<u64>(),
        ) {
            let rooms: Vec<Room> = rooms.iter().enumerate()
                .map(|(i, (h, l, c, m))| room(&format!("n{i}"), *h, *l, *c, m * 1024)).collect();
            let mut shuffled = rooms.clone();
            let n = shuffled.len();
            for i in 0..n {
                shuffled.swap(i, (seed as usize).wrapping_add(i * 7) % n);
            }
            prop_assert_eq!(roomiest(&rooms).map(|r| &r.name), roomiest(&shuffled).map(|r| &r.name));
        }
    }
}
