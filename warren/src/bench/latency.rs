//! `warren bench latency`: a fake CLI's output reaching a transcript
//! subscriber, and a message reaching the CLI's screen as a terminal
//! subscriber sees it, over a loopback WebSocket. The measurements are shared
//! with `warren bench redaction`, which runs them with and without secrets.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{BenchArgs, NodeProcess, call, now_ms_f, scratch, summary, wait_idle};
use crate::client::Client;

/// PTY output -> transcript subscriber, and sendMessage -> text on screen.
pub(super) async fn bench_latency(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "latency")?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    call(&mut c, m::AGENT_CREATE, json!({ "name": "bench", "harness": "fake" })).await?;
    let conv = start(&mut c, "bench").await?;
    let lat = transcript(&node, &dir.path, &conv, "bench", args.samples).await?;
    let (p50, p99, max) = summary(lat);
    println!(
        "latency CLI output -> transcript subscriber over loopback WebSocket ({} samples, ms clock of the CLI): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms",
        args.samples
    );
    let visible = screen(&node, &conv, args.samples).await?;
    let count = visible.len();
    let (p50, p99, max) = summary(visible);
    println!(
        "latency sendMessage -> text visible on the screen of an IDLE fake CLI ({count} samples): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms"
    );
    Ok(())
}

/// Starts `agent`'s conversation and waits for IDLE; returns its object.
pub(super) async fn start(c: &mut Client, agent: &str) -> anyhow::Result<Value> {
    let conv = call(c, m::CONVERSATION_START, json!({ "agent": agent })).await?;
    let conv = conv["conversation"].clone();
    wait_idle(c, conv["id"].as_str().unwrap_or_default()).await?;
    Ok(conv)
}

/// `samples` replies of the fake CLI of `conv` (agent `agent` of the node
/// on `data_dir`): from the ms stamp of its session line to a transcript
/// subscriber's receipt.
pub(super) async fn transcript(
    node: &NodeProcess,
    data_dir: &Path,
    conv: &Value,
    agent: &str,
    samples: usize,
) -> anyhow::Result<Vec<f64>> {
    let id = conv["id"].as_str().unwrap_or_default().to_string();
    let mut c = Client::connect(&node.target).await?;
    // A second connection follows the transcript.
    let mut sub = Client::connect(&node.target).await?;
    call(&mut sub, m::TRANSCRIPT_SUBSCRIBE, json!({ "conversation": id })).await?;
    let session_file = data_dir
        .join(format!("agents/{agent}/home/.fake-cli/sessions"))
        .join(format!("{}.jsonl", conv["resume_ref"].as_str().unwrap_or_default()));

    let mut received: Vec<(String, f64)> = vec![];
    for i in 0..samples {
        let word = format!("pong-{i}");
        call(
            &mut c,
            m::CONVERSATION_SEND_MESSAGE,
            json!({ "conversation": id, "text": format!("/fake say {word}") }),
        )
        .await?;
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let Some(n) = sub.next_notification(Duration::from_secs(10)).await? else {
                bail!("no transcript event for {word}");
            };
            let at = now_ms_f();
            if n.params["event"]["text"] == word.as_str() {
                received.push((word.clone(), at));
                break;
            }
            if Instant::now() > deadline {
                bail!("no transcript event for {word}");
            }
        }
    }
    // The fake CLI stamps each session line (ms) right before it draws it.
    let text = std::fs::read_to_string(&session_file).with_context(|| format!("reading {}", session_file.display()))?;
    let mut written = std::collections::HashMap::new();
    for line in text.lines() {
        if let Ok(v) = serde_json::from_str::<Value>(line)
            && v["type"] == "assistant"
            && let (Some(t), Some(ts)) = (v["text"].as_str(), v["ts_ms"].as_f64())
        {
            written.insert(t.to_string(), ts);
        }
    }
    Ok(received
        .iter()
        .filter_map(|(w, at)| written.get(w).map(|ts| (at - ts).max(0.0)))
        .collect())
}

/// `samples` messages to the IDLE fake CLI of `conv`: from the send to the
/// text showing on a screen fed by `terminal.subscribe`.
pub(super) async fn screen(node: &NodeProcess, conv: &Value, samples: usize) -> anyhow::Result<Vec<f64>> {
    let id = conv["id"].as_str().unwrap_or_default().to_string();
    let mut c = Client::connect(&node.target).await?;
    let mut term = Client::connect(&node.target).await?;
    call(&mut term, m::TERMINAL_SUBSCRIBE, json!({ "conversation": id })).await?;
    let screen = call(&mut c, m::CONVERSATION_SCREEN, json!({ "conversation": id })).await?;
    let rows = screen["rows"].as_u64().unwrap_or(40) as u16;
    let cols = screen["cols"].as_u64().unwrap_or(120) as u16;
    let nz = |v: u16| std::num::NonZeroU16::new(v).unwrap_or(std::num::NonZeroU16::MIN);
    let mut parser = vt100::Parser::new(nz(rows), nz(cols), 0);
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut visible = vec![];
    let mut sender = Client::connect(&node.target).await?;
    for i in 0..samples {
        // Measure from an IDLE CLI: wait out the previous turn first.
        wait_idle(&mut c, &id).await?;
        let word = format!("visible-{i}-xyz");
        let t0 = Instant::now();
        let send = call(
            &mut sender,
            m::CONVERSATION_SEND_MESSAGE,
            json!({ "conversation": id, "text": word }),
        );
        let watch = async {
            loop {
                if parser.screen().contents().contains(&word) {
                    return anyhow::Ok(t0.elapsed().as_secs_f64() * 1000.0);
                }
                let Some(n) = term.next_notification(Duration::from_secs(10)).await? else {
                    bail!("{word} never appeared on the screen");
                };
                if let Some(data) = n.params["data"].as_str() {
                    parser.process(&b64.decode(data).unwrap_or_default());
                }
            }
        };
        let (sent, seen) = tokio::join!(send, watch);
        sent?;
        visible.push(seen?);
    }
    Ok(visible)
}
