//! `Watch`: one attachment's watch state (compiled trigger, exactly-once
//! cursor, breaker) and the order in which a delta meets them.
//!
//! For every delta of a target conversation, [`Watch::evaluate`]:
//! 1. skips it unless the cursor has not seen its seq (replays are dropped,
//!    and it is recorded as evaluated either way);
//! 2. lets a `human` delta reset the breaker's cycle count;
//! 3. stops there while the breaker is tripped (the cursor still moves, so a
//!    rearm does not evaluate the tripped period late);
//! 4. applies the speaker filter (never the monitor's own advice) and
//!    matches the keywords.
//!
//! Wiring in the node, per monitor with one [`crate::WakeQueue`]:
//! hits -> `queue.hit(key, hits, now)`; on [`crate::Action::Wake`] ->
//! `watch.breaker_mut().on_wake(now)`: refused -> `queue.drop_attachment`
//! (and report a `Tripped`); allowed -> start or continue the monitor
//! conversation, `queue.start(&key)`, send [`crate::trigger_message`]; the
//! monitor's turn ends -> `queue.finish()`; `warren-advise` ->
//! `watch.breaker_mut().on_inject(now)`: refused -> refuse the call, else
//! send [`crate::advise`]'s text (and report a `Tripped` among the events).
//! Every breaker event returned is to be stored.

use crate::Error;
use crate::attachment::{Attachment, Target};
use crate::breaker::{Breaker, BreakerEvent, BreakerState};
use crate::cursor::Cursor;
use crate::matcher::{Delta, Hit, Trigger};
use crate::speaker::Speaker;

/// What one delta did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Evaluation {
    /// Keywords that fired (empty in the common case; no allocation then).
    pub hits: Vec<Hit>,
    /// Breaker events to store (a human message resetting the count).
    pub events: Vec<BreakerEvent>,
}

/// Advice remembered at most, to tell its echo from the agent's own words.
pub const ADVICE_REMEMBERED: usize = 8;
/// How long an advice's echo is expected (ms).
pub const ADVICE_ECHO_MS: u64 = 600_000;

/// One attachment being watched.
#[derive(Debug, Clone)]
pub struct Watch {
    attachment: Attachment,
    trigger: Trigger,
    cursor: Cursor,
    breaker: Breaker,
    /// The advice this attachment injected lately (text, when): a delta that
    /// quotes it back (the CLI echoing it, the agent repeating it) fires
    /// nothing by those words, so a monitor never wakes on its own advice.
    advice: std::collections::VecDeque<(String, u64)>,
}

impl Watch {
    /// A fresh watch: armed, nothing evaluated yet.
    pub fn new(attachment: Attachment) -> Result<Watch, Error> {
        let breaker = BreakerState::new(attachment.breaker());
        Watch::restore(attachment, Cursor::new(), breaker)
    }

    /// A watch resumed from stored state (the cursor the node kept, the
    /// breaker replayed from its events).
    pub fn restore(attachment: Attachment, cursor: Cursor, breaker: BreakerState) -> Result<Watch, Error> {
        Ok(Watch {
            trigger: Trigger::new(&attachment)?,
            attachment,
            cursor,
            breaker: Breaker::from_state(breaker),
            advice: std::collections::VecDeque::new(),
        })
    }

    /// Remembers advice this attachment injected at `now` (its text as the
    /// monitor wrote it, without the node's prefix).
    pub fn remember_advice(&mut self, text: &str, now: u64) {
        let text = text.trim();
        if text.is_empty() {
            return;
        }
        if self.advice.len() >= ADVICE_REMEMBERED {
            self.advice.pop_front();
        }
        self.advice.push_back((text.to_string(), now));
    }

    /// `text` with every quote of recent advice blanked (same length, so
    /// ranges stay put); borrowed when it quotes none.
    fn without_advice<'t>(&mut self, text: &'t str, now: u64) -> std::borrow::Cow<'t, str> {
        self.advice.retain(|(_, at)| now.saturating_sub(*at) < ADVICE_ECHO_MS);
        let mut out: Option<Vec<u8>> = None;
        for (advice, _) in &self.advice {
            for (at, quoted) in text.match_indices(advice.as_str()) {
                let bytes = out.get_or_insert_with(|| text.as_bytes().to_vec());
                bytes[at..at + quoted.len()].fill(b' ');
            }
        }
        match out {
            // Whole characters were blanked with ASCII spaces: still UTF-8.
            Some(bytes) => std::borrow::Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
            None => std::borrow::Cow::Borrowed(text),
        }
    }

    pub fn attachment(&self) -> &Attachment {
        &self.attachment
    }
    pub fn trigger(&self) -> &Trigger {
        &self.trigger
    }
    pub fn cursor(&self) -> &Cursor {
        &self.cursor
    }
    pub fn cursor_mut(&mut self) -> &mut Cursor {
        &mut self.cursor
    }
    pub fn breaker(&self) -> &Breaker {
        &self.breaker
    }
    pub fn breaker_mut(&mut self) -> &mut Breaker {
        &mut self.breaker
    }

    /// Evaluate one delta of a target conversation (see the module doc for
    /// the order). A delta of another conversation than a conversation
    /// target's is ignored and not recorded.
    pub fn evaluate(&mut self, delta: &Delta<'_>, now: u64) -> Evaluation {
        if let Target::Conversation(c) = self.attachment.target()
            && c != delta.conversation
        {
            return Evaluation::default();
        }
        if !self.cursor.should_evaluate(delta.conversation, delta.seq) {
            return Evaluation::default();
        }
        let events = if Speaker::Human.is(delta.speaker) {
            self.breaker.on_human_message(now)
        } else {
            Vec::new()
        };
        if self.breaker.is_tripped() {
            return Evaluation {
                hits: Vec::new(),
                events,
            };
        }
        let text = self.without_advice(delta.text, now);
        let delta = Delta { text: &text, ..*delta };
        Evaluation {
            hits: self.trigger.hits(&delta),
            events,
        }
    }
}
