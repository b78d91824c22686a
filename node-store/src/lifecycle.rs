//! The conversation lifecycle as a pure state machine:
//! `starting -> active -> paused -> starting ...`, and `archived` at the end.

use console_api::ConversationState as S;

/// What is asked of a conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    /// The CLI process is up.
    Launched,
    /// Pause (a request, a crash, an exit, or the launch failing).
    Pause,
    /// Relaunch with the native resume reference.
    Continue,
    /// End it for good; the record stays.
    Terminate,
}

impl Transition {
    fn verb(self) -> &'static str {
        match self {
            Transition::Launched => "launch",
            Transition::Pause => "pause",
            Transition::Continue => "continue",
            Transition::Terminate => "terminate",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot {verb} a conversation that is {from}")]
pub struct InvalidTransition {
    pub verb: &'static str,
    pub from: &'static str,
}

/// The state after `t`, or why `t` is not allowed from `from`.
pub fn next(from: S, t: Transition) -> Result<S, InvalidTransition> {
    let to = match (from, t) {
        (S::Starting, Transition::Launched) => S::Active,
        (S::Starting | S::Active, Transition::Pause) => S::Paused,
        (S::Paused, Transition::Continue) => S::Starting,
        (S::Starting | S::Active | S::Paused, Transition::Terminate) => S::Archived,
        _ => {
            return Err(InvalidTransition {
                verb: t.verb(),
                from: from.as_str(),
            });
        }
    };
    Ok(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_STATES: [S; 4] = [S::Starting, S::Active, S::Paused, S::Archived];
    const ALL_TRANSITIONS: [Transition; 4] = [
        Transition::Launched,
        Transition::Pause,
        Transition::Continue,
        Transition::Terminate,
    ];

    #[test]
    fn the_happy_path() {
        let s = next(S::Starting, Transition::Launched).expect("launch");
        assert_eq!(s, S::Active);
        let s = next(s, Transition::Pause).expect("pause");
        assert_eq!(s, S::Paused);
        let s = next(s, Transition::Continue).expect("continue");
        assert_eq!(s, S::Starting);
        assert_eq!(next(s, Transition::Terminate), Ok(S::Archived));
    }

    #[test]
    fn archived_is_final() {
        for t in ALL_TRANSITIONS {
            let err = next(S::Archived, t).expect_err("archived accepts nothing");
            assert_eq!(err.from, "archived");
        }
    }

    #[test]
    fn invalid_transitions_name_both_sides() {
        let err = next(S::Paused, Transition::Pause).expect_err("double pause");
        assert_eq!(err.to_string(), "cannot pause a conversation that is paused");
        let err = next(S::Active, Transition::Continue).expect_err("continue live");
        assert_eq!(err.to_string(), "cannot continue a conversation that is active");
        assert!(next(S::Active, Transition::Launched).is_err());
        assert!(next(S::Paused, Transition::Launched).is_err());
    }

    #[test]
    fn exactly_the_documented_edges_exist() {
        let mut allowed = 0;
        for s in ALL_STATES {
            for t in ALL_TRANSITIONS {
                if next(s, t).is_ok() {
                    allowed += 1;
                }
            }
        }
        // launched(1) + pause(2) + continue(1) + terminate(3)
        assert_eq!(allowed, 7);
    }
}
