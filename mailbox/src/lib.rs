//! The inter-agent mailbox (seed 002 §6-7) as pure decisions: sending is a
//! command that becomes one `message_sent` event, reading is a projection of
//! those events from a cursor. No IO: the node stores the events and keeps
//! the projection in SQLite; this crate decides and folds.
//!
//! # Delivery semantics (decided)
//!
//! - **Ordering.** Every message gets the event log's global sequence number
//!   when its send commits; an inbox is its messages in that order. Sends one
//!   sender got acknowledged in order appear in that order; sends from
//!   different senders interleave in commit order. The cursor is that
//!   sequence number, so "after cursor N" is stable across restarts and
//!   rebuilds (replay assigns nothing new).
//! - **Stored exactly once.** An acknowledged send (it returned
//!   `{message_id, seq}`) is durable (the log is written with
//!   `synchronous=FULL`) and is exactly one row. A send whose answer was lost
//!   may or may not have committed; sending again may store it twice, so a
//!   sender that must not duplicate puts its own id in `context`.
//! - **Shown at least once.** Reading never consumes: the inbox shows every
//!   message past the agent's acknowledged cursor until `ack` moves the
//!   cursor (forward only). Delivery into a conversation therefore re-shows
//!   messages whose cursor was not advanced (after a crash, or when the agent
//!   never acked): at-least-once display, exactly-once storage.
//! - **No wake.** Mail never starts a conversation; it waits in the inbox and
//!   is surfaced to the next (or the live) conversation once its CLI is idle.

#![cfg_attr(not(test), deny(clippy::unwrap_used))]

pub mod address;
mod inbox;
mod limits;

pub use address::Address;
pub use inbox::{Inbox, Message};
pub use limits::{RateLimit, RateLimiter};

/// Most bytes of a message body.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Most bytes of a message's conversation context.
pub const MAX_CONTEXT_BYTES: usize = 1024;

/// Why a send or an ack is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// A field of the message is not acceptable (the message names it).
    #[error("{field}: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// The sender holds no may-message right for the recipient.
    #[error("agent {from:?} may not message {to:?}: {reason}")]
    Forbidden { from: String, to: String, reason: String },
    /// The sender sent more than its rate allows.
    #[error("agent {from:?} is over its mail rate ({limit}); retry in {retry_after_ms} ms")]
    RateLimited {
        from: String,
        limit: String,
        retry_after_ms: u64,
    },
}

/// Whom an agent may message (`grants.peers`), one direction: that `a` may
/// message `b` says nothing about `b` messaging `a`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Peers {
    /// No one (no `grants.peers`).
    #[default]
    None,
    /// Every agent of the owner on this node (`"all"`); not agents homed
    /// on other members.
    All,
    /// Exactly these agents (`NAME`, or `NAME@NODE` for one homed on
    /// another member).
    List(Vec<String>),
}

impl Peers {
    pub fn allows(&self, to: &str) -> bool {
        match self {
            Peers::None => false,
            Peers::All => !to.contains('@'),
            Peers::List(names) => names.iter().any(|n| n == to),
        }
    }
}

/// What the send decision needs to know about the two agents.
#[derive(Debug, Clone)]
pub struct SendCheck<'a> {
    pub from: &'a str,
    pub to: &'a str,
    /// The sender's current grants (read at send time, so a grant edit
    /// takes effect on the next send).
    pub peers: &'a Peers,
    pub recipient_archived: bool,
    pub body: &'a str,
    pub context: Option<&'a str>,
}

