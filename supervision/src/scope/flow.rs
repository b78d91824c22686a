//! Where each simple command of a script runs: `cd` modelled with the
//! shell's own semantics. The judge carries every directory the shell may be
//! in at each point (with the last exit status where it is known), so a `cd`
//! that may fail, sits in a pipeline or a background job, or is skipped by
//! `&&`/`||` never moves the policy where the shell would not go. Every
//! command is checked from every directory it may run in.

use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use crate::ctx::Ctx;
use crate::paths::{Access, resolve_path};
use crate::reason::{NotScoped, no};
use crate::shell::{Connector, Pipeline, Script, Segment, Word};
use crate::walk::same_path;

/// Most distinct states carried at once; beyond it the command is held.
const MAX_STATES: usize = 16;

/// The last exit status, as far as the judge knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Ok,
    Failed,
    Unknown,
}

/// One way the shell may be at a point of the script. The directories are
/// shared: every pipeline hands each state on, and only a `cd` makes new ones.
#[derive(Debug, Clone, Eq)]
struct State {
    /// `$PWD`: what the shell believes (used by the next `cd`, which is logical).
    logical: Rc<Path>,
    /// Where the process really is (what relative paths resolve against).
    physical: Rc<Path>,
    status: Status,
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        // A directory handed on is the same one: no need to compare its text.
        let same = |a: &Rc<Path>, b: &Rc<Path>| Rc::ptr_eq(a, b) || same_path(a, b);
        self.status == other.status && same(&self.logical, &other.logical) && same(&self.physical, &other.physical)
    }
}

/// Removes `.` and `..` as text, the way `cd` (without `-P`) builds `$PWD`.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(s) => out.push(s),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn push_state(states: &mut Vec<State>, s: State) -> Result<(), NotScoped> {
    if !states.contains(&s) {
        if states.len() >= MAX_STATES {
            return Err(no("the command changes directory in too many ways to follow"));
        }
        states.push(s);
    }
    Ok(())
}

/// The directory `cd dir` would enter from `state`, both ways bash may reach
/// it (the logical path, and the physical one it falls back to); each must be
/// in scope.
fn cd_targets(dir: &Word, state: &State, ctx: &Ctx<'_>) -> Result<Vec<State>, NotScoped> {
    if dir.tilde {
        ctx.check(dir, &state.physical, Access::Read)
            .map_err(|e| no(format!("cd: {e}")))?;
    }
    let logical: Rc<Path> = lexical(&state.logical.join(&*dir.text)).into();
    let mut out = Vec::new();
    for (candidate, falls_back) in [(logical.to_path_buf(), false), (state.physical.join(&*dir.text), true)] {
        let physical: Rc<Path> = ctx
            .path_str(&candidate.to_string_lossy(), &state.physical, Access::Read)
            .map_err(|e| no(format!("cd: {e}")))?
            .into();
        let next = State {
            // After the physical fallback bash sets $PWD from where it is.
            logical: if falls_back { physical.clone() } else { logical.clone() },
            physical,
            status: Status::Ok,
        };
        if !out.contains(&next) {
            out.push(next);
        }
    }
    Ok(out)
}

/// The one directory argument of a `cd` the judge can follow.
fn cd_dir<'s>(seg: Segment<'s>) -> Result<&'s Word<'s>, NotScoped> {
    match &seg.words[1..] {
        [dir] if !dir.text.starts_with('-') && !dir.text.is_empty() => Ok(dir),
        [] => Err(no("cd: ~ is under ~, the agent's home, which is never repo-scoped")),
        _ => Err(no("cd with options or a previous directory")),
    }
}

fn is_cd(seg: &Segment) -> bool {
    seg.words.first().is_some_and(|w| w.text == "cd")
}

/// Runs one pipeline from one state; adds the states after it to `next`
/// (see [`push_state`]), in order.
fn pipeline<'s>(
    p: Pipeline<'s>,
    state: &State,
    ctx: &Ctx<'_>,
    judge: &dyn Fn(Segment<'s>, &Path) -> Result<(), NotScoped>,
    next: &mut Vec<State>,
) -> Result<(), NotScoped> {
    for seg in p.commands() {
        judge(seg, &state.physical)?;
    }
    match p.lone() {
        // A lone `cd` changes the shell's directory, or fails and leaves it.
        Some(seg) if is_cd(&seg) => {
            let dir = cd_dir(seg)?;
            for after in cd_targets(dir, state, ctx)? {
                push_state(next, after)?;
            }
            push_state(
                next,
                State {
                    status: Status::Failed,
                    ..state.clone()
                },
            )
        }
        // In a pipeline each command runs in a subshell: a `cd` there
        // only has to stay in scope itself.
        _ => {
            for seg in p.commands().filter(is_cd) {
                cd_targets(cd_dir(seg)?, state, ctx)?;
            }
            push_state(
                next,
                State {
                    status: Status::Unknown,
                    ..state.clone()
                },
            )
        }
    }
}

