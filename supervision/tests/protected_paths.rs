//! The explicit cases: `~` and the agent's home are never repo-scoped;
//! git's directory and every CLI's settings are never written routinely; the
//! repository-code decision (a run after the agent changed what it runs holds),
//! including the loop the node closes with `Decision::writes`.

mod common;

use std::path::PathBuf;

use common::*;
use proptest::prelude::*;
use supervision::DialogClass::*;
use supervision::PolicySource::*;
use supervision::Verdict::*;
use supervision::{
    Decision, DecisionContext, Dialog, PROTECTED, Pattern, Scope, Verdict, decide_dialog, protected_entry, resolve,
};

fn decide_in(dialog: &Dialog, scope: &Scope) -> Decision {
    let (config, agent) = on();
    let policy = resolve(&config, Some(&agent));
    let fs = fs();
    decide_dialog(
        dialog,
        &DecisionContext {
            policy: &policy,
            scope,
            resolver: &fs,
            learned_rules: &[],
        },
    )
}

#[test]
fn tilde_is_never_repo_scoped() {
    // Reads, writes and `cd`, in every CLI's wording, with a home to expand to.
    for cmd in [
        "cat ~/notes.md",
        "ls ~",
        "echo x > ~/notes.md",
        "cd ~ && ls",
        "cd && ls",
        "cd ~/proj && cargo test",
    ] {
        for d in [claude_bash(cmd), codex_cmd(cmd), gemini_shell(cmd), aider_shell(cmd)] {
            let got = decide(&d);
            assert_eq!((got.verdict, got.repo_scoped), (Hold, false), "{cmd}: {}", got.reason);
            assert_eq!(got.source, NotRepoScoped, "{cmd}");
            assert!(got.reason.contains("agent's home"), "{cmd}: {}", got.reason);
        }
    }
    for d in [
        claude_edit("~/notes.md"),
        codex_patch("~/x.rs"),
        gemini_edit("~/a"),
        aider_edit("~/b"),
    ] {
        check("edit ~", &decide(&d), &Want(Hold, FileWrite, false, NotRepoScoped, ""));
    }
    let scope = scope();
    let cwd = std::path::Path::new(WORKTREE);
    assert!(!scope.contains("~", cwd, &fs()));
    assert!(!scope.contains("~/notes.md", cwd, &fs()));
    assert!(!Scope::new(WORKTREE).contains("~/notes.md", cwd, &fs()));
}

#[test]
fn agent_home_is_never_repo_scoped() {
    // By its absolute path, by climbing, through a symlink, as the cwd.
    for cmd in [
        "cat /home/agents/a1/.claude.json",
        "cat ../../../home/agents/a1/.warren/instance.token",
        "cat h/.claude/settings.json",
        "cat home-link",
    ] {
        let got = decide(&claude_bash(cmd));
        assert_eq!((got.verdict, got.repo_scoped), (Hold, false), "{cmd}: {}", got.reason);
    }
    let in_home = Dialog {
        cwd: Some(HOME.into()),
        ..claude_bash("ls")
    };
    check(
        "cwd home",
        &decide(&in_home),
        &Want(Hold, CommandExec, false, NotRepoScoped, ""),
    );
    check(
        "edit via link",
        &decide(&claude_edit("/w/repo/home-claude/settings.json")),
        &Want(Hold, FileWrite, false, NotRepoScoped, ""),
    );
}

#[test]
fn git_directory_is_never_written_routinely() {
    for path in [
        ".git/hooks/pre-commit",
        ".git/config",
        "sub/.git/hooks/post-merge",
        "hooks-link/pre-commit",
        "gitdir-link/config",
        ".GIT/config",
        ".husky/pre-commit",
    ] {
        for d in [
            claude_edit(path),
            codex_patch(path),
            gemini_edit(path),
            aider_edit(path),
        ] {
            let got = decide(&d);
            check(path, &got, &Want(Hold, FileWrite, false, NotRepoScoped, ""));
            assert!(got.reason.contains("protected path"), "{path}: {}", got.reason);
        }
        let got = decide(&claude_bash(&format!("echo x > {path}")));
        assert_eq!((got.verdict, got.repo_scoped), (Hold, false), "{path}");
    }
    // Reading it stays routine.
    for cmd in ["cat .git/config", "ls .git/hooks", "cat hooks-link/pre-commit.sample"] {
        check(
            cmd,
            &decide(&claude_bash(cmd)),
            &Want(Approve, CommandExec, true, ClassPolicy, "1"),
        );
    }
}

