"""A call that is safe to repeat reaches a conductor that can serve it.

One of the conductors is gone (SIGKILL, no clean stop) or cut off from
its database, yet still on the list of live conductors (its heartbeat is
younger than [conductor]heartbeat_timeout).  DELETEs of allocations sent
at once right after must all answer 204, without client retries, and
free their nodes: the API asks another conductor when the one it chose
does not answer within [api]rpc_attempt_timeout or answers that it cannot
reach its database (see conductor/rpcapi.py).
"""

import collections
from concurrent import futures

import requests
import sqlalchemy as sa

from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance as base

ALLOCATIONS = 45
CLIENTS = 15
API_OPTIONS = {'rpc_call_timeout': '10', 'rpc_attempt_timeout': '2'}
# NOTE: the API keeps a conductor on its list of live ones as long as
# Ironic's default does (the tier's own timeout is a few seconds), so
# every DELETE may be sent to the lost one.
API_SECTIONS = {'conductor': {'heartbeat_timeout': '60'}}


class TestDeletesWithAConductorLost(base.MultiProcessTestCase):

    def _start(self, conductors, c2_options=None):
        self.cluster.rebuild_schema()
        self.cluster.load_nodes(ALLOCATIONS + 5)
        url = self.cluster.start_api(options=API_OPTIONS,
                                     sections=API_SECTIONS)
        for i in range(conductors):
            name = 'c%d' % (i + 1)
            self.cluster.start_conductor(
                name, options=c2_options if name == 'c2' else None)
        return url

    def _allocate(self, url):
        load = mp.Load([url], clients=CLIENTS, total=ALLOCATIONS).start()
        load.join(mp.REQUEST_TIMEOUT * 4)
        self.assert_answered(load, {201}, 'POST')
        self.cluster.wait_settled(base.TAKE_OVER_BOUND)
        with self.cluster.engine.connect() as conn:
            spread = dict(conn.execute(sa.text(
                "SELECT c.hostname, count(*) FROM allocations a JOIN "
                "conductors c ON c.id = a.conductor_affinity WHERE "
                "a.state = 'active' GROUP BY c.hostname")).all())
        self.assertEqual(ALLOCATIONS, sum(spread.values()), spread)
        mp.log('%d allocations active, by conductor: %s', ALLOCATIONS,
               spread)
        return load.created

    def _delete_all_at_once(self, url, uuids):
        def delete(uuid):
            # NOTE: a plain request: requests retries nothing by default.
            try:
                resp = requests.delete('%s/v1/allocations/%s' % (url, uuid),
                                       headers=mp.api_headers(),
                                       timeout=mp.REQUEST_TIMEOUT)
            except requests.RequestException as exc:
                return type(exc).__name__, str(exc)[:300]
            return resp.status_code, resp.text[:300]

        with futures.ThreadPoolExecutor(CLIENTS) as pool:
            answers = list(pool.map(delete, uuids))
        statuses = collections.Counter(status for status, _ in answers)
        samples = {status: text for status, text in answers}
        mp.log('DELETE answers: %s; calls sent on to another conductor '
               '(API log): %d', dict(statuses),
               self.cluster.grep_logs('asking conductor', ['api-1']))
        self.assertEqual({204: len(uuids)}, dict(statuses),
                         'samples: %s' % {status: text for status, text
                                          in samples.items()
                                          if status != 204})
        return uuids

    def _assert_nodes_free(self, url, deleted):
        with self.cluster.engine.connect() as conn:
            held = conn.execute(sa.text(
                'SELECT count(*) FROM nodes WHERE allocation_id IS NOT NULL '
                'OR instance_uuid IS NOT NULL')).scalar()
            left = conn.execute(sa.text(
                'SELECT count(*) FROM allocations')).scalar()
        self.assertEqual((0, 0), (held, left))
        mp.check_consistency(self.cluster, url, deleted, deleted)

    def test_deletes_after_kill_9_of_a_conductor(self):
        url = self._start(conductors=3)
        created = self._allocate(url)
        self.killed = ('c1',)
        self.cluster.conductors['c1'].kill()
        mp.log('kill -9 c1; %d DELETEs at once', len(created))
        deleted = self._delete_all_at_once(url, created)
        self._assert_nodes_free(url, deleted)

    def test_deletes_with_a_conductor_cut_off_from_the_database(self):
        db = sa.engine.make_url(self.cluster.db_url)
        proxy = mp.TcpProxy(db.host or '127.0.0.1',
                            db.port or (5432 if db.get_backend_name() ==
                                        'postgresql' else 3306))
        self.addCleanup(proxy.close)
        url = self._start(conductors=2, c2_options={
            'database': {'connection': proxy.url_for(self.cluster.db_url)}})
        created = self._allocate(url)
        proxy.cut()
        mp.log('database cut off from c2; %d DELETEs at once', len(created))
        deleted = self._delete_all_at_once(url, created)
        self._assert_nodes_free(url, deleted)
        self.assertTrue(self.cluster.conductors['c2'].running())
