"""Leases of holds with real in-process conductors sharing one database:
expiry by the database clock with three conductors, and the deploy
guard with the end of the lease at deploy.

SQLite by default, PostgreSQL and MariaDB in CI (IRONIC_ALLOC_TEST_DB),
where the three conductors' releases really run in parallel.
"""

import datetime
import threading
import time

import fixtures
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

dbapi = db_api.get_instance()

RELEASED = 'released (node'


def lease(seconds):
    """The end of a lease ``seconds`` from now by the database clock
    (negative: already ended)."""
    return dbapi.get_database_time() + datetime.timedelta(seconds=seconds)


def hold_node(context, node, kind=states.ALLOCATION_KIND, expires_at=None):
    """An active hold of ``kind`` on ``node`` whose lease ends at
    ``expires_at`` (None: never).

    A reservation is made by the reservations' own database function; an
    allocation is written as the API and the conductor write one: the
    row, then the node bound to it (its instance: the allocation's uuid).
    """
    if kind == states.RESERVATION_KIND:
        hold, _node_uuid = allocation_obj.Allocation.reserve(
            context, {'instance_uuid': uuidutils.generate_uuid()},
            [node.uuid], ttl=60)
        # NOTE: the lease is then set where the test needs it (in the
        # past, for expiry), as a renewal writes it.
        dbapi.update_allocation(hold.id, {'expires_at': expires_at})
        return allocation_obj.Allocation.get_by_id(context, hold.id)
    hold = allocation_obj.Allocation(
        context, uuid=uuidutils.generate_uuid(), resource_class='gold',
        state=states.ALLOCATION_ACTIVE, node_id=node.id, traits=[],
        candidate_nodes=[], extra={}, kind=kind, expires_at=expires_at)
    hold.create()
    dbapi.update_node(node.id, {'allocation_id': hold.id,
                                'instance_uuid': hold.uuid})
    return hold


def write_lease_unchecked(hold_id, end):
    """Write a lease as no API path may any more: whatever the state of
    the hold's node (a lease left on a deployed node by an earlier
    release, or by a node moved without a deploy)."""
    with sqla_api.get_engine().begin() as conn:
        conn.execute(models.Allocation.__table__.update().where(
            models.Allocation.__table__.c.id == hold_id).values(
                expires_at=end))


def holds_and_nodes():
    with sqla_api._session_for_read() as session:
        holds = {a.uuid: a for a in session.query(models.Allocation)}
        nodes = {n.id: n for n in session.query(models.Node)}
    return holds, nodes


def disagreements():
    """Node and hold rows that do not point at each other (both kinds:
    a reservation's node has the reservation's instance)."""
    holds, nodes = holds_and_nodes()
    by_id = {h.id: h for h in holds.values()}
    problems = []
    for hold in holds.values():
        if hold.node_id is None:
            continue
        node = nodes.get(hold.node_id)
        bound = (hold.instance_uuid if hold.kind == states.RESERVATION_KIND
                 else hold.uuid)
        if node is None or node.allocation_id != hold.id or (
                node.instance_uuid != bound):
            problems.append('hold %s is not its node\'s' % hold.uuid)
    for node in nodes.values():
        if node.allocation_id is not None and (
                node.allocation_id not in by_id):
            problems.append('node %s points to a missing hold' % node.uuid)
        if node.allocation_id is None and node.instance_uuid is not None:
            problems.append('node %s keeps instance %s without a hold'
                            % (node.uuid, node.instance_uuid))
    return problems


