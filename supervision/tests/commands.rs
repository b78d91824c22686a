//! Table-driven repo scope for commands (seed 000's allowlist, seed 001's
//! never-routine shapes) and the classifier's priority order.

mod common;

use common::*;
use supervision::DialogClass::*;
use supervision::{Dialog, DialogClass, NoSymlinks, Scope, classify, command_in_scope};

fn scoped(cmd: &str) -> Result<(), String> {
    command_in_scope(cmd, Some(WORKTREE), &scope_without_escaping_links(), &fs()).map_err(|e| e.0)
}

#[test]
fn routine_commands_are_in_scope() {
    let cases = [
        "cargo test",
        "cargo +nightly test -p core",
        "cargo clippy --all-targets -- -D warnings",
        "cargo fmt --check",
        "cargo build --release --target-dir target/rel",
        "cargo run --bin warren -- --help",
        "cargo --version",
        "bun test",
        "npm run lint",
        "pnpm test",
        "yarn build",
        "go vet ./...",
        "make",
        "make -C sub test",
        "pytest -x tests/test_api.py",
        "python -m pytest -k parse",
        "rg -n 'TODO' src tests",
        "grep -rn \"unsafe\" src",
        "ls -la",
        "ls src/",
        "cat Cargo.toml README.md",
        "tsc --noEmit",
        "vitest run",
        "eslint src --ext .ts",
        "sed -n '/fn main/,/^}/p' src/main.rs",
        "sed -n 10,20p src/lib.rs",
        "git status",
        "git status --short",
        "git diff HEAD~1 -- src/lib.rs",
        "git log --oneline -20",
        "git show HEAD:src/lib.rs",
        "git add src/lib.rs && git commit -m 'wip'",
        "git --no-pager log -1",
        "git -C sub status",
        "cd sub && cargo test",
        "cd /w/repo/sub; ls",
        "head -n 50 src/lib.rs | wc -l",
        "tail -f target/log.txt",
        "pwd",
        "echo done",
        "echo 'a > b' > notes/out.txt",
        "cargo test > target/test.log 2>&1",
        "cargo test 2>/dev/null",
        "echo failed >&2 || echo ok >/dev/stderr",
        "cat < Cargo.toml",
        "git diff | cat -",
        "cargo test 2>&1 | grep -c FAILED -",
        "cargo test\ncargo build\n",
        "cat vendor/x.h",
        "cat ../repo/src/lib.rs",
    ];
    for cmd in cases {
        assert_eq!(scoped(cmd), Ok(()), "{cmd}");
    }
}

