//! `warren task`: unattended work (seed 001). `start` hands an agent with a
//! workspace a goal and the commands that decide whether it is done; the
//! node verifies, repairs, commits or parks; the other verbs read and steer.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use console_api::methods as m;
use serde_json::{Value, json};

use super::{Conn, Output, at_node, finish, items, print_unreachable, put, put_fleet, s};

#[derive(Subcommand)]
pub enum TaskVerb {
    /// Give AGENT (it needs a workspace) a goal on a branch of its own.
    Start {
        agent: String,
        goal: String,
        /// An acceptance command, run by the node through `sh -c` in the
        /// task's worktree (repeat for more; all must exit 0, in order).
        #[arg(long = "accept")]
        accept: Vec<String>,
        /// Another agent that reviews the diff and approves or rejects.
        #[arg(long)]
        review: Option<String>,
        /// Another agent that answers the dialogs the policy would hold, inside
        /// its bounds (never a push, the base branch, a protected path).
        #[arg(long)]
        decider: Option<String>,
        /// `hybrid` (default: only what the policy holds) or `decider` (every dialog).
        #[arg(long, requires = "decider")]
        authority: Option<String>,
        /// How long the decider has to answer one dialog, e.g. `5m` (10 s..1 h).
        #[arg(long, requires = "decider", value_parser = parse_duration_secs)]
        decider_timeout: Option<u64>,
        /// Repair rounds before the task is parked (default 3, at most 20).
        #[arg(long)]
        max_repairs: Option<u32>,
        /// Time allowed, e.g. `90s`, `45m`, `2h`, `1d` (at least a minute).
        #[arg(long, value_parser = parse_duration_secs)]
        deadline: Option<u64>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    List {
        #[arg(long)]
        agent: Option<String>,
        /// starting, running, waiting, verifying, completed, parked, failed, stopped or paused.
        #[arg(long)]
        state: Option<String>,
        /// Every member's tasks (each agent shown as NAME@NODE).
        #[arg(long)]
        fleet: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// A task's state, checks with their output, review and phases.
    Get {
        task: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Stop the task: the worker is paused, the branch kept.
    Stop {
        task: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// A task that timed out goes on for `--extend` more (or closes out now).
    Recover {
        task: String,
        #[arg(long, value_parser = parse_duration_secs)]
        extend: Option<u64>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Give up on a task that timed out (its branch stays).
    Discard {
        task: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// A task's review: its diff, and (its reviewer's `warren-review`) the verdict.
    Review {
        #[command(subcommand)]
        verb: ReviewVerb,
    },
    /// The decider's answer to the dialog its task holds (its `warren-decide`).
    Decide {
        /// `approve` or `deny`.
        decision: String,
        task: String,
        /// Why (audited).
        reason: Vec<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// After a human typed into the worker's terminal: automatic messages flow again.
    ResumeAuto {
        task: String,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
pub enum ReviewVerb {
    /// The task's change against its baseline (files with +/- counts, then the patch).
    Diff {
        task: String,
        /// The files only.
        #[arg(long)]
        stat: bool,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The work may be committed (only the task's reviewer may say so).
    Approve {
        task: String,
        notes: Vec<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// The worker gets the notes as a repair round (only the task's reviewer may say so).
    Reject {
        task: String,
        notes: Vec<String>,
        #[arg(long, env = "WARREN_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
}

/// `90s`, `45m`, `2h`, `1d`, or plain seconds.
fn parse_duration_secs(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("{text:?}: give a number with s, m, h or d (e.g. 45m)"))?;
    let scale = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        other => return Err(format!("{text:?}: unknown unit {other:?} (s, m, h or d)")),
    };
    n.checked_mul(scale).ok_or_else(|| format!("{text:?} is too long"))
}

/// A task named as `ID` or `ID@NODE` (as `task list --fleet` prints one
/// of another member): its calls' params, `node` routing them there.
fn task_ref(task: &str) -> Value {
    match task.rsplit_once('@') {
        Some((id, node)) if !id.is_empty() && !node.is_empty() => json!({ "task": id, "node": node }),
        _ => json!({ "task": task }),
    }
}

fn print_line(t: &Value) {
    println!(
        "{}\t{}\t{}\t{}\trepairs {}/{}\t{}",
        at_node(t, "id"),
        at_node(t, "agent"),
        s(t, "state"),
        s(t, "branch"),
        t["repairs"],
        t["max_repairs"],
        s(t, "goal").lines().next().unwrap_or("")
    );
}

fn print_task(v: &Value) {
    let t = v.get("task").unwrap_or(v);
    print_line(t);
    if let Some(r) = t["reason"].as_str() {
        println!("  reason: {r}");
    }
    println!(
        "  conversation {}  baseline {}  head {}",
        s(t, "conversation"),
        s(t, "baseline").chars().take(12).collect::<String>(),
        s(t, "head").chars().take(12).collect::<String>()
    );
    for c in items(t, "checks") {
        let code = c["exit_code"]
            .as_i64()
            .map_or("killed".to_string(), |c| format!("exit {c}"));
        println!("  check {:<8} {:>6} ms  {}", code, c["ms"], s(c, "command"));
        let tail = s(c, "output_tail");
        for line in tail.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev() {
            println!("    | {line}");
        }
    }
    if let Some(r) = t.get("review").filter(|r| r.is_object()) {
        println!("  review by {}: {} {}", s(r, "agent"), s(r, "verdict"), s(r, "notes"));
    }
    let phases: Vec<&str> = items(t, "phases").filter_map(|p| p["phase"].as_str()).collect();
    if !phases.is_empty() {
        println!("  phases: {}", phases.join(" -> "));
    }
}

pub async fn task(verb: TaskVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let (data_dir, method, params) = match verb {
        TaskVerb::Start {
            agent,
            goal,
            accept,
            review,
            decider,
            authority,
            decider_timeout,
            max_repairs,
            deadline,
            data_dir,
        } => {
            let mut p = json!({ "agent": agent, "goal": goal, "acceptance": accept });
            put(&mut p, "review", review.map(|a| json!({ "agent": a })));
            if let Some(agent) = decider {
                let mut d = json!({ "agent": agent });
                put(&mut d, "authority", authority);
                put(&mut d, "timeout_secs", decider_timeout);
                p["decider"] = d;
            }
            put(&mut p, "max_repairs", max_repairs);
            put(&mut p, "deadline_secs", deadline);
            (data_dir, m::TASK_START, p)
        }
        TaskVerb::List {
            agent,
            state,
            fleet,
            data_dir,
        } => {
            let mut p = json!({});
            put(&mut p, "agent", agent);
            put(&mut p, "state", state);
            put_fleet(&mut p, fleet);
            let mut c = conn.connect(data_dir).await?;
            return finish(out, c.call(m::TASK_LIST, p).await, |v| {
                items(v, "tasks").for_each(print_line);
                print_unreachable(v);
            });
        }
        TaskVerb::Get { task, data_dir } => (data_dir, m::TASK_GET, task_ref(&task)),
        TaskVerb::Stop { task, data_dir } => (data_dir, m::TASK_STOP, task_ref(&task)),
        TaskVerb::Discard { task, data_dir } => (data_dir, m::TASK_DISCARD, task_ref(&task)),
        TaskVerb::ResumeAuto { task, data_dir } => (data_dir, m::TASK_RESUME_AUTO, task_ref(&task)),
        TaskVerb::Review { verb } => return review(verb, conn, out).await,
        TaskVerb::Decide {
            decision,
            task,
            reason,
            data_dir,
        } => {
            let mut c = conn.connect(data_dir).await?;
            let p = json!({ "task": task, "decision": decision, "reason": reason.join(" ") });
            return finish(out, c.call(m::TASK_DECIDE, p).await, |_| {
                println!("{decision} sent for task {task}")
            });
        }
        TaskVerb::Recover { task, extend, data_dir } => {
            let mut p = task_ref(&task);
            put(&mut p, "extend_secs", extend);
            (data_dir, m::TASK_RECOVER, p)
        }
    };
    let mut c = conn.connect(data_dir).await?;
    finish(out, c.call(method, params).await, print_task)
}

async fn review(verb: ReviewVerb, conn: Conn, out: Output) -> anyhow::Result<ExitCode> {
    let (task, verdict, notes, data_dir) = match verb {
        ReviewVerb::Diff { task, stat, data_dir } => {
            let mut c = conn.connect(data_dir).await?;
            let v = c.call(m::TASK_DIFF, task_ref(&task)).await;
            return finish(out, v, |v| super::workspace::print_diff(v, stat));
        }
        ReviewVerb::Approve { task, notes, data_dir } => (task, "approve", notes, data_dir),
        ReviewVerb::Reject { task, notes, data_dir } => (task, "reject", notes, data_dir),
    };
    let mut c = conn.connect(data_dir).await?;
    let p = json!({ "task": task, "verdict": verdict, "notes": notes.join(" ") });
    finish(out, c.call(m::TASK_REVIEW, p).await, |_| {
        println!("{verdict} recorded for task {task}")
    })
}

#[cfg(test)]
mod tests {
    use super::parse_duration_secs;

    #[test]
    fn durations_read_as_seconds_and_bad_ones_say_why() {
        assert_eq!(parse_duration_secs("90"), Ok(90));
        assert_eq!(parse_duration_secs("90s"), Ok(90));
        assert_eq!(parse_duration_secs("45m"), Ok(2700));
        assert_eq!(parse_duration_secs("2h"), Ok(7200));
        assert_eq!(parse_duration_secs("1d"), Ok(86_400));
        assert!(parse_duration_secs("1w").unwrap_err().contains("unknown unit"));
        assert!(parse_duration_secs("h").unwrap_err().contains("give a number"));
        assert!(parse_duration_secs("99999999999999999999d").is_err());
    }
}
