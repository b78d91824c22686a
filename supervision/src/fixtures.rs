//! What `warren bench supervision` and the `decide_4k` profiling example
//! judge, defined once so both measure the same thing: a worktree at
//! `/w/repo` and the two 4 KB commands.

use std::path::Path;

use crate::{GitAt, Link, PathResolver};

/// A worktree at `/w/repo` with its own `.git` and no symlinks.
pub struct BenchRepo;

impl PathResolver for BenchRepo {
    fn link(&self, _path: &Path) -> Link {
        Link::NotLink
    }

    fn git_at(&self, dir: &Path) -> GitAt {
        if dir == Path::new("/w/repo") {
            GitAt::DotGit
        } else {
            GitAt::Nothing
        }
    }
}

/// The two 4 KB commands, named: one read of many files, and a compound
/// line of builds, git and searches.
pub fn four_kb_commands() -> [(&'static str, String); 2] {
    let mut long_read = String::from("cat");
    let mut i = 0;
    while long_read.len() < 4096 {
        long_read.push_str(&format!(" src/module_{i}/file_{i}.rs"));
        i += 1;
    }
    let mut compound = String::from("cd sub && cargo test -p core");
    while compound.len() < 4096 {
        compound
            .push_str(" && git status --short && rg -n 'TODO' src tests | head -n 20; make -j4 test 2>&1 | tail -5");
    }
    [("one read of many files", long_read), ("a compound line", compound)]
}
