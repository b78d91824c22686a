//! Incremental parsing: feeding a file in pieces (with the state saved and
//! restored between pieces, as the node does) gives exactly what one parse of
//! the whole file gives, for any split points; and a file on disk that grows,
//! is truncated or is rewritten is continued or reparsed accordingly.

use proptest::prelude::*;
use spend::scan::{self, Job, Outcome, SessionFile};
use spend::{FileState, Harness, MAX_LINE_BYTES, Parsed, RecordSet};

fn claude_line(i: u8, kind: u8) -> String {
    let msg = i / 3; // three lines per message: streaming
    let out = if i % 3 == 2 { 21 } else { 1 }; // the middle line repeats the first
    let stop = if i % 3 == 2 { "\"end_turn\"" } else { "null" };
    let req = if msg.is_multiple_of(2) {
        format!(",\"requestId\":\"req_{msg}\"")
    } else {
        String::new()
    };
    match kind % 6 {
        0 => format!("{{\"type\":\"user\",\"message\":{{\"role\":\"user\",\"content\":\"line {i}\"}}}}"),
        1 => "garbage that is not json".to_string(),
        2 => format!(
            "{{\"type\":\"assistant\",\"isSidechain\":{},\"sessionId\":\"s\",\"timestamp\":\"2026-11-0{}T10:00:00Z\",\"message\":{{\"id\":\"msg_{msg}\",\"model\":\"claude-haiku-4-5\",\"stop_reason\":{stop},\"usage\":{{\"input_tokens\":{},\"cache_read_input_tokens\":5,\"output_tokens\":-1}}}}{req}}}",
            msg % 4 == 3,
            1 + msg % 5,
            i
        ),
        _ => format!(
            "{{\"type\":\"assistant\",\"isSidechain\":{},\"sessionId\":\"s\",\"timestamp\":\"2026-11-0{}T10:00:00Z\",\"message\":{{\"id\":\"msg_{msg}\",\"model\":\"claude-haiku-4-5\",\"stop_reason\":{stop},\"usage\":{{\"input_tokens\":{},\"cache_read_input_tokens\":5,\"cache_creation\":{{\"ephemeral_1h_input_tokens\":{msg}}},\"cache_creation_input_tokens\":{msg},\"output_tokens\":{out}}}}}{req}}}",
            msg % 4 == 3,
            1 + msg % 5,
            msg
        ),
    }
}

fn codex_line(i: u8, kind: u8) -> String {
    let total = u64::from(i / 2) * 100; // pairs re-emit the same totals
    match kind % 7 {
        0 => format!(
            "{{\"timestamp\":\"2026-11-03T10:00:00Z\",\"type\":\"session_meta\",\"payload\":{{\"id\":\"sess-{i}\",\"timestamp\":\"2026-11-03T10:00:00Z\"{}}}}}",
            if i.is_multiple_of(2) {
                ",\"forked_from_id\":\"p\""
            } else {
                ""
            }
        ),
        1 => format!(
            "{{\"timestamp\":\"2026-11-03T10:00:0{}Z\",\"type\":\"turn_context\",\"payload\":{{\"model\":\"gpt-5-codex-{}\"}}}}",
            i % 10,
            i % 3
        ),
        2 => "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\"}}".to_string(),
        3 => "{\"timestamp\":\"x\",\"type\":\"event_msg\",\"payload\":{\"type\":\"token_count\"}}".to_string(),
        _ => format!(
            "{{\"timestamp\":\"2026-11-03T10:0{}:00Z\",\"type\":\"event_msg\",\"payload\":{{\"type\":\"token_count\",\"info\":{{\"total_token_usage\":{{\"input_tokens\":{},\"cached_input_tokens\":{},\"output_tokens\":{}}}{}}},\"rate_limits\":{{\"primary\":{{\"used_percent\":{}.0,\"resets_in_seconds\":60}}}}}}}}",
            i % 10,
            if i % 11 == 10 { total / 2 } else { total },
            total / 4,
            total / 10,
            if i.is_multiple_of(3) {
                format!(
                    ",\"last_token_usage\":{{\"input_tokens\":{},\"cached_input_tokens\":0,\"output_tokens\":1}}",
                    i
                )
            } else {
                String::new()
            },
            i % 4
        ),
    }
}

