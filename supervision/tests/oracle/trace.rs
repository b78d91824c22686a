//! Reads an `strace -f -y` log into file and process events: every line
//! becomes an [`Event`] (unfinished and resumed halves joined), and
//! [`accesses`] turns each file or process system call into an [`Access`]
//! with an absolute path (relative names joined to the directory fd strace
//! decoded, or to the process's tracked working directory), a kind (read,
//! write, metadata, exec, chdir) and whether it succeeded. Pure: no IO.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Component, Path, PathBuf};

/// One system call as strace printed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// 1-based line of the (first half of the) call in the log.
    pub line: usize,
    pub pid: u32,
    pub name: String,
    /// The arguments, split at top-level commas, as printed.
    pub args: Vec<String>,
    pub ret: Ret,
    /// The joined text, for the report.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ret {
    /// A value, with the path strace decoded for a returned fd (`= 3</x>`).
    Ok(i64, Option<PathBuf>),
    /// `-1 ENOENT (...)`: the error's name.
    Err(String),
    /// `= ?` (the process left) or anything unreadable.
    Unknown,
}

impl Ret {
    pub fn ok(&self) -> bool {
        matches!(self, Ret::Ok(..))
    }
}

/// Parses a whole log. Lines that are not system calls (exit and signal
/// notes) are skipped; a call cut off by the end of the log is kept with an
/// unknown result.
pub fn parse(log: &str) -> Vec<Event> {
    let mut out = Vec::new();
    let mut pending: BTreeMap<u32, (usize, String)> = BTreeMap::new();
    for (i, raw) in log.lines().enumerate() {
        let line = i + 1;
        let Some((pid, rest)) = split_pid(raw) else { continue };
        if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(pid, (line, head.trim_end().to_string()));
            continue;
        }
        if let Some(tail) = rest.strip_prefix("<... ") {
            let Some(at) = tail.find(" resumed>") else { continue };
            let tail = &tail[at + " resumed>".len()..];
            if let Some((first, head)) = pending.remove(&pid) {
                let joined = format!("{head}{tail}");
                if let Some(e) = parse_call(first, pid, &joined) {
                    out.push(e);
                }
            }
            continue;
        }
        if let Some(e) = parse_call(line, pid, rest) {
            out.push(e);
        }
    }
    for (pid, (line, head)) in pending {
        if let Some(e) = parse_call(line, pid, &format!("{head}) = ?")) {
            out.push(e);
        }
    }
    out.sort_by_key(|e| e.line);
    out
}

fn split_pid(raw: &str) -> Option<(u32, &str)> {
    let raw = raw.trim_start();
    let end = raw.find(|c: char| !c.is_ascii_digit())?;
    let pid = raw[..end].parse().ok()?;
    Some((pid, raw[end..].trim_start()))
}

fn parse_call(line: usize, pid: u32, text: &str) -> Option<Event> {
    let open = text.find('(')?;
    let name = &text[..open];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let close = matching_paren(text, open)?;
    let args = split_args(&text[open + 1..close]);
    let ret = text[close + 1..]
        .trim_start()
        .strip_prefix('=')
        .map_or(Ret::Unknown, |r| parse_ret(r.trim()));
    Some(Event {
        line,
        pid,
        name: name.to_string(),
        args,
        ret,
        text: text.to_string(),
    })
}

/// Walks printed argument text, calling `f(index, byte, depth)` for every
/// byte outside strings and fd decorations (`3</path>`).
fn scan(s: &str, mut f: impl FnMut(usize, u8, i32) -> bool) {
    let b = s.as_bytes();
    let (mut i, mut depth) = (0, 0i32);
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'<' if i > 0 && (b[i - 1].is_ascii_digit() || s[..i].ends_with("AT_FDCWD")) => {
                while i < b.len() && b[i] != b'>' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            c => {
                if matches!(c, b'(' | b'[' | b'{') {
                    depth += 1;
                } else if matches!(c, b')' | b']' | b'}') {
                    depth -= 1;
                }
                if f(i, c, depth) {
                    return;
                }
            }
        }
        i += 1;
    }
}

fn matching_paren(s: &str, open: usize) -> Option<usize> {
    let mut found = None;
    scan(&s[open..], |i, c, depth| {
        if c == b')' && depth == 0 {
            found = Some(open + i);
            return true;
        }
        false
    });
    found
}

fn split_args(s: &str) -> Vec<String> {
    let mut cuts = Vec::new();
    scan(s, |i, c, depth| {
        if c == b',' && depth == 0 {
            cuts.push(i);
        }
        false
    });
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain(std::iter::once(s.len())) {
        let arg = s[start..cut].trim();
        if !arg.is_empty() {
            out.push(arg.to_string());
        }
        start = cut + 1;
    }
    out
}

