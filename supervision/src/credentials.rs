//! Files that hold credentials by convention: reading one is credential
//! access whatever the command that reads it, so an unusual spelling
//! (`.e''nv`, a symlink, a directory path) reveals nothing routinely. Judged
//! on the resolved path, folded like the protected table.

use std::path::Path;

use crate::protected::folded_parts;

/// File names (folded) that are credentials.
const NAMES: &[&str] = &[
    ".env",
    ".envrc",
    ".npmrc",
    ".yarnrc.yml",
    ".netrc",
    "_netrc",
    ".pypirc",
    ".pgpass",
    ".my.cnf",
    ".git-credentials",
    ".gitcookies",
    ".htpasswd",
    ".dockercfg",
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "credentials",
    "credentials.json",
    "root.key",
    "admin.token",
    "instance.token",
];

/// Directories (folded) whose contents are credentials.
const DIRECTORIES: &[&str] = &[".ssh", ".aws", ".gnupg", ".kube", ".docker", ".password-store"];

/// Suffixes of key and keystore files.
const SUFFIXES: &[&str] = &[".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx"];

/// `.env` variants that are templates, not secrets.
const TEMPLATES: &[&str] = &[".example", ".sample", ".template", ".dist", ".defaults"];

/// Why `rel` (a resolved path relative to the worktree) is a credential
/// file, if it is.
pub(crate) fn credential_file(rel: &Path) -> Option<&'static str> {
    let mut name = None;
    for part in folded_parts(rel) {
        if DIRECTORIES.contains(&part.as_ref()) {
            return Some("in a directory of keys and credentials");
        }
        name = Some(part);
    }
    let name = name?;
    let name = name.as_ref();
    if NAMES.contains(&name) {
        return Some("a credentials file");
    }
    if let Some(rest) = name.strip_prefix(".env.")
        && !TEMPLATES.iter().any(|t| rest.ends_with(&t[1..]))
    {
        return Some("an environment file (secrets by convention)");
    }
    if SUFFIXES.iter().any(|s| name.len() > s.len() && name.ends_with(s)) {
        return Some("a key or keystore file");
    }
    None
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
}
