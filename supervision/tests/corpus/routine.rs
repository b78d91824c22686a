//! Routine work that must stay routine, so the policy is not useless: builds,
//! tests, reads (of protected files too: reading them grants nothing), git
//! bookkeeping, ordinary edits, instructions files.

use super::Want::*;
use super::*;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(cmds(
        Approve,
        "an allowlisted build, test or lint in the worktree with nothing redefined",
        &[
            "cargo test",
            "cargo test -p core -- --nocapture",
            "cargo build --release",
            "cargo check --all-targets",
            "cargo clippy --all-targets -- -D warnings",
            "cargo fmt --check",
            "cargo run --bin warren -- --help",
            "cargo build --target-dir target/rel",
            "npm test",
            "npm run build",
            "pnpm test",
            "yarn lint",
            "bun test",
            "go test ./...",
            "go vet ./...",
            "go build -o bin/tool ./cmd/tool",
            "make",
            "make -C sub test",
            "pytest -x tests/test_api.py",
            "python3 -m pytest -q tests/test_api.py::test_parse",
            "eslint src --ext .ts",
        ],
    ));
    all.extend(cmds(
        Approve,
        "a read-only look around the worktree",
        &[
            "ls -la",
            "ls src/",
            "cat Cargo.toml README.md",
            "head -n 50 src/lib.rs | wc -l",
            "tail -n 20 target/log.txt",
            "rg -n 'TODO' src tests",
            "grep -rn unsafe src",
            "sed -n '1,40p' src/lib.rs",
            "pwd",
            "echo done",
            "cat vendor/lib.c",
            "cd sub && ls",
            "cd src && cat ../Cargo.toml",
        ],
    ));
    all.extend(cmds(
        Approve,
        "reading git's directory or a CLI's settings grants nothing; only writes there are protected",
        &[
            "cat .git/config",
            "ls .git/hooks",
            "cat .git/HEAD",
            "cd .git && ls",
            "cat .claude/settings.json",
            "grep -rn hook .claude",
            "sed -n 1,20p .codex/config.toml",
            "cat .aider.conf.yml",
            "head .mcp.json",
            "ls -la .claude",
            "cat cfg/settings.json",
            "ls hooks-link",
            "cat .gemini/settings.json",
            "cat opencode.json",
            "git diff -- .claude/settings.json",
        ],
    ));
    all.extend(cmds(
        Approve,
        "git bookkeeping in the worktree",
        &[
            "git status",
            "git status --short",
            "git diff --stat",
            "git diff HEAD~1 -- src/lib.rs",
            "git log --oneline -20",
            "git show HEAD:src/lib.rs",
            "git add -A && git commit -m 'Fix parser'",
            "git add src/lib.rs",
            "git --no-pager log -1",
            "git -C sub status",
            "git diff --output=review.diff",
            "git add .claude/settings.json && git commit -m 'settings'",
        ],
    ));
    all.extend(cmds(
        Approve,
        "writes of ordinary files in the worktree",
        &[
            "echo hi > out.txt",
            "cargo test > target/test.log 2>&1",
            "cargo test 2>/dev/null",
            "echo 'a > b' > notes/out.txt",
            "cargo build 2>&1 | tail -20",
            "echo x > .github/workflows/ci.yml",
            "echo x > CLAUDE.md",
            "echo x >> .gitignore",
            "echo x > docs/git-hooks.md",
            "echo x > src/claude/mod.rs",
        ],
    ));
    all.extend(cmds(
        Overcautious,
        "eslint without --fix only reads, but any program that may write is kept off protected paths",
        &["eslint .claude/hooks/check.js"],
    ));
    all.extend(edits(
        Approve,
        "an ordinary edit in the worktree",
        &[
            "src/lib.rs",
            "/w/repo/src/main.rs",
            "tests/api.rs",
            "README.md",
            "docs/guide.md",
            "vendor/lib.c",
            "Makefile",
            "package.json",
            "Cargo.toml",
            ".gitignore",
            ".github/workflows/ci.yml",
            "src/git/mod.rs",
            "docs/claude.md",
            "config/settings.json",
            ".gitattributes",
        ],
    ));
    all.extend(edits(
        Approve,
        "instructions files grant no permission and run nothing: every action they prompt still meets a dialog",
        &[
            "CLAUDE.md",
            "AGENTS.md",
            "GEMINI.md",
            "CONVENTIONS.md",
            "sub/CLAUDE.md",
            "CLAUDE.local.md",
        ],
    ));
    all
}
