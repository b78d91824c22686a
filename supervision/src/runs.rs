//! Repository code: which routine commands run code the repository defines, and
//! which files define what they run. Running repository code is routine only
//! while nothing the agent changed in this conversation (the node's
//! [`Scope::changed`](crate::Scope) plus what the same command writes) is one of
//! those files: otherwise `npm test` or `make` would run whatever shell text the
//! agent just put in `package.json` or a `Makefile`, and the words a decision
//! was made on would no longer say what runs. Source files and tests are not in
//! the table: running them is what `cargo test` or `pytest` says it does.

use crate::protected::{Pattern, folded_parts};

/// A family of allowlisted programs that run repository code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runner {
    /// `make`, `npm`/`pnpm`/`yarn`/`bun` and `git commit` (through its hooks):
    /// they run whatever command lines their files name, so every definition counts.
    Any,
    Cargo,
    Go,
    Python,
    Eslint,
    Vitest,
    /// tsc runs no code, but its config decides where it writes.
    Tsc,
}

impl Runner {
    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Any => "a command runner",
            Runner::Cargo => "cargo",
            Runner::Go => "go",
            Runner::Python => "pytest",
            Runner::Eslint => "eslint",
            Runner::Vitest => "vitest",
            Runner::Tsc => "tsc",
        }
    }
}

/// One kind of file that defines what a runner executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Definition {
    pub pattern: Pattern,
    /// The runners it affects besides [`Runner::Any`] (which every entry affects).
    pub runners: &'static [Runner],
    pub reason: &'static str,
}

const fn def(pattern: Pattern, runners: &'static [Runner], reason: &'static str) -> Definition {
    Definition {
        pattern,
        runners,
        reason,
    }
}

use Pattern::{Infix, Name, Prefix, Suffix};
use Runner::{Cargo, Eslint, Go, Python, Tsc, Vitest};

/// Every runner: for scripts any build file may call.
const EVERY: &[Runner] = &[Cargo, Go, Python, Eslint, Vitest, Tsc];

