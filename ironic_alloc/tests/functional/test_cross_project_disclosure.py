"""What a project learns of the nodes and holds it cannot see, per
persona: every message that names a node or a hold (a failed
allocation's last_error and explanation, the explain endpoint, the 409
of a UUID or instance taken, the deploy guard and the instance guard of
a reserved node).  The rule is in doc/source/admin/authorization.rst
("What a project learns of what it cannot see").

Same set-up as the policy matrix (test_policy_matrix): the real app
behind the stand-in for keystonemiddleware's token validation, and a
real conductor.
"""

import json
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import states
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc import objects
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_policy_matrix as matrix

OWNER, LESSEE, OTHER = matrix.OWNER, matrix.LESSEE, matrix.OTHER

# The extension version that shows a failed allocation's explanation and
# serves POST /v1/allocations/explain.
MATCHING_EXTENSION = 'ironic-alloc 1.1'


def _fault(response):
    return json.loads(response.json['error_message'])['faultstring']


class FailedAllocationTextTestCase(matrix.PolicyAppTestCase):
    """A project's failed allocation (or allocation group) and its
    explanation say the same whatever other projects have of the resource
    class: no node, an available one, one in maintenance, a deployed
    one."""

    def extended(self, persona, method, path, body=None):
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'OpenStack-API-Version': MATCHING_EXTENSION,
                   'X-Auth-Token': persona}
        if body is not None:
            headers['Content-Type'] = 'application/json'
            body = json.dumps(body).encode()
        return self.app.request(path, method=method, headers=headers,
                                body=body, expect_errors=True)

    def failure(self, persona, **body):
        """(last_error at Ironic's newest microversion, explanation) of
        a new allocation of class gold that fails."""
        body.setdefault('resource_class', 'gold')
        response = self.request(persona, 'POST', '/v1/allocations', body)
        self.assertEqual(201, response.status_int, response.text)
        allocation = objects.Allocation.get_by_uuid(self.context,
                                                    response.json['uuid'])
        allocation = utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state,
                         persona)
        plain = self.request(persona, 'GET',
                             '/v1/allocations/' + allocation.uuid)
        self.assertEqual(200, plain.status_int, plain.text)
        self.assertNotIn('explanation', plain.json)
        shown = self.extended(persona, 'GET',
                              '/v1/allocations/' + allocation.uuid)
        self.assertEqual(200, shown.status_int, shown.text)
        self.assertEqual(plain.json['last_error'], shown.json['last_error'])
        return shown.json['last_error'], shown.json['explanation']

    def group_failure(self, persona):
        """(last_error, explanation) of a new allocation group of one
        member of class gold that fails."""
        member = uuidutils.generate_uuid()
        response = self.request(persona, 'POST', '/v1/allocation_groups',
                                {'members': {member: {
                                    'resource_class': 'gold'}}})
        self.assertEqual(201, response.status_int, response.text)
        path = '/v1/allocation_groups/' + response.json['uuid']
        deadline = time.monotonic() + 60
        while True:
            shown = self.request(persona, 'GET', path)
            self.assertEqual(200, shown.status_int, shown.text)
            if shown.json['state'] != states.GROUP_ALLOCATING:
                break
            self.assertLess(time.monotonic(), deadline)
            time.sleep(0.05)
        self.assertEqual(states.GROUP_ERROR, shown.json['state'])
        # NOTE: the member's UUID is new for every group.
        return [json.loads(json.dumps(value).replace(member, 'MEMBER'))
                for value in (shown.json['last_error'],
                              shown.json['explanation'])]

    def explained(self, persona):
        response = self.extended(persona, 'POST', '/v1/allocations/explain',
                                 {'resource_class': 'gold'})
        self.assertEqual(200, response.status_int, response.text)
        return response.json

    def test_same_text_whatever_other_projects_have(self):
        # LESSEE has no node of the class; OWNER has one, in maintenance,
        # which explains its failures by its own node.
        utils.make_available_node(self.context, name='lessee-silver',
                                  owner=LESSEE, resource_class='silver')
        utils.make_available_node(self.context, name='owner-gold',
                                  owner=OWNER, maintenance=True,
                                  resource_class='gold')
        projects = ('lessee_member', 'owner_member')
        seen = {persona: [] for persona in projects}
        seen['system, owner LESSEE'] = []
        system = {}

        def look(world, system_too=False):
            for persona in projects:
                seen[persona].append(
                    (world, self.failure(persona), self.explained(persona),
                     self.group_failure(persona)))
            seen['system, owner LESSEE'].append(
                (world, self.failure('system_member', owner=LESSEE), None,
                 None))
            if system_too:
                system[world] = self.failure('system_member')[0]

        look('no other node', system_too=True)
        foreign = utils.make_available_node(
            self.context, name='foreign-gold', owner=OTHER,
            resource_class='gold')
        look('another project\'s available node')
        foreign.maintenance = True
        foreign.save()
        look('another project\'s node in maintenance', system_too=True)
        foreign.maintenance = False
        foreign.provision_state = states.ACTIVE
        foreign.instance_uuid = uuidutils.generate_uuid()
        foreign.save()
        look('another project\'s deployed node')

        for persona, views in seen.items():
            first = views[0]
            for view in views[1:]:
                self.assertEqual(first[1:], view[1:],
                                 '%s: "%s" against "%s"'
                                 % (persona, first[0], view[0]))
            for _world, (last_error, explanation), funnel, group in views:
                text = json.dumps([last_error, explanation, funnel, group])
                self.assertNotIn(foreign.uuid, text, persona)
                self.assertNotIn('foreign-gold', text, persona)
        lessee_text = seen['lessee_member'][0][1][0]
        self.assertIn('no node owned or leased by "%s" has resource class '
                      '"gold"' % LESSEE, lessee_text)
        self.assertEqual(lessee_text, seen['system, owner LESSEE'][0][1][0])
        self.assertIn('is available', seen['owner_member'][0][1][0])
        group_error, group_explanation = seen['lessee_member'][0][3]
        self.assertIn('Member MEMBER could not be given a node: no node '
                      'matches it', group_error)
        self.assertEqual('MEMBER', group_explanation['member'])
        # A system caller's allocation without an owner is explained over
        # every node (only system callers see it).
        self.assertIn('Funnel: 1 node of resource class "gold": 1 in '
                      'maintenance', system['no other node'])
        self.assertIn('Funnel: 2 nodes of resource class "gold": 2 in '
                      'maintenance',
                      system['another project\'s node in maintenance'])


