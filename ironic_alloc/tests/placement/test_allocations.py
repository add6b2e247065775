"""Allocations with [allocation]backend = placement: real conductors, our
database and a real Placement; the scenarios of the database backend
(tests/functional/conductor/test_allocations.py) plus claims, releases,
resume and outages, read back through Placement's API."""

import socket
import time
import types

from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import matching
from ironic_alloc.common import placement
from ironic_alloc.common import states
from ironic_alloc.conductor import allocations
from ironic_alloc.conductor.backends import placement as placement_backend
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import conductor as conductor_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures
from ironic_alloc.tests.placement import base

WAIT = 30

dbapi = db_api.get_instance()


def unused_url():
    """A loopback URL where nothing listens (a Placement that is down)."""
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    return 'http://127.0.0.1:%d' % port


def use_placement_backend(test, server, **placement_opts):
    """Point the global [placement] options at ``server`` and select the
    placement backend, for the conductors the test starts."""
    for group, values in base.backend_settings(
            server, **placement_opts).items():
        test.config(group=group, **values)


class PlacementAllocationTestCase(base.PlacementTestCase):

    hosts = ('pl-conductor',)
    placement_opts = {}

    def setUp(self):
        super().setUp()
        use_placement_backend(self, self.placement, **self.placement_opts)
        self.conductors = [self.useFixture(ia_fixtures.ConductorFixture(
            host=host)) for host in self.hosts]
        self.conductor = self.conductors[0]
        self.service = self.conductor.service
        self.rpcapi = self.conductor.rpcapi
        self.me = self.service.conductor.id

    def node(self, **kw):
        return utils.make_available_node(self.context, **kw)

    def sync(self):
        report = placement_sync.sync_all(self.context, self.client)
        self.assertTrue(report.ok, report)

    def allocate(self, **kw):
        allocation = utils.make_allocation(self.context, self.me, **kw)
        self.rpcapi.create_allocation(self.context, allocation.id,
                                      self.conductor.host)
        return utils.wait_for_allocations(self.context,
                                          [allocation.id])[allocation.id]

    def claim_directly(self, allocation, node, user=None):
        """Claim a node's provider in Placement the way a conductor does,
        or, with ``user``, as another user of Placement (Nova) would."""
        body = placement_claims.claim_body(allocation, node.uuid,
                                           'CUSTOM_GOLD')
        if user is not None:
            body.update(user_id=user, project_id='nova-project')
        self.client.put('/allocations/%s' % allocation.uuid, body,
                        expected=(204,))

    def claims(self, allocation_uuid, client=None):
        return set((client or self.client).get(
            '/allocations/%s' % allocation_uuid)['allocations'])

    def consumers(self, node_uuid, client=None):
        return set((client or self.client).get(
            '/resource_providers/%s/allocations' % node_uuid)['allocations'])

    def reserved(self, node_uuid):
        inventories = self.client.get('/resource_providers/%s/inventories'
                                      % node_uuid)['inventories']
        return {rc: inv['reserved'] for rc, inv in inventories.items()}

    def wait_for(self, predicate, what):
        deadline = time.monotonic() + WAIT
        while not predicate():
            if time.monotonic() > deadline:
                self.fail('%s did not happen within %ss' % (what, WAIT))
            time.sleep(0.05)

    def assertClaimed(self, allocation, node):
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                         allocation.last_error)
        self.assertEqual(node.id, allocation.node_id)
        self.assertEqual({node.uuid}, self.claims(allocation.uuid))
        self.assertEqual({allocation.uuid}, self.consumers(node.uuid))

    def assertInvariant(self):
        self.assertEqual([], utils.check_invariant())