fn parse_ret(r: &str) -> Ret {
    if r.starts_with('?') {
        return Ret::Unknown;
    }
    let num_end = r
        .find(|c: char| !(c.is_ascii_hexdigit() || c == '-' || c == 'x'))
        .unwrap_or(r.len());
    let num = &r[..num_end];
    let value = if let Some(hex) = num.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).ok()
    } else {
        num.parse().ok()
    };
    let Some(value) = value else { return Ret::Unknown };
    let rest = r[num_end..].trim_start();
    if value < 0 {
        let name = rest.split_whitespace().next().unwrap_or("E?");
        return Ret::Err(name.to_string());
    }
    Ret::Ok(value, decoration(&r[num_end..]))
}

/// The path in an fd decoration that starts the text (`<\x2fpath>`), if any.
fn decoration(s: &str) -> Option<PathBuf> {
    let inner = s.strip_prefix('<')?;
    let mut end = None;
    let b = inner.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'>' => {
                end = Some(i);
                break;
            }
            _ => i += 1,
        }
    }
    let body = unescape(&inner[..end?]);
    let body = body.strip_suffix(b" (deleted)").unwrap_or(&body).to_vec();
    if body.first() != Some(&b'/') {
        return None; // pipe:[..], socket:[..], anon_inode:..
    }
    Some(PathBuf::from(OsString::from_vec(body)))
}

/// Decodes strace's C-style escapes (`\n`, `\"`, `\\`, octal, `\x` hex).
pub fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 == b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let c = b[i + 1];
        i += 2;
        match c {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'f' => out.push(0x0c),
            b'x' => {
                let hex: String = s[i..].chars().take(2).take_while(|c| c.is_ascii_hexdigit()).collect();
                out.push(u8::from_str_radix(&hex, 16).unwrap_or(b'?'));
                i += hex.len();
            }
            b'0'..=b'7' => {
                let mut v = u32::from(c - b'0');
                let mut n = 0;
                while n < 2 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + u32::from(b[i] - b'0');
                    i += 1;
                    n += 1;
                }
                out.push(u8::try_from(v & 0xff).unwrap_or(b'?'));
            }
            other => out.push(other),
        }
    }
    out
}

/// A quoted string argument (`"..."`, possibly cut off as `"..."...`).
pub fn string_arg(arg: &str) -> Option<Vec<u8>> {
    let inner = arg.strip_prefix('"')?;
    let inner = inner.strip_suffix("...").unwrap_or(inner);
    let inner = inner.strip_suffix('"')?;
    Some(unescape(inner))
}

/// A directory-fd argument: `AT_FDCWD</cwd>`, `3</dir>`, plain `AT_FDCWD`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum DirFd {
    Path(PathBuf),
    Cwd,
    Unknown,
}

fn dirfd_arg(arg: &str) -> DirFd {
    if let Some(at) = arg.find('<') {
        return decoration(&arg[at..]).map_or(DirFd::Unknown, DirFd::Path);
    }
    if arg == "AT_FDCWD" { DirFd::Cwd } else { DirFd::Unknown }
}

/// The argument vector of an `execve` (`["a", "b"]`).
pub fn argv_arg(arg: &str) -> Vec<Vec<u8>> {
    let inner = arg.trim().trim_start_matches('[').trim_end_matches(']');
    split_args(inner).iter().filter_map(|a| string_arg(a)).collect()
}

/// What a call did to the path it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// Opened for reading (a directory listing included).
    Read,
    /// Created, opened for writing, removed, renamed, linked, chmod/chown,
    /// truncated, touched, or a mount-table change.
    Write,
    /// stat, access, readlink, xattr reads, `O_PATH`: no content.
    Meta,
    /// Ran as a program.
    Exec,
    /// Became a working directory.
    Chdir,
}

/// One path a call touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub line: usize,
    pub pid: u32,
    pub kind: Kind,
    /// Absolute, as named: joined to its directory, not yet normalised.
    pub path: PathBuf,
    /// Whether the call follows a symlink in the last component.
    pub follow: bool,
    /// The path the kernel opened (decoded from the returned fd), when known.
    pub opened: Option<PathBuf>,
    pub ok: bool,
    /// For a successful exec: its argument vector.
    pub argv: Vec<String>,
    /// The process's working directory at the call.
    pub cwd: PathBuf,
}

