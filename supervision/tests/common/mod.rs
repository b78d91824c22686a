//! Shared fixtures: a fake file system and dialogs worded like the real CLIs.
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use supervision::{
    AgentOverride, Answer, Answers, Decision, DecisionContext, Dialog, DialogClass, ESCAPE, GitAt, LearnedRule, Link,
    PathResolver, PolicySource, Scope, SupervisionConfig, Verdict, decide_dialog, resolve,
};

pub const WORKTREE: &str = "/w/repo";
pub const HOME: &str = "/home/agents/a1";

/// Symlinks by absolute path (public: the sandbox oracle makes each one for
/// real), directories shaped like git directories (and nested repositories),
/// and small files the judge may read.
pub struct FakeFs {
    pub links: BTreeMap<PathBuf, PathBuf>,
    pub git: BTreeMap<PathBuf, GitAt>,
    pub files: BTreeMap<PathBuf, String>,
}

impl PathResolver for FakeFs {
    fn link(&self, path: &Path) -> Link {
        self.links.get(path).map_or(Link::NotLink, |t| Link::Link(t.clone()))
    }

    fn git_at(&self, dir: &Path) -> GitAt {
        if dir == Path::new(WORKTREE) {
            return GitAt::DotGit;
        }
        self.git.get(dir).copied().unwrap_or(GitAt::Nothing)
    }

    fn read_small(&self, path: &Path) -> Option<String> {
        self.files.get(path).cloned()
    }
}

/// The worktree with symlinks made earlier in the workspace: some escape it,
/// some lead into the agent's home, some into git's directory or a CLI's
/// settings, some stay inside harmlessly.
pub fn fs() -> FakeFs {
    let links = [
        ("/w/repo/escape", "/etc"),
        ("/w/repo/docs/passwd-link", "../../../etc/passwd"),
        ("/w/repo/vendor", "third_party"),
        ("/w/repo/out-link", "/tmp/out"),
        ("/w/repo/home-link", "/home/agents/a1/notes"),
        // Into the agent's home.
        ("/w/repo/h", "/home/agents/a1"),
        ("/w/repo/home-claude", "../../../home/agents/a1/.claude"),
        // Into git's directory.
        ("/w/repo/hooks-link", ".git/hooks"),
        ("/w/repo/abs-hooks", "/w/repo/.git/hooks"),
        ("/w/repo/gitdir-link", "/w/repo/.git"),
        ("/w/repo/chain1", "chain2"),
        ("/w/repo/chain2", "./sub/../.git"),
        ("/w/repo/up", ".."),
        ("/w/repo/docs/hook", "../.git/hooks/pre-commit"),
        // Into a CLI's settings.
        ("/w/repo/cfg", ".claude"),
        ("/w/repo/docs/settings.json", "../.claude/settings.json"),
        ("/w/repo/gem", ".gemini"),
        ("/w/repo/notes/codex.toml", "../.codex/config.toml"),
        // A definition file that is a link to a plain-looking file.
        ("/w/repo/sub2/Makefile", "../mk.txt"),
        ("/w/repo/loop", "loop"),
        // A credential file by another name.
        ("/w/repo/docs/env-link", "../.env"),
    ];
    let git = [
        // A directory the agent built to look like a git directory.
        ("/w/repo/evil", GitAt::Bare),
        ("/w/repo/tools/fake.git", GitAt::Bare),
        // A nested repository (a vendored checkout with its own .git).
        ("/w/repo/third_party/lib", GitAt::DotGit),
    ];
    let files = [
        (
            "/w/repo/Cargo.toml",
            "[package]\nname = \"app\"\nbuild = \"tools/gen.rs\"\n",
        ),
        ("/w/repo/tsconfig.json", "{ \"extends\": \"./config/base.json\" }"),
    ];
    FakeFs {
        links: links
            .iter()
            .map(|(a, b)| (PathBuf::from(a), PathBuf::from(b)))
            .collect(),
        git: git.iter().map(|(d, g)| (PathBuf::from(d), *g)).collect(),
        files: files.iter().map(|(p, t)| (PathBuf::from(p), t.to_string())).collect(),
    }
}

/// The worktree's git config names `tools/hooks` as its `core.hooksPath`.
pub const HOOKS_PATH: &str = "/w/repo/tools/hooks";

