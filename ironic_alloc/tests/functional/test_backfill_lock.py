"""Backfills against nodes that a conductor holds locked, over real HTTP.

The real WSGI app is served on a loopback port with a real conductor on
the in-process transport, over the test database.  A backfill
(``POST /v1/allocations`` with ``node``, 1.58) writes the node itself, in
the API; it must respect the node lock that conductors take before they
change a node: while the lock is held the backfill answers 409 and writes
nothing, and node and allocation rows agree at every step.
"""

import http.client
import json
import random
import threading
import time

import fixtures
from oslo_utils import uuidutils

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.conductor import provisioning
from ironic_alloc.conductor import task
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

HOST = 'backfill-conductor'
# The first microversion with backfill.
HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.58'}
# Bounds on waits, only so that a broken build fails instead of hanging.
WAIT = 60
LOCKED_MESSAGE = ('Node %s is locked by host %s, please retry after the '
                  'current operation is completed.')


class BackfillLockTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        self.conductor = self.useFixture(ia_fixtures.ConductorFixture(
            host=HOST))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = wsgi_service.WSGIService(api_app.setup_app,
                                               '127.0.0.1', 0)
        self.server.start()
        self.addCleanup(self.server.stop)

    def connect(self):
        conn = http.client.HTTPConnection('127.0.0.1', self.server.port,
                                          timeout=WAIT)
        self.addCleanup(conn.close)
        return conn

    @staticmethod
    def request(conn, method, path, body=None):
        return ia_fixtures.json_request(conn, method, path, body, HEADERS)

    def backfill(self, conn, node_uuid):
        return self.request(conn, 'POST', '/v1/allocations',
                            {'node': node_uuid})

    def fault(self, body):
        """The fault of an error answer in Ironic's format."""
        self.assertEqual({'error_message'}, set(body), body)
        fault = json.loads(body['error_message'])
        self.assertEqual({'faultcode', 'faultstring', 'debuginfo'},
                         set(fault), fault)
        self.assertEqual('Client', fault['faultcode'], fault)
        return fault

    def deployed_node(self, **kw):
        kw.setdefault('provision_state', states.ACTIVE)
        kw.setdefault('power_state', states.POWER_ON)
        return utils.make_node(self.context, **kw)

    def node_row(self, node_id):
        return node_obj.Node.get_by_id(self.context, node_id)

    def wait_until(self, predicate, what):
        deadline = time.monotonic() + WAIT
        while not predicate():
            if time.monotonic() > deadline:
                self.fail('%s: not within %ss' % (what, WAIT))
            time.sleep(0.02)


