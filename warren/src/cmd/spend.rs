//! `warren spend`: token use and dollars from the CLIs' own session files.
//! `warren spend scan PATH...` works offline, with no node: any Claude config
//! dir or Codex home, priced by the bundled table. Without a verb it asks the
//! node (`spend.history`: its ledger of the homed agents' session files) and
//! prints the same table and bar chart.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use serde_json::{Value, json};
use spend::scan::{self, Job};
use spend::{By, DayRow, Days, RecordSet, Rollup, Summary, UsageRecord};

use console_api::methods as m;

use super::{Conn, Output, finish};

#[derive(clap::Args)]
pub struct SpendArgs {
    #[command(subcommand)]
    verb: Option<SpendVerb>,
    /// First UTC day (YYYY-MM-DD) of the node's history (default: 30 days ago).
    #[arg(long)]
    since: Option<String>,
    /// Last UTC day (YYYY-MM-DD) of the node's history.
    #[arg(long)]
    until: Option<String>,
    /// Only this agent's spend.
    #[arg(long)]
    agent: Option<String>,
    /// How to group the node's history.
    #[arg(long, value_enum, default_value_t = ByArg::Day)]
    by: ByArg,
    #[arg(long, env = "WARREN_DATA_DIR")]
    data_dir: Option<PathBuf>,
}

#[derive(Subcommand)]
pub(super) enum SpendVerb {
    /// Offline: scan Claude config dirs (with projects/) and Codex homes
    /// (with sessions/ or archived_sessions/); each PATH is one agent.
    Scan {
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_enum, default_value_t = ByArg::Day)]
        by: ByArg,
        /// First UTC day to report (YYYY-MM-DD).
        #[arg(long)]
        since: Option<String>,
        /// Last UTC day to report (YYYY-MM-DD).
        #[arg(long)]
        until: Option<String>,
        /// Files parsed at once (default: the machine's cores).
        #[arg(long)]
        threads: Option<usize>,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub(super) enum ByArg {
    Day,
    Model,
    Agent,
}

impl ByArg {
    fn by(self) -> By {
        match self {
            ByArg::Day => By::Day,
            ByArg::Model => By::Model,
            ByArg::Agent => By::Agent,
        }
    }
}

pub async fn spend(args: SpendArgs, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    match args.verb {
        Some(SpendVerb::Scan {
            paths,
            by,
            since,
            until,
            threads,
        }) => {
            let days = Days { since, until };
            for d in [&days.since, &days.until].into_iter().flatten() {
                anyhow::ensure!(
                    spend::time::parse_rfc3339_ms(&format!("{d}T00:00:00Z")).is_some(),
                    "{d:?} is not a day (YYYY-MM-DD)"
                );
            }
            let report = scan_paths(&paths, &days, threads.unwrap_or_else(scan::default_threads))?;
            if out.json {
                println!("{}", serde_json::to_string_pretty(&report.json(by.by()))?);
            } else {
                report.print(by.by());
            }
            Ok(ExitCode::SUCCESS)
        }
        None => {
            let since = args.since.unwrap_or_else(|| {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() as i64)
                    .unwrap_or(0);
                spend::time::utc_day(now - 29 * 86_400_000)
            });
            let mut c = conn.connect(args.data_dir).await?;
            let p = json!({ "since_day": since, "until_day": args.until, "agent": args.agent });
            let by = args.by.by();
            let result = c.call(m::SPEND_HISTORY, p).await.map(|mut v| {
                let rows: Vec<DayRow> = v["days"]
                    .as_array()
                    .map(|a| a.iter().map(day_row).collect())
                    .unwrap_or_default();
                v["by"] = spend::rollup(&rows, by).iter().map(rollup_json).collect();
                v
            });
            finish(out, result, |v| print_history(v, by))
        }
    }
}

/// A `spend.history` row back into the aggregate's row.
fn day_row(v: &Value) -> DayRow {
    let n = |k: &str| v[k].as_u64().unwrap_or(0);
    let s = |k: &str| v[k].as_str().unwrap_or_default().to_string();
    DayRow {
        day: s("day"),
        model: s("model"),
        agent: s("agent"),
        input: n("input"),
        cache_read: n("cache_read"),
        cache_write_5m: n("cache_write_5m"),
        cache_write_1h: n("cache_write_1h"),
        output: n("output"),
        requests: n("requests"),
        web_search_requests: n("web_search_requests"),
        usd: v["usd"].as_f64(),
        priced: v["priced"].as_bool().unwrap_or(false),
    }
}

