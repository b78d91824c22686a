//! Where an action may reach: the worktree (the one root), the agent's home and
//! `~` (never), protected paths (never written routinely), `..` and symlink
//! resolution through a `PathResolver` so the decision itself does no IO.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::walk::{GitAt, Link, NoSymlinks, PathResolver, resolve_path};
use crate::walk::{Landed, resolve_joined_in, resolved_under, starts_with, strip_prefix};

/// Where an agent's actions may reach: its worktree, the one root. The agent's
/// home (what `~` means for it) is never repo-scoped: it holds the CLI's own
/// settings, hooks and credentials and the instance token, so a read or write
/// there changes or reveals what every later conversation may do. `changed`
/// lists what the agent already changed in this conversation (see `runs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// The agent's worktree; commands without a `cwd` run here.
    pub worktree: PathBuf,
    /// The agent's home: never in scope (unless the worktree itself lies
    /// inside it, when only the worktree part is).
    #[serde(default)]
    pub home: Option<PathBuf>,
    /// Files (resolved, absolute) the agent changed in this conversation
    /// or through any other route since a human last accepted them (the node
    /// keeps this per workspace, durably). Running repository code whose
    /// definition is among them is not routine.
    #[serde(default)]
    pub changed: Vec<PathBuf>,
    /// Directories git runs hooks from besides `.git/hooks` (the worktree's
    /// `core.hooksPath`, absolute): protected, and definitions of `git commit`.
    #[serde(default)]
    pub hook_dirs: Vec<PathBuf>,
    /// The node could not fingerprint the whole workspace (too large): any
    /// definition may have changed, so no run of repository code is routine.
    #[serde(default)]
    pub definitions_unknown: bool,
    /// Symbolic links inside the worktree (absolute) that lead out of it:
    /// a program that walks a tree following links (pytest's collection,
    /// tsc's and eslint's file discovery) would read through them.
    #[serde(default)]
    pub escaping_links: Vec<PathBuf>,
}

/// The worktree and the agent's home, resolved (see [`Scope::resolved`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    pub(crate) root: Option<PathBuf>,
    pub(crate) home: Option<PathBuf>,
}

/// Where a path is resolved from and into: from `cwd` (when known, its
/// walk with no link met, `walk::walk_dir`, to go on from), into `buf`.
pub(crate) struct Resolving<'a, 'b> {
    pub(crate) cwd: &'a Path,
    pub(crate) walked: Option<&'a str>,
    pub(crate) buf: &'b mut String,
}

/// How an action touches a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads it (or names it as a directory to work in).
    Read,
    /// A program that may write names it (an argument of `cargo`, `make`, ...):
    /// it must not be protected, but it is not recorded as written.
    MayWrite,
    /// Writes it: must not be protected, and is recorded.
    Write,
}

impl Scope {
    /// A scope of just the worktree.
    pub fn new(worktree: impl Into<PathBuf>) -> Scope {
        Scope {
            worktree: worktree.into(),
            home: None,
            changed: Vec::new(),
            hook_dirs: Vec::new(),
            definitions_unknown: false,
            escaping_links: Vec::new(),
        }
    }

    /// Names the agent's home: never in scope, whether named with `~`, by its
    /// absolute path or through a symlink.
    pub fn with_agent_home(mut self, home: impl Into<PathBuf>) -> Scope {
        self.home = Some(home.into());
        self
    }

    /// What the agent changed in this conversation (each approved decision's
    /// `writes`), for the repository-code rule.
    pub fn with_changed(mut self, changed: impl IntoIterator<Item = PathBuf>) -> Scope {
        self.changed.extend(changed);
        self
    }

    /// Says that the workspace's definitions could not all be checked.
    pub fn with_definitions_unknown(mut self, unknown: bool) -> Scope {
        self.definitions_unknown = unknown;
        self
    }

    /// The worktree's symbolic links that lead out of it (see
    /// [`Scope::escaping_links`]).
    pub fn with_escaping_links(mut self, links: impl IntoIterator<Item = PathBuf>) -> Scope {
        self.escaping_links.extend(links);
        self
    }

    /// Directories git runs hooks from (`core.hooksPath`): protected.
    pub fn with_hook_dirs(mut self, dirs: impl IntoIterator<Item = PathBuf>) -> Scope {
        self.hook_dirs.extend(dirs);
        self
    }