class LeaseTestCase(base.DbTestCase):

    conductors = 1

    def setUp(self):
        super().setUp()
        # NOTE: the shortest interval, so that the periodic task of every
        # conductor runs while a test waits.
        CONF.set_override('expiry_interval', 1, group='reservation')
        self.addCleanup(CONF.clear_override, 'expiry_interval',
                        group='reservation')
        self.log = self.useFixture(fixtures.FakeLogger(
            name='ironic_alloc.conductor.leases', level='INFO'))
        self.conductor_fixtures = [
            self.useFixture(ia_fixtures.ConductorFixture(host='lease-%d' % i))
            for i in range(self.conductors)]
        if self.conductor_fixtures:
            self.conductor = self.conductor_fixtures[0]
            self.rpcapi = self.conductor.rpcapi

    def released_lines(self, uuid):
        return [line for line in self.log.output.splitlines()
                if uuid in line and RELEASED in line]

    def wait_gone(self, uuids, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            holds, _nodes = holds_and_nodes()
            left = [u for u in uuids if u in holds]
            if not left:
                return
            if time.monotonic() > deadline:
                raise AssertionError('holds still there after %ss: %s'
                                     % (timeout, left))
            time.sleep(0.1)


class TestExpiryWithThreeConductors(LeaseTestCase):

    conductors = 3

    def test_each_expired_hold_released_once(self):
        ended = lease(-5)
        expired = []
        for index in range(12):
            node = utils.make_available_node(self.context)
            kind = (states.RESERVATION_KIND if index % 2
                    else states.ALLOCATION_KIND)
            expired.append(hold_node(self.context, node, kind, ended))
        # An allocation that failed holds no node; its lease ends too.
        failed = utils.make_allocation(
            self.context, None, state=states.ALLOCATION_ERROR,
            expires_at=ended)
        expired.append(failed)
        kept_nodes = [utils.make_available_node(self.context)
                      for _ in range(3)]
        kept = [hold_node(self.context, kept_nodes[0], expires_at=lease(600)),
                hold_node(self.context, kept_nodes[1],
                          states.RESERVATION_KIND, lease(600)),
                hold_node(self.context, kept_nodes[2])]

        # NOTE: besides the periodic tasks, every conductor runs a pass
        # at the same moment, so that passes really compete.
        start = threading.Barrier(self.conductors)
        counts = []

        def run(fixture):
            start.wait()
            counts.append(fixture.service.lease_expiry.release_expired())

        threads = [threading.Thread(target=run, args=(f,))
                   for f in self.conductor_fixtures]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.wait_gone([h.uuid for h in expired])

        for hold in expired:
            lines = self.released_lines(hold.uuid)
            self.assertEqual(1, len(lines), lines)
            self.assertIn(str(ended.replace(microsecond=0))[:16], lines[0])
        self.assertLessEqual(sum(counts), len(expired))
        holds, nodes = holds_and_nodes()
        self.assertEqual(sorted(h.uuid for h in kept), sorted(holds))
        for node in nodes.values():
            if node.id in {n.id for n in kept_nodes}:
                continue
            self.assertIsNone(node.allocation_id)
            self.assertIsNone(node.instance_uuid)
        self.assertEqual([], disagreements())


class TestExpiryWithoutTakeOver(LeaseTestCase):

    conductors = 0

    def test_take_over_settings_do_not_disable_expiry(self):
        self.useFixture(ia_fixtures.ConductorFixture(
            host='no-take-over', check_allocations_interval=0,
            sync_local_state_interval=0, allocation_redrive_interval=3600))
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, states.RESERVATION_KIND,
                         lease(-5))
        # Only the periodic task can release it here.
        self.wait_gone([hold.uuid])
        self.assertEqual(1, len(self.released_lines(hold.uuid)))
        self.assertEqual([], disagreements())


