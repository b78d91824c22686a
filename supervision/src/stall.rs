//! `decide_stall`: nudge a stalled agent, space further nudges, escalate once,
//! and start over when the agent moves again.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The least time between two nudges of one episode (and between the last
/// nudge and the escalation).
pub const NUDGE_INTERVAL: Duration = Duration::from_secs(5 * 60);

/// Thresholds for one agent (see `Policy::stall_params`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallParams {
    /// How long the session must have been idle and its pane unchanged.
    pub threshold: Duration,
    /// The least spacing of nudges.
    pub interval: Duration,
    /// Nudges before the escalation.
    pub retries: u32,
}

/// One session's stall episode. `Default` is "no episode".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StallEpisode {
    pub nudges: u32,
    /// When the last nudge (or the escalation) went out.
    pub last_action_at: Option<Duration>,
    /// Latched: no more nudges until the episode resets.
    pub escalated: bool,
}

/// What the watch loop sees of one session on this pass. Instants are
/// durations since an origin the caller picks and keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StallObservation {
    pub now: Duration,
    /// Unread mail for the agent, or its expect-work flag.
    pub outstanding_work: bool,
    /// The session may take input now (idle or turn ended, no dialog, not external).
    pub eligible: bool,
    /// The agent's own last activity (its output, a human's input; not supervision's nudges).
    pub last_activity: Duration,
    /// Since when the pane has been unchanged; `None` (never seen) never counts as quiet.
    pub pane_unchanged_since: Option<Duration>,
}

/// What to do on this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "action")]
pub enum StallAction {
    Nothing,
    /// Send the nudge text; `number` counts from 1.
    Nudge {
        number: u32,
    },
    /// Journal a hold and raise needs-you (once per episode).
    Escalate {
        nudges: u32,
    },
}

fn at_least(now: Duration, since: Duration, span: Duration) -> bool {
    now.checked_sub(since).is_some_and(|d| d >= span)
}