/// How each call names its paths: `(dirfd arg, path arg, kind, follow flag)`.
/// `None` for the dirfd means "relative to the working directory"; a path
/// index past the arguments means "the fd itself" (`fchmod(3</x>)`).
type Spec = &'static [(Option<usize>, usize, Kind)];

fn spec(name: &str) -> Option<Spec> {
    use Kind::*;
    Some(match name {
        "open" | "creat" => &[(None, 0, Read)],
        "openat" | "openat2" => &[(Some(0), 1, Read)],
        "execve" => &[(None, 0, Exec)],
        "execveat" => &[(Some(0), 1, Exec)],
        "stat" | "lstat" | "access" | "readlink" | "statfs" | "getxattr" | "lgetxattr" | "listxattr" | "llistxattr"
        | "stat64" | "lstat64" => &[(None, 0, Meta)],
        "newfstatat" | "fstatat64" | "statx" | "faccessat" | "faccessat2" | "readlinkat" => &[(Some(0), 1, Meta)],
        "chdir" => &[(None, 0, Chdir)],
        "fchdir" => &[(Some(0), usize::MAX, Chdir)],
        "mkdir" | "unlink" | "rmdir" | "chmod" | "chown" | "lchown" | "truncate" | "utime" | "utimes" | "mknod"
        | "setxattr" | "lsetxattr" | "removexattr" | "lremovexattr" | "chroot" | "acct" | "swapon" | "swapoff"
        | "umount" | "umount2" => &[(None, 0, Write)],
        "mkdirat" | "unlinkat" | "fchmodat" | "fchmodat2" | "fchownat" | "utimensat" | "futimesat" | "mknodat" => {
            &[(Some(0), 1, Write)]
        }
        "rename" => &[(None, 0, Write), (None, 1, Write)],
        "renameat" | "renameat2" => &[(Some(0), 1, Write), (Some(2), 3, Write)],
        "link" => &[(None, 0, Meta), (None, 1, Write)],
        "linkat" => &[(Some(0), 1, Meta), (Some(2), 3, Write)],
        "symlink" => &[(None, 1, Write)],
        "symlinkat" => &[(Some(1), 2, Write)],
        "mount" => &[(None, 1, Write)],
        "pivot_root" => &[(None, 0, Write), (None, 1, Write)],
        "fchmod" | "fchown" | "ftruncate" | "fsetxattr" | "fremovexattr" => &[(Some(0), usize::MAX, Write)],
        "fgetxattr" | "flistxattr" | "fstatfs" | "inotify_add_watch" => &[(Some(0), usize::MAX, Meta)],
        _ => return None,
    })
}

/// Every path access of a parsed log, in order, and each process's parent.
pub struct Trace {
    pub accesses: Vec<Access>,
    pub parent: BTreeMap<u32, u32>,
    /// The first pid of the log (the traced shell).
    pub root: Option<u32>,
}

