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
