//! The nine dialog classes and `classify`, which matches them in seed 000's fixed priority order.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::dialog::Dialog;
use crate::text::{MarkerSets, Normalizer, contains_any, normalize};

/// What a permission dialog is about. Declared (and ordered) in priority
/// order: a dialog is the first class whose markers match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DialogClass {
    CredentialAccess,
    PushRemote,
    Install,
    DeviceAccess,
    NetworkAccess,
    Deletion,
    FileWrite,
    CommandExec,
    Unknown,
}

impl DialogClass {
    /// Every class, in priority order.
    pub const ALL: [DialogClass; 9] = [
        DialogClass::CredentialAccess,
        DialogClass::PushRemote,
        DialogClass::Install,
        DialogClass::DeviceAccess,
        DialogClass::NetworkAccess,
        DialogClass::Deletion,
        DialogClass::FileWrite,
        DialogClass::CommandExec,
        DialogClass::Unknown,
    ];

    /// The snake_case name used in config, the audit log and the API.
    pub fn as_str(self) -> &'static str {
        match self {
            DialogClass::CredentialAccess => "credential_access",
            DialogClass::PushRemote => "push_remote",
            DialogClass::Install => "install",
            DialogClass::DeviceAccess => "device_access",
            DialogClass::NetworkAccess => "network_access",
            DialogClass::Deletion => "deletion",
            DialogClass::FileWrite => "file_write",
            DialogClass::CommandExec => "command_exec",
            DialogClass::Unknown => "unknown",
        }
    }
}

impl fmt::Display for DialogClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DialogClass {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DialogClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| crate::Error::UnknownClass(s.to_string()))
    }
}

const CREDENTIAL: &[&str] = &[
    "token",
    "api key",
    "api_key",
    "apikey",
    "secret",
    ".env",
    "~/.aws",
    ".aws/",
    "~/.ssh",
    ".ssh/",
    "credential",
    "keychain",
    "password",
    "ssh key",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    ".pem",
    ".npmrc",
    ".netrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "printenv",
];

const PUSH: &[&str] = &["git push", "gh pr", "gh release", "git remote"];
const FETCH: &[&str] = &["git fetch", "git pull"];

const INSTALL: &[&str] = &[
    "npm install",
    "npm i",
    "npm ci",
    "pnpm add",
    "pnpm install",
    "pnpm i",
    "yarn add",
    "bun add",
    "bun install",
    "cargo install",
    "go install",
    "brew install",
    "pip install",
    "pip3 install",
    "apt install",
    "apt-get install",
    "gem install",
];

const DEVICE: &[&str] = &[
    "osascript",
    "camera",
    "microphone",
    "screen recording",
    "screencapture",
    "system_profiler",
    "defaults write",
];

const NETWORK: &[&str] = &["curl", "wget", "http://", "https://"];
/// Network tools that are never repo-scoped (no URL to check); also network markers.
const RAW_NETWORK: &[&str] = &["nc", "ncat", "netcat", "ssh", "scp", "telnet"];

const DELETION: &[&str] = &["rm", "rmdir", "unlink", "git clean", "shred"];
const DELETION_HEADING: &[&str] = &["delete file", "remove file"];

const FILE_WRITE_HEADING: &[&str] = &[
    "edit file",
    "create file",
    "apply patch",
    "multiedit",
    "write",
    "make this edit",
    "do you want to create",
    "allow edits",
    "apply edits",
    "apply this change",
    "create new file",
    "overwrite",
];

const COMMAND_TITLE: &[&str] = &["bash command", "shell command"];
const COMMAND_TEXT: &[&str] = &[
    "run command",
    "run tool",
    "requesting permission",
    "wants to run",
    "allow command",
    "run the following command",
    "run shell command",
    "allow execution",
    "execute command",
];

/// The markers read from the whole text, in the bit order `classify` reads them.
static TEXT_MARKERS: MarkerSets = MarkerSets::new(&[
    CREDENTIAL,
    PUSH,
    FETCH,
    INSTALL,
    DEVICE,
    NETWORK,
    RAW_NETWORK,
    DELETION,
    COMMAND_TEXT,
]);

/// The markers read from the title and question only.
static HEADING_MARKERS: MarkerSets = MarkerSets::new(&[DELETION_HEADING, FILE_WRITE_HEADING]);

