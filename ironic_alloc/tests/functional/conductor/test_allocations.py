"""Allocations processed by real in-process conductors sharing one DB.

The database is SQLite by default and PostgreSQL/MariaDB in CI
(IRONIC_ALLOC_TEST_DB): the races below are meant for the latter, where
writers really run in parallel.
"""

import datetime
import random
import threading
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor.backends import database as database_backend
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

dbapi = db_api.get_instance()


def _age_heartbeat(conductor_id, seconds):
    """Make a conductor look dead: its heartbeat is ``seconds`` old."""
    old = dbapi.get_database_time() - datetime.timedelta(seconds=seconds)
    with sqla_api._session_for_write() as session:
        session.execute(sa.update(models.Conductor).where(
            models.Conductor.id == conductor_id).values(heartbeat_at=old))


class AllocationTestCase(base.DbTestCase):

    conductor_opts = {}

    def setUp(self):
        super().setUp()
        self.conductor = self.useFixture(
            ia_fixtures.ConductorFixture(**self.conductor_opts))
        self.rpcapi = self.conductor.rpcapi
        self.me = self.conductor.service.conductor.id

    def allocate(self, **kw):
        allocation = utils.make_allocation(self.context, self.me, **kw)
        self.rpcapi.create_allocation(self.context, allocation.id,
                                      self.conductor.host)
        return utils.wait_for_allocations(self.context,
                                          [allocation.id])[allocation.id]

    def assertInvariant(self):
        self.assertEqual([], utils.check_invariant())


class TestNodePicking(AllocationTestCase):

    def test_reserves_node_with_all_traits(self):
        utils.make_available_node(self.context, traits=['CUSTOM_A'])
        node = utils.make_available_node(
            self.context, traits=['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'],
            instance_info={'image_source': 'http://x/y.img'})
        allocation = self.allocate(traits=['CUSTOM_B', 'CUSTOM_A'])
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        self.assertEqual(node.id, allocation.node_id)
        node.refresh()
        self.assertEqual(allocation.id, node.allocation_id)
        self.assertEqual(allocation.uuid, node.instance_uuid)
        self.assertEqual({'image_source': 'http://x/y.img',
                          'traits': ['CUSTOM_A', 'CUSTOM_B']},
                         node.instance_info)
        self.assertInvariant()

    def test_skips_unusable_nodes(self):
        utils.make_available_node(self.context, maintenance=True)
        utils.make_available_node(self.context, power_state=None)
        utils.make_available_node(
            self.context, instance_uuid=uuidutils.generate_uuid())
        utils.make_node(self.context, provision_state=states.MANAGEABLE,
                        power_state=states.POWER_OFF)
        utils.make_available_node(self.context, resource_class='silver')
        good = utils.make_available_node(self.context)
        self.assertEqual(good.id, self.allocate().node_id)

    def test_name_first(self):
        for i in range(5):
            utils.make_available_node(self.context, name='node-%d' % i)
        named = node_obj.Node.get_by_name(self.context, 'node-3')
        allocation = self.allocate(name='node-3')
        self.assertEqual(named.id, allocation.node_id)

    def _checkouts_of_do_allocate(self, **kw):
        """Run do_allocate in this thread for a new allocation of a
        conductor no running service owns, counting this thread's
        connection check-outs (one per transaction)."""
        owner = dbapi.register_conductor('counting-host', '').id
        allocation = utils.make_allocation(self.context, owner, **kw)
        engine = sqla_api.get_engine()
        me = threading.get_ident()
        checkouts = []

        def count(dbapi_connection, record, proxy):
            if threading.get_ident() == me:
                checkouts.append(record)

        sa.event.listen(engine, 'checkout', count)
        try:
            node_id = allocations.do_allocate(
                self.context, allocation.id, owner,
                database_backend.DatabaseBackend())
        finally:
            sa.event.remove(engine, 'checkout', count)
        return node_id, len(checkouts)

    def test_one_read_transaction_then_the_reservation(self):
        # The allocation and its first candidates are read in one
        # transaction, the node is reserved in a second.
        node = utils.make_available_node(self.context)
        self.assertEqual((node.id, 2), self._checkouts_of_do_allocate())

    def test_named_node_read_with_the_allocation(self):
        utils.make_available_node(self.context)
        named = utils.make_available_node(self.context, name='node-n')
        self.assertEqual((named.id, 2),
                         self._checkouts_of_do_allocate(name='node-n'))

    def test_candidate_nodes_and_owner(self):
        mine = utils.make_available_node(self.context, owner='p1')
        leased = utils.make_available_node(self.context, lessee='p1')
        utils.make_available_node(self.context, owner='p2')
        a1 = self.allocate(owner='p1', candidate_nodes=[leased.uuid])
        self.assertEqual(leased.id, a1.node_id)
        a2 = self.allocate(owner='p1')
        self.assertEqual(mine.id, a2.node_id)
        a3 = self.allocate(owner='p1')
        self.assertEqual(states.ALLOCATION_ERROR, a3.state)
        # NOTE: p1's own nodes explain it, never p2's free one.
        self.assertIn('no node of resource class "gold" is available',
                      a3.last_error)

    def test_error_names_the_constraint(self):
        node = utils.make_available_node(self.context, traits=['CUSTOM_A'])
        other = utils.make_available_node(self.context,
                                          resource_class='silver')
        cases = [
            (dict(resource_class='bronze'), 'no node has resource class '
             '"bronze"'),
            (dict(resource_class='silver', candidate_nodes=[node.uuid]),
             'none of the candidate nodes'),
            (dict(traits=['CUSTOM_B']), "all the traits ['CUSTOM_B']"),
            (dict(owner='nobody'), 'owned or leased by "nobody"'),
        ]
        for kw, message in cases:
            allocation = self.allocate(**kw)
            self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
            self.assertIn(message, allocation.last_error)
            self.assertIsNone(allocation.node_id)
        node_obj.Node.get_by_id(self.context, other.id)  # untouched
        self.allocate(resource_class='silver')
        allocation = self.allocate(resource_class='silver')
        self.assertIn('is available', allocation.last_error)
        self.assertInvariant()


