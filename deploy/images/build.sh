#!/usr/bin/env bash
# Build the warren guest image of one harness, without any container registry.
#
# Usage: deploy/images/build.sh <harness> [--warren-bin PATH] [--tag TAG] [--rebuild] [--allow-npm]
#
#   <harness>          fake | claude | aider | codex | gemini | opencode
#   --warren-bin PATH  the warren binary to put in the image (default:
#                      target/release/warren, else target/debug/warren)
#   --tag TAG          also tag the result as TAG (a full name[:tag])
#   --rebuild          build even if the image for this content already exists
#   --allow-npm        build gemini/opencode without first checking that
#                      the npm registry answers from this host
#
# Ensures the base image (deploy/images/base/build.sh), assembles a temporary
# build context (Dockerfile, warren, for claude the Claude Code binary from
# deploy/scripts/fetch-claude.sh, for codex the Codex package from
# deploy/scripts/fetch-codex.sh), and tags warren/guest-<harness>:<version> and
# :latest, where <version> is the first 12 hex digits of a sha256 over the
# Dockerfile, the context files and the base image id: a new warren binary gives
# a new tag, an unchanged one reuses the existing image. Progress goes to
# stderr; the last line on stdout is the version tag.
#
# Exit status: 0 built or reused; 2 this harness cannot be built on this machine
# (its package registry is unreachable); 1 any other failure.
#
# Environment: WARREN_BASE_IMAGE (default warren/debian:bookworm),
# WARREN_BUILD_TIMEOUT (seconds, default 3600), WARREN_DOCKER_BUILD_NETWORK
# (passed to docker build --network), http_proxy/https_proxy/no_proxy (passed
# as build args, not kept in the image), PIP_INDEX_URL/PIP_EXTRA_INDEX_URL
# (aider; default: the host's pip configuration), NPM_CONFIG_REGISTRY (npm
# harnesses; default: the host's npm configuration).
set -euo pipefail
WARREN_LOG_TAG=images
# shellcheck source=../scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../scripts" && pwd)/lib.sh"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

HARNESS=""
WARREN_BIN=""
EXTRA_TAG=""
REBUILD=0
ALLOW_NPM=0
while [ $# -gt 0 ]; do
    case "$1" in
        --warren-bin) [ $# -ge 2 ] || die "--warren-bin needs a path" 2; WARREN_BIN="$2"; shift 2 ;;
        --warren-bin=*) WARREN_BIN="${1#*=}"; shift ;;
        --tag) [ $# -ge 2 ] || die "--tag needs a value" 2; EXTRA_TAG="$2"; shift 2 ;;
        --tag=*) EXTRA_TAG="${1#*=}"; shift ;;
        --rebuild) REBUILD=1; shift ;;
        --allow-npm) ALLOW_NPM=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) die "unknown option: $1 (try --help)" 2 ;;
        *) [ -z "$HARNESS" ] || die "only one harness at a time (got '$HARNESS' and '$1')" 2; HARNESS="$1"; shift ;;
    esac
done
[ -n "$HARNESS" ] || { usage >&2; exit 2; }
DOCKERFILE="$WARREN_DEPLOY/images/$HARNESS/Dockerfile"
[ "$HARNESS" != base ] && [ -f "$DOCKERFILE" ] \
    || die "unknown harness '$HARNESS' (known: $(cd "$WARREN_DEPLOY/images" && ls -d */ | tr -d / | grep -vx base | tr '\n' ' '))" 2

BASE_IMAGE="${WARREN_BASE_IMAGE:-warren/debian:bookworm}"
REPO_NAME="warren/guest-$HARNESS"
BUILD_ARGS=()
need_docker

