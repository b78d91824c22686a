#!/usr/bin/env bash
# Build the local Debian base image (default warren/debian:bookworm) that every
# warren guest image starts FROM. No container registry is used: the root
# filesystem is bootstrapped from Debian packages with mmdebstrap (or debootstrap
# as a fallback), using the mirrors this host's own apt is configured with, and
# turned into an image with `docker import`.
#
# Usage: deploy/images/base/build.sh [--rebuild]
#
# Environment (all optional):
#   WARREN_BASE_IMAGE          image name            (default warren/debian:bookworm)
#   WARREN_DEBIAN_SUITE        Debian codename       (default bookworm)
#   WARREN_DEBIAN_ARCH         Debian architecture   (default: the host's dpkg architecture)
#   WARREN_BASE_EXTRA_PACKAGES extra packages, comma separated, added to the base
#   WARREN_APT_SOURCES         one-line "deb URI SUITE COMPONENTS..." entries, newline
#                              separated, used instead of the host's apt sources
#   WARREN_BASE_HOST_CAS       1 (default) copies the host's local CA certificates
#                              (/usr/local/share/ca-certificates/**.crt) into the image,
#                              so TLS through the host's inspecting proxy (if any) works
#                              in builds and guests; 0 leaves Debian's CA set alone
#   WARREN_BOOTSTRAP           mmdebstrap | debootstrap (default: mmdebstrap, falling
#                              back to debootstrap when mmdebstrap cannot be installed)
set -euo pipefail
WARREN_LOG_TAG=base
# shellcheck source=../../scripts/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../../scripts" && pwd)/lib.sh"

IMAGE="${WARREN_BASE_IMAGE:-warren/debian:bookworm}"
SUITE="${WARREN_DEBIAN_SUITE:-bookworm}"
PACKAGES="ca-certificates,procps${WARREN_BASE_EXTRA_PACKAGES:+,$WARREN_BASE_EXTRA_PACKAGES}"
REBUILD=0

for arg in "$@"; do
    case "$arg" in
        --rebuild) REBUILD=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument: $arg (try --help)" 2 ;;
    esac
done

need_docker
OLD_ID="$(docker image inspect -f '{{.Id}}' "$IMAGE" 2>/dev/null || true)"
if [ "$REBUILD" -eq 0 ] && [ -n "$OLD_ID" ]; then
    log "$IMAGE already present ($(docker image inspect -f '{{.Id}}' "$IMAGE" | cut -c1-19)); reusing it (pass --rebuild to rebuild)"
    exit 0
fi

command -v dpkg >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 \
    || die "this script bootstraps from the host's Debian apt configuration: dpkg and apt-get are required (set WARREN_APT_SOURCES and run on a Debian/Ubuntu host)"
ARCH="${WARREN_DEBIAN_ARCH:-$(dpkg --print-architecture)}"

# ---------------------------------------------------------------------------
# 1. Which mirrors: ask the host's apt (it parses sources.list, sources.list.d/
#    *.list and deb822 *.sources, skipping disabled entries) for the binary
#    package indexes it is configured with, keep those of our suite family
#    (bookworm, bookworm-updates, bookworm-security, ...) and our architecture,
#    and turn them into one-line entries: "deb URI SUITE COMPONENT...".
# ---------------------------------------------------------------------------
host_sources() {
    apt-get indextargets --no-release-info \
        --format '$(TARGET_OF) $(REPO_URI) $(RELEASE) $(COMPONENT) $(ARCHITECTURE)' \
        'Created-By: Packages' 2>/dev/null |
    awk -v suite="$SUITE" -v arch="$ARCH" '
        $1 != "deb" { next }
        $5 != arch && $5 != "all" { next }
        !($3 == suite || index($3, suite "-") == 1 || index($3, suite "/") == 1) { next }
        $4 == "" { next }                          # flat repository: not a Debian mirror
        {
            key = $2 " " $3
            if (!(key in comps)) { order[++n] = key; comps[key] = "" }
            if (index(" " comps[key] " ", " " $4 " ") == 0) comps[key] = comps[key] " " $4
        }
        END { for (i = 1; i <= n; i++) print "deb " order[i] comps[order[i]] }'
}

