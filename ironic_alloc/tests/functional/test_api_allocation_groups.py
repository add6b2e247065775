"""Allocation groups (API extension 1.3) over HTTP.

The WSGI app served on a real socket with a real conductor: gang
allocation, scarcity (nothing held), a fixture where a greedy first fit
fails and the matching succeeds, release, swap, hand-over, deletion, the
400s of bad input with nothing written, the 409 of deleting a member of
an allocating group, and races of groups and single allocations on scarce
nodes (no node held twice, every group all or nothing).
"""

import datetime
import http.client
import json
import threading
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import states
from ironic_alloc.conf import CONF
from ironic_alloc.db import api as db_api
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import allocation_group as group_obj
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_api_matching

EXTENSION = 'ironic-alloc 1.3'
GROUP_FIELDS = {'uuid', 'name', 'state', 'owner', 'last_error',
                'explanation', 'members', 'expires_at', 'created_at',
                'updated_at', 'links'}

dbapi = db_api.get_instance()


def _uuid():
    return uuidutils.generate_uuid()


class _GroupTestCase(test_api_matching._ServedTestCase):

    def call(self, method, url, doc=None, extension=EXTENSION):
        return super().call(method, url, doc, extension=extension)

    def create(self, members, **more):
        return self.call('POST', '/v1/allocation_groups',
                         dict(members=members, **more))

    def wait(self, ident, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            status, group = self.call('GET', '/v1/allocation_groups/%s'
                                      % ident)
            self.assertEqual(200, status, group)
            if group['state'] != states.GROUP_ALLOCATING:
                return group
            if time.monotonic() > deadline:
                self.fail('group %s still allocating' % ident)
            time.sleep(0.05)

    def created(self, members, **more):
        status, group = self.create(members, **more)
        self.assertEqual(201, status, group)
        return self.wait(group['uuid'])

    def rows(self):
        """(allocation rows, group rows, held nodes)."""
        with sqla_api.get_engine().connect() as conn:

            def count(table, *where):
                return conn.execute(sa.select(sa.func.count()).select_from(
                    table).where(*where)).scalar()

            nodes = models.Node.__table__
            return (count(models.Allocation.__table__),
                    count(models.AllocationGroup.__table__),
                    count(nodes, nodes.c.allocation_id.isnot(None)))

    def check_consistent(self):
        """Node rows and allocation rows agree: each active allocation
        holds one node, which names it, and no node is held twice."""
        with sqla_api.get_engine().connect() as conn:
            allocations = models.Allocation.__table__
            nodes = models.Node.__table__
            held = dict(conn.execute(sa.select(
                nodes.c.allocation_id, nodes.c.id).where(
                    nodes.c.allocation_id.isnot(None))).all())
            rows = conn.execute(sa.select(
                allocations.c.id, allocations.c.state,
                allocations.c.node_id)).all()
        for row in rows:
            if row.state == states.ALLOCATION_ACTIVE:
                self.assertEqual(held.get(row.id), row.node_id)
            else:
                self.assertNotIn(row.id, held)
        self.assertEqual(set(held), {r.id for r in rows
                                     if r.state == states.ALLOCATION_ACTIVE})

    def allocate(self, **body):
        body.setdefault('resource_class', 'gold')
        status, allocation = self.call('POST', '/v1/allocations', body,
                                        extension=None)
        self.assertEqual(201, status, allocation)
        self.assertEqual('active', allocation['state'], allocation)
        return allocation


class TestGroupsOverHTTP(_GroupTestCase):

    def test_gang_allocation(self):
        fleet = {utils.make_available_node(self.context).uuid
                 for _ in range(10)}
        members = {_uuid(): {'resource_class': 'gold'} for _ in range(8)}
        status, group = self.create(members, name='gang')
        self.assertEqual(201, status, group)
        self.assertEqual(GROUP_FIELDS, set(group))
        self.assertTrue(group['links'][0]['href'].endswith(
            '/v1/allocation_groups/%s' % group['uuid']))
        group = self.wait('gang')
        self.assertEqual('active', group['state'], group)
        self.assertIsNone(group['last_error'])
        nodes = [m['node_uuid'] for m in group['members']]
        self.assertEqual(8, len(set(nodes)))
        self.assertLessEqual(set(nodes), fleet)
        self.assertEqual(set(members), {m['uuid'] for m in group['members']})
        self.assertEqual({'new'}, {m['kind'] for m in group['members']})
        self.assertEqual({'active'}, {m['state'] for m in group['members']})
        # The members are allocations; group_uuid only at 1.3.
        some = sorted(members)[0]
        status, allocation = self.call('GET', '/v1/allocations/%s' % some)
        self.assertEqual(group['uuid'], allocation['group_uuid'])
        for below in ('ironic-alloc 1.2', None):
            status, allocation = self.call('GET', '/v1/allocations/%s'
                                           % some, extension=below)
            self.assertNotIn('group_uuid', allocation)
        status, page = self.call('GET', '/v1/allocations')
        self.assertEqual({group['uuid']},
                         {a['group_uuid'] for a in page['allocations']})
        # The node holds its member's allocation, as a single one would.
        status, node = self.call('GET', '/v1/nodes/%s' % nodes[0],
                                 extension=None)
        self.assertIn(node['allocation_uuid'], members)
        self.assertEqual(node['allocation_uuid'], node['instance_uuid'])
        # A member has no lease of its own.
        status, doc = self.call('PATCH', '/v1/allocations/%s' % some, [
            {'op': 'add', 'path': '/ttl', 'value': 60}])
        self.assertEqual(400, status, doc)
        self.assertIn('lease of its own', self.error(status, doc))
        # Listing.
        status, page = self.call('GET', '/v1/allocation_groups')
        self.assertEqual(200, status)
        self.assertEqual([group['uuid']],
                         [g['uuid'] for g in page['allocation_groups']])
        self.check_consistent()

    def test_scarcity_holds_nothing(self):
        for _ in range(3):
            utils.make_available_node(self.context)
        members = {_uuid(): {'resource_class': 'gold'} for _ in range(5)}
        group = self.created(members)
        self.assertEqual('error', group['state'])
        self.assertRegex(group['last_error'],
                         r'^Member [0-9a-f-]{36} could not be given a node')
        self.assertIn(group['explanation']['member'], members)
        self.assertIn('Funnel: 3 nodes of resource class "gold"',
                      group['last_error'])
        self.assertEqual({'error'}, {m['state'] for m in group['members']})
        self.assertEqual({None}, {m['node_uuid'] for m in group['members']})
        self.assertEqual(0, self.rows()[2])
        self.check_consistent()

    def test_complete_where_first_fit_fails(self):
        n1 = utils.make_available_node(self.context, name='n1')
        n2 = utils.make_available_node(self.context, name='n2')
        a, b = sorted([_uuid(), _uuid()])
        # Member a (tried first) may take n1 or n2, member b only n1.
        group = self.created({
            a: {'resource_class': 'gold',
                'candidate_nodes': [n1.uuid, n2.uuid]},
            b: {'resource_class': 'gold', 'candidate_nodes': ['n1']}})
        self.assertEqual('active', group['state'], group)
        nodes = {m['uuid']: m['node_uuid'] for m in group['members']}
        self.assertEqual({a: n2.uuid, b: n1.uuid}, nodes)

    def test_release_and_swap(self):
        utils.make_available_node(self.context, name='n1')
        utils.make_available_node(self.context, name='n2')
        n3 = utils.make_available_node(self.context, name='n3')
        old = self.allocate(name='web', candidate_nodes=['n1'])
        other = self.allocate(candidate_nodes=['n2'])
        new = _uuid()
        # Swap: release "web" on n1 and take another node under the same
        # name, in one commit.
        group = self.created({old['uuid']: {},
                              new: {'resource_class': 'gold', 'name': 'web'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual(404, self.call('GET', '/v1/allocations/%s'
                                        % old['uuid'])[0])
        status, allocation = self.call('GET', '/v1/allocations/web')
        self.assertEqual(200, status)
        self.assertEqual(new, allocation['uuid'])
        self.assertEqual(n3.uuid, allocation['node_uuid'])
        status, node = self.call('GET', '/v1/nodes/n1', extension=None)
        self.assertIsNone(node['allocation_uuid'])
        kinds = {m['uuid']: m['kind'] for m in group['members']}
        self.assertEqual({old['uuid']: 'release', new: 'new'}, kinds)
        # A plain release.
        group = self.created({other['uuid']: {}})
        self.assertEqual('active', group['state'])
        status, node = self.call('GET', '/v1/nodes/n2', extension=None)
        self.assertIsNone(node['allocation_uuid'])
        self.assertIsNone(node['instance_uuid'])
        self.check_consistent()

    def test_swap_never_both_nor_none(self):
        utils.make_available_node(self.context, name='n1')
        old = self.allocate(name='web', candidate_nodes=['n1'])
        new = _uuid()
        # No other node of the class is free: the swap fails and "web"
        # keeps its node.
        group = self.created({old['uuid']: {},
                              new: {'resource_class': 'gold', 'name': 'web',
                                    'traits': ['CUSTOM_MISSING']}})
        self.assertEqual('error', group['state'])
        self.assertIn(new, group['last_error'])
        status, allocation = self.call('GET', '/v1/allocations/web')
        self.assertEqual(old['uuid'], allocation['uuid'])
        self.assertEqual('active', allocation['state'])
        self.check_consistent()

    def test_hand_over(self):
        node = utils.make_available_node(self.context, name='n1')
        old = self.allocate(candidate_nodes=['n1'])
        # An instance that is not the allocation's stays on hand-over.
        other = utils.make_available_node(self.context, name='n2')
        kept = self.allocate(candidate_nodes=['n2'])
        instance = _uuid()
        # NOTE: Ironic's API refuses to change the instance of an
        # allocated node; a client may have set it before (a backfill).
        dbapi.update_node(other.id, {'instance_uuid': instance})
        self.assertEqual(200, self.call('PATCH', '/v1/nodes/n1', [
            {'op': 'add', 'path': '/extra/k', 'value': 'v'}],
            extension=None)[0])
        first, second = _uuid(), _uuid()
        group = self.created({
            first: {'handover_from': old['uuid'], 'node': node.uuid,
                    'name': 'moved', 'extra': {'why': 'migration'}},
            second: {'handover_from': kept['name'] or kept['uuid'],
                     'node': 'n2'}})
        self.assertEqual('active', group['state'], group)
        self.assertEqual({'handover'}, {m['kind'] for m in group['members']})
        self.assertEqual(404, self.call('GET', '/v1/allocations/%s'
                                        % old['uuid'])[0])
        status, shown = self.call('GET', '/v1/nodes/n1', extension=None)
        self.assertEqual(first, shown['allocation_uuid'])
        self.assertEqual(first, shown['instance_uuid'])
        self.assertEqual('available', shown['provision_state'])
        status, shown = self.call('GET', '/v1/nodes/%s' % other.uuid,
                                  extension=None)
        self.assertEqual(second, shown['allocation_uuid'])
        self.assertEqual(instance, shown['instance_uuid'])
        status, allocation = self.call('GET', '/v1/allocations/moved')
        self.assertEqual(first, allocation['uuid'])
        self.assertEqual({'why': 'migration'}, allocation['extra'])
        self.check_consistent()

    def test_hand_over_of_a_deployed_node_and_a_refused_state(self):
        deployed = utils.make_available_node(self.context, name='n1')
        old = self.allocate(candidate_nodes=['n1'])
        dbapi.update_node(deployed.id, {'provision_state': 'active'})
        new = _uuid()
        group = self.created({new: {'handover_from': old['uuid'],
                                    'node': 'n1'}})
        self.assertEqual('active', group['state'], group)
        status, node = self.call('GET', '/v1/nodes/n1', extension=None)
        self.assertEqual(('active', new, new),
                         (node['provision_state'], node['allocation_uuid'],
                          node['instance_uuid']))
        # In a state where Ironic allows no allocation, the group fails
        # and the old allocation keeps its node.
        dbapi.update_node(deployed.id, {'provision_state': 'manageable'})
        group = self.created({_uuid(): {'handover_from': new,
                                        'node': 'n1'}})
        self.assertEqual('error', group['state'])
        self.assertIn('provision state "manageable"', group['last_error'])
        status, node = self.call('GET', '/v1/nodes/n1', extension=None)
        self.assertEqual(new, node['allocation_uuid'])
        self.check_consistent()

    def test_delete_group_releases_every_member(self):
        for _ in range(4):
            utils.make_available_node(self.context)
        group = self.created({_uuid(): {'resource_class': 'gold'}
                              for _ in range(3)}, name='trio')
        self.assertEqual((3, 1, 3), self.rows())
        status, _ = self.call('DELETE', '/v1/allocation_groups/trio')
        self.assertEqual(204, status)
        self.assertEqual((0, 0, 0), self.rows())
        self.assertEqual(404, self.call('GET', '/v1/allocation_groups/%s'
                                        % group['uuid'])[0])

    def test_list_of_several_groups(self):
        for name in ('n1', 'n2', 'n3', 'n4'):
            utils.make_available_node(self.context, name=name)
        single = self.allocate(candidate_nodes=['n4'])
        active = self.created({_uuid(): {'resource_class': 'gold'}
                               for _ in range(2)}, name='pair')
        failed = self.created({_uuid(): {'resource_class': 'gold',
                                         'traits': ['CUSTOM_MISSING']}})
        swap = self.created({single['uuid']: {},
                             _uuid(): {'resource_class': 'gold'}})
        self.assertEqual(['active', 'error', 'active'],
                         [g['state'] for g in (active, failed, swap)])
        # The page reads the members of all its groups at once: each
        # group is listed exactly as it is shown alone (members, their
        # nodes and states), whatever page it is on.
        shown = {}
        for group in (active, failed, swap):
            status, shown[group['uuid']] = self.call(
                'GET', '/v1/allocation_groups/%s' % group['uuid'])
            self.assertEqual(200, status)
        status, page = self.call('GET', '/v1/allocation_groups')
        self.assertEqual(200, status, page)
        self.assertEqual([shown[u] for u in (active['uuid'],
                                             failed['uuid'],
                                             swap['uuid'])],
                         page['allocation_groups'])
        status, page = self.call('GET', '/v1/allocation_groups?limit=2')
        self.assertEqual([shown[active['uuid']], shown[failed['uuid']]],
                         page['allocation_groups'])
        status, page = self.call('GET', '/v1/allocation_groups?marker=%s'
                                 % failed['uuid'])
        self.assertEqual([shown[swap['uuid']]], page['allocation_groups'])
        status, page = self.call('GET',
                                 '/v1/allocation_groups?state=error')
        self.assertEqual([shown[failed['uuid']]], page['allocation_groups'])
        status, page = self.call('GET', '/v1/allocation_groups'
                                 '?fields=uuid,members&state=active')
        self.assertEqual(
            [{k: shown[u][k] for k in ('uuid', 'members', 'links')}
             for u in (active['uuid'], swap['uuid'])],
            page['allocation_groups'])
        # Each group's members are its own, with their nodes.
        self.assertEqual(2, len({m['node_uuid']
                                 for m in shown[active['uuid']]['members']}))
        self.assertEqual([None], [m['node_uuid'] for m in
                                  shown[failed['uuid']]['members']])
        self.assertEqual({'release': None, 'new': 'active'},
                         {m['kind']: m['state']
                          for m in shown[swap['uuid']]['members']})

    def test_member_of_allocating_group_cannot_be_deleted(self):
        # A group no live conductor works on stays allocating.
        group = group_obj.AllocationGroup(
            self.context, uuid=_uuid(), state=states.GROUP_ALLOCATING,
            conductor_affinity=None, spec={})
        member = _uuid()
        group.spec = {member: {'kind': states.MEMBER_NEW}}
        group.create([dict(uuid=member, resource_class='gold',
                           state=states.ALLOCATING, traits=[],
                           candidate_nodes=[], extra={})], [])
        status, doc = self.call('DELETE', '/v1/allocations/%s' % member,
                                extension=None)
        self.assertEqual(409, status, doc)
        self.assertIn(group.uuid, self.error(status, doc))
        # Nor released by another group.
        status, doc = self.create({member: {}})
        self.assertEqual(409, status, doc)
        self.assertIn(group.uuid, self.error(status, doc))
        # Visible as allocating to unmodified clients.
        status, allocation = self.call('GET', '/v1/allocations/%s' % member,
                                       extension=None)
        self.assertEqual('allocating', allocation['state'])
        # The group itself may be deleted.
        self.assertEqual(204, self.call('DELETE', '/v1/allocation_groups/%s'
                                        % group.uuid)[0])
        self.assertEqual((0, 0, 0), self.rows())

    def test_gated_by_the_extension_version(self):
        for extension in (None, 'ironic-alloc 1.2'):
            status, doc = self.call('GET', '/v1/allocation_groups',
                                    extension=extension)
            self.assertIn(status, (400, 404), doc)
        status, doc = self.call('GET', '/v1/allocation_groups',
                                extension='ironic-alloc 1.2')
        self.assertEqual(400, status)
        self.assertIn('ironic-alloc 1.3', self.error(status, doc))


class TestGroupLeases(_GroupTestCase):
    """A group's lease is its members': set at creation and by PATCH of
    the group, released as a whole, cleared by a member's deploy."""

    def member_leases(self, group):
        return {dbapi.get_allocation_by_uuid(m['uuid']).expires_at
                for m in group['members']}

    def group_row(self, group):
        return dbapi.get_allocation_group(uuid=group['uuid'])

    def test_expires_as_a_whole(self):
        CONF.set_override('expiry_interval', 1, group='reservation')
        self.addCleanup(CONF.clear_override, 'expiry_interval',
                        group='reservation')
        for _ in range(3):
            utils.make_available_node(self.context)
        group = self.created({_uuid(): {'resource_class': 'gold'}
                              for _ in range(2)}, name='leased', ttl=2)
        self.assertEqual('active', group['state'], group)
        self.assertIsNotNone(group['expires_at'])
        self.assertEqual({self.group_row(group).expires_at},
                         self.member_leases(group))
        # A member's lease is the group's: neither set nor removed alone.
        for op in ({'op': 'add', 'path': '/ttl', 'value': 60},
                   {'op': 'remove', 'path': '/expires_at'}):
            status, doc = self.call('PATCH', '/v1/allocations/%s'
                                    % group['members'][0]['uuid'], [op])
            self.assertEqual(400, status, doc)
            self.assertIn('lease of its own', self.error(status, doc))
        deadline = time.monotonic() + 30
        while self.call('GET', '/v1/allocation_groups/leased')[0] != 404:
            # Never a member without the other: all or none.
            self.assertIn(self.rows(), [(2, 1, 2), (0, 0, 0)])
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.1)
        self.assertEqual((0, 0, 0), self.rows())
        status, page = self.call('GET', '/v1/nodes?fields=allocation_uuid',
                                 extension=None)
        self.assertEqual({None}, {n['allocation_uuid']
                                  for n in page['nodes']})

    def test_members_never_expire_alone(self):
        for _ in range(2):
            utils.make_available_node(self.context)
        group = self.created({_uuid(): {'resource_class': 'gold'}
                              for _ in range(2)}, ttl=600)
        row = self.group_row(group)
        member = dbapi.get_allocation_by_uuid(group['members'][0]['uuid'])
        node = dbapi.get_node_by_id(member.node_id)
        past = dbapi.get_database_time() - datetime.timedelta(seconds=5)
        # A member whose own row says its lease ended stays.
        dbapi.update_allocation(member.id, {'expires_at': past})
        self.assertNotIn(member.id, dbapi.get_expired_holds(100))
        self.assertIsNone(dbapi.release_expired_hold(member.id))
        self.assertEqual((2, 1, 2), self.rows())
        # The group's ended lease with a node locked by a conductor: the
        # group stays whole.
        with sqla_api.get_engine().begin() as conn:
            conn.execute(models.AllocationGroup.__table__.update().values(
                expires_at=past))
        dbapi.reserve_node('busy-conductor', node.id)
        self.assertEqual([], dbapi.get_expired_groups(100))
        self.assertIsNone(dbapi.release_expired_group(row.id))
        self.assertEqual((2, 1, 2), self.rows())
        dbapi.release_node('busy-conductor', node.id)
        self.assertEqual([row.id], dbapi.get_expired_groups(100))
        # Several conductors: one releases it, the others nothing.
        released = dbapi.release_expired_group(row.id)
        self.assertEqual(sorted(m['uuid'] for m in group['members']),
                         sorted(m.uuid for m in released.released))
        self.assertIsNone(dbapi.release_expired_group(row.id))
        self.assertEqual((0, 0, 0), self.rows())

    def test_deploy_clears_the_group_lease(self):
        for _ in range(2):
            utils.make_available_node(self.context)
        group = self.created({_uuid(): {'resource_class': 'gold'}
                              for _ in range(2)}, ttl=600)
        node = group['members'][0]['node_uuid']
        status, doc = self.call('PUT', '/v1/nodes/%s/states/provision'
                                % node, {'target': 'active'},
                                extension=None)
        self.assertEqual(202, status, doc)
        deadline = time.monotonic() + 30
        while True:
            status, shown = self.call('GET', '/v1/nodes/%s' % node,
                                      extension=None)
            if shown['provision_state'] == states.ACTIVE:
                break
            self.assertLess(time.monotonic(), deadline, shown)
            time.sleep(0.05)
        status, shown = self.call('GET', '/v1/allocation_groups/%s'
                                  % group['uuid'])
        self.assertIsNone(shown['expires_at'])
        self.assertEqual({None}, self.member_leases(group))
        # A deployed member's group takes no new lease.
        status, doc = self.call('PATCH', '/v1/allocation_groups/%s'
                                % group['uuid'], [
                                    {'op': 'add', 'path': '/ttl',
                                     'value': 60}])
        self.assertEqual(409, status, doc)
        self.assertIn('Cannot set a lease on allocation group %s: its node '
                      '%s is in provision state "active"'
                      % (group['uuid'], node), self.error(status, doc))
        self.assertIsNone(self.group_row(group).expires_at)
        # An ended lease left on such a group (written before this rule)
        # never releases it, in maintenance too: the expiry removes it.
        past = dbapi.get_database_time() - datetime.timedelta(seconds=5)
        with sqla_api.get_engine().begin() as conn:
            for table in (models.AllocationGroup.__table__,
                          models.Allocation.__table__):
                conn.execute(table.update().values(expires_at=past))
        dbapi.update_node(dbapi.get_node_by_uuid(node).id,
                          {'maintenance': True})
        expiry = self.api.conductor.service.lease_expiry
        self.assertEqual(0, expiry.release_expired())
        self.assertEqual((2, 1, 2), self.rows())
        self.assertIsNone(self.group_row(group).expires_at)
        self.assertEqual({None}, self.member_leases(group))

    def test_patch_of_the_lease(self):
        utils.make_available_node(self.context)
        group = self.created({_uuid(): {'resource_class': 'gold'}},
                             name='p1')
        self.assertIsNone(group['expires_at'])
        url = '/v1/allocation_groups/p1'
        status, doc = self.call('PATCH', url, [
            {'op': 'add', 'path': '/ttl', 'value': 120}])
        self.assertEqual(200, status, doc)
        self.assertIsNotNone(doc['expires_at'])
        self.assertEqual({self.group_row(group).expires_at},
                         self.member_leases(group))
        end = '2999-01-01T00:00:00'
        for ops, message in (
                ([{'op': 'replace', 'path': '/name', 'value': 'x'}],
                 'only /expires_at, /ttl may be changed'),
                ([{'op': 'remove', 'path': '/ttl'}], 'write-only'),
                ([{'op': 'copy', 'path': '/ttl', 'from': '/x'}],
                 'replaced or removed'),
                ([{'op': 'replace', 'path': '/ttl'}], 'value is required'),
                ([{'op': 'replace', 'path': '/ttl', 'value': 0}],
                 'Invalid ttl'),
                ([{'op': 'replace', 'path': '/expires_at', 'value': end}],
                 'max_ttl'),
                ([], 'non-empty list'),
                ({'op': 'remove'}, 'non-empty list'),
                (['x'], 'an object')):
            status, doc = self.call('PATCH', url, ops)
            self.assertEqual(400, status, (ops, doc))
            self.assertIn(message, self.error(status, doc))
        status, doc = self.call('PATCH', url, [
            {'op': 'remove', 'path': '/expires_at'}])
        self.assertEqual(200, status, doc)
        self.assertIsNone(doc['expires_at'])
        self.assertEqual({None}, self.member_leases(group))
        status, doc = self.call('POST', '/v1/allocation_groups', {
            'members': {_uuid(): {'resource_class': 'gold'}},
            'ttl': 1, 'expires_at': end})
        self.assertEqual(400, status, doc)
        self.assertIn('not both', self.error(status, doc))
        self.assertEqual(404, self.call('PATCH', '/v1/allocation_groups/'
                                        'nope', [{'op': 'remove',
                                                  'path': '/expires_at'}])[0])


class TestBadInput(_GroupTestCase):

    def setUp(self):
        super().setUp()
        self.n1 = utils.make_available_node(self.context, name='n1')
        self.n2 = utils.make_available_node(self.context, name='n2')
        self.held = self.allocate(name='held', candidate_nodes=['n1'])

    def assertRefused(self, body, *words, status=400):
        before = self.rows()
        code, doc = self.call('POST', '/v1/allocation_groups', body)
        self.assertEqual(status, code, doc)
        message = self.error(code, doc)
        for word in words:
            self.assertIn(word, message)
        self.assertEqual(before, self.rows())
        return message

    def test_bad_bodies(self):
        new = _uuid()
        self.assertRefused({'members': {}}, 'non-empty')
        self.assertRefused({}, 'non-empty')
        self.assertRefused([], 'JSON object')
        self.assertRefused({'members': [new]}, 'non-empty')
        self.assertRefused({'members': {new: {'resource_class': 'gold'}},
                            'name': 'x' * 300}, 'name')
        self.assertRefused({'members': {new: {'resource_class': 'gold',
                                              'traits': 'CUSTOM_A'}}}, new)
        self.assertRefused({'members': {new: {'resource_class': ['gold']}}},
                           new)
        self.assertRefused({'members': {new: {'handover_from': 5,
                                              'node': 'n1'}}}, new)
        self.assertRefused({'members': {new: {'resource_class': 'gold'}},
                            'color': 'red'}, 'color')
        self.assertRefused({'members': {new: {'resource_class': 'gold'}},
                            'ttl': 0}, 'Invalid ttl')
        self.assertRefused({'members': {new: {'resource_class': 'gold'}},
                            'expires_at': 'soon'}, 'Invalid expires_at')
        self.assertRefused({'members': {'nope': {}}}, 'nope')
        self.assertRefused({'members': {new: 'x'}}, new)
        self.assertRefused({'members': {new: {}}}, new, 'release')
        self.assertRefused({'members': {new: {'traits': ['CUSTOM_A']}}},
                           new, 'resource_class')
        self.assertRefused({'members': {new: {'resource_class': 'gold',
                                              'uuid': new}}}, new, 'uuid')
        self.assertRefused({'members': {new: {'resource_class': 'gold',
                                              'ttl': 5}}}, new)
        self.assertRefused({'members': {new: {'resource_class': 'gold',
                                              'colour': 1}}}, new)
        self.assertRefused({'members': {new: {'resource_class': 'gold',
                                              'traits': ['bad trait']}}},
                           new)
        self.assertRefused({'members': {new: {
            'resource_class': 'gold',
            'candidate_nodes': ['n2', 'n2']}}}, new, 'more than once')
        self.assertRefused({'members': {new: {
            'resource_class': 'gold', 'candidate_nodes': ['ghost']}}},
            new, 'ghost')

    def test_refused_while_pinned_to_a_release_without_groups(self):
        self.config(pin_release_version='2026.2')
        self.assertRefused({'members': {_uuid(): {'resource_class': 'gold'}}},
                           'pin_release_version')

    def test_too_many_members(self):
        self.config(max_group_size=2, group='allocation')
        self.assertRefused({'members': {_uuid(): {'resource_class': 'gold'}
                                        for _ in range(3)}},
                           'max_group_size')

    def test_existing_uuid_that_is_not_a_release(self):
        self.assertRefused({'members': {self.held['uuid']: {
            'resource_class': 'gold'}}}, self.held['uuid'], 'exists')

    def test_hand_overs(self):
        new, other = _uuid(), _uuid()
        # The node is not held by the allocation named.
        self.assertRefused({'members': {new: {
            'handover_from': self.held['uuid'], 'node': 'n2'}}},
            new, 'not held by')
        self.assertRefused({'members': {new: {
            'handover_from': _uuid(), 'node': 'n1'}}}, new, 'cannot be found')
        self.assertRefused({'members': {new: {
            'handover_from': self.held['uuid'], 'node': 'n1',
            'resource_class': 'gold'}}}, new, 'resource_class')
        # The same node twice, the same allocation ended twice.
        message = self.assertRefused({'members': {
            new: {'handover_from': self.held['uuid'], 'node': 'n1'},
            other: {'handover_from': 'held', 'node': 'n1'}}})
        self.assertRegex(message, 'twice|also handed over')
        self.assertRefused({'members': {
            new: {'handover_from': self.held['uuid'], 'node': 'n1'},
            self.held['uuid']: {}}}, 'twice')

    def test_same_name_twice(self):
        a, b = _uuid(), _uuid()
        self.assertRefused({'members': {
            a: {'resource_class': 'gold', 'name': 'x'},
            b: {'resource_class': 'gold', 'name': 'x'}}}, 'also given')


class TestGroupRaces(_GroupTestCase):

    def test_groups_and_single_allocations_on_scarce_nodes(self):
        for _ in range(6):
            utils.make_available_node(self.context)
        results = []
        errors = []

        def make_group():
            try:
                status, group = self.clone_call(
                    'POST', '/v1/allocation_groups',
                    {'members': {_uuid(): {'resource_class': 'gold'}
                                 for _ in range(3)}})
                results.append(('group', status, group['uuid']))
            except Exception as exc:  # noqa: B902 (reported below)
                errors.append(exc)

        def make_single():
            try:
                status, allocation = self.clone_call(
                    'POST', '/v1/allocations', {'resource_class': 'gold'},
                    extension=None)
                results.append(('single', status, allocation['uuid']))
            except Exception as exc:  # noqa: B902 (reported below)
                errors.append(exc)

        threads = ([threading.Thread(target=make_group) for _ in range(4)]
                   + [threading.Thread(target=make_single)
                      for _ in range(3)])
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual([], errors)
        self.assertEqual({201}, {status for _k, status, _u in results})
        held_by_groups = 0
        for kind, _status, uuid in results:
            if kind != 'group':
                continue
            group = self.wait(uuid)
            members = {m['state'] for m in group['members']}
            nodes = [m['node_uuid'] for m in group['members']]
            if group['state'] == 'active':
                self.assertEqual({'active'}, members)
                self.assertNotIn(None, nodes)
                held_by_groups += 3
            else:
                self.assertEqual('error', group['state'])
                self.assertEqual({'error'}, members)
                self.assertEqual({None}, set(nodes))
        utils.wait_for_allocations(self.context, [
            a.id for a in allocation_obj.Allocation.list(self.context)])
        self.assertLessEqual(held_by_groups, 6)
        self.check_consistent()

    def clone_call(self, method, url, doc=None, extension=EXTENSION):
        """call() on a connection of the thread's own."""
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'Content-Type': 'application/json',
                   'Accept': 'application/json'}
        if extension:
            headers['OpenStack-API-Version'] = extension
        conn = http.client.HTTPConnection(self.api.server.host,
                                          self.api.server.port, timeout=60)
        try:
            conn.request(method, url, body=json.dumps(doc), headers=headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()
