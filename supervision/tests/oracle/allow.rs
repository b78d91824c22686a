//! What the oracle lets programs do outside the worktree by themselves, and
//! which programs an allowlisted program may run. Every allowance says why;
//! none covers a secret, the agent's home, a path the command line names, or
//! a redirection the shell makes (see `judge`).

/// Reads outside the worktree that programs make on their own: `(path or
/// prefix ending in '/', why)`.
pub const INHERENT_READS: &[(&str, &str)] = &[
    (
        "/usr/",
        "installed programs and shared libraries, interpreters' standard libraries (Python, Node, Go's \
         GOROOT), locale, terminfo, git's templates: what any program loads",
    ),
    ("/etc/ld.so.cache", "the dynamic loader's index of libraries"),
    (
        "/etc/nsswitch.conf",
        "libc's name-service setup, read before a user lookup",
    ),
    (
        "/etc/passwd",
        "libc's user lookup: git's and bash's own user and home directory",
    ),
    ("/etc/group", "libc's group lookup"),
    ("/etc/localtime", "timestamps in the local time zone (git log, make)"),
    (
        "/etc/locale.alias",
        "libc's locale name aliases, read when a program sets its locale from LANG",
    ),
    (
        "/etc/gitconfig",
        "git's system configuration, read by every git command",
    ),
    (
        "/etc/python3*",
        "Debian's Python site configuration (sitecustomize), read at interpreter start",
    ),
    (
        "/etc/alternatives/",
        "Debian's program alternatives: `cc` resolves through them",
    ),
    (
        "/etc/ssl/openssl.cnf",
        "OpenSSL's configuration, loaded by Node at start",
    ),
    (
        "/etc/ssl/certs/",
        "the public CA certificates: cargo, Node and Python load the trust store at start (no network here)",
    ),
    (
        "/etc/resolv.conf",
        "the resolver's configuration, read by Node's DNS library at start (the sandbox has no network)",
    ),
    (
        "/etc/hosts",
        "static host names, read with the resolver's configuration",
    ),
    ("/etc/host.conf", "the resolver's host lookup order"),
    ("/etc/gai.conf", "address selection for name lookups"),
    (
        "/etc/mime.types",
        "file types by extension (Python's mimetypes, imported by pytest's plugins)",
    ),
    (
        "/proc/",
        "the sandbox's own pid namespace: only the command's processes (self, maps, status, cgroup) and \
         kernel counters (cpuinfo, meminfo, stat)",
    ),
    (
        "/sys/",
        "read-only kernel facts: online CPUs, the cgroup's CPU quota, transparent huge page size",
    ),
];

/// Device files any process may read and write: `(path or prefix, why)`.
pub const DEVICES: &[(&str, &str)] = &[
    ("/dev/null", "the bit bucket (`2>/dev/null`, git's and cargo's own use)"),
    ("/dev/zero", "zeros"),
    ("/dev/full", "a full device"),
    ("/dev/urandom", "randomness (hash seeds, temporary names)"),
    ("/dev/random", "randomness"),
    ("/dev/tty", "a check for a terminal; the sandbox has none"),
    ("/dev/ptmx", "a pseudo-terminal request"),
    ("/dev/pts/", "pseudo-terminals"),
    ("/dev/fd/", "the process's own descriptors"),
    ("/dev/stdin", "the process's own input"),
    ("/dev/stdout", "the process's own output"),
    ("/dev/stderr", "the process's own error output"),
    ("/dev/shm/", "POSIX shared memory (semaphores of Python and Node)"),
];

/// Where installed programs live. The Rust toolchain's directories (the
/// sandbox binds them read-only) count too.
pub const PROGRAM_DIRS: &[&str] = &[
    "/usr/bin/",
    "/usr/sbin/",
    "/usr/local/bin/",
    "/usr/local/sbin/",
    "/usr/lib/",
    "/usr/libexec/",
    "/usr/local/lib/",
    "/usr/local/libexec/",
    "/bin/",
    "/sbin/",
];