class TestBackfillOfLockedNode(BackfillLockTestCase):

    def _hold_power_action(self):
        """Make the fake power action wait until the test lets it end.

        The action is the real one (API, RPC, the conductor's node lock,
        its worker); only its fake hardware step waits for ``release``.

        :returns: (entered, release) events.
        """
        entered = threading.Event()
        release = threading.Event()

        def gate():
            entered.set()
            if not release.wait(WAIT):
                raise AssertionError('the test never released the action')

        self.useFixture(fixtures.MockPatchObject(provisioning, '_pause',
                                                 gate))
        # NOTE: let a failing test end the action too, so the conductor
        # stops cleanly.
        self.addCleanup(release.set)
        return entered, release

    def test_locked_node_refused_then_backfilled(self):
        node = self.deployed_node()
        entered, release = self._hold_power_action()
        conn = self.connect()

        status, body = self.request(
            conn, 'PUT', '/v1/nodes/%s/states/power' % node.uuid,
            {'target': states.POWER_OFF})
        self.assertEqual(202, status, body)
        self.assertTrue(entered.wait(WAIT), 'the power action never ran')
        before = self.node_row(node.id)
        self.assertEqual((HOST, states.POWER_OFF, None, None),
                         (before.reservation, before.target_power_state,
                          before.allocation_id, before.instance_uuid))

        # The backfill while the conductor holds the node: 409, nothing
        # written.
        status, body = self.backfill(conn, node.uuid)
        self.assertEqual(409, status, body)
        self.assertEqual(LOCKED_MESSAGE % (node.uuid, HOST),
                         self.fault(body)['faultstring'])
        self.assertEqual([], allocation_obj.Allocation.list(self.context))
        during = self.node_row(node.id)
        self.assertEqual((HOST, None, None),
                         (during.reservation, during.allocation_id,
                          during.instance_uuid))

        # The lock holder's change completes.
        release.set()
        self.wait_until(
            lambda: self.node_row(node.id).reservation is None,
            'the power action ended')
        after = self.node_row(node.id)
        self.assertEqual((states.POWER_OFF, None, None, None),
                         (after.power_state, after.target_power_state,
                          after.allocation_id, after.instance_uuid))
        self.assertEqual([], allocation_obj.Allocation.list(self.context))
        self.assertEqual([], utils.check_invariant())

        # Unlocked, the same backfill succeeds.
        status, body = self.backfill(conn, node.uuid)
        self.assertEqual(201, status, body)
        self.assertEqual((states.ALLOCATION_ACTIVE, node.uuid),
                         (body['state'], body['node_uuid']))
        allocation = allocation_obj.Allocation.get_by_uuid(self.context,
                                                           body['uuid'])
        node = self.node_row(node.id)
        self.assertEqual((allocation.id, allocation.uuid),
                         (node.allocation_id, node.instance_uuid))
        self.assertEqual([], utils.check_invariant())

    def test_locked_node_with_instance(self):
        # A node deployed before allocations existed: its instance becomes
        # the allocation's UUID.  The lock is taken as every conductor
        # operation takes it, and the holder writes the node meanwhile.
        instance = uuidutils.generate_uuid()
        node = self.deployed_node(instance_uuid=instance)
        conn = self.connect()
        with task.node_lock(self.context, node.id, HOST) as lock:
            status, body = self.backfill(conn, node.uuid)
            self.assertEqual(409, status, body)
            self.assertEqual(LOCKED_MESSAGE % (node.uuid, HOST),
                             self.fault(body)['faultstring'])
            lock.node.description = 'changed under the lock'
            lock.node.save()
        self.assertEqual([], allocation_obj.Allocation.list(self.context))
        after = self.node_row(node.id)
        self.assertEqual((None, None, instance, 'changed under the lock'),
                         (after.reservation, after.allocation_id,
                          after.instance_uuid, after.description))

        status, body = self.backfill(conn, node.uuid)
        self.assertEqual(201, status, body)
        self.assertEqual((instance, states.ALLOCATION_ACTIVE, node.uuid),
                         (body['uuid'], body['state'], body['node_uuid']))
        after = self.node_row(node.id)
        self.assertEqual(instance, after.instance_uuid)
        self.assertEqual([], utils.check_invariant())