class TestExpiry(LeaseTestCase):

    def setUp(self):
        super().setUp()
        # NOTE: these tests release expired holds themselves and count
        # what one pass released: the conductor's own periodic pass (every
        # second) would race them for the same holds.
        self.conductor.service.periodic_tasks.stop()

    def release_now(self):
        return self.conductor.service.lease_expiry.release_expired()

    def test_deployed_node_is_never_pulled(self):
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, states.RESERVATION_KIND,
                         lease(-5))
        # NOTE: moved to active without a deploy (which would have
        # cleared the lease), as an adoption does.
        dbapi.update_node(node.id, {'provision_state': states.ACTIVE})
        self.assertEqual([hold.id], dbapi.get_expired_holds(10))
        self.assertEqual(0, self.release_now())
        # Its ended lease was removed instead: never found again, and
        # nothing left to fire once the node is free to lose it.
        kept = allocation_obj.Allocation.get_by_id(self.context, hold.id)
        self.assertEqual((node.id, None), (kept.node_id, kept.expires_at))
        self.assertEqual([], dbapi.get_expired_holds(10))
        self.assertIsNone(dbapi.release_expired_hold(hold.id))
        self.assertIn('lease was removed', self.log.output)
        self.assertEqual([], self.released_lines(hold.uuid))
        self.assertEqual([], disagreements())

    def test_deployed_node_in_maintenance_is_never_pulled(self):
        # NOTE: the data loss of issue 38: a reservation's lease re-armed
        # after the deploy, the node then put into maintenance, the lease
        # ending.  Unlike DELETE, maintenance makes no exception.
        for kind in (states.RESERVATION_KIND, states.ALLOCATION_KIND):
            node = utils.make_available_node(self.context)
            hold = hold_node(self.context, node, kind)
            info = {'reservation_uuid': hold.uuid, 'image_source': 'x'}
            dbapi.update_node(node.id, {'provision_state': states.ACTIVE,
                                        'instance_info': info})
            self.assertRaises(exception.LeaseOnDeployedNode,
                              dbapi.update_allocation, hold.id,
                              {'expires_at': lease(600)})
            write_lease_unchecked(hold.id, lease(-5))
            dbapi.update_node(node.id, {'maintenance': True})
            self.assertEqual(0, self.release_now())
            node.refresh()
            bound = (hold.instance_uuid if kind == states.RESERVATION_KIND
                     else hold.uuid)
            self.assertEqual((hold.id, bound, info),
                             (node.allocation_id, node.instance_uuid,
                              node.instance_info))
            self.assertIsNone(allocation_obj.Allocation.get_by_id(
                self.context, hold.id).expires_at)
        self.assertEqual([], disagreements())

    def test_node_in_maintenance_is_released(self):
        # NOTE: maintenance does not keep a node that is not deployed.
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, expires_at=lease(-5))
        dbapi.update_node(node.id, {'maintenance': True})
        self.assertEqual(1, self.release_now())
        self.assertRaises(exception.AllocationNotFound,
                          allocation_obj.Allocation.get_by_id,
                          self.context, hold.id)
        self.assertEqual([], disagreements())

    def test_node_locked_by_a_conductor_waits(self):
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, expires_at=lease(-5))
        dbapi.reserve_node('another-conductor', node.id)
        self.assertEqual(0, self.release_now())
        dbapi.release_node('another-conductor', node.id)
        self.assertEqual(1, self.release_now())
        self.assertEqual(1, len(self.released_lines(hold.uuid)))

    def test_renewed_lease_is_kept(self):
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, expires_at=lease(-5))
        self.assertEqual([hold.id], dbapi.get_expired_holds(10))
        # Renewed between the search and the release: the guarded DELETE
        # keeps it.
        dbapi.update_allocation(hold.id, {'expires_at': lease(600)})
        self.assertIsNone(dbapi.release_expired_hold(hold.id))
        dbapi.update_allocation(hold.id, {'expires_at': None})
        self.assertEqual(0, self.release_now())
        self.assertEqual([], disagreements())

    def test_client_instance_stays(self):
        # NOTE: a node whose instance a client set after the reservation
        # (not the reservation's) keeps it, as after DELETE.
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, states.RESERVATION_KIND,
                         lease(-5))
        other = uuidutils.generate_uuid()
        dbapi.update_node(node.id, {'instance_uuid': other})
        self.assertEqual(1, self.release_now())
        node.refresh()
        self.assertIsNone(node.allocation_id)
        self.assertEqual(other, node.instance_uuid)
        self.assertTrue(self.released_lines(hold.uuid))


