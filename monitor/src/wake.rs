//! The wake queue of one monitor: hits coalesce into one [`Batch`] per
//! target conversation while a wake for it is pending, and wakes run one at a
//! time, in arrival order (the one-live-conversation-per-agent rule).
//!
//! States: idle (nothing queued, nothing running); pending (a wake was asked
//! for the head batch, which keeps absorbing hits until the node calls
//! [`WakeQueue::start`]); running (the monitor is working on a batch; new hits
//! queue as next batches, which become pending when it finishes).
//!
//! [`Action::Wake`] names the batch rather than carrying it: starting (or
//! continuing) the monitor conversation takes time, and hits arriving
//! meanwhile still belong to that wake. The node takes the final batch with
//! `start` once the conversation can receive the trigger message.

use std::collections::{HashMap, VecDeque};

use crate::attachment::Keyword;
use crate::matcher::Hit;

/// Most excerpts one batch carries (the rest are counted).
pub const MAX_BATCH_EXCERPTS: usize = 20;
/// Most excerpts of one keyword in a batch, so that one noisy keyword leaves
/// room for the others.
pub const MAX_EXCERPTS_PER_KEYWORD: u32 = 5;

/// What a wake is for: one attachment of the monitor and one target
/// conversation (a monitor has one monitor conversation per target
/// conversation).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WakeKey {
    pub attachment: String,
    pub conversation: String,
}

/// What the node should do next.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Action {
    None,
    /// Check the attachment's breaker (`decide_wake`), start or continue the
    /// monitor conversation for this key, then call [`WakeQueue::start`].
    Wake(WakeKey),
}

/// A keyword of a batch, with how often it fired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchKeyword {
    pub keyword: Keyword,
    pub keyword_index: usize,
    /// Deltas it fired in.
    pub hits: u64,
    /// Occurrences over those deltas.
    pub occurrences: u64,
    excerpts: u32,
}

/// The coalesced hits of one wake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub key: WakeKey,
    /// Every distinct keyword that fired, in first-seen order.
    pub keywords: Vec<BatchKeyword>,
    /// Up to [`MAX_BATCH_EXCERPTS`] hits with their excerpts, in arrival order
    /// (at most [`MAX_EXCERPTS_PER_KEYWORD`] per keyword).
    pub excerpts: Vec<Hit>,
    /// Hits whose excerpt was not kept.
    pub omitted_excerpts: u64,
    /// Hits merged (one per keyword per delta).
    pub hits: u64,
    /// Lowest and highest seq among the hits; `last_seq` is also the last
    /// evaluated seq when the batch last grew.
    pub first_seq: u64,
    pub last_seq: u64,
    /// When the first and the latest hit arrived (unix ms).
    pub first_at: u64,
    pub last_at: u64,
    by_keyword: HashMap<usize, usize>,
}

impl Batch {
    fn new(key: WakeKey, now: u64) -> Batch {
        Batch {
            key,
            keywords: Vec::new(),
            excerpts: Vec::new(),
            omitted_excerpts: 0,
            hits: 0,
            first_seq: u64::MAX,
            last_seq: 0,
            first_at: now,
            last_at: now,
            by_keyword: HashMap::new(),
        }
    }

    fn merge(&mut self, hits: Vec<Hit>, now: u64) {
        self.last_at = self.last_at.max(now);
        for hit in hits {
            self.hits += 1;
            self.first_seq = self.first_seq.min(hit.seq);
            self.last_seq = self.last_seq.max(hit.seq);
            let at = *self.by_keyword.entry(hit.keyword_index).or_insert_with(|| {
                self.keywords.push(BatchKeyword {
                    keyword: hit.keyword.clone(),
                    keyword_index: hit.keyword_index,
                    hits: 0,
                    occurrences: 0,
                    excerpts: 0,
                });
                self.keywords.len() - 1
            });
            let kw = &mut self.keywords[at];
            kw.hits += 1;
            kw.occurrences += u64::from(hit.occurrences);
            if self.excerpts.len() < MAX_BATCH_EXCERPTS && kw.excerpts < MAX_EXCERPTS_PER_KEYWORD {
                kw.excerpts += 1;
                self.excerpts.push(hit);
            } else {
                self.omitted_excerpts += 1;
            }
        }
    }
}