/// True when the text names a URL (any `scheme://`) or an scp-style git remote.
fn has_url(text: &str) -> bool {
    text.contains("://") || text.contains("git@")
}

/// Classifies a dialog: the first class, in priority order, whose markers
/// match. File-write and delete-file markers are read only from the title and
/// question (a diff body mentioning "write" is not a write dialog); every other
/// marker is read from title, question, body, command and paths. A dialog that
/// carries a command and matched nothing earlier is a `command_exec`.
pub fn classify(dialog: &Dialog) -> DialogClass {
    let parsed = dialog.command.as_deref().map(crate::shell::parse);
    let action = dialog.normalized_action_text();
    classify_parsed(dialog, parsed.as_ref().and_then(|p| p.as_ref().ok()), &action)
}

/// [`classify`] with the dialog's command already parsed and its action text
/// (`Dialog::action_text`) normalised, once per decision.
pub(crate) fn classify_parsed(dialog: &Dialog, script: Option<&crate::shell::Script>, action: &str) -> DialogClass {
    if script.is_some_and(crate::shell::dumps_environment) {
        return DialogClass::CredentialAccess;
    }
    let mut text = String::with_capacity(2 * action.len() + 64);
    text.push_str(action);
    for p in &dialog.paths {
        let before = text.len();
        text.push(' ');
        Normalizer::new(&mut text).push(p);
        if text.len() == before + 1 {
            text.truncate(before);
        }
    }
    // The command as the shell reads it: quotes and escapes removed, so
    // `cat .e''nv` is read as `cat .env`.
    let mut repeat = None;
    if let Some(script) = script {
        text.push(' ');
        let start = text.len();
        match dialog.command.as_deref() {
            Some(cmd) if crate::shell::words_are_text(script, cmd) => {
                text.push_str(cmd);
                text[start..].make_ascii_lowercase();
            }
            _ => crate::shell::view_words(script, &mut Normalizer::new(&mut text)),
        }
        // A command with nothing to remove reads the same both ways: the
        // words repeat the end of the action text, whole words there too.
        let words = &text[start..];
        if action
            .strip_suffix(words)
            .is_some_and(|before| before.is_empty() || before.ends_with(' '))
        {
            repeat = Some(start);
        }
    }
    let found = TEXT_MARKERS.found_repeating(&text, repeat);
    let heading = HEADING_MARKERS.found(&dialog.heading_text());
    let has = |bit: u32| found & (1 << bit) != 0;
    if has(0) {
        DialogClass::CredentialAccess
    } else if has(1) || (has(2) && has_url(&text)) {
        DialogClass::PushRemote
    } else if has(3) {
        DialogClass::Install
    } else if has(4) {
        DialogClass::DeviceAccess
    } else if has(5) || has(6) {
        DialogClass::NetworkAccess
    } else if has(7) || heading & 1 != 0 {
        DialogClass::Deletion
    } else if heading & 2 != 0 {
        DialogClass::FileWrite
    } else if contains_any(&normalize(&dialog.title), COMMAND_TITLE)
        || has(8)
        || dialog.command.as_deref().is_some_and(|c| !c.trim().is_empty())
    {
        DialogClass::CommandExec
    } else {
        DialogClass::Unknown
    }
}

/// True when `text` (any case) names ssh/nc-style network use, which is never
/// repo-scoped.
pub(crate) fn has_raw_network_tool(text: &str) -> bool {
    contains_any(&normalize(text), RAW_NETWORK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for class in DialogClass::ALL {
            assert_eq!(class.as_str().parse::<DialogClass>().ok(), Some(class));
            let json = serde_json::to_string(&class).unwrap();
            assert_eq!(json, format!("\"{}\"", class.as_str()));
        }
        assert!("Command_Exec".parse::<DialogClass>().is_err());
    }

    #[test]
    fn all_is_in_declared_order() {
        let mut sorted = DialogClass::ALL;
        sorted.sort();
        assert_eq!(sorted, DialogClass::ALL);
        assert_eq!(DialogClass::ALL[0], DialogClass::CredentialAccess);
        assert_eq!(DialogClass::ALL[8], DialogClass::Unknown);
    }
}
