//! `warren bench mail`: durable sends per second over the API (many senders
//! at once, each send acknowledged only once committed with
//! `synchronous=FULL`), then an inbox page's latency with 100,000 messages
//! stored. `warren bench recall`: 100,000 transcript events and 1,000
//! documents indexed through the store's writer (the index's cost per
//! event, in time and bytes), then `recall.search` over the API.

use std::time::Instant;

use console_api::methods as m;
use serde_json::json;

use super::{BenchArgs, NodeProcess, call, scratch, summary};
use crate::client::Client;
use node::events::{AgentRecord, Durability, Event, GrantsRecord};
use node::store::Store;

/// Messages stored before the inbox is timed.
const STORED: usize = 100_000;
/// Concurrent senders (one connection each).
const SENDERS: usize = 64;

pub(super) async fn bench_mail(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "mail")?;
    std::fs::write(
        dir.path.join("warren.toml"),
        "[mail]\nrate_per_sec = 1000000000.0\nburst = 4000000000\n",
    )?;
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    call(&mut c, m::AGENT_CREATE, json!({ "name": "inbox", "harness": "fake" })).await?;
    for i in 0..SENDERS {
        call(
            &mut c,
            m::AGENT_CREATE,
            json!({ "name": format!("s{i}"), "harness": "fake", "grants": { "peers": ["inbox"] } }),
        )
        .await?;
    }
    let each = STORED / SENDERS + 1;
    let started = Instant::now();
    let mut tasks = vec![];
    for i in 0..SENDERS {
        let mut client = Client::connect(&node.target).await?;
        tasks.push(tokio::spawn(async move {
            for n in 0..each {
                let p = json!({ "from": format!("s{i}"), "to": "inbox", "body": format!("message {n} from sender {i}: the build is green") });
                client
                    .call(m::MAILBOX_SEND, p)
                    .await
                    .map_err(|e| anyhow::anyhow!("send: {e}"))?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let secs = started.elapsed().as_secs_f64();
    let total = (each * SENDERS) as f64;
    println!(
        "mail   durable sends over the API ({SENDERS} senders at once): {:.0} sends/s ({total} in {secs:.2} s)",
        total / secs
    );
    let newest = call(
        &mut c,
        m::MAILBOX_INBOX,
        json!({ "agent": "inbox", "after": 0, "limit": 1 }),
    )
    .await?["messages"][0]["seq"]
        .as_u64()
        .unwrap_or(1);
    let mut lat = vec![];
    for i in 0..args.samples.max(100) {
        // Pages from all over the inbox (the cursor is a seq).
        let after = newest + (i as u64 * 7919) % (total as u64);
        let t = Instant::now();
        let page = call(
            &mut c,
            m::MAILBOX_INBOX,
            json!({ "agent": "inbox", "after": after, "limit": 100 }),
        )
        .await?;
        lat.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(page["messages"].is_array(), "no page");
    }
    let (p50, p99, max) = summary(lat);
    println!(
        "mail   inbox page of 100 with {total} messages stored: p50 {p50:.3} ms, p99 {p99:.3} ms, max {max:.3} ms"
    );
    Ok(())
}

/// A small vocabulary of log-like words.
const WORDS: &[&str] = &[
    "build",
    "test",
    "deploy",
    "error",
    "warning",
    "cache",
    "merge",
    "branch",
    "commit",
    "review",
    "parser",
    "socket",
    "timeout",
    "retry",
    "kernel",
    "payments",
    "invoice",
    "ledger",
    "token",
    "session",
    "migration",
    "schema",
    "index",
    "query",
    "latency",
    "router",
    "gateway",
    "worker",
    "queue",
    "signal",
    "panic",
    "backtrace",
    "fixture",
    "snapshot",
    "render",
    "layout",
    "terminal",
    "cursor",
    "buffer",
    "stream",
];

/// Syllables the rarer words are made of.
const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "ren", "tu", "sar", "vel", "no", "qui", "dra", "pe", "zo", "han", "lit", "mor", "gu",
];
/// Words in the corpus: the common ones above, then made-up rarer ones.
const VOCABULARY: usize = 4_000;

fn xorshift(x: &mut u64) -> u64 {
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    *x
}

/// Word `n` of the vocabulary (0 is the most common).
fn word(n: usize) -> String {
    if n < WORDS.len() {
        return WORDS[n].to_string();
    }
    let mut x = n as u64;
    (0..3)
        .map(|_| {
            let s = SYLLABLES[(x % SYLLABLES.len() as u64) as usize];
            x /= SYLLABLES.len() as u64;
            s
        })
        .collect::<String>()
        + &(n / 4096).to_string()
}

/// A word drawn with a Zipf-like skew (rank ~ u^3): a few words are
/// everywhere, most are rare, as in real logs and prose.
fn zipf(x: &mut u64) -> usize {
    let u = (xorshift(x) % 1_000_000) as f64 / 1_000_000.0;
    ((u * u * u) * VOCABULARY as f64) as usize
}

fn line(i: usize) -> String {
    let mut x = i as u64 * 2_654_435_761 + 12_345;
    let words: Vec<String> = (0..14).map(|_| word(zipf(&mut x))).collect();
    format!("step {i}: {}", words.join(" "))
}

pub(super) async fn bench_recall(args: &BenchArgs) -> anyhow::Result<()> {
    const EVENTS: usize = 100_000;
    const DOCS: usize = 1_000;
    let dir = scratch(&args.dir, "recall")?;
    let db = dir.path.join("warren.db");
    {
        let store = Store::open(&db).await?;
        let record = |name: &str| AgentRecord {
            name: name.into(),
            harness: "fake".into(),
            persona: None,
            model: None,
            grants: GrantsRecord {
                tools: vec![],
                peers: None,
                recall: true,
                egress: vec![],
            },
            rules: vec![],
            resources: None,
            workspace: None,
        };
        let mut setup = vec![];
        for a in ["ada", "bob"] {
            setup.push(Event::AgentCreated { agent: record(a) });
            setup.push(Event::ConversationCreated {
                id: format!("c-{a}"),
                agent: a.into(),
                resume_ref: None,
                login: false,
            });
        }
        store.append(setup).await?;
        let size = |p: &std::path::Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
        let bytes_before = size(&db) + size(&db.with_extension("db-wal"));
        let started = Instant::now();
        for chunk in 0..(EVENTS / 1000) {
            let events: Vec<Event> = (0..1000)
                .map(|k| {
                    let i = chunk * 1000 + k;
                    Event::Transcript {
                        conversation: if i % 10 == 0 { "c-bob".into() } else { "c-ada".into() },
                        seq: i as u64 + 1,
                        speaker: "agent".into(),
                        kind: "reply".into(),
                        text: line(i),
                        cursor: None,
                    }
                })
                .collect();
            store.enqueue(events, Durability::Relaxed).await?.await??;
        }
        let per_event_us = started.elapsed().as_secs_f64() * 1e6 / EVENTS as f64;
        let docs: Vec<Event> = (0..DOCS)
            .map(|d| Event::RecallStashed {
                agent: if d % 2 == 0 { "ada".into() } else { "bob".into() },
                name: format!("doc-{d}.md"),
                text: (0..20).map(|k| line(d * 20 + k + 7)).collect::<Vec<_>>().join("\n"),
            })
            .collect();
        store.append(docs).await?;
        let fts: i64 = store.recall_index_bytes().await?;
        let bytes_after = size(&db) + size(&db.with_extension("db-wal"));
        println!(
            "recall index cost: {per_event_us:.1} us per stored transcript event (append with the index, in batches of 1,000), \
             {:.0} bytes of FTS index per event ({} index bytes; the whole store grew {} bytes)",
            fts as f64 / (EVENTS + DOCS) as f64,
            fts,
            bytes_after.saturating_sub(bytes_before)
        );
    }
    let exe = std::env::current_exe()?;
    let node = NodeProcess::start(&exe, &dir.path)?;
    let mut c = Client::connect(&node.target).await?;
    // Queries draw their words as the text does; the worst case asks for the
    // five most common words, each in more than half of all lines.
    let mut x = 99u64;
    let n = args.samples.max(100);
    let words: Vec<String> = (0..n).map(|_| word(zipf(&mut x))).collect();
    let phrases: Vec<String> = (0..n)
        .map(|_| format!("\"{} {}\"", word(zipf(&mut x)), word(zipf(&mut x))))
        .collect();
    let prefixes: Vec<String> = (0..n)
        .map(|_| {
            let w = word(zipf(&mut x));
            format!("{} {}*", word(zipf(&mut x)), &w[..w.len().min(4)])
        })
        .collect();
    let common: Vec<String> = (0..50).map(|i| word(i % 5)).collect();
    for (label, queries) in [
        ("one word", words),
        ("a two-word phrase", phrases),
        ("a word and a prefix", prefixes),
        ("the most common words", common),
    ] {
        let mut lat = vec![];
        let mut hits = 0usize;
        for q in &queries {
            let t = Instant::now();
            let r = call(
                &mut c,
                m::RECALL_SEARCH,
                json!({ "agent": "ada", "query": q, "limit": 10 }),
            )
            .await?;
            lat.push(t.elapsed().as_secs_f64() * 1000.0);
            hits += r["hits"].as_array().map(Vec::len).unwrap_or(0);
        }
        let (p50, p99, max) = summary(lat);
        println!(
            "recall search over the API ({EVENTS} transcript events, {DOCS} documents, top 10; {label}): p50 {p50:.2} ms, p99 {p99:.2} ms, max {max:.2} ms ({:.1} hits per query)",
            hits as f64 / queries.len() as f64
        );
    }
    Ok(())
}
