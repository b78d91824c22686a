//! Paths whose contents decide what runs later or what is permitted without
//! another dialog: git's own directory and hook managers, every supported CLI's
//! project settings, the node's own files. A write to one of them (an edit
//! dialog, a shell redirection, an output option, a deletion) is never routine,
//! wherever in the worktree it is. Reads stay routine. The table is pure data;
//! [`protected_entry`] matches a path relative to the worktree after symlinks
//! and `..` are resolved, one component at a time, folded so that a case
//! change, an invisible character or a look-alike letter does not hide a name.

use std::borrow::Cow;
use std::path::Path;

/// How an entry names paths. Every kind matches any component of the path
/// (relative to the worktree), so `sub/.git/hooks/x` and `.git` itself count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// A component with exactly this (folded) name, and everything below it.
    Name(&'static str),
    /// A component whose (folded) name starts with this.
    Prefix(&'static str),
    /// A component whose (folded) name ends with this.
    Suffix(&'static str),
    /// A component whose (folded) name contains this (`.config.`).
    Infix(&'static str),
}

impl Pattern {
    /// True when the folded component `part` matches.
    pub(crate) fn matches(self, part: &str) -> bool {
        match self {
            Pattern::Name(n) => part == n,
            Pattern::Prefix(p) => part.starts_with(p),
            Pattern::Suffix(s) => part.len() > s.len() && part.ends_with(s),
            Pattern::Infix(i) => part.len() > i.len() && part.contains(i),
        }
    }
}

/// One protected name: what it is for and why a write there is not routine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protected {
    pub pattern: Pattern,
    /// Whose file it is (git, a CLI, the node).
    pub owner: &'static str,
    /// Why writing it grants standing authority or plants code.
    pub reason: &'static str,
}

const fn entry(pattern: Pattern, owner: &'static str, reason: &'static str) -> Protected {
    Protected { pattern, owner, reason }
}

/// The protected names. Deliberately not here (a write there is routine):
/// `CLAUDE.md`, `CLAUDE.local.md`, `AGENTS.md`, `GEMINI.md`, `CONVENTIONS.md`
/// (instructions the model reads: they grant no permission and run nothing, and
/// every action they might prompt still meets a dialog and this policy; the same
/// words could sit in any README the agent reads); `.gitattributes` (it only
/// selects drivers, which are defined in git config, protected);
/// `.gitmodules` (git ignores `update = !command` from it); `.envrc` (direnv
/// runs it only after `direnv allow`, which is keyed to its content); build
/// files such as `Makefile` or `package.json` (see `runs`: they change what a
/// later run executes, which is decided when that run is asked for).
pub const PROTECTED: &[Protected] = &[
    entry(
        Pattern::Name(".git"),
        "git",
        "git's directory (or a `.git` file naming it): hooks run on commit, merge and checkout; config sets \
         core.fsmonitor (run by `git status`), core.pager, core.editor, core.hooksPath, aliases and \
         diff/merge/filter drivers; all of them run on routine git commands, the human's on the host included",
    ),
    entry(
        Pattern::Name(".gitconfig"),
        "git",
        "git configuration (a repository's config may `include.path` it): the same keys as .git/config",
    ),
    entry(
        Pattern::Prefix(".husky"),
        "husky",
        "husky points core.hooksPath here: these files are the git hooks",
    ),
    entry(
        Pattern::Name(".githooks"),
        "git",
        "the conventional core.hooksPath directory: these files are the git hooks",
    ),
    entry(
        Pattern::Name(".git-hooks"),
        "git",
        "a conventional core.hooksPath directory: these files are the git hooks",
    ),
    entry(
        Pattern::Name(".pre-commit-config.yaml"),
        "pre-commit",
        "the installed pre-commit hook runs what this file lists on every commit",
    ),
    entry(
        Pattern::Prefix("lefthook"),
        "lefthook",
        "lefthook.yml / lefthook-local.yml list the commands the git hooks run",
    ),
    entry(
        Pattern::Prefix(".lefthook"),
        "lefthook",
        "lefthook's config: the commands the git hooks run",
    ),
    entry(
        Pattern::Name(".jj"),
        "Jujutsu",
        "another version-control directory: its config and hooks run on the human's jj commands",
    ),
    entry(
        Pattern::Name(".hg"),
        "Mercurial",
        "another version-control directory: hgrc [hooks] run on the human's hg commands",
    ),
    entry(
        Pattern::Name(".svn"),
        "Subversion",
        "another version-control directory: its working-copy state and config",
    ),
    entry(
        Pattern::Name(".claude"),
        "Claude Code",
        "project settings.json / settings.local.json hold permission allow-lists, hooks, env and apiKeyHelper; \
         hooks/ holds the programs they run; commands/, agents/ and skills/ carry allowed-tools and hooks \
         that apply without a dialog",
    ),
    entry(
        Pattern::Name(".mcp.json"),
        "Claude Code",
        "project MCP servers: programs Claude Code starts, whose tools it may then call",
    ),
    entry(
        Pattern::Name(".claude.json"),
        "Claude Code",
        "Claude Code's own state: MCP servers, allowed tools and per-project trust",
    ),
    entry(
        Pattern::Name(".codex"),
        "Codex",
        "config.toml sets approval_policy, sandbox_mode, mcp_servers and the notify program; rules/ holds \
         command allow rules",
    ),
    entry(
        Pattern::Name(".gemini"),
        "Gemini CLI",
        "settings.json sets allowed tools, auto-accept, MCP servers, hooks and tool discovery commands; \
         commands/ holds custom commands with shell injections",
    ),
    entry(
        Pattern::Prefix(".aider"),
        "aider",
        ".aider.conf.yml can set yes-always, auto-test with test-cmd and lint-cmd (run after every edit); \
         .aider.model.settings.yml and the rest are aider's own",
    ),
    entry(
        Pattern::Name(".env"),
        "aider",
        "aider reads AIDER_* settings (AIDER_YES_ALWAYS) from .env in the repository; dotenv loaders \
         feed it to every later run",
    ),
    entry(
        Pattern::Name("opencode.json"),
        "opencode",
        "opencode's config: permission (bash/edit allow), MCP servers, plugins",
    ),
    entry(
        Pattern::Name("opencode.jsonc"),
        "opencode",
        "opencode's config: permission (bash/edit allow), MCP servers, plugins",
    ),
    entry(
        Pattern::Name(".opencode"),
        "opencode",
        "opencode's project directory: plugins (code it loads at start), agents and commands",
    ),
    entry(
        Pattern::Name(".warren"),
        "warren",
        "the node's own files in a home: the instance token and the CLI settings that carry the node's hooks",
    ),
    entry(
        Pattern::Prefix(".devcontainer"),
        "Dev Containers",
        "devcontainer.json runs initializeCommand on the human's host and postCreate/postStart commands, with \
         mounts and features, when the folder is opened in a container",
    ),
    entry(
        Pattern::Suffix(".code-workspace"),
        "VS Code",
        "a workspace file carries settings and tasks (runOn: folderOpen) that run on the human's host",
    ),
    entry(
        Pattern::Name(".idea"),
        "JetBrains IDEs",
        "run configurations, external tools and startup tasks that run on the human's host",
    ),
    entry(
        Pattern::Name(".zed"),
        "Zed",
        "tasks.json and settings (language servers, formatters) that run programs on the human's host",
    ),
    entry(
        Pattern::Name(".fleet"),
        "JetBrains Fleet",
        "run configurations that run programs on the human's host",
    ),
    entry(
        Pattern::Name(".cursor"),
        "Cursor",
        "rules, MCP servers and hooks of the Cursor agent",
    ),
    entry(
        Pattern::Name(".qwen"),
        "Qwen Code",
        "settings (allowed tools, MCP servers) of another agent CLI",
    ),
    entry(
        Pattern::Name(".roo"),
        "Roo Code",
        "modes, MCP servers and rules of another agent",
    ),
    entry(
        Pattern::Name(".kiro"),
        "Kiro",
        "hooks, steering and MCP settings of another agent",
    ),
    entry(
        Pattern::Name(".amazonq"),
        "Amazon Q",
        "MCP servers and rules of another agent CLI",
    ),
    entry(
        Pattern::Name(".continue"),
        "Continue",
        "config (MCP servers, commands) of another agent",
    ),
    entry(
        Pattern::Name(".windsurf"),
        "Windsurf",
        "rules, workflows and MCP settings of another agent",
    ),
    entry(
        Pattern::Name(".opencode.json"),
        "opencode",
        "opencode's config: permission (bash/edit allow), MCP servers, plugins",
    ),
    entry(
        Pattern::Name("crush.json"),
        "Crush",
        "permissions (allowed tools), MCP servers and LSP programs of another agent CLI",
    ),
    entry(
        Pattern::Name(".crush.json"),
        "Crush",
        "permissions (allowed tools), MCP servers and LSP programs of another agent CLI",
    ),
    entry(
        Pattern::Name(".npmrc"),
        "npm",
        "script-shell, node-options and registry credentials: they apply to the human's next npm on the host",
    ),
    entry(
        Pattern::Name(".cargo"),
        "cargo",
        "config.toml sets target runners, rustc wrappers, aliases and env for the human's next cargo on the \
         host",
    ),
    entry(
        Pattern::Name(".yarnrc.yml"),
        "yarn",
        "yarnPath names the program that runs as yarn for the human; plugins are code",
    ),
    entry(
        Pattern::Name(".yarnrc"),
        "yarn",
        "yarn-path names the program that runs as yarn for the human",
    ),
    entry(
        Pattern::Name(".pnpmfile.cjs"),
        "pnpm",
        "hooks pnpm runs on the human's next install",
    ),
    entry(
        Pattern::Name("mise.toml"),
        "mise",
        "tasks, hooks and env directives mise runs in this directory",
    ),
    entry(
        Pattern::Name(".mise.toml"),
        "mise",
        "tasks, hooks and env directives mise runs in this directory",
    ),
    entry(
        Pattern::Name(".vscode"),
        "VS Code",
        "tasks.json (runOn: folderOpen) and settings such as git.path or terminal env run programs on the \
         human's host when the workspace is opened there, outside the container",
    ),
];

/// A directory the worktree's git config names in `core.hooksPath`.
pub const HOOKS_PATH: Protected = entry(
    Pattern::Name(""),
    "git",
    "the worktree's core.hooksPath: git runs these files as hooks on commit, merge and checkout",
);

/// A directory shaped like a git directory that is not the worktree's own.
pub const GIT_SHAPED: Protected = entry(
    Pattern::Name(""),
    "git",
    "a directory shaped like a git directory (HEAD, objects, refs): git run there or pointed at it with -C \
     uses its config (core.fsmonitor, aliases) and hooks",
);

/// Folds one path component for matching: invisible characters dropped,
/// lower-cased, common Cyrillic, Greek and full-width look-alikes mapped to the
/// ASCII letters they imitate, trailing dots and spaces trimmed (names that
/// case-insensitive or Windows file systems treat as equal, and names a human
/// would read as equal, fold together).
pub(crate) fn fold(part: &str) -> Cow<'_, str> {
    // Plain lower-case ASCII without a trailing dot or space is its own fold.
    let plain = part
        .bytes()
        .all(|b| b.is_ascii() && !b.is_ascii_uppercase() && !b.is_ascii_control());
    if plain {
        return Cow::Borrowed(part.trim_end_matches(['.', ' ']));
    }
    let mut out = String::with_capacity(part.len());
    for c in part.chars().filter(|c| !crate::text::is_invisible(*c)) {
        for c in c.to_lowercase() {
            out.push(lookalike(c));
        }
    }
    let kept = out.trim_end_matches(['.', ' ']).len();
    out.truncate(kept);
    Cow::Owned(out)
}

fn lookalike(c: char) -> char {
    match c {
        '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
        '\u{2024}' | '\u{FE52}' | '\u{3002}' => '.',
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE63}' => '-',
        '\u{2044}' | '\u{2215}' | '\u{29F8}' => '/',
        'а' | 'α' => 'a',
        'с' | 'ϲ' => 'c',
        'ԁ' => 'd',
        'е' | 'ε' => 'e',
        'ɡ' => 'g',
        'һ' => 'h',
        'і' | 'ı' | 'ι' | 'ӏ' => 'i',
        'ј' => 'j',
        'κ' | 'к' => 'k',
        'м' => 'm',
        'η' | 'п' => 'n',
        'о' | 'ο' | 'σ' => 'o',
        'р' | 'ρ' => 'p',
        'ԛ' => 'q',
        'г' => 'r',
        'ѕ' => 's',
        'т' | 'τ' => 't',
        'υ' => 'u',
        'ν' | 'ѵ' => 'v',
        'ԝ' | 'ω' => 'w',
        'х' | 'χ' => 'x',
        'у' | 'γ' => 'y',
        other => other,
    }
}