class TestBackfillLockRace(BackfillLockTestCase):
    """Backfills racing conductors' locks on the same nodes.

    Each round: fresh deployed nodes (half with an instance already),
    backfill clients posting until every node has its allocation, and as
    many threads taking and releasing the nodes' locks as conductors do:
    directly, writing the node under the lock and recording what the node
    was bound to when the lock was taken and before it was released, and
    through the API (node PATCH, RPC, the conductor's own lock).
    """

    ROUNDS = 5
    NODES = 4
    BACKFILLERS = 4
    HOLDERS = 2
    PATCHERS = 2

    def test_backfills_racing_node_locks(self):
        totals = {}
        self.backfilled = set()  # the allocations of every round so far
        for round_number in range(self.ROUNDS):
            for key, count in self._round(round_number).items():
                totals[key] = totals.get(key, 0) + count
        print('backfill/lock race, %d rounds: %s' % (
            self.ROUNDS, ', '.join('%s %d' % item
                                   for item in sorted(totals.items()))))

    def _round(self, round_number):
        nodes = {}
        for i in range(self.NODES):
            extra = {}
            if i % 2:
                extra['instance_uuid'] = uuidutils.generate_uuid()
            node = self.deployed_node(
                name='race-%d-%d' % (round_number, i), **extra)
            nodes[node.uuid] = node
        done = {}         # node uuid -> the 201 body of its backfill
        answers = []      # (node uuid, status, body) of every backfill
        holds = []        # (node uuid, bound when locked, before release)
        patches = []      # status of every node PATCH
        errors = []       # unexpected exceptions in the threads
        guard = threading.Lock()
        stop = threading.Event()
        self.addCleanup(stop.set)

        def bound(node_id):
            node = self.node_row(node_id)
            return node.allocation_id, node.instance_uuid

        def backfiller():
            conn = http.client.HTTPConnection(
                '127.0.0.1', self.server.port, timeout=WAIT)
            deadline = time.monotonic() + WAIT
            try:
                while time.monotonic() < deadline:
                    with guard:
                        left = [u for u in nodes if u not in done]
                    if not left:
                        return
                    uuid = random.choice(left)
                    status, body = self.backfill(conn, uuid)
                    with guard:
                        answers.append((uuid, status, body))
                        if status == 201:
                            done.setdefault(uuid, body)
            except Exception as exc:
                with guard:
                    errors.append(repr(exc))
            finally:
                conn.close()

        def holder():
            try:
                while not stop.is_set():
                    node = random.choice(list(nodes.values()))
                    try:
                        with task.node_lock(self.context, node.id,
                                            HOST) as lock:
                            first = bound(node.id)
                            # A real change under the lock, counted.
                            lock.node.extra = dict(
                                lock.node.extra or {},
                                holds=(lock.node.extra or {}).get(
                                    'holds', 0) + 1)
                            lock.node.save()
                            time.sleep(0.001)
                            last = bound(node.id)
                    except exception.NodeLocked:
                        continue
                    with guard:
                        holds.append((node.uuid, first, last))
            except Exception as exc:
                with guard:
                    errors.append(repr(exc))

        def patcher():
            conn = http.client.HTTPConnection(
                '127.0.0.1', self.server.port, timeout=WAIT)
            try:
                while not stop.is_set():
                    uuid = random.choice(list(nodes))
                    status, body = self.request(
                        conn, 'PATCH', '/v1/nodes/%s' % uuid,
                        [{'op': 'replace', 'path': '/description',
                          'value': uuidutils.generate_uuid()}])
                    with guard:
                        patches.append(status)
                    if status == 409:
                        self.assertIn('is locked by host',
                                      self.fault(body)['faultstring'])
            except Exception as exc:
                with guard:
                    errors.append(repr(exc))
            finally:
                conn.close()

        lockers = ([threading.Thread(target=holder)
                    for _ in range(self.HOLDERS)]
                   + [threading.Thread(target=patcher)
                      for _ in range(self.PATCHERS)])
        backfillers = [threading.Thread(target=backfiller)
                       for _ in range(self.BACKFILLERS)]
        for t in lockers + backfillers:
            t.start()
        for t in backfillers:
            t.join(WAIT * 2)
        stop.set()
        for t in lockers:
            t.join(WAIT)
        self.assertFalse([t for t in lockers + backfillers if t.is_alive()],
                         'threads still running')
        self.assertEqual([], errors)

        # Never a backfill written while a lock was held.
        moved = [h for h in holds if h[1] != h[2]]
        self.assertEqual([], moved, 'node bound to an allocation while '
                         'a conductor held its lock')
        # Every node backfilled once; every refusal a clean 409.
        self.assertEqual(set(nodes), set(done), 'nodes never backfilled')
        by_status = {}
        for uuid, status, body in answers:
            by_status[status] = by_status.get(status, 0) + 1
            if status != 201:
                self.assertEqual(409, status, body)
                self.fault(body)
        self.assertEqual(self.NODES, by_status[201])
        self.assertEqual(set(), set(patches) - {200, 409}, patches)

        # The rows agree: one active allocation per node, bound both
        # ways, and nothing else written by the losers.
        self.backfilled |= {b['uuid'] for b in done.values()}
        self.assertEqual(sorted(self.backfilled), sorted(
            a.uuid for a in allocation_obj.Allocation.list(self.context)))
        for uuid, node in nodes.items():
            node = self.node_row(node.id)
            allocation = allocation_obj.Allocation.get_by_uuid(
                self.context, done[uuid]['uuid'])
            self.assertEqual(
                (states.ALLOCATION_ACTIVE, node.id, allocation.id,
                 allocation.uuid, None),
                (allocation.state, allocation.node_id, node.allocation_id,
                 node.instance_uuid, node.reservation))
            if nodes[uuid].instance_uuid:
                # A node deployed with an instance keeps it.
                self.assertEqual(nodes[uuid].instance_uuid, allocation.uuid)
            # Every change made under a lock is there.
            self.assertEqual(
                len([h for h in holds if h[0] == uuid]),
                (node.extra or {}).get('holds', 0))
        self.assertEqual([], utils.check_invariant())

        counts = {'holds': len(holds), 'patches': len(patches)}
        for uuid, status, body in answers:
            if status == 201:
                key = 'backfill 201'
            elif 'is locked by host' in self.fault(body)['faultstring']:
                key = 'backfill 409 locked'
            else:
                key = 'backfill 409 other'
            counts[key] = counts.get(key, 0) + 1
        counts['patch 409'] = patches.count(409)
        return counts