if [ -n "${WARREN_APT_SOURCES:-}" ]; then
    SOURCES="$WARREN_APT_SOURCES"
    log "using apt sources from WARREN_APT_SOURCES"
else
    SOURCES="$(host_sources)"
fi
[ -n "$SOURCES" ] || die "found no '$SUITE' ($ARCH) entries in this host's apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list|*.sources); configure a Debian $SUITE mirror there, or set WARREN_APT_SOURCES='deb <mirror-uri> $SUITE main'"
mapfile -t SOURCE_LINES <<<"$SOURCES"
for l in "${SOURCE_LINES[@]}"; do
    log "apt source: $l"
    case "$l" in
        "deb http://"*|"deb https://"*) ;;
        *) warn "this source uses a transport other than http(s); it is copied into the image as is and must also work inside containers: $l" ;;
    esac
done
# The primary entry (exact suite) is the one debootstrap needs.
PRIMARY="$(printf '%s\n' "${SOURCE_LINES[@]}" | awk -v s="$SUITE" '$3 == s { print; exit }')"
[ -n "$PRIMARY" ] || die "no apt source for the suite '$SUITE' itself (only updates/security?)"

# ---------------------------------------------------------------------------
# 2. Which apt options: honour the host's proxy and validity settings. They are
#    written into the image (/etc/apt/apt.conf.d/99mmdebstrap or 99warren-host)
#    so that apt-get inside `docker build` behaves like the host's apt.
#    Credentials (auth.conf) are used for the bootstrap only, never kept.
# ---------------------------------------------------------------------------
mapfile -t APT_OPTS < <(apt-config dump 2>/dev/null | grep -E \
    '^Acquire::((http|https|ftp)::Proxy|Check-Valid-Until|Check-Date|Max-ValidTime|Min-ValidTime|ForceIPv4|ForceIPv6|Retries|(http|https)::Timeout)(::[^ ]+)? ' \
    | grep -v 'Proxy-Auto-Detect' || true)
for o in "${APT_OPTS[@]}"; do log "apt option from host: $o"; done
AUTH_FILES=()
[ -s /etc/apt/auth.conf ] && AUTH_FILES+=(/etc/apt/auth.conf)
for f in /etc/apt/auth.conf.d/*; do [ -s "$f" ] && AUTH_FILES+=("$f"); done
[ "${#AUTH_FILES[@]}" -gt 0 ] && log "apt credentials from host used for the bootstrap only: ${AUTH_FILES[*]}"
for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY; do
    [ -n "${!v:-}" ] && log "environment $v is set; apt will use it"
done

# Local CA certificates the host trusts (corporate / TLS-inspecting proxy CAs).
HOST_CAS=()
if [ "${WARREN_BASE_HOST_CAS:-1}" = 1 ] && [ -d /usr/local/share/ca-certificates ]; then
    mapfile -t HOST_CAS < <(find /usr/local/share/ca-certificates -type f -name '*.crt' | sort)
    for c in "${HOST_CAS[@]}"; do
        log "host CA certificate copied into the image: $c ($(openssl x509 -noout -subject -in "$c" 2>/dev/null || echo 'subject unknown'))"
    done
fi

# Keep the image small: no man pages, docs (copyright files stay), info or
# translations; these dpkg filters stay in the image for later apt-get installs.
DPKG_OPTS=(
    'path-exclude=/usr/share/man/*'
    'path-exclude=/usr/share/info/*'
    'path-exclude=/usr/share/doc/*'
    'path-include=/usr/share/doc/*/copyright'
    'path-exclude=/usr/share/locale/*'
    'path-include=/usr/share/locale/locale.alias'
    'path-exclude=/usr/share/lintian/*'
)
# What the image keeps from the usual Debian container tweaks.
APT_DOCKER_CONF='Acquire::Languages "none";
Acquire::GzipIndexes "true";
APT::AutoRemove::SuggestsImportant "false";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";'
# Run inside the finished root filesystem ($1) before it is packed.
CLEANUP='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/* "$1"/var/cache/debconf/*-old \
    "$1"/var/lib/dpkg/*-old "$1"/var/log/apt/* "$1"/var/log/*.log "$1"/tmp/* "$1"/var/tmp/* \
    "$1"/etc/apt/auth.conf "$1"/etc/apt/auth.conf.d/*; : > "$1"/etc/machine-id'

