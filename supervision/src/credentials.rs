//! Files that hold credentials by convention: reading one is credential
//! access whatever the command that reads it, so an unusual spelling
//! (`.e''nv`, a symlink, a directory path) reveals nothing routinely. Judged
//! on the resolved path, folded like the protected table.

use std::path::Path;

use crate::protected::folded_parts;

/// True for a file name (folded) that is a credentials file. (Matched
/// rather than looked up in a list: the judge asks for every path.)
fn is_credentials_name(name: &[u8]) -> bool {
    matches!(
        name,
        b".env"
            | b".envrc"
            | b".npmrc"
            | b".yarnrc.yml"
            | b".netrc"
            | b"_netrc"
            | b".pypirc"
            | b".pgpass"
            | b".my.cnf"
            | b".git-credentials"
            | b".gitcookies"
            | b".htpasswd"
            | b".dockercfg"
            | b"id_rsa"
            | b"id_dsa"
            | b"id_ecdsa"
            | b"id_ed25519"
            | b"credentials"
            | b"credentials.json"
            | b"root.key"
            | b"admin.token"
            | b"instance.token"
    )
}

/// True for a directory name (folded) whose contents are credentials.
fn is_key_directory(name: &[u8]) -> bool {
    matches!(
        name,
        b".ssh" | b".aws" | b".gnupg" | b".kube" | b".docker" | b".password-store"
    )
}

/// True for a suffix (from the last dot) of key and keystore files.
fn is_key_suffix(suffix: &[u8]) -> bool {
    matches!(
        suffix,
        b".pem" | b".key" | b".p12" | b".pfx" | b".jks" | b".keystore" | b".kdbx"
    )
}

/// `.env` variants that are templates, not secrets.
const TEMPLATES: &[&str] = &[".example", ".sample", ".template", ".dist", ".defaults"];

/// Why `rel` (a resolved path relative to the worktree) is a credential
/// file, if it is.
pub(crate) fn credential_file(rel: &Path) -> Option<&'static str> {
    let plain = credential_plain(rel.as_os_str().as_encoded_bytes());
    debug_assert_eq!(plain.is_some(), rel.to_str().is_some_and(folds_to_itself), "{rel:?}");
    plain.unwrap_or_else(|| credential_general(rel))
}

/// True when `text` is a plain relative path (see `walk::plain`) of
/// lower-case printable ASCII: its folded parts (`protected::folded_parts`)
/// are its components with trailing dots and spaces trimmed.
fn folds_to_itself(text: &str) -> bool {
    cfg!(unix)
        && !text.starts_with('/')
        && text
            .bytes()
            .all(|b| (b' '..=b'~').contains(&b) && !b.is_ascii_uppercase())
        && crate::walk::plain(text.as_bytes())
}

/// [`credential_file`] for a path whose text folds to itself, read off its
/// bytes in one pass (the judge checks a few hundred paths per command);
/// `None` when the text does not fold to itself.
fn credential_plain(text: &[u8]) -> Option<Option<&'static str>> {
    if !cfg!(unix) || text.starts_with(b"/") {
        return None;
    }
    if text.is_empty() {
        return Some(None);
    }
    // Without an early exit the test is vectorised.
    let folded = text
        .iter()
        .fold(true, |ok, &b| ok & (b' '..=b'~').contains(&b) & !b.is_ascii_uppercase());
    if !folded {
        return None;
    }
    let mut in_directory = false;
    let mut name: &[u8] = b"";
    for part in text.split(|b| *b == b'/') {
        if part.is_empty() || part == b"." {
            return None;
        }
        let kept = part
            .iter()
            .rposition(|b| !matches!(b, b'.' | b' '))
            .map_or(0, |i| i + 1);
        let part = &part[..kept];
        // Every directory of keys starts with a dot.
        in_directory |= part.starts_with(b".") && is_key_directory(part);
        name = part;
    }
    Some(if in_directory {
        Some(IN_DIRECTORY)
    } else {
        credential_name(name)
    })
}

/// [`credential_file`] over the folded parts, for any path.
fn credential_general(rel: &Path) -> Option<&'static str> {
    let mut name = None;
    for part in folded_parts(rel) {
        if is_key_directory(part.as_bytes()) {
            return Some(IN_DIRECTORY);
        }
        name = Some(part);
    }
    credential_name(name?.as_bytes())
}

const IN_DIRECTORY: &str = "in a directory of keys and credentials";

/// Why the folded last component `name` is a credential file, if it is.
fn credential_name(name: &[u8]) -> Option<&'static str> {
    if is_credentials_name(name) {
        return Some("a credentials file");
    }
    if let Some(rest) = name.strip_prefix(b".env.")
        && !TEMPLATES.iter().any(|t| rest.ends_with(&t.as_bytes()[1..]))
    {
        return Some("an environment file (secrets by convention)");
    }
    // Every suffix is a dot and no other dot, so a name ends with one exactly when
    // its last dot starts it: one look-up instead of a test per suffix.
    let dot = name.iter().rposition(|b| *b == b'.')?;
    (dot > 0 && is_key_suffix(&name[dot..])).then_some("a key or keystore file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_files() {
        let hit = |p: &str| credential_file(Path::new(p)).is_some();
        for p in [
            ".env",
            ".ENV",
            "config/.env.local",
            ".env.production",
            ".npmrc",
            "sub/.netrc",
            ".pypirc",
            ".ssh/id_rsa",
            "deploy/server.pem",
            "certs/tls.key",
            ".aws/credentials",
            ".docker/config.json",
            ".gіt-credentials",
        ] {
            assert!(hit(p), "{p}");
        }
        for p in [
            ".env.example",
            ".env.sample",
            "src/env.rs",
            "src/token.rs",
            "id_rsa.pub",
            "docs/keys.md",
            "README.md",
            "src/key.rs",
        ] {
            assert!(!hit(p), "{p}");
        }
    }

    #[test]
    fn the_plain_reading_agrees_with_the_folded_one() {
        let parts = [
            "",
            ".",
            "..",
            "...",
            "src",
            ".env",
            ".env.",
            ".env. ",
            ".ssh",
            ".ssh.",
            ".SSH",
            "id_rsa",
            "id_rsa. ",
            "a b",
            "x.pem",
            "x.pem.",
            ".pem",
            "credentials",
            ".env.local",
            ".env.example",
            "k.key ",
            "ssh",
            "~x",
            "\u{7f}",
            "é",
            "key.PEM",
        ];
        let mut seen = 0;
        for a in parts {
            for b in parts {
                for c in ["", "/", "//", "/./"] {
                    let text = format!("{a}{c}{b}");
                    let rel = Path::new(&text);
                    seen += usize::from(folds_to_itself(&text));
                    assert_eq!(credential_file(rel), credential_general(rel), "{text:?}");
                }
            }
        }
        assert!(seen > 500, "only {seen} paths took the plain reading");
    }
}