class TestDeallocation(AllocationTestCase):

    def _active(self, **node_kw):
        node = utils.make_available_node(self.context, **node_kw)
        allocation = self.allocate()
        self.assertEqual(node.id, allocation.node_id)
        node.refresh()
        return node, allocation

    def test_destroy_frees_node(self):
        node, allocation = self._active(instance_info={'traits': ['X'],
                                                       'a': 1})
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        node.refresh()
        self.assertIsNone(node.allocation_id)
        self.assertIsNone(node.instance_uuid)
        self.assertEqual({'a': 1}, node.instance_info)
        self.assertRaises(exception.AllocationNotFound,
                          allocation_obj.Allocation.get_by_id,
                          self.context, allocation.id)

    def test_destroy_refused_on_deployed_node(self):
        node, allocation = self._active()
        node.provision_state = states.ACTIVE
        node.save()
        exc = self.assertRaises(exception.InvalidState,
                                self.rpcapi.destroy_allocation, self.context,
                                allocation.id, self.conductor.host)
        self.assertEqual(409, exc.code)
        self.assertIn('provision state "active"', str(exc))
        node.maintenance = True
        node.save()
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        self.assertInvariant()

    def test_removing_instance_uuid_deletes_allocation(self):
        node, allocation = self._active()
        node.instance_uuid = None
        node = self.rpcapi.update_node(self.context, node,
                                       self.conductor.host)
        self.assertIsNone(node.allocation_id)
        self.assertRaises(exception.AllocationNotFound,
                          allocation_obj.Allocation.get_by_id,
                          self.context, allocation.id)

    def test_removing_instance_uuid_of_deployed_node_refused(self):
        node, allocation = self._active()
        node.provision_state = states.ACTIVE
        node.save()
        node.instance_uuid = None
        self.assertRaises(exception.InvalidState, self.rpcapi.update_node,
                          self.context, node, self.conductor.host)
        self.assertInvariant()

    def test_setting_instance_uuid_creates_no_allocation(self):
        node = utils.make_available_node(self.context)
        node.instance_uuid = uuidutils.generate_uuid()
        node = self.rpcapi.update_node(self.context, node,
                                       self.conductor.host)
        self.assertIsNone(node.allocation_id)
        self.assertEqual([], allocation_obj.Allocation.list(self.context))

    def test_node_deleted_in_maintenance_takes_allocation(self):
        node, allocation = self._active()
        node.maintenance = True
        node.save()
        self.rpcapi.destroy_node(self.context, node.id, self.conductor.host)
        self.assertEqual([], allocation_obj.Allocation.list(self.context))

    def _wait_idle(self, node):
        for _ in range(500):
            node.refresh()
            if node.reservation is None and not node.target_provision_state:
                return node
            time.sleep(0.02)
        self.fail('node never finished its action')

    def test_undeploy_deletes_rebuild_keeps(self):
        node, allocation = self._active()
        host = self.conductor.host
        self.rpcapi.do_provisioning_action(self.context, node.id, 'deploy',
                                           host)
        node = self._wait_idle(node)
        self.assertEqual(states.ACTIVE, node.provision_state)
        self.rpcapi.do_provisioning_action(self.context, node.id, 'rebuild',
                                           host)
        node = self._wait_idle(node)
        self.assertEqual(allocation.id, node.allocation_id)
        self.rpcapi.do_provisioning_action(self.context, node.id,
                                           'undeploy', host)
        node = self._wait_idle(node)
        self.assertEqual(states.AVAILABLE, node.provision_state)
        self.assertIsNone(node.allocation_id)
        self.assertIsNone(node.instance_uuid)
        self.assertEqual([], allocation_obj.Allocation.list(self.context))

    def test_backfill(self):
        node = utils.make_node(self.context, provision_state=states.ACTIVE,
                               power_state=states.POWER_ON)
        allocation = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(),
            resource_class='gold', traits=[], candidate_nodes=[], extra={})
        allocation.backfill(node, states.BACKFILL_STATES)
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        node.refresh()
        self.assertEqual(allocation.id, node.allocation_id)
        self.assertEqual(allocation.uuid, node.instance_uuid)
        again = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(), traits=[],
            candidate_nodes=[], extra={})
        self.assertRaises(exception.NodeChanged, again.backfill, node,
                          states.BACKFILL_STATES)
        self.assertInvariant()


