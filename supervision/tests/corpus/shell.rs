//! Quoting, escapes, Unicode look-alikes and compound commands: the shell's
//! reading of a command decides, not its look.

use super::Want::*;
use super::*;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(cmds(
        Hold,
        "quotes and escapes are removed before the path is checked",
        &[
            "echo x > '.git/hooks/pre-commit'",
            "echo x >\".claude/settings.json\"",
            "echo x > .claude/'settings.json'",
            "echo x > .cl\"au\"de/settings.json",
            "echo x > .claude\\/settings.json",
            "echo x > .g\\it/hooks/pre-commit",
            "echo x > \".git\"/hooks/pre-commit",
            "echo x > \\.git/config",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a construct the lexer cannot see through is refused",
        &[
            "echo x > .git/hooks/pre-commit # harmless",
            "echo x > $(echo .git)/config",
            "echo x > `echo .git`/config",
            "echo x > .git/hooks/{pre-commit,post-commit}",
            "echo x > .git/hooks/pre-*",
            "(echo x > .git/config)",
            "{ echo x; } > .git/config",
            "cat <<EOF > .git/hooks/pre-commit\nmake\nEOF",
            "echo x > >(cat > .git/config)",
            "GIT_DIR=/tmp/x git status",
            "env GIT_CONFIG_GLOBAL=x git status",
            "echo x | xargs -I{} cp {} .git/hooks/",
        ],
    ));
    all.extend(cmds(
        Hold,
        "`>&` duplicates a descriptor only when its whole word is a number: otherwise bash writes the file \
         (found by comparing the grammar with a bash parser)",
        &[
            "echo x >&1/../.git/hooks/pre-commit",
            "echo x 2>&1/../.claude/settings.json",
            "cargo test >&1/../.git/config",
        ],
    ));
    all.extend(cmds(
        Hold,
        "Unicode: a look-alike or invisible character never passes as the plain thing",
        &[
            "\u{FF45}cho x > .git/hooks/pre-commit",
            "\u{0435}cho x > notes.txt",
            "g\u{0456}t status",
            "echo x > .g\u{0456}t/hooks/pre-commit",
            "echo x > \u{FF0E}git/hooks/pre-commit",
            "echo x > .git\u{2044}hooks",
            "echo x > .g\u{200C}it/hooks/pre-commit",
            "echo x > .git/hooks/pre-commit\u{200B}",
            "echo x >\u{00A0}.git/config",
            "echo x > .claude/\u{202E}nosj.sgnittes",
            "echo x > .CL\u{0410}UDE/settings.json",
        ],
    ));
    all.extend(cmds(
        Hold,
        "each segment of a compound command must be routine on its own",
        &[
            "cargo test && cp .git/config /tmp/c",
            "cargo test && echo x > /tmp/out",
            "ls && cat ~/.claude.json",
            "git status; cat h/.claude.json",
            "cargo build | tee .git/hooks/pre-commit",
            "cargo test & echo x > .git/config",
            "echo ok && echo x > hooks-link/pre-push",
            "cd sub && cd .. && echo x > .git/config",
            "cd src && echo x > ../.claude/settings.json",
            "cd docs && echo x > settings.json",
        ],
    ));
    all.extend(cmds(
        Approve,
        "data that merely mentions a protected path is not a write to it",
        &[
            "echo x \\> .git/hooks/pre-commit",
            "echo '> .git/hooks/pre-commit'",
            "grep -n 'echo x > .git/hooks' src/lib.rs",
            "rg -n '~/.claude' docs",
            "echo \"~/.claude/settings.json\"",
            "cat '~'",
        ],
    ));
    all.extend(cmds(
        Approve,
        "a full-width tilde is an ordinary file name in the worktree, not the home: reading it is harmless",
        &["cat \u{FF5E}/.claude.json"],
    ));
    all.extend(cmds(
        Hold,
        "paths that leave the worktree, directly or through a symlink",
        &[
            "echo x > escape/cron.d/x",
            "cat escape/shadow",
            "echo x > out-link",
            "cat docs/passwd-link",
            "echo x > ../other/.git/config",
            "cat loop/x",
            "echo x > /tmp/.claude/settings.json",
            "cat /w/repo2/x",
        ],
    ));
    all
}
