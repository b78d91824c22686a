#!/usr/bin/env bash
# Fetch the Codex CLI (a static linux/x86_64 executable) without npm: OpenAI
# ships it in the openai-codex-cli-bin wheel on PyPI, which pip can reach. The
# wheel's package directory is kept as it is laid out (bin/codex beside
# codex-path/rg and codex-resources/bwrap, which Codex finds from its own path).
#
# Usage: deploy/scripts/fetch-codex.sh [DEST_DIR]
#
# DEST_DIR (default: <repo>/target/tools) caches the wheel and the extracted
# package. Idempotent: a binary that already passes the version check is reused,
# and a wheel already in the cache with the pinned sha256 is not downloaded again.
# Prints the path of the verified binary on stdout (the only stdout line).
set -euo pipefail
WARREN_LOG_TAG=fetch-codex
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Pins. Bump all three together.
CODEX_VERSION="0.163.0"
WHEEL="openai_codex_cli_bin-${CODEX_VERSION}-py3-none-manylinux_2_17_x86_64.whl"
WHEEL_SHA256="76db41fb07fdf9ddacbe892b48d21dfde270031ec0f5666b5e558114355f006d"
PACKAGE="codex_cli_bin"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
DEST="${1:-$WARREN_REPO/target/tools}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
PKG_DIR="$DEST/codex-$CODEX_VERSION"
BIN="$PKG_DIR/bin/codex"

version_ok() {
    local out
    out="$(timeout 60 "$1" --version 2>/dev/null </dev/null)" || return 1
    case "$out" in "codex-cli $CODEX_VERSION"*) return 0 ;; *) log "unexpected version from $1: $out"; return 1 ;; esac
}

if [ "$(uname -m)" != x86_64 ]; then
    die "the pinned wheel holds a linux/x86_64 binary; this host is $(uname -m) and could not run the version check"
fi

if [ -x "$BIN" ] && version_ok "$BIN"; then
    log "reusing verified $BIN ($CODEX_VERSION)"
    printf '%s\n' "$BIN"
    exit 0
fi

command -v python3 >/dev/null 2>&1 || ensure_pkgs "fetching the Codex CLI" python3

# --- the wheel -------------------------------------------------------------
pinned_wheel "$DEST" openai-codex-cli-bin "$CODEX_VERSION" "$WHEEL" "$WHEEL_SHA256" "~140 MB"

# --- the package -----------------------------------------------------------
rm -rf "$PKG_DIR.partial"
mkdir -p "$PKG_DIR.partial"
log "extracting $PACKAGE/"
python3 - "$DEST/$WHEEL" "$PACKAGE/" "$PKG_DIR.partial" <<'PY'
import os, shutil, sys, zipfile
wheel, prefix, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        if not info.filename.startswith(prefix) or info.is_dir():
            continue
        rel = info.filename[len(prefix):]
        if rel.startswith("/") or ".." in rel.split("/"):
            sys.exit(f"unsafe member {info.filename}")
        dest = os.path.join(out, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with z.open(info) as src, open(dest, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        # The wheel keeps each file's mode (its executables' run bits).
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(dest, mode or 0o644)
PY
version_ok "$PKG_DIR.partial/bin/codex" || die "extracted binary does not report version $CODEX_VERSION"
rm -rf "$PKG_DIR"
mv "$PKG_DIR.partial" "$PKG_DIR"
log "verified $BIN ($CODEX_VERSION)"
printf '%s\n' "$BIN"