/// [`scope`] as if the worktree had no link leading out of it (what a tree
/// walker would find).
pub fn scope_without_escaping_links() -> Scope {
    Scope {
        escaping_links: Vec::new(),
        ..scope()
    }
}

pub fn scope() -> Scope {
    let fs = fs();
    // The node finds these while it fingerprints the workspace.
    let escaping: Vec<PathBuf> = fs
        .links
        .keys()
        .filter(|l| supervision::resolve_path(l, &fs).is_none_or(|t| !t.starts_with(WORKTREE)))
        .cloned()
        .collect();
    Scope::new(WORKTREE)
        .with_agent_home(HOME)
        .with_hook_dirs([PathBuf::from(HOOKS_PATH)])
        .with_escaping_links(escaping)
}

fn strings(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The answers a CLI's template gives: approve once with `approve` (option
/// index, keys), deny with `deny`; `None` option for Escape.
pub fn answers(approve: Option<(usize, &str)>, deny: Option<(Option<usize>, &str)>) -> Option<Answers> {
    Some(Answers {
        approve_once: approve.map(|(i, keys)| Answer {
            option: Some(i),
            keys: keys.into(),
        }),
        deny: deny.map(|(option, keys)| Answer {
            option,
            keys: keys.into(),
        }),
    })
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Claude Code's Bash permission dialog (docs/CLAUDE-CODE.md).
pub fn claude_bash(cmd: &str) -> Dialog {
    Dialog {
        title: "Bash command".into(),
        body: format!("Run the requested command\n{cmd}"),
        question: "Do you want to proceed?".into(),
        options: strings(&[
            "Yes",
            "Yes, and always allow access to /w/repo from this project",
            "Yes, and switch to auto mode · auto mode handles these prompts for you",
            "No",
        ]),
        command: Some(cmd.into()),
        cwd: Some(WORKTREE.into()),
        answers: answers(Some((0, "1")), Some((Some(3), "4"))),
        ..Dialog::default()
    }
}

/// Claude Code's edit dialog.
pub fn claude_edit(path: &str) -> Dialog {
    Dialog {
        title: "Edit file".into(),
        body: path.into(),
        content: "- old line\n+ new line".into(),
        question: format!("Do you want to make this edit to {}?", file_name(path)),
        options: strings(&[
            "Yes",
            "Yes, allow all edits during this session (shift+tab)",
            "No, and tell Claude what to do differently (esc)",
        ]),
        paths: vec![path.into()],
        cwd: Some(WORKTREE.into()),
        answers: answers(Some((0, "1")), Some((Some(2), "3"))),
        ..Dialog::default()
    }
}

/// Claude Code's create-file dialog.
pub fn claude_create(path: &str) -> Dialog {
    Dialog {
        title: "Create file".into(),
        content: "+ fn main() {}".into(),
        question: format!("Do you want to create {}?", file_name(path)),
        ..claude_edit(path)
    }
}

/// Claude Code's AskUserQuestion prompt.
pub fn claude_question(question: &str, options: &[&str]) -> Dialog {
    let mut all = strings(options);
    all.push("Type something.".into());
    Dialog {
        title: "☐ Question".into(),
        body: question.into(),
        options: all,
        answers: answers(None, Some((None, ESCAPE))),
        ..Dialog::default()
    }
}

/// Codex's command approval, as `node_runtime::harness::codex_screen::read`
/// reads Codex 0.163's dialog (the command and its directory from Codex's
/// record of the call).
pub fn codex_cmd(cmd: &str) -> Dialog {
    let question = "Would you like to run the following command?";
    Dialog {
        title: question.into(),
        question: question.into(),
        body: "Environment: local\nReason: Run it?".into(),
        options: vec![
            "Yes, proceed (y)".into(),
            format!("Yes, and don't ask again for commands that start with `{cmd}` (p)"),
            "No, and tell Codex what to do differently (esc)".into(),
        ],
        answers: answers(Some((0, "y")), Some((Some(2), ESCAPE))),
        command: Some(cmd.into()),
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

/// Codex's patch approval.
pub fn codex_patch(path: &str) -> Dialog {
    Dialog {
        title: "Apply patch".into(),
        body: format!("*** Update File: {path}"),
        content: "@@\n-old\n+new".into(),
        question: "Allow Codex to apply these changes?".into(),
        options: strings(&["Yes (y)", "No, provide feedback (esc)"]),
        answers: answers(Some((0, "y")), Some((Some(1), "n"))),
        paths: vec![path.into()],
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

/// Gemini CLI's shell confirmation.
pub fn gemini_shell(cmd: &str) -> Dialog {
    Dialog {
        title: "Shell Command".into(),
        body: cmd.into(),
        question: format!("Allow execution of: '{cmd}'?"),
        options: strings(&["Yes, allow once", "Yes, allow always ...", "No (esc)"]),
        answers: answers(Some((0, "1")), Some((Some(2), "3"))),
        command: Some(cmd.into()),
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

/// Gemini CLI's edit confirmation.
pub fn gemini_edit(path: &str) -> Dialog {
    Dialog {
        title: format!("Edit {}", file_name(path)),
        content: "- a\n+ b".into(),
        question: "Apply this change?".into(),
        options: strings(&[
            "Yes, allow once",
            "Yes, allow always",
            "Modify with external editor",
            "No, suggest changes (esc)",
        ]),
        answers: answers(Some((0, "1")), Some((Some(3), "4"))),
        paths: vec![path.into()],
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

/// aider's inline shell prompt.
pub fn aider_shell(cmd: &str) -> Dialog {
    Dialog {
        body: cmd.into(),
        question: "Run shell command? (Y)es/(N)o/(D)on't ask again [Yes]:".into(),
        options: strings(&["(Y)es", "(N)o", "(D)on't ask again"]),
        answers: answers(Some((0, "y")), Some((Some(1), "n"))),
        command: Some(cmd.into()),
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

/// aider's inline edit prompt.
pub fn aider_edit(path: &str) -> Dialog {
    Dialog {
        question: format!("Allow edits to file {path}? (Y)es/(N)o/(D)on't ask again [Yes]:"),
        options: strings(&["(Y)es", "(N)o", "(D)on't ask again"]),
        answers: answers(Some((0, "y")), Some((Some(1), "n"))),
        paths: vec![path.into()],
        cwd: Some(WORKTREE.into()),
        ..Dialog::default()
    }
}

// ---- deciding ----

/// What a case expects: verdict, class, repo-scoped, source, keys.
pub struct Want(
    pub Verdict,
    pub DialogClass,
    pub bool,
    pub PolicySource,
    pub &'static str,
);

pub fn on() -> (SupervisionConfig, AgentOverride) {
    let config = SupervisionConfig {
        enabled: true,
        ..SupervisionConfig::default()
    };
    let agent = AgentOverride {
        enabled: true,
        ..AgentOverride::default()
    };
    (config, agent)
}

pub fn decide_with(
    dialog: &Dialog,
    config: &SupervisionConfig,
    agent: Option<&AgentOverride>,
    rules: &[LearnedRule],
) -> Decision {
    let policy = resolve(config, agent);
    let scope = scope();
    let fs = fs();
    let ctx = DecisionContext {
        policy: &policy,
        scope: &scope,
        resolver: &fs,
        learned_rules: rules,
    };
    decide_dialog(dialog, &ctx)
}

pub fn decide(dialog: &Dialog) -> Decision {
    let (config, agent) = on();
    decide_with(dialog, &config, Some(&agent), &[])
}

pub fn check(name: &str, got: &Decision, want: &Want) {
    let Want(verdict, class, scoped, source, keys) = want;
    let keys: Vec<String> = if keys.is_empty() {
        Vec::new()
    } else {
        vec![keys.to_string()]
    };
    assert_eq!(
        (got.verdict, got.class, got.repo_scoped, got.source, &got.keys),
        (*verdict, *class, *scoped, *source, &keys),
        "{name}: {}",
        got.reason
    );
    assert!(!got.reason.is_empty(), "{name}: empty reason");
    if got.verdict == Verdict::Hold {
        assert_eq!(got.option, None, "{name}");
    }
}

/// Checks each case decided under `config`, `agent` and `rules`.
pub fn run_with(
    cases: Vec<(&str, Dialog, Want)>,
    config: &SupervisionConfig,
    agent: Option<&AgentOverride>,
    rules: &[LearnedRule],
) {
    for (name, dialog, want) in cases {
        check(name, &decide_with(&dialog, config, agent, rules), &want);
    }
}

/// Checks each case decided with supervision on and shipping defaults.
pub fn run(cases: Vec<(&str, Dialog, Want)>) {
    let (config, agent) = on();
    run_with(cases, &config, Some(&agent), &[]);
}