/// A path the entry protects, spelled plainly.
fn sample(pattern: Pattern) -> String {
    match pattern {
        Pattern::Name(n) => format!("{n}/x"),
        Pattern::Prefix(p) => format!("{p}.yml"),
        Pattern::Suffix(s) => format!("x{s}"),
        Pattern::Infix(i) => format!("x{i}js"),
    }
}

#[test]
fn every_protected_entry_is_held_for_every_cli() {
    for entry in PROTECTED {
        assert!(!entry.reason.is_empty() && !entry.owner.is_empty());
        let path = sample(entry.pattern);
        assert_eq!(protected_entry(std::path::Path::new(&path)), Some(entry), "{path}");
        let dialogs = [
            claude_edit(&path),
            claude_create(&path),
            codex_patch(&path),
            gemini_edit(&path),
            aider_edit(&path),
            claude_bash(&format!("echo x > {path}")),
            codex_cmd(&format!("echo x >> {path}")),
            gemini_shell(&format!("cat a > {path}")),
            aider_shell(&format!("git diff --output={path}")),
        ];
        for d in dialogs {
            let got = decide(&d);
            assert_ne!(got.verdict, Approve, "{path}: {d:?}");
            assert!(!got.repo_scoped, "{path}");
        }
    }
}

#[test]
fn cli_settings_are_never_written_routinely() {
    for path in [
        ".claude/settings.json",
        ".claude/settings.local.json",
        ".claude/hooks/guard.sh",
        ".mcp.json",
        ".codex/config.toml",
        ".gemini/settings.json",
        ".aider.conf.yml",
        "opencode.json",
        ".opencode/plugin/x.ts",
        ".warren/claude-settings.json",
        "cfg/settings.json",
        "docs/settings.json",
    ] {
        let got = decide(&claude_edit(path));
        check(path, &got, &Want(Hold, FileWrite, false, NotRepoScoped, ""));
        check(
            path,
            &decide(&claude_bash(&format!("cat {path}"))),
            &Want(Approve, CommandExec, true, ClassPolicy, "1"),
        );
    }
    // Instructions files are not settings: editing them stays routine.
    for path in ["CLAUDE.md", "AGENTS.md", "GEMINI.md", "CONVENTIONS.md"] {
        check(
            path,
            &decide(&claude_edit(path)),
            &Want(Approve, FileWrite, true, ClassPolicy, "1"),
        );
    }
}

#[test]
fn repository_code_decision() {
    // (pytest walks the tree: no link may lead out of it here.)
    let plain = scope_without_escaping_links();
    let changed = |paths: &[&str]| {
        scope_without_escaping_links().with_changed(paths.iter().map(|p| PathBuf::from(WORKTREE).join(p)))
    };
    // Nothing changed: running repository code is routine.
    for cmd in ["make", "npm test", "cargo build", "pytest", "git commit -m x"] {
        assert_eq!(decide_in(&claude_bash(cmd), &plain).verdict, Approve, "{cmd}");
    }
    // After the agent changed what it runs: held, with the file named.
    let got = decide_in(&claude_bash("make"), &changed(&["Makefile"]));
    check(
        "make after Makefile",
        &got,
        &Want(Hold, CommandExec, false, NotRepoScoped, ""),
    );
    assert!(got.reason.contains("Makefile"), "{}", got.reason);
    let got = decide_in(&claude_bash("npm run build"), &changed(&["package.json"]));
    assert_eq!(got.verdict, Hold, "{}", got.reason);
    let got = decide_in(&claude_bash("cargo check"), &changed(&["build.rs"]));
    assert_eq!(got.verdict, Hold, "{}", got.reason);
    // Sources and tests are not definitions.
    let got = decide_in(&claude_bash("cargo test"), &changed(&["src/lib.rs", "tests/api.rs"]));
    assert_eq!(got.verdict, Approve, "{}", got.reason);
    // A learned rule cannot lift it: the command is no longer repo-scoped.
    let (config, mut agent) = on();
    agent.classes.insert(CommandExec, supervision::Action::Hold);
    let policy = resolve(&config, Some(&agent));
    let scope = changed(&["Makefile"]);
    let rules = [supervision::LearnedRule::confirmed("make *")];
    let fs = fs();
    let ctx = DecisionContext {
        policy: &policy,
        scope: &scope,
        resolver: &fs,
        learned_rules: &rules,
    };
    assert_eq!(decide_dialog(&claude_bash("make test"), &ctx).verdict, Hold);
}