# ---------------------------------------------------------------------------
# 3. Bootstrap.
# ---------------------------------------------------------------------------
need_root "bootstrap a Debian root filesystem (mmdebstrap/debootstrap run as root here)"
BOOTSTRAP="${WARREN_BOOTSTRAP:-}"
if [ -z "$BOOTSTRAP" ]; then
    if command -v mmdebstrap >/dev/null 2>&1; then BOOTSTRAP=mmdebstrap
    elif (ensure_pkgs "bootstrapping $IMAGE" mmdebstrap); then BOOTSTRAP=mmdebstrap
    else
        warn "mmdebstrap could not be installed; falling back to debootstrap"
        BOOTSTRAP=debootstrap
    fi
fi
case "$BOOTSTRAP" in
    mmdebstrap) command -v mmdebstrap >/dev/null 2>&1 || ensure_pkgs "bootstrapping $IMAGE" mmdebstrap ;;
    debootstrap) command -v debootstrap >/dev/null 2>&1 || ensure_pkgs "bootstrapping $IMAGE" debootstrap ;;
    *) die "WARREN_BOOTSTRAP must be mmdebstrap or debootstrap, not '$BOOTSTRAP'" ;;
esac
# The Debian archive keys are needed to verify the mirrors.
if [ ! -e /usr/share/keyrings/debian-archive-keyring.gpg ]; then
    ensure_pkgs "verifying the Debian mirrors" debian-archive-keyring
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/warren-base.XXXXXX")"
cleanup() { $SUDO rm -rf "$WORK"; }
trap cleanup EXIT
TARBALL="$WORK/rootfs.tar"
START=$(now)
log "bootstrapping Debian $SUITE/$ARCH (variant minbase + ${PACKAGES//,/, }) with $BOOTSTRAP"

if [ "$BOOTSTRAP" = mmdebstrap ]; then
    args=(--variant=minbase --architectures="$ARCH" --include="$PACKAGES" --format=tar)
    # Merged /usr the way debootstrap does it, with the empty usr-is-merged
    # package: otherwise apt picks "usrmerge", which drags in full perl (~50 MB).
    if [ -d /usr/share/mmdebstrap/hooks/merged-usr ]; then
        args+=(--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr)
    else
        args+=(--include=usr-is-merged)
    fi
    for o in "${APT_OPTS[@]}"; do args+=(--aptopt="$o"); done
    for o in "${DPKG_OPTS[@]}"; do args+=(--dpkgopt="$o"); done
    if [ "${#AUTH_FILES[@]}" -gt 0 ]; then
        # Credentials are copied in for the downloads and removed by CLEANUP.
        args+=(--setup-hook='mkdir -p "$1"/etc/apt/auth.conf.d')
        for f in "${AUTH_FILES[@]}"; do
            case "$f" in
                /etc/apt/auth.conf) args+=(--setup-hook="cp /etc/apt/auth.conf \"\$1\"/etc/apt/auth.conf") ;;
                *) args+=(--setup-hook="cp '$f' \"\$1\"/etc/apt/auth.conf.d/") ;;
            esac
        done
    fi
    printf '%s\n' "$APT_DOCKER_CONF" > "$WORK/90warren-docker"
    args+=(--customize-hook="cp '$WORK/90warren-docker' \"\$1\"/etc/apt/apt.conf.d/90warren-docker")
    if [ "${#HOST_CAS[@]}" -gt 0 ]; then
        args+=(--customize-hook='cp -a /usr/local/share/ca-certificates/. "$1"/usr/local/share/ca-certificates/ && chroot "$1" update-ca-certificates')
    fi
    args+=(--customize-hook="$CLEANUP")
    # stdout of mmdebstrap is progress only; keep our stdout clean.
    $SUDO mmdebstrap "${args[@]}" "$SUITE" "$TARBALL" "${SOURCE_LINES[@]}" >&2
    TAR_CMD=(cat "$TARBALL")
