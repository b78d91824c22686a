//! Where an action may reach: the scope roots, `~`, `..` and symlink resolution
//! through a `PathResolver` so the decision itself does no IO.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// The one question the scope rules ask the file system. The node implements it
/// with `std::fs::symlink_metadata` and `read_link`; tests use a map.
pub trait PathResolver {
    /// What `path` (absolute, without `.` or `..`) is.
    fn link(&self, path: &Path) -> Link;
}

/// A resolver for a tree without symlinks (and for callers that cannot look).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoSymlinks;

impl PathResolver for NoSymlinks {
    fn link(&self, _path: &Path) -> Link {
        Link::NotLink
    }
}

/// How many symlinks one resolution may follow before it gives up (as Linux does).
const MAX_LINKS: usize = 40;

/// Resolves an absolute path the way the kernel walks it: component by
/// component, following each symlink as it is met, so `link/..` is the parent of
/// the link's target, not the directory holding the link. Components that do
/// not exist are kept as they are (a file about to be created). `None` for a
/// relative path, a symlink loop, or a component the resolver could not read.
pub fn resolve_path(path: &Path, resolver: &dyn PathResolver) -> Option<PathBuf> {
    if !path.is_absolute() {
        return None;
    }
    let mut out = PathBuf::from("/");
    let mut pending: Vec<PathBuf> = Vec::new();
    push_components(&mut pending, path);
    let mut followed = 0;
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
fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
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

/// The directories an agent's actions may touch: its worktree (the default
/// working directory), optionally the repository root and the agent's home,
/// and what `~` means for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// The agent's worktree; commands without a `cwd` run here.
    pub worktree: PathBuf,
    /// Further allowed roots (the repository root, the agent's durable home).
    #[serde(default)]
    pub extra_roots: Vec<PathBuf>,
    /// What a leading `~` expands to; with `None`, every `~` path is out of scope.
    #[serde(default)]
    pub home: Option<PathBuf>,
}

impl Scope {
    /// A scope of just the worktree, where `~` is never in scope.
    pub fn new(worktree: impl Into<PathBuf>) -> Scope {
        Scope {
            worktree: worktree.into(),
            extra_roots: Vec::new(),
            home: None,
        }
    }

    /// Adds the agent's home: an allowed root and what `~` expands to.
    pub fn with_agent_home(mut self, home: impl Into<PathBuf>) -> Scope {
        let home = home.into();
        self.extra_roots.push(home.clone());
        self.home = Some(home);
        self
    }

    fn roots(&self) -> impl Iterator<Item = &PathBuf> {
        std::iter::once(&self.worktree).chain(self.extra_roots.iter())
    }

    /// True when `path` (absolute, already resolved) is one of the roots or below one.
    fn contains_resolved(&self, path: &Path, resolver: &dyn PathResolver) -> bool {
        self.roots()
            .filter_map(|r| resolve_path(r, resolver))
            .any(|root| path.starts_with(&root))
    }

    /// Resolves `raw` as the shell would see it from `cwd` (`~` and `~/x` via
    /// `home`; `~user` is never in scope) and checks it lands inside a root.
    /// Returns the resolved path, or why it is out of scope or cannot be resolved.
    pub(crate) fn check(
        &self,
        raw: &str,
        tilde: bool,
        cwd: &Path,
        resolver: &dyn PathResolver,
    ) -> Result<PathBuf, String> {
        let joined = if tilde {
            let rest = &raw[1..];
            let Some(home) = &self.home else {
                return Err(format!("{raw} names the home directory"));
            };
            if rest.is_empty() {
                home.clone()
            } else if let Some(rest) = rest.strip_prefix('/') {
                home.join(rest)
            } else {
                return Err(format!("{raw} names another user's home"));
            }
        } else {
            cwd.join(raw)
        };
        let resolved = resolve_path(&joined, resolver).ok_or_else(|| format!("{raw} cannot be resolved"))?;
        if self.contains_resolved(&resolved, resolver) {
            Ok(resolved)
        } else {
            Err(format!("{raw} resolves to {} outside the worktree", resolved.display()))
        }
    }

    /// The directory commands run in: the dialog's `cwd` (relative to the
    /// worktree if relative), which must itself be in scope.
    pub(crate) fn working_dir(&self, cwd: Option<&str>, resolver: &dyn PathResolver) -> Result<PathBuf, String> {
        match cwd {
            None => resolve_path(&self.worktree, resolver).ok_or_else(|| "the worktree cannot be resolved".to_string()),
            Some(dir) => self
                .check(dir, dir.starts_with('~'), &self.worktree, resolver)
                .map_err(|why| format!("working directory {why}")),
        }
    }

    /// True when `raw` (from `cwd`) resolves inside a root. The public form of
    /// the path rule, for callers that want to show why.
    pub fn contains(&self, raw: &str, cwd: &Path, resolver: &dyn PathResolver) -> bool {
        self.check(raw, raw.starts_with('~'), cwd, resolver).is_ok()
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
            ("~", true),
            ("~/notes.md", true),
            ("~/../other/x", false),
            ("~root/.bashrc", false),
        ];
        for (raw, want) in cases {
            assert_eq!(scope.contains(raw, cwd, &fs), *want, "{raw}");
        }
        let no_home = Scope::new("/w");
        assert!(!no_home.contains("~/x", cwd, &fs));
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