# --- can this harness be built here? ----------------------------------------
case "$HARNESS" in
    gemini|opencode)
        if [ -n "${NPM_CONFIG_REGISTRY:-}" ]; then
            NPM_REGISTRY="$NPM_CONFIG_REGISTRY"
        elif command -v npm >/dev/null 2>&1; then
            NPM_REGISTRY="$(npm config get registry 2>/dev/null || true)"
        else
            NPM_REGISTRY=""
        fi
        if [ "$ALLOW_NPM" -eq 0 ]; then
            command -v npm >/dev/null 2>&1 || die "the $HARNESS image installs its CLI from the npm registry, and reachability cannot be checked here (no npm on this host); this machine's network reaches only Debian mirrors and PyPI as far as we know. On a machine that reaches npm, rerun with --allow-npm." 2
            log "checking that the npm registry (${NPM_REGISTRY:-npm default}) answers (20 s)"
            if ! timeout 20 npm ping ${NPM_REGISTRY:+--registry "$NPM_REGISTRY"} >/dev/null 2>&1 </dev/null; then
                die "the $HARNESS image installs $( case $HARNESS in gemini) echo @google/gemini-cli;; opencode) echo opencode-ai;; esac ) from the npm registry, which is not reachable from this machine (npm ping failed or timed out). Build it on a machine that reaches npm (or set NPM_CONFIG_REGISTRY to a reachable mirror); --allow-npm skips this check." 2
            fi
        fi
        # Only a non-default registry is passed on (the Dockerfile's npm has the default).
        if [ -n "$NPM_REGISTRY" ] && [ -n "${NPM_CONFIG_REGISTRY:-}" ]; then
            BUILD_ARGS+=(--build-arg "NPM_CONFIG_REGISTRY=$NPM_REGISTRY")
        fi
        ;;
    aider)
        # Honour the host's pip index configuration, like the base honours apt's.
        PIP_INDEX="${PIP_INDEX_URL:-}"
        PIP_EXTRA="${PIP_EXTRA_INDEX_URL:-}"
        if [ -z "$PIP_INDEX" ] && command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
            PIP_INDEX="$(python3 -m pip config get global.index-url 2>/dev/null || true)"
            [ -n "$PIP_EXTRA" ] || PIP_EXTRA="$(python3 -m pip config get global.extra-index-url 2>/dev/null || true)"
        fi
        [ -n "$PIP_INDEX" ] && { log "pip index from the host: $PIP_INDEX"; BUILD_ARGS+=(--build-arg "PIP_INDEX_URL=$PIP_INDEX"); }
        [ -n "$PIP_EXTRA" ] && { log "pip extra index from the host: $PIP_EXTRA"; BUILD_ARGS+=(--build-arg "PIP_EXTRA_INDEX_URL=$PIP_EXTRA"); }
        ;;
esac

# --- base image -------------------------------------------------------------
WARREN_BASE_IMAGE="$BASE_IMAGE" "$WARREN_DEPLOY/images/base/build.sh"
BASE_ID="$(docker image inspect -f '{{.Id}}' "$BASE_IMAGE")"

# --- build context ----------------------------------------------------------
if [ -z "$WARREN_BIN" ]; then
    for c in "$WARREN_REPO/target/release/warren" "$WARREN_REPO/target/debug/warren"; do
        [ -x "$c" ] && { WARREN_BIN="$c"; break; }
    done
    [ -n "$WARREN_BIN" ] || die "no warren binary: build one (cargo build --release -p warren) or pass --warren-bin PATH"
fi
[ -f "$WARREN_BIN" ] && [ -x "$WARREN_BIN" ] || die "--warren-bin $WARREN_BIN is not an executable file"
log "warren binary: $WARREN_BIN"