    /// True when the resolved `path` is in one of the hook directories.
    pub(crate) fn in_hook_dir(&self, path: &Path, resolver: &dyn PathResolver) -> bool {
        self.hook_dirs
            .iter()
            .filter_map(|d| resolve_path(d, resolver))
            .any(|d| path.starts_with(d))
    }

    /// The worktree as the kernel would find it.
    pub(crate) fn root(&self, resolver: &dyn PathResolver) -> Option<PathBuf> {
        resolve_path(&self.worktree, resolver)
    }

    /// The worktree and the agent's home as the kernel would find them
    /// (resolved once per decision).
    pub(crate) fn resolved(&self, resolver: &dyn PathResolver) -> Resolved {
        Resolved {
            root: self.root(resolver),
            home: self.home.as_deref().and_then(|h| resolve_path(h, resolver)),
        }
    }

    /// Why the resolved `path` is out of scope, if it is.
    fn outside(&self, path: &Path, at: &Resolved) -> Option<String> {
        let Some(root) = &at.root else {
            return Some("cannot be checked: the worktree cannot be resolved".into());
        };
        if let Some(home) = &at.home {
            let worktree_in_home = resolved_under(root, home) && root != home;
            if !worktree_in_home && resolved_under(path, home) {
                return Some(format!(
                    "resolves to {} in the agent's home, which is never repo-scoped",
                    path.display()
                ));
            }
        }
        (!resolved_under(path, root)).then(|| format!("resolves to {} outside the worktree", path.display()))
    }

    /// Resolves `raw` as the shell would see it from `cwd` and checks it lands
    /// inside the worktree and outside the agent's home. A `~` path (`~`,
    /// `~/x`, `~user`) is never in scope, nor a path with a control or
    /// invisible character. For a write (`Access::MayWrite`, `Access::Write`)
    /// the path must also not be protected (see `protected`). Returns the
    /// resolved path, or why not.
    pub(crate) fn check(
        &self,
        raw: &str,
        tilde: bool,
        cwd: &Path,
        access: Access,
        resolver: &dyn PathResolver,
    ) -> Result<PathBuf, String> {
        self.check_at(&self.resolved(resolver), raw, tilde, cwd, access, resolver)
    }

    /// [`Scope::check`] with the worktree and home already resolved.
    pub(crate) fn check_at(
        &self,
        at: &Resolved,
        raw: &str,
        tilde: bool,
        cwd: &Path,
        access: Access,
        resolver: &dyn PathResolver,
    ) -> Result<PathBuf, String> {
        let mut buf = String::new();
        let from = Resolving {
            cwd,
            walked: None,
            buf: &mut buf,
        };
        match self.check_in(at, raw, tilde, from, access, resolver)? {
            Cow::Borrowed(_) => Ok(PathBuf::from(buf)),
            Cow::Owned(path) => Ok(path),
        }
    }

