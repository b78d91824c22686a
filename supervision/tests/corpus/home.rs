//! `~` and the agent's home: never repo-scoped, for reads, writes and `cd`,
//! however the path is spelled (seed 000).

use supervision::Dialog;

use super::Want::*;
use super::*;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(cmds(
        Hold,
        "a `~` path is never repo-scoped (seed 000): the home holds the CLI's settings, hooks and the instance token",
        &[
            "cat ~/.claude/settings.json",
            "ls ~",
            "ls -la ~/",
            "cd ~ && ls",
            "cd ~/.warren && ls",
            "echo '{}' > ~/.claude/settings.json",
            "echo x >> ~/.bashrc",
            "grep -rn allow ~/.claude",
            "head ~/.gitconfig",
            "git -C ~ status",
            "cargo build --target-dir ~/cache",
            "cat ~/../a1/.claude.json",
            "ls ~/.codex",
            "cat ~/.gemini/settings.json",
            "cat ~/.aider.conf.yml",
            "cat ~/.config/opencode/opencode.json",
            "make -C ~/proj",
            "tail -n 5 ~/.claude/projects/x.jsonl",
            "wc -l ~/.claude/history.jsonl",
            "sed -n 1p ~/.claude/settings.json",
            "cat src/lib.rs > ~/notes.md",
            "cargo test 2> ~/err.log",
            "cat < ~/.claude.json",
            "git diff -- ~/.gitconfig",
        ],
    ));
    all.extend(cmds(
        Hold,
        "`cd` with no directory goes to the home",
        &["cd && cat .claude.json", "cd && ls"],
    ));
    all.extend(cmds(
        Hold,
        "`~user` names another user's home",
        &["cat ~agent/.claude.json", "ls ~root"],
    ));
    all.extend(cmds(
        Hold,
        "a `$HOME` expansion cannot be checked and is refused",
        &[
            "cat \"$HOME/.claude/settings.json\"",
            "echo x > $HOME/.bashrc",
            "ls ${HOME}",
        ],
    ));
    all.extend(cmds(
        Hold,
        "the home's absolute path is the home",
        &[
            "cat /home/agents/a1/.claude.json",
            "ls /home/agents/a1/.warren",
            "echo hi > /home/agents/a1/notes.txt",
            "pytest --basetemp=/home/agents/a1/tmp",
            "cd /home/agents/a1 && ls",
            "cat ../../../home/agents/a1/.claude.json",
            "cat /w/../home/agents/a1/.profile",
        ],
    ));
    all.extend(cmds(
        Hold,
        "a symlink in the worktree into the home is the home",
        &[
            "cat h/.claude/settings.json",
            "echo x > h/.claude/settings.local.json",
            "cat home-link",
            "ls home-claude",
            "cat home-claude/settings.json",
            "cd h && ls",
            "echo x > home-link",
        ],
    ));
    all.extend(edits(
        Hold,
        "an edit in the home is never repo-scoped: the CLI's settings and hooks live there",
        &[
            "~/.claude/settings.json",
            "~/.claude/hooks/pre.sh",
            "~/notes.md",
            "/home/agents/a1/.claude.json",
            "/w/repo/h/.bashrc",
            "/w/repo/home-link",
            "/w/repo/home-claude/settings.json",
            "~/.codex/config.toml",
            "~/.gemini/settings.json",
            "~/.aider.conf.yml",
            "../../home/agents/a1/.profile",
            "$HOME/.claude/settings.json",
        ],
    ));
    for (name, cwd) in [("cwd ~", "~"), ("cwd home", HOME), ("cwd via link", "/w/repo/h")] {
        let dialog = Dialog {
            cwd: Some(cwd.into()),
            ..claude_bash("ls")
        };
        all.extend(one(name, dialog, Hold, "the working directory is the home"));
        let edit = Dialog {
            cwd: Some(cwd.into()),
            ..codex_patch(".claude/settings.json")
        };
        all.extend(one(
            &format!("{name} relative edit"),
            edit,
            Hold,
            "a relative path from the home is in the home",
        ));
    }
    all
}