class TestPicking(PlacementAllocationTestCase):

    def test_resource_class_and_traits(self):
        self.node(traits=['CUSTOM_A'])
        self.node(resource_class='silver', traits=['CUSTOM_A', 'CUSTOM_B'])
        node = self.node(traits=['CUSTOM_A', 'CUSTOM_B', 'CUSTOM_C'],
                         instance_info={'image_source': 'http://x/y.img'})
        self.sync()
        allocation = self.allocate(traits=['CUSTOM_B', 'CUSTOM_A'])
        self.assertClaimed(allocation, node)
        node.refresh()
        self.assertEqual(allocation.uuid, node.instance_uuid)
        self.assertEqual({'image_source': 'http://x/y.img',
                          'traits': ['CUSTOM_A', 'CUSTOM_B']},
                         node.instance_info)
        # The claim holds the provider's one unit: nothing more is written
        # for the reservation.  A full pass that finds the node still
        # allocated marks it reserved as well.
        self.assertEqual({'CUSTOM_GOLD': 0}, self.reserved(node.uuid))
        self.assertTrue(self.service.backend.sync_all().ok)
        self.assertEqual({'CUSTOM_GOLD': 1}, self.reserved(node.uuid))
        self.assertEqual({allocation.uuid}, self.consumers(node.uuid))
        self.assertInvariant()

    def test_skips_unusable_nodes(self):
        self.node(maintenance=True)
        self.node(power_state=None)
        self.node(instance_uuid=uuidutils.generate_uuid())
        utils.make_node(self.context, provision_state=states.MANAGEABLE,
                        power_state=states.POWER_OFF)
        self.node(resource_class='silver')
        good = self.node()
        self.sync()
        self.assertClaimed(self.allocate(), good)

    def test_name_first(self):
        nodes = [self.node(name='node-%d' % i) for i in range(5)]
        self.sync()
        allocation = self.allocate(name='node-3')
        self.assertClaimed(allocation, nodes[3])

    def test_candidate_nodes_and_owner(self):
        # NOTE: owners and candidate lists are searched in our database
        # and their providers claimed directly.
        mine = self.node(owner='p1')
        leased = self.node(lessee='p1')
        self.node(owner='p2')
        self.sync()
        a1 = self.allocate(owner='p1', candidate_nodes=[leased.uuid])
        self.assertClaimed(a1, leased)
        a2 = self.allocate(owner='p1')
        self.assertClaimed(a2, mine)
        self.assertEqual('p1', self.client.get(
            '/allocations/%s' % a2.uuid)['project_id'])
        a3 = self.allocate(owner='p1')
        self.assertEqual(states.ALLOCATION_ERROR, a3.state)
        # NOTE: p1's own nodes explain it, never p2's free one.
        self.assertIn('no node of resource class "gold" is available',
                      a3.last_error)
        self.assertEqual(set(), self.claims(a3.uuid))

    def test_error_names_the_constraint(self):
        node = self.node(traits=['CUSTOM_A'])
        self.node(resource_class='silver')
        self.sync()
        cases = [
            (dict(resource_class='bronze'), 'no node has resource class '
             '"bronze"'),
            (dict(resource_class='silver', candidate_nodes=[node.uuid]),
             'none of the candidate nodes'),
            (dict(traits=['CUSTOM_B']), "all the traits ['CUSTOM_B']"),
        ]
        for kw, message in cases:
            allocation = self.allocate(**kw)
            self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
            self.assertIn(message, allocation.last_error)
            self.assertEqual(set(), self.claims(allocation.uuid))
        self.assertEqual(set(), self.consumers(node.uuid))

    def test_node_placement_does_not_offer_yet(self):
        # A node made available behind the sync's back: Placement still
        # has it reserved, our database has it free.  It is repaired and
        # claimed instead of a "no candidate" answer.
        node = self.node(maintenance=True)
        self.sync()
        node.maintenance = False
        node.save()
        self.assertClaimed(self.allocate(), node)

    def test_offered_nodes_all_taken_falls_back_to_free_nodes(self):
        # Placement keeps offering a node that a concurrent allocation won
        # in our database (its claim not made yet, the provider not yet
        # reserved), and has not caught up with the only free node.  The
        # free node is found in our database, repaired and claimed,
        # instead of "no candidate" after every attempt.
        taken = self.node()
        free = self.node(maintenance=True)
        self.sync()
        winner = utils.make_allocation(self.context, self.me)
        self.assertTrue(dbapi.reserve_node_for_allocation(
            winner.id, self.me, taken.id, allocations.criteria_of(winner)))
        free.maintenance = False
        free.save()
        self.assertEqual({'CUSTOM_GOLD': 0}, self.reserved(taken.uuid))
        self.assertEqual({'CUSTOM_GOLD': 1}, self.reserved(free.uuid))
        self.assertClaimed(self.allocate(), free)
        self.assertInvariant()

    def test_colliding_classes_find_no_node(self):
        # baremetal-gold and baremetal.gold both become
        # CUSTOM_BAREMETAL_GOLD: the sync gives neither an inventory.
        node = self.node(resource_class='baremetal-gold')
        self.node(resource_class='baremetal.gold')
        self.assertEqual(1, len(placement_sync.sync_all(
            self.context, self.client).collisions))
        allocation = self.allocate(resource_class='baremetal-gold')
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.assertIn('No candidate node', allocation.last_error)
        self.assertEqual(set(), self.consumers(node.uuid))

    def test_owned_node_placement_does_not_offer_yet(self):
        # The same for a search in our database (owner): the node's
        # provider is repaired when its claim fails.
        node = self.node(owner='p1', power_state=None)
        self.sync()
        node.power_state = states.POWER_OFF
        node.save()
        self.assertClaimed(self.allocate(owner='p1'), node)

    def test_every_node_once(self):
        nodes = [self.node() for _ in range(3)]
        self.sync()
        allocations = [self.allocate() for _ in range(4)]
        self.assertEqual({n.id for n in nodes},
                         {a.node_id for a in allocations[:3]})
        self.assertEqual(states.ALLOCATION_ERROR, allocations[3].state)
        self.assertEqual(set(), self.claims(allocations[3].uuid))
        self.assertInvariant()


