//! Where an action may reach: the worktree (the one root), the agent's home and
//! `~` (never), protected paths (never written routinely), `..` and symlink
//! resolution through a `PathResolver` so the decision itself does no IO.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::walk::{MAX_LINKS, resolve_joined, resolved_under, starts_with, strip_prefix};

/// What one path is on disk, as far as resolution needs to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    /// Not a symbolic link (a file, a directory, or nothing at all yet).
    NotLink,
    /// A symbolic link with this stored target (absolute or relative to the link's directory).
    Link(PathBuf),
    /// Could not tell (permission denied, IO error): the path is treated as out of scope.
    Unknown,
}

/// What git would find in one directory when it looks for a repository there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitAt {
    /// Neither a `.git` entry nor a git directory.
    Nothing,
    /// The directory holds a `.git` (a directory, or a file naming one).
    DotGit,
    /// The directory itself is shaped like a git directory (`HEAD`,
    /// `objects/`, `refs/`): git would use it as a bare repository.
    Bare,
    /// Could not tell.
    Unknown,
}

/// The questions the scope rules ask the file system. The node implements
/// them on the real file system; tests use maps. Every answer that cannot be
/// given must fail toward "not scoped" (`Link::Unknown`, `GitAt::Unknown`,
/// `None`).
pub trait PathResolver {
    /// What `path` (absolute, without `.` or `..`) is.
    fn link(&self, path: &Path) -> Link;

    /// What git would find at the directory `dir` (absolute, resolved).
    fn git_at(&self, _dir: &Path) -> GitAt {
        GitAt::Unknown
    }

    /// The text of a small file (a manifest or config the judge reads to find
    /// the definitions it names), or `None` when it cannot be read.
    fn read_small(&self, _path: &Path) -> Option<String> {
        None
    }
}

/// A resolver for a tree without symlinks (and for callers that cannot look):
/// it cannot tell what git would find, so git commands are never routine
/// with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSymlinks;

impl PathResolver for NoSymlinks {
    fn link(&self, _path: &Path) -> Link {
        Link::NotLink
    }
}

/// Resolves an absolute path the way the kernel walks it: component by
/// component, following each symlink as it is met, so `link/..` is the parent of
/// the link's target, not the directory holding the link. Components that do
/// not exist are kept as they are (a file about to be created). `None` for a
/// relative path, a symlink loop, or a component the resolver could not read.
/// What it returns is plain: absolute, with no `.`, `..` or empty component
/// (the judge compares such paths as text, `walk::resolved_under`).
pub fn resolve_path(path: &Path, resolver: &dyn PathResolver) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    match path.to_str() {
        // The byte-level walk (`walk`), which gives the same.
        Some(text) if cfg!(unix) => crate::walk::resolve_joined(Path::new("/"), text, resolver),
        _ => resolve_general(path, resolver),
    }
}

/// [`resolve_path`] over `std::path` components: for paths that are not
/// UTF-8, and the reference the byte-level walk is tested against.
pub(crate) fn resolve_general(path: &Path, resolver: &dyn PathResolver) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    // The fast walk: the path's own components, until a link is met.
    let mut parts = path.components();
    let mut pending: Vec<PathBuf> = Vec::new();
    while let Some(c) = parts.next() {
        match c {
            Component::RootDir | Component::Prefix(_) => out = PathBuf::from("/"),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => {
                out.push(name);
                match resolver.link(&out) {
                    Link::NotLink => {}
                    Link::Link(target) => {
                        out.pop();
                        // What is left of the path, after the link's target.
                        push_components(&mut pending, parts.as_path());
                        push_components(&mut pending, &target);
                        return follow_pending(out, pending, 1, resolver);
                    }
                    Link::Unknown => return None,
                }
            }
        }
    }
    Some(out)
}

/// The rest of a resolution after its first link: pops `pending` (see
/// [`push_components`]) onto `out`, following links as they are met.
pub(crate) fn follow_pending(
    mut out: PathBuf,
    mut pending: Vec<PathBuf>,
    mut followed: usize,
    resolver: &dyn PathResolver,
) -> Option<PathBuf> {
    while let Some(part) = pending.pop() {
        match part.as_os_str().to_str() {
            Some("/") => out = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                out.pop();
            }
            _ => {
                let candidate = out.join(&part);
                match resolver.link(&candidate) {
                    Link::NotLink => out = candidate,
                    Link::Link(target) => {
                        followed += 1;
                        if followed > MAX_LINKS {
                            return None;
                        }
                        push_components(&mut pending, &target);
                    }
                    Link::Unknown => return None,
                }
            }
        }
    }
    Some(out)
}

/// Pushes `path`'s components onto `stack` so that popping yields them in order.
pub(crate) fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
    let parts: Vec<PathBuf> = path
        .components()
        .map(|c| match c {
            Component::RootDir | Component::Prefix(_) => PathBuf::from("/"),
            Component::CurDir => PathBuf::from("."),
            Component::ParentDir => PathBuf::from(".."),
            Component::Normal(s) => PathBuf::from(s),
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

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
        if tilde {
            return Err(if raw == "~" || raw.starts_with("~/") {
                format!("{raw} is under ~, the agent's home, which is never repo-scoped")
            } else {
                format!("{raw} names another user's home")
            });
        }
        let odd = if raw.is_ascii() {
            raw.bytes().any(|b| b.is_ascii_control())
        } else {
            raw.chars().any(|c| c.is_control() || crate::text::is_invisible(c))
        };
        if odd {
            return Err(format!("{raw:?} has a control or invisible character"));
        }
        let resolved = resolve_joined(cwd, raw, resolver).ok_or_else(|| format!("{raw} cannot be resolved"))?;
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
