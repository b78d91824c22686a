#!/usr/bin/env bash
# Install the aider CLI (aider-chat from PyPI) into a venv for local runs and
# the local real-CLI tests, pinned like the aider guest image: the same
# version and the same constraints (deploy/images/aider/constraints.txt).
#
# Usage: deploy/scripts/fetch-aider.sh [DEST_DIR]
#
# DEST_DIR (default: <repo>/target/tools) holds the venv, aider-<version>/.
# Idempotent: a venv whose aider already passes the version check and whose
# constraints are unchanged is reused without touching the index. Prints the
# path of the verified aider executable on stdout (the only stdout line).
set -euo pipefail
WARREN_LOG_TAG=fetch-aider
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Keep in step with AIDER_VERSION in deploy/images/aider/Dockerfile.
AIDER_VERSION="0.86.2"
CONSTRAINTS="$WARREN_DEPLOY/images/aider/constraints.txt"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
DEST="${1:-$WARREN_REPO/target/tools}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
VENV="$DEST/aider-$AIDER_VERSION"
BIN="$VENV/bin/aider"
STAMP="$VENV/.warren-constraints.sha256"

grep -qx "aider-chat==$AIDER_VERSION" "$CONSTRAINTS" \
    || die "$CONSTRAINTS does not pin aider-chat==$AIDER_VERSION: bump both together"
WANT="$(sha256sum "$CONSTRAINTS" | cut -d' ' -f1)"

version_ok() {
    local out
    # aider may write caches under $HOME: a HOME of its own keeps the check clean.
    mkdir -p "$DEST/.aider-check-home"
    out="$(HOME="$DEST/.aider-check-home" AIDER_CHECK_UPDATE=false AIDER_ANALYTICS=false \
        timeout 120 "$1" --version 2>/dev/null </dev/null)" || return 1
    case "$out" in *"$AIDER_VERSION"*) return 0 ;; *) log "unexpected version from $1: $out"; return 1 ;; esac
}

if [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] && version_ok "$BIN"; then
    log "reusing verified $BIN ($AIDER_VERSION)"
    printf '%s\n' "$BIN"
    exit 0
fi

command -v python3 >/dev/null 2>&1 || ensure_pkgs "installing aider" python3 python3-venv
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_pkgs "installing aider" python3-venv
case "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" in
    3.10|3.11|3.12) ;;
    *) warn "the constraints were resolved for Python 3.11; $(python3 --version) may not find every pinned wheel" ;;
esac

# The stamp is written last: an interrupted install is redone from scratch.
rm -rf "$VENV"
log "creating a venv in $VENV and installing aider-chat==$AIDER_VERSION with pip (a few minutes the first time)"
START=$(now)
python3 -m venv "$VENV" >&2
PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/python" -m pip install --quiet --retries 2 \
    --constraint "$CONSTRAINTS" "aider-chat==$AIDER_VERSION" >&2 \
    || die "pip install of aider-chat==$AIDER_VERSION failed (is PyPI, or the index pip is configured with, reachable?)"
version_ok "$BIN" || die "$BIN does not report version $AIDER_VERSION"
printf '%s\n' "$WANT" > "$STAMP"
log "verified $BIN ($AIDER_VERSION) in $(( $(now) - START ))s"
printf '%s\n' "$BIN"
