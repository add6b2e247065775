"""Races of the matching language, with real threads on the real database.

A node that loses a required trait, or gains a forbidden one, between the
candidate search and the reservation is not taken: the reservation's
guarded UPDATE checks every operator again.  The interleaving is forced:
the search is wrapped so that, once it has answered, another thread
commits the change before the conductor's code goes on to reserve.  The
stress test lets allocations with the whole language race for a small
fleet on two conductors.
"""

import threading
from unittest import mock

from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor.backends import database as database_backend
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional.conductor import test_allocations
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

dbapi = db_api.get_instance()


class TestChangedBetweenSearchAndReservation(
        test_allocations.AllocationTestCase):

    def setUp(self):
        super().setUp()
        # NOTE: a conductor no running service owns: do_allocate runs in
        # this thread only, never in the service's re-drive.
        self.owner = dbapi.register_conductor('race-host', '').id

    def _allocate_with_change(self, change, **allocation_kw):
        """do_allocate for a new allocation; the first search that finds
        nodes is followed by ``change(first node id)``, committed by
        another thread before the search's answer is used.

        :returns: (the allocation afterwards, the changed node id).
        """
        search = dbapi.get_allocation_candidates
        changed = []

        def search_then_change(criteria, limit, **kw):
            ids = search(criteria, limit, **kw)
            if ids and not changed:
                changed.append(ids[0])
                worker = threading.Thread(target=change, args=(ids[0],))
                worker.start()
                worker.join()
            return ids

        allocation = utils.make_allocation(self.context, self.owner,
                                           **allocation_kw)
        # NOTE: a wrapper, not a fake: the real search answers, and the
        # change is committed by a real transaction of another thread.
        with mock.patch.object(dbapi, 'get_allocation_candidates',
                               autospec=True,
                               side_effect=search_then_change):
            allocations.do_allocate(self.context, allocation.id, self.owner,
                                    database_backend.DatabaseBackend())
        result = utils.wait_for_allocations(self.context, [allocation.id])
        self.assertEqual(1, len(changed))
        return result[allocation.id], changed[0]

    def _remove_trait(self, trait):
        def change(node_id):
            node_obj.Node.get_by_id(self.context, node_id).remove_trait(trait)
        return change

    def _add_trait(self, trait):
        def change(node_id):
            node_obj.Node.get_by_id(self.context, node_id).add_trait(trait)
        return change

    def test_lost_required_trait_alone(self):
        node = utils.make_available_node(self.context, traits=['CUSTOM_A'])
        allocation, changed = self._allocate_with_change(
            self._remove_trait('CUSTOM_A'), traits=['CUSTOM_A'])
        self.assertEqual(node.id, changed)
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        node.refresh()
        self.assertIsNone(node.allocation_id)
        self.assertInvariant()

    def test_gained_forbidden_trait_alone(self):
        node = utils.make_available_node(self.context)
        allocation, changed = self._allocate_with_change(
            self._add_trait('CUSTOM_GPU'), traits=['!CUSTOM_GPU'])
        self.assertEqual(node.id, changed)
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.assertIn('lacks the forbidden trait CUSTOM_GPU',
                      allocation.last_error)
        node.refresh()
        self.assertIsNone(node.allocation_id)
        self.assertInvariant()

    def test_next_candidate_taken_instead(self):
        for expressions, change in (
                (['CUSTOM_A'], self._remove_trait('CUSTOM_A')),
                (['CUSTOM_A', '!CUSTOM_GPU'], self._add_trait('CUSTOM_GPU')),
                (['in:CUSTOM_A,CUSTOM_B'], self._remove_trait('CUSTOM_A'))):
            first = utils.make_available_node(self.context,
                                              traits=['CUSTOM_A'])
            second = utils.make_available_node(self.context,
                                               traits=['CUSTOM_A'])
            allocation, changed = self._allocate_with_change(
                change, traits=expressions)
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                             allocation.last_error)
            other = ({first.id, second.id} - {changed}).pop()
            self.assertEqual(other, allocation.node_id, expressions)
            self.assertIsNone(node_obj.Node.get_by_id(
                self.context, changed).allocation_id)
            # Both nodes out of the way of the next case.
            for node in (first, second):
                node = node_obj.Node.get_by_id(self.context, node.id)
                node.resource_class = 'used'
                node.save()
        self.assertInvariant()


class TestStress(test_allocations.AllocationTestCase):
    """Allocations with every operator race for a small fleet on two
    conductors: each matching node is taken once, no other node is."""

    MATCHING = 6
    ALLOCATIONS = 14

    def test_no_node_twice_and_only_matching_nodes(self):
        second = self.useFixture(
            ia_fixtures.ConductorFixture(host='second-conductor'))
        properties = {'cpus': '16', 'memory_mb': 32768,
                      'capabilities': 'boot_mode:uefi'}
        good = set()
        for index in range(self.MATCHING):
            good.add(utils.make_available_node(
                self.context, traits=['CUSTOM_A', 'CUSTOM_RACK_%d' % (
                    index % 2)], properties=properties).id)
        # Each misses exactly one operator.
        utils.make_available_node(self.context, properties=properties,
                                  traits=['CUSTOM_A', 'CUSTOM_RACK_0',
                                          'CUSTOM_GPU'])
        utils.make_available_node(self.context, properties=properties,
                                  traits=['CUSTOM_RACK_0'])
        utils.make_available_node(self.context, properties=properties,
                                  traits=['CUSTOM_A', 'CUSTOM_RACK_9'])
        utils.make_available_node(
            self.context, properties=dict(properties, memory_mb='1024'),
            traits=['CUSTOM_A', 'CUSTOM_RACK_1'])
        utils.make_available_node(
            self.context, properties=dict(properties,
                                          capabilities='boot_mode:bios'),
            traits=['CUSTOM_A', 'CUSTOM_RACK_1'])
        conductors = [(self.me, self.conductor), (
            second.service.conductor.id, second)]
        ids = []
        for index in range(self.ALLOCATIONS):
            conductor_id, fixture = conductors[index % 2]
            allocation = utils.make_allocation(
                self.context, conductor_id,
                traits=['CUSTOM_A', '!CUSTOM_GPU',
                        'in:CUSTOM_RACK_0,CUSTOM_RACK_1'],
                match={'memory_mb': 16384,
                       'capabilities': {'boot_mode': 'uefi'}})
            ids.append((allocation.id, fixture))
        for allocation_id, fixture in ids:
            fixture.rpcapi.create_allocation(self.context, allocation_id,
                                             fixture.host)
        done = utils.wait_for_allocations(self.context,
                                          [i for i, _f in ids])
        taken = [a.node_id for a in done.values()
                 if a.state == states.ALLOCATION_ACTIVE]
        self.assertEqual(self.MATCHING, len(taken))
        self.assertEqual(good, set(taken))
        self.assertEqual(self.ALLOCATIONS - self.MATCHING, len(
            [a for a in done.values() if a.state == states.ALLOCATION_ERROR]))
        self.assertInvariant()