class TestWaitedCreation(AllocationTestCase):
    """create_allocation as a call (RPC 1.2, [api]allocation_create_wait):
    the answer comes when the row holds the end state."""

    def _create_and_wait(self, **kw):
        allocation = utils.make_allocation(self.context, self.me, **kw)
        done = self.rpcapi.create_allocation(
            self.context, allocation.id, self.conductor.host, wait=30)
        return done, allocation_obj.Allocation.get_by_id(self.context,
                                                         allocation.id)

    def test_answer_after_reservation(self):
        node = utils.make_available_node(self.context)
        done, allocation = self._create_and_wait()
        self.assertTrue(done)
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        self.assertEqual(node.id, allocation.node_id)
        self.assertInvariant()

    def test_answer_after_failure(self):
        done, allocation = self._create_and_wait(resource_class='none')
        self.assertTrue(done)
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.assertIn('No candidate node', allocation.last_error)

    def test_work_already_done(self):
        utils.make_available_node(self.context)
        done, first = self._create_and_wait()
        # A second message for the same allocation (a re-sent call) finds
        # nothing left to do and answers at once.
        self.assertTrue(self.rpcapi.create_allocation(
            self.context, first.id, self.conductor.host, wait=30))
        again = allocation_obj.Allocation.get_by_id(self.context, first.id)
        self.assertEqual((first.state, first.node_id),
                         (again.state, again.node_id))


