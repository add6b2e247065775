"""Owner/lessee semantics beyond status codes: what each caller sees,
which owner its allocations get, where they land (real conductor).

Same set-up as the matrix (test_policy_matrix): the real app behind the
stand-in for keystonemiddleware's token validation.
"""

import json

from oslo_utils import uuidutils
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import test_policy_matrix as matrix

OWNER, LESSEE, OTHER = matrix.OWNER, matrix.LESSEE, matrix.OTHER


def _fault(response):
    return json.loads(json.loads(response.text)['error_message'])[
        'faultstring']


class VisibilityTestCase(matrix.PolicyAppTestCase):

    def setUp(self):
        super().setUp()
        self.owned = utils.make_available_node(
            self.context, name='owned', owner=OWNER,
            driver_info={'ipmi_address': '192.0.2.1',
                         'ipmi_password': 'p4ss', 'snmp_auth_key': 'k3y'},
            instance_info={'image_source': 'img', 'configdrive': 'cd',
                           'admin_password': 'x'},
            last_error='failed on conductor-7.internal')
        self.leased = utils.make_available_node(
            self.context, name='leased', owner=OTHER, lessee=OWNER)
        self.foreign = utils.make_available_node(
            self.context, name='foreign', owner=OTHER)
        self.unowned = utils.make_available_node(self.context,
                                                 name='unowned')

    def names(self, persona, path='/v1/nodes'):
        response = self.request(persona, 'GET', path)
        self.assertEqual(200, response.status_int, response.text)
        return sorted(n['name'] for n in response.json['nodes'])

    def test_node_lists_are_cut_to_the_project(self):
        everything = ['foreign', 'leased', 'owned', 'unowned']
        self.assertEqual(everything, self.names('system_reader'))
        self.assertEqual(['leased', 'owned'], self.names('owner_reader'))
        self.assertEqual(['leased', 'owned'],
                         self.names('owner_reader', '/v1/nodes/detail'))
        self.assertEqual(['foreign', 'leased'], self.names('other_member'))
        self.assertEqual([], self.names('lessee_admin'))
        # A filter narrows the project's view, it never widens it.
        self.assertEqual(['leased'],
                         self.names('owner_reader', '/v1/nodes?owner=' +
                                    OTHER))

    def test_secrets_masked_for_everyone(self):
        node = self.request('system_admin', 'GET',
                            '/v1/nodes/owned').json
        self.assertEqual('******', node['driver_info']['ipmi_password'])
        self.assertEqual('******', node['driver_info']['snmp_auth_key'])
        self.assertEqual('192.0.2.1', node['driver_info']['ipmi_address'])
        self.assertEqual('******', node['instance_info']['configdrive'])
        self.assertEqual('******', node['instance_info']['admin_password'])
        self.assertEqual('img', node['instance_info']['image_source'])
        self.assertEqual('failed on conductor-7.internal',
                         node['last_error'])
        for path in ('/v1/nodes/owned?fields=driver_info,uuid',
                     '/v1/nodes?fields=driver_info,name&owner=' + OWNER):
            response = self.request('system_admin', 'GET', path).json
            info = response.get('driver_info') or [
                n for n in response['nodes']
                if n['name'] == 'owned'][0]['driver_info']
            self.assertEqual('******', info['ipmi_password'], path)
        # The owner sees its own node's details (secrets still masked).
        node = self.request('owner_reader', 'GET', '/v1/nodes/owned').json
        self.assertEqual('******', node['driver_info']['ipmi_password'])
        self.assertEqual('192.0.2.1', node['driver_info']['ipmi_address'])
        self.assertEqual('failed on conductor-7.internal',
                         node['last_error'])

    def test_lessee_does_not_see_infrastructure_details(self):
        self.owned.lessee = LESSEE
        self.owned.save()
        node = self.request('lessee_member', 'GET',
                            '/v1/nodes/owned').json
        self.assertNotIn('ipmi_address', node['driver_info'])
        self.assertIn('baremetal:node:get:driver_info',
                      node['driver_info']['content'])
        self.assertIn('baremetal:node:get:last_error', node['last_error'])
        self.assertIn('baremetal:node:get:driver_internal_info',
                      node['driver_internal_info']['content'])
        listed = self.request('lessee_member', 'GET',
                              '/v1/nodes/detail').json['nodes']
        self.assertEqual([node['driver_info']],
                         [n['driver_info'] for n in listed])

    def test_secret_in_patch_response_masked(self):
        response = self.request(
            'owner_member', 'PATCH', '/v1/nodes/owned',
            [{'op': 'add', 'path': '/driver_info/ipmi_password',
              'value': 'n3w'}])
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual('******',
                         response.json['driver_info']['ipmi_password'])
        self.assertEqual('n3w', objects.Node.get_by_uuid(
            self.context, self.owned.uuid).driver_info['ipmi_password'])

    def test_client_identity_headers_are_ignored(self):
        # The client claims to be a system admin; the token says otherwise.
        response = self.app.get(
            '/v1/nodes/foreign',
            headers={'X-Auth-Token': 'owner_reader', 'X-Roles': 'admin',
                     'OpenStack-System-Scope': 'all',
                     'X-Project-Id': OTHER},
            expect_errors=True)
        self.assertEqual(404, response.status_int)

    def test_no_token_is_401(self):
        self.assertEqual(401, self.request(None, 'GET',
                                           '/v1/nodes').status_int)

    def test_owner_of_active_node_needs_update_owner_provisioned(self):
        self.owned.provision_state = states.ACTIVE
        self.owned.save()
        patch = [{'op': 'replace', 'path': '/owner', 'value': LESSEE}]
        response = self.request('system_member', 'PATCH',
                                '/v1/nodes/owned', patch)
        self.assertEqual(409, response.status_int, response.text)
        response = self.request('system_admin', 'PATCH',
                                '/v1/nodes/owned', patch)
        self.assertEqual(200, response.status_int, response.text)
        self.assertEqual(LESSEE, response.json['owner'])


