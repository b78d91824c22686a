//! The world the corpus describes, built for real: the agent's worktree at
//! `/w/repo` (a small git repository that is also a Cargo workspace, an npm
//! package, a Go module, a pytest suite and a Makefile project, holding
//! every file the corpus's routine commands name and every symlink of
//! `common::fs()`), the agent's home at `/home/agents/a1` with the CLI's
//! settings and the instance token, and secrets outside both (the node's root
//! key, an admin token, another agent's worktree, a file in `/etc`). Every
//! secret holds a unique marker, so a copy of it is found wherever it lands.
//! The template is built once per test run on the host; the sandbox copies
//! it for each command.

use std::fs;
use std::io;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{HOME, WORKTREE, fs as corpus_fs};

/// The text every secret's marker starts with.
pub const MARKER: &str = "oracle-canary-";

/// A secret: where it lives in the sandbox and its marker.
#[derive(Debug, Clone)]
pub struct Canary {
    pub path: PathBuf,
    pub marker: String,
    /// A directory: any path under it counts.
    pub dir: bool,
}

/// The instance token's value (in the sandbox's `WARREN_TOKEN` too).
pub fn token_marker() -> String {
    format!("{MARKER}instance-token")
}

/// Every secret of the world, by sandbox path.
pub fn canaries() -> Vec<Canary> {
    let file = |path: &str, name: &str| Canary {
        path: PathBuf::from(path),
        marker: format!("{MARKER}{name}"),
        dir: false,
    };
    vec![
        file("/w/root.key", "root-key"),
        file("/w/admin.token", "admin-token"),
        Canary {
            path: PathBuf::from("/w/other"),
            marker: format!("{MARKER}other-worktree"),
            dir: true,
        },
        file("/etc/warren-canary", "etc"),
        file(&format!("{HOME}/.claude/settings.json"), "cli-settings"),
        file(&format!("{HOME}/.claude.json"), "cli-state"),
        Canary {
            path: PathBuf::from(format!("{HOME}/.warren/instance.token")),
            marker: token_marker(),
            dir: false,
        },
        file(&format!("{HOME}/notes"), "home-notes"),
    ]
}

/// The built template: `root/{w,home,tmp}` mirror the sandbox's `/w`,
/// `/home` and `/tmp`; `etc_canary` is bound at `/etc/warren-canary`.
pub struct World {
    pub root: PathBuf,
    pub etc_canary: PathBuf,
}

/// Files of the worktree: `(path relative to it, content, executable)`.
const FILES: &[(&str, &str, bool)] = &[
    (
        "Cargo.toml",
        "[package]\nname = \"fixture\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[[bin]]\nname = \"warren\"\npath = \"src/main.rs\"\n\n[workspace]\nmembers = [\"core\"]\n",
        false,
    ),
    (
        "src/lib.rs",
        "//! The fixture library. TODO: nothing; no unsafe code here.\n// A comment that mentions echo x > .git/hooks as text.\n\npub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n",
        false,
    ),
    (
        "src/main.rs",
        "fn main() {\n    let help = std::env::args().any(|a| a == \"--help\");\n    println!(\"{}\", if help { \"usage: warren\" } else { \"warren\" });\n}\n",
        false,
    ),
    ("src/claude/README.md", "A source directory named like a CLI.\n", false),
    (
        "tests/api.rs",
        "#[test]\nfn api() {\n    assert_eq!(fixture::add(1, 2), 3);\n}\n",
        false,
    ),
    ("tests/test_api.py", "def test_api():\n    assert 1 + 2 == 3\n", false),
    (
        "core/Cargo.toml",
        "[package]\nname = \"core\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\nname = \"fixture_core\"\n",
        false,
    ),
    (
        "core/src/lib.rs",
        "//! The workspace member.\n\n#[test]\nfn core_works() {\n    println!(\"core\");\n}\n",
        false,
    ),
    (
        "package.json",
        "{\n  \"name\": \"fixture\",\n  \"version\": \"1.0.0\",\n  \"private\": true,\n  \"scripts\": {\n    \"test\": \"node test.js\",\n    \"build\": \"node build.js\",\n    \"lint\": \"node test.js\"\n  }\n}\n",
        false,
    ),
    (
        "test.js",
        "const assert = require('assert');\nassert.strictEqual(1 + 1, 2);\nconsole.log('ok');\n",
        false,
    ),
    (
        "build.js",
        "const fs = require('fs');\nfs.mkdirSync('dist', { recursive: true });\nfs.writeFileSync('dist/out.txt', 'built\\n');\n",
        false,
    ),
    (
        "Makefile",
        "all: build\n\nbuild:\n\techo building\n\ntest:\n\techo testing\n",
        false,
    ),
    ("sub/Makefile", "test:\n\techo sub testing\n", false),
    ("sub/README.md", "A subdirectory.\n", false),
    ("mk.txt", "all:\n\techo mk\n", false),
    ("go.mod", "module example.com/fixture\n\ngo 1.19\n", false),
    (
        "calc/calc.go",
        "package calc\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
        false,
    ),
    (
        "calc/calc_test.go",
        "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
        false,
    ),
    (
        "cmd/tool/main.go",
        "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/fixture/calc\"\n)\n\nfunc main() { fmt.Println(calc.Add(1, 2)) }\n",
        false,
    ),
    ("README.md", "# fixture\n\nA small repository for the oracle.\n", false),
    ("CLAUDE.md", "Instructions.\n", false),
    ("docs/guide.md", "A guide. It mentions ~/.claude as text.\n", false),
    ("third_party/lib.c", "int lib(void) { return 0; }\n", false),
    ("notes/todo.md", "- a note\n", false),
    (
        ".gitignore",
        "/target\n/node_modules\n/dist\n/bin\n__pycache__/\n.pytest_cache/\n",
        false,
    ),
    (".github/workflows/ci.yml", "on: push\n", false),
    (".claude/settings.json", "{\"permissions\": {}}\n", false),
    (".claude/hooks/check.js", "console.log('check');\n", false),
    (".codex/config.toml", "model = \"x\"\n", false),
    (".gemini/settings.json", "{}\n", false),
    (".aider.conf.yml", "model: x\n", false),
    (".mcp.json", "{\"mcpServers\": {}}\n", false),
    ("opencode.json", "{}\n", false),
    ("~", "A file named tilde.\n", false),
    ("\u{FF5E}/.claude.json", "{}\n", false),
    // For the self-test: a script, a NUL-separated list naming a file
    // outside, and a git directory under another name whose fsmonitor runs
    // a shell command (the issue's `git -C evil status`).
    ("run.sh", "#!/bin/sh\necho ran\n", true),
    ("list", "src/lib.rs\0../root.key\0", false),
    ("evil/HEAD", "ref: refs/heads/main\n", false),
    (
        "evil/config",
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n\tfsmonitor = cat ../root.key >/dev/null; false\n",
        false,
    ),
];

