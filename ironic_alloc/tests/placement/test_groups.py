"""Allocation groups with [allocation]backend = placement: the WSGI app
over HTTP, a real conductor, our database and a real Placement.  The
claims of a group are one POST /allocations; after every test Placement
holds exactly what our database says, per consumer."""

import time
import types

import fixtures
from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.conductor.backends import placement as placement_backend
from ironic_alloc.conductor.backends import placement_claims
from ironic_alloc.conductor.backends import placement_groups
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_api_allocation_groups
from ironic_alloc.tests.placement import base
from ironic_alloc.tests.placement import test_allocations

dbapi = db_api.get_instance()

COMMIT = 'ironic_alloc.conductor.groups.dbapi.commit_allocation_group'


def _uuid():
    return uuidutils.generate_uuid()


class _PlacementBackend(base.PlacementTestCase):
    """Selects the placement backend before the served API starts its
    conductor (the next class of the test case's MRO)."""

    def setUp(self):
        super().setUp()
        test_allocations.use_placement_backend(self, self.placement)


class TestGroups(test_api_allocation_groups._GroupTestCase,
                 _PlacementBackend):

    def node(self, **kw):
        return utils.make_available_node(self.context, **kw)

    def sync(self):
        report = placement_sync.sync_all(self.context, self.client)
        self.assertTrue(report.ok, report)

    def claims(self, consumer):
        """{provider: units} of one consumer's claims."""
        body = self.client.get('/allocations/%s' % consumer)
        return {rp: sum(claim['resources'].values())
                for rp, claim in body['allocations'].items()}

    def assertAgree(self):
        """Placement's claims of our nodes are exactly our database's
        holds: each held node's provider claimed by its allocation only,
        each free node's by nobody."""
        for node in node_obj.Node.list(self.context):
            consumers = set(self.client.get(
                '/resource_providers/%s/allocations'
                % node.uuid)['allocations'])
            if node.allocation_id is None:
                self.assertEqual(set(), consumers, node.uuid)
                continue
            holder = dbapi.get_allocation_by_id(node.allocation_id)
            self.assertEqual({holder.uuid}, consumers, node.uuid)
            self.assertEqual({node.uuid: 1}, self.claims(holder.uuid))
        self.check_consistent()

    def test_gang_all_or_nothing(self):
        nodes = {self.node().uuid for _ in range(3)}
        self.sync()
        members = {_uuid(): {'resource_class': 'gold'} for _ in range(3)}
        group = self.created(members)
        self.assertEqual('active', group['state'], group)
        for member in group['members']:
            self.assertEqual({member['node_uuid']: 1},
                             self.claims(member['uuid']))
        self.assertEqual(nodes, {m['node_uuid'] for m in group['members']})
        # Nothing is left for a second gang: it fails holding nothing.
        self.node()
        self.sync()
        more = {_uuid(): {'resource_class': 'gold'} for _ in range(2)}
        group = self.created(more)
        self.assertEqual('error', group['state'])
        for uuid in more:
            self.assertEqual({}, self.claims(uuid))
        self.assertAgree()

    def test_hand_over_and_swap(self):
        self.node(name='n1')
        self.node(name='n2')
        n3 = self.node(name='n3')
        self.sync()
        old = self.allocate(candidate_nodes=['n1'])
        web = self.allocate(name='web', candidate_nodes=['n2'])
        # NOTE: a full pass marks held nodes reserved in Placement: the
        # hand-over moves the unit all the same.
        self.assertTrue(placement_backend.PlacementBackend(
            client=self.client).sync_all().ok)
        n1 = old['node_uuid']
        self.assertEqual({n1: 1}, self.claims(old['uuid']))
        new = _uuid()
        group = self.created({new: {'handover_from': old['uuid'],
                                    'node': 'n1'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({}, self.claims(old['uuid']))
        self.assertEqual({n1: 1}, self.claims(new))
        # Swap: "web" releases n2 and takes n3 under the same name.
        swapped = _uuid()
        group = self.created({web['uuid']: {},
                              swapped: {'resource_class': 'gold',
                                        'name': 'web'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({}, self.claims(web['uuid']))
        self.assertEqual({n3.uuid: 1}, self.claims(swapped))
        # A swap that cannot be made leaves both claims as they were.
        again = _uuid()
        group = self.created({swapped: {},
                              again: {'resource_class': 'gold',
                                      'name': 'web',
                                      'traits': ['CUSTOM_MISSING']}})
        self.assertEqual('error', group['state'])
        self.assertEqual({n3.uuid: 1}, self.claims(swapped))
        self.assertEqual({}, self.claims(again))
        # n2, released by the swap, is still reserved in Placement (the
        # full pass above found it held): the refused claim syncs it and
        # is sent again.
        inventory = self.client.get('/resource_providers/%s/inventories'
                                    % web['node_uuid'])['inventories']
        self.assertEqual(1, inventory['CUSTOM_GOLD']['reserved'])
        late = _uuid()
        group = self.created({late: {'resource_class': 'gold',
                                     'candidate_nodes': ['n2']}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({web['node_uuid']: 1}, self.claims(late))
        self.assertAgree()

    def test_foreign_consumer(self):
        held = self.node(uuid='00000000-0000-4000-8000-000000000001')
        free = self.node(uuid='00000000-0000-4000-8000-000000000002')
        self.sync()
        nova = _uuid()
        body = placement_claims.claim_body(types.SimpleNamespace(owner=None),
                                           held.uuid, 'CUSTOM_GOLD')
        body.update(user_id='nova', project_id='nova-project')
        self.client.put('/allocations/%s' % nova, body, expected=(204,))
        # NOTE: every search starts below the lowest uuid, so the node
        # Nova holds is the solver's first choice.
        self.useFixture(fixtures.MonkeyPatch(
            'ironic_alloc.conductor.groups.uuidutils',
            types.SimpleNamespace(
                generate_uuid=lambda: '00000000-0000-4000-8000-000000000000')))
        # Refused by Placement: solved again onto the other node.
        first = _uuid()
        group = self.created({first: {'resource_class': 'gold'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({free.uuid: 1}, self.claims(first))
        # Only the held node can do: the group fails, naming it.
        lone = _uuid()
        group = self.created({lone: {'resource_class': 'gold',
                                     'candidate_nodes': [held.uuid]}})
        self.assertEqual('error', group['state'])
        # NOTE: the conductor remembers the hold since the refusal of the
        # first group (no full pass ran).
        self.assertIn('Member %s could not be given a node' % lone,
                      group['last_error'])
        self.assertIn('held in Placement by other consumers (%s)'
                      % held.uuid, group['last_error'])
        self.assertEqual({}, self.claims(lone))
        self.assertEqual({held.uuid: 1}, self.claims(nova))

    def test_failure_after_the_post_releases_every_claim(self):
        node = self.node(name='n1')
        self.node(name='n2')
        self.node(name='n3')
        self.sync()
        old = self.allocate(candidate_nodes=['n1'])
        new, other = _uuid(), _uuid()
        real = dbapi.commit_allocation_group
        changed = []

        def changed_underneath(group_id, conductor_id, plan, node_states):
            planned = {m['uuid']: m['node_id'] for m in plan['new']}
            if not changed:
                # NOTE: Placement holds the group's claims, hand-over
                # made; then the planned node goes into maintenance
                # before our commit, whose guard refuses it.
                self.assertEqual({node.uuid: 1}, self.claims(new))
                self.assertEqual({}, self.claims(old['uuid']))
                self.assertEqual(1, sum(self.claims(other).values()))
                dbapi.update_node(planned[other], {'maintenance': True})
                changed.append(planned[other])
            else:
                # The first attempt's claims were undone before this one
                # was sent.
                victim = node_obj.Node.get_by_id(self.context, changed[0])
                self.assertEqual({}, self.client.get(
                    '/resource_providers/%s/allocations'
                    % victim.uuid)['allocations'])
            return real(group_id, conductor_id, plan, node_states)

        self.useFixture(fixtures.MonkeyPatch(COMMIT, changed_underneath))
        group = self.created({
            new: {'handover_from': old['uuid'], 'node': 'n1'},
            other: {'resource_class': 'gold'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({node.uuid: 1}, self.claims(new))
        self.assertEqual({}, self.claims(old['uuid']))
        self.assertAgree()

        # A commit that never comes (the group fails): the hand-over goes
        # back to its source and the new claims are emptied.
        self.node(name='n4')
        self.sync()
        held, spare = _uuid(), _uuid()

        def refused(group_id, conductor_id, plan, node_states):
            raise exception.AllocationGroupCommitFailed(
                member=plan['new'][0]['uuid'], reason='refused by the test.')

        self.useFixture(fixtures.MonkeyPatch(COMMIT, refused))
        group = self.created({
            held: {'handover_from': new, 'node': 'n1'},
            spare: {'resource_class': 'gold'}})
        self.assertEqual('error', group['state'])
        self.assertIn('could not be committed', group['last_error'])
        self.assertEqual({node.uuid: 1}, self.claims(new))
        self.assertEqual({}, self.claims(held))
        self.assertEqual({}, self.claims(spare))
        self.assertAgree()

    def test_redrive_drops_claims_left_behind(self):
        node = self.node(name='n1')
        spare = self.node(name='n2')
        self.sync()
        old = self.allocate(candidate_nodes=['n1'])
        new, other = _uuid(), _uuid()
        # What a conductor that died after its POST leaves: the hand-over
        # made in Placement, and a new member's claim on a node.
        self.client.post('/allocations', {
            old['uuid']: {'allocations': {}, 'consumer_generation':
                          self.client.get('/allocations/%s' % old['uuid'])
                          ['consumer_generation'],
                          'project_id': placement_claims.UNOWNED_PROJECT,
                          'user_id': placement_claims.CLAIM_USER,
                          'consumer_type': 'INSTANCE'},
            new: {'allocations': {node.uuid: {'resources':
                                              {'CUSTOM_GOLD': 1}}},
                  'consumer_generation': None,
                  'project_id': placement_claims.UNOWNED_PROJECT,
                  'user_id': placement_claims.CLAIM_USER,
                  'consumer_type': 'INSTANCE'},
            other: {'allocations': {spare.uuid: {'resources':
                                                 {'CUSTOM_GOLD': 1}}},
                    'consumer_generation': None,
                    'project_id': placement_claims.UNOWNED_PROJECT,
                    'user_id': placement_claims.CLAIM_USER,
                    'consumer_type': 'INSTANCE'}}, expected=(204,))
        # The members' candidates exclude the spare node their leftover
        # claim is on: that claim must go.
        third = self.node(name='n3')
        self.sync()
        group = self.created({
            new: {'handover_from': old['uuid'], 'node': 'n1'},
            other: {'resource_class': 'gold', 'candidate_nodes': ['n3']}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({node.uuid: 1}, self.claims(new))
        self.assertEqual({third.uuid: 1}, self.claims(other))
        self.assertEqual({}, self.claims(old['uuid']))
        self.assertAgree()

    def test_failed_redrive_drops_claims_left_behind(self):
        node = self.node(name='n1')
        spare = self.node(name='n2')
        self.node(name='n3')
        self.sync()
        old = self.allocate(candidate_nodes=['n1'])
        new, other = _uuid(), _uuid()
        # What a conductor that died after its POST leaves (made through
        # the backend): the hand-over made, a new member's claim.
        rows = {uuid: types.SimpleNamespace(owner=None, resource_class='gold')
                for uuid in (new, other)}
        placement_groups.claim(
            self.context, self.client, placement_claims.ForeignHolds(),
            placement_sync.SyncedProviders(),
            {'releases': [], 'names': [],
             'handovers': [{'uuid': new, 'from_uuid': old['uuid'],
                            'node_id': node.id}],
             'new': [{'uuid': other, 'node_id': spare.id}]}, rows)
        self.assertEqual({node.uuid: 1}, self.claims(new))
        self.assertEqual({spare.uuid: 1}, self.claims(other))
        # Driven again, the group has no solution: it fails before any
        # POST of its own, and the leftovers go with it.
        group = self.created({
            new: {'handover_from': old['uuid'], 'node': 'n1'},
            other: {'resource_class': 'gold',
                    'traits': ['CUSTOM_MISSING']}})
        self.assertEqual('error', group['state'])
        # NOTE: dropped after the failure is written, which the API shows
        # first.
        self.released([new, other])
        self.assertEqual({node.uuid: 1}, self.claims(old['uuid']))
        self.assertAgree()

    def released(self, consumers, timeout=30):
        """Waits until none of ``consumers`` holds a claim (released by
        a conductor after the API answered)."""
        deadline = time.monotonic() + timeout
        while any(self.claims(consumer) for consumer in consumers):
            if time.monotonic() > deadline:
                self.fail('claims of %s not released' % sorted(consumers))
            time.sleep(0.05)

    def test_delete_releases_claims_at_once(self):
        self.node(name='n1')
        self.node(name='n2')
        self.node(name='n3')
        self.sync()
        gang = self.created({_uuid(): {'resource_class': 'gold',
                                       'candidate_nodes': ['n2', 'n3']}
                             for _ in range(2)})
        self.assertEqual('active', gang['state'], gang)
        old = self.allocate(candidate_nodes=['n1'])
        new = _uuid()
        handed = self.created({new: {'handover_from': old['uuid'],
                                     'node': 'n1'}})
        self.assertEqual('active', handed['state'], handed)
        for group in (gang, handed):
            status, body = self.call(
                'DELETE', '/v1/allocation_groups/%s' % group['uuid'])
            self.assertEqual(204, status, body)
        self.released([m['uuid'] for m in gang['members']] + [new])
        # Nothing else holds the nodes: single allocations get them at
        # once (a claim still held would make them foreign holds).
        for name in ('n1', 'n2', 'n3'):
            self.allocate(candidate_nodes=[name])
        self.assertAgree()