class TestRelease(PlacementAllocationTestCase):

    def _active(self, **node_kw):
        node = self.node(**node_kw)
        self.sync()
        allocation = self.allocate()
        self.assertClaimed(allocation, node)
        node.refresh()
        return node, allocation

    def _assert_released(self, node, allocation):
        self.assertEqual(set(), self.claims(allocation.uuid))
        self.wait_for(lambda: self.reserved(node.uuid) == {'CUSTOM_GOLD': 0},
                      'reserved = 0 on the freed node')
        # Free again for the next allocation.
        self.assertClaimed(self.allocate(), node)

    def test_delete_releases(self):
        node, allocation = self._active()
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        self._assert_released(node, allocation)

    def test_removing_instance_uuid_releases(self):
        node, allocation = self._active()
        node.instance_uuid = None
        self.rpcapi.update_node(self.context, node, self.conductor.host)
        self._assert_released(node, allocation)

    def _wait_idle(self, node):
        self.wait_for(lambda: node.refresh() or (
            node.reservation is None and not node.target_provision_state),
            'the end of the action')
        return node

    def test_teardown_releases_rebuild_keeps(self):
        node, allocation = self._active()
        host = self.conductor.host
        for action, state in (('deploy', states.ACTIVE),
                              ('rebuild', states.ACTIVE)):
            self.rpcapi.do_provisioning_action(self.context, node.id,
                                               action, host)
            node = self._wait_idle(node)
            self.assertEqual(state, node.provision_state)
            self.assertEqual({node.uuid}, self.claims(allocation.uuid))
        self.rpcapi.do_provisioning_action(self.context, node.id,
                                           'undeploy', host)
        node = self._wait_idle(node)
        self.assertEqual(states.AVAILABLE, node.provision_state)
        self.assertEqual([], allocation_obj.Allocation.list(self.context))
        self._assert_released(node, allocation)

    def test_node_deleted_in_maintenance(self):
        node, allocation = self._active()
        node.maintenance = True
        node.save()
        self.rpcapi.destroy_node(self.context, node.id, self.conductor.host)
        self.assertEqual(set(), self.claims(allocation.uuid))
        self.wait_for(lambda: self.provider(node.uuid) is None,
                      'the provider of the deleted node to go')

    def test_backfill_and_delete(self):
        node = utils.make_node(self.context, provision_state=states.ACTIVE,
                               power_state=states.POWER_ON)
        self.sync()
        allocation = allocation_obj.Allocation(
            self.context, uuid=uuidutils.generate_uuid(),
            resource_class='gold', traits=[], candidate_nodes=[], extra={})
        allocation.backfill(node, states.BACKFILL_STATES)
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        # NOTE: a deployed node is reserved in Placement already; the
        # backfilled allocation holds no claim of its own.
        self.assertEqual({'CUSTOM_GOLD': 1}, self.reserved(node.uuid))
        node.maintenance = True
        node.save()
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        self.assertEqual(set(), self.consumers(node.uuid))
        self.assertInvariant()

    def test_release_during_outage_finished_by_periodic_pass(self):
        node, allocation = self._active()
        working = self.service.backend.client
        self.service.backend.client = placement_backend.new_client(
            self.placement.client_conf(endpoint=unused_url()))
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        node.refresh()
        # Our database freed the node at once; the claim is left over.
        self.assertIsNone(node.allocation_id)
        self.assertEqual({node.uuid}, self.claims(allocation.uuid))
        self.service.backend.client = working
        report = self.service.backend.sync_all()
        self.assertTrue(report.ok, report)
        self.assertEqual(set(), self.consumers(node.uuid))
        self.assertEqual({'CUSTOM_GOLD': 0}, self.reserved(node.uuid))
        self.assertClaimed(self.allocate(), node)

    def test_periodic_pass_repairs_drift(self):
        traited = self.node(traits=['CUSTOM_A'])
        maintained = self.node()
        gone = self.node()
        self.sync()
        traited.set_traits(['CUSTOM_B'])
        maintained.maintenance = True
        maintained.save()
        gone.destroy()
        self.assertTrue(self.service.backend.sync_all().ok)
        self.assertEqual(['CUSTOM_B'], self.provider(traited.uuid)['traits'])
        self.assertEqual({'CUSTOM_GOLD': 1}, self.reserved(maintained.uuid))
        self.assertIsNone(self.provider(gone.uuid))