class TestDeployGuard(LeaseTestCase):

    def deploy(self, node):
        self.rpcapi.do_provisioning_action(self.context, node.id, 'deploy',
                                           self.conductor.host)
        return self.wait_state(node, states.ACTIVE)

    def wait_state(self, node, state, timeout=30):
        deadline = time.monotonic() + timeout
        while True:
            node.refresh()
            if node.provision_state == state and node.reservation is None:
                return node
            if time.monotonic() > deadline:
                raise AssertionError('node %s in %s, not %s' % (
                    node.uuid, node.provision_state, state))
            time.sleep(0.05)

    def test_reserved_node_needs_its_reservation(self):
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, states.RESERVATION_KIND,
                         lease(600))
        exc = self.assertRaises(
            exception.ReservationRequired, self.rpcapi.do_provisioning_action,
            self.context, node.id, 'deploy', self.conductor.host)
        self.assertIn(hold.uuid, str(exc))
        self.assertIn('it has none', str(exc))
        wrong = uuidutils.generate_uuid()
        dbapi.update_node(node.id, {'instance_info': {
            'reservation_uuid': wrong}})
        exc = self.assertRaises(
            exception.ReservationRequired, self.rpcapi.do_provisioning_action,
            self.context, node.id, 'deploy', self.conductor.host)
        self.assertIn(hold.uuid, str(exc))
        self.assertIn(wrong, str(exc))
        node.refresh()
        self.assertEqual(states.AVAILABLE, node.provision_state)
        self.assertIsNone(node.reservation)
        self.assertIsNotNone(allocation_obj.Allocation.get_by_id(
            self.context, hold.id).expires_at)

        dbapi.update_node(node.id, {'instance_info': {
            'reservation_uuid': hold.uuid, 'image_source': 'x'}})
        self.deploy(node)
        held = allocation_obj.Allocation.get_by_id(self.context, hold.id)
        self.assertIsNone(held.expires_at)
        self.assertEqual(hold.instance_uuid, node.instance_uuid)

        # Tear-down ends the reservation and frees the node.
        self.rpcapi.do_provisioning_action(self.context, node.id,
                                           'undeploy', self.conductor.host)
        self.wait_state(node, states.AVAILABLE)
        self.assertRaises(exception.AllocationNotFound,
                          allocation_obj.Allocation.get_by_id,
                          self.context, hold.id)
        self.assertIsNone(node.allocation_id)
        self.assertIsNone(node.instance_uuid)
        self.assertEqual({}, node.instance_info)
        self.assertEqual([], disagreements())

    def test_allocation_flow_unchanged_and_lease_ends_at_deploy(self):
        node = utils.make_available_node(self.context)
        hold = hold_node(self.context, node, expires_at=lease(600))
        self.deploy(node)
        self.assertIsNone(allocation_obj.Allocation.get_by_id(
            self.context, hold.id).expires_at)
        # A deployed node's hold takes no lease, and one left on it
        # (written before this rule) never releases it.
        self.assertRaises(exception.LeaseOnDeployedNode,
                          dbapi.update_allocation, hold.id,
                          {'expires_at': lease(600)})
        write_lease_unchecked(hold.id, lease(-5))
        self.assertEqual(
            0, self.conductor.service.lease_expiry.release_expired())
        self.assertIsNone(allocation_obj.Allocation.get_by_id(
            self.context, hold.id).expires_at)
        self.rpcapi.do_provisioning_action(self.context, node.id,
                                           'undeploy', self.conductor.host)
        self.wait_state(node, states.AVAILABLE)
        self.assertRaises(exception.AllocationNotFound,
                          allocation_obj.Allocation.get_by_id,
                          self.context, hold.id)

    def test_free_node_deploys_without_reservation(self):
        node = utils.make_available_node(self.context)
        self.deploy(node)

    def test_named_reservation_must_hold_the_node(self):
        node = utils.make_available_node(self.context)
        gone = uuidutils.generate_uuid()
        dbapi.update_node(node.id, {'instance_info': {
            'reservation_uuid': gone}})
        exc = self.assertRaises(
            exception.ReservationNotHolding,
            self.rpcapi.do_provisioning_action, self.context, node.id,
            'deploy', self.conductor.host)
        self.assertIn(gone, str(exc))
        self.assertIn('not held', str(exc))
        hold = hold_node(self.context, node)
        exc = self.assertRaises(
            exception.ReservationNotHolding,
            self.rpcapi.do_provisioning_action, self.context, node.id,
            'deploy', self.conductor.host)
        self.assertIn('held by allocation %s' % hold.uuid, str(exc))
        node.refresh()
        self.assertEqual(states.AVAILABLE, node.provision_state)