class SelfOwnedNodesTestCase(matrix.PolicyAppTestCase):
    """[api]project_admin_can_manage_own_nodes, as in Ironic."""

    def test_project_admin_enrolls_nodes_owned_by_its_project(self):
        response = self.request('other_admin', 'POST', '/v1/nodes',
                                matrix.NEW_NODE)
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(OTHER, response.json['owner'])
        response = self.request('other_admin', 'POST', '/v1/nodes',
                                dict(matrix.NEW_NODE, owner=OWNER))
        self.assertEqual(400, response.status_int)
        # A system admin enrolls nodes for anyone, or no one.
        response = self.request('system_admin', 'POST', '/v1/nodes',
                                dict(matrix.NEW_NODE, owner=OWNER))
        self.assertEqual(OWNER, response.json['owner'])

    def test_turned_off(self):
        self.config(project_admin_can_manage_own_nodes=False, group='api')
        response = self.request('other_admin', 'POST', '/v1/nodes',
                                matrix.NEW_NODE)
        self.assertEqual(403, response.status_int)
        self.assertIn('baremetal:node:create', _fault(response))
        node = utils.make_available_node(self.context, owner=OTHER)
        response = self.request('other_admin', 'DELETE',
                                '/v1/nodes/' + node.uuid)
        self.assertEqual(403, response.status_int)
        self.assertIn('baremetal:node:delete', _fault(response))


class NoAuthTestCase(matrix.PolicyAppTestCase):
    """noauth: every caller is an administrator; headers are not trusted
    either way, and secrets stay masked."""

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        self.app = webtest.TestApp(api_app.setup_app())

    def test_everything_allowed_secrets_masked(self):
        utils.make_available_node(self.context, name='n', owner=OTHER,
                                  driver_info={'ipmi_password': 'p'})
        headers = {'X-OpenStack-Ironic-API-Version': '1.79',
                   'X-Roles': 'reader', 'X-Project-Id': OWNER}
        node = self.app.get('/v1/nodes/n', headers=headers).json
        self.assertEqual('******', node['driver_info']['ipmi_password'])
        self.assertEqual(1, len(self.app.get('/v1/nodes', headers=headers)
                                .json['nodes']))
        self.assertEqual(200, self.app.get('/v1/conductors',
                                           headers=headers).status_int)
        response = self.app.post_json(
            '/v1/allocations', {'resource_class': 'x', 'owner': OTHER},
            headers=headers)
        self.assertEqual(OTHER, response.json['owner'])


