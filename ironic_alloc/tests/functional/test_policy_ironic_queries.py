"""Two corners of Ironic's API a project caller meets: an allocation
with an empty ``owner`` and the node list's ``project`` filter.

Same set-up as the matrix (test_policy_matrix): the real app behind the
stand-in for keystonemiddleware's token validation, a real conductor.
"""

import json

from oslo_utils import uuidutils

from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_policy_matrix as matrix

OWNER, LESSEE, OTHER = matrix.OWNER, matrix.LESSEE, matrix.OTHER


def _fault(response):
    return json.loads(json.loads(response.text)['error_message'])[
        'faultstring']


class EmptyOwnerTestCase(matrix.PolicyAppTestCase):
    """``"owner": ""`` is no owner, as in Ironic 39."""

    def wait(self, uuid):
        allocation = objects.Allocation.get_by_uuid(self.context, uuid)
        return utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]

    def test_empty_owner_is_the_callers_project(self):
        leased = utils.make_available_node(self.context, name='leased',
                                           owner=OTHER, lessee=LESSEE)
        utils.make_available_node(self.context, name='foreign',
                                  owner=OTHER)
        response = self.request('lessee_member', 'POST', '/v1/allocations',
                                {'resource_class': 'gold', 'owner': ''})
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(LESSEE, response.json['owner'])
        # It only takes the project's node, as an allocation without an
        # owner does.
        allocation = self.wait(response.json['uuid'])
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                         allocation.last_error)
        self.assertEqual(leased.id, allocation.node_id)
        self.assertEqual(LESSEE, allocation.owner)

        # A new member of an allocation group (extension) is checked as a
        # new allocation: the same.
        member = uuidutils.generate_uuid()
        response = self.request(
            'lessee_member', 'POST', '/v1/allocation_groups',
            {'members': {member: {'resource_class': 'none', 'owner': ''}}})
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(
            LESSEE, objects.Allocation.get_by_uuid(self.context,
                                                   member).owner)

        # A system caller keeps what it gives, as in Ironic: an empty
        # owner filters nothing, so the allocation may take any node.
        response = self.request('system_member', 'POST', '/v1/allocations',
                                {'resource_class': 'gold', 'owner': ''})
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual('', response.json['owner'])
        allocation = self.wait(response.json['uuid'])
        self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                         allocation.last_error)

        # Another project is still refused without create_restricted.
        response = self.request('lessee_member', 'POST', '/v1/allocations',
                                {'resource_class': 'gold', 'owner': OTHER})
        self.assertEqual(403, response.status_int, response.text)
        self.assertIn('baremetal:allocation:create_restricted',
                      _fault(response))


class ProjectFilterTestCase(matrix.PolicyAppTestCase):
    """``GET /v1/nodes?project=``: owned or leased, within the caller's
    view (another project is a 403 for a project, as in Ironic)."""

    LISTS = ('/v1/nodes', '/v1/nodes/detail')

    def setUp(self):
        super().setUp()
        utils.make_available_node(self.context, name='owned', owner=OWNER)
        utils.make_available_node(self.context, name='leased', owner=OTHER,
                                  lessee=OWNER)
        utils.make_available_node(self.context, name='foreign', owner=OTHER)
        utils.make_available_node(self.context, name='lessees',
                                  owner=LESSEE)
        utils.make_available_node(self.context, name='unowned')

    def names(self, persona, path):
        response = self.request(persona, 'GET', path)
        self.assertEqual(200, response.status_int, response.text)
        return sorted(n['name'] for n in response.json['nodes'])

    def test_system_caller_filters_by_owner_or_lessee(self):
        for path in self.LISTS:
            self.assertEqual(['leased', 'owned'],
                             self.names('system_reader',
                                        path + '?project=' + OWNER))
            self.assertEqual(['foreign', 'leased'],
                             self.names('system_reader',
                                        path + '?project=' + OTHER))
            self.assertEqual([], self.names(
                'system_reader', path + '?project=' + 'd4' * 16))
            # With the other filters: their intersection.
            self.assertEqual(['owned'], self.names(
                'system_reader', '%s?project=%s&owner=%s'
                % (path, OWNER, OWNER)))

    def test_project_caller_within_its_view(self):
        for path in self.LISTS:
            self.assertEqual(['leased', 'owned'],
                             self.names('owner_reader',
                                        path + '?project=' + OWNER))
            self.assertEqual(['leased'], self.names(
                'owner_reader', '%s?project=%s&owner=%s'
                % (path, OWNER, OTHER)))
            # An empty project is the caller's own, as in Ironic.
            self.assertEqual(['leased', 'owned'],
                             self.names('owner_reader', path + '?project='))
            # Another project's nodes never show: 403, as in Ironic.
            for persona, project in (('owner_reader', OTHER),
                                     ('owner_admin', LESSEE),
                                     ('other_member', OWNER)):
                response = self.request(persona, 'GET',
                                        path + '?project=' + project)
                self.assertEqual(403, response.status_int, response.text)
                self.assertIn('baremetal:node:list_all', _fault(response))
                self.assertNotIn('nodes', response.text)

    def test_every_version_and_next_link(self):
        # NOTE: Ironic accepts the filter at every microversion.
        response = self.app.get(
            '/v1/nodes?project=%s&limit=1' % OWNER,
            headers={'X-Auth-Token': 'owner_reader',
                     'X-OpenStack-Ironic-API-Version': '1.1'})
        self.assertEqual(1, len(response.json['nodes']))
        self.assertIn('project=' + OWNER, response.json['next'])
        response = self.request('owner_reader', 'GET',
                                '/v1/nodes?project=%s&limit=1&fields=name'
                                % OWNER)
        self.assertEqual(['owned'],
                         [n['name'] for n in response.json['nodes']])
        following = response.json['next']
        self.assertIn('project=' + OWNER, following)
        response = self.request('owner_reader', 'GET',
                                following[following.index('/v1/'):])
        self.assertEqual(['leased'],
                         [n['name'] for n in response.json['nodes']])
