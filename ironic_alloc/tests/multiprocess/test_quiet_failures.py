"""What the processes log while the only conductor cannot reach its
database: every DELETE answers 503, and each process writes one WARNING
line for the cause, without a traceback, instead of one per request
([DEFAULT]unavailable_log_interval, common/unavailable_log.py).
"""

import collections
from concurrent import futures
import re

import requests
import sqlalchemy as sa

from ironic_alloc.tests.multiprocess import fixtures as mp
from ironic_alloc.tests.multiprocess import test_fault_tolerance as base

ALLOCATIONS = 20
CLIENTS = 10
QUIET = {'unavailable_log_interval': '3600'}
# NOTE: the conductor stays on the API's list of live ones throughout
# (the tier's own timeout is a few seconds): every DELETE is sent to it.
API_SECTIONS = {'DEFAULT': QUIET,
                'conductor': {'heartbeat_timeout': '60'}}


class TestConductorCutOffFromTheDatabase(base.MultiProcessTestCase):

    def test_one_line_per_cause_and_process(self):
        db = sa.engine.make_url(self.cluster.db_url)
        proxy = mp.TcpProxy(db.host or '127.0.0.1',
                            db.port or (5432 if db.get_backend_name() ==
                                        'postgresql' else 3306))
        self.addCleanup(proxy.close)
        self.cluster.rebuild_schema()
        self.cluster.load_nodes(ALLOCATIONS)
        url = self.cluster.start_api(sections=API_SECTIONS)
        self.cluster.start_conductor('c1', options={
            'DEFAULT': dict(QUIET),
            'database': {'connection': proxy.url_for(self.cluster.db_url)}})
        load = mp.Load([url], clients=CLIENTS, total=ALLOCATIONS).start()
        load.join(mp.REQUEST_TIMEOUT * 4)
        self.assert_answered(load, {201}, 'POST')
        self.cluster.wait_settled(base.TAKE_OVER_BOUND)

        proxy.cut()

        def delete(uuid):
            resp = requests.delete('%s/v1/allocations/%s' % (url, uuid),
                                   headers=mp.api_headers(),
                                   timeout=mp.REQUEST_TIMEOUT)
            return resp.status_code

        with futures.ThreadPoolExecutor(CLIENTS) as pool:
            statuses = collections.Counter(pool.map(delete, load.created))
        mp.log('DELETEs with the conductor cut off from the database: %s',
               dict(statuses))
        self.assertEqual({503: ALLOCATIONS}, dict(statuses))

        api_log = self.cluster.apis[0][0].log_text()
        self.assertNotIn('Traceback', api_log)
        self.assertNotIn('Server-side error', api_log)
        # NOTE: a cause is the class of the answer, and the message of a
        # plain TemporaryFailure (common/unavailable_log.py).
        causes = collections.Counter(
            name if name != 'TemporaryFailure' else message.strip()
            for name, message in re.findall(
                r'Answered 503 \((\w+)\) to DELETE /v1/allocations/\S+: '
                r'([^(]*)', api_log))
        self.assertNotEqual({}, causes)
        self.assertEqual({1}, set(causes.values()), causes)
        conductor_log = self.cluster.conductors['c1'].log_text()
        self.assertNotIn('Exception during message handling',
                         conductor_log)
        self.assertEqual(1, conductor_log.count(
            'Could not reach the database in RPC destroy_allocation'),
            conductor_log[-5000:])
        mp.log('API log: %s; conductor log: one line', dict(causes))