class TestRedrive(AllocationTestCase):

    conductor_opts = {'allocation_redrive_interval': 1}

    def test_lost_cast(self):
        node = utils.make_available_node(self.context)
        # NOTE: no cast at all: the row alone must be enough.
        allocation = utils.make_allocation(self.context, self.me)
        result = utils.wait_for_allocations(self.context, [allocation.id],
                                            timeout=15)[allocation.id]
        self.assertEqual(states.ALLOCATION_ACTIVE, result.state)
        self.assertEqual(node.id, result.node_id)

    def test_restart_resumes_previous_run(self):
        utils.make_available_node(self.context)
        previous = conductor_obj.Conductor.register(self.context,
                                                    'restarted-host', '')
        allocation = utils.make_allocation(self.context, previous.id)
        restarted = self.useFixture(ia_fixtures.ConductorFixture(
            host='restarted-host'))
        new_id = restarted.service.conductor.id
        self.assertNotEqual(previous.id, new_id)
        result = utils.wait_for_allocations(self.context, [allocation.id],
                                            timeout=15)[allocation.id]
        self.assertEqual(states.ALLOCATION_ACTIVE, result.state)
        self.assertEqual(new_id, result.conductor_affinity)
        # The old process of that host is stale: its writes are refused.
        self.assertFalse(dbapi.fail_allocation(allocation.id, previous.id,
                                               'late'))
        self.assertFalse(previous.touch())


class TestTakeOver(AllocationTestCase):

    conductor_opts = {'heartbeat_interval': 1, 'heartbeat_timeout': 3,
                      'check_allocations_interval': 1}

    def test_take_over_from_dead_conductor(self):
        for _ in range(5):
            utils.make_available_node(self.context)
        dead = conductor_obj.Conductor.register(self.context, 'dead-host',
                                                '')
        ids = [utils.make_allocation(self.context, dead.id).id
               for _ in range(5)]
        _age_heartbeat(dead.id, 3600)
        results = utils.wait_for_allocations(self.context, ids, timeout=20)
        for allocation in results.values():
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
            self.assertEqual(self.me, allocation.conductor_affinity)
        node_ids = [a.node_id for a in results.values()]
        self.assertEqual(len(set(node_ids)), len(node_ids))
        # A late write of the dead conductor is refused.
        self.assertRaises(exception.AllocationLost,
                          dbapi.reserve_node_for_allocation, ids[0], dead.id,
                          node_ids[0], allocations.criteria_of(
                              results[ids[0]]))
        self.assertFalse(dbapi.take_over_allocation(ids[0], dead.id,
                                                    dead.id))
        self.assertInvariant()

    def test_live_conductor_keeps_its_allocations(self):
        utils.make_available_node(self.context)
        alive = self.useFixture(ia_fixtures.ConductorFixture(
            host='busy-host', allocation_redrive_interval=3600))
        allocation = utils.make_allocation(self.context,
                                           alive.service.conductor.id)
        time.sleep(2.5)  # two take-over passes of our conductor
        current = allocation_obj.Allocation.get_by_id(self.context,
                                                      allocation.id)
        self.assertEqual(alive.service.conductor.id,
                         current.conductor_affinity)


class TestHandBack(AllocationTestCase):

    def test_clean_stop_hands_allocations_to_peer(self):
        for _ in range(3):
            utils.make_available_node(self.context)
        leaving = utils.start_leaving_conductor()
        leaving_id = leaving.service.conductor.id
        ids = [utils.make_allocation(self.context, leaving_id).id
               for _ in range(3)]
        leaving.cleanUp()  # graceful stop: hand back to us
        results = utils.wait_for_allocations(self.context, ids, timeout=15)
        for allocation in results.values():
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
            self.assertEqual(self.me, allocation.conductor_affinity)


