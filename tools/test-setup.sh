#!/bin/bash -xe
# Prepare the local PostgreSQL and MySQL/MariaDB servers for the tests, the
# way OpenStack CI does for every project:
#
# * user openstack_citest, password openstack_citest, allowed to create
#   and drop databases: oslo.db's opportunistic fixtures (the migration
#   tests) log in with it and create a throw-away database per test class;
# * database openstack_citest, which those fixtures connect to first;
# * database ironic_alloc_functional, named by IRONIC_ALLOC_TEST_DB in the
#   functional tiers: each test process creates its own database next to
#   it (ironic_alloc_functional_<pid>, with its character set and
#   collation) and drops it when it exits;
# * no <name>_<pid> database next to those two: the ones a test process
#   killed before its exit clean-up leaves are dropped.
#
# Run it as root or as a user with sudo, on a machine with both servers
# running (tools/start-db-servers.sh starts them without systemd).  It can
# be run again: everything is re-created.

DB_USER=openstack_citest
DB_PW=openstack_citest
DATABASES="openstack_citest ironic_alloc_functional"
# The databases of test processes: <one of DATABASES>_<pid>.
LEFTOVER_PATTERN="^(${DATABASES// /|})_[0-9]+\$"

if [[ $(id -u) -eq 0 ]]; then
    AS_ROOT=()
    AS_POSTGRES=(runuser -u postgres --)
else
    AS_ROOT=(sudo -H)
    AS_POSTGRES=(sudo -H -u postgres)
fi

# MySQL / MariaDB: the Debian root account logs in through its unix socket
# (no password), so the root password is left as it is.
"${AS_ROOT[@]}" mysql -u root -e "
    DROP USER IF EXISTS ''@'localhost', ''@'%', ''@'$(hostname)';
    CREATE USER IF NOT EXISTS '$DB_USER'@'%' IDENTIFIED BY '$DB_PW';
    CREATE USER IF NOT EXISTS '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PW';
    ALTER USER '$DB_USER'@'%' IDENTIFIED BY '$DB_PW';
    ALTER USER '$DB_USER'@'localhost' IDENTIFIED BY '$DB_PW';
    GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'%' WITH GRANT OPTION;
    GRANT ALL PRIVILEGES ON *.* TO '$DB_USER'@'localhost' WITH GRANT OPTION;
    FLUSH PRIVILEGES;"
for db in $DATABASES; do
    mysql -u "$DB_USER" -p"$DB_PW" -h 127.0.0.1 -e "
        DROP DATABASE IF EXISTS $db;
        CREATE DATABASE $db CHARACTER SET utf8mb4;"
done
for db in $(mysql -u "$DB_USER" -p"$DB_PW" -h 127.0.0.1 -N -B -e "
        SELECT schema_name FROM information_schema.schemata
        WHERE schema_name REGEXP '$LEFTOVER_PATTERN'"); do
    mysql -u "$DB_USER" -p"$DB_PW" -h 127.0.0.1 -e "DROP DATABASE \`$db\`"
done

# PostgreSQL: the role may create databases (oslo.db's fixtures) and owns
# the test databases.
"${AS_POSTGRES[@]}" psql -p 5432 -v ON_ERROR_STOP=1 -q -c "
    DO \$\$
    BEGIN
        IF EXISTS (SELECT FROM pg_roles WHERE rolname = '$DB_USER') THEN
            ALTER ROLE $DB_USER WITH LOGIN CREATEDB PASSWORD '$DB_PW';
        ELSE
            CREATE ROLE $DB_USER WITH LOGIN CREATEDB PASSWORD '$DB_PW';
        END IF;
    END
    \$\$;"
for db in $DATABASES; do
    PGPASSWORD=$DB_PW psql -p 5432 -v ON_ERROR_STOP=1 -q -h 127.0.0.1 \
        -U "$DB_USER" -d postgres -c "DROP DATABASE IF EXISTS $db"
    PGPASSWORD=$DB_PW createdb -p 5432 -h 127.0.0.1 -U "$DB_USER" -l C \
        -T template0 -E utf8 "$db"
done
for db in $(PGPASSWORD=$DB_PW psql -p 5432 -v ON_ERROR_STOP=1 -q -h 127.0.0.1 \
        -U "$DB_USER" -d postgres -A -t -c "
        SELECT datname FROM pg_database
        WHERE datname ~ '$LEFTOVER_PATTERN'"); do
    PGPASSWORD=$DB_PW psql -p 5432 -v ON_ERROR_STOP=1 -q -h 127.0.0.1 \
        -U "$DB_USER" -d postgres -c "DROP DATABASE \"$db\" WITH (FORCE)"
done
