//! The texts the node sends on a task's behalf: the goal, repair rounds, deadline notices,
//! and the commit message. Deterministic, so a replayed decision says the same words.

use crate::state::{CheckRecord, MAX_REASON_BYTES, Task, bound_head};

/// Longest repair message, in bytes: several failed checks' tails are cut to fit.
pub const MAX_REPAIR_BYTES: usize = 16 * 1024;
/// Every repair message after failed checks starts with exactly this.
pub const ACCEPTANCE_FAILED: &str = "Acceptance failed:";
/// Every repair message after a rejection starts with exactly this.
pub const REVIEW_REJECTED: &str = "Review rejected:";

/// The worker's first message: the goal, then how it will be judged.
pub fn launch_text(task: &Task) -> String {
    let mut s = task.goal.trim_end().to_string();
    s.push_str("\n\n---\nThis is unattended task ");
    s.push_str(&task.id);
    s.push_str(". When you end your turn, the node verifies the work");
    if !task.acceptance.is_empty() {
        s.push_str(" by running these acceptance commands in your worktree (all must exit 0):");
        for cmd in &task.acceptance {
            s.push_str("\n  ");
            s.push_str(&bound_head(cmd, 200));
        }
    }
    if let Some(r) = &task.review {
        s.push_str(if task.acceptance.is_empty() {
            " by asking"
        } else {
            "\nthen asks"
        });
        s.push_str(" agent ");
        s.push_str(&r.agent);
        s.push_str(" to review the diff");
    }
    s.push_str(".\nYou cannot complete the task yourself: do the work, then end your turn.");
    s
}

fn repair_footer(task: &Task, repair: u32, close_out_left_ms: Option<u64>) -> String {
    let mut s = format!(
        "\n\nRepair round {repair} of {}. Fix this, then end your turn.",
        task.max_repairs
    );
    if let Some(ms) = close_out_left_ms {
        s.push_str(&format!(
            " The deadline has passed: {} s of the close-out window remain, after which the work is parked.",
            ms / 1000
        ));
    }
    s
}

/// `Acceptance failed:` with each failed command, its exit code and its output's tail.
pub fn acceptance_failed_text(
    task: &Task,
    checks: &[CheckRecord],
    repair: u32,
    close_out_left_ms: Option<u64>,
) -> String {
    let footer = repair_footer(task, repair, close_out_left_ms);
    let budget = MAX_REPAIR_BYTES.saturating_sub(footer.len());
    let failed: Vec<&CheckRecord> = checks.iter().filter(|c| !c.passed()).collect();
    let mut s = String::from(ACCEPTANCE_FAILED);
    for (i, c) in failed.iter().enumerate() {
        let mut part = format!("\n\n$ {}\n{}", bound_head(&c.command, 512), exit_words(c.exit_code));
        if c.output_tail.is_empty() {
            part.push_str(" (no output)");
        } else {
            part.push_str(", last output:\n");
            part.push_str(&c.output_tail);
        }
        let more = format!("\n\n({} more failed commands not shown)", failed.len() - i);
        if s.len() + part.len() + more.len() > budget {
            s.push_str(&more);
            break;
        }
        s.push_str(&part);
    }
    if failed.is_empty() {
        // Fewer results than commands: the node stopped early.
        s.push_str("\n\nnot every acceptance command ran to completion");
    }
    s.push_str(&footer);
    s
}

/// Every review request starts with exactly this, then the task's id.
pub const REVIEW_REQUEST: &str = "Review task";

/// What the reviewer is asked: the goal, that the checks passed, and the
/// exact commands that read the diff and give the verdict.
pub fn review_request_text(task: &Task, round: u32) -> String {
    let mut s = format!(
        "{REVIEW_REQUEST} {} (round {round}) by agent {} on branch {}.\nGoal:\n{}\n",
        task.id,
        task.agent,
        task.branch,
        bound_head(task.goal.trim(), 4096)
    );
    if !task.acceptance.is_empty() {
        s.push_str("Its acceptance commands passed.\n");
    }
    s.push_str(&format!(
        "Read the change with `warren-review diff {id}`. Then give your verdict: \
         `warren-review approve {id} NOTES` or `warren-review reject {id} NOTES` (what must change). \
         You cannot change the work yourself.",
        id = task.id
    ));
    s
}

