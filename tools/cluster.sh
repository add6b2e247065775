#!/bin/bash
# A local multi-process ironic_alloc cluster: N API processes and M
# conductors on one RabbitMQ and one PostgreSQL or MariaDB database, all in
# the background, without systemd.  For trying the production layout (see
# doc/source/admin/deployment.rst) and for fault experiments: kill a
# conductor, restart the broker...
#
# Usage: tools/cluster.sh start|stop|status|restart
#
# Knobs (environment):
#   APIS=2             API processes (ironic-alloc-api), on consecutive ports
#   BASE_PORT=6385     port of the first API process
#   CONDUCTORS=3       conductors, [DEFAULT]host = conductor-1..M
#   DB=postgresql      or mysql (MariaDB)
#   WORKDIR=$HOME/.local/state/ironic-alloc-cluster
#                      configuration, pid files and logs
#   BIN=               directory holding the ironic-alloc-* commands
#                      (default: the one of ironic-alloc-api on PATH, else
#                      .venv/bin of this repository)
#   EXTRA_CONF=        a file appended to the generated configuration
#   CLUSTER_NAME=ironic_alloc_cluster
#                      the database and RabbitMQ vhost, so that two clusters
#                      (each with its own WORKDIR and BASE_PORT) can run at once
#
# "start" installs (apt-get, as root) and starts rabbitmq-server and the
# database server when they are missing, creates the database
# $CLUSTER_NAME, the RabbitMQ vhost $CLUSTER_NAME and the
# user ironic_alloc (password ironic_alloc on both), writes
# $WORKDIR/ironic-alloc.conf, runs ironic-alloc-dbsync upgrade and starts
# the processes.  "stop" stops the processes (SIGTERM, then SIGKILL after
# 30 s), never the servers.  Servers are started with root rights (sudo
# when not root).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
APIS=${APIS:-2}
BASE_PORT=${BASE_PORT:-6385}
CONDUCTORS=${CONDUCTORS:-3}
DB=${DB:-postgresql}
WORKDIR=${WORKDIR:-$HOME/.local/state/ironic-alloc-cluster}
NAME=${CLUSTER_NAME:-ironic_alloc_cluster}
DB_USER=ironic_alloc
DB_PW=ironic_alloc
CONF=$WORKDIR/ironic-alloc.conf

log() { echo "[$(date -u +%H:%M:%S)] cluster: $*"; }
die() { log "ERROR: $*"; exit 1; }

if [[ $(id -u) -eq 0 ]]; then
    AS_ROOT=()
else
    AS_ROOT=(sudo -H)
fi

find_bin() {
    if [[ -n ${BIN:-} ]]; then
        echo "$BIN"
    elif command -v ironic-alloc-api >/dev/null; then
        dirname "$(command -v ironic-alloc-api)"
    elif [[ -x $ROOT/.venv/bin/ironic-alloc-api ]]; then
        echo "$ROOT/.venv/bin"
    else
        die "ironic-alloc-api not found: set BIN, or run tools/run-standalone.sh once to create .venv"
    fi
}

wait_for() {
    local what=$1 deadline=$((SECONDS + 120))
    shift
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || die "$what not ready within 120s"
        sleep 1
    done
}

apt_install() {
    local missing=() pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
    "${AS_ROOT[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        --no-install-recommends "${missing[@]}"
}

ensure_rabbitmq() {
    apt_install rabbitmq-server
    if ! "${AS_ROOT[@]}" rabbitmqctl -q status >/dev/null 2>&1; then
        log "starting RabbitMQ (log $WORKDIR/rabbitmq.log)"
        "${AS_ROOT[@]}" setsid /usr/sbin/rabbitmq-server </dev/null \
            >"$WORKDIR/rabbitmq.log" 2>&1 &
        wait_for RabbitMQ "${AS_ROOT[@]}" rabbitmqctl -q status
    fi
    "${AS_ROOT[@]}" timeout 120 rabbitmqctl -q await_startup
    "${AS_ROOT[@]}" rabbitmqctl -q start_app
    "${AS_ROOT[@]}" rabbitmqctl -q list_vhosts | grep -qx "$NAME" ||
        "${AS_ROOT[@]}" rabbitmqctl -q add_vhost "$NAME"
    "${AS_ROOT[@]}" rabbitmqctl -q list_users | awk '{print $1}' |
        grep -qx "$DB_USER" ||
        "${AS_ROOT[@]}" rabbitmqctl -q add_user "$DB_USER" "$DB_PW"
    "${AS_ROOT[@]}" rabbitmqctl -q set_permissions -p "$NAME" "$DB_USER" \
        '.*' '.*' '.*'
}

ensure_postgresql() {
    apt_install postgresql
    local version cluster
    read -r version cluster < <(pg_lsclusters --no-header | awk '$3 == 5432 {print $1, $2}')
    [[ -n ${version:-} ]] || die "no PostgreSQL cluster on port 5432"
    if ! pg_lsclusters --no-header | awk '$3 == 5432 {print $4}' | grep -q online; then
        log "starting PostgreSQL $version/$cluster"
        "${AS_ROOT[@]}" pg_ctlcluster "$version" "$cluster" start
    fi
    wait_for PostgreSQL pg_isready -q -h 127.0.0.1
    "${AS_ROOT[@]}" runuser -u postgres -- psql -v ON_ERROR_STOP=1 -q -c "
        DO \$\$
        BEGIN
            IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
                CREATE ROLE $DB_USER WITH LOGIN PASSWORD '$DB_PW';
            END IF;
        END
        \$\$;"
    if ! "${AS_ROOT[@]}" runuser -u postgres -- psql -tAc \
            "SELECT 1 FROM pg_database WHERE datname = '$NAME'" | grep -q 1; then
        "${AS_ROOT[@]}" runuser -u postgres -- createdb -O "$DB_USER" -E utf8 \
            -T template0 "$NAME"
    fi
    DB_URL="postgresql+psycopg2://$DB_USER:$DB_PW@127.0.0.1/$NAME"
}