class TestPeriodicPass(PlacementAllocationTestCase):

    placement_opts = {'sync_interval': 1}

    def test_conductor_runs_the_full_pass(self):
        # Nodes written behind the service's back reach Placement, and a
        # stale claim goes, without anybody calling the sync.
        node = self.node(traits=['CUSTOM_A'])

        def synced():
            provider = self.provider(node.uuid)
            return provider is not None and provider['traits'] == [
                'CUSTOM_A'] and 'CUSTOM_GOLD' in provider['inventories']

        self.wait_for(synced, 'the provider of a new node')
        failed = utils.make_allocation(self.context, self.me,
                                       state=states.ALLOCATION_ERROR)
        self.claim_directly(failed, node)
        self.wait_for(lambda: not self.consumers(node.uuid),
                      'the stale claim to be released')


class TestFirstPassAtStart(PlacementAllocationTestCase):

    placement_opts = {'sync_interval': 600}

    def test_conductor_syncs_existing_nodes_when_it_starts(self):
        # Nodes that no conductor mirrored (enrolled while none ran, or
        # before the backend was switched) reach Placement when one
        # starts, not one sync_interval later.
        # NOTE: the running conductor's own first pass must be over, or it
        # may mirror the nodes itself.
        self.wait_for(lambda: any(
            w.runs for w in self.service.periodic_tasks.watchers()
            if w.work.name.endswith('.sync_all')),
            'the first pass of pl-conductor')
        nodes = [self.node(traits=['CUSTOM_EARLY']) for _ in range(3)]
        self.assertEqual(set(), self.provider_uuids())
        self.useFixture(ia_fixtures.ConductorFixture(host='pl-late'))
        self.wait_for(
            lambda: self.provider_uuids() == {n.uuid for n in nodes},
            'the providers of the nodes there before the start')


