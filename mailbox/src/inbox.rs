//! The inbox projection: messages by recipient in global-sequence order and
//! each agent's acknowledged cursor, folded from the mail events. The node
//! keeps the same projection in SQLite; tests prove the two agree and that
//! replaying the events gives the live state.

use std::collections::BTreeMap;

/// One stored message, as the projection holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The global sequence number of its `message_sent` event: its cursor.
    pub seq: u64,
    pub id: String,
    pub from: String,
    pub to: String,
    pub context: Option<String>,
    pub body: String,
}

/// Every inbox and cursor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inbox {
    by_recipient: BTreeMap<String, Vec<Message>>,
    cursors: BTreeMap<String, u64>,
}

impl Inbox {
    /// Folds a sent message. Sequence numbers only grow, so pushing keeps
    /// each inbox ordered; an out-of-order or repeated seq (a replayed
    /// event) is ignored, so folding the same log twice changes nothing.
    pub fn sent(&mut self, m: Message) {
        let list = self.by_recipient.entry(m.to.clone()).or_default();
        if list.last().is_some_and(|last| last.seq >= m.seq) {
            return;
        }
        list.push(m);
    }

    /// Folds an ack (forward only).
    pub fn acked(&mut self, agent: &str, cursor: u64) {
        let c = self.cursors.entry(agent.to_string()).or_default();
        *c = (*c).max(cursor);
    }

    pub fn cursor(&self, agent: &str) -> u64 {
        self.cursors.get(agent).copied().unwrap_or(0)
    }

    /// Up to `limit` messages to `agent` after `after` (default: its cursor),
    /// oldest first.
    pub fn page(&self, agent: &str, after: Option<u64>, limit: usize) -> &[Message] {
        let after = after.unwrap_or_else(|| self.cursor(agent));
        let list = self.by_recipient.get(agent).map(Vec::as_slice).unwrap_or(&[]);
        let start = list.partition_point(|m| m.seq <= after);
        &list[start..(start + limit).min(list.len())]
    }

    /// The seq of `agent`'s newest message (0 when it has none): what an
    /// ack is clamped to (`decide_ack`).
    pub fn last_seq(&self, agent: &str) -> u64 {
        self.by_recipient
            .get(agent)
            .and_then(|l| l.last())
            .map(|m| m.seq)
            .unwrap_or(0)
    }

    /// How many messages to `agent` are past its cursor.
    pub fn unread(&self, agent: &str) -> usize {
        let after = self.cursor(agent);
        let list = self.by_recipient.get(agent).map(Vec::as_slice).unwrap_or(&[]);
        list.len() - list.partition_point(|m| m.seq <= after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn msg(seq: u64, from: &str, to: &str) -> Message {
        Message {
            seq,
            id: format!("m{seq}"),
            from: from.into(),
            to: to.into(),
            context: None,
            body: format!("body {seq}"),
        }
    }

    #[test]
    fn pages_from_the_cursor_in_order() {
        let mut i = Inbox::default();
        for (seq, to) in [(3, "b"), (5, "c"), (7, "b"), (9, "b")] {
            i.sent(msg(seq, "a", to));
        }
        let seqs = |p: &[Message]| p.iter().map(|m| m.seq).collect::<Vec<_>>();
        assert_eq!(seqs(i.page("b", None, 10)), [3, 7, 9]);
        assert_eq!(seqs(i.page("b", None, 2)), [3, 7]);
        i.acked("b", 7);
        assert_eq!(seqs(i.page("b", None, 10)), [9]);
        assert_eq!(seqs(i.page("b", Some(0), 10)), [3, 7, 9], "reading is not consuming");
        i.acked("b", 4);
        assert_eq!(i.cursor("b"), 7, "acks never move back");
        assert_eq!(i.unread("b"), 1);
        assert_eq!(i.unread("nobody"), 0);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Send(u8, u8),
        Ack(u8, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0u8..4, 0u8..4).prop_map(|(f, t)| Op::Send(f, t)),
            (0u8..4, 0u8..64).prop_map(|(a, c)| Op::Ack(a, c)),
        ]
    }

    proptest! {
        /// Replaying the log (twice, even) gives the live projection, and
        /// every inbox is exactly its messages, once each, in seq order.
        #[test]
        fn replay_equals_live(ops in proptest::collection::vec(op(), 0..64)) {
            let names = ["a", "b", "c", "d"];
            let mut live = Inbox::default();
            let mut log = vec![];
            for (seq, o) in ops.iter().enumerate() {
                let seq = seq as u64 + 1;
                match o {
                    Op::Send(f, t) => {
                        let m = msg(seq, names[*f as usize], names[*t as usize]);
                        live.sent(m.clone());
                        log.push(Op::Send(*f, *t));
                    }
                    Op::Ack(a, c) => {
                        live.acked(names[*a as usize], *c as u64);
                        log.push(o.clone());
                    }
                }
            }
            let mut replayed = Inbox::default();
            for _ in 0..2 {
                for (seq, o) in log.iter().enumerate() {
                    match o {
                        Op::Send(f, t) => replayed.sent(msg(seq as u64 + 1, names[*f as usize], names[*t as usize])),
                        Op::Ack(a, c) => replayed.acked(names[*a as usize], *c as u64),
                    }
                }
            }
            prop_assert_eq!(&replayed, &live);
            for n in names {
                let all = live.page(n, Some(0), usize::MAX);
                let expect: Vec<u64> = ops.iter().enumerate().filter_map(|(i, o)| match o {
                    Op::Send(_, t) if names[*t as usize] == n => Some(i as u64 + 1),
                    _ => None,
                }).collect();
                prop_assert_eq!(all.iter().map(|m| m.seq).collect::<Vec<_>>(), expect);
            }
        }
    }
}