class TestRecentlyAliveConductors(AllocationTestCase):
    """The API's pick of a conductor for a new allocation may reuse a
    recent list of live conductors; a pick gone meanwhile is taken over."""

    # NOTE: no heartbeat of its own during a test, so that a conductor
    # made to look dead stays so until the test touches it again.
    conductor_opts = {'heartbeat_interval': 3600, 'heartbeat_timeout': 30,
                      'check_allocations_interval': 1}

    def _picks(self, rpcapi, recent, count=40):
        return {rpcapi.get_random_conductor(self.context,
                                            recent=recent).hostname
                for _ in range(count)}

    def test_recent_list_reused_until_it_expires(self):
        rpcapi = self.rpcapi.__class__()
        rpcapi.recently_alive_seconds = 3600
        self.assertEqual({self.conductor.host}, self._picks(rpcapi, True))
        conductor_obj.Conductor.register(self.context, 'new-host', '')
        self.assertEqual({self.conductor.host}, self._picks(rpcapi, True))
        # Without ``recent`` the table is read: 40 random picks out of
        # two miss one of them with a probability of 2**-39.
        self.assertEqual({self.conductor.host, 'new-host'},
                         self._picks(rpcapi, False))
        rpcapi.recently_alive_seconds = 0
        self.assertEqual({self.conductor.host, 'new-host'},
                         self._picks(rpcapi, True))

    def test_no_live_conductor_is_not_remembered(self):
        rpcapi = self.rpcapi.__class__()
        rpcapi.recently_alive_seconds = 3600
        _age_heartbeat(self.me, 3600)
        self.assertRaises(exception.NoValidHost,
                          rpcapi.get_random_conductor, self.context,
                          recent=True)
        self.assertTrue(self.conductor.service.conductor.touch())
        self.assertEqual({self.conductor.host}, self._picks(rpcapi, True))

    def test_pick_gone_since_is_taken_over(self):
        node = utils.make_available_node(self.context)
        gone = conductor_obj.Conductor.register(self.context, 'gone-host',
                                                '')
        rpcapi = self.rpcapi.__class__()
        rpcapi.recently_alive_seconds = 3600
        # Remember a list in which gone-host is the only live conductor.
        _age_heartbeat(self.me, 3600)
        picked = rpcapi.get_random_conductor(self.context, recent=True)
        self.assertEqual('gone-host', picked.hostname)
        self.assertTrue(self.conductor.service.conductor.touch())
        _age_heartbeat(gone.id, 3600)
        self.assertEqual('gone-host', rpcapi.get_random_conductor(
            self.context, recent=True).hostname)
        allocation = utils.make_allocation(self.context, picked.id)
        result = utils.wait_for_allocations(self.context, [allocation.id],
                                            timeout=20)[allocation.id]
        self.assertEqual(states.ALLOCATION_ACTIVE, result.state)
        self.assertEqual(self.me, result.conductor_affinity)
        self.assertEqual(node.id, result.node_id)


