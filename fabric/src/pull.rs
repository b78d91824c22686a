//! Pulls that lose nothing. A forwarded subscription's notifications leave
//! the home in numbered batches; each `Pull` names the batch its asker wants
//! next, which acknowledges the one before. An answer lost on the way (the
//! asker timed out, the connection broke and a queued request arrived after
//! the asker had given up on it) is therefore not lost: the home keeps the
//! batch it gave until the next one is asked for, and gives it again.
//!
//! Pure: the home keeps one [`Batches`] per subscription and asks it what to
//! do with each pull; the asker keeps its `next` and moves it with [`taken`].

/// What the home keeps of one subscription's deliveries.
#[derive(Debug, Default)]
pub struct Batches {
    /// The number of the last batch given (0: none yet).
    last: u64,
    /// That batch's notifications while unacknowledged.
    unacked: Option<Vec<String>>,
}

/// What a pull asking for batch `next` gets.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Its answer was lost: this batch again, under its number.
    Again(u64, Vec<String>),
    /// New notifications, as batch `next` (the one before is acknowledged).
    Fresh,
    /// A request that arrived after its asker moved on: answer nothing.
    Stale,
    /// It names a batch never given: asker and home are out of step.
    OutOfStep,
}

impl Batches {
    /// What to answer a pull asking for batch `next` (0: an asker that
    /// does not number its pulls; every answer is fresh and unkept).
    pub fn on_pull(&mut self, next: u64) -> Step {
        if next == 0 {
            return Step::Fresh;
        }
        if next == self.last + 1 {
            self.unacked = None;
            return Step::Fresh;
        }
        if next == self.last
            && let Some(notes) = &self.unacked
        {
            return Step::Again(next, notes.clone());
        }
        if next <= self.last {
            return Step::Stale;
        }
        Step::OutOfStep
    }

    /// Fresh `notes` are being given to a pull asking for batch `next`:
    /// the number they go under (0 when there are none, or the asker does
    /// not number its pulls).
    pub fn give(&mut self, next: u64, notes: &[String]) -> u64 {
        if next == 0 || notes.is_empty() {
            return 0;
        }
        self.last = next;
        self.unacked = Some(notes.to_vec());
        next
    }
}

/// The asker's side: an answer numbered `batch` was taken by a pull that
/// asked for `next`; the next pull asks for the returned number.
pub fn taken(next: u64, batch: u64) -> u64 {
    if batch == next { next + 1 } else { next }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notes(n: &[&str]) -> Vec<String> {
        n.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_lost_answer_is_given_again_and_an_acknowledged_one_never() {
        let mut b = Batches::default();
        let mut next = 1;
        // Nothing yet: an empty answer moves nothing.
        assert_eq!(b.on_pull(next), Step::Fresh);
        next = taken(next, b.give(next, &[]));
        assert_eq!(next, 1);
        // Batch 1 given, its answer lost: the retry gets it again.
        assert_eq!(b.on_pull(next), Step::Fresh);
        assert_eq!(b.give(next, &notes(&["a", "b"])), 1);
        assert_eq!(b.on_pull(next), Step::Again(1, notes(&["a", "b"])));
        next = taken(next, 1);
        assert_eq!(next, 2);
        // Asking for 2 acknowledges 1: a late copy of the old request
        // gets nothing, and 1 is never given again.
        assert_eq!(b.on_pull(next), Step::Fresh);
        assert_eq!(b.give(next, &notes(&["c"])), 2);
        assert_eq!(b.on_pull(1), Step::Stale);
        assert_eq!(b.on_pull(2), Step::Again(2, notes(&["c"])));
        assert_eq!(b.on_pull(3), Step::Fresh);
        assert_eq!(b.on_pull(2), Step::Stale);
        // A number never given.
        assert_eq!(b.on_pull(9), Step::OutOfStep);
    }

    #[test]
    fn an_asker_that_does_not_number_gets_fresh_unkept_answers() {
        let mut b = Batches::default();
        assert_eq!(b.on_pull(0), Step::Fresh);
        assert_eq!(b.give(0, &notes(&["a"])), 0);
        assert_eq!(b.on_pull(0), Step::Fresh);
        assert_eq!(b.on_pull(1), Step::Fresh, "nothing was kept for a numbered asker");
    }

    /// However answers are lost, every notification reaches the asker once
    /// and in order.
    #[test]
    fn any_pattern_of_lost_answers_delivers_each_notification_once_in_order() {
        // Deterministic patterns: bit i of `lost` loses the i-th answer.
        for lost in 0u32..256 {
            let mut b = Batches::default();
            let mut queue: std::collections::VecDeque<String> = (0..12).map(|i| i.to_string()).collect();
            let mut got = vec![];
            let mut next = 1;
            for i in 0..64 {
                let (batch, answer) = match b.on_pull(next) {
                    Step::Again(n, v) => (n, v),
                    Step::Fresh => {
                        let v: Vec<String> = queue.drain(..queue.len().min(2)).collect();
                        (b.give(next, &v), v)
                    }
                    other => panic!("a numbered asker got {other:?}"),
                };
                if i < 32 && lost & (1 << (i % 8)) != 0 && i % 3 == 0 {
                    continue;
                }
                got.extend(answer);
                next = taken(next, batch);
            }
            let want: Vec<String> = (0..12).map(|i| i.to_string()).collect();
            assert_eq!(got, want, "pattern {lost:08b}");
        }
    }
}
