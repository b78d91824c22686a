//! A profiling aid: `decide_dialog` on the two 4 KB commands of
//! `warren bench supervision`, in a loop, so `perf record` sees only the
//! decision. `cargo run --release -p supervision --example decide_4k [seconds] [read|compound]`.

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
        let started = Instant::now();
        let mut n = 0u64;
        while started.elapsed() < Duration::from_secs(secs) {
            std::hint::black_box(supervision::decide_dialog(&dialog, &ctx));
            n += 1;
        }
        println!(
            "{} byte command ({what}): {:.0}/s",
            cmd.len(),
            n as f64 / started.elapsed().as_secs_f64()
        );
    }
}