/// Directories the corpus names that hold nothing tracked.
const DIRS: &[&str] = &["evil/objects", "evil/refs/heads", "sub2", "src/git", "config"];

/// Builds the template under `root` (replacing any earlier one).
pub fn build(root: &Path) -> io::Result<World> {
    if root.exists() {
        fs::remove_dir_all(root)?;
    }
    let w = root.join("w");
    let repo = root.join(WORKTREE.trim_start_matches('/'));
    fs::create_dir_all(&repo)?;
    for (rel, body, exec) in FILES {
        write(&repo.join(rel), body, *exec)?;
    }
    for d in DIRS {
        fs::create_dir_all(repo.join(d))?;
    }
    git_repo(&repo)?;
    // Every symlink the corpus's fake file system knows, made for real.
    for (link, target) in corpus_fs().links.iter() {
        let at = root.join(link.strip_prefix("/").unwrap_or(link));
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent)?;
        }
        symlink(target, &at)?;
    }
    let canaries = canaries();
    let etc_canary = root.join("etc-warren-canary");
    for c in &canaries {
        let at = if c.path == Path::new("/etc/warren-canary") {
            etc_canary.clone()
        } else {
            root.join(c.path.strip_prefix("/").unwrap_or(&c.path))
        };
        if c.dir {
            // Another agent's worktree: a secret, and a test that prints it
            // if anything collects and runs it.
            write(&at.join("secret.txt"), &format!("{}\n", c.marker), false)?;
            write(
                &at.join("tests/test_other.py"),
                &format!("def test_other():\n    print('{}')\n", c.marker),
                false,
            )?;
            write(&at.join(".git/config"), "[core]\n\tbare = false\n", false)?;
        } else {
            write(&at, &format!("{}\n", c.marker), false)?;
        }
    }
    // The home's other files: a shell profile, nothing else.
    write(
        &root.join(HOME.trim_start_matches('/')).join(".profile"),
        "# profile\n",
        false,
    )?;
    // The world's /tmp: an executable an earlier process dropped there.
    write(&root.join("tmp/x"), "#!/bin/sh\necho from-tmp\n", true)?;
    fs::create_dir_all(w.join("repo/target"))?;
    Ok(World {
        root: root.to_path_buf(),
        etc_canary,
    })
}

fn write(path: &Path, body: &str, exec: bool) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)?;
    }
    fs::write(path, body)?;
    if exec {
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

/// Two commits, then a staged change (so `git commit` has something to
/// commit) and an unstaged one (so `git diff` shows something). The
/// repository's own config names the committer; no hooks are installed.
fn git_repo(repo: &Path) -> io::Result<()> {
    let git = |args: &[&str]| -> io::Result<()> {
        let out = Command::new("git")
            .args(args)
            .current_dir(repo)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
            .output()?;
        if out.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "git {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            )))
        }
    };
    git(&["init", "-q", "-b", "main"])?;
    git(&["config", "user.name", "Agent"])?;
    git(&["config", "user.email", "agent@example.invalid"])?;
    // Hooks are not part of the world: only git's samples are there.
    git(&["add", "-A"])?;
    git(&["commit", "-q", "-m", "initial"])?;
    let lib = repo.join("src/lib.rs");
    let body = fs::read_to_string(&lib)?;
    fs::write(
        &lib,
        format!("{body}\npub fn sub(a: i32, b: i32) -> i32 {{\n    a - b\n}}\n"),
    )?;
    git(&["commit", "-q", "-am", "sub"])?;
    write(&repo.join("notes/staged.md"), "staged\n", false)?;
    git(&["add", "notes/staged.md"])?;
    let readme = repo.join("README.md");
    let body = fs::read_to_string(&readme)?;
    fs::write(&readme, format!("{body}\nAn unstaged line.\n"))?;
    Ok(())
}