#[test]
fn decisions_report_what_they_write_and_the_node_closes_the_loop() {
    // The node's loop: after each approval it adds `decision.writes` to the
    // conversation's changed set and passes it in the next scope.
    let mut changed: Vec<PathBuf> = Vec::new();
    let mut step = |d: Dialog| {
        let got = decide_in(&d, &scope().with_changed(changed.clone()));
        if got.verdict == Verdict::Approve {
            changed.extend(got.writes.iter().cloned());
        }
        got
    };
    let edit = step(claude_edit("Makefile"));
    assert_eq!(edit.verdict, Approve);
    assert_eq!(edit.writes, vec![PathBuf::from("/w/repo/Makefile")]);
    let test = step(claude_bash("cargo test > target/test.log"));
    assert_eq!(test.verdict, Approve);
    assert_eq!(test.writes, vec![PathBuf::from("/w/repo/target/test.log")]);
    let make = step(claude_bash("make"));
    assert_eq!(make.verdict, Hold, "{}", make.reason);
    // The hold names the changed definition; a human approves the run, and
    // the node drops it from the changed set: the next run is routine again.
    assert_eq!(make.redefined, vec![PathBuf::from("/w/repo/Makefile")]);
    changed.retain(|p| !make.redefined.contains(p));
    assert_eq!(
        decide_in(&claude_bash("make"), &scope().with_changed(changed.clone())).verdict,
        Approve
    );
    // A same-command write is not in the changed set, so not in `redefined`.
    let both = decide(&claude_bash("echo x > Makefile && make"));
    assert_eq!((both.verdict, both.redefined.len()), (Hold, 0));
    let other = decide_in(&claude_bash("cat /etc/passwd"), &scope().with_changed(changed.clone()));
    assert!(other.redefined.is_empty());
    // Writes are reported resolved: through a symlink, `..` and output options.
    let got = decide_in(
        &claude_bash("echo x > sub2/Makefile && git diff --output=docs/../d.diff && tsc --outDir dist"),
        &scope_without_escaping_links(),
    );
    assert_eq!(got.verdict, Approve, "{}", got.reason);
    assert_eq!(
        got.writes,
        ["/w/repo/mk.txt", "/w/repo/d.diff", "/w/repo/dist"]
            .map(PathBuf::from)
            .to_vec()
    );
}

fn spelling() -> impl Strategy<Value = (String, String)> {
    let entry = proptest::sample::select(PROTECTED.to_vec());
    let how = 0usize..6;
    (entry, how).prop_map(|(e, how)| {
        let base = sample(e.pattern);
        let spelled = match how {
            0 => base.clone(),
            1 => format!("./{base}"),
            2 => format!("sub/../{base}"),
            3 => format!("/w/repo/{base}"),
            4 => base.to_uppercase(),
            _ => format!("'{base}'"),
        };
        (base, spelled)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn no_spelling_of_a_protected_path_is_written_routinely(
        (base, spelled) in spelling(),
        op in proptest::sample::select(vec![">", ">>", "&>", ">|", "1>", "2>"]),
        pre in proptest::sample::select(vec!["", "cargo test && ", "cd sub && cd .. && ", "ls; "]),
    ) {
        let cmd = format!("{pre}echo x {op} {spelled}");
        let got = decide(&claude_bash(&cmd));
        prop_assert_ne!(got.verdict, Approve, "{} ({})", cmd, base);
        let edit = decide(&codex_patch(spelled.trim_matches('\'')));
        prop_assert_ne!(edit.verdict, Approve, "{}", spelled);
    }
}