else
    ROOTFS="$WORK/rootfs"
    read -r _ primary_uri _ primary_comps <<<"$PRIMARY"
    $SUDO debootstrap --variant=minbase --arch="$ARCH" --include="$PACKAGES" \
        --components="${primary_comps// /,}" "$SUITE" "$ROOTFS" "$primary_uri" >&2
    printf '%s\n' "${SOURCE_LINES[@]}" | $SUDO tee "$ROOTFS/etc/apt/sources.list" >/dev/null
    if [ "${#APT_OPTS[@]}" -gt 0 ]; then
        printf '%s\n' "${APT_OPTS[@]}" | $SUDO tee "$ROOTFS/etc/apt/apt.conf.d/99warren-host" >/dev/null
    fi
    printf '%s\n' "$APT_DOCKER_CONF" | $SUDO tee "$ROOTFS/etc/apt/apt.conf.d/90warren-docker" >/dev/null
    printf '%s\n' "${DPKG_OPTS[@]}" | $SUDO tee "$ROOTFS/etc/dpkg/dpkg.cfg.d/90warren-slim" >/dev/null
    if [ "${#HOST_CAS[@]}" -gt 0 ]; then
        $SUDO cp -a /usr/local/share/ca-certificates/. "$ROOTFS/usr/local/share/ca-certificates/"
        $SUDO chroot "$ROOTFS" update-ca-certificates >&2
    fi
    $SUDO mkdir -p "$ROOTFS/etc/apt/auth.conf.d"
    for f in "${AUTH_FILES[@]}"; do $SUDO cp "$f" "$ROOTFS$f"; done
    # debootstrap only knows the primary mirror: bring in updates/security.
    $SUDO cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
    $SUDO chroot "$ROOTFS" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get -y -q upgrade && apt-get clean' >&2
    $SUDO rm -f "$ROOTFS/etc/resolv.conf"
    $SUDO sh -c "set -- '$ROOTFS'; $CLEANUP; rm -rf \"\$1\"/usr/share/man/* \"\$1\"/usr/share/info/* \"\$1\"/usr/share/locale/*"
    TAR_CMD=($SUDO tar -C "$ROOTFS" --numeric-owner -c .)
fi
# Tools that carry their own CA list (pip, requests, Node, Bun) are pointed at
# the system bundle, so the image has one trust store.
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
log "bootstrap took $(( $(now) - START ))s; importing into Docker as $IMAGE"

"${TAR_CMD[@]}" | docker import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV LANG=C.UTF-8' \
    --change "ENV SSL_CERT_FILE=$CA_BUNDLE" \
    --change "ENV REQUESTS_CA_BUNDLE=$CA_BUNDLE" \
    --change "ENV PIP_CERT=$CA_BUNDLE" \
    --change "ENV NODE_EXTRA_CA_CERTS=$CA_BUNDLE" \
    --change 'CMD ["/bin/bash"]' \
    --message "warren base: Debian $SUITE/$ARCH minbase via $BOOTSTRAP from the host's apt sources" \
    - "$IMAGE" >&2
NEW_ID="$(docker image inspect -f '{{.Id}}' "$IMAGE")"
if [ -n "$OLD_ID" ] && [ "$OLD_ID" != "$NEW_ID" ]; then
    # Drop the replaced base unless guest images still use it.
    docker image rm "$OLD_ID" >/dev/null 2>&1 && log "removed the previous $IMAGE (${OLD_ID:7:12})" || true
fi
log "done in $(( $(now) - START ))s: $IMAGE $(docker image inspect -f '{{.Id}} {{.Size}}' "$IMAGE" | awk '{ printf "%s, %.1f MB", substr($1,1,19), $2/1e6 }')"
