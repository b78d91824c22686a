//! What a task's decider may approve (seed 001: the local loop runs
//! unattended; remote and main stay behind an independent boundary). A
//! decider answers a dialog the policy held; its deny always stands, its
//! approve only inside these bounds: never what the always-escalate veto
//! holds, never a dialog a human must read (a frame not verified, a decision
//! prompt, options that could not be told apart), never a standing
//! permission, never a push, never anything that names the task's base
//! branch, never a protected path.

/// The held dialog as the node read it, for [`decider_may_approve`].
#[derive(Debug, Clone, Default)]
pub struct HeldFacts<'a> {
    /// Why the policy held it (`supervision::PolicySource::as_str`).
    pub source: &'a str,
    /// Its class (`supervision::DialogClass` as shown), e.g. `push_remote`.
    pub class: &'a str,
    /// Its template offers no approve-once answer (only "don't ask again").
    pub standing_only: bool,
    /// The command it would run, when it is a command dialog.
    pub command: Option<&'a str>,
    /// The paths it names (edits, writes).
    pub paths: &'a [String],
    /// The branch the task started from.
    pub base_branch: &'a str,
}

/// Sources whose hold only a human may lift.
const HUMAN_SOURCES: &[(&str, &str)] = &[
    ("always_escalate", "the always-escalate veto holds it"),
    ("frame_unverified", "its dialog was not read for sure"),
    ("decision_prompt", "it is a decision prompt for a human"),
    ("ambiguous_option", "its options could not be told apart"),
];

/// Classes a decider never approves.
const HUMAN_CLASSES: &[(&str, &str)] = &[
    ("push_remote", "it pushes to a remote"),
    ("credential_access", "it reaches for credentials"),
];

/// Path parts that are never the task's to change: the repository's own
/// metadata, credentials, the CLIs' and the node's settings.
const PROTECTED_PARTS: &[&str] = &[
    ".git", ".ssh", ".gnupg", ".aws", ".netrc", ".warren", ".claude", ".codex", ".aider", ".config", ".docker",
];

/// System directories no task writes.
const PROTECTED_ROOTS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/boot", "/root", "/var", "/proc", "/sys",
];

/// Whether the decider's approve of this dialog may be typed: `Err` says why not.
pub fn decider_may_approve(f: &HeldFacts) -> Result<(), String> {
    if let Some((_, why)) = HUMAN_SOURCES.iter().find(|(s, _)| *s == f.source) {
        return Err((*why).into());
    }
    if let Some((_, why)) = HUMAN_CLASSES.iter().find(|(c, _)| *c == f.class) {
        return Err((*why).into());
    }
    if f.standing_only {
        return Err("its only yes is a standing permission".into());
    }
    if let Some(command) = f.command {
        let words = words(command);
        let has = |w: &str| words.iter().any(|x| x == w);
        if has("push") && (has("git") || has("gh")) || has("pr") && has("gh") {
            return Err("it pushes or opens a pull request".into());
        }
        if has("git") && words.iter().any(|w| names_branch(w, f.base_branch)) {
            return Err(format!("it names the base branch {:?}", f.base_branch));
        }
        if let Some(w) = words.iter().find(|w| protected(w)) {
            return Err(format!("it names the protected path {w:?}"));
        }
    }
    if let Some(p) = f.paths.iter().find(|p| protected(p)) {
        return Err(format!("it touches the protected path {p:?}"));
    }
    Ok(())
}

/// The command's words, split on blanks, quotes and shell punctuation (a
/// generous split: more words can only refuse more).
fn words(command: &str) -> Vec<String> {
    command
        .split(|c: char| c.is_whitespace() || "'\"`;|&()<>{}$=".contains(c))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// `main`, `origin/main`, `refs/heads/main`, `HEAD:main`, `+main`.
fn names_branch(word: &str, base: &str) -> bool {
    if base.is_empty() {
        return false;
    }
    let w = word.trim_start_matches('+');
    w == base || w.rsplit([':', '/']).next() == Some(base) && (w.contains(':') || w.contains('/'))
}

fn protected(word: &str) -> bool {
    let path = std::path::Path::new(word);
    let part = path
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .any(|c| PROTECTED_PARTS.contains(&c));
    let root = PROTECTED_ROOTS
        .iter()
        .any(|r| word == *r || word.strip_prefix(r).is_some_and(|rest| rest.starts_with('/')));
    part || root
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(source: &str, class: &str, command: Option<&str>, paths: &[String]) -> Result<(), String> {
        decider_may_approve(&HeldFacts {
            source,
            class,
            standing_only: false,
            command,
            paths,
            base_branch: "main",
        })
    }

    #[test]
    fn what_a_decider_may_and_may_not_approve() {
        let cases: &[(&str, &str, &str, bool)] = &[
            ("not_repo_scoped", "file_write", "touch /tmp/scratch", true),
            (
                "class_policy",
                "network_access",
                "curl -o out.json http://127.0.0.1:8080/x",
                true,
            ),
            ("class_policy", "install", "pip install --user requests", true),
            ("not_repo_scoped", "command_exec", "cat ../sibling/README", true),
            ("always_escalate", "command_exec", "git push --force origin main", false),
            ("class_policy", "push_remote", "git push origin feature", false),
            ("class_policy", "command_exec", "git -C . push", false),
            ("class_policy", "command_exec", "gh pr create --fill", false),
            ("class_policy", "command_exec", "git checkout main", false),
            ("class_policy", "command_exec", "git merge origin/main", false),
            (
                "class_policy",
                "command_exec",
                "git update-ref refs/heads/main HEAD",
                false,
            ),
            ("class_policy", "command_exec", "git fetch origin +HEAD:main", false),
            ("class_policy", "command_exec", "git log --oneline maintenance", true),
            ("class_policy", "file_write", "cp key ~/.ssh/authorized_keys", false),
            ("class_policy", "file_write", "rm -rf .git/hooks", false),
            ("class_policy", "file_write", "echo x > /etc/hosts", false),
            ("class_policy", "file_write", "echo x >/etc/hosts", false),
            (
                "class_policy",
                "file_write",
                "sed -i s/a/b/ ./.claude/settings.json",
                false,
            ),
            ("class_policy", "command_exec", "ls /variable", true),
            ("frame_unverified", "command_exec", "ls", false),
            ("decision_prompt", "unknown", "", false),
            ("ambiguous_option", "command_exec", "ls", false),
            ("class_policy", "credential_access", "cat secrets.env", false),
        ];
        for (source, class, command, ok) in cases {
            let command = (!command.is_empty()).then_some(*command);
            assert_eq!(
                check(source, class, command, &[]).is_ok(),
                *ok,
                "{source} {class} {command:?}"
            );
        }
    }

    #[test]
    fn paths_and_standing_permissions() {
        let git = [".git/config".to_string()];
        assert!(check("not_repo_scoped", "file_write", None, &git).is_err());
        let fine = ["src/lib.rs".to_string(), "/tmp/out".to_string()];
        assert_eq!(check("not_repo_scoped", "file_write", None, &fine), Ok(()));
        let standing = HeldFacts {
            source: "not_repo_scoped",
            class: "command_exec",
            standing_only: true,
            command: Some("touch /tmp/x"),
            ..Default::default()
        };
        let why = decider_may_approve(&standing).expect_err("standing");
        assert!(why.contains("standing"), "{why}");
    }
}