class TestBackfillRefusals(base.DbTestCase):
    """Why the guarded write refused a backfill, told by its error: the
    node changed after the API read it (the node object is stale)."""

    def setUp(self):
        super().setUp()
        self.node = utils.make_node(self.context,
                                    provision_state=states.ACTIVE,
                                    power_state=states.POWER_ON)

    def refusal(self, expected_class):
        allocation = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(),
            resource_class='gold', traits=[], candidate_nodes=[], extra={})
        error = self.assertRaises(expected_class, allocation.backfill,
                                  self.node, states.BACKFILL_STATES)
        # Rolled back with the refusal: the allocation row is gone.
        self.assertEqual([], allocation_obj.Allocation.list(self.context))
        self.assertEqual(409, error.code)
        # Named by UUID, never by the internal id.
        self.assertTrue(str(error).startswith('Node %s ' % self.node.uuid),
                        str(error))
        return str(error)

    def change_node(self, **values):
        db_api.get_instance().update_node(self.node.id, values)

    def test_locked(self):
        node_obj.Node.reserve(self.context, 'other-host', self.node.id)
        self.assertIn('is locked by host other-host',
                      self.refusal(exception.NodeLocked))

    def test_locked_and_changed(self):
        # The lock is the answer: once it is released, the checks made
        # before the write tell what else changed.
        node_obj.Node.reserve(self.context, 'other-host', self.node.id)
        self.change_node(provision_state=states.DEPLOYING,
                         instance_uuid=uuidutils.generate_uuid())
        self.refusal(exception.NodeLocked)

    def test_deleted(self):
        db_api.get_instance().destroy_node(self.node.id)
        self.assertIn('it was deleted', self.refusal(exception.NodeChanged))

    def test_no_longer_deployed(self):
        self.change_node(provision_state=states.AVAILABLE)
        self.assertIn('it is in provision state available',
                      self.refusal(exception.NodeChanged))

    def test_other_instance(self):
        instance = uuidutils.generate_uuid()
        self.change_node(instance_uuid=instance)
        self.assertIn('it got instance %s' % instance,
                      self.refusal(exception.NodeChanged))

    def test_other_allocation(self):
        first = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(),
            resource_class='gold', traits=[], candidate_nodes=[], extra={})
        first.backfill(self.node, states.BACKFILL_STATES)
        allocation = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(),
            resource_class='gold', traits=[], candidate_nodes=[], extra={})
        error = self.assertRaises(exception.NodeChanged, allocation.backfill,
                                  self.node, states.BACKFILL_STATES)
        self.assertIn('Node %s ' % self.node.uuid, str(error))
        self.assertIn('it got an allocation', str(error))
        self.assertEqual([first.uuid], [
            a.uuid for a in allocation_obj.Allocation.list(self.context)])
        self.assertEqual([], utils.check_invariant())
