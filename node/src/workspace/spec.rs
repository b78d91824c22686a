//! Pure decisions about workspaces: what a `workspace.repo` names, the
//! branch a conversation works on.

use std::path::{Component, Path, PathBuf};

/// What `workspace.repo` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepoSource {
    /// An absolute path on this node (lexically normalized).
    Path(PathBuf),
    /// A URL git can clone (`https://`, `ssh://`, `git://`, `file://`, or
    /// scp-like `user@host:path`).
    Url(String),
}

/// The URL schemes a node clones from.
const SCHEMES: [&str; 5] = ["https", "http", "ssh", "git", "file"];
const ALLOWED: &str = "use an absolute path, an https, http, ssh, git or file URL, or user@host:path";

/// Classifies `repo`: a relative path, a path inside `data_dir`, an empty
/// string or a URL of a transport the node does not use (`ext::`, ...) is an
/// error naming what was wrong.
pub fn classify(repo: &str, data_dir: &Path) -> Result<RepoSource, String> {
    if repo.trim().is_empty() {
        return Err("is empty".into());
    }
    if repo.chars().any(char::is_control) {
        return Err(format!("{repo:?} contains control characters"));
    }
    if repo.starts_with('/') {
        let path = normalize(Path::new(repo));
        outside_data_dir(repo, &path, data_dir)?;
        return Ok(RepoSource::Path(path));
    }
    if let Some((scheme, rest)) = repo.split_once("://") {
        let lower = scheme.to_ascii_lowercase();
        if !SCHEMES.contains(&lower.as_str()) || scheme.contains("::") {
            return Err(format!("{repo}: the scheme {scheme}:// is not allowed ({ALLOWED})"));
        }
        if rest.starts_with('-') {
            return Err(format!("{repo}: a host may not start with '-'"));
        }
        if lower == "file" {
            // file://[host]/path: the path starts at the first '/'.
            let path = rest.find('/').map_or("", |i| &rest[i..]);
            if path.is_empty() {
                return Err(format!("{repo}: a file URL needs an absolute path"));
            }
            let path = normalize(Path::new(&percent_decode(path)));
            outside_data_dir(repo, &path, data_dir)?;
        } else if rest.is_empty() {
            return Err(format!("{repo}: the URL has no host"));
        }
        return Ok(RepoSource::Url(repo.to_string()));
    }
    if let Some(i) = repo.find("::") {
        return Err(format!(
            "{repo}: the transport {}:: is not allowed ({ALLOWED})",
            &repo[..i]
        ));
    }
    if let Some((user_host, path)) = repo.split_once(':')
        && let Some((user, host)) = user_host.split_once('@')
        && !user.is_empty()
        && !host.is_empty()
        && !user_host.contains('/')
        && !path.is_empty()
    {
        if user.starts_with('-') || host.starts_with('-') {
            return Err(format!("{repo}: a user or host may not start with '-'"));
        }
        return Ok(RepoSource::Url(repo.to_string()));
    }
    Err(format!("{repo} is not absolute ({ALLOWED})"))
}

/// `path` with `.` and `..` resolved lexically (no file system access).
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::RootDir | Component::Prefix(_) => out.push(c.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
        }
    }
    out
}

fn outside_data_dir(repo: &str, path: &Path, data_dir: &Path) -> Result<(), String> {
    let data_dir = normalize(data_dir);
    if path.starts_with(&data_dir) {
        return Err(format!("{repo} is inside the node's data dir {}", data_dir.display()));
    }
    Ok(())
}

/// `%XX` decoded (git decodes file URLs the same way); a bad escape is kept.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).and_then(|d| u8::try_from(d).ok())
}

/// `warren/<agent>/<conversation>`.
pub fn branch_name(agent: &str, conversation: &str) -> String {
    format!("warren/{agent}/{conversation}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Result<RepoSource, String> {
        Ok(RepoSource::Url(s.to_string()))
    }

    fn path(s: &str) -> Result<RepoSource, String> {
        Ok(RepoSource::Path(PathBuf::from(s)))
    }

    #[test]
    fn classify_table() {
        let data = Path::new("/var/lib/warren");
        let ok: &[(&str, Result<RepoSource, String>)] = &[
            ("/home/me/code", path("/home/me/code")),
            ("/home/me/./code/", path("/home/me/code")),
            ("/home/me/x/../code", path("/home/me/code")),
            ("/../home/me", path("/home/me")),
            ("/var/lib/warren-other", path("/var/lib/warren-other")),
            ("/home/a::b", path("/home/a::b")),
            ("https://example.com/x.git", url("https://example.com/x.git")),
            ("http://example.com/x.git", url("http://example.com/x.git")),
            ("HTTPS://example.com/x.git", url("HTTPS://example.com/x.git")),
            ("ssh://git@example.com/x.git", url("ssh://git@example.com/x.git")),
            ("git://example.com/x.git", url("git://example.com/x.git")),
            ("file:///srv/repos/x", url("file:///srv/repos/x")),
            ("file://localhost/srv/repos/x", url("file://localhost/srv/repos/x")),
            ("git@example.com:me/x.git", url("git@example.com:me/x.git")),
        ];
        for (input, want) in ok {
            assert_eq!(&classify(input, data), want, "{input}");
        }
        let bad: &[(&str, &str)] = &[
            ("", "is empty"),
            ("   ", "is empty"),
            ("code/x", "is not absolute"),
            ("./x", "is not absolute"),
            ("~/x", "is not absolute"),
            ("host:path", "is not absolute"),
            ("/var/lib/warren", "is inside the node's data dir /var/lib/warren"),
            ("/var/lib/warren/agents/a/home", "is inside the node's data dir"),
            ("/home/../var/lib/warren/x", "is inside the node's data dir"),
            ("file:///var/lib/warren/x", "is inside the node's data dir"),
            ("file:///var/lib/%77arren/x", "is inside the node's data dir"),
            ("file://localhost/var/lib/warren/./x", "is inside the node's data dir"),
            ("ext::sh -c touch% /tmp/pwned", "the transport ext:: is not allowed"),
            ("fd::17", "the transport fd:: is not allowed"),
            ("ftp://example.com/x", "the scheme ftp:// is not allowed"),
            ("ext::ssh://x", "the scheme ext::ssh:// is not allowed"),
            ("ssh://-oProxyCommand=x/y", "may not start with '-'"),
            ("-u@host:x", "may not start with '-'"),
            ("file://", "needs an absolute path"),
            ("https://", "has no host"),
            ("/home/me\n/x", "control characters"),
        ];
        for (input, want) in bad {
            let err = classify(input, data).expect_err(input);
            assert!(err.contains(want), "{input:?}: {err}");
        }
    }

    #[test]
    fn normalize_is_lexical() {
        assert_eq!(normalize(Path::new("/a/b/../../..")), PathBuf::from("/"));
        assert_eq!(normalize(Path::new("/a//b/./c")), PathBuf::from("/a/b/c"));
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("/a%20b"), "/a b");
        assert_eq!(percent_decode("/a%2"), "/a%2");
        assert_eq!(percent_decode("/a%zzb"), "/a%zzb");
        assert_eq!(percent_decode("/é%é"), "/é%é");
    }
}
