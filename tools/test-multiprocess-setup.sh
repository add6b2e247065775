#!/bin/bash
# Prepare the servers of the multi-process test tier
# (ironic_alloc/tests/multiprocess), without systemd.  Idempotent: run it
# again at any time.  Needs root (or sudo) on a Debian-like machine.
#
# * RabbitMQ: installed with apt-get when missing, started in the
#   background when not running; vhost ironic_alloc_multiprocess and user
#   openstack_citest (password openstack_citest) with all rights on it.
# * PostgreSQL: a cluster of its own, "ironic_alloc_mp" on port 5433, with
#   role openstack_citest and database ironic_alloc_multiprocess.  The tier
#   restarts its database server; a cluster of its own keeps other test
#   tiers that use the main cluster (port 5432) out of that.
# * MariaDB: an instance of its own on 127.0.0.1:3307 (datadir
#   /var/lib/ironic-alloc-mp/mysql), same user and database, for the same
#   reason.  Skipped when mariadb-server is not installed
#   (MULTIPROCESS_MARIADB=0 skips it too).
#
# The tier's defaults match: see ironic_alloc/tests/multiprocess/fixtures.py
# (IRONIC_ALLOC_TEST_DB and IRONIC_ALLOC_TEST_TRANSPORT_URL override them).
set -euo pipefail

USER_NAME=openstack_citest
USER_PW=openstack_citest
VHOST=ironic_alloc_multiprocess
DB_NAME=ironic_alloc_multiprocess
PG_CLUSTER=ironic_alloc_mp
PG_PORT=${MULTIPROCESS_PG_PORT:-5433}
MY_PORT=${MULTIPROCESS_MYSQL_PORT:-3307}
MY_BASE=/var/lib/ironic-alloc-mp
MY_SOCKET=/run/mysqld/ironic-alloc-mp.sock
LOG_DIR=${MULTIPROCESS_LOG_DIR:-/var/log/ironic-alloc-mp}
WAIT_SECONDS=120

log() { echo "[$(date -u +%H:%M:%S)] test-multiprocess-setup: $*"; }

if [[ $(id -u) -ne 0 ]]; then
    exec sudo -H "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$LOG_DIR"

wait_for() {
    local what=$1 deadline=$((SECONDS + WAIT_SECONDS))
    shift
    until "$@" >/dev/null 2>&1; do
        if ((SECONDS >= deadline)); then
            log "$what not ready within ${WAIT_SECONDS}s"
            return 1
        fi
        sleep 1
    done
    log "$what ready"
}

apt_install() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
            grep -q 'install ok installed' || missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    log "apt-get install ${missing[*]}"
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
}

setup_rabbitmq() {
    apt_install rabbitmq-server
    if rabbitmqctl -q status >/dev/null 2>&1; then
        log "RabbitMQ is running"
    else
        log "starting RabbitMQ (log: $LOG_DIR/rabbitmq.log)"
        # NOTE: setsid and redirections: the broker outlives this script
        # and never writes to the caller's pipes.
        setsid /usr/sbin/rabbitmq-server </dev/null \
            >"$LOG_DIR/rabbitmq.log" 2>&1 &
        wait_for RabbitMQ rabbitmqctl -q status
    fi
    timeout 120 rabbitmqctl -q await_startup
    # NOTE: a stopped application (an interrupted test run) is started.
    rabbitmqctl -q start_app
    rabbitmqctl -q list_vhosts | grep -qx "$VHOST" ||
        rabbitmqctl -q add_vhost "$VHOST"
    rabbitmqctl -q list_users | awk '{print $1}' | grep -qx "$USER_NAME" ||
        rabbitmqctl -q add_user "$USER_NAME" "$USER_PW"
    rabbitmqctl -q change_password "$USER_NAME" "$USER_PW"
    rabbitmqctl -q set_permissions -p "$VHOST" "$USER_NAME" '.*' '.*' '.*'
}

