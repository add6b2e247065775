"""A conductor that looks alive in the database but never answers.

The API must still answer 201 to an allocation request (the row is
committed before the cast, and a lost cast is harmless; with
[api]allocation_create_wait, once the wait is over), and a deletion
(an RPC call) must end in a clear 503 after [api]rpc_call_timeout instead
of hanging.  Next to a live conductor, one that missed heartbeats is
asked after it, so calls are served at once.
"""

import datetime
import json
import time
import types

from oslo_utils import uuidutils
import sqlalchemy as sa
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import rpc
from ironic_alloc.common import states
from ironic_alloc.conductor import rpcapi
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc import objects
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures

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


class MissedHeartbeatsTestCase(base.DbTestCase):
    """A conductor that missed heartbeats, yet is younger than
    [conductor]heartbeat_timeout (dead, paused or cut off from the
    database), is asked after the live one: deletions of allocations
    (any conductor) and node changes (the node's hashed conductor first)
    are served at once."""

    def setUp(self):
        super().setUp()
        self.config(rpc_call_timeout=1, group='api')
        self.conductor = self.useFixture(fixtures.ConductorFixture())
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        ghost = conductor_obj.Conductor.register(self.context, 'ghost-host',
                                                 '')
        # NOTE: three heartbeat intervals (the default 10 s) behind the
        # live conductor's: it missed heartbeats, but is alive for the
        # default heartbeat_timeout (60 s).
        old = db_api.get_instance().get_database_time() - \
            datetime.timedelta(seconds=30)
        with sqla_api._session_for_write() as session:
            session.execute(sa.update(models.Conductor).where(
                models.Conductor.id == ghost.id).values(heartbeat_at=old))
        self.alive = conductor_obj.Conductor.list_alive(self.context, 60)
        self.assertEqual({'ghost-host', self.conductor.host},
                         {c.hostname for c in self.alive})
        self.app = webtest.TestApp(api_app.setup_app())

    def test_deletions_go_to_the_live_conductor(self):
        me = self.conductor.service.conductor.id
        allocations = []
        for _ in range(10):
            node = utils.make_available_node(self.context)
            allocation = utils.make_allocation(
                self.context, me, state=states.ACTIVE, node_id=node.id)
            sqla_api.get_backend().update_node(
                node.id, {'allocation_id': allocation.id,
                          'instance_uuid': allocation.uuid})
            allocations.append((allocation.uuid, node.id))
        # NOTE: a random pick of two would choose the silent one for some
        # of ten with a probability of 1 - 2**-10.
        statuses = [self.app.delete('/v1/allocations/%s' % uuid,
                                    headers=HEADERS,
                                    expect_errors=True).status_int
                    for uuid, _node in allocations]
        self.assertEqual([204] * 10, statuses)
        for _uuid, node_id in allocations:
            node = objects.Node.get_by_id(self.context, node_id)
            self.assertEqual((None, None),
                             (node.allocation_id, node.instance_uuid))

    def test_node_changes_skip_a_hashed_conductor_that_missed_heartbeats(
            self):
        # A node whose hashed conductor is the silent one.
        while True:
            uuid = uuidutils.generate_uuid()
            if rpcapi.ConductorAPI.conductor_for_node(
                    types.SimpleNamespace(uuid=uuid, conductor_group=''),
                    self.alive) == 'ghost-host':
                break
        utils.make_available_node(self.context, uuid=uuid)
        resp = self.app.patch_json(
            '/v1/nodes/%s' % uuid,
            [{'op': 'add', 'path': '/extra/a', 'value': 'b'}],
            headers=HEADERS, expect_errors=True)
        self.assertEqual(200, resp.status_int, resp.text)
        self.assertEqual({'a': 'b'}, resp.json['extra'])
        resp = self.app.put('/v1/nodes/%s/traits/CUSTOM_A' % uuid,
                            headers=HEADERS, expect_errors=True)
        self.assertEqual(204, resp.status_int, resp.text)
        # Actions that are not safe to repeat go to a live conductor too.
        resp = self.app.put_json('/v1/nodes/%s/states/provision' % uuid,
                                 {'target': 'manage'}, headers=HEADERS,
                                 expect_errors=True)
        self.assertEqual(202, resp.status_int, resp.text)
