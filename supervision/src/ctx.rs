//! The judge's working state for one dialog: how paths are checked against
//! the scope, what the action writes, which repository code it runs, and the
//! repository-code rule over them.

use std::borrow::Cow;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use crate::credentials::credential_file;
use crate::paths::{Access, PathResolver, Resolved, Resolving, Scope, resolve_path};
use crate::reason::{Mode, NotScoped, no};
use crate::runs::{Runner, definition_for, named_definitions, names_read_in_cwd, runner_of};
use crate::shell::Word;

/// A program run that executes repository code: which runner, from where,
/// and any definition file named on its command line (`make -f x`).
#[derive(Clone)]
pub(crate) struct Run {
    pub(crate) runner: Runner,
    pub(crate) prog: String,
    pub(crate) cwd: PathBuf,
    pub(crate) named: Vec<PathBuf>,
}

/// How many writes and runs were recorded at some point.
pub(crate) struct Mark {
    writes: usize,
    runs: usize,
}

/// The writes and runs recorded by one judgment.
pub(crate) struct Records {
    writes: Vec<PathBuf>,
    runs: Vec<Rc<Run>>,
}

pub(crate) struct Ctx<'a> {
    pub(crate) scope: &'a Scope,
    /// The worktree and home, resolved once.
    at: Resolved,
    pub(crate) resolver: &'a dyn PathResolver,
    pub(crate) mode: Mode,
    /// What the command or dialog writes (resolved), in order.
    pub(crate) writes: RefCell<Vec<PathBuf>>,
    /// The repository-code runs it makes (shared with the memo's records:
    /// a repeated command replays its runs without copying them).
    pub(crate) runs: RefCell<Vec<Rc<Run>>>,
    /// Entries of `scope.changed` that made a run not routine.
    pub(crate) redefined: RefCell<Vec<PathBuf>>,
    scratch: RefCell<Scratch>,
}

/// What the path checks of one decision reuse.
#[derive(Default)]
struct Scratch {
    /// Directories paths were resolved from, each with its walk when no
    /// link was met on it (`walk::walk_dir`): a command names many paths
    /// from the same few directories.
    dirs: Vec<(PathBuf, Option<String>)>,
    /// The buffer each path is resolved into.
    buf: String,
}

/// How many directories [`Scratch::dirs`] keeps.
const DIRS_KEPT: usize = 8;