class TestRaces(base.DbTestCase):
    """Several conductors, many clients, fewer nodes than requests, and
    concurrent changes to the nodes and allocations involved."""

    def setUp(self):
        super().setUp()
        self.conductors = [
            self.useFixture(ia_fixtures.ConductorFixture(
                host='race-%d' % i, allocation_redrive_interval=2))
            for i in range(3)]
        self.rpcapi = self.conductors[0].rpcapi

    def _create_all(self, count, threads=8, **kw):
        ids = []
        lock = threading.Lock()

        def client(n):
            for _ in range(n):
                conductor = random.choice(self.conductors)
                allocation = utils.make_allocation(
                    self.context, conductor.service.conductor.id, **kw)
                self.rpcapi.create_allocation(self.context, allocation.id,
                                              conductor.host)
                with lock:
                    ids.append(allocation.id)

        workers = [threading.Thread(target=client, args=(count // threads,))
                   for _ in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        return ids

    def test_more_requests_than_nodes(self):
        nodes = 40
        for i in range(nodes):
            utils.make_available_node(
                self.context, traits=['CUSTOM_RACE'] if i % 2 else [])
        ids = self._create_all(160)
        results = utils.wait_for_allocations(self.context, ids, timeout=120)
        active = [a for a in results.values()
                  if a.state == states.ALLOCATION_ACTIVE]
        errors = [a for a in results.values()
                  if a.state == states.ALLOCATION_ERROR]
        print('race: %d requests, %d nodes -> %d active, %d error'
              % (len(ids), nodes, len(active), len(errors)))
        self.assertEqual(nodes, len(active))
        self.assertEqual(len(ids) - nodes, len(errors))
        self.assertEqual(nodes, len({a.node_id for a in active}))
        self.assertEqual([], utils.check_invariant())

    def test_concurrent_changes(self):
        nodes = [utils.make_available_node(self.context) for _ in range(30)]
        stop = threading.Event()
        counts = {'maintenance': 0, 'instance': 0, 'deleted_alloc': 0,
                  'deleted_node': 0, 'manage': 0}
        host = self.conductors[0].host

        def meddle(seed):
            rng = random.Random(seed)
            while not stop.is_set():
                node = rng.choice(nodes)
                choice = rng.randrange(5)
                try:
                    current = node_obj.Node.get_by_id(self.context, node.id)
                    if choice == 0:
                        current.maintenance = not current.maintenance
                        self.rpcapi.update_node(self.context, current, host)
                        counts['maintenance'] += 1
                    elif choice == 1:
                        # NOTE: set an instance on a free node, remove it
                        # from a taken one (which deletes its allocation):
                        # once the allocations are done every node left is
                        # taken, and a set-only change could never happen.
                        current.instance_uuid = (
                            None if current.instance_uuid
                            else uuidutils.generate_uuid())
                        self.rpcapi.update_node(self.context, current, host)
                        counts['instance'] += 1
                    elif choice == 2:
                        allocs = allocation_obj.Allocation.list(
                            self.context,
                            filters={'state': states.ALLOCATING}, limit=5)
                        if allocs:
                            self.rpcapi.destroy_allocation(
                                self.context, rng.choice(allocs).id, host)
                            counts['deleted_alloc'] += 1
                    elif (choice == 3 and current.maintenance
                          and counts['deleted_node'] < len(nodes) // 2):
                        # NOTE: half the nodes at most, so that the other
                        # changes still find nodes to change.
                        self.rpcapi.destroy_node(self.context, current.id,
                                                 host)
                        counts['deleted_node'] += 1
                    elif choice == 4 and not current.maintenance:
                        self.rpcapi.do_provisioning_action(
                            self.context, current.id, 'manage', host)
                        counts['manage'] += 1
                except (exception.NotFound, exception.Conflict,
                        exception.Invalid):
                    pass
                time.sleep(0.002)

        meddlers = [threading.Thread(target=meddle, args=(seed,))
                    for seed in range(2)]
        for m in meddlers:
            m.start()
        try:
            ids = self._create_all(120)
            results = utils.wait_for_allocations(self.context, ids,
                                                 timeout=120)
            # Let every kind of change happen at least once.
            deadline = time.monotonic() + 30
            while (not all(counts.values())
                   and time.monotonic() < deadline):
                time.sleep(0.05)
        finally:
            stop.set()
            for m in meddlers:
                m.join()
        states_seen = {}
        for allocation in results.values():
            key = allocation.state if allocation else 'deleted'
            states_seen[key] = states_seen.get(key, 0) + 1
        print('concurrent changes: %s; allocations: %s'
              % (counts, states_seen))
        self.assertNotIn(states.ALLOCATING, states_seen)
        self.assertTrue(all(counts.values()), counts)
        self.assertEqual([], utils.check_invariant())
        # Every allocation still active (the meddlers ran on after
        # ``results`` was read) sits on a node it was allowed to take.
        for allocation in allocation_obj.Allocation.list(
                self.context, filters={'state': states.ALLOCATION_ACTIVE}):
            node = node_obj.Node.get_by_id(self.context, allocation.node_id)
            self.assertEqual('gold', node.resource_class)
            self.assertEqual(allocation.uuid, node.instance_uuid)