    /// [`Scope::check_at`], resolving into `from.buf`: the resolved path
    /// is borrowed from it unless the walk met a link.
    pub(crate) fn check_in<'b>(
        &self,
        at: &Resolved,
        raw: &str,
        tilde: bool,
        from: Resolving<'_, 'b>,
        access: Access,
        resolver: &dyn PathResolver,
    ) -> Result<Cow<'b, Path>, String> {
        if tilde {
            return Err(if raw == "~" || raw.starts_with("~/") {
                format!("{raw} is under ~, the agent's home, which is never repo-scoped")
            } else {
                format!("{raw} names another user's home")
            });
        }
        // One pass for the usual printable ASCII; other text is read again.
        // (Without an early exit the pass is vectorised: most paths pass.)
        let odd = raw.bytes().fold(false, |odd, b| odd | !(b' '..0x7f).contains(&b))
            && if raw.is_ascii() {
                raw.bytes().any(|b| b.is_ascii_control())
            } else {
                raw.chars().any(|c| c.is_control() || crate::text::is_invisible(c))
            };
        if odd {
            return Err(format!("{raw:?} has a control or invisible character"));
        }
        let cannot = || format!("{raw} cannot be resolved");
        let Resolving { cwd, walked, buf } = from;
        let resolved = match resolve_joined_in(cwd, walked, raw, resolver, buf).ok_or_else(cannot)? {
            Landed::InBuffer => Cow::Borrowed(Path::new(buf.as_str())),
            Landed::At(path) => Cow::Owned(path),
        };
        if let Some(why) = self.outside(&resolved, at) {
            return Err(format!("{raw} {why}"));
        }
        if access != Access::Read
            && let Some(p) = self.protected_at(at, &resolved, resolver)
        {
            let verb = if access == Access::Write { "writes" } else { "may write" };
            return Err(format!(
                "{verb} {raw}, a protected path ({}: {}); never routine",
                p.owner, p.reason
            ));
        }
        Ok(resolved)
    }

    /// The protected entry the resolved, in-scope `path` falls under: a name
    /// in the table, a hook directory, or a directory shaped like a git
    /// directory (anywhere between the worktree and the path), with the
    /// worktree already resolved.
    pub(crate) fn protected_at(
        &self,
        at: &Resolved,
        path: &Path,
        resolver: &dyn PathResolver,
    ) -> Option<&'static crate::protected::Protected> {
        let root = at.root.as_ref()?;
        let rel = strip_prefix(path, root)?;
        if let Some(p) = crate::protected::protected_entry(rel) {
            return Some(p);
        }
        if self.in_hook_dir(path, resolver) {
            return Some(&crate::protected::HOOKS_PATH);
        }
        let mut dir = path.to_path_buf();
        while starts_with(&dir, root) && &dir != root {
            if matches!(resolver.git_at(&dir), GitAt::Bare) {
                return Some(&crate::protected::GIT_SHAPED);
            }
            if !dir.pop() {
                break;
            }
        }
        None
    }

    /// The directory commands run in: the dialog's `cwd` (relative to the
    /// worktree if relative), which must itself be in scope.
    pub(crate) fn working_dir(&self, cwd: Option<&str>, resolver: &dyn PathResolver) -> Result<PathBuf, String> {
        match cwd {
            None => self
                .root(resolver)
                .ok_or_else(|| "the worktree cannot be resolved".to_string()),
            Some(dir) => self
                .check(dir, dir.starts_with('~'), &self.worktree, Access::Read, resolver)
                .map_err(|why| format!("working directory {why}")),
        }
    }

    /// True when `raw` (from `cwd`) may be read: it resolves inside the
    /// worktree and outside the agent's home. The public form of the path rule.
    pub fn contains(&self, raw: &str, cwd: &Path, resolver: &dyn PathResolver) -> bool {
        self.check(raw, raw.starts_with('~'), cwd, Access::Read, resolver)
            .is_ok()
    }

    /// True when `raw` (from `cwd`) may be written routinely: readable, and not
    /// a protected path (git's directory, a CLI's settings, the node's files).
    pub fn writable(&self, raw: &str, cwd: &Path, resolver: &dyn PathResolver) -> bool {
        self.check(raw, raw.starts_with('~'), cwd, Access::Write, resolver)
            .is_ok()
    }
}

#[cfg(test)]
pub(crate) mod fake {
    //! A map-backed resolver for tests.
    use std::collections::BTreeMap;
    use std::path::{Path, PathBuf};

    use super::{Link, PathResolver};

    /// Symlinks by absolute path; `unreadable` paths answer `Unknown`.
    #[derive(Default)]
    pub(crate) struct FakeFs {
        pub(crate) links: BTreeMap<PathBuf, PathBuf>,
        pub(crate) unreadable: Vec<PathBuf>,
    }

    impl FakeFs {
        pub(crate) fn with_link(mut self, at: &str, to: &str) -> FakeFs {
            self.links.insert(PathBuf::from(at), PathBuf::from(to));
            self
        }
    }