/// `cwd`'s walk (see [`Scratch::dirs`]), from `dirs` or made and kept there.
fn walked_dir<'d>(
    dirs: &'d mut Vec<(PathBuf, Option<String>)>,
    cwd: &Path,
    resolver: &dyn PathResolver,
) -> Option<&'d str> {
    // Compared as text: a directory spelled two ways is walked twice.
    let found = dirs.iter().position(|(dir, _)| dir.as_os_str() == cwd.as_os_str());
    let at = match found {
        Some(at) => at,
        None => {
            if dirs.len() == DIRS_KEPT {
                dirs.pop();
            }
            dirs.push((cwd.to_path_buf(), crate::walk::walk_dir(cwd, resolver)));
            dirs.len() - 1
        }
    };
    dirs[at].1.as_deref()
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(scope: &'a Scope, resolver: &'a dyn PathResolver, mode: Mode) -> Ctx<'a> {
        Ctx {
            at: scope.resolved(resolver),
            scope,
            resolver,
            mode,
            writes: RefCell::new(Vec::new()),
            runs: RefCell::new(Vec::new()),
            redefined: RefCell::new(Vec::new()),
            scratch: RefCell::default(),
        }
    }

    /// Where the records stand now (see [`Ctx::since`]).
    pub(crate) fn mark(&self) -> Mark {
        Mark {
            writes: self.writes.borrow().len(),
            runs: self.runs.borrow().len(),
        }
    }

    /// What was recorded after `mark`.
    pub(crate) fn since(&self, mark: &Mark) -> Records {
        Records {
            writes: self.writes.borrow().get(mark.writes..).unwrap_or_default().to_vec(),
            runs: self.runs.borrow().get(mark.runs..).unwrap_or_default().to_vec(),
        }
    }

    /// Records again what an identical judgment recorded (see `memo`).
    pub(crate) fn replay(&self, records: &Records) {
        self.writes.borrow_mut().extend(records.writes.iter().cloned());
        self.runs.borrow_mut().extend(records.runs.iter().cloned());
    }

    /// Checks one path the action touches: in scope, not a credential file,
    /// not protected when it may be written; a write is recorded.
    pub(crate) fn path(&self, word: &Word, cwd: &Path, access: Access) -> Result<PathBuf, NotScoped> {
        self.visit(word, cwd, access, |p| p.into_owned())
    }

    /// [`Ctx::path`] when the resolved path is not needed: nothing is
    /// allocated for it.
    pub(crate) fn check(&self, word: &Word, cwd: &Path, access: Access) -> Result<(), NotScoped> {
        self.visit(word, cwd, access, |_| ())
    }

    /// [`Ctx::path`], handing the resolved path to `keep`.
    fn visit<T>(
        &self,
        word: &Word,
        cwd: &Path,
        access: Access,
        keep: impl FnOnce(Cow<'_, Path>) -> T,
    ) -> Result<T, NotScoped> {
        let mut scratch = self.scratch.borrow_mut();
        let Scratch { dirs, buf } = &mut *scratch;
        // Only a relative path is resolved from `cwd`.
        let relative = !word.tilde && !word.text.starts_with('/');
        let walked = if relative {
            walked_dir(dirs, cwd, self.resolver)
        } else {
            None
        };
        let from = Resolving { cwd, walked, buf };
        let resolved = self
            .scope
            .check_in(&self.at, &word.text, word.tilde, from, access, self.resolver)
            .map_err(NotScoped)?;
        if let Some(root) = &self.at.root
            && let Some(rel) = crate::walk::resolved_rel(&resolved, root)
            && let Some(why) = credential_file(rel)
        {
            return Err(no(format!(
                "{} is {why}: reading or writing it is credential access",
                word.text
            )));
        }
        if access == Access::Write {
            self.writes.borrow_mut().push(resolved.to_path_buf());
        }
        Ok(keep(resolved))
    }

    pub(crate) fn path_str(&self, raw: &str, cwd: &Path, access: Access) -> Result<PathBuf, NotScoped> {
        self.path(&Word::plain(raw), cwd, access)
    }

    /// A positional word of a program, taken as a path it may open: `-` is
    /// standard input, an empty word is nothing.
    pub(crate) fn operand(&self, word: &Word, cwd: &Path, access: Access) -> Result<(), NotScoped> {
        if word.text.is_empty() || word.text == "-" {
            return Ok(());
        }
        self.check(word, cwd, access)
    }

    /// Refuses a program that may write when it runs inside a protected
    /// directory (its outputs and caches land there).
    pub(crate) fn not_inside_protected(&self, prog: &str, cwd: &Path) -> Result<(), NotScoped> {
        match self.scope.protected_at(&self.at, cwd, self.resolver) {
            Some(p) => Err(no(format!(
                "{prog} would run inside {}, a protected path ({}: {})",
                cwd.display(),
                p.owner,
                p.reason
            ))),
            None => Ok(()),
        }
    }

    /// A program that walks the trees at `roots` following symbolic links
    /// must find no link there that leads out of the worktree.
    pub(crate) fn walk_stays_inside(&self, prog: &str, roots: &[PathBuf]) -> Result<(), NotScoped> {
        for root in roots {
            if let Some(link) = self.scope.escaping_links.iter().find(|l| l.starts_with(root)) {
                return Err(no(format!(
                    "{prog} walks {} following symbolic links, and {} leads out of the worktree",
                    root.display(),
                    link.display()
                )));
            }
        }
        Ok(())
    }

    /// Records that `prog` runs repository code from `cwd`.
    pub(crate) fn ran(&self, prog: &str, args: &[&str], cwd: &Path, named: Vec<PathBuf>) {
        if let Some(runner) = runner_of(prog, args) {
            self.runs.borrow_mut().push(Rc::new(Run {
                runner,
                prog: prog.to_string(),
                cwd: cwd.to_path_buf(),
                named,
            }));
        }
    }

    /// The repository-code rule: no run may execute a definition (see `runs`)
    /// that the workspace changed since a human last accepted it or that this
    /// command writes.
    pub(crate) fn check_runs(&self) -> Result<(), NotScoped> {
        if let Some(run) = self.runs.borrow().first()
            && self.scope.definitions_unknown
        {
            return Err(no(format!(
                "{} runs repository code and the workspace is too large to check what defines it",
                run.prog
            )));
        }
        // Nothing changed and nothing written: no definition can be redefined.
        if self.runs.borrow().is_empty() || (self.scope.changed.is_empty() && self.writes.borrow().is_empty()) {
            return Ok(());
        }
        let Some(root) = self.at.root.clone() else {
            return Err(no("the worktree cannot be resolved"));
        };
        let writes = self.writes.borrow();
        let changed: Vec<&PathBuf> = self.scope.changed.iter().chain(writes.iter()).collect();
        let mut first: Option<String> = None;
        let mut hit = |path: &PathBuf, why: String| {
            first.get_or_insert(why);
            let mut redefined = self.redefined.borrow_mut();
            if self.scope.changed.contains(path) && !redefined.contains(path) {
                redefined.push(path.clone());
            }
        };
        for run in self.runs.borrow().iter() {
            let prog = &run.prog;
            // Definitions the run's own files name (a manifest's build
            // script, a tsconfig's `extends`).
            let named_by_files = named_definitions(run.runner, &run.cwd, &root, self.resolver);
            for path in &changed {
                let hook = self.scope.in_hook_dir(path, self.resolver) && run.runner == Runner::Any;
                let Ok(rel) = path.strip_prefix(&root) else {
                    continue;
                };
                // python puts the directory it runs from first on the import
                // path: a module there shadows whatever pytest imports.
                let shadows = run.runner == Runner::Python
                    && path.parent() == Some(run.cwd.as_path())
                    && path.extension().is_some_and(|e| e == "py");
                let def = definition_for(rel, run.runner)
                    .map(|d| d.reason)
                    .or_else(|| {
                        (hook || named_by_files.iter().any(|n| n == *path))
                            .then_some("a file git or the build files name as code to run")
                    })
                    .or_else(|| shadows.then_some("a module beside the tests shadows what pytest imports"));
                if let Some(reason) = def {
                    let why = format!(
                        "{prog} runs repository code and {} was changed ({reason}): a human decides whether to run \
                         it",
                        rel.display()
                    );
                    hit(path, why);
                }
            }
            let mut read: Vec<PathBuf> = run.named.clone();
            read.extend(names_read_in_cwd(run.runner).filter_map(|n| resolve_path(&run.cwd.join(n), self.resolver)));
            for r in read {
                if let Some(path) = changed.iter().find(|c| **c == &r) {
                    let why = format!(
                        "{prog} reads {}, which was changed: a human decides whether to run it",
                        r.display()
                    );
                    hit(path, why);
                }
            }
        }
        first.map_or(Ok(()), |why| Err(no(why)))
    }
}
