#!/usr/bin/env bash
# A throwaway PostgreSQL server on loopback for tests and benchmarks.
#
#   scripts/pg-test-cluster.sh start [DIR]   -> prints the DSN (last line of stdout); DIR defaults to a new temp dir
#   scripts/pg-test-cluster.sh stop DIR      -> stops the server and removes DIR
#
# Installs PostgreSQL from Debian's packages when no server binaries are found (needs root, as in CI).
# The server runs as an unprivileged user (PostgreSQL refuses to run as root), listens on 127.0.0.1
# on a free port, trusts loopback connections and keeps fsync on (benchmarks measure real commits).
set -euo pipefail

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

find_bindir() {
    local d
    if command -v pg_config >/dev/null 2>&1; then
        d="$(pg_config --bindir 2>/dev/null || true)"
        [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return; }
    fi
    # Debian keeps the server binaries out of PATH, one folder per major version: take the newest
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -V -r); do
        [[ -x "$d/initdb" && -x "$d/pg_ctl" ]] && { echo "$d"; return; }
    done
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(command -v initdb)"; return
    fi
}

ensure_installed() {
    BINDIR="$(find_bindir)"
    [[ -n "$BINDIR" ]] && return
    [[ "$(id -u)" == 0 ]] || die "PostgreSQL is not installed and we are not root: install the 'postgresql' package"
    command -v apt-get >/dev/null 2>&1 || die "PostgreSQL is not installed and apt-get is not available"
    echo "pg-test-cluster: installing PostgreSQL from Debian packages…" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2 || die "apt-get update failed"
    apt-get install -y -q --no-install-recommends postgresql >&2 || die "apt-get install postgresql failed"
    BINDIR="$(find_bindir)"
    [[ -n "$BINDIR" ]] || die "PostgreSQL was installed but initdb/pg_ctl were not found"
}

# run a server binary as the unprivileged owner of the cluster
as_owner() {
    if [[ "$(id -u)" == 0 ]]; then
        runuser -u "$OWNER" -- "$@"
    else
        "$@"
    fi
}

pick_owner() {
    if [[ "$(id -u)" != 0 ]]; then OWNER="$(id -un)"; return; fi
    if id postgres >/dev/null 2>&1; then OWNER=postgres; return; fi
    id nobody >/dev/null 2>&1 && { OWNER=nobody; return; }
    die "running as root and there is no unprivileged 'postgres' or 'nobody' user to run the server"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

start() {
    ensure_installed
    pick_owner
    local dir="${1:-}"
    if [[ -z "$dir" ]]; then dir="$(mktemp -d /tmp/foldlog-pg.XXXXXX)"; else mkdir -p "$dir"; fi
    dir="$(cd "$dir" && pwd)"
    [[ -e "$dir/data/PG_VERSION" ]] && die "$dir already holds a cluster (stop it first)"
    chmod 755 "$dir"
    [[ "$(id -u)" == 0 ]] && chown "$OWNER" "$dir"
    # the owner must be able to reach the folder through its parents (e.g. a 0700 pytest tmp dir)
    local p="$dir"
    while [[ "$(id -u)" == 0 && "$p" != "/" ]]; do p="$(dirname "$p")"; chmod o+x "$p" 2>/dev/null || true; done
    as_owner "$BINDIR/initdb" -D "$dir/data" -U foldlog --auth=trust -E UTF8 --locale=C.UTF-8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed (log above)"; }
    local port tries=0
    while :; do
        port="$(free_port)"
        if as_owner "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -s start \
            -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir' -c max_connections=200"
        then
            break
        fi
        tries=$((tries + 1))
        if (( tries >= 3 )); then
            tail -n 30 "$dir/server.log" >&2 || true
            die "the server did not start (log above)"
        fi
    done
    echo "$port" >"$dir/port"
    local dsn="postgresql://foldlog@127.0.0.1:$port/postgres"
    echo "$dsn" >"$dir/dsn"
    echo "pg-test-cluster: PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') in $dir" >&2
    echo "$dsn"
}

stop() {
    local dir="${1:-}"
    [[ -n "$dir" ]] || die "usage: $0 stop DIR"
    [[ -d "$dir" ]] || die "$dir does not exist"
    if [[ -e "$dir/data/postmaster.pid" ]]; then
        ensure_installed
        pick_owner
        as_owner "$BINDIR/pg_ctl" -D "$dir/data" -m fast -w -t 60 -s stop || die "pg_ctl stop failed for $dir"
    fi
    rm -rf "$dir"
}

case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) die "usage: $0 start [DIR] | stop DIR" ;;
esac
