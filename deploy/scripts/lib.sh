# shellcheck shell=bash
# Shared helpers for the deploy/ scripts. Source it; do not execute it.

# Repository root: deploy/scripts/lib.sh -> ../..
WARREN_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WARREN_DEPLOY="$WARREN_REPO/deploy"

# Progress goes to stderr so that stdout stays machine-readable.
log()  { printf '[%s] %s\n' "${WARREN_LOG_TAG:-deploy}" "$*" >&2; }
warn() { printf '[%s] WARNING: %s\n' "${WARREN_LOG_TAG:-deploy}" "$*" >&2; }
die()  { printf '[%s] ERROR: %s\n' "${WARREN_LOG_TAG:-deploy}" "$1" >&2; exit "${2:-1}"; }

# Seconds since the epoch, for "took Ns" lines.
now() { date +%s; }

# Set SUDO to "" when root, "sudo" when passwordless sudo works; otherwise die
# naming what is missing ($1 describes what root is needed for).
need_root() {
    if [ "$(id -u)" -eq 0 ]; then
        SUDO=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo"
    else
        die "root is needed to $1: run as root, or install sudo and allow this user passwordless sudo"
    fi
}

# Install Debian packages with apt-get (sudo when not root); $1 says what they
# are needed for. Usage: ensure_pkgs "bootstrapping the base" mmdebstrap
ensure_pkgs() {
    local why="$1"; shift
    command -v apt-get >/dev/null 2>&1 \
        || die "apt-get not found: cannot install $* (needed for $why); install them by hand"
    need_root "install $* (needed for $why)"
    log "installing $* with apt-get (needed for $why)"
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2; then
        log "apt-get install failed; running apt-get update and retrying"
        $SUDO apt-get update -q >&2 || die "apt-get update failed"
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2 \
            || die "could not install $* with apt-get"
    fi
}

# Docker must be usable by this user; die clearly otherwise.
need_docker() {
    command -v docker >/dev/null 2>&1 || die "docker CLI not found: install Docker (docker.io or docker-ce)"
    docker info >/dev/null 2>&1 \
        || die "cannot talk to the Docker daemon (is it running, and is $(id -un) in the docker group?)"
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# pinned_wheel DEST DIST VERSION WHEEL SHA256 SIZE
# Ensures DEST/WHEEL is the pinned wheel of PyPI distribution DIST==VERSION
# (a manylinux x86_64 wheel, no dependencies): reused when its sha256 matches,
# else downloaded with pip (--require-hashes: pip itself refuses anything else)
# into a temporary dir under DEST and moved into place. SIZE is for the log.
pinned_wheel() {
    local dest="$1" dist="$2" version="$3" wheel="$4" sha="$5" size="$6" pip tmp start
    wheel_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$sha" ]; }
    if wheel_ok "$dest/$wheel"; then
        log "reusing cached wheel $dest/$wheel (sha256 ok)"
        return 0
    fi
    rm -f "$dest/$wheel"
    command -v python3 >/dev/null 2>&1 || ensure_pkgs "downloading $dist" python3
    # A pip: python3 -m pip, else a throw-away venv (ensurepip needs no network).
    if python3 -m pip --version >/dev/null 2>&1; then
        pip=(python3 -m pip)
    else
        python3 -c 'import ensurepip' 2>/dev/null || ensure_pkgs "downloading $dist" python3-venv
        log "python3 has no pip; creating a venv in $dest/.pip-venv for it"
        python3 -m venv "$dest/.pip-venv" >&2
        pip=("$dest/.pip-venv/bin/python" -m pip)
    fi
    tmp="$(mktemp -d "$dest/.download.XXXXXX")"
    printf '%s==%s --hash=sha256:%s\n' "$dist" "$version" "$sha" > "$tmp/requirements.txt"
    log "downloading $dist==$version ($size) with pip"
    start=$(now)
    # --platform pins the x86_64 manylinux wheel whatever pip's own tags are.
    if ! "${pip[@]}" download --no-deps --only-binary=:all: --no-cache-dir \
        --platform manylinux_2_17_x86_64 --require-hashes \
        -r "$tmp/requirements.txt" -d "$tmp" >&2; then
        rm -rf "$tmp"
        die "pip download of $dist==$version failed (is PyPI, or the index pip is configured with, reachable?)"
    fi
    if ! wheel_ok "$tmp/$wheel"; then
        rm -rf "$tmp"
        die "downloaded wheel $wheel missing or its sha256 is not $sha"
    fi
    mv "$tmp/$wheel" "$dest/$wheel"
    rm -rf "$tmp"
    log "wheel downloaded and verified in $(( $(now) - start ))s"
}