fn file(harness: Harness, kinds: &[u8], newline_at_end: bool) -> Vec<u8> {
    let lines: Vec<String> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| match harness {
            Harness::Claude => claude_line(i as u8, *k),
            Harness::Codex => codex_line(i as u8, *k),
        })
        .collect();
    let mut text = lines.join("\n");
    if newline_at_end {
        text.push('\n');
    }
    text.into_bytes()
}

/// Feeds `bytes` in pieces ending at `cuts`, saving and restoring the state
/// between pieces; each piece starts where the state's offset says.
fn feed_in_pieces(harness: Harness, bytes: &[u8], cuts: &[usize]) -> (Parsed, FileState) {
    let mut state = FileState::new(harness, "hint");
    let mut out = Parsed::default();
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(bytes.len());
    for end in ends {
        let from = state.offset as usize;
        if end > from {
            state.feed(&bytes[from..end], &mut out);
        }
        state = FileState::from_json(&state.to_json()).expect("state round-trips");
    }
    (out, state)
}

fn counted(p: &Parsed) -> Vec<spend::UsageRecord> {
    let mut set = RecordSet::new();
    for r in &p.records {
        set.insert(r.clone());
    }
    set.counted().into_iter().cloned().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn claude_pieces_equal_the_whole(kinds in prop::collection::vec(0u8..6, 0..40),
                                     cuts in prop::collection::vec(any::<usize>(), 0..4),
                                     newline in any::<bool>()) {
        let bytes = file(Harness::Claude, &kinds, newline);
        let (whole, ws) = feed_in_pieces(Harness::Claude, &bytes, &[]);
        let (pieces, ps) = feed_in_pieces(Harness::Claude, &bytes, &cuts);
        prop_assert_eq!(&pieces, &whole);
        prop_assert_eq!(ps, ws);
        prop_assert_eq!(counted(&pieces), counted(&whole));
    }

    #[test]
    fn codex_pieces_equal_the_whole(kinds in prop::collection::vec(0u8..7, 0..40),
                                    cuts in prop::collection::vec(any::<usize>(), 0..4),
                                    newline in any::<bool>()) {
        let bytes = file(Harness::Codex, &kinds, newline);
        let (whole, ws) = feed_in_pieces(Harness::Codex, &bytes, &[]);
        let (pieces, ps) = feed_in_pieces(Harness::Codex, &bytes, &cuts);
        prop_assert_eq!(&pieces, &whole);
        prop_assert_eq!(ps, ws);
    }
}

#[test]
fn the_generators_exercise_what_they_claim() {
    // Guard against a property that holds because nothing happens.
    let kinds: Vec<u8> = (0..40).map(|i| [0, 1, 2, 3, 4, 5][i % 6]).collect();
    let (c, _) = feed_in_pieces(Harness::Claude, &file(Harness::Claude, &kinds, true), &[]);
    assert!(
        c.records.len() > 5 && c.stats.duplicates > 0 && c.stats.refused > 0,
        "{:?}",
        c.stats
    );
    let kinds: Vec<u8> = (0..40).map(|i| [1, 4, 5, 6, 2, 3, 4, 0][i % 8]).collect();
    let (x, _) = feed_in_pieces(Harness::Codex, &file(Harness::Codex, &kinds, true), &[]);
    assert!(
        x.records.len() > 5 && x.stats.reemits > 0 && x.stats.refused > 0 && !x.quota.is_empty(),
        "{:?}",
        x.stats
    );
}

#[test]
fn a_50_mb_line_is_refused_in_bounded_memory_at_any_split() {
    let mut bytes = claude_line(2, 3).into_bytes();
    bytes.push(b'\n');
    let long_at = bytes.len() as u64;
    bytes.extend(std::iter::repeat_n(b'a', 50 * 1024 * 1024));
    bytes.push(b'\n');
    bytes.extend_from_slice(claude_line(5, 3).as_bytes());
    bytes.push(b'\n');
    let (whole, _) = feed_in_pieces(Harness::Claude, &bytes, &[]);
    assert_eq!(whole.records.len(), 2);
    assert_eq!(whole.stats.refused, 1);
    assert_eq!(whole.problems[0].offset, long_at);
    assert_eq!(
        whole.problems[0].error,
        spend::SpendError::LineTooLong {
            len: 50 * 1024 * 1024,
            max: MAX_LINE_BYTES
        }
    );
    for cuts in [
        vec![long_at as usize + 10],
        vec![long_at as usize + 5 * 1024 * 1024, bytes.len() - 3],
    ] {
        let (pieces, _) = feed_in_pieces(Harness::Claude, &bytes, &cuts);
        assert_eq!(pieces, whole, "cut at {cuts:?}");
    }
}