class TestResume(PlacementAllocationTestCase):

    def _claim_as_dead_conductor(self, allocation, node):
        self.claim_directly(allocation, node)

    def test_claim_of_a_dead_conductor_is_reused(self):
        nodes = [self.node() for _ in range(4)]
        self.sync()
        allocation = utils.make_allocation(self.context, self.me)
        self._claim_as_dead_conductor(allocation, nodes[2])
        self.rpcapi.create_allocation(self.context, allocation.id,
                                      self.conductor.host)
        allocation = utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]
        self.assertClaimed(allocation, nodes[2])

    def test_claim_of_a_node_no_longer_usable_is_released(self):
        stale = self.node()
        good = self.node()
        self.sync()
        allocation = utils.make_allocation(self.context, self.me)
        self._claim_as_dead_conductor(allocation, stale)
        stale.maintenance = True
        stale.save()
        self.rpcapi.create_allocation(self.context, allocation.id,
                                      self.conductor.host)
        allocation = utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]
        self.assertClaimed(allocation, good)
        self.assertEqual(set(), self.consumers(stale.uuid))


    def test_lost_allocation(self):
        # The slow conductor whose allocation was taken over keeps its
        # hands off the consumer's claim (the new owner works with it);
        # the claim of a deleted allocation is released.
        node = self.node()
        self.sync()
        allocation = utils.make_allocation(self.context, self.me)
        other = conductor_obj.Conductor.register(self.context, 'other', '')
        self._claim_as_dead_conductor(allocation, node)
        self.assertTrue(dbapi.take_over_allocation(allocation.id, self.me,
                                                   other.id))
        claimer = placement_claims._Claimer(
            self.context, self.client, allocation,
            allocations.criteria_of(allocation), self.me,
            placement_claims.ForeignHolds(),
            self.service.backend.claim_batcher)
        self.assertRaises(exception.AllocationLost, claimer.reserve_claimed,
                          node.id)
        self.assertEqual({node.uuid}, self.claims(allocation.uuid))
        allocation.destroy()
        self.assertRaises(exception.AllocationLost, claimer.reserve_claimed,
                          node.id)
        self.assertEqual(set(), self.claims(allocation.uuid))


class TestOutage(PlacementAllocationTestCase):

    def setUp(self):
        super().setUp()
        # NOTE: a Placement that is down: nothing listens on the port.
        self.service.backend.client = placement_backend.new_client(
            self.placement.client_conf(endpoint=unused_url()))

    def test_allocation_fails_with_clear_error(self):
        self.node()
        allocation = self.allocate()
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        self.assertIn('Placement could not be used', allocation.last_error)
        self.assertIn('PUT /allocations/%s' % allocation.uuid,
                      allocation.last_error)

    def test_node_changes_go_on(self):
        node = self.node()
        node.maintenance = True
        node = self.rpcapi.update_node(self.context, node,
                                       self.conductor.host)
        self.assertTrue(node.maintenance)
        self.rpcapi.destroy_node(self.context, node.id, self.conductor.host)
        self.assertRaises(exception.NodeNotFound, node.refresh)


def nova_instance():
    """A consumer of another user of Placement (anything with uuid and
    owner, as claim_body() reads them)."""
    return types.SimpleNamespace(uuid=uuidutils.generate_uuid(), owner=None)


