//! `decide_mail`: wake-on-mail delivery to a supervised agent, retried once
//! after a back-off, then latched as failed with one needs-you.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How mail reaches a supervised agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MailMode {
    /// One line of nudge text; the agent reads its own inbox.
    #[default]
    Nudge,
    /// Each queued message's compact line, injected directly.
    FullBody,
}

/// The back-off between the first delivery attempt and its single retry.
pub const MAIL_RETRY_BACKOFF: Duration = Duration::from_secs(30);

/// Where one group of queued mail (everything queued for a session) stands.
/// Instants are durations since an origin the caller picks and keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum MailState {
    /// Queued, nothing attempted yet.
    #[default]
    Queued,
    /// The first attempt did not send; the one retry is due at `retry_at`.
    RetryAt { retry_at: Duration },
    /// Sent (latched).
    Delivered,
    /// The retry failed too (latched: never retried, never re-notified).
    DeliveryFailed,
}

/// How one send attempt through verified send ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SendOutcome {
    Sent,
    /// Declined before typing (screen changed, dialog present, capture timeout, ...).
    Skipped,
    /// The backend failed to send.
    Failed,
}

/// What happened since the last step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "event")]
pub enum MailEvent {
    /// A watch-loop pass; `eligible` is whether the session may take input now
    /// (idle, no dialog, no usage-limit menu, not stalled out).
    Tick { now: Duration, eligible: bool },
    /// The attempt the previous step asked for ended.
    Attempted { now: Duration, outcome: SendOutcome },
}

/// What the caller should do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "effect")]
pub enum MailEffect {
    Nothing,
    /// Attempt delivery in this mode through verified send, then report `Attempted`.
    Send {
        mode: MailMode,
        retry: bool,
    },
    /// Mark the group delivered.
    MarkDelivered,
    /// Mark the group delivery-failed and raise needs-you (happens once).
    NeedsYou,
}

/// One step of the retry-once-then-needs-you machine: the new state and the effect.
pub fn decide_mail(state: MailState, event: MailEvent, mode: MailMode, backoff: Duration) -> (MailState, MailEffect) {
    match (state, event) {
        (MailState::Delivered | MailState::DeliveryFailed, _) => (state, MailEffect::Nothing),
        (MailState::Queued, MailEvent::Tick { eligible: true, .. }) => (state, MailEffect::Send { mode, retry: false }),
        (MailState::RetryAt { retry_at }, MailEvent::Tick { now, eligible: true }) if now >= retry_at => {
            (state, MailEffect::Send { mode, retry: true })
        }
        (_, MailEvent::Tick { .. }) => (state, MailEffect::Nothing),
        (
            _,
            MailEvent::Attempted {
                outcome: SendOutcome::Sent,
                ..
            },
        ) => (MailState::Delivered, MailEffect::MarkDelivered),
        (MailState::Queued, MailEvent::Attempted { now, .. }) => (
            MailState::RetryAt {
                retry_at: now.saturating_add(backoff),
            },
            MailEffect::Nothing,
        ),
        (MailState::RetryAt { .. }, MailEvent::Attempted { .. }) => (MailState::DeliveryFailed, MailEffect::NeedsYou),
    }
}

/// How mail reaches an agent (seed 000, wake-on-mail): an agent supervision
/// does not act on keeps receiving each message's full body; a supervised
/// agent gets its `mail_mode`, but a nudge only when it can read its own
/// inbox (it has the `mail` tool), else the full body.
pub fn delivery_mode(supervised: bool, has_mail_tool: bool, mail_mode: MailMode) -> MailMode {
    match (supervised, mail_mode, has_mail_tool) {
        (true, MailMode::Nudge, true) => MailMode::Nudge,
        _ => MailMode::FullBody,
    }
}

