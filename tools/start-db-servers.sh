#!/bin/bash
# Start the local PostgreSQL and MariaDB servers without systemd (CI
# containers, development containers) and wait until both accept
# connections.  Servers already running are left alone.  Needs root and
# Debian's packages postgresql and mariadb-server.
#
# Usage: tools/start-db-servers.sh [LOG_DIR]
#   LOG_DIR (default /tmp) receives mariadb.log; PostgreSQL logs to
#   /var/log/postgresql/ as usual.
set -euo pipefail

LOG_DIR=${1:-/tmp}
WAIT_SECONDS=${DB_START_TIMEOUT:-120}
PG_PORT=${PG_PORT:-5432}
mkdir -p "$LOG_DIR"

log() { echo "[$(date -u +%H:%M:%S)] start-db-servers: $*"; }

wait_for() {
    local what=$1
    shift
    local deadline=$((SECONDS + WAIT_SECONDS))
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            log "$what did not accept connections within ${WAIT_SECONDS}s"
            return 1
        fi
        sleep 1
    done
    log "$what accepts connections"
}

start_postgresql() {
    local version cluster port status
    # NOTE: the tiers use the cluster on the default port 5432 (Debian's
    # "main"); other clusters (the multi-process tier's own on 5433, say)
    # are left alone, so the first one listed is not necessarily ours.
    read -r version cluster port status < <(pg_lsclusters --no-header |
        awk -v p="$PG_PORT" '$3 == p {print $1, $2, $3, $4; exit}')
    if [[ -z ${version:-} ]]; then
        version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 \
            -printf "%f\n" 2>/dev/null | sort -n | tail -1)
        if [[ -z $version ]]; then
            log "PostgreSQL is not installed"
            return 1
        fi
        cluster=main
        port=$PG_PORT
        status=down
        log "creating PostgreSQL cluster $version/$cluster on port $port"
        pg_createcluster "$version" "$cluster" --port "$port" >/dev/null
    fi
    if [[ $status == online* ]]; then
        log "PostgreSQL $version/$cluster is already running"
    else
        log "starting PostgreSQL $version/$cluster on port $port"
        # pg_ctlcluster starts the server directly (as the postgres user)
        # when systemd is not running.
        pg_ctlcluster "$version" "$cluster" start
    fi
    wait_for "PostgreSQL $version/$cluster" pg_isready -q -h localhost -p "$port"
}

start_mariadb() {
    if mariadb-admin ping --silent >/dev/null 2>&1; then
        log "MariaDB is already running"
    else
        log "starting MariaDB (log: $LOG_DIR/mariadb.log)"
        install -d -o mysql -g mysql /run/mysqld
        # NOTE: setsid + redirection: the server outlives this script and
        # never writes to the caller's terminal or pipes.
        setsid mysqld_safe --user=mysql </dev/null >"$LOG_DIR/mariadb.log" 2>&1 &
    fi
    wait_for MariaDB mariadb-admin ping --silent
}

start_postgresql
start_mariadb
