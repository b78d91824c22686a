//! A conversation's tools dir: `<home>/.warren/tools` holds one link per
//! mounted tool (`warren-mail`, `warren-recall`, `warren-read`, an owner
//! tool's `warren-NAME`, ...) to the one `warren` binary as the CLI sees it
//! (this node's, or the guest image's, which is not on the guest's PATH), and
//! leads the CLI's PATH. A tool that is not granted is not there, and
//! nothing else of the `warren` client is on that PATH. In a guest the dir
//! is mounted read-only over the (writable) home.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::OwnerTool;
use node_store::catalog::Catalog;
use node_store::events::AgentRecord;

pub(crate) use node_runtime::layout::{GUEST_WARREN, tools_dir};

/// The `warren` binary as the CLI sees it: the guest's inside a container
/// (`in_guest`), this node's own (`self_exe`) otherwise.
pub(crate) fn warren_exe_for_cli(in_guest: bool, self_exe: &Path) -> PathBuf {
    if in_guest {
        PathBuf::from(GUEST_WARREN)
    } else {
        self_exe.to_path_buf()
    }
}

/// The tools a launch of `agent` mounts now (without the prefix), read from
/// the catalog's monitor attachments, the tasks it reviews and the owner's tools.
pub(crate) fn mounted_now(cat: &Catalog, agent: &AgentRecord, owner: &BTreeMap<String, OwnerTool>) -> Vec<String> {
    let advising: Vec<bool> = cat
        .monitors
        .of_monitor(&agent.name)
        .map(|(_, a)| a.spec.inject.unwrap_or(true))
        .collect();
    let mut tools = super::mounted(agent, owner, !advising.is_empty(), advising.contains(&true));
    // A reviewer of an open task reads its diff and gives its verdict.
    if cat.tasks.reviewed_by(&agent.name).next().is_some() {
        tools.push("review".to_string());
    }
    // A decider of an open task answers the dialogs it is woken for.
    if cat.tasks.decided_by(&agent.name).next().is_some() {
        tools.push("decide".to_string());
    }
    tools
}

/// Makes the tools dir of a launch (a stale one goes first) holding `tools`
/// (`mounted_now`), each a link to `exe`, and returns it with the
/// executables' names; no dir when nothing is mounted.
pub(crate) fn prepare_tools(
    tools: &[String],
    home: &Path,
    exe: &Path,
) -> std::io::Result<(Option<PathBuf>, Vec<String>)> {
    let dir = tools_dir(home);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)?;
    }
    if tools.is_empty() {
        return Ok((None, vec![]));
    }
    std::fs::create_dir_all(&dir)?;
    let names: Vec<String> = tools.iter().map(|t| format!("warren-{t}")).collect();
    for n in &names {
        std::os::unix::fs::symlink(exe, dir.join(n))?;
    }
    Ok((Some(dir), names))
}

/// How each built-in is called (API.md's Tools section).
fn builtin_usage(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "mail" => {
            "`warren-mail send TO BODY [--context C]` mails another agent; `warren-mail inbox` lists unread mail; `warren-mail ack CURSOR` marks it read"
        }
        "recall" => {
            "`warren-recall search QUERY` searches your stashed documents and past conversations; `warren-recall stash NAME < FILE` keeps a document; `warren-recall forget NAME`"
        }
        "supervision" => "`warren-supervision status` and `warren-supervision audit` show how you are supervised",
        "read" => "`warren-read CONVERSATION [--after SEQ] [--limit N]` reads a watched conversation's transcript",
        "advise" => "`warren-advise CONVERSATION TEXT` sends advice into it",
        "review" => {
            "`warren-review diff TASK` shows a task's change; `warren-review approve TASK NOTES` or `warren-review reject TASK NOTES` gives your verdict"
        }
        "decide" => {
            "`warren-decide approve TASK REASON` or `warren-decide deny TASK REASON` answers the held dialog of a task you decide for (once per dialog)"
        }
        _ => return None,
    })
}

/// The tools section of the CLI's prompt: one line per mounted tool.
pub(crate) fn tool_notes(executables: &[String], owner: &BTreeMap<String, OwnerTool>) -> String {
    if executables.is_empty() {
        return String::new();
    }
    let mut lines = vec![
        "You have these warren tools: run them as shell commands (they need no permission and act as you):".to_string(),
    ];
    for exe in executables {
        let tool = exe.strip_prefix("warren-").unwrap_or(exe);
        let line = match (builtin_usage(tool), owner.get(tool)) {
            (Some(usage), _) => usage.to_string(),
            (None, Some(t)) => format!(
                "`{exe} ARGS...`: {}",
                t.description.as_deref().unwrap_or("a tool the owner gave you")
            ),
            (None, None) => continue,
        };
        lines.push(format!("- {line}"));
    }
    lines.join("\n")
}
