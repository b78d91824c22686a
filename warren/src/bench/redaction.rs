//! `warren bench redaction`: what redacting known secret values costs on the
//! transcript path. The same two latencies as `warren bench latency` (a fake
//! CLI's output -> transcript subscriber, a message -> text on a terminal
//! subscriber's screen), for an agent without secrets and for one with 50
//! (each 40 random characters, beside the live instance tokens), on one
//! node; then the matcher's own cost per transcript line and per terminal
//! chunk, in process.

use std::time::Instant;

use console_api::methods as m;
use serde_json::json;

use super::latency;
use super::{BenchArgs, NodeProcess, call, client_unix, scratch, summary};
use crate::client::Client;

/// Secrets of the guarded agent.
const SECRETS: usize = 50;

fn random_value(i: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut x = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ super::rand_suffix();
    (0..40)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ALPHABET[(x % ALPHABET.len() as u64) as usize] as char
        })
        .collect()
}

pub(super) async fn bench_redaction(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "redaction")?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    let mut figures = vec![];
    for (agent, secrets) in [("plain", 0), ("guarded", SECRETS)] {
        call(&mut c, m::AGENT_CREATE, json!({ "name": agent, "harness": "fake" })).await?;
        for i in 0..secrets {
            client_unix(
                &dir.path,
                m::AGENT_SECRET_SET,
                json!({ "agent": agent, "name": format!("SECRET_{i}"), "value": random_value(i) }),
            )
            .await?;
        }
        let conv = latency::start(&mut c, agent).await?;
        let (t50, t99, _) = summary(latency::transcript(&node, &dir.path, &conv, agent, args.samples).await?);
        let (s50, s99, _) = summary(latency::screen(&node, &conv, args.samples).await?);
        println!(
            "redact {secrets:>2} secrets: CLI output -> transcript subscriber p50 {t50:.2} ms, p99 {t99:.2} ms; sendMessage -> terminal subscriber's screen p50 {s50:.2} ms, p99 {s99:.2} ms ({} samples each)",
            args.samples
        );
        figures.push((t99, s99));
        call(&mut c, m::CONVERSATION_PAUSE, json!({ "conversation": conv["id"] })).await?;
    }
    let ((t0, s0), (t1, s1)) = (figures[0], figures[1]);
    println!(
        "redact p99 with {SECRETS} secrets / without: transcript {:.2}x, terminal {:.2}x",
        t1 / t0,
        s1 / s0
    );
    matcher_cost(args.samples.max(1000));
    Ok(())
}

/// The matcher alone: one transcript line, and one 4 KiB terminal chunk
/// through a subscriber's stream redactor, with 50 secrets and an instance
/// token's length of value.
fn matcher_cost(n: usize) {
    let mut values: Vec<(String, String)> = (0..SECRETS).map(|i| (format!("SECRET_{i}"), random_value(i))).collect();
    values.push(("WARREN_TOKEN".into(), "E".repeat(700)));
    let built = Instant::now();
    let Ok(matcher) = node::redact::Matcher::new(values.iter().map(|(n, v)| (n.as_str(), v.as_str()))) else {
        println!("redact the matcher could not be built");
        return;
    };
    let build_us = built.elapsed().as_secs_f64() * 1e6;
    let line = "⏺ Ran the tests: 124 passed, 0 failed in 3.2 s; next I will update the README and the changelog.";
    let mut per_line = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(matcher.redact_str(std::hint::black_box(line)));
        per_line.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let chunk: Vec<u8> = format!("\x1b[H\x1b[2J{}", line.repeat(60)).into_bytes()[..4096].to_vec();
    let mut stream = node::redact::StreamRedactor::default();
    let mut per_chunk = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(stream.push(&matcher, std::hint::black_box(&chunk)));
        per_chunk.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let (l50, l99, _) = summary(per_line);
    let (c50, c99, _) = summary(per_chunk);
    println!(
        "redact matcher over {} values (built in {build_us:.0} µs): a {}-byte transcript line p50 {l50:.1} µs, p99 {l99:.1} µs; a 4 KiB terminal chunk p50 {c50:.1} µs, p99 {c99:.1} µs",
        matcher.len(),
        line.len()
    );
}
