//! Trigger matching: word vs substring, case, speakers, the monitor's own
//! advice, hits and excerpts, and the watch order (cursor, breaker).

mod common;

use common::*;
use monitor::{Delta, Mode, Watch, advice_text};
use serde_json::json;

#[test]
fn word_and_substring_modes() {
    let word = trigger(kws(&[("segfault", "word")]), json!({}));
    let sub = trigger(kws(&[("segfault", "substring")]), json!({}));
    // (text, fires in word mode, fires in substring mode)
    let cases: &[(&str, bool, bool)] = &[
        ("segfaults", false, true),
        ("segfault.", true, true),
        ("a segfault,", true, true),
        ("segfault", true, true),
        ("got a segfault", true, true),
        ("(segfault)", true, true),
        ("segfault\nnext line", true, true),
        ("_segfault", false, true),
        ("segfault_handler", false, true),
        ("segfault2", false, true),
        ("presegfault", false, true),
        ("segfaulté", false, true),    // é is a word character
        ("日本segfault", false, true), // so are CJK letters
        ("segfault—then", true, true), // an em dash is not
        ("seg fault", false, false),
        ("segfaul", false, false),
        ("", false, false),
    ];
    for &(text, in_word, in_sub) in cases {
        assert_eq!(
            !word.hits(&delta(1, "agent", text)).is_empty(),
            in_word,
            "word: {text:?}"
        );
        assert_eq!(
            !sub.hits(&delta(1, "agent", text)).is_empty(),
            in_sub,
            "substring: {text:?}"
        );
    }
}

#[test]
fn a_rejected_word_occurrence_hides_nothing() {
    // "segfaults" is rejected, the later delimited one still fires
    let t = trigger(kws(&[("segfault", "word")]), json!({}));
    let hits = t.hits(&delta(1, "agent", "segfaults then a segfault"));
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].range, 17..25);
    assert_eq!(hits[0].occurrences, 1);
    // a longer keyword rejected at a position does not hide a shorter one there
    let t = trigger(kws(&[("foo bar", "word"), ("foo", "word")]), json!({}));
    assert_eq!(fired(&t.hits(&delta(1, "agent", "foo barx"))), vec!["foo"]);
    // word-mode keywords with non-word edges are delimited by what surrounds them
    let t = trigger(kws(&[("-f", "word")]), json!({}));
    for (text, fires) in [("rm -f x", true), ("rm -fr x", false), ("x-f", false), ("-f", true)] {
        assert_eq!(!t.hits(&delta(1, "agent", text)).is_empty(), fires, "{text:?}");
    }
}

#[test]
fn case_rules() {
    let insensitive = trigger(kws(&[("Segfault", "word")]), json!({}));
    let sensitive = trigger(kws(&[("Segfault", "word")]), json!({ "case_sensitive": true }));
    for (text, ins, sens) in [
        ("Segfault", true, true),
        ("segfault", true, false),
        ("SEGFAULT", true, false),
        ("sEgFaUlT", true, false),
    ] {
        assert_eq!(
            !insensitive.hits(&delta(1, "agent", text)).is_empty(),
            ins,
            "insensitive {text}"
        );
        assert_eq!(
            !sensitive.hits(&delta(1, "agent", text)).is_empty(),
            sens,
            "sensitive {text}"
        );
    }
    // non-ASCII: all-lower, all-upper and title case of the non-ASCII letters
    let t = trigger(kws(&[("échéance", "word")]), json!({}));
    for (text, fires) in [
        ("échéance", true),
        ("ÉCHÉANCE", true),
        ("Échéance", true),
        ("ÉchéANCE", true),  // ASCII letters fold freely
        ("éCHÉance", false), // mixed-case non-ASCII letters: documented limit
    ] {
        assert_eq!(!t.hits(&delta(1, "agent", text)).is_empty(), fires, "{text}");
    }
    let t = trigger(kws(&[("straße", "substring")]), json!({}));
    assert!(!t.hits(&delta(1, "agent", "STRASSE")).is_empty());
    let t = trigger(kws(&[("échéance", "word")]), json!({ "case_sensitive": true }));
    assert!(t.hits(&delta(1, "agent", "ÉCHÉANCE")).is_empty());
}