class TestForeignHolds(PlacementAllocationTestCase):
    """Providers that another user of Placement (Nova) holds."""

    def hold_as_nova(self, node):
        instance = nova_instance()
        self.claim_directly(instance, node, user='nova')
        return instance

    def record_claims(self):
        """The providers of the claims the conductor sends from now on."""
        claimed = []
        client = self.service.backend.client
        send = client.request

        def recording(method, path, body=None, expected=(200,)):
            if method == 'PUT' and path.startswith('/allocations/'):
                claimed.extend(body['allocations'])
            return send(method, path, body=body, expected=expected)

        client.request = recording
        self.addCleanup(vars(client).pop, 'request')
        return claimed

    def test_held_node_is_skipped_and_remembered(self):
        held = self.node()
        free = self.node()
        self.sync()
        nova = self.hold_as_nova(held)
        first = self.allocate()
        self.assertClaimed(first, free)
        self.assertEqual({nova.uuid}, self.consumers(held.uuid))
        # Nothing else is free: the error names the hold, which stays.
        second = self.allocate()
        self.assertEqual(states.ALLOCATION_ERROR, second.state)
        self.assertIn('No candidate node: the matching free nodes are held '
                      'in Placement by other consumers (%s).' % held.uuid,
                      second.last_error)
        self.assertIn(held.uuid, self.service.backend.foreign_holds)
        self.assertEqual(set(), self.claims(second.uuid))
        self.assertEqual({nova.uuid}, self.consumers(held.uuid))
        # Remembered: the next search skips it without a claim.
        self.rpcapi.destroy_allocation(self.context, first.id,
                                       self.conductor.host)
        claimed = self.record_claims()
        third = self.allocate()
        self.assertClaimed(third, free)
        self.assertEqual([free.uuid], claimed)
        self.assertInvariant()

    def test_full_pass_keeps_foreign_claims_and_refreshes_them(self):
        held = self.node()
        ours = self.node()
        self.sync()
        nova = self.hold_as_nova(held)
        # A claim of ours that no allocation holds goes; Nova's stays and
        # is remembered without any allocation having met it.
        failed = utils.make_allocation(self.context, self.me,
                                       state=states.ALLOCATION_ERROR)
        self.claim_directly(failed, ours)
        report = self.service.backend.sync_all()
        self.assertTrue(report.ok, report)
        self.assertEqual({nova.uuid}, self.consumers(held.uuid))
        self.assertEqual(set(), self.consumers(ours.uuid))
        self.assertIn(held.uuid, self.service.backend.foreign_holds)
        self.assertNotIn(ours.uuid, self.service.backend.foreign_holds)
        # Nova lets go: the next pass forgets the hold, and the node is
        # given out again.
        self.client.delete('/allocations/%s' % nova.uuid)
        self.assertTrue(self.service.backend.sync_all().ok)
        self.assertNotIn(held.uuid, self.service.backend.foreign_holds)
        allocations = [self.allocate(), self.allocate()]
        self.assertEqual({held.id, ours.id},
                         {a.node_id for a in allocations})
        self.assertInvariant()

    def test_hold_released_before_the_pass_waits_for_it(self):
        # Until the next full pass a remembered hold is skipped, even when
        # its holder has let go meanwhile.
        node = self.node()
        self.sync()
        nova = self.hold_as_nova(node)
        self.assertEqual(states.ALLOCATION_ERROR, self.allocate().state)
        self.client.delete('/allocations/%s' % nova.uuid)
        late = self.allocate()
        self.assertEqual(states.ALLOCATION_ERROR, late.state)
        self.assertIn('held in Placement by other consumers',
                      late.last_error)
        self.assertTrue(self.service.backend.sync_all().ok)
        self.assertClaimed(self.allocate(), node)


class TestClaimRefusals(PlacementAllocationTestCase):
    """What Placement answers a claim besides yes."""

    def test_node_placement_has_no_provider_for(self):
        # Free in our database, unknown to Placement (its sync failed):
        # Placement answers the claim with 400, keeping the empty consumer
        # it made; the provider is made on the spot and claimed.
        self.client.ensure_resource_class('CUSTOM_GOLD')
        node = self.node()
        self.assertIsNone(self.provider(node.uuid))
        self.assertClaimed(self.allocate(), node)
        self.assertInvariant()

    def test_class_placement_does_not_know(self):
        resource_class = 'rc-%s' % uuidutils.generate_uuid()[:8]
        node = self.node(resource_class=resource_class)
        allocation = self.allocate(resource_class=resource_class)
        self.assertClaimed(allocation, node)

    def test_claim_sent_twice(self):
        # The conductor's claim reaches Placement, its answer is lost and
        # the claim is sent again: Placement answers the second one with
        # placement.concurrent_update (the consumer exists), the conductor
        # reads the consumer and finds its own claim.
        node = self.node()
        self.sync()
        allocation = utils.make_allocation(self.context, self.me)
        client = self.service.backend.client
        send = client.request
        answers = []

        def lost_answer(method, path, body=None, expected=(200,)):
            if (method, path) != ('PUT', '/allocations/%s'
                                  % allocation.uuid):
                return send(method, path, body=body, expected=expected)
            if not answers:
                answers.append(send(method, path, body=body,
                                    expected=expected).status_code)
            try:
                return send(method, path, body=body, expected=expected)
            except exception.PlacementConflict as exc:
                answers.append(exc.error_code)
                raise

        client.request = lost_answer
        self.addCleanup(vars(client).pop, 'request')
        self.rpcapi.create_allocation(self.context, allocation.id,
                                      self.conductor.host)
        allocation = utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]
        self.assertClaimed(allocation, node)
        self.assertEqual([204, placement.CONCURRENT_UPDATE], answers)


