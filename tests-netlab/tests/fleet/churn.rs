//! Health among 25 members (debug-built nodes, on this 2-core machine):
//! - one killed with `kill -9` is marked down on every other member within
//!   5 s (its connections close and it refuses the redial at once, so well
//!   before `unhealthy_after_ms`), and healthy again everywhere within 5 s of
//!   its restart;
//! - one cut off by nft (no connection closes: only the liveness probes can
//!   tell) is down everywhere within 10 s (a probe period or a few, then
//!   `unhealthy_after_ms` of unrefuted suspicion) and healthy again within
//!   10 s of the heal (it refutes with a higher incarnation);
//! - no other member is ever seen unhealthy meanwhile (no flapping).

use super::*;

const SIZE: usize = 25;
const VICTIM: &str = "n6";
const WITHIN: Duration = Duration::from_secs(5);
/// A cut-off member is found by probes, then given `unhealthy_after_ms`
/// (2.5 s in the lab) to refute.
const CUT_WITHIN: Duration = Duration::from_secs(10);

/// Sweeps every member but the victim until each sees the victim `healthy`
/// (or, for down, no longer lists it as healthy); returns how long that took
/// and every other member some node saw unhealthy on the way.
async fn sweep_until(lab: &Lab, healthy: bool, since: Instant, limit: Duration) -> (Duration, Vec<String>) {
    let mut flaps = vec![];
    let mut done: BTreeMap<String, Duration> = BTreeMap::new();
    while since.elapsed() < limit {
        for n in lab.nodes.iter().filter(|n| n.name != VICTIM) {
            let view = health(n).await;
            for (name, ok) in &view {
                if name != VICTIM && !ok {
                    flaps.push(format!("{} saw {name} unhealthy at {:?}", n.name, since.elapsed()));
                }
            }
            let seen = view.get(VICTIM).copied().unwrap_or(false);
            if seen == healthy {
                done.entry(n.name.clone()).or_insert_with(|| since.elapsed());
            } else if !healthy {
                // Down must hold once seen.
                done.remove(&n.name);
            }
        }
        if done.len() == SIZE - 1 {
            return (done.values().max().copied().unwrap_or_default(), flaps);
        }
    }
    let missing: Vec<&str> = lab
        .nodes
        .iter()
        .map(|n| n.name.as_str())
        .filter(|n| *n != VICTIM && !done.contains_key(*n))
        .collect();
    let tail: String = missing
        .first()
        .map(|n| {
            let log = lab.node(n).log();
            let lines: Vec<&str> = log.lines().collect();
            lines[lines.len().saturating_sub(40)..].join("\n")
        })
        .unwrap_or_default();
    panic!(
        "{VICTIM} {} everywhere within {limit:?}: {missing:?} do not see it so; the first one's log ends:\n{tail}",
        if healthy { "not healthy" } else { "not down" }
    );
}

/// After `what` (begun at `since`): every other member sees the victim
/// `healthy` (or down) within `within`, and none is seen unhealthy on the way.
async fn expect_everywhere(lab: &Lab, healthy: bool, since: Instant, limit: Duration, within: Duration, what: &str) {
    let state = if healthy { "healthy" } else { "down" };
    let (took, flaps) = sweep_until(lab, healthy, since, limit).await;
    eprintln!("{VICTIM} {state} on all {} others {took:?} after {what}", SIZE - 1);
    assert!(flaps.is_empty(), "others flapped after {what}: {flaps:?}");
    assert!(
        took <= within,
        "{VICTIM} was {state} everywhere only {took:?} after {what}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_killed_or_cut_off_among_25_is_down_everywhere_and_back_without_flapping() {
    let names: Vec<String> = (1..=SIZE).map(|i| format!("n{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut lab = Lab::new(&refs).expect("lab");
    found(&mut lab, SIZE).await;
    all_see(&lab, &refs, true, Duration::from_secs(90)).await;
    // Settle: every member has dialed every other.
    tokio::time::sleep(Duration::from_secs(3)).await;

    lab.node_mut(VICTIM).kill9();
    let since = Instant::now();
    expect_everywhere(&lab, false, since, Duration::from_secs(15), WITHIN, "the kill").await;
    let since = Instant::now();
    let at = lab.index(VICTIM);
    lab.start(at, None).expect("the victim restarts");
    expect_everywhere(&lab, true, since, Duration::from_secs(20), WITHIN, "its restart").await;

    // Cut off: nothing closes, nothing refuses; only probes can tell.
    tokio::time::sleep(Duration::from_secs(2)).await;
    lab.node(VICTIM).partition().expect("cut the victim off");
    let since = Instant::now();
    expect_everywhere(&lab, false, since, Duration::from_secs(30), CUT_WITHIN, "the cut").await;
    let since = Instant::now();
    lab.node(VICTIM).heal().expect("heal the victim");
    expect_everywhere(&lab, true, since, Duration::from_secs(30), CUT_WITHIN, "the heal").await;
}