/// Turns events into accesses. `start_cwd` is where the traced shell
/// started; a process's working directory is tracked from its calls (strace
/// decodes `AT_FDCWD`), its `chdir`s, and its parent's at creation.
pub fn accesses(events: &[Event], start_cwd: &Path) -> Trace {
    let mut parent = BTreeMap::new();
    let mut first_cwd: BTreeMap<u32, PathBuf> = BTreeMap::new();
    let mut moved: BTreeSet<u32> = BTreeSet::new();
    for e in events {
        if matches!(e.name.as_str(), "clone" | "clone3" | "fork" | "vfork")
            && let Ret::Ok(child, _) = e.ret
            && let Ok(child) = u32::try_from(child)
            && child > 0
        {
            parent.insert(child, e.pid);
        }
        if matches!(e.name.as_str(), "chdir" | "fchdir") {
            moved.insert(e.pid);
        }
        if !moved.contains(&e.pid)
            && !first_cwd.contains_key(&e.pid)
            && let Some(DirFd::Path(p)) = e.args.first().map(|a| dirfd_arg(a))
            && e.args.first().is_some_and(|a| a.starts_with("AT_FDCWD"))
        {
            first_cwd.insert(e.pid, p);
        }
    }
    let root = events.first().map(|e| e.pid);
    let mut cwd: BTreeMap<u32, PathBuf> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if !cwd.contains_key(&e.pid) {
            let inherited = first_cwd
                .get(&e.pid)
                .or_else(|| parent.get(&e.pid).and_then(|p| cwd.get(p)))
                .cloned()
                .unwrap_or_else(|| start_cwd.to_path_buf());
            cwd.insert(e.pid, inherited);
        }
        if let Some(DirFd::Path(p)) = e
            .args
            .first()
            .filter(|a| a.starts_with("AT_FDCWD"))
            .map(|a| dirfd_arg(a))
        {
            cwd.insert(e.pid, p);
        }
        let here = cwd.get(&e.pid).cloned().unwrap_or_else(|| start_cwd.to_path_buf());
        let Some(spec) = spec(&e.name) else { continue };
        for &(dirfd, index, kind) in spec {
            let base = match dirfd.map(|d| e.args.get(d).map_or(DirFd::Unknown, |a| dirfd_arg(a))) {
                None | Some(DirFd::Cwd) => Some(here.clone()),
                Some(DirFd::Path(p)) => Some(p),
                Some(DirFd::Unknown) => None,
            };
            let named = if index == usize::MAX {
                Some(Vec::new())
            } else {
                match e.args.get(index) {
                    Some(a) if a == "NULL" => Some(Vec::new()),
                    Some(a) => string_arg(a),
                    None => None,
                }
            };
            let Some(named) = named else { continue };
            let named = PathBuf::from(OsString::from_vec(named));
            let path = if named.is_absolute() {
                named
            } else if let Some(base) = base {
                if named.as_os_str().is_empty() {
                    base
                } else {
                    base.join(named)
                }
            } else {
                // A directory fd strace could not name (a pipe, a socket):
                // keep the bare name; the judge treats it as unplaced.
                named
            };
            let kind = refine(e, kind);
            let follow = follows(e, index);
            let opened = match (&e.ret, e.name.as_str()) {
                (Ret::Ok(_, p), "open" | "openat" | "openat2" | "creat") => p.clone(),
                _ => None,
            };
            let argv = if kind == Kind::Exec && e.ret.ok() {
                let at = if e.name == "execveat" { 2 } else { 1 };
                e.args
                    .get(at)
                    .map(|a| argv_arg(a))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|w| String::from_utf8_lossy(&w).into_owned())
                    .collect()
            } else {
                Vec::new()
            };
            if kind == Kind::Chdir && e.ret.ok() {
                cwd.insert(e.pid, lexical(&path));
            }
            out.push(Access {
                line: e.line,
                pid: e.pid,
                kind,
                path,
                follow,
                opened,
                ok: e.ret.ok(),
                argv,
                cwd: here.clone(),
            });
        }
    }
    Trace {
        accesses: out,
        parent,
        root,
    }
}

/// An open's kind from its flags; `unlinkat`'s and friends' stay writes.
fn refine(e: &Event, kind: Kind) -> Kind {
    let flags = match e.name.as_str() {
        "open" => e.args.get(1),
        "openat" | "openat2" => e.args.get(2),
        "creat" => return Kind::Write,
        _ => return kind,
    };
    let flags = flags.map(String::as_str).unwrap_or("");
    let has = |f: &str| {
        flags
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == f)
    };
    if ["O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND"]
        .iter()
        .any(|f| has(f))
    {
        Kind::Write
    } else if has("O_PATH") {
        Kind::Meta
    } else {
        Kind::Read
    }
}

/// Whether the call resolves a symlink in the last component of its path.
fn follows(e: &Event, index: usize) -> bool {
    let all = e.args.join(",");
    let flag = |f: &str| all.contains(f);
    match e.name.as_str() {
        "open" | "openat" | "openat2" | "creat" => !(flag("O_NOFOLLOW") || (flag("O_CREAT") && flag("O_EXCL"))),
        "lstat" | "lstat64" | "readlink" | "readlinkat" | "lgetxattr" | "llistxattr" | "lchown" | "lsetxattr"
        | "lremovexattr" | "unlink" | "unlinkat" | "rmdir" | "rename" | "renameat" | "renameat2" | "symlink"
        | "symlinkat" | "mkdir" | "mkdirat" | "mknod" | "mknodat" => false,
        "link" | "linkat" => index == 0 && flag("AT_SYMLINK_FOLLOW"),
        "newfstatat" | "fstatat64" | "statx" | "faccessat2" | "fchownat" | "utimensat" | "fchmodat2" => {
            !flag("AT_SYMLINK_NOFOLLOW")
        }
        _ => true,
    }
}

