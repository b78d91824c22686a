//! Simple commands judged once per decision: a compound line repeats the
//! same commands (`… && make test; … && make test`), and the walk judges
//! each from every directory the shell may be in. Judging is a function of
//! the command's words, its directory and the decision's fixed inputs; its
//! only effects are the writes and runs it records, so a repeat is answered
//! by replaying those.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::path::{Path, PathBuf};

use crate::ctx::{Ctx, Records};
use crate::reason::NotScoped;
use crate::shell::Segment;

/// Segments judged so far, each with the directories it passed from and
/// what judging it there recorded. Failures are not kept: the first one
/// ends the walk.
#[derive(Default)]
pub(crate) struct Judged<'s> {
    seen: RefCell<HashMap<Key<'s>, Vec<Passed>, FxBuild>>,
}

/// A segment as a map key: equal when the segments are equal, hashed by
/// their shape and outer words only (cheap; equality decides).
#[derive(Eq)]
struct Key<'s>(Segment<'s>);

impl PartialEq for Key<'_> {
    fn eq(&self, other: &Self) -> bool {
        // The walk asks again for the very segment it judged from another
        // directory: no need to compare it word by word with itself.
        self.0.same(&other.0) || self.0 == other.0
    }
}

impl std::hash::Hash for Key<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        let Segment { words, redirects } = self.0;
        state.write_usize(words.len());
        state.write_usize(redirects.len());
        for word in words.first().into_iter().chain(words.last()) {
            state.write(word.text.as_bytes());
        }
    }
}

/// A directory a segment passed from, and what judging it there recorded.
type Passed = (PathBuf, Records);

/// Builds [`Fx`] hashers.
pub(crate) type FxBuild = BuildHasherDefault<Fx>;

impl<'s> Judged<'s> {
    /// `judge(seg, cwd)`, or the replay of its earlier success.
    pub(crate) fn judge(
        &self,
        seg: Segment<'s>,
        cwd: &Path,
        ctx: &Ctx<'_>,
        judge: impl FnOnce() -> Result<(), NotScoped>,
    ) -> Result<(), NotScoped> {
        if let Some(v) = self.seen.borrow().get(&Key(seg))
            // Compared as text: a directory spelled two ways is judged twice.
            && let Some((_, records)) = v.iter().find(|(dir, _)| dir.as_os_str() == cwd.as_os_str())
        {
            ctx.replay(records);
            return Ok(());
        }
        let mark = ctx.mark();
        judge()?;
        let records = ctx.since(&mark);
        self.seen
            .borrow_mut()
            .entry(Key(seg))
            .or_default()
            .push((cwd.to_path_buf(), records));
        Ok(())
    }
}

/// A small fast hasher for keys the decision builds from its own input
/// (no adversary can choose collisions to any effect but speed).
#[derive(Default)]
pub(crate) struct Fx(u64);

impl Hasher for Fx {
    fn write(&mut self, bytes: &[u8]) {
        // Whole words read directly; only the tail is copied.
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let tail = chunks.remainder();
        if !tail.is_empty() {
            // The tail zero-padded to a little-endian word, built in a
            // register: a copy into a stack buffer (a `memcpy` call) read
            // back as a whole word stalls on store forwarding.
            let word = tail
                .iter()
                .enumerate()
                .fold(0u64, |word, (i, b)| word | (u64::from(*b) << (8 * i)));
            self.add(word);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Fx {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::ctx::Ctx;
    use crate::paths::Scope;
    use crate::paths::fake::FakeFs;
    use crate::reason::Mode;

    /// The walk's result, writes and runs (program and directory), judged
    /// with or without the memo.
    type Seen = (Result<(), String>, Vec<String>, Vec<(String, String)>);

    fn seen(cmd: &str, memo: bool) -> Seen {
        let fs = FakeFs::default().with_link("/w/l", "sub");
        let scope = Scope::new("/w");
        let ctx = Ctx::new(&scope, &fs, Mode::Command);
        let script = crate::shell::parse(cmd).map_err(|r| r.to_string());
        let result = script.and_then(|script| {
            let judged = super::Judged::default();
            let judge = |seg, at: &Path| {
                if memo {
                    judged.judge(seg, at, &ctx, || crate::scope::segment(&seg, &ctx, at))
                } else {
                    crate::scope::segment(&seg, &ctx, at)
                }
            };
            crate::scope::flow::walk(&script, Path::new("/w"), &ctx, &judge).map_err(|e| e.0)
        });
        let writes = ctx.writes.borrow().iter().map(|p| p.display().to_string()).collect();
        let runs = ctx
            .runs
            .borrow()
            .iter()
            .map(|r| (r.prog.clone(), r.cwd.display().to_string()))
            .collect();
        (result, writes, runs)
    }

    #[test]
    fn the_hasher_reads_a_tail_as_a_zero_padded_word() {
        use std::hash::Hasher;
        let bytes: Vec<u8> = (1..=23u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 0..bytes.len() {
            let text = &bytes[..len];
            let mut got = super::Fx::default();
            got.write(text);
            let mut want = super::Fx::default();
            for chunk in text.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                want.add(u64::from_le_bytes(word));
            }
            assert_eq!(got.finish(), want.finish(), "{len} bytes");
        }
    }

    #[test]
    fn a_repeated_command_records_what_it_recorded_the_first_time() {
        for cmd in [
            "echo x > a.txt; echo x > a.txt",
            "make test; cd l && make test; make test && make test",
            "cd sub; cargo test > out.txt && cargo test > out.txt; git status",
            "sed -i s/a/b/ f.txt && sed -i s/a/b/ f.txt | cat f.txt",
            "cd sub && echo x > ../y; echo x > ../y",
            "make test; make test > .git/config",
        ] {
            let with = seen(cmd, true);
            assert_eq!(with, seen(cmd, false), "{cmd}");
            if with.0.is_ok() {
                assert!(with.1.len() > 1 || with.2.len() > 1, "{cmd} repeats nothing: {with:?}");
            }
        }
    }
}
