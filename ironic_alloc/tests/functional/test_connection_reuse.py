"""A conductor's busiest moments reuse its database connections, and
reads grouped by dbapi.reading() share one.

A conductor works on up to [conductor]workers_pool_size allocations at
once, each in transactions of its own.  The pool keeps that many
connections open between bursts: a connection closed at check-in and
opened again at the next burst costs about 10 ms of CPU on PostgreSQL
(password exchange, a new server process, its catalog caches).
"""

import threading

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import exception
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.tests import base


class ConnectionReuseTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.engine = sqla_api.get_engine()
        self.engine.dispose()
        self.addCleanup(self.engine.dispose)
        self.connects = []

        def listener(dbapi_connection, record):
            self.connects.append(record)

        sa.event.listen(self.engine, 'connect', listener)
        self.addCleanup(sa.event.remove, self.engine, 'connect', listener)

    def _burst(self, size):
        """``size`` read transactions open at the same moment."""
        together = threading.Barrier(size, timeout=30)
        errors = []

        def transaction():
            try:
                with sqla_api._connection_for_read() as conn:
                    conn.execute(sa.select(sa.literal(1))).scalar()
                    together.wait()
            except Exception as exc:
                errors.append(exc)
                together.abort()

        threads = [threading.Thread(target=transaction)
                   for _ in range(size)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        self.assertEqual([], errors)

    def test_bursts_of_a_full_worker_pool_reuse_connections(self):
        size = CONF.conductor.workers_pool_size
        self._burst(size)
        self.assertEqual(size, len(self.connects))
        for _ in range(3):
            self._burst(size)
        self.assertEqual(size, len(self.connects))


class ReadingTestCase(base.DbTestCase):
    """dbapi.reading(): the reads inside share one transaction."""

    CRITERIA = {'resource_class': 'none', 'traits': [],
                'candidate_uuids': [], 'owner': None}

    def setUp(self):
        super().setUp()
        self.dbapi = db_api.get_instance()
        engine = sqla_api.get_engine()
        self.checkouts = []

        def listener(dbapi_connection, record, proxy):
            self.checkouts.append(record)

        sa.event.listen(engine, 'checkout', listener)
        self.addCleanup(sa.event.remove, engine, 'checkout', listener)

    def _reads(self):
        self.assertEqual([], self.dbapi.get_allocation_candidates(
            self.CRITERIA, 5, pivot=uuidutils.generate_uuid()))
        self.assertIn('resource class',
                      self.dbapi.explain_no_candidates(self.CRITERIA))
        self.assertEqual([], self.dbapi.get_allocating_ids(-1))

    def test_reads_inside_share_one_checkout(self):
        self._reads()
        self.assertEqual(3, len(self.checkouts))
        with self.dbapi.reading():
            self._reads()
        self.assertEqual(4, len(self.checkouts))

    def test_write_inside_is_refused(self):
        values = {'uuid': uuidutils.generate_uuid(), 'resource_class': 'x',
                  'traits': [], 'candidate_nodes': [], 'extra': {}}
        with self.dbapi.reading():
            self.assertRaises(TypeError, self.dbapi.create_allocation,
                              values)
        self.assertRaises(exception.AllocationNotFound,
                          self.dbapi.get_allocation_by_uuid, values['uuid'])