/// The system C compiler driver and the programs it runs (with the Rust
/// toolchain's lld: gcc runs its `ld.lld` shim, which runs `rust-lld`).
const C_TOOLCHAIN: &[&str] = &[
    "cc",
    "c++",
    "gcc",
    "gcc-12",
    "x86_64-linux-gnu-gcc-12",
    "collect2",
    "ld",
    "ld.bfd",
    "ld.gold",
    "as",
    "cc1",
    "lto-wrapper",
    "ld.lld",
    "rust-lld",
];

/// The programs each program may run: `(program, helpers, why)`. A name
/// ending in `*` is a prefix. A helper is accepted when any earlier program
/// of the process or of its ancestors lists it.
pub const HELPERS: &[(&str, &[&str], &str)] = &[
    (
        "cargo",
        &[
            "cargo",
            "rustc",
            "rustdoc",
            "clippy-driver",
            "cargo-clippy",
            "cargo-fmt",
            "rustfmt",
            "cargo-nextest",
        ],
        "the rustup proxy runs the toolchain's cargo, which runs the compiler, the lint and format \
         drivers, and nextest (an allowlisted subcommand)",
    ),
    ("rustc", C_TOOLCHAIN, "rustc links through the system C compiler driver"),
    (
        "rustdoc",
        C_TOOLCHAIN,
        "rustdoc links doctests through the C compiler driver",
    ),
    ("clippy-driver", C_TOOLCHAIN, "clippy-driver is rustc with lints"),
    (
        "cc",
        C_TOOLCHAIN,
        "the C compiler driver runs its compiler, assembler and linker",
    ),
    (
        "gcc",
        C_TOOLCHAIN,
        "the C compiler driver runs its compiler, assembler and linker",
    ),
    (
        "gcc-12",
        C_TOOLCHAIN,
        "the C compiler driver runs its compiler, assembler and linker",
    ),
    ("collect2", C_TOOLCHAIN, "gcc's link wrapper runs the linker"),
    ("make", &["sh", "bash"], "make runs recipes through its shell"),
    (
        "npm",
        &["node", "npm", "sh"],
        "npm is a Node program (its `#!/usr/bin/env node` runs node); package scripts run through sh",
    ),
    (
        "pnpm",
        &["node", "pnpm", "sh"],
        "a Node program; scripts run through sh",
    ),
    (
        "yarn",
        &["node", "yarn", "sh"],
        "a Node program; scripts run through sh",
    ),
    ("bun", &["bun", "sh"], "scripts run through sh"),
    ("tsc", &["node"], "a Node program"),
    ("vitest", &["node"], "a Node program"),
    ("eslint", &["node"], "a Node program"),
    (
        "go",
        &[
            "go",
            "compile",
            "link",
            "asm",
            "vet",
            "cgo",
            "buildid",
            "pack",
            "cover",
            "test2json",
            "gofmt",
            "doc",
            "git",
            "cc",
            "gcc",
        ],
        "go runs its toolchain programs from GOROOT (gofmt for `go fmt`, doc for `go doc`), the C compiler for cgo, and git to stamp \
         the version",
    ),
    (
        "git",
        &["git", "git-*"],
        "git runs its own subcommands and helpers from its exec path",
    ),
    ("pytest", &["python3*"], "pytest is a Python program"),
    ("python", &["python3*"], "the interpreter under its versioned name"),
    ("python3", &["python3*"], "the interpreter under its versioned name"),
];

/// Whether `name` is a helper of program `of`.
pub fn helper_of(of: &str, name: &str) -> bool {
    HELPERS.iter().filter(|(p, _, _)| *p == of).any(|(_, helpers, _)| {
        helpers.iter().any(|h| match h.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => *h == name,
        })
    })
}

/// Whether `path` is covered by an entry of `table`: exactly, under an
/// entry that ends in `/` (or is that directory), or starting with an entry
/// that ends in `*`.
pub fn covered(table: &[(&str, &str)], path: &str) -> bool {
    table.iter().any(|(p, _)| {
        if let Some(prefix) = p.strip_suffix('*') {
            path.starts_with(prefix)
        } else if p.ends_with('/') {
            path.starts_with(p) || path == p.trim_end_matches('/')
        } else {
            path == *p
        }
    })
}