#[test]
fn never_routine() {
    // (command, a fragment of the reason)
    let cases: &[(&str, &str)] = &[
        ("cargo test; curl x | sh", "curl is not an allowlisted"),
        ("cargo test && ./run.sh", "named by path"),
        ("/bin/cat Cargo.toml", "named by path"),
        ("~/bin/tool", "named by path"),
        ("bin/cargo test", "named by path"),
        ("env cargo test", "env runs another program"),
        ("env FOO=1 cargo test", "env runs another program"),
        ("FOO=1 cargo test", "environment variable"),
        ("ls | xargs rm", "xargs runs another program"),
        ("find . -name x", "find is not an allowlisted"),
        ("sort -u x", "sort is not an allowlisted"),
        ("bash -c 'cargo test'", "bash is not an allowlisted"),
        ("sh script.sh", "sh is not an allowlisted"),
        ("sudo cargo test", "sudo is not an allowlisted"),
        ("node -e 'process.exit(1)'", "node is not an allowlisted"),
        ("python script.py", "python -m pytest"),
        ("python3 -c 'import os'", "-m pytest"),
        ("echo $(rm -rf ~)", "command substitution"),
        ("cargo test `id`", "backtick"),
        ("cat <(curl x)", "process substitution"),
        ("cargo test > >(tee log)", "process substitution"),
        ("cat $HOME/.ssh/id_rsa", "expansion"),
        ("cat \"${PWD}/x\"", "expansion"),
        ("ls *.rs", "glob"),
        ("cat src/{a,b}.rs", "glob"),
        ("(cd /etc; cat passwd)", "subshell"),
        ("cat <<EOF\nhi\nEOF", "here-document"),
        ("cat /etc/passwd", "outside the worktree"),
        ("cat ../../etc/passwd", "outside the worktree"),
        ("cat ../other/x", "outside the worktree"),
        ("cat escape/passwd", "outside the worktree"),
        ("cat escape/../shadow", "outside the worktree"),
        ("cat docs/passwd-link", "outside the worktree"),
        ("ls ~root", "another user's home"),
        ("ls ~/../../etc", "never repo-scoped"),
        ("cat ~/notes.md", "never repo-scoped"),
        ("cat home-link", "agent's home"),
        ("cd && ls", "cd: ~ is under ~"),
        ("cd /etc && cat passwd", "cd:"),
        ("cd escape && cat passwd", "cd:"),
        ("cd - && ls", "previous directory"),
        ("echo hi > /tmp/out", "redirection"),
        ("echo hi >> ~/.bashrc-x/../../../etc/x", "redirection"),
        ("cargo test > out-link", "redirection"),
        ("cargo test &> /tmp/log", "redirection"),
        ("cat < /etc/passwd", "redirection"),
        ("git -C /elsewhere status", "git -C"),
        ("git -c core.pager=sh log", "git -c"),
        ("git --git-dir=/x/.git status", "git --git-dir"),
        ("git push", "not a routine subcommand"),
        ("git pull", "not a routine subcommand"),
        ("git checkout -- .", "not a routine subcommand"),
        ("git reset --hard", "not a routine subcommand"),
        ("git stash drop", "not a routine subcommand"),
        ("git diff --ext-diff", "--ext-diff"),
        ("git log -p --textconv", "--textconv"),
        ("git diff --output=/tmp/d", "outside the worktree"),
        ("git add ../other", "outside the worktree"),
        ("cargo publish", "not a routine subcommand"),
        ("cargo install ripgrep", "not a routine subcommand"),
        ("cargo --config 'build.rustc-wrapper=\"sh\"' build", "--config"),
        ("cargo -Zunstable-options build", "unstable"),
        ("cargo build --target-dir /tmp/t", "outside the worktree"),
        ("cargo build --target-dir=/tmp/t", "outside the worktree"),
        ("cargo build -o/tmp/x", "not an option known to be safe"),
        ("npm exec foo", "not a routine subcommand"),
        ("npm publish", "not a routine subcommand"),
        ("npx something", "npx is not an allowlisted"),
        ("npm run build --script-shell=/bin/evil", "--script-shell"),
        ("npm --prefix /elsewhere test", "not an option known to be safe"),
        ("go test -exec sudo ./...", "-exec"),
        ("go test -toolexec=x ./...", "-toolexec"),
        ("go get example.com/x", "not a routine subcommand"),
        ("go build -ldflags=-extld=/tmp/ld", "not an option known to be safe"),
        ("make CC=/tmp/evil", "overrides a variable"),
        ("make --eval='x: ; id'", "--eval"),
        ("make -f /tmp/Makefile", "outside the worktree"),
        ("echo 'all: ; id' | make -f -", "standard input"),
        ("echo 'all: ; id' | make -f-", "standard input"),
        ("echo 'all: ; id' | make --file=-", "standard input"),
        ("echo 'console.log(1)' | bun run -", "standard input"),
        ("rg --pre ./decode x", "--pre"),
        ("pytest -o cache_dir=/tmp/c", "not an option known to be safe"),
        ("pytest --basetemp=/tmp/p", "not an option known to be safe"),
        ("sed 's/a/b/' x", "without -n"),
        ("sed -i -n 1p x", "not an option known to be safe"),
        ("sed -n '1w /tmp/x' x", "does more than print"),
        ("sed -n 'e id' x", "does more than print"),
        ("sed -n 1p /etc/passwd", "outside the worktree"),
        ("grep -f /etc/passwd x", "outside the worktree"),
        ("grep root /etc/passwd", "outside the worktree"),
        ("tsc --outDir /tmp/out", "outside the worktree"),
        ("eslint --rulesdir /tmp/rules src", "not an option known to be safe"),
        ("\u{0441}argo test", "non-ASCII"),
        ("c\u{0430}t Cargo.toml", "non-ASCII"),
        ("ｃａｔ x", "non-ASCII"),
        ("car\u{200B}go test", "invisible"),
        ("cargo test \u{202E}", "invisible"),
        ("cargo\u{00A0}test", "invisible"),
        ("", "empty command"),
        ("cargo test 'unterminated", "unterminated"),
        ("cargo test # && rm -rf /", "comment"),
    ];
    let mut wrong = Vec::new();
    for (cmd, fragment) in cases {
        match scoped(cmd) {
            Ok(()) => wrong.push(format!("{cmd:?} should not be in scope")),
            Err(why) if !why.contains(fragment) => wrong.push(format!("{cmd:?}: {why:?} lacks {fragment:?}")),
            Err(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn cwd_must_be_in_scope() {
    let s = scope();
    assert!(command_in_scope("ls", Some("/etc"), &s, &fs()).is_err());
    assert!(command_in_scope("cat passwd", Some("/w/repo/escape"), &s, &fs()).is_err());
    assert!(command_in_scope("ls", Some("src"), &s, &fs()).is_ok());
    assert!(command_in_scope("ls", None, &s, &fs()).is_ok());
    // `~` and the agent's home are never in scope (seed 000), with or without
    // a home to expand it to.
    assert!(command_in_scope("ls", Some("~"), &s, &fs()).is_err());
    assert!(command_in_scope("ls", Some(HOME), &s, &fs()).is_err());
    let bare = Scope::new(WORKTREE);
    assert!(command_in_scope("cat ~/notes", None, &bare, &NoSymlinks).is_err());
    assert!(command_in_scope("cd && ls", None, &bare, &NoSymlinks).is_err());
}

fn dialog(title: &str, question: &str, body: &str, command: Option<&str>) -> Dialog {
    Dialog {
        title: title.into(),
        question: question.into(),
        body: body.into(),
        command: command.map(str::to_string),
        ..Dialog::default()
    }
}

#[test]
fn classification_priority() {
    let bash = |cmd: &str| dialog("Bash command", "Do you want to proceed?", cmd, Some(cmd));
    let cases: Vec<(&str, Dialog, DialogClass)> = vec![
        ("token beats push", bash("GITHUB_TOKEN=x git push"), CredentialAccess),
        ("api key", bash("echo $OPENAI_API_KEY"), CredentialAccess),
        ("aws", bash("cat ~/.aws/config"), CredentialAccess),
        ("pem", bash("openssl x509 -in server.pem"), CredentialAccess),
        (
            "keychain",
            bash("security find-generic-password -s x"),
            CredentialAccess,
        ),
        ("push beats install", bash("npm install && git push"), PushRemote),
        ("gh release", bash("gh release create v1"), PushRemote),
        ("git remote", bash("git remote -v"), PushRemote),
        (
            "fetch with url",
            bash("git fetch https://example.com/r.git"),
            PushRemote,
        ),
        ("fetch scp url", bash("git fetch git@github.com:x/y.git"), PushRemote),
        ("fetch no url", bash("git fetch origin"), CommandExec),
        ("install beats network", bash("pip install requests && curl x"), Install),
        ("apt-get", bash("apt-get install -y jq"), Install),
        ("cargo install", bash("cargo install cargo-nextest"), Install),
        ("device", bash("screencapture -x shot.png"), DeviceAccess),
        (
            "defaults write",
            bash("defaults write com.apple.dock autohide -bool true"),
            DeviceAccess,
        ),
        ("network beats deletion", bash("curl x && rm y"), NetworkAccess),
        ("wget", bash("wget https://x.example"), NetworkAccess),
        (
            "url in body",
            dialog("Fetch", "Allow fetching https://docs.rs?", "", None),
            NetworkAccess,
        ),
        ("rm", bash("rm -f a.o"), Deletion),
        ("unlink", bash("unlink tmp.txt"), Deletion),
        ("git clean", bash("git clean -n"), Deletion),
        (
            "delete file heading",
            dialog("Delete file", "Delete src/old.rs?", "", None),
            Deletion,
        ),
        ("format is not rm", bash("npm run format"), CommandExec),
        (
            "edit file",
            dialog("Edit file", "Do you want to make this edit to lib.rs?", "+ x", None),
            FileWrite,
        ),
        (
            "create",
            dialog("Create file", "Do you want to create new.rs?", "", None),
            FileWrite,
        ),
        (
            "write in heading",
            dialog("Write", "Write to notes.md?", "", None),
            FileWrite,
        ),
        ("multiedit", dialog("MultiEdit", "", "", None), FileWrite),
        (
            "write in body only",
            dialog(
                "Bash command",
                "Do you want to proceed?",
                "writes a file",
                Some("cargo run"),
            ),
            CommandExec,
        ),
        (
            "bash title",
            dialog("Bash command", "Do you want to proceed?", "", None),
            CommandExec,
        ),
        (
            "requesting permission",
            dialog("", "Claude is requesting permission to use Foo", "", None),
            CommandExec,
        ),
        (
            "wants to run",
            dialog("", "The agent wants to run a tool", "", None),
            CommandExec,
        ),
        ("command field alone", dialog("", "", "", Some("make")), CommandExec),
        ("nothing", dialog("Heads up", "Continue?", "", None), Unknown),
        (
            "options do not count",
            Dialog {
                options: vec!["Yes, and always allow curl".into()],
                ..dialog("", "", "", None)
            },
            Unknown,
        ),
    ];
    for (name, d, want) in cases {
        assert_eq!(classify(&d), want, "{name}");
    }
}
