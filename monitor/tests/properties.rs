//! Property tests: the guarantees that hold for every input.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;
use monitor::{
    Action, Breaker, BreakerConfig, BreakerEvent, BreakerState, Delta, MAX_TRIGGER_MESSAGE_BYTES, Refused, Trigger,
    WakeKey, WakeQueue, Watch, trigger_message, validate,
};
use proptest::prelude::*;
use serde_json::json;

/// Text over a small alphabet so keywords occur often, with word and
/// non-word characters, multi-byte letters and a control character.
fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a"),
            Just("b"),
            Just("A"),
            Just("B"),
            Just(" "),
            Just("_"),
            Just("."),
            Just("é"),
            Just("É"),
            Just("-"),
            Just("\n"),
            Just("\u{7}"),
            Just("ab"),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

fn keyword() -> impl Strategy<Value = String> {
    prop_oneof![
        "[abAB]{1,3}",
        "[abé]{1,3}",
        Just("a b".to_string()),
        Just("-a".to_string())
    ]
}

fn keywords() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(keyword(), 1..5)
}

fn all_in(list: &[String], mode: &str) -> serde_json::Value {
    serde_json::Value::Array(list.iter().map(|k| json!({ "text": k, "mode": mode })).collect())
}

fn occurrence_set(t: &Trigger, text: &str) -> BTreeSet<(String, usize, usize)> {
    t.occurrences(text)
        .map(|(k, r)| (t.keywords()[k].text.clone(), r.start, r.end))
        .collect()
}

#[derive(Debug, Clone)]
enum BreakerOp {
    Wake,
    Inject,
    Human,
    Rearm,
    /// Let this many seconds pass.
    Wait(u64),
}

fn breaker_op() -> impl Strategy<Value = BreakerOp> {
    prop_oneof![
        4 => Just(BreakerOp::Wake),
        4 => Just(BreakerOp::Inject),
        1 => Just(BreakerOp::Human),
        1 => Just(BreakerOp::Rearm),
        3 => (0u64..400).prop_map(BreakerOp::Wait),
    ]
}

#[derive(Debug, Clone)]
enum QueueOp {
    /// A delta for target `conv` containing these keywords.
    Hit(usize, Vec<usize>),
    StartHead,
    Finish,
    Drop(usize),
}

fn queue_op() -> impl Strategy<Value = QueueOp> {
    prop_oneof![
        5 => (0usize..3, proptest::collection::vec(0usize..6, 1..4)).prop_map(|(c, k)| QueueOp::Hit(c, k)),
        2 => Just(QueueOp::StartHead),
        2 => Just(QueueOp::Finish),
        1 => (0usize..3).prop_map(QueueOp::Drop),
    ]
}