class TestRequestsPerAllocation(PlacementAllocationTestCase):

    def record(self):
        sent = []
        client = self.service.backend.client
        send = client.request

        def recording(method, path, body=None, expected=(200,)):
            sent.append((method, path))
            return send(method, path, body=body, expected=expected)

        client.request = recording
        self.addCleanup(vars(client).pop, 'request')
        return sent

    def test_requests(self):
        # After a full pass of the conductor (which records each provider
        # it made match its node): the allocation sends its claim and
        # nothing else; its deletion the release, then the sync of the
        # freed node reads its inventory and traits (nothing to write:
        # the claim, not ``reserved``, held the node).
        for _ in range(3):
            self.node()
        self.assertTrue(self.service.backend.sync_all().ok)
        sent = self.record()
        allocation = self.allocate()
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state)
        self.assertEqual([('PUT', '/allocations/%s' % allocation.uuid)],
                         sent)
        provider = '/resource_providers/%s' % node_obj.Node.uuids_by_id(
            self.context, [allocation.node_id])[allocation.node_id]
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        self.wait_for(lambda: len(sent) >= 4, 'the sync of the node')
        self.assertEqual([('PUT', '/allocations/%s' % allocation.uuid),
                          ('DELETE', '/allocations/%s' % allocation.uuid),
                          ('GET', provider + '/inventories'),
                          ('GET', provider + '/traits')], sent)

    def test_requests_for_a_node_marked_reserved(self):
        # A full pass while the allocation holds the node marks it
        # reserved; the deletion's sync then writes it back.
        self.node()
        self.assertTrue(self.service.backend.sync_all().ok)
        allocation = self.allocate()
        self.assertTrue(self.service.backend.sync_all().ok)
        provider = '/resource_providers/%s' % node_obj.Node.uuids_by_id(
            self.context, [allocation.node_id])[allocation.node_id]
        sent = self.record()
        self.rpcapi.destroy_allocation(self.context, allocation.id,
                                       self.conductor.host)
        self.wait_for(lambda: len(sent) >= 4, 'the sync of the node')
        self.assertEqual([('DELETE', '/allocations/%s' % allocation.uuid),
                          ('GET', provider + '/inventories'),
                          ('PUT', provider + '/inventories'),
                          ('GET', provider + '/traits')], sent)
        self.assertEqual({'CUSTOM_GOLD': 0}, self.reserved(
            provider.rsplit('/', 1)[1]))


