"""A conductor that looks alive in the database but never answers.

The API must still answer 201 to an allocation request (the row is
committed before the cast, and a lost cast is harmless; with
[api]allocation_create_wait, once the wait is over), and a deletion
(an RPC call) must end in a clear 503 after [api]rpc_call_timeout instead
of hanging.
"""

import json
import time

import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import rpc
from ironic_alloc.common import states
from ironic_alloc.conductor import rpcapi
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.tests import base

HEADERS = {'X-OpenStack-Ironic-API-Version': '1.79'}


class UnresponsiveConductorTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://')
        self.config(rpc_call_timeout=1, group='api')
        rpc.init()
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        # NOTE: registered and heart-beating as far as the database knows,
        # but no process serves its RPC topic.
        self.ghost = conductor_obj.Conductor.register(self.context,
                                                      'ghost-host', '')
        self.app = webtest.TestApp(api_app.setup_app())

    def test_create_is_201_and_delete_is_503(self):
        resp = self.app.post_json('/v1/allocations',
                                  {'resource_class': 'gold'},
                                  headers=HEADERS)
        self.assertEqual(201, resp.status_int)
        self.assertEqual(states.ALLOCATING, resp.json['state'])
        stored = allocation_obj.Allocation.get_by_uuid(self.context,
                                                       resp.json['uuid'])
        self.assertEqual(self.ghost.id, stored.conductor_affinity)

        resp = self.app.delete('/v1/allocations/%s' % resp.json['uuid'],
                               headers=HEADERS, expect_errors=True)
        self.assertEqual(503, resp.status_int)
        fault = json.loads(resp.json['error_message'])
        self.assertEqual('Server', fault['faultcode'])
        self.assertIn('did not answer in time', fault['faultstring'])
        # Nothing was deleted: the client may retry.
        allocation_obj.Allocation.get_by_uuid(self.context, stored.uuid)

    def test_create_with_wait_is_201_in_time(self):
        # The POST waits for the conductor's answer at most
        # [api]allocation_create_wait plus the call's margin, then answers
        # as without the wait: the row is there for the re-drive.
        self.config(allocation_create_wait=0.5, group='api')
        started = time.monotonic()
        resp = self.app.post_json('/v1/allocations',
                                  {'resource_class': 'gold'},
                                  headers=HEADERS)
        waited = time.monotonic() - started
        self.assertEqual(201, resp.status_int)
        self.assertEqual(states.ALLOCATING, resp.json['state'])
        self.assertIsNone(resp.json['node_uuid'])
        stored = allocation_obj.Allocation.get_by_uuid(self.context,
                                                       resp.json['uuid'])
        self.assertEqual(self.ghost.id, stored.conductor_affinity)
        self.assertEqual(states.ALLOCATING, stored.state)
        # NOTE: a generous bound (a loaded test machine), far below a hang.
        self.assertLess(waited, 0.5 + rpcapi.CALL_MARGIN_SECONDS + 5)
        self.assertGreaterEqual(waited, 0.5)