ensure_mariadb() {
    apt_install mariadb-server mariadb-client
    if ! "${AS_ROOT[@]}" mariadb-admin ping --silent >/dev/null 2>&1; then
        log "starting MariaDB (log $WORKDIR/mariadb.log)"
        "${AS_ROOT[@]}" install -d -o mysql -g mysql /run/mysqld
        "${AS_ROOT[@]}" setsid mysqld_safe --user=mysql </dev/null \
            >"$WORKDIR/mariadb.log" 2>&1 &
        wait_for MariaDB "${AS_ROOT[@]}" mariadb-admin ping --silent
    fi
    "${AS_ROOT[@]}" mariadb -u root -e "
        CREATE DATABASE IF NOT EXISTS $NAME CHARACTER SET utf8mb4;
        CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PW';
        CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PW';
        GRANT ALL PRIVILEGES ON $NAME.* TO '$DB_USER'@'localhost';
        GRANT ALL PRIVILEGES ON $NAME.* TO '$DB_USER'@'127.0.0.1';"
    DB_URL="mysql+pymysql://$DB_USER:$DB_PW@127.0.0.1/$NAME?charset=utf8mb4"
}

write_config() {
    cat >"$CONF" <<EOF
# Written by tools/cluster.sh; rewritten at every start.
[DEFAULT]
transport_url = rabbit://$DB_USER:$DB_PW@127.0.0.1:5672/$NAME
auth_strategy = noauth
state_path = $WORKDIR

[database]
connection = $DB_URL

[api]
host_ip = 127.0.0.1
rpc_call_timeout = 10

[conductor]
heartbeat_interval = 5
heartbeat_timeout = 30
check_allocations_interval = 15
allocation_redrive_interval = 5

[oslo_messaging_rabbit]
rabbit_retry_interval = 1
rabbit_interval_max = 5
EOF
    if [[ -n ${EXTRA_CONF:-} ]]; then
        cat "$EXTRA_CONF" >>"$CONF"
    fi
}

# launch NAME COMMAND [per-process options]: a background process with a
# pid file and a log, in its own session.
launch() {
    local name=$1 command=$2 extra=$WORKDIR/$1.conf
    shift 2
    printf '%s\n' "$@" >"$extra"
    setsid "$BIN_DIR/$command" --config-file "$CONF" --config-file "$extra" \
        --log-file "$WORKDIR/$name.log" </dev/null >>"$WORKDIR/$name.out" 2>&1 &
    echo $! >"$WORKDIR/$name.pid"
    log "$name: $command, pid $!, log $WORKDIR/$name.log"
}

pids() {
    local f
    for f in "$WORKDIR"/*.pid; do
        [[ -e $f ]] && echo "$f"
    done
}

alive() { kill -0 "$1" 2>/dev/null; }

start() {
    mkdir -p "$WORKDIR"
    [[ -z $(pids) ]] || die "pid files in $WORKDIR: run '$0 stop' first"
    BIN_DIR=$(find_bin)
    ensure_rabbitmq
    case $DB in
        postgresql) ensure_postgresql ;;
        mysql | mariadb) ensure_mariadb ;;
        *) die "DB must be postgresql or mysql" ;;
    esac
    write_config
    log "database $DB_URL"
    "$BIN_DIR/ironic-alloc-dbsync" --config-file "$CONF" upgrade
    local i
    for ((i = 1; i <= CONDUCTORS; i++)); do
        launch "conductor-$i" ironic-alloc-conductor '[DEFAULT]' \
            "host = conductor-$i"
    done
    for ((i = 0; i < APIS; i++)); do
        launch "api-$((i + 1))" ironic-alloc-api '[api]' \
            "port = $((BASE_PORT + i))"
    done
    for ((i = 0; i < APIS; i++)); do
        wait_for "api-$((i + 1))" curl -sf "http://127.0.0.1:$((BASE_PORT + i))/"
    done
    status
}

stop() {
    local f pid name deadline
    for f in $(pids); do
        pid=$(cat "$f")
        name=$(basename "$f" .pid)
        if alive "$pid"; then
            log "stopping $name (pid $pid)"
            kill -CONT -- "-$pid" 2>/dev/null || true
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
        fi
    done
    deadline=$((SECONDS + 30))
    for f in $(pids); do
        pid=$(cat "$f")
        while alive "$pid" && ((SECONDS < deadline)); do
            sleep 0.5
        done
        if alive "$pid"; then
            log "$(basename "$f" .pid) did not stop: SIGKILL"
            kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$f"
    done
}

status() {
    local f pid name state rc=0
    for f in $(pids); do
        pid=$(cat "$f")
        name=$(basename "$f" .pid)
        if alive "$pid"; then
            state=running
        else
            state=DEAD
            rc=1
        fi
        printf '%-14s pid %-8s %s\n' "$name" "$pid" "$state"
    done
    [[ -n $(pids) ]] || { echo "no process (work dir $WORKDIR)"; return 1; }
    for f in "$WORKDIR"/api-*.conf; do
        [[ -e $f ]] || continue
        echo "API: http://127.0.0.1:$(awk '/^port/ {print $3}' "$f")"
    done
    return $rc
}

case ${1:-} in
    start) start ;;
    stop) stop ;;
    status) status ;;
    restart) stop; start ;;
    *) echo "usage: $0 start|stop|status|restart (knobs: see the header)"; exit 2 ;;
esac
