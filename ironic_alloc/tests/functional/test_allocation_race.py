"""Hundreds of concurrent allocation requests over real HTTP.

The real WSGI app is served by the API's cheroot server on a loopback
port; two real conductors share the database.  More requests than
nodes: every allocation must end active or error, no node may be given
twice, and node and allocation rows must agree.
"""

import http.client
import json
import threading
import time

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}


class HttpAllocationRaceTestCase(base.DbTestCase):

    NODES = 50
    REQUESTS = 200
    CLIENTS = 20

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        for host in ('race-a', 'race-b'):
            self.useFixture(ia_fixtures.ConductorFixture(
                host=host, allocation_redrive_interval=2))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = wsgi_service.WSGIService(api_app.setup_app,
                                               '127.0.0.1', 0)
        self.server.start()
        self.addCleanup(self.server.stop)

    def request(self, conn, method, path, body=None):
        return ia_fixtures.json_request(conn, method, path, body, HEADERS)

    def test_concurrent_posts(self):
        self._race()

    def test_concurrent_posts_with_wait(self):
        # Each POST waits for its conductor: its answer shows the end
        # state, which must be what the database holds.
        self.config(allocation_create_wait=30, group='api')
        answers, allocations = self._race()
        listed = {a['uuid']: a for a in allocations}
        by_state = {}
        for _status, answer in answers:
            by_state[answer['state']] = by_state.get(answer['state'], 0) + 1
            if answer['state'] == states.ALLOCATING:
                continue  # the wait ran out; the listing checked the end
            final = listed[answer['uuid']]
            self.assertEqual((final['state'], final['node_uuid']),
                             (answer['state'], answer['node_uuid']), answer)
        print('POST answers with [api]allocation_create_wait: %s' % by_state)
        # NOTE: 20 clients, 16 workers per conductor, 30 s: every request
        # gets its end state (a full pool would answer allocating).
        self.assertEqual({states.ALLOCATION_ACTIVE: self.NODES,
                          states.ALLOCATION_ERROR:
                              self.REQUESTS - self.NODES}, by_state)

    def _race(self):
        """REQUESTS POSTs from CLIENTS clients on NODES nodes, each
        polled until it is no longer allocating.

        :returns: ([(status, body of the POST answer)], listed
            allocations).
        """
        for i in range(self.NODES):
            utils.make_available_node(
                self.context, name='race-node-%d' % i,
                traits=['CUSTOM_RACE'])
        results = []
        lock = threading.Lock()

        def client(count):
            conn = http.client.HTTPConnection('127.0.0.1', self.server.port,
                                              timeout=60)
            mine = []
            for _ in range(count):
                status, body = self.request(
                    conn, 'POST', '/v1/allocations',
                    {'resource_class': 'gold', 'traits': ['CUSTOM_RACE']})
                mine.append((status, body))
            for status, body in mine:
                if status != 201:
                    continue
                deadline = time.monotonic() + 120
                while body['state'] == states.ALLOCATING:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.05)
                    _s, body = self.request(
                        conn, 'GET', '/v1/allocations/%s' % body['uuid'])
            with lock:
                results.extend(mine)
            conn.close()

        threads = [threading.Thread(target=client,
                                    args=(self.REQUESTS // self.CLIENTS,))
                   for _ in range(self.CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        statuses = [s for s, _b in results]
        self.assertEqual([201] * self.REQUESTS, statuses)
        conn = http.client.HTTPConnection('127.0.0.1', self.server.port)
        allocations = []
        marker = None
        while True:
            path = '/v1/allocations?limit=100'
            if marker:
                path += '&marker=%s' % marker
            _s, page = self.request(conn, 'GET', path)
            allocations += page['allocations']
            if 'next' not in page:
                break
            marker = page['allocations'][-1]['uuid']
        by_state = {}
        for allocation in allocations:
            by_state[allocation['state']] = by_state.get(
                allocation['state'], 0) + 1
        print('HTTP race: %d POSTs from %d clients on %d nodes -> %s'
              % (self.REQUESTS, self.CLIENTS, self.NODES, by_state))
        self.assertEqual({states.ALLOCATION_ACTIVE: self.NODES,
                          states.ALLOCATION_ERROR:
                              self.REQUESTS - self.NODES}, by_state)
        nodes_taken = [a['node_uuid'] for a in allocations
                       if a['state'] == states.ALLOCATION_ACTIVE]
        self.assertEqual(self.NODES, len(set(nodes_taken)))
        self.assertEqual([], utils.check_invariant())
        return results, allocations

    def test_concurrent_deletes_of_one_allocation(self):
        """Two clients DELETE the same allocation at once, many times:
        one 204, one 404 naming the allocation's UUID (the losing request
        may already be at the conductor when the row disappears)."""
        rounds = 25
        for i in range(rounds):
            utils.make_available_node(self.context, name='del-node-%d' % i)
        conn = http.client.HTTPConnection('127.0.0.1', self.server.port)
        uuids = []
        for _ in range(rounds):
            status, body = self.request(conn, 'POST', '/v1/allocations',
                                        {'resource_class': 'gold'})
            self.assertEqual(201, status, body)
            uuids.append(body['uuid'])
        for uuid in uuids:
            deadline = time.monotonic() + 60
            while True:
                _s, body = self.request(conn, 'GET',
                                        '/v1/allocations/%s' % uuid)
                if body['state'] != states.ALLOCATING:
                    break
                self.assertLess(time.monotonic(), deadline, body)
                time.sleep(0.05)
            self.assertEqual(states.ALLOCATION_ACTIVE, body['state'])

        outcomes = []
        for uuid in uuids:
            barrier = threading.Barrier(2)
            answers = []

            def delete(uuid=uuid, barrier=barrier, answers=answers):
                client = http.client.HTTPConnection(
                    '127.0.0.1', self.server.port, timeout=60)
                barrier.wait()
                answers.append(self.request(
                    client, 'DELETE', '/v1/allocations/%s' % uuid))
                client.close()

            threads = [threading.Thread(target=delete) for _ in range(2)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            self.assertEqual([204, 404], sorted(s for s, _b in answers),
                             answers)
            error = [b for s, b in answers if s == 404][0]
            message = json.loads(error['error_message'])['faultstring']
            self.assertIn(uuid, message)
            outcomes.append(message)
        print('concurrent DELETE pairs: %d x (204, 404 naming the UUID)'
              % len(outcomes))
        self.assertEqual([], utils.check_invariant())