/// The entry `rel` (a path relative to the worktree, already resolved) falls
/// under, if any.
pub fn protected_entry(rel: &Path) -> Option<&'static Protected> {
    let index = index();
    folded_parts(rel).find_map(|part| {
        index
            .names
            .get(part.as_ref())
            .copied()
            .or_else(|| index.others.iter().copied().find(|p| p.pattern.matches(&part)))
    })
}

/// The table split for lookups: exact names in a map, the rest in order.
struct Index {
    names: std::collections::HashMap<&'static str, &'static Protected>,
    others: Vec<&'static Protected>,
}

fn index() -> &'static Index {
    static INDEX: std::sync::OnceLock<Index> = std::sync::OnceLock::new();
    INDEX.get_or_init(|| {
        let mut names = std::collections::HashMap::new();
        let mut others = Vec::new();
        for p in PROTECTED {
            match p.pattern {
                // The first entry of a name wins, as in a scan of the table.
                Pattern::Name(n) => {
                    names.entry(n).or_insert(p);
                }
                _ => others.push(p),
            }
        }
        Index { names, others }
    })
}

/// The folded components of `rel`; a component with a slash look-alike
/// (`.git⁄hooks`) is split where a human reads a slash. A plain lower-case
/// ASCII component is lent, not copied.
pub(crate) fn folded_parts(rel: &Path) -> impl Iterator<Item = Cow<'_, str>> + '_ {
    // A plain relative path (what the judge passes: a resolved path less
    // the worktree) is its components joined by slashes: split as text.
    let text = rel
        .to_str()
        .filter(|t| cfg!(unix) && !t.starts_with('/') && crate::walk::plain(t.as_bytes()));
    let split = text
        .into_iter()
        .flat_map(crate::walk::slash_pieces)
        .filter(|t| !t.is_empty());
    let general = rel
        .components()
        .take_while(move |_| text.is_none())
        .map(|c| match c.as_os_str().to_str() {
            Some(text) => Cow::Borrowed(text),
            None => Cow::Owned(c.as_os_str().to_string_lossy().into_owned()),
        });
    split.map(Cow::Borrowed).chain(general).flat_map(|part| {
        let folded = match part {
            Cow::Borrowed(text) => fold(text),
            Cow::Owned(text) => Cow::Owned(fold(&text).into_owned()),
        };
        if !folded.contains('/') {
            return Parts::One(Some(folded));
        }
        let split: Vec<Cow<'_, str>> = folded
            .split('/')
            .map(|p| Cow::Owned(p.trim_end_matches(['.', ' ']).to_string()))
            .collect();
        Parts::Split(split.into_iter())
    })
}