#[test]
fn a_file_on_disk_is_continued_truncated_or_rewritten() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("s.jsonl");
    let session = |path: &std::path::Path| SessionFile {
        path: path.to_path_buf(),
        harness: Harness::Claude,
        compressed: false,
        session_hint: "s".into(),
    };
    let all = file(Harness::Claude, &[3, 3, 3, 0, 3, 3, 3, 0, 3, 3, 3], true);
    let half = all.len() / 2;
    std::fs::write(&path, &all[..half]).expect("write");
    let f = session(&path);
    let mut buf = vec![];
    let first = scan::scan_file(&f, None, &mut buf);
    assert!(matches!(first.outcome, Outcome::Parsed { .. }));

    std::fs::write(&path, &all).expect("append");
    let first_state = first.state.clone().expect("read");
    let second = scan::scan_file(&f, Some(&first_state), &mut buf);
    assert_eq!(
        second.outcome,
        Outcome::Appended {
            from: first_state.offset
        }
    );
    let second_state = second.state.clone().expect("read");
    let (whole, _) = feed_in_pieces(Harness::Claude, &all, &[]);
    let mut both = first.parsed.clone();
    both.merge(second.parsed.clone());
    assert_eq!(both.records, whole.records);

    // Unchanged: nothing read. Truncated or rewritten: parsed from 0.
    let again = scan::scan_file(&f, Some(&second_state), &mut buf);
    assert_eq!(again.outcome, Outcome::Unchanged);
    std::fs::write(&path, &all[..half]).expect("truncate");
    let cut = scan::scan_file(&f, Some(&second_state), &mut buf);
    assert_eq!(cut.outcome, Outcome::Parsed { reason: "truncated" });
    assert_eq!(cut.parsed.records, first.parsed.records);
    let mut other = all.clone();
    other[0..8].copy_from_slice(b"{\"type\":");
    other[10] = b'X';
    std::fs::write(&path, [&other[..], b"{}\n"].concat()).expect("rewrite");
    let rewritten = scan::scan_file(&f, Some(&second_state), &mut buf);
    assert_eq!(
        rewritten.outcome,
        Outcome::Parsed {
            reason: "rewritten (its first bytes changed)"
        }
    );

    // Replaced by another file under the same name.
    let other_path = dir.path().join("t.jsonl");
    std::fs::write(&other_path, &all).expect("write");
    std::fs::rename(&other_path, &path).expect("rename");
    let replaced = scan::scan_file(&f, Some(&second_state), &mut buf);
    assert_eq!(
        replaced.outcome,
        Outcome::Parsed {
            reason: "replaced by another file"
        }
    );
    assert_eq!(replaced.parsed.records, whole.records);

    let jobs = [Job { file: &f, prev: None }];
    assert_eq!(scan::scan_many(&jobs, 4)[0].parsed.records, whole.records);
}

#[test]
fn a_zst_of_several_frames_without_a_final_newline_is_read_whole() {
    use ruzstd::encoding::{CompressionLevel, compress_to_vec};
    let all = file(Harness::Codex, &[0, 1, 4, 5, 4, 6], false);
    let cut = all.len() / 2;
    let mut zst = compress_to_vec(&all[..cut], CompressionLevel::Fastest);
    zst.extend(compress_to_vec(&all[cut..], CompressionLevel::Fastest));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rollout-x.jsonl.zst");
    std::fs::write(&path, &zst).expect("write");
    let f = SessionFile {
        path,
        harness: Harness::Codex,
        compressed: true,
        session_hint: "x".into(),
    };
    let got = scan::scan_file(&f, None, &mut vec![]);
    assert_eq!(got.error, None);
    let mut plain = all.clone();
    plain.push(b'\n');
    let (whole, _) = feed_in_pieces(Harness::Codex, &plain, &[]);
    assert!(!whole.records.is_empty());
    assert_eq!(
        got.parsed.records, whole.records,
        "the last line counts: an archive never grows"
    );
    assert_eq!(got.state.expect("read").offset, all.len() as u64);
}
