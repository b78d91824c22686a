//! The structured trigger message a woken monitor's conversation receives:
//! deterministic text of at most [`MAX_TRIGGER_MESSAGE_BYTES`], free of
//! control characters but newline (so it passes `sendMessage` as is).

use std::fmt::Write as _;

use crate::attachment::{Attachment, Mode, Target};
use crate::text::{clip, one_line};
use crate::wake::Batch;

/// Upper bound of [`trigger_message`], in bytes (well under `sendMessage`'s
/// 64 KiB).
pub const MAX_TRIGGER_MESSAGE_BYTES: usize = 16 * 1024;

const MAX_ID_BYTES: usize = 128;
const MAX_KEYWORDS_LINE_BYTES: usize = 2 * 1024;
const MAX_EXCERPT_LINE_BYTES: usize = 1024;

/// The message for one wake: which target conversation, the matched keywords
/// with counts, the kept excerpts with speaker and seq (the match in «»), the
/// transcript cursor, and how to read more and advise (or that the
/// attachment is watch-only), or stay silent.
pub fn trigger_message(attachment: &Attachment, batch: &Batch) -> String {
    let conv = one_line(&batch.key.conversation, MAX_ID_BYTES);
    let target = match attachment.target() {
        Target::Agent(a) => format!("agent {}", one_line(a, MAX_ID_BYTES)),
        Target::Conversation(_) => "this conversation only".to_string(),
    };

    let mut footer = String::new();
    let _ = writeln!(
        footer,
        "Cursor: the trigger has evaluated {conv} through seq {}.",
        batch.last_seq
    );
    let from = batch.first_seq.saturating_sub(1);
    let read = format!(
        "Read more with `warren-read {conv} --after SEQ` (--after {from} reads from the first hit on; a smaller SEQ gives earlier context)"
    );
    if attachment.inject() {
        let _ = write!(
            footer,
            "{read}; advise with `warren-advise {conv} TEXT`, or stay silent if this is a false alarm or the advice was already given."
        );
    } else {
        let _ = write!(
            footer,
            "{read}. This attachment is watch-only: you cannot advise; note what you find, or stay silent."
        );
    }

    let mut out = String::new();
    let _ = writeln!(
        out,
        "[Trigger] Keywords fired in conversation {conv} (attachment {}, target {target}).",
        one_line(&batch.key.attachment, MAX_ID_BYTES)
    );
    out.push_str(&keywords_line(batch));
    out.push('\n');

    let shown_hits = batch.excerpts.len() as u64;
    let _ = writeln!(out, "Excerpts ({shown_hits} of {} hits, the match in «»):", batch.hits);
    let budget = MAX_TRIGGER_MESSAGE_BYTES - footer.len() - 64;
    let mut dropped = batch.omitted_excerpts;
    for (i, hit) in batch.excerpts.iter().enumerate() {
        let e = &hit.excerpt;
        let line = one_line(
            &format!(
                "- seq {}, {}, \"{}\": {}{}«{}»{}{}",
                hit.seq,
                hit.speaker,
                hit.keyword.text,
                if e.cut_before { "…" } else { "" },
                e.before,
                e.matched,
                e.after,
                if e.cut_after { "…" } else { "" },
            ),
            MAX_EXCERPT_LINE_BYTES,
        );
        if out.len() + line.len() + 1 > budget {
            dropped += (batch.excerpts.len() - i) as u64;
            break;
        }
        out.push_str(&line);
        out.push('\n');
    }
    if dropped > 0 {
        let _ = writeln!(out, "({dropped} more hits not shown.)");
    }
    out.push_str(&footer);
    debug_assert!(out.len() <= MAX_TRIGGER_MESSAGE_BYTES);
    clip(&out, MAX_TRIGGER_MESSAGE_BYTES).to_string()
}

fn keywords_line(batch: &Batch) -> String {
    let mut line = format!("Keywords ({}):", batch.keywords.len());
    for (i, k) in batch.keywords.iter().enumerate() {
        let mode = match k.keyword.mode {
            Mode::Substring => "",
            Mode::Word => " (word)",
        };
        let item = format!(
            "{} \"{}\"{mode} ×{}",
            if i == 0 { "" } else { "," },
            one_line(&k.keyword.text, 512),
            k.occurrences
        );
        if line.len() + item.len() > MAX_KEYWORDS_LINE_BYTES {
            let _ = write!(line, ", and {} more", batch.keywords.len() - i);
            break;
        }
        line.push_str(&item);
    }
    line
}