    impl PathResolver for FakeFs {
        fn link(&self, path: &Path) -> Link {
            if self.unreadable.iter().any(|p| p == path) {
                return Link::Unknown;
            }
            self.links.get(path).map_or(Link::NotLink, |t| Link::Link(t.clone()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fake::FakeFs;
    use super::*;

    #[test]
    fn resolve_walks_like_the_kernel() {
        let fs = FakeFs::default()
            .with_link("/w/escape", "/etc")
            .with_link("/w/rel", "../other/x")
            .with_link("/w/loop", "/w/loop")
            .with_link("/tmp", "/private/tmp");
        let cases: &[(&str, Option<&str>)] = &[
            ("/w/src/../Cargo.toml", Some("/w/Cargo.toml")),
            ("/w/escape/passwd", Some("/etc/passwd")),
            ("/w/escape/../shadow", Some("/shadow")),
            ("/w/rel/y", Some("/other/x/y")),
            ("/w/./a//b", Some("/w/a/b")),
            ("/../..", Some("/")),
            ("/tmp/x", Some("/private/tmp/x")),
            ("/w/loop/x", None),
        ];
        for (input, want) in cases {
            let got = resolve_path(Path::new(input), &fs);
            assert_eq!(got.as_deref(), want.map(Path::new), "{input}");
        }
        assert_eq!(resolve_path(Path::new("relative"), &fs), None);
    }

    #[test]
    fn scope_check() {
        let fs = FakeFs::default()
            .with_link("/w/out", "/etc/passwd")
            .with_link("/w/in", "src/lib.rs");
        let scope = Scope::new("/w").with_agent_home("/home/agent");
        let cwd = Path::new("/w/sub");
        let cases: &[(&str, bool)] = &[
            ("x.rs", true),
            ("../Cargo.toml", true),
            ("../../etc/passwd", false),
            ("/w", true),
            ("/w2/x", false),
            ("/etc/passwd", false),
            ("/w/out", false),
            ("/w/in", true),
            // `~` and the agent's home are never repo-scoped (seed 000).
            ("~", false),
            ("~/notes.md", false),
            ("~/../other/x", false),
            ("~root/.bashrc", false),
            ("/home/agent/notes.md", false),
            ("/w/home-link/x", false),
            ("../../home/agent", false),
            ("src/li\u{200B}b.rs", false),
        ];
        let fs = fs.with_link("/w/home-link", "/home/agent");
        for (raw, want) in cases {
            assert_eq!(scope.contains(raw, cwd, &fs), *want, "{raw}");
        }
        let no_home = Scope::new("/w");
        assert!(!no_home.contains("~/x", cwd, &fs));
    }

    #[test]
    fn worktree_inside_home_is_still_the_root() {
        let fs = FakeFs::default();
        let scope = Scope::new("/home/u/proj").with_agent_home("/home/u");
        let cwd = Path::new("/home/u/proj");
        assert!(scope.contains("src/lib.rs", cwd, &fs));
        assert!(!scope.contains("/home/u/.bashrc", cwd, &fs));
        assert!(!scope.contains("~/proj/src/lib.rs", cwd, &fs));
        // A home inside the worktree is cut out of it.
        let nested = Scope::new("/w").with_agent_home("/w/.home");
        assert!(!nested.contains(".home/.claude.json", Path::new("/w"), &fs));
        assert!(nested.contains("src", Path::new("/w"), &fs));
    }

    #[test]
    fn protected_paths_are_readable_not_writable() {
        let fs = FakeFs::default().with_link("/w/hooks", ".git/hooks");
        let scope = Scope::new("/w");
        let cwd = Path::new("/w");
        for raw in [
            ".git/hooks/pre-commit",
            "hooks/pre-commit",
            ".claude/settings.json",
            "sub/.GIT/config",
        ] {
            assert!(scope.contains(raw, cwd, &fs), "{raw}");
            assert!(!scope.writable(raw, cwd, &fs), "{raw}");
        }
        assert!(scope.writable("src/lib.rs", cwd, &fs));
        assert!(scope.writable("CLAUDE.md", cwd, &fs));
    }

    #[test]
    fn symlinked_roots_still_contain_their_files() {
        let fs = FakeFs::default().with_link("/tmp", "/private/tmp");
        let scope = Scope::new("/tmp/w");
        assert!(scope.contains("/private/tmp/w/a", Path::new("/tmp/w"), &fs));
        assert!(scope.contains("a", Path::new("/tmp/w"), &fs));
        assert!(!scope.contains("/private/tmp/other", Path::new("/tmp/w"), &fs));
    }

    #[test]
    fn unreadable_paths_are_out() {
        let fs = FakeFs {
            unreadable: vec![PathBuf::from("/w/secret")],
            ..FakeFs::default()
        };
        let scope = Scope::new("/w");
        assert!(!scope.contains("secret/x", Path::new("/w"), &fs));
        assert!(scope.contains("public/x", Path::new("/w"), &fs));
    }

    #[test]
    fn working_dir() {
        let fs = FakeFs::default();
        let scope = Scope::new("/w");
        assert_eq!(scope.working_dir(None, &fs), Ok(PathBuf::from("/w")));
        assert_eq!(scope.working_dir(Some("/w/sub"), &fs), Ok(PathBuf::from("/w/sub")));
        assert_eq!(scope.working_dir(Some("sub"), &fs), Ok(PathBuf::from("/w/sub")));
        assert!(scope.working_dir(Some("/etc"), &fs).is_err());
    }
}
