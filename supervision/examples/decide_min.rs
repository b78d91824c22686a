//! `decide_4k`'s decisions timed for a shared, noisy machine: batches of
//! 100 decisions for `seconds`, reporting the fastest batch (the rate when
//! nothing else ran), so two builds can be compared one after the other.
//! `cargo run --release -p supervision --example decide_min [seconds] [read|compound]`.

use std::time::{Duration, Instant};

use supervision::fixtures::{BenchRepo, four_kb_commands};
use supervision::{Answer, Answers, DecisionContext, Dialog, Scope, SupervisionConfig, Verdict};

fn main() {
    let secs: u64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3);
    // Only the commands whose description contains this (all by default).
    let only = std::env::args().nth(2).unwrap_or_default();
    let config = SupervisionConfig {
        enabled: true,
        ..SupervisionConfig::default()
    };
    let over = supervision::AgentOverride {
        enabled: true,
        ..Default::default()
    };
    let policy = supervision::resolve(&config, Some(&over));
    let scope = Scope::new("/w/repo");
    let ctx = DecisionContext {
        policy: &policy,
        scope: &scope,
        resolver: &BenchRepo,
        learned_rules: &[],
    };
    for (what, cmd) in four_kb_commands() {
        if !what.contains(only.as_str()) {
            continue;
        }
        let dialog = Dialog {
            title: "Bash command".into(),
            question: "Do you want to proceed?".into(),
            command: Some(cmd.clone()),
            options: ["Yes", "Yes, and always allow access to /w/repo from this project", "No"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            answers: Some(Answers {
                approve_once: Some(Answer {
                    option: Some(0),
                    keys: "1".into(),
                }),
                deny: Some(Answer {
                    option: Some(2),
                    keys: "3".into(),
                }),
            }),
            cwd: Some("/w/repo".into()),
            ..Dialog::default()
        };
        let decided = supervision::decide_dialog(&dialog, &ctx);
        assert_eq!(decided.verdict, Verdict::Approve, "{}", decided.reason);
        let mut best = f64::MAX;
        let all = Instant::now();
        while all.elapsed() < Duration::from_secs(secs) {
            let t = Instant::now();
            for _ in 0..100 {
                std::hint::black_box(supervision::decide_dialog(std::hint::black_box(&dialog), &ctx));
            }
            best = best.min(t.elapsed().as_secs_f64() / 100.0);
        }
        println!("{} byte command ({what}): best {:.0}/s", cmd.len(), 1.0 / best);
    }
}