/// The files that define what a routine command runs.
pub const DEFINITIONS: &[Definition] = &[
    def(Name("makefile"), &[], "make's recipes are shell command lines"),
    def(Name("gnumakefile"), &[], "make's recipes are shell command lines"),
    def(Suffix(".mk"), &[], "makefiles included by a Makefile"),
    def(Suffix(".make"), &[], "makefiles included by a Makefile"),
    def(
        Name("makefile.in"),
        &[],
        "make regenerates the Makefile from Makefile.in (a rule runs config.status) before it runs anything",
    ),
    def(
        Name("makefile.am"),
        &[],
        "automake regenerates Makefile.in (and so the Makefile) from it",
    ),
    def(Name("configure"), &[], "the script a regenerated Makefile runs"),
    def(
        Prefix("configure."),
        &[],
        "configure.ac: the source of the configure script",
    ),
    def(Name("config.status"), &[], "the script that regenerates the Makefile"),
    def(Suffix(".m4"), &[], "autoconf macros the regeneration runs"),
    def(Name("cmakelists.txt"), &[], "cmake's build definition"),
    def(Suffix(".cmake"), &[], "cmake scripts"),
    def(
        Name("package.json"),
        &[Eslint],
        "scripts (with their pre/post scripts) are shell command lines; packageManager picks the program",
    ),
    def(
        Name(".npmrc"),
        &[],
        "script-shell and node-options change what every npm script runs",
    ),
    def(Name(".yarnrc"), &[], "yarn's settings (yarn-path)"),
    def(Name(".yarnrc.yml"), &[], "yarnPath names the program that runs as yarn"),
    def(Name(".yarn"), &[], "yarn releases and plugins that run as yarn"),
    def(
        Name(".pnp.cjs"),
        &[],
        "Yarn Plug'n'Play loader, run on every yarn command",
    ),
    def(Name(".pnpmfile.cjs"), &[], "pnpm hooks"),
    def(
        Name("pnpm-workspace.yaml"),
        &[],
        "pnpm's workspace config: which packages (and their scripts) a run reaches",
    ),
    def(Name("lerna.json"), &[], "which packages and commands lerna runs"),
    def(Name("nx.json"), &[], "nx task definitions"),
    def(Name("turbo.json"), &[], "turbo task definitions"),
    def(
        Infix(".config."),
        &[Eslint, Vitest, Tsc],
        "a tool's config written as code (jest, webpack, babel, prettier, rollup, vite, next, ...): the tool runs it",
    ),
    def(Prefix(".babelrc"), &[Eslint, Vitest], "babel config: plugins are code"),
    def(Prefix(".prettierrc"), &[Eslint], "prettier config: plugins are code"),
    def(Prefix(".swcrc"), &[Vitest], "swc config: plugins are code"),
    def(Prefix(".mocharc"), &[], "mocha config: required modules run first"),
    def(Name("bunfig.toml"), &[], "preload scripts bun runs first"),
    def(
        Name("node_modules"),
        &[Eslint, Vitest],
        "installed packages and their .bin programs that scripts and tools run",
    ),
    def(
        Name("cargo.toml"),
        &[Cargo],
        "the build script, dependencies (new code to download and build) and [patch] sources",
    ),
    def(
        Name("cargo.lock"),
        &[Cargo],
        "which dependency versions (code) are built",
    ),
    def(
        Name("build.rs"),
        &[Cargo],
        "build scripts run on cargo build, check, clippy and doc",
    ),
    def(
        Name(".cargo"),
        &[Cargo],
        "config: aliases, target runners, rustc wrappers, linker flags, env",
    ),
    def(
        Name("rust-toolchain"),
        &[Cargo],
        "which toolchain (program) runs as cargo",
    ),
    def(
        Name("rust-toolchain.toml"),
        &[Cargo],
        "which toolchain (program) runs as cargo",
    ),
    def(
        Name("go.mod"),
        &[Go],
        "toolchain directive, dependencies and replace directives",
    ),
    def(Name("go.work"), &[Go], "workspace replace directives"),
    def(
        Name("vendor"),
        &[Go],
        "vendored dependencies go builds instead of the module cache",
    ),
    def(
        Name("conftest.py"),
        &[Python],
        "pytest runs it before any test: plugins and hooks",
    ),
    def(Name("pytest.ini"), &[Python], "addopts and plugins (-p)"),
    def(Name(".pytest.ini"), &[Python], "addopts and plugins (-p)"),
    def(Name("pytest.toml"), &[Python], "addopts and plugins (-p)"),
    def(Name(".pytest.toml"), &[Python], "addopts and plugins (-p)"),
    def(
        Name("setup.py"),
        &[Python],
        "runs on every build and install of the package",
    ),
    def(Name("noxfile.py"), &[Python], "nox sessions are code"),
    def(
        Name("pytest.py"),
        &[Python],
        "shadows pytest itself when pytest runs from this directory",
    ),
    def(Name("_pytest"), &[Python], "shadows pytest's own package"),
    def(Name("pluggy"), &[Python], "shadows pytest's plugin system"),
    def(Name("pluggy.py"), &[Python], "shadows pytest's plugin system"),
    def(
        Name("pyproject.toml"),
        &[Python],
        "[tool.pytest.ini_options] addopts and plugins",
    ),
    def(Name("setup.cfg"), &[Python], "[tool:pytest] addopts and plugins"),
    def(Name("tox.ini"), &[Python], "[pytest] addopts and plugins"),
    def(
        Suffix(".pth"),
        &[Python],
        "lines starting with import run at every Python start",
    ),
    def(Name("sitecustomize.py"), &[Python], "runs at every Python start"),
    def(Name("usercustomize.py"), &[Python], "runs at every Python start"),
    def(
        Prefix("eslint.config."),
        &[Eslint],
        "the config is code eslint runs, and names plugins",
    ),
    def(
        Prefix(".eslintrc"),
        &[Eslint],
        "the config (code or the plugins it names)",
    ),
    def(
        Prefix("vitest.config."),
        &[Vitest],
        "the config is code vitest runs first",
    ),
    def(
        Prefix("vitest.workspace"),
        &[Vitest],
        "the workspace config is code vitest runs first",
    ),
    def(
        Prefix("vite.config."),
        &[Vitest],
        "the config is code vitest runs first",
    ),
    def(
        Prefix("tsconfig"),
        &[Tsc, Vitest],
        "outDir and include decide where tsc writes (a protected directory among them)",
    ),
    def(
        Name("jsconfig.json"),
        &[Tsc],
        "outDir and include decide where tsc writes",
    ),
    def(
        Name("scripts"),
        EVERY,
        "helper scripts the build files call (every runner may reach them)",
    ),
    def(Suffix(".sh"), EVERY, "shell scripts the build files call"),
    def(Suffix(".bash"), EVERY, "shell scripts the build files call"),
];

impl Definition {
    fn affects(&self, runner: Runner) -> bool {
        runner == Runner::Any || self.runners.contains(&runner)
    }
}

