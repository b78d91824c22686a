//! `warren bench spend`: the offline scanner on a generated Claude config dir
//! of 10,000 session files (about 1 GB of realistic lines: prompts, streamed
//! assistant messages with thinking, text and tool use, tool results): the
//! first scan's throughput, the first poll after it, a rescan after
//! appending to 10 files (with each file's saved state: only the new bytes
//! are read), a later poll with nothing changed, and the peak RSS.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use spend::scan::{self, Job, Outcome, SessionFile};
use spend::{FileState, RecordSet};

use super::{BenchArgs, scratch};

const FILES: usize = 10_000;
const FILE_BYTES: usize = 100_000;
const PROJECTS: usize = 100;
const APPENDED: usize = 10;

pub(super) fn bench_spend(args: &BenchArgs) -> anyhow::Result<()> {
    let dir = scratch(&args.dir, "spend")?;
    let home = dir.path.join("claude");
    let t0 = Instant::now();
    let mut words = Gen::new(0x5eed);
    let mut messages = 0u64;
    for i in 0..FILES {
        let project = home
            .join("projects")
            .join(format!("-home-dev-project-{}", i % PROJECTS));
        if i < PROJECTS {
            std::fs::create_dir_all(&project)?;
        }
        let session = uuid(&mut words);
        let mut text = String::with_capacity(FILE_BYTES + 20_000);
        while text.len() < FILE_BYTES {
            words.turn(&session, &mut text);
            messages += 1;
        }
        std::fs::write(project.join(format!("{session}.jsonl")), &text)?;
    }
    let roots = scan::detect(&home)?;
    let files: Vec<SessionFile> = scan::list(&roots[0])?;
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(&f.path).map(|m| m.len()))
        .sum::<Result<u64, _>>()?;
    println!(
        "spend  generated {} session files, {:.2} GB, {messages} assistant messages, in {:.1} s",
        files.len(),
        bytes as f64 / 1e9,
        t0.elapsed().as_secs_f64()
    );
    if files.len() != FILES {
        bail!("listed {} files of {FILES}", files.len());
    }

    let threads = scan::default_threads();
    let t0 = Instant::now();
    let jobs: Vec<Job<'_>> = files.iter().map(|file| Job { file, prev: None }).collect();
    let first = scan::scan_many(&jobs, threads);
    let scan_secs = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let mut set = RecordSet::new();
    let mut states: Vec<FileState> = Vec::with_capacity(first.len());
    let mut refused = 0;
    for s in first {
        if let Some(e) = s.error {
            bail!("a generated file failed: {e}");
        }
        refused += s.parsed.stats.refused;
        for r in s.parsed.records {
            set.insert(r);
        }
        states.push(s.state.context("a read file has a state")?);
    }
    let counted = set.counted().len() as u64;
    let fold_secs = t1.elapsed().as_secs_f64();
    if counted != messages || refused != 0 {
        bail!("counted {counted} requests of {messages} written ({refused} lines refused)");
    }
    println!(
        "spend  first scan of {} files ({:.2} GB, in the page cache) on {threads} threads: {:.2} s, {:.0} MB/s; dedupe of the records into {counted} requests: {:.0} ms",
        files.len(),
        bytes as f64 / 1e9,
        scan_secs,
        bytes as f64 / 1e6 / scan_secs,
        fold_secs * 1000.0
    );

    // The node polls: the first poll right after the first scan (nothing
    // changed yet) is reported on its own, as it is slower than the later
    // ones (the kernel still settling after 1 GB written and read).
    let t0 = Instant::now();
    let listed = scan::list(&roots[0])?;
    let jobs: Vec<Job<'_>> = listed
        .iter()
        .zip(&states)
        .map(|(file, s)| Job { file, prev: Some(s) })
        .collect();
    let first_poll = scan::scan_many(&jobs, threads);
    let first_poll_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if first_poll.iter().any(|s| s.outcome != Outcome::Unchanged) {
        bail!("the first poll read a file");
    }
    println!(
        "spend  first poll of {} files right after the first scan, nothing changed: {first_poll_ms:.1} ms",
        listed.len()
    );

    // Append one turn to 10 files, then rescan everything from the states.
    let mut added = 0u64;
    for f in files.iter().step_by(FILES / APPENDED) {
        let mut text = String::new();
        words.turn(&f.session_hint, &mut text);
        added += 1;
        std::fs::OpenOptions::new()
            .append(true)
            .open(&f.path)?
            .write_all(text.as_bytes())?;
    }
    let t0 = Instant::now();
    let listed = scan::list(&roots[0])?;
    let list_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let by_path: HashMap<&Path, &FileState> = files.iter().zip(&states).map(|(f, s)| (f.path.as_path(), s)).collect();
    let jobs: Vec<Job<'_>> = listed
        .iter()
        .map(|file| Job {
            file,
            prev: by_path.get(file.path.as_path()).copied(),
        })
        .collect();
    let again = scan::scan_many(&jobs, threads);
    let rescan_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let appended = again
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::Appended { .. }))
        .count();
    let unchanged = again.iter().filter(|s| s.outcome == Outcome::Unchanged).count();
    let mut again_states = Vec::with_capacity(again.len());
    for (s, job) in again.into_iter().zip(&jobs) {
        for r in s.parsed.records {
            set.insert(r);
        }
        match (s.state, job.prev) {
            (Some(new), _) => again_states.push(new),
            (None, Some(old)) => again_states.push(old.clone()),
            (None, None) => bail!("{} has no state", job.file.path.display()),
        }
    }
    let new_requests = set.counted().len() as u64 - counted;
    if appended != APPENDED || unchanged != FILES - APPENDED || new_requests != added {
        bail!("rescan: {appended} appended, {unchanged} unchanged, {new_requests} new requests (expected {added})");
    }
    println!(
        "spend  rescan of {} files after appending a turn to {APPENDED}: {rescan_ms:.1} ms (listing {list_ms:.1} ms); {appended} continued from their offsets, {unchanged} unchanged, {new_requests} new requests",
        listed.len()
    );
    // A later poll with nothing changed, from the states the rescan left.
    let t0 = Instant::now();
    let listed = scan::list(&roots[0])?;
    let states: Vec<FileState> = again_states;
    let jobs: Vec<Job<'_>> = listed
        .iter()
        .zip(&states)
        .map(|(file, s)| Job { file, prev: Some(s) })
        .collect();
    let idle = scan::scan_many(&jobs, threads);
    let idle_ms = t0.elapsed().as_secs_f64() * 1000.0;
    if idle.iter().any(|s| s.outcome != Outcome::Unchanged) {
        bail!("a rescan with nothing changed read a file");
    }
    println!(
        "spend  a later poll of {} files, nothing changed: {idle_ms:.1} ms",
        listed.len()
    );
    println!("spend  peak RSS of the bench process: {} MB", peak_rss_kb()? / 1024);
    Ok(())
}

