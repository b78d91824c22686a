#!/usr/bin/env bash
# Install py-libp2p (libp2p from PyPI, an independent implementation of
# libp2p) into a venv for the netlab's interop test: tests-netlab/py/outsider.py
# runs in it as a non-member that connects to a node (noise + yamux), pings it,
# reads its identify and tries for more. Pinned: one version and the exact
# versions of everything it pulls in (tests-netlab/py/constraints.txt).
#
# Usage: deploy/scripts/fetch-py-libp2p.sh [DEST_DIR]
#
# DEST_DIR (default: <repo>/target/tools) holds the venv, py-libp2p/.
# Idempotent: a venv whose libp2p already passes the version check and whose
# constraints are unchanged is reused without touching the index. Prints the
# path of the venv's verified python on stdout (the only stdout line).
set -euo pipefail
WARREN_LOG_TAG=fetch-py-libp2p
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

# Bump together with the constraints (their comment says how to refresh them).
LIBP2P_VERSION="0.8.1"
CONSTRAINTS="$WARREN_REPO/tests-netlab/py/constraints.txt"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac
DEST="${1:-$WARREN_REPO/target/tools}"
mkdir -p "$DEST"
DEST="$(cd "$DEST" && pwd)"
VENV="$DEST/py-libp2p"
PY="$VENV/bin/python"
STAMP="$VENV/.warren-constraints.sha256"

grep -qx "libp2p==$LIBP2P_VERSION" "$CONSTRAINTS" \
    || die "$CONSTRAINTS does not pin libp2p==$LIBP2P_VERSION: bump both together"
WANT="$(sha256sum "$CONSTRAINTS" | cut -d' ' -f1)"

# The installed version, and the modules the outsider imports (noise, yamux,
# identify, ping, gossipsub; cbor2 for the fleet protocol's requests).
version_ok() {
    local out
    out="$(timeout 120 "$1" -c '
import importlib.metadata as m
import cbor2, libp2p.security.noise.transport, libp2p.stream_muxer.yamux.yamux
import libp2p.identity.identify.identify, libp2p.host.ping, libp2p.pubsub.gossipsub
print(m.version("libp2p"))' 2>/dev/null </dev/null)" || return 1
    [ "$out" = "$LIBP2P_VERSION" ] && return 0
    log "unexpected libp2p version in $1: $out"
    return 1
}

if [ -x "$PY" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] && version_ok "$PY"; then
    log "reusing verified $VENV (libp2p $LIBP2P_VERSION)"
    printf '%s\n' "$PY"
    exit 0
fi

command -v python3 >/dev/null 2>&1 || ensure_pkgs "installing py-libp2p" python3 python3-venv
python3 -c 'import venv, ensurepip' 2>/dev/null || ensure_pkgs "installing py-libp2p" python3-venv
case "$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" in
    3.10|3.11|3.12) ;;
    *) warn "the constraints were resolved for Python 3.11; $(python3 --version) may not find every pinned wheel" ;;
esac

# The stamp is written last: an interrupted install is redone from scratch.
rm -rf "$VENV"
log "creating a venv in $VENV and installing libp2p==$LIBP2P_VERSION with pip"
START=$(now)
python3 -m venv "$VENV" >&2
PIP_DISABLE_PIP_VERSION_CHECK=1 "$PY" -m pip install --quiet --retries 2 \
    --constraint "$CONSTRAINTS" "libp2p==$LIBP2P_VERSION" >&2 \
    || die "pip install of libp2p==$LIBP2P_VERSION failed (is PyPI, or the index pip is configured with, reachable?)"
version_ok "$PY" || die "$VENV does not import libp2p $LIBP2P_VERSION with noise, yamux, identify, ping and gossipsub"
printf '%s\n' "$WANT" > "$STAMP"
log "verified $VENV (libp2p $LIBP2P_VERSION) in $(( $(now) - START ))s"
printf '%s\n' "$PY"