/// The definition `rel` (a changed path relative to the worktree) is, for
/// `runner`: the first table entry one of its components matches.
pub fn definition_for(rel: &std::path::Path, runner: Runner) -> Option<&'static Definition> {
    folded_parts(rel).find_map(|part| {
        DEFINITIONS
            .iter()
            .find(|d| d.affects(runner) && d.pattern.matches(&part))
    })
}

/// The definition `rel` is for any runner (what the node fingerprints per
/// workspace).
pub fn definition_for_any(rel: &std::path::Path) -> Option<&'static Definition> {
    definition_for(rel, Runner::Any)
}

/// Definitions a run's own files name: the build script a Cargo manifest
/// names (`build = "..."`, from `cwd` up to the worktree), and the configs a
/// tsconfig extends. Read through the resolver; what cannot be read names
/// nothing (the table's own entries still hold).
pub(crate) fn named_definitions(
    runner: Runner,
    cwd: &std::path::Path,
    root: &std::path::Path,
    resolver: &dyn crate::paths::PathResolver,
) -> Vec<std::path::PathBuf> {
    use crate::paths::resolve_path;
    let mut out = Vec::new();
    match runner {
        Runner::Cargo | Runner::Any => {
            let mut dir = cwd.to_path_buf();
            while dir.starts_with(root) {
                if let Some(text) = resolver.read_small(&dir.join("Cargo.toml")) {
                    for value in toml_strings(&text, "build") {
                        out.extend(resolve_path(&dir.join(value), resolver));
                    }
                }
                if dir == root || !dir.pop() {
                    break;
                }
            }
        }
        _ => {}
    }
    if matches!(runner, Runner::Tsc | Runner::Vitest | Runner::Any) {
        let mut next = vec![cwd.join("tsconfig.json")];
        for _ in 0..4 {
            let mut found = Vec::new();
            for config in &next {
                let Some(text) = resolver.read_small(config) else {
                    continue;
                };
                let base = config.parent().unwrap_or(root);
                for value in json_strings(&text, "extends") {
                    if (value.starts_with('.') || value.starts_with('/'))
                        && let Some(p) = resolve_path(&base.join(&value), resolver)
                    {
                        out.push(p.clone());
                        found.push(p);
                    }
                }
            }
            if found.is_empty() {
                break;
            }
            next = found;
        }
    }
    out
}

/// The quoted values of `key = "..."` lines in TOML text (good enough for a
/// manifest's `build`; anything else names nothing).
fn toml_strings<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key)
                .then_some(v.trim())?
                .strip_prefix('"')?
                .split('"')
                .next()
        })
        .collect()
}

/// The string values of `"key": "..."` (or `"key": ["...", ...]`) in JSON
/// text, found by a plain scan (tsconfig allows comments, so not a parser).
fn json_strings(text: &str, key: &str) -> Vec<String> {
    let needle = format!("\"{key}\"");
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(&needle) {
        rest = &rest[at + needle.len()..];
        let Some(colon) = rest.trim_start().strip_prefix(':') else {
            continue;
        };
        let value = colon.trim_start();
        let end = if value.starts_with('[') {
            value.find(']').unwrap_or(value.len())
        } else {
            value.find([',', '}', '\n']).unwrap_or(value.len())
        };
        out.extend(value[..end].split('"').skip(1).step_by(2).map(str::to_string));
    }
    out
}

/// Definition files by their real names, as a runner finds them in its
/// working directory.
const CWD_FILES: &[&str] = &[
    "Makefile",
    "makefile",
    "GNUmakefile",
    "package.json",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    "bunfig.toml",
    "Cargo.toml",
    "Cargo.lock",
    "build.rs",
    "rust-toolchain",
    "rust-toolchain.toml",
    "go.mod",
    "go.work",
    "conftest.py",
    "pytest.ini",
    "pyproject.toml",
    "setup.cfg",
    "tox.ini",
    "eslint.config.js",
    "eslint.config.mjs",
    "eslint.config.cjs",
    "eslint.config.ts",
    ".eslintrc.js",
    ".eslintrc.cjs",
    ".eslintrc.json",
    "vitest.config.ts",
    "vitest.config.js",
    "vitest.config.mts",
    "vite.config.ts",
    "vite.config.js",
    "vite.config.mts",
    "tsconfig.json",
    "jsconfig.json",
    "pytest.py",
    "pytest.toml",
    ".pytest.ini",
    ".pytest.toml",
    "Makefile.in",
    "Makefile.am",
    "pnpm-workspace.yaml",
];