/// VmHWM, the process's peak resident set, in KiB.
fn peak_rss_kb() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/self/status")
}

fn uuid(g: &mut Gen) -> String {
    let (a, b) = (g.next(), g.next());
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

/// Deterministic session text: xorshift words, JSON-escaped where it matters.
struct Gen {
    state: u64,
    seq: u64,
}

const WORDS: [&str; 24] = [
    "the",
    "cargo",
    "test",
    "fn",
    "let",
    "mut",
    "struct",
    "impl",
    "error",
    "result",
    "file",
    "line",
    "parse",
    "value",
    "config",
    "node",
    "session",
    "token",
    "spend",
    "\\n",
    "\\\"quoted\\\"",
    "{",
    "}",
    "async",
];

impl Gen {
    fn new(seed: u64) -> Gen {
        Gen { state: seed, seq: 0 }
    }

    fn next(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    fn words(&mut self, bytes: usize, out: &mut String) {
        let end = out.len() + bytes;
        while out.len() < end {
            out.push_str(WORDS[(self.next() % WORDS.len() as u64) as usize]);
            out.push(' ');
        }
    }

    fn sized(&mut self, around: usize) -> usize {
        around / 2 + (self.next() as usize % around)
    }

    /// One turn: a prompt, an assistant message streamed as three lines
    /// (thinking, text, tool use; the last complete), and the tool's result.
    fn turn(&mut self, session: &str, out: &mut String) {
        self.seq += 1;
        let seq = self.seq;
        let ts = format!(
            "2026-11-{:02}T{:02}:{:02}:{:02}.000Z",
            1 + seq % 28,
            seq % 24,
            seq % 60,
            (seq / 60) % 60
        );
        let head = format!(
            r#""isSidechain":false,"userType":"external","cwd":"/home/dev/project","sessionId":"{session}","version":"2.1.332","gitBranch":"main""#
        );
        out.push_str(&format!(
            r#"{{"parentUuid":"p-{seq}",{head},"type":"user","message":{{"role":"user","content":""#
        ));
        let n = self.sized(600);
        self.words(n, out);
        out.push_str(&format!(r#""}},"uuid":"u-{seq}-0","timestamp":"{ts}"}}"#));
        out.push('\n');
        let (input, read, write) = (self.next() % 50, 20_000 + self.next() % 100_000, self.next() % 5_000);
        let full = 100 + self.next() % 2_000;
        let tool = format!(
            r#"{{"type":"tool_use","id":"toolu_{seq}","name":"Edit","input":{{"file_path":"/home/dev/project/src/lib.rs","new_string":""#
        );
        let blocks: [(&str, &str, usize, u64, &str); 3] = [
            (
                r#"{"type":"thinking","signature":"EqQBCkYIBxgCKkBz","thinking":""#,
                r#""}"#,
                1_500,
                2,
                "null",
            ),
            (r#"{"type":"text","text":""#, r#""}"#, 800, 2, "null"),
            (&tool, r#""}}"#, 2_500, full, "\"tool_use\""),
        ];
        for (i, (open, close, size, output, stop)) in blocks.into_iter().enumerate() {
            out.push_str(&format!(r#"{{"parentUuid":"u-{seq}-{i}",{head},"message":{{"id":"msg_{session}_{seq}","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":["#));
            out.push_str(open);
            let n = self.sized(size);
            self.words(n, out);
            out.push_str(close);
            out.push_str(&format!(
                r#"],"stop_reason":{stop},"stop_sequence":null,"usage":{{"input_tokens":{input},"cache_creation_input_tokens":{write},"cache_read_input_tokens":{read},"cache_creation":{{"ephemeral_5m_input_tokens":{write},"ephemeral_1h_input_tokens":0}},"output_tokens":{output},"output_tokens_details":{{"thinking_tokens":0}},"server_tool_use":{{"web_search_requests":0,"web_fetch_requests":0}},"service_tier":"standard","inference_geo":"","iterations":[],"speed":"standard"}}}},"requestId":"req_{seq}","type":"assistant","uuid":"u-{seq}-{}","timestamp":"{ts}"}}"#,
                i + 1
            ));
            out.push('\n');
        }
        out.push_str(&format!(
            r#"{{"parentUuid":"u-{seq}-3",{head},"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_{seq}","type":"tool_result","content":""#
        ));
        let n = self.sized(3_000);
        self.words(n, out);
        out.push_str(r#""}]},"toolUseResult":{"stdout":""#);
        let n = self.sized(3_000);
        self.words(n, out);
        out.push_str(&format!(
            r#"","stderr":"","interrupted":false}},"uuid":"u-{seq}-4","timestamp":"{ts}"}}"#
        ));
        out.push('\n');
    }
}
