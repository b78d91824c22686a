#!/usr/bin/env bash
# Entrypoint of the warren node image: runs `warren up ARGS...` and, when
# asked, founds a fleet or joins one through a directory shared with the
# founder (the compose fleet, deploy/compose/fleet.yaml).
#
# Environment (besides the node's own WARREN_* config):
#   WARREN_FLEET_FOUND=1       create an owner key in the data dir on the first
#                              start: this node founds the fleet and admits members
#   WARREN_FLEET_ADMIT="n2 n3" (founder) the node names it writes a join code
#                              for, each when that node asks for one
#   WARREN_FLEET_JOIN=1        join the fleet on the first start, with a code the
#                              founder writes for this node's name (WARREN_NAME)
#   WARREN_INVITE_DIR          the shared directory (default /invites)
#   WARREN_INVITE_TTL          how long a written code is valid (default 10m)
#
# The handshake in WARREN_INVITE_DIR, per member NAME: the member, not yet in
# a fleet, creates NAME.want; the founder answers with NAME.code (0600,
# written whole, a fresh single-use code); the member reads it, deletes both
# files and joins. So a code exists only while someone waits for it, and
# never in a log (only `warren fleet join CODE`, for the second it runs, has
# it in its arguments) or in the image. A member that is in its fleet already
# (a restart) asks for nothing.
set -euo pipefail

DATA="${WARREN_DATA_DIR:-/var/lib/warren}"
INVITES="${WARREN_INVITE_DIR:-/invites}"
TTL="${WARREN_INVITE_TTL:-10m}"
say() { printf 'warren-node: %s\n' "$*" >&2; }

# The founder's key must exist before `warren up`: the node founds the
# fleet at start-up when it holds one.
if [ "${WARREN_FLEET_FOUND:-0}" = 1 ] && [ -z "${WARREN_FLEET__OWNER_KEY:-}" ] && [ ! -e "$DATA/owner.key" ]; then
    public="$(warren fleet init --json --key-file "$DATA/owner.key" | sed -n 's/.*"public_key": *"\([0-9a-f]*\)".*/\1/p')"
    say "created the fleet owner key $DATA/owner.key (public key $public)"
fi

warren up "$@" &
node=$!
# Stop the node cleanly (it pauses its live conversations) on docker stop.
trap 'kill -TERM "$node" 2>/dev/null || true' TERM INT

# True when the node answers; prints the fleet id ("null" when in no fleet).
fleet_id() {
    local out
    out="$(warren fleet nodes --json 2>/dev/null)" || return 1
    printf '%s\n' "$out" | sed -n 's/.*"fleet_id": *\("[^"]*"\|null\).*/\1/p' | tr -d '"'
}
wait_for_node() {
    until fleet_id >/dev/null; do
        kill -0 "$node" 2>/dev/null || return 1
        sleep 0.5
    done
}

# Founder: answer each admitted name's request with a fresh code.
admit_loop() {
    wait_for_node || return 0
    say "admitting ${WARREN_FLEET_ADMIT} through $INVITES"
    while kill -0 "$node" 2>/dev/null; do
        for name in $WARREN_FLEET_ADMIT; do
            if [ -e "$INVITES/$name.want" ] && [ ! -e "$INVITES/$name.code" ]; then
                if (umask 077 && warren fleet invite --ttl "$TTL" > "$INVITES/.$name.code.tmp"); then
                    mv -f "$INVITES/.$name.code.tmp" "$INVITES/$name.code"
                    say "wrote a join code for $name (valid $TTL)"
                else
                    rm -f "$INVITES/.$name.code.tmp"
                fi
            fi
        done
        sleep 1
    done
}

# Member: ask for a code, join with it, and try again with a new one if the
# join fails.
join_loop() {
    local name="${WARREN_NAME:?WARREN_FLEET_JOIN needs WARREN_NAME: the founder writes codes by node name}"
    wait_for_node || return 0
    local id
    id="$(fleet_id)" || return 0
    if [ -n "$id" ] && [ "$id" != null ]; then
        say "in fleet $id already"
        return 0
    fi
    while kill -0 "$node" 2>/dev/null; do
        rm -f "$INVITES/$name.code"
        : > "$INVITES/$name.want"
        say "waiting for a join code from the founder ($INVITES/$name.code)"
        until [ -s "$INVITES/$name.code" ]; do
            kill -0 "$node" 2>/dev/null || return 0
            sleep 0.5
        done
        local code
        code="$(cat "$INVITES/$name.code")"
        rm -f "$INVITES/$name.want" "$INVITES/$name.code"
        if warren fleet join "$code"; then
            return 0
        fi
        say "joining failed; asking for a new code in 5 s"
        sleep 5
    done
}

helper=""
if [ -n "${WARREN_FLEET_ADMIT:-}" ]; then
    admit_loop & helper=$!
elif [ "${WARREN_FLEET_JOIN:-0}" = 1 ]; then
    join_loop & helper=$!
fi

status=0
wait "$node" || status=$?
# A trapped signal ends the first wait early: wait for the node's own exit.
while kill -0 "$node" 2>/dev/null; do
    status=0
    wait "$node" || status=$?
done
[ -z "$helper" ] || kill "$helper" 2>/dev/null || true
exit "$status"