/// The definition files `runner` reads from its working directory: a symlink
/// by one of these names to a changed file is a changed definition too.
pub fn names_read_in_cwd(runner: Runner) -> impl Iterator<Item = &'static str> {
    CWD_FILES
        .iter()
        .copied()
        .filter(move |n| definition_for(std::path::Path::new(n), runner).is_some())
}

/// Which runner `prog` with `args` is, if it runs repository code. Every
/// subcommand counts: a `toolchain` line in go.mod or a rust-toolchain file
/// switches the program even for `go version` or `cargo fmt`, yarnPath
/// replaces yarn itself, and cargo aliases can shadow external subcommands.
/// `git` counts only as `git commit`, which runs the repository's hooks.
pub(crate) fn runner_of(prog: &str, args: &[&str]) -> Option<Runner> {
    match prog {
        "make" | "npm" | "pnpm" | "yarn" | "bun" => Some(Runner::Any),
        "git" => args
            .iter()
            .find(|a| !a.starts_with('-'))
            .filter(|s| **s == "commit")
            .map(|_| Runner::Any),
        "cargo" => Some(Runner::Cargo),
        "go" => Some(Runner::Go),
        "pytest" | "python" | "python3" => Some(Runner::Python),
        "eslint" => Some(Runner::Eslint),
        "vitest" => Some(Runner::Vitest),
        "tsc" => Some(Runner::Tsc),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn definitions_by_runner() {
        let hit = |p: &str, r: Runner| definition_for(Path::new(p), r).is_some();
        assert!(hit("Makefile", Runner::Any));
        assert!(!hit("Makefile", Runner::Cargo));
        assert!(hit("sub/build.rs", Runner::Cargo));
        assert!(hit("Cargo.toml", Runner::Any));
        assert!(hit("scripts/gen.py", Runner::Cargo));
        assert!(hit("tools/release.sh", Runner::Go));
        assert!(hit("node_modules/.bin/jest", Runner::Vitest));
        assert!(!hit("src/lib.rs", Runner::Cargo));
        assert!(!hit("tests/api.rs", Runner::Cargo));
        assert!(!hit("README.md", Runner::Any));
        assert!(!hit("target/test.log", Runner::Cargo));
        assert!(!hit("package.json", Runner::Cargo));
        assert!(hit("conftest.py", Runner::Python));
        assert!(!hit("tests/test_api.py", Runner::Python));
    }

    #[test]
    fn manifests_and_configs_name_definitions() {
        assert_eq!(
            toml_strings("[package]\nbuild = \"tools/gen.rs\"\n", "build"),
            ["tools/gen.rs"]
        );
        assert!(toml_strings("builder = \"x\"", "build").is_empty());
        assert_eq!(
            json_strings("{ \"extends\": \"./base.json\" }", "extends"),
            ["./base.json"]
        );
        assert_eq!(
            json_strings("{\"extends\": [\"./a.json\", \"../b.json\"]}", "extends"),
            ["./a.json", "../b.json"]
        );
    }

    #[test]
    fn new_classes() {
        let hit = |p: &str, r: Runner| definition_for(Path::new(p), r).is_some();
        assert!(hit("Makefile.in", Runner::Any));
        assert!(hit("jest.config.js", Runner::Vitest));
        assert!(hit("webpack.config.ts", Runner::Any));
        assert!(hit(".pytest.ini", Runner::Python));
        assert!(hit("pytest.py", Runner::Python));
        assert!(hit("pnpm-workspace.yaml", Runner::Any));
        assert!(!hit("src/config.rs", Runner::Any));
    }

    #[test]
    fn runners() {
        assert_eq!(runner_of("make", &[]), Some(Runner::Any));
        assert_eq!(runner_of("npm", &["test"]), Some(Runner::Any));
        assert_eq!(runner_of("yarn", &["--version"]), Some(Runner::Any));
        assert_eq!(runner_of("git", &["commit", "-m", "x"]), Some(Runner::Any));
        assert_eq!(runner_of("git", &["status"]), None);
        assert_eq!(runner_of("cargo", &["+nightly", "test"]), Some(Runner::Cargo));
        assert_eq!(runner_of("cargo", &["fmt"]), Some(Runner::Cargo));
        assert_eq!(runner_of("go", &["test", "./..."]), Some(Runner::Go));
        assert_eq!(runner_of("cat", &["Makefile"]), None);
    }
}