class TakenUuidTestCase(matrix.PolicyAppTestCase):
    """A 409 for a UUID or an instance already taken names no node and no
    hold: Ironic's "already exists"."""

    def setUp(self):
        super().setUp()
        # OTHER's allocation on OTHER's node, and another of OTHER's
        # nodes with an instance and no allocation.
        self.held = utils.make_available_node(
            self.context, name='held-by-other', owner=OTHER)
        self.alloc = utils.make_allocation(
            self.context, self.conductor_id, owner=OTHER,
            state=states.ALLOCATION_ACTIVE, node_id=self.held.id)
        self.held.allocation_id = self.alloc.id
        self.held.instance_uuid = self.alloc.uuid
        self.held.save()
        self.instance = uuidutils.generate_uuid()
        self.deployed = utils.make_node(
            self.context, name='deployed-by-other', owner=OTHER,
            provision_state=states.ACTIVE, instance_uuid=self.instance)
        self.leased = utils.make_available_node(
            self.context, name='leased-to-lessee', owner=OWNER,
            lessee=LESSEE)
        self.hidden = [self.held.uuid, 'held-by-other', self.deployed.uuid,
                       'deployed-by-other']

    def assertConflictNamesNothing(self, response, message):
        self.assertEqual(409, response.status_int, response.text)
        self.assertEqual(message, _fault(response))
        for hidden in self.hidden:
            self.assertNotIn(hidden, response.text)

    def test_allocation_uuid(self):
        taken = 'Allocation with UUID %s already exists.' % self.alloc.uuid
        for persona in ('lessee_member', 'owner_member', 'system_member'):
            response = self.request(persona, 'POST', '/v1/allocations', {
                'uuid': self.alloc.uuid, 'resource_class': 'gold'})
            self.assertConflictNamesNothing(response, taken)
            # A node's instance that is no allocation's UUID.
            response = self.request(persona, 'POST', '/v1/allocations', {
                'uuid': self.instance, 'resource_class': 'gold'})
            self.assertConflictNamesNothing(
                response, 'Instance %s is already associated with a node.'
                % self.instance)
        self.assertEqual([self.alloc.uuid], [
            a.uuid for a in objects.Allocation.list(self.context)])

    def test_group_member_uuid(self):
        taken = 'Allocation with UUID %s already exists.' % self.alloc.uuid
        for persona in ('lessee_member', 'owner_member'):
            response = self.request(persona, 'POST', '/v1/allocation_groups',
                                    {'members': {self.alloc.uuid: {
                                        'resource_class': 'gold'}}})
            self.assertConflictNamesNothing(response, taken)
            response = self.request(persona, 'POST', '/v1/allocation_groups',
                                    {'members': {self.instance: {
                                        'resource_class': 'gold'}}})
            self.assertConflictNamesNothing(
                response, 'Instance %s is already associated with a node.'
                % self.instance)
        self.assertEqual([], objects.AllocationGroup.list(self.context))

    def test_reservation_instance(self):
        for persona in ('lessee_member', 'owner_member', 'system_member'):
            for instance in (self.alloc.uuid, self.instance):
                response = self.request(persona, 'POST', '/v1/reservations',
                                        {'instance_uuid': instance,
                                         'node_uuid': [self.leased.uuid]})
                self.assertConflictNamesNothing(
                    response, 'Instance %s is already associated with a '
                    'node.' % instance)
                self.assertEqual(
                    [{'node_uuid': self.leased.uuid,
                      'reason': 'the instance is already on another node'}],
                    json.loads(response.json['error_message'])['reasons'])
        self.assertEqual(states.AVAILABLE, objects.Node.get_by_uuid(
            self.context, self.leased.uuid).provision_state)
        self.assertIsNone(objects.Node.get_by_uuid(
            self.context, self.leased.uuid).allocation_id)