/// What one component folds to: itself, or the pieces a slash look-alike splits it into.
enum Parts<'a> {
    One(Option<Cow<'a, str>>),
    Split(std::vec::IntoIter<Cow<'a, str>>),
}

impl<'a> Iterator for Parts<'a> {
    type Item = Cow<'a, str>;

    fn next(&mut self) -> Option<Cow<'a, str>> {
        match self {
            Parts::One(one) => one.take(),
            Parts::Split(many) => many.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn names_fold() {
        assert_eq!(fold(".GIT"), ".git");
        assert_eq!(fold(".g\u{200C}it"), ".git");
        assert_eq!(fold(".git. "), ".git");
        assert_eq!(fold(".gіt"), ".git");
        assert_eq!(fold("．ｃｌａｕｄｅ"), ".claude");
        assert_eq!(fold("src"), "src");
        assert!(protected_entry(Path::new(".git\u{2044}hooks")).is_some());
    }

    #[test]
    fn parts_split_as_text_agree_with_components() {
        for rel in [
            "",
            "a",
            "a/b",
            "./a",
            "a/./b",
            "a//b",
            "a/",
            "/a/b",
            "a/../b",
            "..",
            ".GIT/x",
            "x/.g\u{200C}it. /y",
            ".git\u{2044}hooks/x",
            "./",
            "/",
            "src/module_1/file_1.rs",
        ] {
            let want: Vec<String> = Path::new(rel)
                .components()
                .flat_map(|c| {
                    let folded = fold(&c.as_os_str().to_string_lossy()).into_owned();
                    if !folded.contains('/') {
                        return vec![folded];
                    }
                    folded
                        .split('/')
                        .map(|p| p.trim_end_matches(['.', ' ']).to_string())
                        .collect()
                })
                .collect();
            let got: Vec<String> = folded_parts(Path::new(rel)).map(Cow::into_owned).collect();
            assert_eq!(got, want, "{rel:?}");
        }
    }

    #[test]
    fn entries() {
        let hit = |p: &str| protected_entry(Path::new(p)).map(|e| e.owner);
        assert_eq!(hit(".git/hooks/pre-commit"), Some("git"));
        assert_eq!(hit(".git"), Some("git"));
        assert_eq!(hit("sub/.git/config"), Some("git"));
        assert_eq!(hit(".claude/settings.json"), Some("Claude Code"));
        assert_eq!(hit(".Claude/settings.local.json"), Some("Claude Code"));
        assert_eq!(hit(".mcp.json"), Some("Claude Code"));
        assert_eq!(hit(".codex/config.toml"), Some("Codex"));
        assert_eq!(hit(".gemini/settings.json"), Some("Gemini CLI"));
        assert_eq!(hit(".aider.conf.yml"), Some("aider"));
        assert_eq!(hit("opencode.json"), Some("opencode"));
        assert_eq!(hit(".opencode/plugin/x.ts"), Some("opencode"));
        assert_eq!(hit(".warren/instance.token"), Some("warren"));
        assert_eq!(hit(".husky/pre-commit"), Some("husky"));
        assert_eq!(hit("CLAUDE.md"), None);
        assert_eq!(hit("AGENTS.md"), None);
        assert_eq!(hit("src/git/mod.rs"), None);
        assert_eq!(hit(".github/workflows/ci.yml"), None);
        assert_eq!(hit(".gitignore"), None);
        assert_eq!(hit("docs/claude.md"), None);
    }
}