/// The mail an agent has not acted on yet: past its acknowledged cursor and
/// past what a confirmed full-body delivery typed into its CLI (a nudge does
/// not count: the agent still has to read its inbox). `newest` is the seq of
/// its newest message. Counts as outstanding work for stall nudges.
pub fn undelivered(newest: Option<u64>, acked: u64, delivered: u64) -> Option<u64> {
    newest.filter(|top| *top > acked.max(delivered))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    fn tick(s: u64, eligible: bool) -> MailEvent {
        MailEvent::Tick { now: secs(s), eligible }
    }

    fn attempted(s: u64, outcome: SendOutcome) -> MailEvent {
        MailEvent::Attempted { now: secs(s), outcome }
    }

    /// Runs a script of (event, expected effect) and returns the final state.
    fn run(script: &[(MailEvent, MailEffect)]) -> MailState {
        let mut state = MailState::default();
        for (i, (event, want)) in script.iter().enumerate() {
            let (next, effect) = decide_mail(state, *event, MailMode::Nudge, MAIL_RETRY_BACKOFF);
            assert_eq!(effect, *want, "step {i}: {event:?} in {state:?}");
            state = next;
        }
        state
    }

    const SEND: MailEffect = MailEffect::Send {
        mode: MailMode::Nudge,
        retry: false,
    };
    const RETRY: MailEffect = MailEffect::Send {
        mode: MailMode::Nudge,
        retry: true,
    };

    #[test]
    fn first_try_delivers() {
        let end = run(&[
            (tick(0, false), MailEffect::Nothing),
            (tick(2, true), SEND),
            (attempted(2, SendOutcome::Sent), MailEffect::MarkDelivered),
            (tick(4, true), MailEffect::Nothing),
        ]);
        assert_eq!(end, MailState::Delivered);
    }

    #[test]
    fn retry_after_backoff_delivers() {
        let end = run(&[
            (tick(0, true), SEND),
            (attempted(0, SendOutcome::Skipped), MailEffect::Nothing),
            (tick(10, true), MailEffect::Nothing),
            (tick(29, true), MailEffect::Nothing),
            (tick(30, false), MailEffect::Nothing),
            (tick(31, true), RETRY),
            (attempted(31, SendOutcome::Sent), MailEffect::MarkDelivered),
        ]);
        assert_eq!(end, MailState::Delivered);
    }

    #[test]
    fn two_failures_latch_and_notify_once() {
        for (first, second) in [
            (SendOutcome::Skipped, SendOutcome::Skipped),
            (SendOutcome::Failed, SendOutcome::Skipped),
            (SendOutcome::Skipped, SendOutcome::Failed),
            (SendOutcome::Failed, SendOutcome::Failed),
        ] {
            let end = run(&[
                (tick(0, true), SEND),
                (attempted(1, first), MailEffect::Nothing),
                (tick(31, true), RETRY),
                (attempted(31, second), MailEffect::NeedsYou),
                (tick(100, true), MailEffect::Nothing),
                (attempted(101, SendOutcome::Failed), MailEffect::Nothing),
                (tick(1000, true), MailEffect::Nothing),
            ]);
            assert_eq!(end, MailState::DeliveryFailed);
        }
    }

    #[test]
    fn full_body_mode_is_passed_through() {
        let (_, effect) = decide_mail(MailState::Queued, tick(0, true), MailMode::FullBody, MAIL_RETRY_BACKOFF);
        assert_eq!(
            effect,
            MailEffect::Send {
                mode: MailMode::FullBody,
                retry: false
            }
        );
    }

    #[test]
    fn custom_backoff() {
        let (state, _) = decide_mail(
            MailState::Queued,
            attempted(5, SendOutcome::Failed),
            MailMode::Nudge,
            secs(2),
        );
        assert_eq!(state, MailState::RetryAt { retry_at: secs(7) });
    }

    #[test]
    fn state_serializes_tagged() {
        let json = serde_json::to_string(&MailState::RetryAt { retry_at: secs(30) }).unwrap();
        assert!(json.contains("\"state\":\"retry_at\""), "{json}");
        let back: MailState = serde_json::from_str(&json).unwrap();
        assert_eq!(back, MailState::RetryAt { retry_at: secs(30) });
    }

    #[test]
    fn delivery_mode_table() {
        use MailMode::*;
        // (supervised, has the mail tool, mail_mode) -> how mail is delivered.
        let table = [
            (false, false, Nudge, FullBody),
            (false, true, Nudge, FullBody),
            (false, false, FullBody, FullBody),
            (false, true, FullBody, FullBody),
            (true, false, Nudge, FullBody),
            (true, true, Nudge, Nudge),
            (true, false, FullBody, FullBody),
            (true, true, FullBody, FullBody),
        ];
        for (supervised, tool, mode, want) in table {
            assert_eq!(
                delivery_mode(supervised, tool, mode),
                want,
                "supervised {supervised}, mail tool {tool}, mail_mode {mode:?}"
            );
        }
    }

    #[test]
    fn delivered_mail_is_no_outstanding_work() {
        // (newest, acked, delivered) -> undelivered top.
        let table = [
            (None, 0, 0, None),
            (Some(5), 0, 0, Some(5)),
            (Some(5), 5, 0, None),
            (Some(5), 0, 5, None),
            (Some(5), 0, 7, None),
            (Some(9), 0, 5, Some(9)),
            (Some(9), 7, 5, Some(9)),
            (Some(9), 9, 5, None),
        ];
        for (newest, acked, delivered, want) in table {
            assert_eq!(
                undelivered(newest, acked, delivered),
                want,
                "newest {newest:?}, acked {acked}, delivered {delivered}"
            );
        }
    }
}
