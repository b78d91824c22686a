#!/usr/bin/env bash
# Install, with apt-get and only when absent, what the supervision crate's
# sandbox oracle tier (supervision/tests/oracle.rs) needs: bubblewrap and
# strace (the sandbox and its recorder; without them the tier fails), and the
# real programs the corpus's approved commands run: make, git, ripgrep, Node
# with npm, Go (offline builds of a module without dependencies) and Debian's
# python3 with pytest (python3-pytest: the sandbox trusts programs under /usr
# only, and Debian's python3 is externally managed, so pytest comes from the
# distribution, pinned by it). tsc, eslint, vitest, pnpm, yarn and bun need a
# JavaScript package registry and are not installed: the tier reports them as
# absent. Nothing is downloaded but Debian packages.
#
# Usage: deploy/scripts/install-oracle-tools.sh
#
# Idempotent: present programs are reused. Prints one line per tool's version
# on stderr.
set -euo pipefail
WARREN_LOG_TAG=install-oracle-tools
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

need=()
have() { command -v "$1" >/dev/null 2>&1; }
have bwrap || need+=(bubblewrap)
have strace || need+=(strace)
have make || need+=(make)
have git || need+=(git)
have rg || need+=(ripgrep)
have node || need+=(nodejs)
have npm || need+=(npm)
[ -x /usr/bin/go ] || need+=(golang-go)
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import pytest' 2>/dev/null || need+=(python3 python3-pytest)
if [ "${#need[@]}" -gt 0 ]; then
    ensure_pkgs "the sandbox oracle tier" "${need[@]}"
fi
have bwrap || die "bwrap is still missing after apt-get install"
have strace || die "strace is still missing after apt-get install"
log "$(bwrap --version)"
log "$(strace -V | sed -n 1p)"
log "$(make --version | sed -n 1p); $(git --version); $(rg --version | sed -n 1p)"
log "node $(node --version), npm $(npm --version); $(/usr/bin/go version)"
log "$(/usr/bin/python3 --version), pytest $(/usr/bin/python3 -c 'import pytest; print(pytest.__version__)')"
