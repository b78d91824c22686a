//! `Cursor`: each delta evaluated exactly once, per target conversation, even
//! when a resubscription from a cursor replays deltas already seen.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The last evaluated seq of each target conversation. Seqs only move
/// forward; gaps are allowed (the caller resubscribes from `last + 1`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Cursor {
    last: BTreeMap<String, u64>,
}

impl Cursor {
    pub fn new() -> Cursor {
        Cursor::default()
    }

    /// True exactly once per `(conversation, seq)` and only while `seq` is past
    /// the last evaluated one; records it. A replay (`seq <= last`) is false.
    /// Allocates only the first time a conversation is seen.
    pub fn should_evaluate(&mut self, conversation: &str, seq: u64) -> bool {
        match self.last.get_mut(conversation) {
            Some(last) if seq <= *last => false,
            Some(last) => {
                *last = seq;
                true
            }
            None => {
                self.last.insert(conversation.to_string(), seq);
                true
            }
        }
    }

    /// The last evaluated seq; resubscribe from `last + 1`.
    pub fn last(&self, conversation: &str) -> Option<u64> {
        self.last.get(conversation).copied()
    }

    /// Move past `seq` without evaluating (e.g. the end of the transcript at a
    /// rearm, so the tripped period is not evaluated late). Never moves back.
    pub fn skip_to(&mut self, conversation: &str, seq: u64) {
        match self.last.get_mut(conversation) {
            Some(last) => *last = (*last).max(seq),
            None => {
                self.last.insert(conversation.to_string(), seq);
            }
        }
    }

    /// Drop an archived conversation.
    pub fn forget(&mut self, conversation: &str) {
        self.last.remove(conversation);
    }

    /// Every conversation with its last evaluated seq, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.last.iter().map(|(c, s)| (c.as_str(), *s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_once_with_replays_and_gaps() {
        let mut c = Cursor::new();
        let script: &[(&str, u64, bool)] = &[
            ("c-1", 1, true),
            ("c-1", 2, true),
            ("c-1", 2, false), // duplicate
            ("c-1", 1, false), // replay after a resubscribe
            ("c-1", 5, true),  // gap
            ("c-1", 3, false), // late replay inside the gap
            ("c-2", 1, true),  // conversations are independent
            ("c-1", 6, true),
        ];
        for &(conv, seq, want) in script {
            assert_eq!(c.should_evaluate(conv, seq), want, "{conv} {seq}");
        }
        assert_eq!(c.last("c-1"), Some(6));
        assert_eq!(c.last("c-3"), None);
        c.skip_to("c-1", 4);
        assert_eq!(c.last("c-1"), Some(6), "never moves back");
        c.skip_to("c-1", 10);
        assert!(!c.should_evaluate("c-1", 10));
        assert!(c.should_evaluate("c-1", 11));
        c.forget("c-2");
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![("c-1", 11)]);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Cursor>(&json).unwrap(), c);
    }
}
