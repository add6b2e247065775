"""Base classes and fixtures shared by all tests.

The database under test is an SQLite file of each test process by
default.  Set IRONIC_ALLOC_TEST_DB to an SQLAlchemy URL
(postgresql+psycopg2://..., mysql+pymysql://...) to run the same tests on
another engine: on a database server each test process then works in a
database of its own next to the named one (see process_database).  The
schema is built once per test process with the real migrations and emptied
between tests.
"""

import os
import tempfile
import threading

import fixtures
from oslo_config import fixture as config_fixture
from oslotest import base as oslo_base
import pecan
import sqlalchemy as sa

from ironic_alloc.common import context as ia_context
from ironic_alloc.conf import CONF
from ironic_alloc import objects
from ironic_alloc.tests import process_database

objects.register_all()

_DB_LOCK = threading.Lock()
_DB_READY = False
# NOTE: computed at import: oslotest points tempfile at a per-test
# directory that is removed when the test ends.
_TEST_DIR = tempfile.gettempdir()


def _parse_conf_once():
    if CONF._args is not None:  # parsed already
        return
    CONF([], project='ironic-alloc', default_config_files=[],
         default_config_dirs=[])


def test_database_url():
    """The database of this test process, (re)created empty.

    On a database server (IRONIC_ALLOC_TEST_DB) that database is dropped
    when the process exits.
    """
    url = os.environ.get('IRONIC_ALLOC_TEST_DB')
    if url and process_database.is_server_url(url):
        database = process_database.ProcessDatabase(url)
        url = database.create()
        database.drop_at_exit(before_drop=_dispose_engine)
        return url.render_as_string(hide_password=False)
    if url:
        return url
    path = os.path.join(_TEST_DIR,
                        'ironic-alloc-test-%d.sqlite' % os.getpid())
    for suffix in ('', '-wal', '-shm'):
        if os.path.exists(path + suffix):
            os.unlink(path + suffix)
    return 'sqlite:///%s' % path


def _dispose_engine():
    # NOTE: the pooled connections of this process would otherwise still
    # be connected to the database being dropped.
    from ironic_alloc.db.sqlalchemy import api as sqla_api
    sqla_api.get_engine().dispose()


def running_in_ci():
    """True when CI=true: missing test servers are then failures."""
    return os.environ.get('CI', '').lower() == 'true'


def skip_or_fail(testcase, reason):
    """Skip ``testcase`` for ``reason``, or fail it when running in CI.

    For tests that need a server (PostgreSQL, MariaDB, RabbitMQ...): a
    developer without one gets a skip with the reason, while CI, which
    installs every server, must not pass by skipping.
    """
    if running_in_ci():
        testcase.fail('%s (CI=true: this test must not be skipped)' % reason)
    testcase.skipTest(reason)

class Database(fixtures.Fixture):
    """The real schema (built by the migrations once), empty per test."""

    def _setUp(self):
        global _DB_READY
        from ironic_alloc.db import migration
        from ironic_alloc.db.sqlalchemy import api as sqla_api
        from ironic_alloc.db.sqlalchemy import models
        with _DB_LOCK:
            if not _DB_READY:
                CONF.set_default('connection', test_database_url(),
                                 group='database')
                engine = sqla_api.get_engine()
                with engine.begin() as conn:
                    # NOTE: a database IRONIC_ALLOC_TEST_DB names and
                    # the tests use as it is (an SQLite URL) may hold the
                    # schema of a previous run; start from empty.
                    models.Base.metadata.drop_all(conn)
                    conn.execute(sa.text(
                        'DROP TABLE IF EXISTS alembic_version'))
                migration.upgrade('head')
                _DB_READY = True
        self.engine = sqla_api.get_engine()
        self._empty(models)
        self.addCleanup(self._empty, models)

    def _empty(self, models):
        # NOTE: the tallies after the nodes, whose deletion writes tally
        # changes (triggers), and the lock row of the folds kept, as the
        # migration wrote it.
        tallies = (models.NODE_TALLY_CHANGES, models.NODE_TALLIES)
        with self.engine.begin() as conn:
            for table in reversed(models.Base.metadata.sorted_tables):
                if table not in tallies + (models.NODE_TALLY_FOLDS,):
                    conn.execute(table.delete())
            for table in tallies:
                conn.execute(table.delete())


def _reset_wsme_debug():
    # NOTE: WSME reads "debug" (tracebacks in error bodies) from Pecan's
    # process-wide configuration, which api/app.setup_app sets from
    # [api]debug_tracebacks_in_api: a test that enabled it must not leave
    # tracebacks on for the tests after it in the same process.
    pecan.configuration.set_config({'wsme': {'debug': False}})


class TestCase(oslo_base.BaseTestCase):
    """Known configuration, an admin context, no stray state."""

    def setUp(self):
        super().setUp()
        _parse_conf_once()
        _reset_wsme_debug()
        self.addCleanup(_reset_wsme_debug)
        self.cfg_fixture = self.useFixture(config_fixture.Config(CONF))
        self.context = ia_context.get_admin_context()
        self.config(host='test-host')

    def config(self, **kw):
        self.cfg_fixture.config(**kw)


class DbTestCase(TestCase):

    def setUp(self):
        super().setUp()
        self.db = self.useFixture(Database())
