"""A database of its own for every test process on a database server.

When IRONIC_ALLOC_TEST_DB names a PostgreSQL or MySQL/MariaDB database,
each test process (an stestr worker) works in a database of its own,
``<name>_<pid>``, created next to the named one on the same server with
the named database's character set and collation, and dropped when the
process exits.  Workers therefore never empty each other's tables, and the
tiers can run with several workers.

The named database only serves as the place this module connects to: it
must exist, and the user of the URL must be allowed to create and drop
databases (``tools/test-setup.sh`` prepares both, as OpenStack CI does).

oslo.db's provisioning (``oslo_db.sqlalchemy.provision``) is not used: its
``Backend`` takes the server to use from OS_TEST_DBAPI_ADMIN_CONNECTION
(one URL per database type, read at import) rather than from the URL the
tests are given, and it creates databases with the server's defaults
instead of the settings the named database was created with.
"""

import atexit
import os
import sys

import sqlalchemy as sa
from sqlalchemy.engine import url as sa_url

# Longest database name: PostgreSQL allows 63 bytes, MySQL 64 characters.
MAX_NAME_LENGTH = 63
# Bounds the wait for a metadata lock when MySQL drops the database (a
# connection of this process still in a transaction): dropping at exit
# must never hang the test run.
MYSQL_LOCK_WAIT_SECONDS = 30


def is_server_url(url):
    """True for a PostgreSQL or MySQL/MariaDB SQLAlchemy URL."""
    backend = sa_url.make_url(url).get_backend_name()
    return backend in ('postgresql', 'mysql')


def process_database_name(name, pid):
    """The name of the database of process ``pid`` next to ``name``."""
    process_name = '%s_%d' % (name, pid)
    if len(process_name) > MAX_NAME_LENGTH:
        raise ValueError(
            'The database name %r of IRONIC_ALLOC_TEST_DB is too long: '
            'the database of each test process (%r) must fit in %d '
            'characters.' % (name, process_name, MAX_NAME_LENGTH))
    return process_name


def _quote_literal(value):
    return "'%s'" % value.replace("'", "''")


class ProcessDatabase:
    """The database of this process, next to the database of ``url``.

    :param url: SQLAlchemy URL of an existing PostgreSQL or MySQL/MariaDB
        database (it names the server, the credentials, the connection
        options and the settings the new database copies).
    """

    def __init__(self, url):
        self.given_url = sa_url.make_url(url)
        if not self.given_url.database:
            raise ValueError(
                'IRONIC_ALLOC_TEST_DB must name a database (%s): each test '
                'process creates its own next to it.'
                % self.given_url.render_as_string(hide_password=True))
        self.backend = self.given_url.get_backend_name()
        if self.backend not in ('postgresql', 'mysql'):
            raise ValueError('Not a database server URL: %s'
                             % self.given_url.render_as_string(
                                 hide_password=True))
        self.owner_pid = os.getpid()
        self.name = process_database_name(self.given_url.database,
                                          self.owner_pid)
        self.url = self.given_url.set(database=self.name)
        self.created = False

    def _admin_connection(self):
        # NOTE: CREATE and DROP DATABASE cannot run in a PostgreSQL
        # transaction; no pool, so nothing stays connected afterwards.
        engine = sa.create_engine(self.given_url, poolclass=sa.pool.NullPool,
                                  isolation_level='AUTOCOMMIT')
        return engine, engine.connect()

    def _quoted_name(self, conn):
        return conn.dialect.identifier_preparer.quote_identifier(self.name)

    def create(self):
        """(Re)create the database empty; returns its URL.

        A database of the same name left by a process that was killed
        (its exit clean-up never ran) is dropped first: no live process
        holds the name, since it carries the pid of this one.
        """
        engine, conn = self._admin_connection()
        try:
            if self.backend == 'postgresql':
                self._create_postgresql(conn)
            else:
                self._create_mysql(conn)
        finally:
            conn.close()
            engine.dispose()
        self.created = True
        return self.url

    def _create_postgresql(self, conn):
        encoding, collate, ctype = conn.execute(sa.text(
            'SELECT pg_encoding_to_char(encoding), datcollate, datctype '
            'FROM pg_database WHERE datname = current_database()')).one()
        name = self._quoted_name(conn)
        conn.execute(sa.text('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                             % name))
        # NOTE: template0, since template1 may have another encoding or
        # locale than the ones asked for.
        conn.execute(sa.text(
            'CREATE DATABASE %s TEMPLATE template0 ENCODING %s '
            'LC_COLLATE %s LC_CTYPE %s'
            % (name, _quote_literal(encoding), _quote_literal(collate),
               _quote_literal(ctype))))

    def _create_mysql(self, conn):
        charset, collation = conn.execute(sa.text(
            'SELECT default_character_set_name, default_collation_name '
            'FROM information_schema.schemata '
            'WHERE schema_name = DATABASE()')).one()
        name = self._quoted_name(conn)
        conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % name))
        conn.execute(sa.text('CREATE DATABASE %s CHARACTER SET %s COLLATE %s'
                             % (name, charset, collation)))

    def drop(self):
        """Drop the database, closing whatever is still connected to it."""
        engine, conn = self._admin_connection()
        try:
            if self.backend == 'postgresql':
                # NOTE: FORCE ends the sessions still connected to it
                # (threads of a test that never stopped, say).
                conn.execute(sa.text('DROP DATABASE IF EXISTS %s WITH (FORCE)'
                                     % self._quoted_name(conn)))
            else:
                self._drop_mysql(conn)
        finally:
            conn.close()
            engine.dispose()
        self.created = False

    def _drop_mysql(self, conn):
        # NOTE: a connection left in a transaction on one of its tables
        # would make DROP DATABASE wait for its metadata lock: end those
        # connections first (a user may end its own).
        ids = conn.execute(sa.text(
            'SELECT id FROM information_schema.processlist '
            'WHERE db = :name AND id <> CONNECTION_ID()'),
            {'name': self.name}).scalars().all()
        for conn_id in ids:
            try:
                conn.execute(sa.text('KILL CONNECTION %d' % int(conn_id)))
            except sa.exc.DBAPIError:
                # Gone meanwhile.
                pass
        conn.execute(sa.text('SET SESSION lock_wait_timeout = %d'
                             % MYSQL_LOCK_WAIT_SECONDS))
        conn.execute(sa.text('DROP DATABASE IF EXISTS %s'
                             % self._quoted_name(conn)))

    def drop_at_exit(self, before_drop=None):
        """Drop the database when this process exits.

        :param before_drop: called first (to close the process's own
            engine, say).

        Forked children inherit the exit handler: only the process that
        created the database drops it.
        """
        def drop_if_owner():
            if os.getpid() != self.owner_pid or not self.created:
                return
            try:
                if before_drop is not None:
                    before_drop()
                self.drop()
            except Exception as exc:
                # NOTE: at exit nothing can fail a test any more; say what
                # was left behind (tools/test-setup.sh drops leftovers).
                sys.stderr.write('Could not drop the test database %s: %s\n'
                                 % (self.name, exc))

        atexit.register(drop_if_owner)
