#!/usr/bin/env bash
# Fetch the Claude Code CLI (a self-contained linux/x86_64 executable) without
# npm: it ships inside the claude-agent-sdk wheel on PyPI, which pip can reach.
#
# Usage: deploy/scripts/fetch-claude.sh [DEST_DIR]
#
# DEST_DIR (default: <repo>/target/tools) caches the wheel and the extracted
# binary. Idempotent: a binary that already passes the version check is reused,
# and a wheel already in the cache with the pinned sha256 is not downloaded again.
# Prints the path of the verified binary on stdout (the only stdout line).
set -euo pipefail
WARREN_LOG_TAG=fetch-claude
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Pins. Bump all four together.
SDK_VERSION="0.2.189"
WHEEL="claude_agent_sdk-${SDK_VERSION}-py3-none-manylinux_2_17_x86_64.whl"
WHEEL_SHA256="b26a6a30a4e2cb025a6f5c95e1ce4469b38fcc51015c392f627bea7c948d67ad"
CLAUDE_VERSION="2.1.332"
MEMBER="claude_agent_sdk/_bundled/claude"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
DEST="${1:-$WARREN_REPO/target/tools}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
BIN_DIR="$DEST/claude-$CLAUDE_VERSION"
BIN="$BIN_DIR/claude"

version_ok() {
    local out
    out="$(timeout 60 "$1" --version 2>/dev/null </dev/null)" || return 1
    case "$out" in "$CLAUDE_VERSION"*) return 0 ;; *) log "unexpected version from $1: $out"; return 1 ;; esac
}

if [ "$(uname -m)" != x86_64 ]; then
    die "the pinned wheel holds a linux/x86_64 binary; this host is $(uname -m) and could not run the version check"
fi

if [ -x "$BIN" ] && version_ok "$BIN"; then
    log "reusing verified $BIN ($CLAUDE_VERSION)"
    printf '%s\n' "$BIN"
    exit 0
fi

command -v python3 >/dev/null 2>&1 || ensure_pkgs "fetching the Claude Code CLI" python3

# --- the wheel -------------------------------------------------------------
pinned_wheel "$DEST" claude-agent-sdk "$SDK_VERSION" "$WHEEL" "$WHEEL_SHA256" "~180 MB"

# --- the binary ------------------------------------------------------------
mkdir -p "$BIN_DIR"
log "extracting $MEMBER"
python3 - "$DEST/$WHEEL" "$MEMBER" "$BIN.partial" <<'EOF'
import shutil, sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(out, "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
chmod 0755 "$BIN.partial"
version_ok "$BIN.partial" || die "extracted binary does not report version $CLAUDE_VERSION"
mv "$BIN.partial" "$BIN"
log "verified $BIN ($CLAUDE_VERSION)"
printf '%s\n' "$BIN"
