//! `warren bench monitor`: keyword in a target's transcript -> the trigger
//! message in the monitor's conversation, with the monitor conversation live
//! (hot) and paused (cold: the wake continues it); and the matcher's
//! throughput with 1,000 keywords over attributed deltas.

use std::time::{Duration, Instant};

use console_api::methods as m;
use serde_json::json;

use super::{BenchArgs, NodeProcess, call, scratch, summary, wait_idle};
use crate::client::Client;

/// Deltas of attributed text the throughput figure matches, in bytes.
const THROUGHPUT_BYTES: usize = 64 * 1024 * 1024;

pub(super) async fn bench_monitor(args: &BenchArgs) -> anyhow::Result<()> {
    throughput()?;
    let dir = scratch(&args.dir, "monitor")?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    call(
        &mut c,
        m::AGENT_CREATE,
        json!({ "name": "t", "harness": "fake", "rules": [
            { "match": "^emit (\\d+)", "actions": [{ "say": "segfault-$1-end" }] }
        ] }),
    )
    .await?;
    call(&mut c, m::AGENT_CREATE, json!({ "name": "mon", "harness": "fake" })).await?;
    call(
        &mut c,
        m::MONITOR_ATTACH,
        json!({ "monitor": "mon", "target": { "agent": "t" },
                "trigger": { "keywords": [{ "text": "segfault" }] },
                "breaker": { "max_cycles": 100, "max_wakes": 1000, "window_mins": 1 } }),
    )
    .await?;
    let conv = call(&mut c, m::CONVERSATION_START, json!({ "agent": "t" })).await?["conversation"]["id"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    wait_idle(&mut c, &conv).await?;
    let mut watch = Client::connect(&node.target).await?;
    call(&mut watch, m::TRANSCRIPT_SUBSCRIBE, json!({ "conversation": conv })).await?;
    call(&mut watch, m::TRANSCRIPT_SUBSCRIBE, json!({ "agent": "mon" })).await?;

    let mut hot = vec![];
    let mut cold = vec![];
    let mut monitor_conv = String::new();
    let samples = args.samples.clamp(10, 300);
    for i in 0..samples + 10 {
        let is_cold = i >= samples;
        if is_cold && !monitor_conv.is_empty() {
            call(&mut c, m::CONVERSATION_PAUSE, json!({ "conversation": monitor_conv })).await?;
        }
        wait_idle(&mut c, &conv).await?;
        call(
            &mut c,
            m::CONVERSATION_SEND_MESSAGE,
            json!({ "conversation": conv, "text": format!("emit {i}") }),
        )
        .await?;
        let said = format!("segfault-{i}-end");
        let tail = format!("-{i}-end");
        let (mut at_target, mut at_monitor) = (None, None);
        let deadline = Instant::now() + Duration::from_secs(60);
        while at_monitor.is_none() {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(n) = watch.next_notification(left).await? else {
                anyhow::bail!("no trigger message for emit {i} within 60 s");
            };
            let ev = &n.params["event"];
            let text = ev["text"].as_str().unwrap_or_default();
            if ev["conversation"] == conv.as_str() && ev["speaker"] == "agent" && text == said {
                at_target = Some(Instant::now());
            } else if ev["speaker"] == "system" && text.contains(&tail) && text.contains("segfault") {
                at_monitor = Some(Instant::now());
                monitor_conv = ev["conversation"].as_str().unwrap_or_default().to_string();
            }
        }
        let (Some(t), Some(mo)) = (at_target, at_monitor) else {
            continue;
        };
        let ms = mo.saturating_duration_since(t).as_secs_f64() * 1000.0;
        if i == 0 {
            // The very first wake starts the monitor's conversation.
            cold.push(ms);
        } else if is_cold {
            cold.push(ms);
        } else {
            hot.push(ms);
        }
        wait_idle(&mut c, &monitor_conv).await?;
    }
    let (p50, p99, max) = summary(hot.clone());
    println!(
        "monitor keyword -> trigger message, monitor conversation live: p50 {p50:.1} ms  p99 {p99:.1} ms  max {max:.1} ms  ({} wakes)",
        hot.len()
    );
    let (p50, p99, max) = summary(cold.clone());
    println!(
        "monitor keyword -> trigger message, cold (conversation started or continued): p50 {p50:.1} ms  p99 {p99:.1} ms  max {max:.1} ms  ({} wakes)",
        cold.len()
    );
    Ok(())
}

/// The matcher alone: 1,000 keywords (half `word` mode) over attributed
/// deltas of ~1 KiB of ordinary words, rarely a hit.
fn throughput() -> anyhow::Result<()> {
    let keywords: Vec<serde_json::Value> = (0..1000)
        .map(|i| json!({ "text": format!("kw{i:04}x"), "mode": if i % 2 == 0 { "word" } else { "substring" } }))
        .collect();
    let spec: monitor::AttachmentSpec = serde_json::from_value(json!({
        "monitor": "m", "target": { "agent": "t" }, "trigger": { "keywords": keywords }
    }))?;
    let attachment = monitor::validate(&spec)?;
    let mut watch = monitor::Watch::new(attachment)?;
    let words = [
        "the", "build", "failed", "because", "a", "test", "timed", "out", "while", "reading", "from", "the", "socket",
        "retrying", "with", "backoff", "kw0001", "x-ray", "pointer",
    ];
    let mut delta = String::new();
    let mut i = 0usize;
    while delta.len() < 1024 {
        delta.push_str(words[i % words.len()]);
        delta.push(' ');
        i += 7;
    }
    // One delta in 16 holds a keyword (a near miss, `kw0001`, is in all).
    let hit = format!("{delta} kw0002x");
    let started = Instant::now();
    let (mut bytes, mut seq, mut hits) = (0usize, 0u64, 0usize);
    while bytes < THROUGHPUT_BYTES {
        seq += 1;
        let text = if seq % 16 == 0 { &hit } else { &delta };
        let d = monitor::Delta {
            conversation: "c",
            seq,
            speaker: if seq % 3 == 0 { "tool" } else { "agent" },
            text,
        };
        hits += watch.evaluate(&d, 0).hits.len();
        bytes += text.len();
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "monitor matching, 1000 keywords over {} attributed deltas: {:.0} MB/s ({hits} hits)",
        seq,
        bytes as f64 / secs / 1e6
    );
    Ok(())
}