/// Sent once when a reviewer ended its turn without a verdict.
pub fn review_reminder_text(task: &Task) -> String {
    format!(
        "You have not given a verdict on task {id}: run `warren-review approve {id} NOTES` or \
         `warren-review reject {id} NOTES`.",
        id = task.id
    )
}

/// `Review rejected:` with the reviewer's notes.
pub fn review_rejected_text(task: &Task, notes: &str, repair: u32, close_out_left_ms: Option<u64>) -> String {
    let footer = repair_footer(task, repair, close_out_left_ms);
    let budget = MAX_REPAIR_BYTES.saturating_sub(footer.len() + REVIEW_REJECTED.len() + 1);
    format!("{REVIEW_REJECTED} {}{footer}", bound_head(notes.trim(), budget))
}

pub(crate) fn exit_words(code: Option<i32>) -> String {
    match code {
        Some(c) => format!("exited with {c}"),
        None => "was stopped before it exited (time limit or cancel)".to_string(),
    }
}

/// A one-line account of a failed round, for the parked reason and the needs-you.
pub(crate) fn checks_summary(checks: &[CheckRecord]) -> String {
    match checks.iter().find(|c| !c.passed()) {
        Some(c) => format!(
            "acceptance failed: `{}` {}",
            bound_head(&c.command, 200),
            exit_words(c.exit_code)
        ),
        None => "acceptance failed: not every command ran".to_string(),
    }
}

pub(crate) fn review_summary(notes: &str) -> String {
    format!("review rejected: {}", bound_head(notes.trim(), 300))
}

/// `task ID: GOAL` (the goal's first line, cut to 72 bytes).
pub fn commit_message(task: &Task) -> String {
    let first = task.goal.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    let mut line = bound_head(first, 72);
    if line.len() < first.len() {
        line.push_str("...");
    }
    format!("task {}: {line}", task.id)
}

pub(crate) fn warning_text(left_ms: u64) -> String {
    format!(
        "About {} s remain before this task's deadline. Finish what you are doing, make the \
         acceptance commands pass, commit nothing else, and end your turn.",
        left_ms / 1000
    )
}

pub(crate) fn close_out_text(window_ms: u64) -> String {
    format!(
        "The task's deadline has passed. Finish this turn within {} s; the work is then verified \
         as it stands.",
        window_ms / 1000
    )
}

pub(crate) fn recovered_text(extend_secs: u64) -> String {
    format!(
        "This task was recovered after its deadline, with {extend_secs} s more. Continue toward the \
         goal, then end your turn."
    )
}

/// A reason as stored: bounded.
pub(crate) fn reason(s: impl AsRef<str>) -> String {
    bound_head(s.as_ref(), MAX_REASON_BYTES)
}

/// Every question to a task's decider starts with exactly this, then the task's id.
pub const DECIDE_REQUEST: &str = "Decide for task";

/// The decider's question: the held dialog, the goal, the change so far and
/// the worker's recent transcript (each bounded), and how to answer.
pub fn decide_request_text(task: &Task, dialog: &str, change: &str, recent: &str) -> String {
    format!(
        "{DECIDE_REQUEST} {id}: worker {agent} on branch {branch} is held at a permission dialog.\n\
         Goal:\n{goal}\n\nThe dialog:\n{dialog}\n\nIts change so far:\n{change}\n\nRecently:\n{recent}\n\n\
         Answer once: `warren-decide approve {id} REASON` or `warren-decide deny {id} REASON`. \
         Approve only what the goal needs; the node refuses your approve of a push, of anything \
         naming the base branch or a protected path, of a standing permission, and of what its \
         veto holds. You cannot change the work yourself.",
        id = task.id,
        agent = task.agent,
        branch = task.branch,
        goal = bound_head(task.goal.trim(), 4096),
        dialog = bound_head(dialog.trim(), 4096),
        change = bound_head(change.trim(), 4096),
        recent = bound_head(recent.trim(), 4096),
    )
}