const QUEUE_WORDS: [&str; 6] = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn word_hits_are_a_subset_of_substring_hits(list in keywords(), text in text(), sensitive in any::<bool>()) {
        let case = json!({ "case_sensitive": sensitive });
        let word = trigger(all_in(&list, "word"), case.clone());
        let sub = trigger(all_in(&list, "substring"), case);
        let w = occurrence_set(&word, &text);
        let s = occurrence_set(&sub, &text);
        prop_assert!(w.is_subset(&s), "word {w:?} not within substring {s:?}");
        let fired_w: BTreeSet<_> = fired(&word.hits(&delta(1, "agent", &text))).into_iter().collect();
        let fired_s: BTreeSet<_> = fired(&sub.hits(&delta(1, "agent", &text))).into_iter().collect();
        prop_assert!(fired_w.is_subset(&fired_s));
        // every occurrence's range is a real slice, and every hit's excerpt holds its match
        for (_, start, end) in &s {
            prop_assert!(text.get(*start..*end).is_some());
        }
        for h in sub.hits(&delta(1, "agent", &text)) {
            prop_assert_eq!(&text[h.range.clone()], h.excerpt.matched.as_str());
        }
    }

    #[test]
    fn ascii_case_never_matters_by_default(list in proptest::collection::vec("[abAB -]{1,4}", 1..4), text in text()) {
        prop_assume!(list.iter().all(|k| !k.trim().is_empty()));
        let t = trigger(all_in(&list, "word"), json!({}));
        let lower = t.occurrences(&text.to_ascii_lowercase()).collect::<Vec<_>>();
        let upper = t.occurrences(&text.to_ascii_uppercase()).collect::<Vec<_>>();
        prop_assert_eq!(lower, upper);
    }

    #[test]
    fn each_delta_is_evaluated_exactly_once(
        list in keywords(),
        texts in proptest::collection::vec(text(), 1..12),
        replays in proptest::collection::vec((0usize..12, 0usize..12), 0..8),
    ) {
        let a = attachment(all_in(&list, "substring"), json!({}));
        // the stream as delivered once
        let mut once = Watch::new(a.clone()).unwrap();
        let want: Vec<_> = texts
            .iter()
            .enumerate()
            .flat_map(|(i, t)| once.evaluate(&delta(i as u64 + 1, "agent", t), 0).hits)
            .collect();
        // the same stream with resubscriptions replaying from earlier cursors
        let mut deliveries: Vec<usize> = (0..texts.len()).collect();
        for &(at, from) in &replays {
            let at = at.min(deliveries.len());
            let from = from.min(texts.len() - 1);
            let upto = deliveries[..at].iter().copied().max().map_or(0, |m| m + 1);
            let replay: Vec<usize> = (from..upto.max(from)).collect();
            deliveries.splice(at..at, replay);
        }
        let mut replayed = Watch::new(a).unwrap();
        let got: Vec<_> = deliveries
            .iter()
            .flat_map(|&i| replayed.evaluate(&delta(i as u64 + 1, "agent", &texts[i]), 0).hits)
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn the_breaker_never_exceeds_its_limits_and_replays(
        max_cycles in 1u32..6,
        max_wakes in 1u32..8,
        window_mins in 1u32..5,
        ops in proptest::collection::vec(breaker_op(), 0..80),
    ) {
        let config = BreakerConfig { max_cycles, max_wakes, window_mins };
        let mut b = Breaker::new(config);
        let mut log: Vec<BreakerEvent> = vec![];
        let mut now = 1_000u64;
        let mut wakes_since_rearm: Vec<u64> = vec![];
        let mut trips_this_period = 0;
        for op in ops {
            let events = match op {
                BreakerOp::Wake => match b.on_wake(now) {
                    Ok(e) => { wakes_since_rearm.push(now); e }
                    Err(Refused::Trips(e)) => e,
                    Err(Refused::Tripped) => vec![],
                },
                BreakerOp::Inject => b.on_inject(now).unwrap_or_default(),
                BreakerOp::Human => b.on_human_message(now),
                BreakerOp::Rearm => {
                    let e = b.rearm(now);
                    if !e.is_empty() { wakes_since_rearm.clear(); trips_this_period = 0; }
                    e
                }
                BreakerOp::Wait(secs) => { now += secs * 1000; vec![] }
            };
            trips_this_period += events.iter().filter(|e| matches!(e, BreakerEvent::Tripped { .. })).count();
            log.extend(events);
            let s = b.state();
            prop_assert!(s.cycles <= max_cycles);
            prop_assert!(s.is_tripped() || s.cycles < max_cycles, "{} cycles untripped", s.cycles);
            prop_assert!(trips_this_period <= 1, "a trip is reported once");
            prop_assert_eq!(trips_this_period == 1, s.is_tripped());
            // no window ever holds more than max_wakes allowed wakes
            for &t in &wakes_since_rearm {
                let within = wakes_since_rearm.iter().filter(|&&u| u >= t && u - t < config.window_ms()).count();
                prop_assert!(within <= max_wakes as usize);
            }
            prop_assert_eq!(&BreakerState::replay(config, &log), s, "replay(events) == live state");
        }
        let json = serde_json::to_string(&log).unwrap();
        let back: Vec<BreakerEvent> = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&BreakerState::replay(config, &back), b.state());
    }

    #[test]
    fn coalescing_never_loses_a_keyword(ops in proptest::collection::vec(queue_op(), 0..60)) {
        let list: Vec<(&str, &str)> = QUEUE_WORDS.iter().map(|w| (*w, "word")).collect();
        let t = trigger(kws(&list), json!({}));
        let keys: Vec<WakeKey> = (0..3)
            .map(|c| WakeKey { attachment: "a-1".into(), conversation: format!("c-{c}") })
            .collect();
        let mut q = WakeQueue::new();
        let mut sent: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut dropped: BTreeSet<usize> = BTreeSet::new();
        let mut delivered: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        let mut running = false;
        let mut wake_asked: Option<WakeKey> = None;
        let mut seq = 0;
        for op in ops {
            match op {
                QueueOp::Hit(c, words) => {
                    seq += 1;
                    let text = words.iter().map(|&w| QUEUE_WORDS[w]).collect::<Vec<_>>().join(" ");
                    let hits = t.hits(&Delta { conversation: &keys[c].conversation, seq, speaker: "agent", text: &text });
                    sent.entry(c).or_default().extend(hits.iter().map(|h| h.keyword.text.clone()));
                    let was_idle = !running && q.queued().count() == 0;
                    match q.hit(&keys[c], hits, seq) {
                        Action::Wake(k) => { prop_assert!(was_idle); wake_asked = Some(k); }
                        Action::None => prop_assert!(!was_idle),
                    }
                }
                QueueOp::StartHead => {
                    let head = q.queued().next().map(|b| b.key.clone());
                    match head.and_then(|k| q.start(&k)) {
                        Some(b) => {
                            prop_assert!(!running, "serial: never two running");
                            prop_assert_eq!(Some(&b.key), wake_asked.as_ref(), "the started batch is the one woken");
                            running = true;
                            let c = keys.iter().position(|k| *k == b.key).unwrap();
                            delivered.entry(c).or_default().extend(b.keywords.iter().map(|k| k.keyword.text.clone()));
                            prop_assert!(b.excerpts.len() <= monitor::MAX_BATCH_EXCERPTS);
                            let a = attachment(kws(&list), json!({}));
                            prop_assert!(trigger_message(&a, &b).len() <= MAX_TRIGGER_MESSAGE_BYTES);
                        }
                        None => prop_assert!(running || q.queued().count() == 0),
                    }
                }
                QueueOp::Finish => {
                    let was_running = running;
                    running = false;
                    match q.finish() {
                        Action::Wake(k) => { prop_assert!(was_running); wake_asked = Some(k); }
                        Action::None => prop_assert!(!was_running || q.queued().count() == 0),
                    }
                }
                QueueOp::Drop(c) => {
                    // only conversations never dropped keep the no-loss promise
                    dropped.insert(c);
                    if let Action::Wake(k) = q.drop_conversation(&keys[c].conversation) {
                        wake_asked = Some(k);
                    }
                }
            }
        }
        for b in q.queued() {
            let c = keys.iter().position(|k| *k == b.key).unwrap();
            delivered.entry(c).or_default().extend(b.keywords.iter().map(|k| k.keyword.text.clone()));
        }
        for (c, words) in sent {
            if !dropped.contains(&c) {
                prop_assert_eq!(delivered.get(&c).cloned().unwrap_or_default(), words, "conversation {}", c);
            }
        }
    }

    #[test]
    fn the_normalized_spec_validates_to_the_same_attachment(
        list in keywords(),
        word in any::<bool>(),
        sensitive in proptest::option::of(any::<bool>()),
        speakers in proptest::option::of(proptest::collection::vec(
            prop_oneof![Just("human"), Just("agent"), Just("tool"), Just("system"), Just("monitor:style")], 1..4)),
        inject in proptest::option::of(any::<bool>()),
        cycles in proptest::option::of(1u64..=100),
    ) {
        let mut trigger = json!({ "keywords": all_in(&list, if word { "word" } else { "substring" }) });
        if let Some(s) = sensitive { trigger["case_sensitive"] = json!(s); }
        if let Some(s) = &speakers { trigger["speakers"] = json!(s); }
        let mut v = json!({ "monitor": "lint", "target": { "agent": "coder" }, "trigger": trigger });
        if let Some(i) = inject { v["inject"] = json!(i); }
        if let Some(c) = cycles { v["breaker"] = json!({ "max_cycles": c }); }
        let a = validate(&spec(v)).unwrap();
        let normalized = a.spec();
        prop_assert_eq!(validate(&normalized).unwrap(), a.clone());
        let wire = serde_json::to_value(&normalized).unwrap();
        prop_assert_eq!(validate(&spec(wire)).unwrap(), a);
    }
}
