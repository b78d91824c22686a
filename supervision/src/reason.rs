//! Why an action is not repo-scoped, and under which class's rules a command is judged.

use std::fmt;

/// Why an action is not repo-scoped, in words for the audit log and the human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotScoped(pub String);

impl fmt::Display for NotScoped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

pub(crate) fn no(why: impl Into<String>) -> NotScoped {
    NotScoped(why.into())
}

/// Which extra programs a class's scope check admits on top of the allowlist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    Command,
    Deletion,
    Network,
}
