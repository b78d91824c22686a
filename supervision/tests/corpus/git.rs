//! Git's directory and hook managers: a write there plants code that routine
//! git commands run (the human's on the host included), so it is never
//! routine, however the path is spelled or reached.

use super::Want::*;
use super::*;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(cmds(
        Hold,
        "a redirection into .git (hooks, config, info) plants code routine git commands run",
        &[
            "echo 'make pwn' > .git/hooks/pre-commit",
            "echo x >> .git/hooks/post-checkout",
            "echo '[core] fsmonitor = ./x' >> .git/config",
            "cat notes.txt > .git/config",
            "echo '* diff=evil' > .git/info/attributes",
            "echo x > ./.git/hooks/pre-push",
            "echo x > sub/../.git/hooks/pre-commit",
            "echo x > /w/repo/.git/hooks/pre-commit",
            "echo x > .git//hooks///pre-commit",
            "echo x > .git/./hooks/pre-commit",
            "echo x > .git/hooks/none/../pre-commit",
            "echo x 1> .git/hooks/pre-commit",
            "cargo test 2> .git/hooks/pre-commit",
            "echo x &> .git/hooks/pre-commit",
            "echo x >| .git/hooks/pre-commit",
            "echo x>>.git/hooks/pre-commit",
            "cat <> .git/config",
            "echo x >& .git/hooks/pre-commit",
            "cargo build > .git/hooks/pre-commit",
            "npm test > .git/hooks/pre-commit",
            "echo x > sub/.git/config",
            "echo 'gitdir: /tmp/evil' > .git",
            "echo x > .gitconfig",
            "echo x > .husky/pre-commit",
            "echo x > .githooks/pre-commit",
            "echo 'repos: []' > .pre-commit-config.yaml",
            "echo x > lefthook.yml",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a symlink made earlier in the workspace leads into .git",
        &[
            "echo x > hooks-link/pre-commit",
            "echo x > abs-hooks/commit-msg",
            "echo x > gitdir-link/config",
            "echo x > chain1/hooks/pre-commit",
            "echo x > up/repo/.git/hooks/pre-commit",
            "echo x > docs/hook",
            "cd hooks-link && echo x > pre-commit",
            "git diff --output=hooks-link/pre-commit",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a case change still names git's directory on a case-insensitive file system",
        &[
            "echo x > .GIT/hooks/pre-commit",
            "echo x > .Git/config",
            "echo x > .HUSKY/pre-commit",
        ],
    ));
    all.extend(cmds(
        Hold,
        "an output option writes into .git",
        &[
            "git diff --output=.git/hooks/pre-commit",
            "git diff --output .git/hooks/pre-commit",
            "git log -p --output=.git/hooks/post-merge",
            "git show HEAD --output=.git/hooks/pre-commit",
            "go build -o .git/hooks/pre-commit ./cmd/x",
            "go build -o=.git/hooks/pre-commit ./cmd/x",
            "go test -coverprofile=.git/hooks/pre-commit ./...",
            "tsc --outDir .git/hooks",
            "tsc --outdir=.git/hooks",
            "tsc --outFile .git/hooks/pre-commit",
            "eslint -o .git/hooks/pre-commit src",
            "pytest --junitxml=.git/hooks/pre-commit",
            "vitest run --outputFile=.git/hooks/pre-commit",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a program that may write runs in, or is pointed at, git's directory",
        &[
            "cargo test --target-dir .git/hooks",
            "make -C .git/hooks",
            "cd .git/hooks && make",
            "cd .git && cargo build",
            "cd .git/hooks && echo x > pre-commit",
            "cd .git && echo x > config",
            "cd gitdir-link && npm test",
        ],
    ));
    all.extend(cmds(
        Hold,
        "arguments handed to repository code may be where it writes",
        &[
            "cargo run -- --out .claude/settings.json",
            "npm run build -- .git/hooks",
            "go run ./cmd/x .git/hooks/pre-commit",
            "make .git/hooks/pre-commit",
            "pytest --rootdir=.git",
            "git -C .git/hooks diff --output=pre-commit",
            "cd .git/hooks; git diff --output=pre-commit",
            "echo x > .git/hooks/../../.claude/settings.json",
        ],
    ));
    for (name, dialog) in [
        ("codex patch from inside .git/hooks", codex_patch("pre-commit")),
        ("claude bash from inside .git", claude_bash("echo x > config")),
        ("gemini make from inside .git/hooks", gemini_shell("make")),
    ] {
        let dialog = supervision::Dialog {
            cwd: Some("/w/repo/.git/hooks".into()),
            ..dialog
        };
        all.extend(one(name, dialog, Hold, "relative to a working directory inside .git"));
    }
    let pathless = supervision::Dialog {
        paths: Vec::new(),
        ..claude_edit(".git/hooks/pre-commit")
    };
    all.extend(one(
        "edit without a parsed path",
        pathless,
        Hold,
        "an edit whose target could not be read",
    ));
    all.extend(cmds(
        Hold,
        "a routine first command does not cover a write into .git after it",
        &[
            "git add . && git commit -m x && echo x > .git/hooks/post-commit",
            "cargo fmt && echo x >> .husky/pre-commit",
            "cargo test; echo x > .git/config",
            "cargo test || echo x > .git/config",
            "ls | cat > .git/hooks/pre-commit",
            "cargo test\necho x > .git/hooks/pre-commit",
        ],
    ));
    all.extend(cmds(
        Hold,
        "not an allowlisted program or subcommand: copies, links, config and patches hold",
        &[
            "git config core.hooksPath .hooks",
            "git config --local alias.st '!sh'",
            "git config core.fsmonitor ./x",
            "git -c core.fsmonitor=./x status",
            "git apply fix.patch",
            "git am 0001.patch",
            "git checkout -- .",
            "git update-index --chmod=+x hook",
            "git submodule update --init",
            "sed -i 's/x/y/' .git/config",
            "tee .git/hooks/pre-commit",
            "cp x .git/hooks/pre-commit",
            "mv x .git/hooks/",
            "ln -s ../../x .git/hooks/pre-commit",
            "chmod +x .git/hooks/pre-commit",
            "install -m755 x .git/hooks/pre-commit",
            "touch .git/hooks/pre-commit",
            "dd of=.git/config",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a deletion in .git is never routine (deletion holds by default, and the path is protected)",
        &[
            "rm .git/hooks/pre-commit",
            "rm .git/index.lock",
            "unlink .husky/pre-commit",
        ],
    ));
    all.extend(edits(
        Hold,
        "an edit dialog for a file in git's directory or a hook manager's",
        &[
            ".git/hooks/pre-commit",
            "/w/repo/.git/config",
            ".git/info/exclude",
            "hooks-link/pre-commit",
            "/w/repo/abs-hooks/pre-rebase",
            "chain1/config",
            ".GIT/config",
            "sub/.git/hooks/post-merge",
            ".husky/pre-commit",
            ".gitconfig",
            ".git",
            ".pre-commit-config.yaml",
            "lefthook-local.yml",
            "docs/hook",
        ],
    ));
    all
}