class TestSameMatcher(PlacementAllocationTestCase):
    """The placement backend picks from exactly the nodes the database
    backend's matcher finds: the allocation's criteria reach the matcher
    as they are, so a criterion the allocation API adds needs a row in
    CASES here, not a change of the backend."""

    # The fleet: name -> node fields.
    FLEET = {
        'plain': {},
        'a': {'traits': ['CUSTOM_A']},
        'ab': {'traits': ['CUSTOM_A', 'CUSTOM_B']},
        'owned': {'owner': 'p1', 'traits': ['CUSTOM_A']},
        'leased': {'lessee': 'p1'},
        'silver': {'resource_class': 'silver', 'traits': ['CUSTOM_A']},
        'maintenance': {'maintenance': True, 'traits': ['CUSTOM_A']},
        # For the matching language (extension 1.1): properties as
        # clients write them, numbers or strings of digits.
        'c': {'traits': ['CUSTOM_C'],
              'properties': {'memory_mb': 8192, 'cpu_arch': 'x86_64',
                             'capabilities': 'boot_mode:uefi'}},
        'bc': {'traits': ['CUSTOM_B', 'CUSTOM_C'],
               'properties': {'memory_mb': '2048', 'cpu_arch': 'aarch64',
                              'capabilities': 'boot_mode:uefi'}},
        'big': {'properties': {'memory_mb': 4096, 'cpu_arch': 'x86_64',
                               'capabilities': {'boot_mode': 'bios'}}},
    }
    # (allocation fields, candidate_nodes given by fleet name; the names
    # of the nodes it may get)
    CASES = [
        ({}, {'plain', 'a', 'ab', 'owned', 'leased', 'c', 'bc', 'big'}),
        ({'traits': ['CUSTOM_A']}, {'a', 'ab', 'owned'}),
        ({'traits': ['CUSTOM_B', 'CUSTOM_A']}, {'ab'}),
        ({'owner': 'p1'}, {'owned', 'leased'}),
        ({'owner': 'p1', 'traits': ['CUSTOM_A']}, {'owned'}),
        ({'candidate_nodes': ['plain', 'ab', 'silver', 'maintenance']},
         {'plain', 'ab'}),
        ({'resource_class': 'silver'}, {'silver'}),
        ({'resource_class': 'silver', 'traits': ['CUSTOM_B']}, set()),
        # The matching language: forbidden and any-of traits, alone and
        # with required traits, owner and candidate nodes.
        ({'traits': ['!CUSTOM_B']},
         {'plain', 'a', 'owned', 'leased', 'c', 'big'}),
        ({'traits': ['in:CUSTOM_B,CUSTOM_C']}, {'ab', 'c', 'bc'}),
        ({'traits': ['CUSTOM_A', '!CUSTOM_B']}, {'a', 'owned'}),
        ({'traits': ['CUSTOM_C', 'in:CUSTOM_A,CUSTOM_B']}, {'bc'}),
        ({'traits': ['!CUSTOM_A', 'in:CUSTOM_B,CUSTOM_C']}, {'c', 'bc'}),
        ({'traits': ['in:CUSTOM_A', 'in:CUSTOM_B,CUSTOM_C']}, {'ab'}),
        ({'owner': 'p1', 'traits': ['!CUSTOM_A']}, {'leased'}),
        ({'candidate_nodes': ['a', 'ab', 'c', 'maintenance'],
          'traits': ['!CUSTOM_B']}, {'a', 'c'}),
        ({'resource_class': 'silver', 'traits': ['in:CUSTOM_A,CUSTOM_B']},
         {'silver'}),
        # ... and the match object: minimums, CPU architecture and
        # capabilities, with trait expressions.
        ({'match': {'memory_mb': 4096}}, {'c', 'big'}),
        ({'match': {'memory_mb': 2048}}, {'c', 'bc', 'big'}),
        ({'match': {'memory_mb': 8193}}, set()),
        ({'match': {'cpu_arch': 'x86_64'}}, {'c', 'big'}),
        ({'match': {'capabilities': {'boot_mode': 'uefi'}}}, {'c', 'bc'}),
        ({'traits': ['!CUSTOM_C'], 'match': {'memory_mb': 1}}, {'big'}),
        ({'traits': ['in:CUSTOM_B,CUSTOM_C'],
          'match': {'memory_mb': 2048, 'cpu_arch': 'aarch64'}}, {'bc'}),
        ({'traits': ['CUSTOM_C'],
          'match': {'cpu_arch': 'x86_64',
                    'capabilities': {'boot_mode': 'uefi'}}}, {'c'}),
    ]

    def test_every_criterion_reaches_the_matcher(self):
        nodes = {name: self.node(**fields)
                 for name, fields in self.FLEET.items()}
        names = {node.id: name for name, node in nodes.items()}
        self.sync()
        for fields, expected in self.CASES:
            fields = dict(fields)
            if 'match' in fields:
                # NOTE: stored as the API stores it, once checked.
                fields['match'] = matching.check_match(fields['match'])
            if 'candidate_nodes' in fields:
                fields['candidate_nodes'] = [
                    nodes[name].uuid for name in fields['candidate_nodes']]
            # NOTE: an allocation nobody works on (state error), to ask
            # the database backend's matcher itself.
            probe = utils.make_allocation(self.context, self.me,
                                          state=states.ALLOCATION_ERROR,
                                          **fields)
            matched = dbapi.get_allocation_candidates(
                allocations.criteria_of(probe), 100)
            probe.destroy()
            self.assertEqual(expected, {names[i] for i in matched}, fields)
            given = [self.allocate(**fields)
                     for _ in range(len(expected) + 1)]
            active = given[:-1]
            for allocation in active:
                self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                                 (fields, allocation.last_error))
                self.assertEqual({nodes[names[allocation.node_id]].uuid},
                                 self.claims(allocation.uuid))
            self.assertEqual(expected,
                             {names[a.node_id] for a in active}, fields)
            self.assertEqual(states.ALLOCATION_ERROR, given[-1].state)
            self.assertEqual(set(), self.claims(given[-1].uuid))
            self.assertInvariant()
            for allocation in active:
                self.rpcapi.destroy_allocation(self.context, allocation.id,
                                               self.conductor.host)