class AllocationOwnershipTestCase(matrix.PolicyAppTestCase):

    def post(self, persona, **body):
        body.setdefault('resource_class', 'gold')
        return self.request(persona, 'POST', '/v1/allocations', body)

    def wait(self, uuid):
        allocation = objects.Allocation.get_by_uuid(self.context, uuid)
        return utils.wait_for_allocations(
            self.context, [allocation.id])[allocation.id]

    def test_owner_filled_with_callers_project(self):
        response = self.post('lessee_member', resource_class='none')
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(LESSEE, response.json['owner'])
        # Naming its own project is the same thing.
        response = self.post('lessee_member', resource_class='none',
                             owner=LESSEE)
        self.assertEqual(201, response.status_int, response.text)
        # A system caller's allocation has the owner it gives, or none.
        response = self.post('system_member', resource_class='none')
        self.assertIsNone(response.json['owner'])

    def test_foreign_owner_needs_create_restricted(self):
        response = self.post('lessee_admin', owner=OWNER)
        self.assertEqual(403, response.status_int)
        self.assertIn('baremetal:allocation:create_restricted',
                      _fault(response))
        self.assertEqual([], objects.Allocation.list(self.context))

    def test_hidden_candidate_node_is_400(self):
        node = utils.make_available_node(self.context, name='foreign',
                                         owner=OTHER)
        response = self.post('lessee_member', candidate_nodes=['foreign'])
        self.assertEqual(400, response.status_int)
        self.assertIn('foreign', _fault(response))
        response = self.post('other_member', candidate_nodes=[node.uuid])
        self.assertEqual(201, response.status_int, response.text)

    def test_allocation_lists_per_project(self):
        for persona in ('owner_member', 'lessee_member', 'lessee_member'):
            self.post(persona, resource_class='none')

        def owners(persona, query=''):
            response = self.request(persona, 'GET',
                                    '/v1/allocations' + query)
            self.assertEqual(200, response.status_int, response.text)
            return sorted(a['owner'] for a in response.json['allocations'])

        self.assertEqual(sorted([OWNER, LESSEE, LESSEE]),
                         owners('system_reader'))
        self.assertEqual([LESSEE, LESSEE], owners('lessee_reader'))
        self.assertEqual([OWNER], owners('owner_reader'))
        self.assertEqual([], owners('other_reader'))
        self.assertEqual([OWNER], owners('owner_reader', '?owner=' + OWNER))
        response = self.request('owner_reader', 'GET',
                                '/v1/allocations?owner=' + LESSEE)
        self.assertEqual(403, response.status_int)
        self.assertIn('baremetal:allocation:list_all', _fault(response))

    def test_project_allocations_land_on_owned_or_leased_nodes(self):
        leased = utils.make_available_node(
            self.context, name='leased', owner=OTHER, lessee=LESSEE)
        owned = utils.make_available_node(self.context, name='owned',
                                          owner=LESSEE)
        for i in range(4):
            utils.make_available_node(self.context, name='free-%d' % i)
            utils.make_available_node(self.context, name='other-%d' % i,
                                      owner=OTHER)
        mine = {leased.id, owned.id}
        landed = set()
        for _ in range(2):
            response = self.post('lessee_member')
            self.assertEqual(201, response.status_int, response.text)
            allocation = self.wait(response.json['uuid'])
            self.assertEqual(states.ALLOCATION_ACTIVE, allocation.state,
                             allocation.last_error)
            landed.add(allocation.node_id)
        self.assertEqual(mine, landed)
        # Both of the project's nodes are taken: free and foreign nodes
        # remain, yet the project's next allocation fails.
        allocation = self.wait(self.post('lessee_member').json['uuid'])
        self.assertEqual(states.ALLOCATION_ERROR, allocation.state)
        # A system member allocating for OTHER only gets OTHER's nodes.
        response = self.post('system_member', owner=OTHER)
        allocation = self.wait(response.json['uuid'])
        node = objects.Node.get_by_id(self.context, allocation.node_id)
        self.assertIn(OTHER, (node.owner, node.lessee))
        self.assertTrue(node.name.startswith('other-'))

    def test_backfill_only_on_the_projects_nodes(self):
        leased = utils.make_node(self.context, name='leased', owner=OTHER,
                                 lessee=LESSEE,
                                 provision_state=states.ACTIVE)
        utils.make_node(self.context, name='foreign', owner=OTHER,
                        provision_state=states.ACTIVE)
        response = self.post('lessee_member', node='foreign')
        self.assertEqual(400, response.status_int, response.text)
        response = self.post('lessee_member', node='leased')
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(LESSEE, response.json['owner'])
        self.assertEqual(leased.uuid, response.json['node_uuid'])

    def test_project_sees_its_allocation_of_another_projects_node(self):
        utils.make_available_node(self.context, name='leased', owner=OTHER,
                                  lessee=LESSEE)
        uuid = self.post('lessee_member').json['uuid']
        self.assertEqual(states.ALLOCATION_ACTIVE, self.wait(uuid).state)
        self.assertEqual(200, self.request(
            'lessee_reader', 'GET', '/v1/nodes/leased/allocation').status_int)
        # The node's owner sees the node but not the lessee's allocation.
        self.assertEqual(403, self.request(
            'other_reader', 'GET', '/v1/nodes/leased/allocation').status_int)
        self.assertEqual(404, self.request(
            'other_reader', 'GET', '/v1/allocations/' + uuid).status_int)



