"""Requests that meet a locked node wait for the lock, as in Ironic.

The real WSGI app is served by the API's cheroot server on a loopback
port, with a real conductor behind it: clients race over HTTP for one
node while a power action holds its lock, and queue for the lock
(``[conductor]node_locked_retry_attempts`` tries,
``node_locked_retry_interval`` seconds apart) instead of failing with 409.
"""

import http.client
import threading

from oslo_utils import uuidutils

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}
CONDUCTOR = 'lock-conductor'
# NOTE: how long the fake hardware's power action holds the node's lock:
# long enough that the racing requests all meet it, shorter than the
# default retry interval, so that it has ended at their next try.
POWER_ACTION_SECONDS = 0.5


class NodeLockRetryTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        self.useFixture(ia_fixtures.ConductorFixture(host=CONDUCTOR))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = wsgi_service.WSGIService(api_app.setup_app,
                                               '127.0.0.1', 0)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.node = utils.make_available_node(self.context,
                                              name='contended')

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection('127.0.0.1', self.server.port,
                                          timeout=60)
        try:
            return ia_fixtures.json_request(conn, method, path, body,
                                            HEADERS)
        finally:
            conn.close()

    def race(self, bodies):
        """PATCH the node with every body at once, each from its own
        client thread.

        :returns: [(status, answer)] in the order of ``bodies``.
        """
        answers = [None] * len(bodies)
        start = threading.Barrier(len(bodies))

        def client(i):
            start.wait()
            answers[i] = self.request('PATCH', '/v1/nodes/%s' %
                                      self.node.uuid, bodies[i])

        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(len(bodies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return answers

    def start_power_action(self):
        """Power the node on; the conductor's worker holds the node's lock
        until the fake hardware is done."""
        self.config(fake_action_delay=POWER_ACTION_SECONDS,
                    group='conductor')
        status, body = self.request(
            'PUT', '/v1/nodes/%s/states/power' % self.node.uuid,
            {'target': states.POWER_ON})
        self.assertEqual(202, status, body)

    def test_concurrent_patches_wait_for_the_lock(self):
        # Two clients change different fields of a node a power action
        # holds: with the default retries, both changes are made.
        self.start_power_action()
        answers = self.race([
            [{'op': 'add', 'path': '/extra/client', 'value': 'first'}],
            [{'op': 'add', 'path': '/description', 'value': 'second'}],
        ])
        self.assertEqual([200, 200], [s for s, _b in answers], answers)
        status, node = self.request('GET', '/v1/nodes/%s' % self.node.uuid)
        self.assertEqual(200, status)
        self.assertEqual({'client': 'first'}, node['extra'])
        self.assertEqual('second', node['description'])
        self.assertEqual(states.POWER_ON, node['power_state'])
        self.assertIsNone(node['target_power_state'])
        self.assertIsNone(node['reservation'])

    def test_instance_claims_race(self):
        # Nova's driver claims a node by setting instance_uuid.  Two claims
        # of a node a power action holds: one wins, the other is refused
        # because the node has an instance, not because it was locked.
        self.start_power_action()
        claims = [uuidutils.generate_uuid() for _ in range(2)]
        answers = self.race([
            [{'op': 'add', 'path': '/instance_uuid', 'value': claim}]
            for claim in claims])
        self.assertEqual([200, 409], sorted(s for s, _b in answers),
                         answers)
        winner = claims[[s for s, _b in answers].index(200)]
        refusal = [b for s, b in answers if s == 409][0]
        self.assertIn('is associated with instance %s' % winner,
                      refusal['error_message'])
        self.node.refresh()
        self.assertEqual(winner, self.node.instance_uuid)
        self.assertIsNone(self.node.reservation)

    def hold_lock(self):
        # NOTE: the conductor's own host name, as an operation of its own
        # that does not end would hold it: a lock of an unknown host
        # would be released by the conductor's check for dead holders.
        node_obj.Node.reserve(self.context, CONDUCTOR, self.node.id)

    def test_lock_held_longer_than_the_retries(self):
        self.config(node_locked_retry_attempts=2,
                    node_locked_retry_interval=1, group='conductor')
        self.hold_lock()
        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % self.node.uuid,
            [{'op': 'add', 'path': '/description', 'value': 'late'}])
        self.assertEqual(409, status, body)
        self.assertIn('Node %s is locked by host %s' % (self.node.uuid,
                                                        CONDUCTOR),
                      body['error_message'])
        status, body = self.request(
            'PUT', '/v1/nodes/%s/states/provision' % self.node.uuid,
            {'target': 'manage'})
        self.assertEqual(409, status, body)
        self.assertIn('is locked by host', body['error_message'])
        self.node.refresh()
        self.assertIsNone(self.node.description)
        self.assertEqual(states.AVAILABLE, self.node.provision_state)
        self.assertEqual(CONDUCTOR, self.node.reservation)

    def test_retries_end_before_the_api_stops_waiting(self):
        # Retries configured to last longer than the API waits for the
        # conductor: the conductor still answers 409 in time, so the
        # client never gets a 503 for a change made after all.
        self.config(rpc_call_timeout=2, group='api')
        self.config(node_locked_retry_attempts=10,
                    node_locked_retry_interval=1, group='conductor')
        self.hold_lock()
        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % self.node.uuid,
            [{'op': 'add', 'path': '/description', 'value': 'late'}])
        self.assertEqual(409, status, body)
        self.assertIn('is locked by host %s' % CONDUCTOR,
                      body['error_message'])
        self.node.refresh()
        self.assertIsNone(self.node.description)