#[test]
fn speaker_filters() {
    let all = trigger(kws(&[("panic", "substring")]), json!({}));
    let some = trigger(kws(&[("panic", "substring")]), json!({ "speakers": ["agent", "tool"] }));
    let humans = trigger(
        kws(&[("panic", "substring")]),
        json!({ "speakers": ["human", "monitor:style"] }),
    );
    // (speaker, default filter, [agent, tool], [human, monitor:style])
    let cases = [
        ("agent", true, true, false),
        ("tool", true, true, false),
        ("human", true, false, true),
        ("system", true, false, false),
        ("monitor:style", true, false, true),
        ("monitor:lint", false, false, false), // this monitor's own advice: never
        ("monitor:lint@n-2", false, false, false),
        ("monitor:linter", true, false, false), // another monitor
        ("something-new", true, false, false),
    ];
    for (speaker, a, s, h) in cases {
        let d = delta(1, speaker, "thread main panicked");
        assert_eq!(!all.hits(&d).is_empty(), a, "all: {speaker}");
        assert_eq!(!some.hits(&d).is_empty(), s, "[agent, tool]: {speaker}");
        assert_eq!(!humans.hits(&d).is_empty(), h, "[human, monitor:style]: {speaker}");
    }
}

#[test]
fn the_monitors_own_advice_never_refires() {
    let t = trigger(kws(&[("segfault", "word")]), json!({}));
    let advice = advice_text("lint", "the segfault comes from the unchecked index in parse()");
    assert!(t.hits(&delta(7, "monitor:lint", &advice)).is_empty());
    // the same words from the agent, or from another monitor, do fire
    assert_eq!(t.hits(&delta(8, "agent", &advice)).len(), 1);
    assert_eq!(t.hits(&delta(9, "monitor:style", &advice)).len(), 1);
    // and through a watch, across many rounds, the own advice stays silent
    let mut w = Watch::new(attachment(kws(&[("segfault", "word")]), json!({}))).unwrap();
    for seq in 1..=20 {
        assert!(w.evaluate(&delta(seq, "monitor:lint", &advice), 0).hits.is_empty());
    }
}

#[test]
fn hits_carry_keyword_range_excerpt_and_counts() {
    let t = trigger(
        kws(&[("panic", "word"), ("oom", "substring"), ("PANIC", "substring")]),
        json!({}),
    );
    // PANIC (substring) is a separate keyword from panic (word): modes differ
    let text = "boom: panic at x; oomkiller; panic again";
    let hits = t.hits(&delta(42, "tool", text));
    let got: Vec<_> = hits
        .iter()
        .map(|h| (h.keyword.text.as_str(), h.keyword.mode, h.range.clone(), h.occurrences))
        .collect();
    assert_eq!(
        got,
        vec![
            ("oom", Mode::Substring, 1..4, 2),
            ("panic", Mode::Word, 6..11, 2),
            ("PANIC", Mode::Substring, 6..11, 2),
        ]
    );
    let h = &hits[1];
    assert_eq!((h.seq, h.speaker.as_str(), h.keyword_index), (42, "tool", 0));
    assert_eq!(h.excerpt.before, "boom: ");
    assert_eq!(h.excerpt.matched, "panic");
    assert_eq!(h.excerpt.after, " at x; oomkiller; panic again");
    assert!(!h.excerpt.cut_before && !h.excerpt.cut_after);
    // long context is cut to 80 chars each side
    let long = format!("{}panic{}", "a ".repeat(100), "b ".repeat(100));
    let h = &t.hits(&delta(1, "agent", &long))[0];
    assert_eq!(h.excerpt.before.chars().count(), 80);
    assert_eq!(h.excerpt.after.chars().count(), 80);
    assert!(h.excerpt.cut_before && h.excerpt.cut_after);
    // the matched text is the delta's, whatever the keyword's case
    let h = &t.hits(&delta(1, "agent", "PaNiC!"))[0];
    assert_eq!(h.excerpt.matched, "PaNiC");
}

#[test]
fn occurrences_are_all_the_counted_matches() {
    let t = trigger(kws(&[("aa", "substring"), ("ab", "word")]), json!({}));
    let occ: Vec<_> = t.occurrences("aaa ab xab").collect();
    assert_eq!(occ, vec![(0, 0..2), (0, 1..3), (1, 4..6)]);
}