/// `..` and `.` removed without looking at the file system.
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Event {
        let mut all = parse(line);
        assert_eq!(all.len(), 1, "{line}");
        all.remove(0)
    }

    #[test]
    fn lines_split_into_calls() {
        let e = one(r#"7     openat(AT_FDCWD</w/repo/sub>, "../../root.key", O_RDONLY) = 3</w/root.key>"#);
        assert_eq!((e.pid, e.name.as_str()), (7, "openat"));
        assert_eq!(e.args, ["AT_FDCWD</w/repo/sub>", r#""../../root.key""#, "O_RDONLY"]);
        assert_eq!(e.ret, Ret::Ok(3, Some("/w/root.key".into())));
        let e = one(r#"5 openat(AT_FDCWD</w/a(b>, "x, y)", O_RDONLY) = -1 ENOENT (No such file or directory)"#);
        assert_eq!(e.args.len(), 3);
        assert_eq!(e.ret, Ret::Err("ENOENT".into()));
        let e = one(r#"6 wait4(-1, [{WIFEXITED(s) && WEXITSTATUS(s) == 0}], 0, NULL) = 7"#);
        assert_eq!(e.args.len(), 4);
        assert_eq!(e.ret, Ret::Ok(7, None));
    }

    #[test]
    fn halves_join_and_notes_are_skipped() {
        let log = "9     openat(AT_FDCWD</w/repo>, \"a.txt\", O_RDONLY <unfinished ...>\n\
                   10    exit_group(0)                     = ?\n\
                   10    +++ exited with 0 +++\n\
                   9     <... openat resumed>)             = 3</w/repo/a.txt>\n\
                   11    execve(\"/usr/bin/x\", [\"x\"], 0x1 /* 2 vars */ <unfinished ...>";
        let all = parse(log);
        let names: Vec<_> = all.iter().map(|e| (e.line, e.name.as_str())).collect();
        assert_eq!(names, [(1, "openat"), (2, "exit_group"), (5, "execve")]);
        assert_eq!(all[0].ret, Ret::Ok(3, Some("/w/repo/a.txt".into())));
        assert_eq!(all[2].ret, Ret::Unknown);
    }

    #[test]
    fn escapes_decode_to_bytes() {
        assert_eq!(unescape(r"\357\275\236/.c"), "～/.c".as_bytes());
        assert_eq!(unescape(r#"a\"b\\c\n\x41"#), b"a\"b\\c\nA");
        assert_eq!(string_arg(r#""abc"..."#), Some(b"abc".to_vec()));
        let e = one(r#"7 openat(AT_FDCWD</w/repo>, "\357\275\236/x", O_RDONLY) = 3</w/repo/\357\275\236/x>"#);
        assert_eq!(e.ret, Ret::Ok(3, Some("/w/repo/～/x".into())));
    }

    #[test]
    fn accesses_resolve_relative_names() {
        let log = r#"5 execve("/bin/bash", ["/bin/bash", "-c", "x"], 0x1 /* 2 vars */) = 0
5 chdir("sub") = 0
5 access("../x", R_OK) = 0
5 clone(child_stack=NULL, flags=SIGCHLD) = 6
6 execve("./run.sh", ["./run.sh", "a b"], 0x1 /* 2 vars */) = 0
6 openat(3</w/repo/.git>, "config", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 4</w/repo/.git/config>
6 newfstatat(AT_FDCWD</w/repo/sub>, "l", {st_mode=S_IFREG}, AT_SYMLINK_NOFOLLOW) = 0
6 unlinkat(AT_FDCWD</w/repo/sub>, "gone", 0) = -1 ENOENT (No such file or directory)
6 fchmod(4</w/repo/.git/config>, 0755) = 0"#;
        let t = accesses(&parse(log), Path::new("/w/repo"));
        let got: Vec<_> = t
            .accesses
            .iter()
            .map(|a| (a.pid, a.kind, a.path.display().to_string(), a.follow, a.ok))
            .collect();
        assert_eq!(
            got,
            [
                (5, Kind::Exec, "/bin/bash".into(), true, true),
                (5, Kind::Chdir, "/w/repo/sub".into(), true, true),
                (5, Kind::Meta, "/w/repo/sub/../x".into(), true, true),
                (6, Kind::Exec, "/w/repo/sub/./run.sh".into(), true, true),
                (6, Kind::Write, "/w/repo/.git/config".into(), true, true),
                (6, Kind::Meta, "/w/repo/sub/l".into(), false, true),
                (6, Kind::Write, "/w/repo/sub/gone".into(), false, false),
                (6, Kind::Write, "/w/repo/.git/config".into(), true, true),
            ]
        );
        assert_eq!(t.parent.get(&6), Some(&5));
        assert_eq!(t.accesses[3].argv, ["./run.sh", "a b"]);
        assert_eq!(t.root, Some(5));
    }

    #[test]
    fn lexical_normalises() {
        assert_eq!(
            lexical(Path::new("/w/repo/sub/../../root.key")),
            Path::new("/w/root.key")
        );
        assert_eq!(lexical(Path::new("/../x/./y")), Path::new("/x/y"));
    }
}