class ReservedNodeGuardTestCase(matrix.PolicyAppTestCase):
    """The 409s of a reserved node name its reservation only to those who
    may see it (its project, system readers): its UUID is what a deploy
    of the node must name."""

    def setUp(self):
        super().setUp()
        self.node = utils.make_available_node(
            self.context, name='reserved', owner=OWNER, lessee=LESSEE)
        response = self.request('lessee_member', 'POST', '/v1/reservations',
                                {'instance_uuid': uuidutils.generate_uuid(),
                                 'node_uuid': [self.node.uuid]})
        self.assertEqual(201, response.status_int, response.text)
        self.reservation = response.json['reservation']['uuid']

    def deploy(self, persona):
        return self.request(persona, 'PUT',
                            '/v1/nodes/reserved/states/provision',
                            {'target': 'active'})

    def assertNamed(self, response, named):
        self.assertEqual(409, response.status_int, response.text)
        if named:
            self.assertIn('held by reservation %s' % self.reservation,
                          _fault(response))
        else:
            self.assertIn('Node %s is reserved' % self.node.uuid,
                          _fault(response))
            self.assertNotIn(self.reservation, response.text)

    def test_deploy_guard(self):
        # The node's owner deploys it but does not see the lessee's
        # reservation; the lessee's admin and system members do.
        for persona, named in (('owner_member', False),
                               ('owner_admin', False),
                               ('lessee_admin', True),
                               ('system_member', True)):
            response = self.deploy(persona)
            self.assertNamed(response, named)
            self.assertIn('it has none', _fault(response))
        self.assertEqual(404, self.deploy('other_admin').status_int)
        # A guess is refused without the answer.
        guess = uuidutils.generate_uuid()
        response = self.request('owner_member', 'PATCH', '/v1/nodes/reserved',
                                [{'op': 'add',
                                  'path': '/instance_info/reservation_uuid',
                                  'value': guess}])
        self.assertEqual(200, response.status_int, response.text)
        response = self.deploy('owner_member')
        self.assertNamed(response, False)
        self.assertIn(guess, _fault(response))
        self.assertNamed(self.deploy('lessee_admin'), True)
        node = objects.Node.get_by_uuid(self.context, self.node.uuid)
        self.assertEqual(states.AVAILABLE, node.provision_state)

    def test_instance_guard(self):
        for op in ('remove', 'replace'):
            patch = [{'op': op, 'path': '/instance_uuid'}]
            if op == 'replace':
                patch[0]['value'] = uuidutils.generate_uuid()
            for persona, named in (('owner_member', False),
                                   ('system_member', True)):
                response = self.request(persona, 'PATCH',
                                        '/v1/nodes/reserved', patch)
                self.assertNamed(response, named)
                self.assertIn('needs the reservation deleted first',
                              _fault(response))


