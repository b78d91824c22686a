//! The wake queue: coalescing while pending, next batches while running,
//! serial wakes in arrival order, dropping.

mod common;

use common::*;
use monitor::{Action, Hit, MAX_BATCH_EXCERPTS, MAX_EXCERPTS_PER_KEYWORD, Trigger, WakeKey, WakeQueue, WakeState};
use serde_json::json;

fn key(attachment: &str, conversation: &str) -> WakeKey {
    WakeKey {
        attachment: attachment.into(),
        conversation: conversation.into(),
    }
}

fn hits(t: &Trigger, seq: u64, text: &str) -> Vec<Hit> {
    let h = t.hits(&delta(seq, "agent", text));
    assert!(!h.is_empty(), "{text:?} should hit");
    h
}

#[test]
fn a_burst_while_pending_is_one_wake() {
    let t = trigger(kws(&[("panic", "word"), ("overflow", "word")]), json!({}));
    let k = key("a-1", "c-1");
    let mut q = WakeQueue::new();
    assert_eq!(q.state(), WakeState::Idle);
    assert_eq!(
        q.hit(&k, hits(&t, 1, "thread panicked: panic"), 100),
        Action::Wake(k.clone())
    );
    for seq in 2..=50 {
        let text = if seq == 37 { "stack overflow" } else { "panic in frame" };
        assert_eq!(
            q.hit(&k, hits(&t, seq, text), 100 + seq),
            Action::None,
            "hit {seq} coalesces"
        );
    }
    assert_eq!(
        q.state(),
        WakeState::Pending {
            head: k.clone(),
            queued: 0
        }
    );
    let batch = q.start(&k).expect("the pending batch");
    assert_eq!(batch.hits, 50);
    let kws: Vec<_> = batch
        .keywords
        .iter()
        .map(|k| (k.keyword.text.as_str(), k.hits))
        .collect();
    assert_eq!(kws, vec![("panic", 49), ("overflow", 1)], "every distinct keyword");
    assert_eq!(
        batch.excerpts.len(),
        MAX_EXCERPTS_PER_KEYWORD as usize + 1,
        "panic capped, overflow kept"
    );
    assert!(batch.excerpts.iter().any(|h| h.keyword.text == "overflow"));
    assert_eq!(batch.omitted_excerpts, 50 - batch.excerpts.len() as u64);
    assert_eq!((batch.first_seq, batch.last_seq), (1, 50));
    assert_eq!((batch.first_at, batch.last_at), (100, 150));
    assert_eq!(q.finish(), Action::None, "nothing else came");
    assert_eq!(q.state(), WakeState::Idle);
}

#[test]
fn excerpts_are_bounded_per_batch() {
    let words: Vec<String> = (0..30).map(|i| format!("kw{i}")).collect();
    let list: Vec<(&str, &str)> = words.iter().map(|w| (w.as_str(), "word")).collect();
    let t = trigger(kws(&list), json!({}));
    let k = key("a-1", "c-1");
    let mut q = WakeQueue::new();
    let _ = q.hit(&k, hits(&t, 1, &words.join(" ")), 0);
    let b = q.start(&k).unwrap();
    assert_eq!(b.keywords.len(), 30);
    assert_eq!(b.excerpts.len(), MAX_BATCH_EXCERPTS);
    assert_eq!(b.omitted_excerpts, 10);
}

#[test]
fn hits_while_running_wait_for_the_next_wake() {
    let t = trigger(kws(&[("panic", "word")]), json!({}));
    let k = key("a-1", "c-1");
    let mut q = WakeQueue::new();
    assert_eq!(q.hit(&k, hits(&t, 1, "panic"), 0), Action::Wake(k.clone()));
    let first = q.start(&k).unwrap();
    assert_eq!(first.hits, 1);
    assert_eq!(q.start(&k), None, "already running");
    assert_eq!(q.hit(&k, hits(&t, 2, "panic"), 1), Action::None);
    assert_eq!(q.hit(&k, hits(&t, 3, "panic"), 2), Action::None);
    assert_eq!(
        q.state(),
        WakeState::Running {
            running: k.clone(),
            queued: 1
        }
    );
    assert_eq!(q.finish(), Action::Wake(k.clone()), "the next batch becomes pending");
    let next = q.start(&k).unwrap();
    assert_eq!((next.hits, next.first_seq, next.last_seq), (2, 2, 3));
    assert_eq!(q.finish(), Action::None);
    assert_eq!(q.finish(), Action::None, "finishing twice is harmless");
}

#[test]
fn wakes_are_serial_in_arrival_order() {
    let t = trigger(kws(&[("panic", "word")]), json!({}));
    let (a, b, c) = (key("a-1", "c-1"), key("a-1", "c-2"), key("a-2", "c-3"));
    let mut q = WakeQueue::new();
    assert_eq!(q.hit(&a, hits(&t, 1, "panic"), 0), Action::Wake(a.clone()));
    assert_eq!(q.hit(&b, hits(&t, 1, "panic"), 1), Action::None);
    assert_eq!(q.hit(&c, hits(&t, 1, "panic"), 2), Action::None);
    assert_eq!(q.hit(&b, hits(&t, 2, "panic"), 3), Action::None, "b coalesces in place");
    assert_eq!(q.start(&b), None, "only the pending head may start");
    let mut order = vec![];
    let mut next = Action::Wake(a.clone());
    while let Action::Wake(k) = next {
        let batch = q.start(&k).unwrap();
        order.push((k.conversation.clone(), batch.hits));
        // a hit for a while it runs (the first time) goes to the back
        if k == a && order.len() == 1 {
            assert_eq!(q.hit(&a, hits(&t, 2, "panic"), 4), Action::None);
        }
        next = q.finish();
    }
    assert_eq!(
        order,
        vec![
            ("c-1".into(), 1),
            ("c-2".into(), 2),
            ("c-3".into(), 1),
            ("c-1".into(), 1)
        ]
    );
}

#[test]
fn dropping_batches() {
    let t = trigger(kws(&[("panic", "word")]), json!({}));
    let (a, b, c) = (key("a-1", "c-1"), key("a-2", "c-2"), key("a-1", "c-3"));
    let mut q = WakeQueue::new();
    let _ = q.hit(&a, hits(&t, 1, "panic"), 0);
    let _ = q.hit(&b, hits(&t, 1, "panic"), 0);
    let _ = q.hit(&c, hits(&t, 1, "panic"), 0);
    // the pending head's attachment trips: its batches go, the next head wakes
    assert_eq!(q.drop_attachment("a-1"), Action::Wake(b.clone()));
    assert_eq!(q.start(&a), None, "a start for the dropped head sends nothing");
    assert_eq!(q.queued().count(), 1);
    // dropping a batch that is not the head asks for nothing
    let _ = q.hit(&c, hits(&t, 2, "panic"), 0);
    assert_eq!(q.drop_conversation("c-3"), Action::None);
    // while running, dropping never asks for a wake
    let _ = q.start(&b).unwrap();
    let _ = q.hit(&a, hits(&t, 3, "panic"), 0);
    assert_eq!(q.drop_attachment("a-2"), Action::None);
    assert_eq!(q.finish(), Action::Wake(a.clone()));
    assert_eq!(q.drop_attachment("a-1"), Action::None, "queue empty now");
    assert_eq!(q.state(), WakeState::Idle);
    assert_eq!(q.hit(&a, vec![], 0), Action::None, "no hits, no wake");
}
