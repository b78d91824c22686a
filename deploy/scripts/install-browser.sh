#!/usr/bin/env bash
# Install Debian's Chromium and its WebDriver (chromium, chromium-driver) with
# apt-get when either is absent: the web console's browser tests
# (warren/tests/browser.rs) drive headless Chromium through /usr/bin/chromedriver.
# Nothing is downloaded but Debian packages.
#
# Usage: deploy/scripts/install-browser.sh
#
# Idempotent: present binaries are reused. Prints the chromedriver path on
# stdout (the only stdout line).
set -euo pipefail
WARREN_LOG_TAG=install-browser
# shellcheck source=lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

case "${1:-}" in -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;; esac

if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    ensure_pkgs "the web console's browser tests" chromium chromium-driver fonts-dejavu-core
fi
command -v chromium >/dev/null 2>&1 || die "chromium is still missing after apt-get install"
command -v chromedriver >/dev/null 2>&1 || die "chromedriver is still missing after apt-get install"
log "$(chromium --version 2>/dev/null || echo 'chromium (version unknown)')"
log "$(chromedriver --version 2>/dev/null | head -1 || echo 'chromedriver (version unknown)')"
command -v chromedriver
