"""SQLite connections are pooled and shared safely between threads."""

import os
import threading

import fixtures
from oslo_db.sqlalchemy import engines
import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.tests import base


class TestSqlitePool(base.TestCase):

    def _engine(self, pool_size):
        self.config(sqlite_pool_size=pool_size, group='database')
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'pool.sqlite')
        # NOTE: built the way oslo.db's enginefacade builds the service's
        # engine (NullPool for SQLite files), then given our hook.
        engine = engines.create_engine('sqlite:///%s' % path)
        self.addCleanup(engine.dispose)
        sqla_api._pool_sqlite_connections(engine)
        connects = []
        sa.event.listen(engine, 'connect',
                        lambda dbapi_conn, record: connects.append(1))
        return engine, connects

    def _busy_timeout(self, conn):
        return conn.exec_driver_sql('PRAGMA busy_timeout').scalar()

    def test_connections_are_reused(self):
        engine, connects = self._engine(pool_size=4)
        self.assertIsInstance(engine.pool, sa.pool.QueuePool)
        for _ in range(20):
            with engine.begin() as conn:
                # Our connect listener still ran on the pooled connection.
                self.assertEqual(30000, self._busy_timeout(conn))
        self.assertEqual(1, len(connects))

    def test_pooled_connections_move_between_threads(self):
        engine, connects = self._engine(pool_size=2)
        with engine.begin() as conn:
            conn.exec_driver_sql('CREATE TABLE t (n INTEGER)')
        errors = []

        def work(n):
            try:
                for i in range(25):
                    with engine.begin() as conn:
                        conn.exec_driver_sql(
                            'INSERT INTO t (n) VALUES (%d)' % (n * 100 + i))
            except Exception as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(n,))
                   for n in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual([], errors)
        with engine.begin() as conn:
            self.assertEqual(150, conn.exec_driver_sql(
                'SELECT count(*) FROM t').scalar())
        # Six threads on a pool of two: far fewer connections than the
        # 151 transactions.
        self.assertLess(len(connects), 151)
        self.assertLessEqual(engine.pool.checkedin(), 2)

    def test_pool_size_zero_keeps_a_connection_per_transaction(self):
        engine, connects = self._engine(pool_size=0)
        self.assertIsInstance(engine.pool, sa.pool.NullPool)
        for _ in range(3):
            with engine.begin() as conn:
                self.assertEqual(30000, self._busy_timeout(conn))
        self.assertEqual(3, len(connects))
