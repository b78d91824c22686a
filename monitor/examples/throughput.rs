//! Matching throughput by hand: `cargo run -p monitor --release --example
//! throughput [KEYWORDS] [MEGABYTES] [KEYWORD_BYTES]` (default 1,000 keywords
//! of 6-12 letters over ~100 MB of 1 KiB attributed deltas). Prints MB/s;
//! asserts nothing about timing.

use std::time::Instant;

use monitor::{AttachmentSpec, Delta, KeywordSpec, Mode, TargetSpec, Trigger, TriggerSpec, validate};

/// xorshift64*: a deterministic corpus without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn word(&mut self, min: u64, max: u64) -> String {
        let len = min + self.below(max - min + 1);
        (0..len).map(|_| (b'a' + self.below(26) as u8) as char).collect()
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n_keywords: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let megabytes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let keyword_bytes: Option<u64> = args.next().and_then(|a| a.parse().ok());

    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let keywords: Vec<KeywordSpec> = (0..n_keywords)
        .map(|i| KeywordSpec {
            text: match keyword_bytes {
                Some(n) => rng.word(n, n),
                None => rng.word(6, 12),
            },
            mode: if i % 2 == 0 { Mode::Word } else { Mode::Substring },
        })
        .collect();
    let spec = AttachmentSpec {
        monitor: "lint".into(),
        target: TargetSpec {
            agent: Some("coder".into()),
            conversation: None,
        },
        trigger: TriggerSpec {
            keywords: keywords.clone(),
            case_sensitive: None,
            speakers: None,
        },
        inject: None,
        breaker: None,
    };
    let attachment = validate(&spec).expect("valid");
    let built = Instant::now();
    let trigger = Trigger::new(&attachment).expect("builds");
    let build_ms = built.elapsed().as_millis();

    // ~1 KiB deltas of prose-like text: short words, punctuation, newlines;
    // one delta in 1,000 carries a keyword.
    let speakers = ["agent", "tool", "human", "system", "monitor:style"];
    let mut deltas: Vec<(String, &str)> = Vec::new();
    let mut bytes = 0usize;
    while bytes < megabytes * 1_000_000 {
        let mut text = String::with_capacity(1100);
        while text.len() < 1024 {
            let w = rng.word(1, 9);
            if rng.below(8) == 0 {
                text.push_str(&w.to_uppercase());
            } else {
                text.push_str(&w);
            }
            text.push(match rng.below(20) {
                0 => '\n',
                1 => ',',
                2 => '.',
                _ => ' ',
            });
        }
        if rng.below(1000) == 0 {
            text.push_str(&keywords[rng.below(n_keywords as u64) as usize].text);
            text.push('.');
        }
        bytes += text.len();
        deltas.push((text, speakers[rng.below(speakers.len() as u64) as usize]));
    }

    let start = Instant::now();
    let mut hits = 0usize;
    for (seq, (text, speaker)) in deltas.iter().enumerate() {
        let d = Delta {
            conversation: "c-1",
            seq: seq as u64 + 1,
            speaker,
            text,
        };
        hits += trigger.hits(&d).len();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{n_keywords} keywords (automaton of {} KiB built in {build_ms} ms), {} deltas, {:.1} MB: {hits} hits in {secs:.3} s = {:.0} MB/s",
        trigger.memory_usage() / 1024,
        deltas.len(),
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / secs
    );
}