/// Decides a send: the direction is granted, the recipient takes mail, and
/// the body and context are acceptable. Rate limits are separate
/// ([`RateLimiter`]) because they depend on time.
pub fn decide_send(c: &SendCheck<'_>) -> Result<(), MailError> {
    if !c.peers.allows(c.to) {
        let reason = match c.peers {
            Peers::None => "it has no grants.peers".to_string(),
            Peers::All => format!(
                "grants.peers \"all\" covers this node's agents only; name {:?} in it to reach an agent on another node",
                c.to
            ),
            Peers::List(_) => "not in its grants.peers".to_string(),
        };
        return Err(MailError::Forbidden {
            from: c.from.into(),
            to: c.to.into(),
            reason,
        });
    }
    if c.recipient_archived {
        return Err(MailError::Forbidden {
            from: c.from.into(),
            to: c.to.into(),
            reason: format!("agent {:?} is archived", c.to),
        });
    }
    text("body", c.body, MAX_BODY_BYTES, false)?;
    if let Some(ctx) = c.context {
        text("context", ctx, MAX_CONTEXT_BYTES, true)?;
    }
    Ok(())
}

/// What the recipient's home decides about a message another member hands
/// over: the sender's grant was checked at the sender's node; here the
/// recipient must take mail and the message must be acceptable on its own.
pub fn decide_receipt(
    id: &str,
    recipient_archived: bool,
    to: &str,
    body: &str,
    context: Option<&str>,
) -> Result<(), MailError> {
    address::check_id(id)?;
    if recipient_archived {
        return Err(MailError::Invalid {
            field: "to",
            reason: format!("agent {to:?} is archived"),
        });
    }
    text("body", body, MAX_BODY_BYTES, false)?;
    if let Some(ctx) = context {
        text("context", ctx, MAX_CONTEXT_BYTES, true)?;
    }
    Ok(())
}

/// Decides an ack: the cursor is clamped to `last`, the inbox's newest
/// message (no one can ack mail that does not exist yet, so a cursor from
/// the far future never hides later mail), and only moves forward; `None`
/// when it would not move.
pub fn decide_ack(current: u64, cursor: u64, last: u64) -> Option<u64> {
    let cursor = cursor.min(last);
    (cursor > current).then_some(cursor)
}

fn text(field: &'static str, s: &str, max: usize, may_be_empty: bool) -> Result<(), MailError> {
    let bad = |reason: String| MailError::Invalid { field, reason };
    if !may_be_empty && s.trim().is_empty() {
        return Err(bad("is empty".into()));
    }
    if s.len() > max {
        return Err(bad(format!("{} bytes is over the limit of {max}", s.len())));
    }
    if let Some((i, c)) = s.char_indices().find(|&(_, c)| forbidden(c)) {
        return Err(bad(format!(
            "control character U+{:04X} at byte {i} is not allowed",
            c as u32
        )));
    }
    Ok(())
}