class TestExplainVisibility(VisibilityTestCase):
    """POST /v1/allocations/explain counts the nodes the caller may list,
    and shows no other project's node."""

    def explain(self, persona, body=None):
        headers = {'X-OpenStack-Ironic-API-Version': 'latest',
                   'OpenStack-API-Version': 'ironic-alloc 1.1',
                   'Content-Type': 'application/json',
                   'X-Auth-Token': persona}
        return self.app.request(
            '/v1/allocations/explain', method='POST', headers=headers,
            body=json.dumps(body or {'resource_class': 'gold'}).encode(),
            expect_errors=True)

    def test_counts_over_the_visible_nodes(self):
        uuids = {node.name: node.uuid for node in (
            self.owned, self.leased, self.foreign, self.unowned)}
        cases = [('system_reader', ['foreign', 'leased', 'owned',
                                    'unowned']),
                 ('owner_reader', ['leased', 'owned']),
                 ('owner_member', ['leased', 'owned']),
                 ('other_member', ['foreign', 'leased']),
                 ('lessee_admin', [])]
        for persona, visible in cases:
            response = self.explain(persona)
            self.assertEqual(200, response.status_int, response.text)
            funnel = response.json
            self.assertEqual(len(visible), funnel['nodes'], persona)
            self.assertEqual(len(visible), funnel['matching_nodes'], persona)
            self.assertEqual(sorted(uuids[n] for n in visible),
                             funnel['examples'], persona)
            for name, node_uuid in uuids.items():
                if name not in visible:
                    self.assertNotIn(node_uuid, response.text, persona)
                    self.assertNotIn('"%s"' % name, response.text, persona)
        self.assertEqual(0, len(objects.Allocation.list(self.context)))

    def test_project_caller_sees_its_own_nodes_only_in_the_funnel(self):
        self.foreign.maintenance = True
        self.foreign.save()
        funnel = self.explain('owner_member').json
        self.assertEqual(OWNER, funnel['project'])
        self.assertEqual(0, sum(s['removed'] for s in funnel['steps']))
        funnel = self.explain('system_reader').json
        self.assertEqual(1, [s['removed'] for s in funnel['steps']
                             if s['step'] == 'maintenance'][0])

    def test_naming_another_owner_needs_create_restricted(self):
        response = self.explain('owner_member', {'resource_class': 'gold',
                                                 'owner': OTHER})
        self.assertEqual(403, response.status_int)
        self.assertIn('create_restricted', _fault(response))


class ReservationOwnershipTestCase(matrix.PolicyAppTestCase):
    """Reservations (extension 1.2) follow the allocation rules: owned by
    the caller's project, on nodes it owns or leases, listed per
    project."""

    def reserve(self, persona, nodes):
        return self.request(persona, 'POST', '/v1/reservations', {
            'instance_uuid': uuidutils.generate_uuid(),
            'node_uuid': nodes})

    def test_project_reserves_its_nodes_and_sees_its_reservations(self):
        foreign = utils.make_available_node(self.context, owner=OTHER)
        leased = utils.make_available_node(self.context, owner=OTHER,
                                           lessee=LESSEE)
        owned = utils.make_available_node(self.context, owner=OWNER)
        response = self.reserve('lessee_member', [foreign.uuid, owned.uuid,
                                                  leased.uuid])
        self.assertEqual(201, response.status_int, response.text)
        self.assertEqual(leased.uuid, response.json['reservation'][
            'node_uuid'])
        self.assertEqual(LESSEE, response.json['reservation']['owner'])
        # The foreign and the owner's nodes are "not found" for it.
        response = self.reserve('lessee_member', [foreign.uuid, owned.uuid])
        self.assertEqual(409, response.status_int, response.text)
        fault = json.loads(response.json['error_message'])
        self.assertEqual(['not found', 'not found'],
                         [r['reason'] for r in fault['reasons']])
        response = self.reserve('owner_member', [owned.uuid])
        self.assertEqual(201, response.status_int, response.text)
        response = self.reserve('system_member', [foreign.uuid])
        self.assertEqual(201, response.status_int, response.text)
        self.assertIsNone(response.json['reservation']['owner'])

        def owners(persona):
            response = self.request(persona, 'GET', '/v1/reservations')
            self.assertEqual(200, response.status_int, response.text)
            return sorted(str(r['owner'])
                          for r in response.json['reservations'])

        self.assertEqual(sorted([LESSEE, OWNER, 'None']),
                         owners('system_reader'))
        self.assertEqual([LESSEE], owners('lessee_reader'))
        self.assertEqual([OWNER], owners('owner_reader'))
        self.assertEqual([], owners('other_reader'))
