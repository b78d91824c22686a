//! The trigger message and advice text: content, determinism, bounds.

mod common;

use common::*;
use monitor::{
    ADVICE_PREFIX_MAX_BYTES, Batch, Error, MAX_ADVICE_BYTES, MAX_TRIGGER_MESSAGE_BYTES, WakeKey, WakeQueue,
    advice_text, advise, trigger_message, validate, validate_advice,
};
use serde_json::{Value, json};

fn batch(keywords: Value, extra: Value, deltas: &[(u64, &str, &str)]) -> (monitor::Attachment, Batch) {
    let a = attachment(keywords, extra);
    let t = monitor::Trigger::new(&a).unwrap();
    let key = WakeKey {
        attachment: "att-7".into(),
        conversation: CONV.into(),
    };
    let mut q = WakeQueue::new();
    for &(seq, speaker, text) in deltas {
        let _ = q.hit(&key, t.hits(&delta(seq, speaker, text)), seq * 10);
    }
    let b = q.start(&key).expect("a batch");
    (a, b)
}

fn no_controls_but_newline(s: &str) {
    for c in s.chars() {
        let u = c as u32;
        assert!(
            c == '\n' || !(u < 0x20 || u == 0x7f || (0x80..=0x9f).contains(&u)),
            "U+{u:04X} in {s:?}"
        );
    }
}

#[test]
fn the_trigger_message_reads_like_this() {
    let (a, b) = batch(
        kws(&[("segfault", "word"), ("panic", "substring")]),
        json!({}),
        &[
            (41, "agent", "ran the tests and got a segfault in parse()"),
            (
                42,
                "tool",
                "thread 'main' panicked at src/lib.rs:10:\n\tindex out of bounds",
            ),
        ],
    );
    let msg = trigger_message(&a, &b);
    let want = "\
[Trigger] Keywords fired in conversation c-1 (attachment att-7, target agent coder).
Keywords (2): \"segfault\" (word) ×1, \"panic\" ×1
Excerpts (2 of 2 hits, the match in «»):
- seq 41, agent, \"segfault\": ran the tests and got a «segfault» in parse()
- seq 42, tool, \"panic\": thread 'main' «panic»ked at src/lib.rs:10:⏎ index out of bounds
Cursor: the trigger has evaluated c-1 through seq 42.
Read more with `warren-read c-1 --after SEQ` (--after 40 reads from the first hit on; a smaller SEQ gives earlier context); advise with `warren-advise c-1 TEXT`, or stay silent if this is a false alarm or the advice was already given.";
    assert_eq!(msg, want);
    assert_eq!(trigger_message(&a, &b), msg, "deterministic");
    no_controls_but_newline(&msg);
}

#[test]
fn a_watch_only_attachment_is_told_it_cannot_advise() {
    let a = validate(&spec(json!({
        "monitor": "lint", "target": { "conversation": "c-1" }, "inject": false,
        "trigger": { "keywords": [{ "text": "panic" }] }
    })))
    .unwrap();
    let t = monitor::Trigger::new(&a).unwrap();
    let key = WakeKey {
        attachment: "att-1".into(),
        conversation: CONV.into(),
    };
    let mut q = WakeQueue::new();
    let _ = q.hit(&key, t.hits(&delta(3, "agent", "panic")), 0);
    let msg = trigger_message(&a, &q.start(&key).unwrap());
    assert!(msg.contains("target this conversation only"), "{msg}");
    assert!(msg.contains("watch-only: you cannot advise"), "{msg}");
    assert!(!msg.contains("warren-advise"), "{msg}");
    assert!(msg.contains("warren-read c-1 --after SEQ"), "{msg}");
}

#[test]
fn the_trigger_message_is_bounded() {
    // 1,000 long keywords that all fire, in deltas full of multi-byte text
    let words: Vec<String> = (0..1000).map(|i| format!("{}{i:04}", "ü".repeat(120))).collect();
    let list: Vec<(&str, &str)> = words.iter().map(|w| (w.as_str(), "substring")).collect();
    let text = words.join(" \u{7} ");
    let deltas: Vec<(u64, &str, &str)> = (1..=30).map(|s| (s, "tool", text.as_str())).collect();
    let (a, b) = batch(kws(&list), json!({}), &deltas);
    assert_eq!(b.keywords.len(), 1000);
    let msg = trigger_message(&a, &b);
    assert!(msg.len() <= MAX_TRIGGER_MESSAGE_BYTES, "{} bytes", msg.len());
    assert!(msg.contains(", and "), "the keyword list says how many more");
    assert!(msg.contains("more hits not shown"));
    assert!(
        msg.ends_with("or the advice was already given."),
        "the footer always survives"
    );
    no_controls_but_newline(&msg);
}

#[test]
fn advice() {
    assert_eq!(
        advice_text("lint", "check the bounds in parse()"),
        "[Advice from monitor \"lint\"]: check the bounds in parse()"
    );
    assert_eq!(
        advise("lint", "two\nlines").unwrap(),
        "[Advice from monitor \"lint\"]: two\nlines"
    );
    assert!(advice_text(&"m".repeat(63), "x").len() <= ADVICE_PREFIX_MAX_BYTES + 1);
    let too_long = "x".repeat(MAX_ADVICE_BYTES + 1);
    let cases: &[(&str, Option<&str>)] = &[
        ("fine", None),
        ("line one\nline two", None),
        ("", Some("advice is empty")),
        (" \n ", Some("advice is empty")),
        ("tab\there", Some("control character U+0009 at byte 3")),
        ("esc\u{1b}[2J", Some("control character U+001B at byte 3")),
        ("c1 \u{9b}", Some("control character U+009B")),
        ("cr\r\n", Some("U+000D")),
        (&too_long, Some("over the limit of 16384")),
    ];
    for &(text, want) in cases {
        match (validate_advice(text), want) {
            (Ok(()), None) => {}
            (Err(Error::Invalid { field, problem }), Some(w)) => {
                assert_eq!(field, "text");
                assert!(problem.contains(w), "{problem:?} should contain {w:?}");
            }
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }
    const {
        assert!(
            MAX_ADVICE_BYTES + ADVICE_PREFIX_MAX_BYTES <= 64 * 1024,
            "fits sendMessage"
        )
    };
}