CTX="$(mktemp -d "${TMPDIR:-/tmp}/warren-image-$HARNESS.XXXXXX")"
trap 'rm -rf "$CTX"' EXIT
# The harness directory (Dockerfile and any files it COPYs), then the binaries.
find "$(dirname "$DOCKERFILE")" -maxdepth 1 -type f -exec cp {} "$CTX/" \;
# A copy, not a link: cargo may replace the binary while we hash and send it.
cp "$WARREN_BIN" "$CTX/warren"
chmod 0755 "$CTX/warren"
if [ "$HARNESS" = claude ]; then
    CLAUDE_BIN="$("$WARREN_DEPLOY/scripts/fetch-claude.sh" | tail -n 1)"
    # The fetched binary is immutable once verified: a hard link saves a 400 MB copy.
    ln "$CLAUDE_BIN" "$CTX/claude" 2>/dev/null || cp "$CLAUDE_BIN" "$CTX/claude"
fi
if [ "$HARNESS" = codex ]; then
    CODEX_BIN="$("$WARREN_DEPLOY/scripts/fetch-codex.sh" | tail -n 1)"
    # bin/codex's package directory as the wheel lays it out; hard links
    # save a 370 MB copy of the immutable, verified files.
    cp -al "$(dirname "$(dirname "$CODEX_BIN")")" "$CTX/codex" 2>/dev/null \
        || cp -a "$(dirname "$(dirname "$CODEX_BIN")")" "$CTX/codex"
fi

# --- content version --------------------------------------------------------
VERSION="$(
    {
        echo "base $BASE_ID"
        for a in "${BUILD_ARGS[@]}"; do echo "arg $a"; done
        (cd "$CTX" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
    } | sha256sum | cut -c1-12
)"
TAG="$REPO_NAME:$VERSION"

if [ "$REBUILD" -eq 0 ] && image_exists "$TAG"; then
    log "$TAG already exists (same Dockerfile, binaries and base); reusing it"
else
    log "building $TAG from $DOCKERFILE (progress follows)"
    START=$(now)
    net=()
    [ -n "${WARREN_DOCKER_BUILD_NETWORK:-}" ] && net=(--network "$WARREN_DOCKER_BUILD_NETWORK")
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
        [ -n "${!v:-}" ] && BUILD_ARGS+=(--build-arg "$v")   # predefined ARGs: not kept in the image
    done
    # The Dockerfiles work with both the classic builder and BuildKit. A newer
    # docker CLI without the buildx plugin refuses DOCKER_BUILDKIT=1: use the
    # classic builder then. BUILDKIT_PROGRESS=plain only matters with BuildKit.
    docker buildx version >/dev/null 2>&1 || export DOCKER_BUILDKIT=0
    rc=0
    BUILDKIT_PROGRESS=plain timeout --foreground "${WARREN_BUILD_TIMEOUT:-3600}" \
        docker build --rm --force-rm "${net[@]}" \
            --build-arg "BASE_IMAGE=$BASE_IMAGE" \
            --build-arg "WARREN_IMAGE_VERSION=$VERSION" \
            "${BUILD_ARGS[@]}" \
            -t "$TAG" "$CTX" >&2 || rc=$?
    if [ "$rc" -ne 0 ]; then
        [ "$rc" -eq 124 ] && die "docker build of $TAG timed out after ${WARREN_BUILD_TIMEOUT:-3600}s"
        case "$HARNESS" in
            aider) die "docker build of $TAG failed (rc $rc). The aider image needs, from inside docker build, the Debian mirrors of the base image's apt sources and a Python package index over HTTPS (pip's default or PIP_INDEX_URL); see the log above" ;;
            gemini|opencode) die "docker build of $TAG failed (rc $rc); it needs the npm registry from inside docker build; see the log above" ;;
            *) die "docker build of $TAG failed (rc $rc); see the log above" ;;
        esac
    fi
    log "built $TAG in $(( $(now) - START ))s"
fi

docker tag "$TAG" "$REPO_NAME:latest"
[ -z "$EXTRA_TAG" ] || docker tag "$TAG" "$EXTRA_TAG"
log "$TAG ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{ printf "%.1f MB", $1/1e6 }')) tagged $REPO_NAME:latest${EXTRA_TAG:+ and $EXTRA_TAG}"
printf '%s\n' "$TAG"