class ReservationKeyTestCase(matrix.PolicyAppTestCase):
    """A reserved node's instance_info.reservation_uuid, once its project
    wrote it there, is shown only to those who may see the reservation
    (its project, system readers): to the node's owner it is "******",
    wherever the node is shown, and the owner neither writes the mask over
    it nor deploys with it."""

    def setUp(self):
        super().setUp()
        self.node = utils.make_available_node(
            self.context, name='reserved', owner=OWNER, lessee=LESSEE)
        response = self.request('lessee_member', 'POST', '/v1/reservations',
                                {'instance_uuid': uuidutils.generate_uuid(),
                                 'node_uuid': [self.node.uuid]})
        self.assertEqual(201, response.status_int, response.text)
        self.reservation = response.json['reservation']['uuid']
        # NOTE: a lessee's admin may change instance_info, as in Ironic.
        response = self.request('lessee_admin', 'PATCH',
                                '/v1/nodes/reserved',
                                [{'op': 'add',
                                  'path': '/instance_info/reservation_uuid',
                                  'value': self.reservation}])
        self.assertEqual(200, response.status_int, response.text)
        # The same UUID as the lessee wrote it is shown to the lessee.
        self.assertEqual(self.reservation,
                         response.json['instance_info']['reservation_uuid'])

    def stored_key(self):
        node = objects.Node.get_by_uuid(self.context, self.node.uuid)
        return node.instance_info.get('reservation_uuid')

    def shown(self, persona):
        """Every response showing the node to ``persona``: (what, its
        instance_info, the response text)."""
        responses = []
        for what, path in (
                ('node', '/v1/nodes/reserved'),
                ('fields', '/v1/nodes/reserved?fields=uuid,instance_info'),
                ('detail', '/v1/nodes/detail'),
                ('list fields', '/v1/nodes?fields=uuid,instance_info')):
            response = self.request(persona, 'GET', path)
            self.assertEqual(200, response.status_int, response.text)
            body = response.json
            if 'nodes' in body:
                body, = [n for n in body['nodes']
                         if n['uuid'] == self.node.uuid]
            responses.append((what, body['instance_info'], response.text))
        response = self.request(persona, 'PATCH', '/v1/nodes/reserved',
                                [{'op': 'add', 'path': '/extra/seen',
                                  'value': persona}])
        if response.status_int != 403:
            self.assertEqual(200, response.status_int, response.text)
            responses.append(('patch', response.json['instance_info'],
                              response.text))
        return responses

    def test_shown_only_to_who_sees_the_reservation(self):
        # A second node of the owner names no reservation: nothing hidden.
        guessed = uuidutils.generate_uuid()
        utils.make_available_node(
            self.context, name='guess', owner=OWNER,
            instance_info={'reservation_uuid': guessed})
        for persona in ('owner_member', 'owner_admin', 'owner_reader'):
            for what, info, text in self.shown(persona):
                self.assertEqual('******', info['reservation_uuid'],
                                 (persona, what))
                self.assertNotIn(self.reservation, text, (persona, what))
            guess = self.request(persona, 'GET', '/v1/nodes/guess')
            self.assertEqual(guessed,
                             guess.json['instance_info']['reservation_uuid'])
        for persona in ('lessee_member', 'lessee_reader', 'system_reader',
                        'system_admin'):
            for what, info, text in self.shown(persona):
                self.assertEqual(self.reservation, info['reservation_uuid'],
                                 (persona, what))
        self.assertEqual(self.reservation, self.stored_key())

    def test_owner_patch_never_clobbers_it(self):
        def patch(*ops):
            response = self.request('owner_member', 'PATCH',
                                    '/v1/nodes/reserved', list(ops))
            self.assertEqual(200, response.status_int, response.text)
            return response.json

        patch({'op': 'add', 'path': '/instance_info/image_source',
               'value': 'http://images.example/one'},
              {'op': 'replace', 'path': '/description', 'value': 'owned'})
        self.assertEqual(self.reservation, self.stored_key())
        # The instance_info the owner is shown, sent back whole.
        shown = self.request('owner_member', 'GET',
                             '/v1/nodes/reserved').json['instance_info']
        self.assertEqual('******', shown['reservation_uuid'])
        shown['image_source'] = 'http://images.example/two'
        patch({'op': 'replace', 'path': '/instance_info', 'value': shown})
        self.assertEqual(self.reservation, self.stored_key())
        node = objects.Node.get_by_uuid(self.context, self.node.uuid)
        self.assertEqual('http://images.example/two',
                         node.instance_info['image_source'])
        # The reservation's project still deploys with it.
        response = self.request('lessee_admin', 'PUT',
                                '/v1/nodes/reserved/states/provision',
                                {'target': 'active'})
        self.assertEqual(202, response.status_int, response.text)

    def test_owner_cannot_deploy_with_it(self):
        for persona in ('owner_member', 'owner_admin'):
            response = self.request(persona, 'PUT',
                                    '/v1/nodes/reserved/states/provision',
                                    {'target': 'active'})
            self.assertEqual(409, response.status_int, response.text)
            self.assertIn('Node %s is reserved' % self.node.uuid,
                          _fault(response))
            self.assertNotIn(self.reservation, response.text)
        # The mask written back is the real value again: still refused.
        response = self.request('owner_member', 'PATCH', '/v1/nodes/reserved',
                                [{'op': 'replace',
                                  'path': '/instance_info/reservation_uuid',
                                  'value': '******'}])
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(self.reservation, self.stored_key())
        response = self.request('owner_member', 'PUT',
                                '/v1/nodes/reserved/states/provision',
                                {'target': 'active'})
        self.assertEqual(409, response.status_int, response.text)
        self.assertNotIn(self.reservation, response.text)
        node = objects.Node.get_by_uuid(self.context, self.node.uuid)
        self.assertEqual(states.AVAILABLE, node.provision_state)
        # A system member may.
        response = self.request('system_member', 'PUT',
                                '/v1/nodes/reserved/states/provision',
                                {'target': 'active'})
        self.assertEqual(202, response.status_int, response.text)

    def statements(self, persona, path):
        """The SQL statements of one request (the count is what
        matters)."""
        statements = []

        def count(conn, cursor, statement, *args):
            if not statement.startswith(('BEGIN', 'SAVEPOINT', 'RELEASE')):
                statements.append(statement)

        engine = sqla_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', count)
        try:
            response = self.request(persona, 'GET', path)
        finally:
            sa.event.remove(engine, 'before_cursor_execute', count)
        self.assertEqual(200, response.status_int, response.text)
        return response, statements

    def test_one_read_for_a_page(self):
        _, one = self.statements('owner_member', '/v1/nodes/detail')
        for index in range(3):
            node = utils.make_available_node(
                self.context, name='reserved-%d' % index, owner=OWNER,
                lessee=LESSEE)
            response = self.request(
                'lessee_member', 'POST', '/v1/reservations',
                {'instance_uuid': uuidutils.generate_uuid(),
                 'node_uuid': [node.uuid]})
            self.assertEqual(201, response.status_int, response.text)
            sqla_api.get_backend().update_node(node.id, {'instance_info': {
                'reservation_uuid': response.json['reservation']['uuid']}})
        response, four = self.statements('owner_member', '/v1/nodes/detail')
        self.assertEqual(['******'] * 4,
                         [n['instance_info']['reservation_uuid']
                          for n in response.json['nodes']])
        self.assertEqual(len(one), len(four), '\n'.join(four))
        # A caller who sees every reservation reads none.
        _, system = self.statements('system_reader', '/v1/nodes/detail')
        self.assertEqual(len(one) - 1, len(system), '\n'.join(system))