setup_postgresql() {
    apt_install postgresql
    local version
    version=$(pg_lsclusters --no-header | awk 'NR==1 {print $1}')
    if [[ -z $version ]]; then
        version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -n | tail -1)
    fi
    if ! pg_lsclusters --no-header | awk '{print $2}' | grep -qx "$PG_CLUSTER"; then
        log "creating PostgreSQL cluster $version/$PG_CLUSTER on port $PG_PORT"
        pg_createcluster "$version" "$PG_CLUSTER" --port "$PG_PORT" \
            -- --auth-host=scram-sha-256 >/dev/null
    fi
    if ! pg_lsclusters --no-header |
            awk -v c="$PG_CLUSTER" '$2 == c {print $4}' | grep -q online; then
        log "starting PostgreSQL $version/$PG_CLUSTER"
        pg_ctlcluster "$version" "$PG_CLUSTER" start
    fi
    wait_for "PostgreSQL $PG_CLUSTER" pg_isready -q -h 127.0.0.1 -p "$PG_PORT"
    runuser -u postgres -- psql -p "$PG_PORT" -v ON_ERROR_STOP=1 -q -c "
        DO \$\$
        BEGIN
            IF EXISTS (SELECT FROM pg_roles WHERE rolname = '$USER_NAME') THEN
                ALTER ROLE $USER_NAME WITH LOGIN CREATEDB PASSWORD '$USER_PW';
            ELSE
                CREATE ROLE $USER_NAME WITH LOGIN CREATEDB PASSWORD '$USER_PW';
            END IF;
        END
        \$\$;"
    if ! PGPASSWORD=$USER_PW psql -h 127.0.0.1 -p "$PG_PORT" -U "$USER_NAME" \
            -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='$DB_NAME'" |
            grep -q 1; then
        PGPASSWORD=$USER_PW createdb -h 127.0.0.1 -p "$PG_PORT" -U "$USER_NAME" \
            -l C -T template0 -E utf8 "$DB_NAME"
    fi
    log "PostgreSQL: postgresql+psycopg2://$USER_NAME:$USER_PW@127.0.0.1:$PG_PORT/$DB_NAME"
}

mariadb_ping() {
    mariadb-admin --socket="$MY_SOCKET" ping --silent
}

setup_mariadb() {
    if [[ ${MULTIPROCESS_MARIADB:-1} == 0 ]] || ! command -v mariadbd >/dev/null; then
        log "MariaDB: skipped (mariadb-server not installed or MULTIPROCESS_MARIADB=0)"
        return 0
    fi
    install -d -o mysql -g mysql /run/mysqld "$MY_BASE"
    if [[ ! -d $MY_BASE/mysql/mysql ]]; then
        log "initialising the MariaDB instance in $MY_BASE/mysql"
        mariadb-install-db --user=mysql --datadir="$MY_BASE/mysql" \
            --auth-root-authentication-method=socket \
            >"$LOG_DIR/mariadb-install.log" 2>&1
    fi
    if ! mariadb_ping >/dev/null 2>&1; then
        log "starting MariaDB on 127.0.0.1:$MY_PORT (log: $LOG_DIR/mariadb.log)"
        setsid mariadbd --no-defaults --user=mysql --datadir="$MY_BASE/mysql" \
            --port="$MY_PORT" --bind-address=127.0.0.1 --socket="$MY_SOCKET" \
            --pid-file="$MY_BASE/mariadb.pid" --log-error="$LOG_DIR/mariadb.log" \
            --innodb-buffer-pool-size=128M --max-connections=500 \
            </dev/null >/dev/null 2>&1 &
        wait_for "MariaDB :$MY_PORT" mariadb_ping
    fi
    mariadb --socket="$MY_SOCKET" -u root -e "
        CREATE USER IF NOT EXISTS '$USER_NAME'@'%' IDENTIFIED BY '$USER_PW';
        CREATE USER IF NOT EXISTS '$USER_NAME'@'localhost' IDENTIFIED BY '$USER_PW';
        ALTER USER '$USER_NAME'@'%' IDENTIFIED BY '$USER_PW';
        ALTER USER '$USER_NAME'@'localhost' IDENTIFIED BY '$USER_PW';
        GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'%';
        GRANT ALL PRIVILEGES ON *.* TO '$USER_NAME'@'localhost';
        CREATE DATABASE IF NOT EXISTS $DB_NAME CHARACTER SET utf8mb4;
        FLUSH PRIVILEGES;"
    log "MariaDB: mysql+pymysql://$USER_NAME:$USER_PW@127.0.0.1:$MY_PORT/$DB_NAME?charset=utf8mb4"
}

setup_rabbitmq
setup_postgresql
setup_mariadb
log "RabbitMQ: rabbit://$USER_NAME:$USER_PW@127.0.0.1:5672/$VHOST"