/// One pass of the stall machine: the new episode and the action.
///
/// The episode resets when outstanding work clears or when the agent's
/// activity moves past the last nudge. The first nudge needs both the
/// session's idle time and the pane's quiet time to reach the threshold;
/// further nudges follow at least `interval` apart while nothing moves, up to
/// `retries` nudges; the escalation comes `interval` after the last nudge
/// (at once when `retries` is 0) and is latched.
pub fn decide_stall(
    episode: StallEpisode,
    seen: &StallObservation,
    params: &StallParams,
) -> (StallEpisode, StallAction) {
    let mut episode = episode;
    if !seen.outstanding_work {
        return (StallEpisode::default(), StallAction::Nothing);
    }
    if episode.last_action_at.is_some_and(|at| seen.last_activity > at) {
        episode = StallEpisode::default();
    }
    if episode.escalated || !seen.eligible {
        return (episode, StallAction::Nothing);
    }
    let due = match episode.last_action_at {
        None => {
            let idle = at_least(seen.now, seen.last_activity, params.threshold);
            let quiet = seen
                .pane_unchanged_since
                .is_some_and(|since| at_least(seen.now, since, params.threshold));
            idle && quiet
        }
        Some(at) => at_least(seen.now, at, params.interval),
    };
    if !due {
        return (episode, StallAction::Nothing);
    }
    episode.last_action_at = Some(seen.now);
    if episode.nudges < params.retries {
        episode.nudges += 1;
        (episode, StallAction::Nudge { number: episode.nudges })
    } else {
        episode.escalated = true;
        (episode, StallAction::Escalate { nudges: episode.nudges })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    const PARAMS: StallParams = StallParams {
        threshold: Duration::from_secs(60),
        interval: Duration::from_secs(300),
        retries: 2,
    };

    fn quiet(now: u64) -> StallObservation {
        StallObservation {
            now: secs(now),
            outstanding_work: true,
            eligible: true,
            last_activity: secs(0),
            pane_unchanged_since: Some(secs(0)),
        }
    }

    /// Runs observations in order and returns the actions taken.
    fn run(params: &StallParams, seen: &[StallObservation]) -> Vec<StallAction> {
        let mut episode = StallEpisode::default();
        seen.iter()
            .map(|s| {
                let (next, action) = decide_stall(episode, s, params);
                episode = next;
                action
            })
            .collect()
    }

    #[test]
    fn nudge_nudge_escalate_once() {
        use StallAction::*;
        let times = [30, 59, 60, 61, 300, 359, 360, 659, 660, 661, 2000, 5000];
        let seen: Vec<_> = times.iter().map(|t| quiet(*t)).collect();
        assert_eq!(
            run(&PARAMS, &seen),
            vec![
                Nothing,
                Nothing,
                Nudge { number: 1 },
                Nothing,
                Nothing,
                Nothing,
                Nudge { number: 2 },
                Nothing,
                Escalate { nudges: 2 },
                Nothing,
                Nothing,
                Nothing
            ]
        );
    }

    #[test]
    fn pane_must_be_quiet_too() {
        let mut s = quiet(100);
        s.pane_unchanged_since = None;
        assert_eq!(run(&PARAMS, &[s]), vec![StallAction::Nothing]);
        s.pane_unchanged_since = Some(secs(90));
        assert_eq!(run(&PARAMS, &[s]), vec![StallAction::Nothing]);
        s.pane_unchanged_since = Some(secs(40));
        assert_eq!(run(&PARAMS, &[s]), vec![StallAction::Nudge { number: 1 }]);
        let mut busy = quiet(100);
        busy.last_activity = secs(50);
        assert_eq!(run(&PARAMS, &[busy]), vec![StallAction::Nothing]);
    }

    #[test]
    fn no_work_or_not_eligible_does_nothing() {
        let mut s = quiet(1000);
        s.outstanding_work = false;
        assert_eq!(run(&PARAMS, &[s]), vec![StallAction::Nothing]);
        let mut s = quiet(1000);
        s.eligible = false;
        assert_eq!(run(&PARAMS, &[s]), vec![StallAction::Nothing]);
    }

    #[test]
    fn activity_after_a_nudge_resets() {
        let mut episode = StallEpisode::default();
        let (next, a) = decide_stall(episode, &quiet(60), &PARAMS);
        assert_eq!(a, StallAction::Nudge { number: 1 });
        episode = next;
        // The agent moves at 100; at 400 it is only 300 s idle: past threshold, so a fresh first nudge.
        let mut s = quiet(400);
        s.last_activity = secs(100);
        s.pane_unchanged_since = Some(secs(100));
        let (next, a) = decide_stall(episode, &s, &PARAMS);
        assert_eq!(a, StallAction::Nudge { number: 1 });
        assert_eq!(next.nudges, 1);
        // Activity right before the check: reset and not yet due.
        let mut s = quiet(500);
        s.last_activity = secs(480);
        let (next, a) = decide_stall(next, &s, &PARAMS);
        assert_eq!(a, StallAction::Nothing);
        assert_eq!(next, StallEpisode::default());
    }

    #[test]
    fn escalated_episode_resets_on_activity_or_cleared_work() {
        let escalated = StallEpisode {
            nudges: 2,
            last_action_at: Some(secs(660)),
            escalated: true,
        };
        assert_eq!(
            decide_stall(escalated, &quiet(5000), &PARAMS),
            (escalated, StallAction::Nothing)
        );
        let mut moved = quiet(700);
        moved.last_activity = secs(690);
        assert_eq!(decide_stall(escalated, &moved, &PARAMS).0, StallEpisode::default());
        let mut cleared = quiet(700);
        cleared.outstanding_work = false;
        assert_eq!(decide_stall(escalated, &cleared, &PARAMS).0, StallEpisode::default());
    }

    #[test]
    fn zero_retries_escalates_at_threshold() {
        let params = StallParams { retries: 0, ..PARAMS };
        assert_eq!(
            run(&params, &[quiet(59), quiet(60), quiet(10_000)]),
            vec![
                StallAction::Nothing,
                StallAction::Escalate { nudges: 0 },
                StallAction::Nothing
            ]
        );
    }

    #[test]
    fn seconds_scale_configs_work() {
        let params = StallParams {
            threshold: secs(2),
            interval: secs(1),
            retries: 2,
        };
        let seen: Vec<_> = [1, 2, 3, 4].iter().map(|t| quiet(*t)).collect();
        assert_eq!(
            run(&params, &seen),
            vec![
                StallAction::Nothing,
                StallAction::Nudge { number: 1 },
                StallAction::Nudge { number: 2 },
                StallAction::Escalate { nudges: 2 }
            ]
        );
    }
}
