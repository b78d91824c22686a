#!/usr/bin/env bash
# Build the image of the warren node itself (deploy/node/Dockerfile), without
# any container registry: FROM the local Debian base (deploy/images/base,
# built first when missing), with a warren binary built beforehand.
#
# Usage: deploy/node/build.sh [--warren-bin PATH] [--tag TAG]
#
#   --warren-bin PATH  the warren binary to put in the image (default:
#                      target/release/warren, else target/debug/warren;
#                      build it with: cargo build --release -p warren)
#   --tag TAG          the image name (default warren/node:latest)
#
# Progress goes to stderr; the last line on stdout is the tag.
# Environment: WARREN_BASE_IMAGE (default warren/debian:bookworm).
set -euo pipefail
WARREN_LOG_TAG=node-image
# shellcheck source=../scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts" && pwd)/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

WARREN_BIN=""
TAG="warren/node:latest"
while [ $# -gt 0 ]; do
    case "$1" in
        --warren-bin) [ $# -ge 2 ] || die "--warren-bin needs a path" 2; WARREN_BIN="$2"; shift 2 ;;
        --warren-bin=*) WARREN_BIN="${1#*=}"; shift ;;
        --tag) [ $# -ge 2 ] || die "--tag needs a value" 2; TAG="$2"; shift 2 ;;
        --tag=*) TAG="${1#*=}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument: $1 (try --help)" 2 ;;
    esac
done
BASE_IMAGE="${WARREN_BASE_IMAGE:-warren/debian:bookworm}"
need_docker

if [ -z "$WARREN_BIN" ]; then
    for c in "$WARREN_REPO/target/release/warren" "$WARREN_REPO/target/debug/warren"; do
        [ -x "$c" ] && { WARREN_BIN="$c"; break; }
    done
    [ -n "$WARREN_BIN" ] || die "no warren binary: build one (cargo build --release -p warren) or pass --warren-bin PATH"
fi
if [ ! -f "$WARREN_BIN" ] || [ ! -x "$WARREN_BIN" ]; then die "--warren-bin $WARREN_BIN is not an executable file"; fi
log "warren binary: $WARREN_BIN ($("$WARREN_BIN" --version))"

WARREN_BASE_IMAGE="$BASE_IMAGE" "$WARREN_DEPLOY/images/base/build.sh"

CTX="$(mktemp -d "${TMPDIR:-/tmp}/warren-node-image.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
cp "$WARREN_DEPLOY/node/Dockerfile" "$CTX/"
install -m 0755 "$WARREN_DEPLOY/node/entrypoint.sh" "$CTX/entrypoint.sh"
# A copy, not a link: cargo may replace the binary while we send it.
install -m 0755 "$WARREN_BIN" "$CTX/warren"
VERSION="$( (cd "$CTX" && sha256sum Dockerfile entrypoint.sh warren; docker image inspect -f '{{.Id}}' "$BASE_IMAGE") | sha256sum | cut -c1-12)"

docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0
START=$(now)
log "building $TAG ($VERSION)"
docker build --rm --force-rm \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    --build-arg "WARREN_IMAGE_VERSION=$VERSION" \
    -t "$TAG" "$CTX" >&2 || die "docker build of $TAG failed; see the log above"
log "built $TAG in $(( $(now) - START ))s ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{ printf "%.1f MB", $1/1e6 }'))"
printf '%s\n' "$TAG"
