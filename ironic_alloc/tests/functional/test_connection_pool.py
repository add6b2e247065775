"""Pooled database connections: tested only after being idle.

A connection whose server side went away (killed there; for SQLite, the
file handle closed) is found by the test of an idle connection and
replaced without an error; one returned a moment ago is handed out
untested, so the first transaction on it fails with a connection error
and the pool recovers for the next one.
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.tests import base


class PoolPingTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.engine = sqla_api.get_engine()
        # NOTE: one connection in the pool, so that the next transaction
        # gets the one the test kills.
        self.engine.dispose()
        self.addCleanup(self.engine.dispose)

    def _connection_id(self):
        """The server's id of the pooled connection, and the DBAPI one."""
        with sqla_api._connection_for_read() as conn:
            dbapi_connection = conn.connection.dbapi_connection
            dialect = conn.dialect.name
            if dialect == 'postgresql':
                server_id = conn.execute(
                    sa.text('SELECT pg_backend_pid()')).scalar()
            elif dialect == 'mysql':
                server_id = conn.execute(
                    sa.text('SELECT CONNECTION_ID()')).scalar()
            else:
                conn.execute(sa.text('SELECT 1'))
                server_id = id(dbapi_connection)
        return server_id, dbapi_connection

    def _kill(self, server_id, dbapi_connection):
        dialect = self.engine.dialect.name
        if dialect == 'sqlite':
            dbapi_connection.close()
            return
        # NOTE: from a connection of its own, outside the pool.
        other = sa.create_engine(self.engine.url,
                                 poolclass=sa.pool.NullPool)
        try:
            with other.begin() as conn:
                if dialect == 'postgresql':
                    conn.execute(sa.text('SELECT pg_terminate_backend(:p)'),
                                 {'p': server_id})
                else:
                    conn.execute(sa.text('KILL %d' % int(server_id)))
        finally:
            other.dispose()

    def test_idle_connection_found_closed_is_replaced(self):
        self.config(ping_idle_connections_after=0, group='database')
        killed = self._connection_id()
        self._kill(*killed)
        # No error: the test before the transaction found it closed.
        server_id, _conn = self._connection_id()
        self.assertNotEqual(killed[0], server_id)

    def test_connection_returned_a_moment_ago_is_not_tested(self):
        self.config(ping_idle_connections_after=60, group='database')
        killed = self._connection_id()
        self._kill(*killed)
        self.assertRaises(db_exc.DBConnectionError, self._connection_id)
        # The pool dropped the closed connection: the next one works.
        server_id, _conn = self._connection_id()
        self.assertNotEqual(killed[0], server_id)
