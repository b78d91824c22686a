//! The supervision watch loop for live conversations, verified send, holds and
//! the audit log. Decisions come from the pure `supervision` crate; this module
//! is the IO around them. Dialogs are read by the harness adapter from their
//! fixed frame (`Harness::supervision_dialog`), and answered by meaning
//! (approve once, deny), never by an option's words on screen. Every keystroke
//! supervision types goes through `verified_send`, which re-reads the screen
//! right before typing and skips unless the dialog is the one decided on
//! (drawn the same, or read the same after a repaint) and the template still says those keys mean that answer; messages supervision
//! sends (nudges, mail) go through the message queue with the same audit
//! discipline. Every attempted or declined action is exactly one audit row: a
//! send is an `attempted` event committed before typing plus its outcome,
//! folded into one row when read.

mod audit;
mod defaults;
pub mod definitions;
mod holds;
mod hooks;
mod send;
mod settings;
mod stall;
mod watch;

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::live::Live;
use crate::service::Node;
use node_runtime::harness::Dialog as ScreenDialog;

pub use holds::{AnsweredBy, Held};
pub use hooks::{HookReport, ToolRequest, parse};

/// Supervision on this node: a subsystem over the core, owning the dialogs it
/// holds for a human and the watch and stall tasks of each live conversation.
pub struct Supervisor {
    node: Arc<Node>,
    /// Unread mail wakes an idle agent (wake-on-mail).
    mail: Arc<crate::mail::Mail>,
    /// The usage-limit screens a watch sees are the spend ledger's quota.
    spend: Arc<crate::spend::Spend>,
    /// Dialogs held for a human, by hold id.
    holds: Mutex<std::collections::BTreeMap<String, Held>>,
}

impl std::ops::Deref for Supervisor {
    type Target = Node;

    fn deref(&self) -> &Node {
        &self.node
    }
}

impl Supervisor {
    pub fn new(node: Arc<Node>, mail: Arc<crate::mail::Mail>, spend: Arc<crate::spend::Spend>) -> Arc<Supervisor> {
        Arc::new(Supervisor {
            node,
            mail,
            spend,
            holds: Mutex::new(std::collections::BTreeMap::new()),
        })
    }
}

/// The file system answering the scope rules' one question (symlinks).
pub struct FsResolver;

impl supervision::PathResolver for FsResolver {
    fn link(&self, path: &Path) -> supervision::Link {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => match std::fs::read_link(path) {
                Ok(target) => supervision::Link::Link(target),
                Err(_) => supervision::Link::Unknown,
            },
            Ok(_) => supervision::Link::NotLink,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => supervision::Link::NotLink,
            Err(_) => supervision::Link::Unknown,
        }
    }

    /// A `.git` entry, or the shape git itself recognises a git directory by
    /// (`HEAD` with `objects`, `refs` or `commondir` beside it), counted
    /// generously: any of them with a `HEAD` is enough to hold.
    fn git_at(&self, dir: &Path) -> supervision::GitAt {
        let exists = |name: &str| match std::fs::symlink_metadata(dir.join(name)) {
            Ok(_) => Some(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(false),
            Err(_) => None,
        };
        match (exists(".git"), exists("HEAD")) {
            (Some(true), _) => supervision::GitAt::DotGit,
            (Some(false), Some(false)) => supervision::GitAt::Nothing,
            (Some(false), Some(true)) => {
                let parts = [exists("objects"), exists("refs"), exists("commondir")];
                if parts.contains(&None) {
                    supervision::GitAt::Unknown
                } else if parts.contains(&Some(true)) {
                    supervision::GitAt::Bare
                } else {
                    supervision::GitAt::Nothing
                }
            }
            _ => supervision::GitAt::Unknown,
        }
    }

    fn read_small(&self, path: &Path) -> Option<String> {
        const MAX: u64 = 256 * 1024;
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX {
            return None;
        }
        std::fs::read_to_string(path).ok()
    }
}

pub(crate) fn excerpt(d: &ScreenDialog) -> String {
    d.lines.join("\n").chars().take(2000).collect()
}

/// Reads the dialog on screen, if one is showing.
pub(crate) fn capture(live: &Live) -> Option<ScreenDialog> {
    live.harness.dialog(&live.session.screen())
}