/// Walks `script` from `start`, calling `judge` for every simple command
/// with every directory it may run in (`judge` checks a `cd`'s redirections
/// only: the walk follows the `cd` itself).
pub(crate) fn walk<'s>(
    script: &'s Script<'s>,
    start: &Path,
    ctx: &Ctx<'_>,
    judge: &dyn Fn(Segment<'s>, &Path) -> Result<(), NotScoped>,
) -> Result<(), NotScoped> {
    let physical = resolve_path(start, ctx.resolver).ok_or_else(|| no("the working directory cannot be resolved"))?;
    let mut states = vec![State {
        logical: start.into(),
        physical: physical.into(),
        status: Status::Ok,
    }];
    // The states after each pipeline are built here, then swapped in (one
    // buffer for the whole walk).
    let mut next = Vec::new();
    for list in script.lists() {
        // Only a background job needs the states from before it.
        let before = list.background.then(|| states.clone());
        for (connector, p) in list.pipelines() {
            next.clear();
            for s in &states {
                let runs = match (connector, s.status) {
                    (None, _) | (_, Status::Unknown) => true,
                    (Some(Connector::And), st) => st == Status::Ok,
                    (Some(Connector::Or), st) => st == Status::Failed,
                };
                if runs {
                    pipeline(p, s, ctx, judge, &mut next)?;
                } else {
                    push_state(&mut next, s.clone())?;
                }
            }
            std::mem::swap(&mut states, &mut next);
        }
        if let Some(before) = before {
            // A background job runs in a subshell: the shell stays where it was.
            states = before
                .into_iter()
                .map(|s| State {
                    status: Status::Ok,
                    ..s
                })
                .collect();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;
    use crate::paths::Scope;
    use crate::paths::fake::FakeFs;
    use crate::reason::Mode;
    use crate::shell::parse;

    /// Each command's program and every directory it was judged from.
    fn dirs(cmd: &str, fs: &FakeFs) -> Result<Vec<(String, String)>, String> {
        let scope = Scope::new("/w");
        let ctx = Ctx::new(&scope, fs, Mode::Command);
        let seen = RefCell::new(Vec::new());
        let judge = |seg: Segment, cwd: &Path| -> Result<(), NotScoped> {
            if seg.words[0].text != "cd" {
                seen.borrow_mut()
                    .push((seg.words[0].text.to_string(), cwd.display().to_string()));
            }
            Ok(())
        };
        walk(&parse(cmd).map_err(|r| r.to_string())?, Path::new("/w"), &ctx, &judge).map_err(|e| e.0)?;
        let mut v = seen.into_inner();
        v.sort();
        v.dedup();
        Ok(v)
    }

    fn at(list: &[(&str, &str)]) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        v.sort();
        v
    }

    #[test]
    fn cd_follows_the_shell() {
        let fs = FakeFs::default();
        // `&&`: only after the cd succeeded.
        assert_eq!(dirs("cd a && cat x", &fs), Ok(at(&[("cat", "/w/a")])));
        // `;`: the cd may have failed.
        assert_eq!(dirs("cd a; cat x", &fs), Ok(at(&[("cat", "/w/a"), ("cat", "/w")])));
        // `||`: only after it failed.
        assert_eq!(dirs("cd a || cat x", &fs), Ok(at(&[("cat", "/w")])));
        // A pipeline or a background job does not move the shell.
        assert_eq!(dirs("cd a | cat x; ls", &fs), Ok(at(&[("cat", "/w"), ("ls", "/w")])));
        assert_eq!(dirs("cd a & ls", &fs), Ok(at(&[("ls", "/w")])));
        assert_eq!(
            dirs("cd a && cd b; ls", &fs),
            Ok(at(&[("ls", "/w"), ("ls", "/w/a"), ("ls", "/w/a/b")]))
        );
        assert_eq!(dirs("cat x && cd a || ls", &fs), Ok(at(&[("cat", "/w"), ("ls", "/w")])));
        // Leaving the worktree is never followed.
        assert!(dirs("cd .. && ls", &fs).is_err());
        assert!(dirs("cd /etc; ls", &fs).is_err());
        assert!(dirs("cd", &fs).is_err());
        assert!(dirs("cd -", &fs).is_err());
        assert!(dirs("cd -P a", &fs).is_err());
    }

    #[test]
    fn cd_through_a_symlink_is_judged_both_ways() {
        // `up` points at the worktree's parent: `cd up/..` is /w logically
        // but / physically; bash may end up in either.
        let fs = FakeFs::default().with_link("/w/up", "..");
        assert!(dirs("cd up/.. && ls", &fs).is_err());
        let fs = FakeFs::default().with_link("/w/l", "sub/deep");
        assert_eq!(dirs("cd l/.. && ls", &fs), Ok(at(&[("ls", "/w"), ("ls", "/w/sub")])));
    }
}
