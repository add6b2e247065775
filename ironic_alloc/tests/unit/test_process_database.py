"""The database of each test process on PostgreSQL and MariaDB.

These tests log in as OpenStack CI's ``openstack_citest`` user and create
their databases next to ``openstack_citest`` (tools/test-setup.sh makes
both); without the server they skip, or fail in CI.
"""

import subprocess
import sys
import textwrap

import sqlalchemy as sa

from ironic_alloc.tests import base
from ironic_alloc.tests import process_database

POSTGRESQL_URL = ('postgresql+psycopg2://openstack_citest:openstack_citest@'
                  'localhost/openstack_citest')
MYSQL_URL = ('mysql+pymysql://openstack_citest:openstack_citest@'
             'localhost/openstack_citest?charset=utf8mb4')
# Bounds on waiting: they only keep a hang from stalling the run.
CHILD_TIMEOUT = 120


class TestNames(base.TestCase):

    def test_server_urls(self):
        self.assertTrue(process_database.is_server_url(POSTGRESQL_URL))
        self.assertTrue(process_database.is_server_url(MYSQL_URL))
        self.assertFalse(process_database.is_server_url('sqlite:///x.db'))
        self.assertFalse(process_database.is_server_url('sqlite://'))

    def test_name_carries_the_pid(self):
        self.assertEqual('ironic_alloc_functional_4242',
                         process_database.process_database_name(
                             'ironic_alloc_functional', 4242))

    def test_name_too_long(self):
        error = self.assertRaises(
            ValueError, process_database.process_database_name,
            'x' * 60, 4242)
        self.assertIn('too long', str(error))

    def test_url_without_database(self):
        error = self.assertRaises(
            ValueError, process_database.ProcessDatabase,
            'postgresql+psycopg2://openstack_citest:secret@localhost/')
        self.assertIn('must name a database', str(error))
        self.assertNotIn('secret', str(error))

    def test_not_a_server(self):
        self.assertRaises(ValueError, process_database.ProcessDatabase,
                          'sqlite:///x.db')


class _ServerMixin:
    """Tests run on one server; ``URL`` names its citest database."""

    URL = None

    def setUp(self):
        super().setUp()
        engine = sa.create_engine(self.URL, poolclass=sa.pool.NullPool)
        self.addCleanup(engine.dispose)
        try:
            engine.connect().close()
        except sa.exc.DBAPIError as exc:
            base.skip_or_fail(self, 'No %s server with the openstack_citest '
                              'database: %s' % (engine.dialect.name,
                                                exc.orig))
        self.admin = engine

    def database_names(self):
        with self.admin.connect() as conn:
            if self.admin.dialect.name == 'postgresql':
                query = 'SELECT datname FROM pg_database'
            else:
                query = 'SELECT schema_name FROM information_schema.schemata'
            return set(conn.execute(sa.text(query)).scalars())

    def settings(self, name):
        """The character set and collation of database ``name``."""
        with self.admin.connect() as conn:
            if self.admin.dialect.name == 'postgresql':
                return tuple(conn.execute(sa.text(
                    'SELECT pg_encoding_to_char(encoding), datcollate, '
                    'datctype FROM pg_database WHERE datname = :name'),
                    {'name': name}).one())
            return tuple(conn.execute(sa.text(
                'SELECT default_character_set_name, default_collation_name '
                'FROM information_schema.schemata WHERE schema_name = :name'),
                {'name': name}).one())

    def drop_if_left(self, name):
        engine = sa.create_engine(self.URL, poolclass=sa.pool.NullPool,
                                  isolation_level='AUTOCOMMIT')
        self.addCleanup(engine.dispose)
        with engine.connect() as conn:
            conn.execute(sa.text('DROP DATABASE IF EXISTS %s' % (
                conn.dialect.identifier_preparer.quote_identifier(name))))

    def process_db(self):
        database = process_database.ProcessDatabase(self.URL)
        self.addCleanup(database.drop)
        return database

    def test_create_copies_settings_and_drop_removes(self):
        database = self.process_db()
        url = database.create()
        self.assertEqual(database.name, url.database)
        self.assertIn(database.name, self.database_names())
        self.assertEqual(self.settings('openstack_citest'),
                         self.settings(database.name))
        engine = sa.create_engine(url)
        self.addCleanup(engine.dispose)
        self.assertEqual([], sa.inspect(engine).get_table_names())
        engine.dispose()
        database.drop()
        self.assertNotIn(database.name, self.database_names())

    def test_create_replaces_a_leftover(self):
        database = self.process_db()
        url = database.create()
        engine = sa.create_engine(url)
        self.addCleanup(engine.dispose)
        with engine.begin() as conn:
            conn.execute(sa.text('CREATE TABLE leftover (x INTEGER)'))
        engine.dispose()
        database.create()
        self.assertEqual([], sa.inspect(engine).get_table_names())

    def test_drop_ends_connections_in_a_transaction(self):
        database = self.process_db()
        engine = sa.create_engine(database.create())
        self.addCleanup(engine.dispose)
        conn = engine.connect()
        conn.execute(sa.text('CREATE TABLE busy (x INTEGER)'))
        conn.commit()
        # A transaction left open on a table of the database, as a thread
        # of a test that never stopped would leave it.
        conn.execute(sa.text('INSERT INTO busy VALUES (1)'))
        database.drop()
        self.assertNotIn(database.name, self.database_names())
        self.assertRaises(sa.exc.DBAPIError, conn.execute,
                          sa.text('SELECT x FROM busy'))
        conn.invalidate()

    def test_dropped_at_exit_by_its_process_only(self):
        # A real interpreter exit: the process creates its database, a
        # forked child exits normally (running the inherited exit
        # handlers) while the parent still uses the database, then the
        # parent exits.
        script = textwrap.dedent('''
            import os, sys
            import sqlalchemy as sa
            from ironic_alloc.tests import process_database
            database = process_database.ProcessDatabase(sys.argv[1])
            url = database.create()
            database.drop_at_exit()
            print(database.name, flush=True)
            child = os.fork()
            if child == 0:
                sys.exit(0)
            os.waitpid(child, 0)
            engine = sa.create_engine(url)
            with engine.connect() as conn:
                conn.execute(sa.text('SELECT 1'))
            print('parent still connected', flush=True)
            ''')
        result = subprocess.run([sys.executable, '-c', script, self.URL],
                                capture_output=True, text=True,
                                timeout=CHILD_TIMEOUT)
        lines = result.stdout.splitlines()
        if lines:
            self.addCleanup(self.drop_if_left, lines[0])
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('parent still connected', lines[-1], result.stderr)
        name = lines[0]
        self.assertTrue(name.startswith('openstack_citest_'), name)
        self.assertNotIn(name, self.database_names())


class TestPostgreSQL(_ServerMixin, base.TestCase):
    URL = POSTGRESQL_URL


class TestMySQL(_ServerMixin, base.TestCase):
    URL = MYSQL_URL