#[test]
fn the_watch_evaluates_each_delta_once() {
    let mut w = Watch::new(attachment(kws(&[("panic", "word")]), json!({}))).unwrap();
    assert_eq!(w.evaluate(&delta(1, "agent", "panic"), 0).hits.len(), 1);
    // a resubscription replays 1: not evaluated again
    assert!(w.evaluate(&delta(1, "agent", "panic"), 0).hits.is_empty());
    assert_eq!(
        w.evaluate(&delta(3, "agent", "panic"), 0).hits.len(),
        1,
        "a gap is fine"
    );
    assert!(
        w.evaluate(&delta(2, "agent", "panic"), 0).hits.is_empty(),
        "late replay"
    );
    assert_eq!(w.cursor().last(CONV), Some(3));
    // other conversations of an agent target have their own cursor
    let other = Delta {
        conversation: "c-2",
        seq: 1,
        speaker: "agent",
        text: "panic",
    };
    assert_eq!(w.evaluate(&other, 0).hits.len(), 1);
}

#[test]
fn a_conversation_target_ignores_other_conversations() {
    let a = monitor::validate(&spec(json!({
        "monitor": "lint", "target": { "conversation": "c-1" },
        "trigger": { "keywords": [{ "text": "panic" }] }
    })))
    .unwrap();
    let mut w = Watch::new(a).unwrap();
    let other = Delta {
        conversation: "c-2",
        seq: 5,
        speaker: "agent",
        text: "panic",
    };
    assert!(w.evaluate(&other, 0).hits.is_empty());
    assert_eq!(w.cursor().last("c-2"), None, "not recorded");
    assert_eq!(w.evaluate(&delta(1, "agent", "panic"), 0).hits.len(), 1);
}

#[test]
fn a_tripped_watch_does_not_evaluate_and_a_human_resets_cycles() {
    let a = attachment(kws(&[("panic", "word")]), json!({}));
    let mut w = Watch::new(a).unwrap();
    // one completed cycle, then a human message resets it (and is stored)
    w.breaker_mut().on_wake(1).unwrap();
    w.breaker_mut().on_inject(2).unwrap();
    assert_eq!(w.breaker().state().cycles, 1);
    let ev = w.evaluate(&delta(1, "human", "please stop"), 3);
    assert_eq!(ev.events, vec![monitor::BreakerEvent::HumanMessage { at: 3 }]);
    assert_eq!(w.breaker().state().cycles, 0);
    // a human message with nothing to reset stores nothing
    assert!(w.evaluate(&delta(2, "human", "panic"), 4).events.is_empty());
    // trip it: no evaluation, but the cursor moves on
    for i in 0..5 {
        w.breaker_mut().on_wake(10 + i).unwrap();
        w.breaker_mut().on_inject(10 + i).unwrap();
    }
    assert!(w.breaker().is_tripped());
    let ev = w.evaluate(&delta(3, "agent", "panic"), 20);
    assert!(ev.hits.is_empty() && ev.events.is_empty());
    assert!(
        w.evaluate(&delta(4, "human", "panic"), 21).events.is_empty(),
        "a human message does not rearm"
    );
    assert!(w.breaker().is_tripped());
    assert_eq!(w.cursor().last(CONV), Some(4));
    // a human re-arms: evaluation resumes with the next delta, not the tripped period
    assert_eq!(
        w.breaker_mut().rearm(30),
        vec![monitor::BreakerEvent::Rearmed { at: 30 }]
    );
    assert!(w.evaluate(&delta(4, "agent", "panic"), 31).hits.is_empty());
    assert_eq!(w.evaluate(&delta(5, "agent", "panic"), 31).hits.len(), 1);
}

#[test]
fn an_echo_of_the_monitors_own_advice_fires_nothing_but_the_agents_words_do() {
    let mut w = Watch::new(attachment(kws(&[("segfault", "word")]), json!({}))).unwrap();
    let body = "check the null pointer behind the segfault";
    w.remember_advice(body, 1_000);
    // The CLI echoes the advice (prefixed) and the agent quotes it: silent.
    let echo = format!("echo: {}", advice_text("lint", body));
    assert!(w.evaluate(&delta(1, "agent", &echo), 1_100).hits.is_empty());
    assert!(w.evaluate(&delta(2, "tool", body), 1_200).hits.is_empty());
    // The keyword outside the quote still fires, once, where it stands.
    let both = format!("{body}; and another segfault at exit");
    let hits = w.evaluate(&delta(3, "agent", &both), 1_300).hits;
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].occurrences, 1);
    assert_eq!(&both[hits[0].range.clone()], "segfault");
    assert!(hits[0].range.start > body.len());
    // Advice is remembered for a while only.
    let later = 1_000 + monitor::ADVICE_ECHO_MS;
    assert_eq!(w.evaluate(&delta(4, "agent", body), later).hits.len(), 1);
}