/// Where the queue stands (for `monitor.list` and tests).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WakeState {
    Idle,
    /// A wake was asked for `head`; `queued` batches wait behind it.
    Pending {
        head: WakeKey,
        queued: usize,
    },
    /// The monitor is working on `running`; `queued` batches wait.
    Running {
        running: WakeKey,
        queued: usize,
    },
}

/// One monitor's wake queue.
#[derive(Debug, Clone, Default)]
pub struct WakeQueue {
    running: Option<WakeKey>,
    queue: VecDeque<Batch>,
}

impl WakeQueue {
    pub fn new() -> WakeQueue {
        WakeQueue::default()
    }

    pub fn state(&self) -> WakeState {
        match (&self.running, self.queue.front()) {
            (Some(running), _) => WakeState::Running {
                running: running.clone(),
                queued: self.queue.len(),
            },
            (None, Some(head)) => WakeState::Pending {
                head: head.key.clone(),
                queued: self.queue.len() - 1,
            },
            (None, None) => WakeState::Idle,
        }
    }

    /// Batches waiting (the pending head first).
    pub fn queued(&self) -> impl Iterator<Item = &Batch> {
        self.queue.iter()
    }

    /// Hits of one delta for `key`. They join the key's waiting batch if it
    /// has one (coalescing), else open a new batch at the back. Asks for a
    /// wake only when the queue was idle.
    pub fn hit(&mut self, key: &WakeKey, hits: Vec<Hit>, now: u64) -> Action {
        if hits.is_empty() {
            return Action::None;
        }
        let was_idle = self.running.is_none() && self.queue.is_empty();
        match self.queue.iter_mut().find(|b| b.key == *key) {
            Some(batch) => batch.merge(hits, now),
            None => {
                let mut batch = Batch::new(key.clone(), now);
                batch.merge(hits, now);
                self.queue.push_back(batch);
            }
        }
        if was_idle {
            Action::Wake(key.clone())
        } else {
            Action::None
        }
    }

    /// The monitor conversation for `key` is ready: take the pending batch
    /// and mark it running. `None` when `key` is not the pending head (it was
    /// dropped meanwhile, or a wake is already running): do not send anything.
    pub fn start(&mut self, key: &WakeKey) -> Option<Batch> {
        if self.running.is_some() || self.queue.front().is_none_or(|b| b.key != *key) {
            return None;
        }
        let batch = self.queue.pop_front()?;
        self.running = Some(batch.key.clone());
        Some(batch)
    }

    /// The running wake is over (the monitor's turn ended, or it failed).
    /// Wakes the next batch, if any.
    pub fn finish(&mut self) -> Action {
        if self.running.take().is_none() {
            return Action::None;
        }
        self.next()
    }

    /// Drop the waiting batches of one attachment (tripped or detached). A
    /// running wake is left to finish. Wakes the new head when the pending
    /// head was dropped.
    pub fn drop_attachment(&mut self, attachment: &str) -> Action {
        self.drop_where(|k| k.attachment == attachment)
    }

    /// Drop the waiting batches for one target conversation (archived).
    pub fn drop_conversation(&mut self, conversation: &str) -> Action {
        self.drop_where(|k| k.conversation == conversation)
    }

    fn drop_where(&mut self, mut pred: impl FnMut(&WakeKey) -> bool) -> Action {
        let head = self.queue.front().map(|b| b.key.clone());
        self.queue.retain(|b| !pred(&b.key));
        if self.running.is_some() || self.queue.front().map(|b| &b.key) == head.as_ref() {
            return Action::None;
        }
        self.next()
    }

    fn next(&self) -> Action {
        match self.queue.front() {
            Some(b) => Action::Wake(b.key.clone()),
            None => Action::None,
        }
    }
}