/// Control characters other than newline and tab: they could steer the
/// terminal of the conversation the mail is delivered into.
fn forbidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn check<'a>(from: &'a str, to: &'a str, peers: &'a Peers, body: &'a str) -> SendCheck<'a> {
        SendCheck {
            from,
            to,
            peers,
            recipient_archived: false,
            body,
            context: None,
        }
    }

    #[test]
    fn the_direction_is_granted_per_pair() {
        let a = Peers::List(vec!["b".into()]);
        let b = Peers::None;
        let all = Peers::All;
        assert_eq!(decide_send(&check("a", "b", &a, "hi")), Ok(()));
        assert!(matches!(
            decide_send(&check("a", "c", &a, "hi")),
            Err(MailError::Forbidden { .. })
        ));
        let back = decide_send(&check("b", "a", &b, "hi")).expect_err("b was granted nothing");
        assert!(back.to_string().contains("no grants.peers"), "{back}");
        assert_eq!(decide_send(&check("c", "zz", &all, "hi")), Ok(()));
        // Another node's agent is reached only by naming it.
        let far = decide_send(&check("c", "zz@n3", &all, "hi")).expect_err("all is this node");
        assert!(far.to_string().contains("this node's agents only"), "{far}");
        let named = Peers::List(vec!["zz@n3".into()]);
        assert_eq!(decide_send(&check("c", "zz@n3", &named, "hi")), Ok(()));
        assert!(decide_send(&check("c", "zz@n4", &named, "hi")).is_err());
    }

    #[test]
    fn a_handed_over_message_is_checked_again_on_its_own() {
        assert_eq!(decide_receipt("mail-1", false, "b", "hi", None), Ok(()));
        assert!(decide_receipt("x", false, "b", "hi", None).is_err());
        assert!(
            decide_receipt("mail-1", true, "b", "hi", None)
                .expect_err("archived")
                .to_string()
                .contains("archived")
        );
        let big = "x".repeat(MAX_BODY_BYTES + 1);
        assert!(
            decide_receipt("mail-1", false, "b", &big, None)
                .expect_err("big")
                .to_string()
                .contains("over the limit")
        );
        assert!(decide_receipt("mail-1", false, "b", "esc \u{1b}[2J", None).is_err());
    }

    #[test]
    fn an_archived_recipient_takes_no_mail() {
        let mut c = check("a", "b", &Peers::All, "hi");
        c.recipient_archived = true;
        assert!(decide_send(&c).expect_err("archived").to_string().contains("archived"));
    }

    #[test]
    fn bodies_are_bounded_and_free_of_terminal_controls() {
        let all = Peers::All;
        let table: &[(&str, &str)] = &[
            ("", "is empty"),
            ("   \n", "is empty"),
            ("ring\u{7}bell", "U+0007"),
            ("esc \u{1b}[2J", "U+001B"),
            ("cr\rreturn", "U+000D"),
            ("bidi \u{202E}txt", "U+202E"),
        ];
        for (body, why) in table {
            let e = decide_send(&check("a", "b", &all, body)).expect_err(body);
            assert!(
                e.to_string().starts_with("body: ") && e.to_string().contains(why),
                "{body:?}: {e}"
            );
        }
        let big = "x".repeat(MAX_BODY_BYTES + 1);
        assert!(
            decide_send(&check("a", "b", &all, &big))
                .expect_err("big")
                .to_string()
                .contains("over the limit")
        );
        assert_eq!(decide_send(&check("a", "b", &all, "two\nlines\tand a tab")), Ok(()));
        let mut c = check("a", "b", &all, "ok");
        let ctx = "c".repeat(MAX_CONTEXT_BYTES + 1);
        c.context = Some(&ctx);
        assert!(decide_send(&c).expect_err("ctx").to_string().starts_with("context: "));
    }

    #[test]
    fn acks_only_move_forward() {
        assert_eq!(decide_ack(0, 10, 10), Some(10));
        assert_eq!(decide_ack(10, 5, 20), None);
        assert_eq!(decide_ack(10, 10, 20), None);
        // Clamped to the newest message, whatever the cursor.
        assert_eq!(decide_ack(0, i64::MAX as u64, 7), Some(7));
        assert_eq!(decide_ack(0, u64::MAX, 7), Some(7));
        assert_eq!(decide_ack(7, u64::MAX, 7), None);
        assert_eq!(decide_ack(0, 5, 0), None, "an empty inbox has nothing to ack");
    }

    proptest! {
        /// Whatever cursors are acked (u64 extremes included), a message sent
        /// after them is unread: no ack hides mail that did not exist yet.
        #[test]
        fn no_ack_hides_later_mail(ops in proptest::collection::vec(
            prop_oneof![
                (0u8..3).prop_map(|to| (true, to, 0u64)),
                (0u8..3, prop_oneof![any::<u64>(), Just(u64::MAX), Just(i64::MAX as u64), 0u64..64])
                    .prop_map(|(a, c)| (false, a, c)),
            ],
            0..64,
        )) {
            let names = ["a", "b", "c"];
            let mut inbox = Inbox::default();
            for (seq, (send, who, cursor)) in ops.into_iter().enumerate() {
                let seq = seq as u64 + 1;
                let agent = names[who as usize];
                if send {
                    inbox.sent(Message { seq, id: format!("m{seq}"), from: "x".into(), to: agent.into(), context: None, body: "b".into() });
                    prop_assert!(inbox.unread(agent) >= 1);
                } else if let Some(c) = decide_ack(inbox.cursor(agent), cursor, inbox.last_seq(agent)) {
                    prop_assert!(c <= inbox.last_seq(agent));
                    inbox.acked(agent, c);
                }
            }
        }
    }
}