/// The node's history as the scan prints its own.
fn print_history(v: &Value, by: By) {
    let rows: Vec<DayRow> = v["days"]
        .as_array()
        .map(|a| a.iter().map(day_row).collect())
        .unwrap_or_default();
    let requests = rows.iter().map(|r| r.requests).sum::<u64>() as usize;
    println!(
        "{requests} requests counted; prices: the {} table as of {}",
        v["pricing"]["source"].as_str().unwrap_or("?"),
        v["pricing"]["as_of"].as_str().unwrap_or("?")
    );
    let unpriced: Vec<String> = v["unpriced_models"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    print_table(&rows, by, requests, v["usd"].as_f64().unwrap_or(0.0), &unpriced);
    if let Some(n) = v["unparseable_files"].as_u64().filter(|n| *n > 0) {
        println!("\nunparseable: {n} session files (`warren spend scan` on the agent's home names them)");
    }
}

/// A file that had refused lines or could not be read.
struct Trouble {
    path: String,
    refused: u64,
    first: String,
}

/// What an offline scan found.
pub(super) struct Report {
    summary: Summary,
    files: usize,
    bytes: u64,
    requests: usize,
    trouble: Vec<Trouble>,
    /// Files whose last line is not complete yet, and its bytes.
    waiting: Vec<(String, u64)>,
}

/// Scans every path (each one agent, named as given) and prices what counts
/// with the bundled table.
pub(super) fn scan_paths(paths: &[PathBuf], days: &Days, threads: usize) -> anyhow::Result<Report> {
    let mut files = vec![];
    for p in paths {
        let agent = p.display().to_string();
        for root in scan::detect(p).with_context(|| format!("scanning {agent}"))? {
            for f in scan::list(&root).with_context(|| format!("listing {agent}"))? {
                files.push((agent.clone(), f));
            }
        }
    }
    let jobs: Vec<Job<'_>> = files.iter().map(|(_, file)| Job { file, prev: None }).collect();
    let scans = scan::scan_many(&jobs, threads);
    let mut set = RecordSet::new();
    let mut agent_of: HashMap<String, String> = HashMap::new();
    let mut trouble = vec![];
    let mut waiting = vec![];
    let mut bytes = 0;
    for ((agent, file), s) in files.iter().zip(&scans) {
        let path = file.path.display().to_string();
        bytes += s.parsed.stats.bytes;
        for r in &s.parsed.records {
            if set.insert(r.clone()) {
                agent_of.entry(r.key.clone()).or_insert_with(|| agent.clone());
            }
        }
        if let Some(e) = &s.error {
            trouble.push(Trouble {
                path: path.clone(),
                refused: 0,
                first: e.to_string(),
            });
        } else if s.parsed.stats.refused > 0 {
            let first = s
                .parsed
                .problems
                .first()
                .map(|p| format!("{} (at byte {})", p.error, p.offset))
                .unwrap_or_default();
            trouble.push(Trouble {
                path: path.clone(),
                refused: s.parsed.stats.refused,
                first,
            });
        }
        if let Some(st) = &s.state
            && let Some(id) = st.identity
            && !file.compressed
            && id.meta.size > st.offset
        {
            waiting.push((path, id.meta.size - st.offset));
        }
    }
    let counted: Vec<&UsageRecord> = set.counted();
    let table = spend::pricing::bundled();
    let attributed = counted
        .into_iter()
        .map(|r| (agent_of.get(&r.key).map(String::as_str).unwrap_or("-"), r));
    let summary = spend::daily(attributed, &table, days);
    // The requests inside the window (the rows are only the window's days).
    let requests = summary.rows.iter().map(|r| r.requests).sum::<u64>() as usize;
    Ok(Report {
        summary,
        files: files.len(),
        bytes,
        requests,
        trouble,
        waiting,
    })
}

fn row_json(r: &DayRow) -> Value {
    json!({
        "day": r.day, "model": r.model, "agent": r.agent,
        "input": r.input, "cache_read": r.cache_read,
        "cache_write_5m": r.cache_write_5m, "cache_write_1h": r.cache_write_1h,
        "output": r.output, "requests": r.requests, "web_search_requests": r.web_search_requests,
        "usd": r.usd, "priced": r.priced,
    })
}

fn rollup_json(r: &Rollup) -> Value {
    json!({
        "label": r.label, "requests": r.requests,
        "input": r.tokens.input, "cache_read": r.tokens.cache_read,
        "cache_write_5m": r.tokens.cache_write_5m, "cache_write_1h": r.tokens.cache_write_1h,
        "output": r.tokens.output, "usd": r.usd, "unpriced_rows": r.unpriced_rows,
    })
}

impl Report {
    /// `spend.history`'s shape, plus the roll-up and what the scan saw.
    pub(super) fn json(&self, by: By) -> Value {
        let s = &self.summary;
        json!({
            "days": s.rows.iter().map(row_json).collect::<Vec<_>>(),
            "by": spend::rollup(&s.rows, by).iter().map(rollup_json).collect::<Vec<_>>(),
            "usd": s.usd,
            "requests": self.requests,
            "unpriced_models": s.unpriced_models,
            "unparseable_files": self.trouble.len(),
            "problems": self.trouble.iter().map(|t| json!({
                "path": t.path, "refused_lines": t.refused, "first": t.first,
            })).collect::<Vec<_>>(),
            "waiting": self.waiting.iter().map(|(p, b)| json!({"path": p, "bytes": b})).collect::<Vec<_>>(),
            "files": self.files,
            "bytes": self.bytes,
            "pricing": { "source": s.source.as_str(), "as_of": s.as_of },
        })
    }

    pub(super) fn print(&self, by: By) {
        let s = &self.summary;
        println!(
            "{} files, {} read, {} requests counted; prices: the {} table as of {} (offline)",
            self.files,
            size(self.bytes),
            self.requests,
            s.source.as_str(),
            s.as_of
        );
        print_table(&s.rows, by, self.requests, s.usd, &s.unpriced_models);
        if !self.trouble.is_empty() {
            println!("\nunparseable: {} files", self.trouble.len());
            for t in &self.trouble {
                if t.refused > 0 {
                    println!("  {}: {} lines refused, first: {}", t.path, t.refused, t.first);
                } else {
                    println!("  {}: {}", t.path, t.first);
                }
            }
        }
        for (p, b) in &self.waiting {
            println!("waiting: {p} ends in a line not yet complete ({b} bytes), not counted");
        }
    }
}

/// The table by `by` and its bar chart, the scan's and the node's.
fn print_table(day_rows: &[DayRow], by: By, requests: usize, usd: f64, unpriced: &[String]) {
    let rows = spend::rollup(day_rows, by);
    let head = match by {
        By::Day => "DAY",
        By::Model => "MODEL",
        By::Agent => "AGENT",
    };
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(0)
        .max(head.len())
        .min(48);
    println!(
        "{head:<width$} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>12}",
        "REQS", "INPUT", "CACHE_READ", "WRITE_5M", "WRITE_1H", "OUTPUT", "USD"
    );
    for r in &rows {
        let t = &r.tokens;
        println!(
            "{:<width$} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>12}",
            r.label,
            r.requests,
            t.input,
            t.cache_read,
            t.cache_write_5m,
            t.cache_write_1h,
            t.output,
            usd_cell(r)
        );
    }
    let mut total = spend::Tokens::default();
    rows.iter().for_each(|r| total.add(&r.tokens));
    println!(
        "{:<width$} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10} {:>12}",
        "TOTAL",
        requests,
        total.input,
        total.cache_read,
        total.cache_write_5m,
        total.cache_write_1h,
        total.output,
        format!("${usd:.4}")
    );
    println!();
    for line in bars(&rows, width, 40) {
        println!("{line}");
    }
    if !unpriced.is_empty() {
        println!(
            "\nunpriced (tokens counted, no price in the table): {}",
            unpriced.join(", ")
        );
    }
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 10_000_000 => format!("{} MB", b / 1_000_000),
        b if b >= 10_000 => format!("{} KB", b / 1000),
        b => format!("{b} bytes"),
    }
}

fn usd_cell(r: &Rollup) -> String {
    match (r.unpriced_rows, r.usd) {
        (0, usd) => format!("${usd:.4}"),
        (_, usd) if usd > 0.0 => format!("${usd:.4}+?"),
        _ => "unpriced".into(),
    }
}

/// A horizontal bar per label, scaled to the largest dollar figure.
fn bars(rows: &[Rollup], label_width: usize, width: usize) -> Vec<String> {
    let max = rows.iter().map(|r| r.usd).fold(0.0, f64::max);
    rows.iter()
        .map(|r| {
            let n = if max > 0.0 {
                ((r.usd / max) * width as f64).round() as usize
            } else {
                0
            };
            let n = if r.usd > 0.0 { n.max(1) } else { n };
            format!("{:<label_width$} {:<width$} {}", r.label, "█".repeat(n), usd_cell(r))
        })
        .collect()
}
