"""Who may do what: every node and allocation operation for every persona.

The real WSGI app (ironic_alloc.api.app.setup_app with
``auth_strategy = keystone``) runs in-process with a real conductor and a
real database; only keystonemiddleware's token validation is replaced.
``KeystoneHeaders`` stands where auth_token sits in the pipeline and does
what auth_token does once Keystone has validated a token: it drops every
identity header the client sent and sets X-Identity-Status, X-User-Id,
X-Project-Id or OpenStack-System-Scope, X-Roles... from the token,
here a persona name.  Everything after that (the request context, the policy
rules, the controllers) is the production code.  The step from a real
Keystone token to these headers is covered end to end by the Keystone
tests of the authentication tier.

Roles follow Keystone's default implications: an admin token carries
admin, member and reader; a member token member and reader.
"""

import json

import fixtures
from oslo_utils import uuidutils
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.api import hooks
from ironic_alloc.common import policy
from ironic_alloc.common import states
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

OWNER = 'a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1'
LESSEE = 'b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2'
OTHER = 'c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3'

_IMPLIED = {'admin': 'admin,member,reader', 'member': 'member,reader',
            'reader': 'reader'}


def _persona(scope, role):
    return {'scope': scope, 'roles': _IMPLIED[role]}


# Token (persona name) -> what Keystone would say about it.
PERSONAS = {
    'system_admin': _persona('all', 'admin'),
    'system_member': _persona('all', 'member'),
    'system_reader': _persona('all', 'reader'),
    'owner_admin': _persona(OWNER, 'admin'),
    'owner_member': _persona(OWNER, 'member'),
    'owner_reader': _persona(OWNER, 'reader'),
    'lessee_admin': _persona(LESSEE, 'admin'),
    'lessee_member': _persona(LESSEE, 'member'),
    'lessee_reader': _persona(LESSEE, 'reader'),
    'other_admin': _persona(OTHER, 'admin'),
    'other_member': _persona(OTHER, 'member'),
    'other_reader': _persona(OTHER, 'reader'),
}
ORDER = list(PERSONAS)

# Identity headers auth_token removes from every request before setting
# its own (a client must not be able to claim an identity).
_IDENTITY_HEADERS = (
    'X-Identity-Status', 'X-Service-Identity-Status', 'X-Domain-Id',
    'X-Domain-Name', 'X-Project-Id', 'X-Project-Name',
    'X-Project-Domain-Id', 'X-Project-Domain-Name', 'X-User-Id',
    'X-User-Name', 'X-User-Domain-Id', 'X-User-Domain-Name', 'X-Roles',
    'X-Service-Roles', 'OpenStack-System-Scope', 'X-Is-Admin-Project',
    'X-Service-Project-Id', 'X-Service-User-Id', 'X-Tenant-Id', 'X-User')


def _environ_key(header):
    return 'HTTP_' + header.upper().replace('-', '_')


class KeystoneHeaders:
    """In place of keystonemiddleware.auth_token.AuthProtocol (see the
    module docstring): the token is a persona name; an unknown or
    missing token is a 401, as with Keystone."""

    def __init__(self, app, conf):
        self.app = app

    def __call__(self, environ, start_response):
        for header in _IDENTITY_HEADERS:
            environ.pop(_environ_key(header), None)
        persona = PERSONAS.get(environ.get('HTTP_X_AUTH_TOKEN'))
        if persona is None:
            start_response('401 Unauthorized',
                           [('Content-Type', 'application/json'),
                            ('WWW-Authenticate',
                             "Keystone uri='http://keystone.invalid'")])
            return [b'{"error": {"code": 401}}']
        token = environ['HTTP_X_AUTH_TOKEN']
        environ.update({
            'HTTP_X_IDENTITY_STATUS': 'Confirmed',
            'HTTP_X_USER_ID': 'user-' + token,
            'HTTP_X_USER_NAME': token,
            'HTTP_X_USER_DOMAIN_ID': 'default',
            'HTTP_X_ROLES': persona['roles'],
        })
        if persona['scope'] == 'all':
            environ['HTTP_OPENSTACK_SYSTEM_SCOPE'] = 'all'
        else:
            environ['HTTP_X_PROJECT_ID'] = persona['scope']
            environ['HTTP_X_PROJECT_DOMAIN_ID'] = 'default'
        return self.app(environ, start_response)


class PolicyAppTestCase(base.DbTestCase):
    """The real app behind KeystoneHeaders, a real conductor."""

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='keystone')
        # NOTE: the stand-in for Keystone token validation, see above.
        self.useFixture(fixtures.MonkeyPatch(
            'keystonemiddleware.auth_token.AuthProtocol', KeystoneHeaders))
        self.conductor = self.useFixture(
            ia_fixtures.ConductorFixture(host='policy-conductor'))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        policy.reset()
        self.addCleanup(policy.reset)
        self.app = webtest.TestApp(api_app.setup_app())
        self.conductor_id = objects.Conductor.get_by_hostname(
            self.context, 'policy-conductor').id

    def request(self, persona, method, path, body=None):
        headers = {'X-OpenStack-Ironic-API-Version':
                   versions.MAX_VERSION_STRING}
        if path.startswith('/v1/reservations'):
            headers['OpenStack-API-Version'] = RESERVATIONS_EXTENSION
        if path.startswith('/v1/allocation_groups'):
            headers['OpenStack-API-Version'] = GROUPS_EXTENSION
        if persona is not None:
            headers['X-Auth-Token'] = persona
        if body is None:
            return self.app.request(path, method=method, headers=headers,
                                    expect_errors=True)
        headers['Content-Type'] = 'application/json'
        return self.app.request(path, method=method, headers=headers,
                                body=json.dumps(body).encode(),
                                expect_errors=True)

    def make_world(self):
        """Nodes and an allocation for one request.

        ``node``: available, owned by OWNER, leased by LESSEE, trait
        CUSTOM_A.  ``alloc_node``: the same, holding allocation
        ``alloc`` owned by LESSEE; ``resv_node``: the same, held by
        reservation ``resv`` owned by LESSEE; ``chassis``: an empty
        chassis; ``group``: an allocation group without members owned by
        LESSEE; ``instance``: a new UUID.  Both nodes
        are of resource class gold; the allocations created by the
        matrix ask for silver, so the conductor never hands these nodes
        out behind the test's back.
        """
        suffix = uuidutils.generate_uuid()[:8]
        node = utils.make_available_node(
            self.context, name='node-' + suffix, owner=OWNER, lessee=LESSEE,
            traits=['CUSTOM_A'],
            driver_info={'ipmi_address': '192.0.2.1',
                         'ipmi_password': 'secret-' + suffix})
        alloc_node = utils.make_available_node(
            self.context, name='alloc-node-' + suffix, owner=OWNER,
            lessee=LESSEE)
        alloc = utils.make_allocation(
            self.context, self.conductor_id, name='alloc-' + suffix,
            owner=LESSEE, state=states.ALLOCATION_ACTIVE,
            node_id=alloc_node.id)
        alloc_node.allocation_id = alloc.id
        alloc_node.instance_uuid = alloc.uuid
        alloc_node.save()
        resv_node = utils.make_available_node(
            self.context, name='resv-node-' + suffix, owner=OWNER,
            lessee=LESSEE)
        resv = objects.Allocation.reserve(
            self.context, {'instance_uuid': uuidutils.generate_uuid(),
                           'owner': LESSEE}, [resv_node.uuid], 600)[0]
        chassis = objects.Chassis(self.context, description='c-' + suffix,
                                  extra={})
        chassis.create()
        group = objects.AllocationGroup(
            self.context, uuid=uuidutils.generate_uuid(), owner=LESSEE,
            state=states.GROUP_ACTIVE, spec={})
        group.create([], [])
        return {'node': node.uuid, 'alloc_node': alloc_node.uuid,
                'alloc': alloc.uuid, 'resv': resv.uuid,
                'chassis': chassis.uuid, 'group': group.uuid,
                'instance': uuidutils.generate_uuid()}


def _codes(row):
    codes = [int(c) for c in row.split()]
    assert len(codes) == len(ORDER), row
    return dict(zip(ORDER, codes))


def _fill(value, world):
    if isinstance(value, str):
        return value.format(**world)
    if isinstance(value, list):
        return [_fill(v, world) for v in value]
    if isinstance(value, dict):
        return {_fill(k, world): _fill(v, world) for k, v in value.items()}
    return value


N = '/v1/nodes/{node}'
A = '/v1/allocations/{alloc}'
R = '/v1/reservations/{resv}'
C = '/v1/chassis/{chassis}'
RESERVATIONS_EXTENSION = 'ironic-alloc 1.2'
G = '/v1/allocation_groups/{group}'
GROUPS_EXTENSION = 'ironic-alloc 1.3'
NEW_NODE = {'driver': 'fake-hardware', 'resource_class': 'gold'}
NEW_ALLOC = {'resource_class': 'silver'}


def _patch(path, value, op='replace'):
    return [{'op': op, 'path': path, 'value': value}]


# name, method, path, body, expected status per persona:
#                          system       owner project  lessee project other project  # noqa: E501
#                          adm mem rdr  adm mem rdr    adm mem rdr    adm mem rdr  # noqa: E501
MATRIX = [
    ('node_list', 'GET', '/v1/nodes', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('node_list_detail', 'GET', '/v1/nodes/detail', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('node_get', 'GET', N, None,
     '200 200 200  200 200 200  200 200 200  404 404 404'),
    # A project admin enrolls nodes owned by its project and deletes
    # those its project owns ([api]project_admin_can_manage_own_nodes).
    ('node_create', 'POST', '/v1/nodes', NEW_NODE,
     '201 403 403  201 403 403  201 403 403  201 403 403'),
    ('node_delete', 'DELETE', N, None,
     '204 403 403  204 403 403  403 403 403  404 404 404'),
    ('node_update_extra', 'PATCH', N, _patch('/extra/k', 'v', 'add'),
     '200 200 403  200 200 403  200 200 403  404 404 404'),
    ('node_update_generic', 'PATCH', N, _patch('/description', 'd'),
     '200 200 403  200 200 403  200 200 403  404 404 404'),
    ('node_update_instance_info', 'PATCH', N,
     _patch('/instance_info/k', 'v', 'add'),
     '200 200 403  200 200 403  200 403 403  404 404 404'),
    ('node_update_driver_info', 'PATCH', N,
     _patch('/driver_info/ipmi_address', '192.0.2.9'),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_properties', 'PATCH', N,
     _patch('/properties/k', 'v', 'add'),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_name', 'PATCH', N, _patch('/name', 'renamed-{node}'),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_lessee', 'PATCH', N, _patch('/lessee', OTHER),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_owner', 'PATCH', N, _patch('/owner', OTHER),
     '200 200 403  403 403 403  403 403 403  404 404 404'),
    ('node_update_instance_uuid', 'PATCH', N,
     _patch('/instance_uuid', '{instance}', 'add'),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_network_data', 'PATCH', N,
     _patch('/network_data', {'links': []}),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    # NOTE: retiring needs a manageable node; false is the same rule.
    ('node_update_retired', 'PATCH', N, _patch('/retired', False),
     '200 200 403  200 200 403  403 403 403  404 404 404'),
    ('node_update_chassis_uuid', 'PATCH', N,
     _patch('/chassis_uuid', '{chassis}', 'add'),
     '200 403 403  403 403 403  403 403 403  404 404 404'),
    ('node_update_shard', 'PATCH', N, _patch('/shard', 'rack-a', 'add'),
     '200 403 403  403 403 403  403 403 403  404 404 404'),
    # NOTE: the parent is a node the caller sees, of the same owner.
    ('node_update_parent_node', 'PATCH', N,
     _patch('/parent_node', '{alloc_node}', 'add'),
     '200 200 403  403 403 403  403 403 403  404 404 404'),
    ('node_update_disable_power_off', 'PATCH', N,
     _patch('/disable_power_off', True),
     '200 403 403  403 403 403  403 403 403  404 404 404'),
    ('node_update_conductor_group', 'PATCH', N,
     _patch('/conductor_group', ''),
     '200 200 403  403 403 403  403 403 403  404 404 404'),
    ('node_update_interface', 'PATCH', N,
     _patch('/deploy_interface', 'direct'),
     '200 200 403  200 403 403  403 403 403  404 404 404'),
    ('node_disable_cleaning', 'PATCH', N, _patch('/automated_clean', False),
     '200 403 403  403 403 403  403 403 403  404 404 404'),
    ('node_validate', 'GET', N + '/validate', None,
     '200 200 403  200 200 403  200 403 403  404 404 404'),
    ('node_get_states', 'GET', N + '/states', None,
     '200 200 200  200 200 200  200 200 200  404 404 404'),
    ('node_set_power_state', 'PUT', N + '/states/power',
     {'target': 'power on'},
     '202 202 403  202 202 403  202 202 403  404 404 404'),
    ('node_set_provision_state', 'PUT', N + '/states/provision',
     {'target': 'manage'},
     '202 202 403  202 202 403  202 403 403  404 404 404'),
    ('node_set_maintenance', 'PUT', N + '/maintenance', {'reason': 'r'},
     '202 202 403  202 202 403  202 403 403  404 404 404'),
    ('node_clear_maintenance', 'DELETE', N + '/maintenance', None,
     '202 202 403  202 202 403  202 403 403  404 404 404'),
    ('node_validate_by_query', 'GET', '/v1/nodes/validate?node={node}',
     None,
     '200 200 403  200 200 403  200 403 403  404 404 404'),
    ('node_ports_list', 'GET', N + '/ports', None,
     '200 200 200  200 200 200  200 200 200  404 404 404'),
    ('node_children', 'GET', N + '/children', None,
     '200 200 200  200 200 200  200 200 200  404 404 404'),
    ('node_traits_list', 'GET', N + '/traits', None,
     '200 200 200  200 200 200  200 200 200  404 404 404'),
    ('node_traits_add', 'PUT', N + '/traits/CUSTOM_B', None,
     '204 204 403  204 403 403  403 403 403  404 404 404'),
    ('node_traits_replace', 'PUT', N + '/traits', {'traits': ['CUSTOM_C']},
     '204 204 403  204 403 403  403 403 403  404 404 404'),
    ('node_traits_delete', 'DELETE', N + '/traits/CUSTOM_A', None,
     '204 204 403  204 403 403  403 403 403  404 404 404'),
    ('node_allocation_get', 'GET', '/v1/nodes/{alloc_node}/allocation', None,
     '200 200 200  403 403 403  200 200 200  404 404 404'),
    ('node_allocation_delete', 'DELETE',
     '/v1/nodes/{alloc_node}/allocation', None,
     '204 204 403  403 403 403  204 204 403  404 404 404'),
    ('allocation_list', 'GET', '/v1/allocations', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('allocation_list_lessee_owned', 'GET',
     '/v1/allocations?owner=' + LESSEE, None,
     '200 200 200  403 403 403  200 200 200  403 403 403'),
    ('allocation_list_by_node', 'GET', '/v1/allocations?node={alloc_node}',
     None,
     '200 200 200  200 200 200  200 200 200  400 400 400'),
    ('allocation_get', 'GET', A, None,
     '200 200 200  404 404 404  200 200 200  404 404 404'),
    ('allocation_create', 'POST', '/v1/allocations', NEW_ALLOC,
     '201 201 403  201 201 403  201 201 403  201 201 403'),
    ('allocation_create_owned_by_owner', 'POST', '/v1/allocations',
     dict(NEW_ALLOC, owner=OWNER),
     '201 201 403  201 201 403  403 403 403  403 403 403'),
    ('allocation_create_candidates', 'POST', '/v1/allocations',
     dict(NEW_ALLOC, candidate_nodes=['{node}']),
     '201 201 403  201 201 403  201 201 403  400 400 403'),
    ('allocation_update', 'PATCH', A, _patch('/extra/k', 'v', 'add'),
     '200 200 403  404 404 404  200 200 403  404 404 404'),
    ('allocation_delete', 'DELETE', A, None,
     '204 204 403  404 404 404  204 204 403  404 404 404'),
    # Reservations (extension 1.2): a project reserves only nodes it owns
    # or leases; the others are "not found" (409 with that reason).
    ('reservation_list', 'GET', '/v1/reservations', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('reservation_get', 'GET', R, None,
     '200 200 200  404 404 404  200 200 200  404 404 404'),
    ('reservation_create', 'POST', '/v1/reservations',
     {'instance_uuid': '{instance}', 'node_uuid': ['{node}']},
     '201 201 403  201 201 403  201 201 403  409 409 403'),
    ('reservation_update', 'PATCH', R,
     [{'op': 'replace', 'path': '/ttl', 'value': 60}],
     '200 200 403  404 404 404  200 200 403  404 404 404'),
    ('reservation_delete', 'DELETE', R, None,
     '204 204 403  404 404 404  204 204 403  404 404 404'),
    # Allocation groups (extension 1.3): each member is checked as if made
    # alone; an allocation the caller cannot see is no release (400).
    ('group_list', 'GET', '/v1/allocation_groups', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('group_get', 'GET', G, None,
     '200 200 200  404 404 404  200 200 200  404 404 404'),
    ('group_create', 'POST', '/v1/allocation_groups',
     {'members': {'{instance}': NEW_ALLOC}},
     '201 201 403  201 201 403  201 201 403  201 201 403'),
    ('group_create_owned_by_owner', 'POST', '/v1/allocation_groups',
     {'members': {'{instance}': dict(NEW_ALLOC, owner=OWNER)}},
     '201 201 403  201 201 403  403 403 403  403 403 403'),
    ('group_release', 'POST', '/v1/allocation_groups',
     {'members': {'{alloc}': {}}},
     '201 201 403  400 400 403  201 201 403  400 400 403'),
    ('group_hand_over', 'POST', '/v1/allocation_groups',
     {'members': {'{instance}': {'handover_from': '{alloc}',
                                 'node': '{alloc_node}'}}},
     '201 201 403  400 400 403  201 201 403  400 400 403'),
    ('group_lease', 'PATCH', G, _patch('/ttl', 60),
     '200 200 403  404 404 404  200 200 403  404 404 404'),
    ('group_delete', 'DELETE', G, None,
     '204 204 403  404 404 404  204 204 403  404 404 404'),
    # Chassis are system resources, as in Ironic; the nodes of a chassis
    # follow the node list's rules (a project sees its own nodes).
    ('chassis_list', 'GET', '/v1/chassis', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('chassis_list_detail', 'GET', '/v1/chassis/detail', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('chassis_get', 'GET', C, None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('chassis_nodes', 'GET', C + '/nodes', None,
     '200 200 200  200 200 200  200 200 200  200 200 200'),
    ('chassis_create', 'POST', '/v1/chassis', {'description': 'new'},
     '201 403 403  403 403 403  403 403 403  403 403 403'),
    ('chassis_update', 'PATCH', C, _patch('/description', 'changed'),
     '200 200 403  403 403 403  403 403 403  403 403 403'),
    ('chassis_delete', 'DELETE', C, None,
     '204 403 403  403 403 403  403 403 403  403 403 403'),
    # Shards count every node: system readers only, as in Ironic.
    ('shards_list', 'GET', '/v1/shards', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('conductor_list', 'GET', '/v1/conductors', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('conductor_get', 'GET', '/v1/conductors/policy-conductor', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('driver_list', 'GET', '/v1/drivers', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('driver_get', 'GET', '/v1/drivers/fake-hardware', None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
    ('driver_properties', 'GET', '/v1/drivers/fake-hardware/properties',
     None,
     '200 200 200  403 403 403  403 403 403  403 403 403'),
]


class PolicyMatrixTestCase(PolicyAppTestCase):
    """The matrix by resource and reads/writes; every row of a group is
    checked for all twelve personas and all mismatches are reported.

    NOTE: a few tests of many rows rather than one per row: stopping the
    conductor between tests costs more than the rows themselves.
    """

    def check_rows(self, rows):
        mismatches = []
        for name, method, path, body, row in rows:
            # NOTE: reads share one world; a write gets one per cell.
            world = self.make_world() if method == 'GET' else None
            for persona, expected in _codes(row).items():
                if method != 'GET':
                    world = self.make_world()
                response = self.request(persona, method, _fill(path, world),
                                        _fill(body, world))
                if response.status_int != expected:
                    mismatches.append('%s as %s: expected %d, got %d %s' % (
                        name, persona, expected, response.status_int,
                        response.text[:300]))
                elif expected == 403:
                    # Ironic's error format, naming what was denied.
                    fault = json.loads(json.loads(response.text)[
                        'error_message'])
                    self.assertIn('baremetal:', fault['faultstring'])
        if mismatches:
            self.fail('\n'.join(mismatches))


def _group(name, method):
    return '%s_%s' % (name.split('_')[0],
                      'reads' if method == 'GET' else 'writes')


def _make_test(rows):
    def test(self):
        self.check_rows(rows)
    return test


_GROUPS = {}
for _row in MATRIX:
    _GROUPS.setdefault(_group(_row[0], _row[1]), []).append(_row)
for _name, _rows in _GROUPS.items():
    setattr(PolicyMatrixTestCase, 'test_' + _name, _make_test(_rows))


# With a limit of zero holds per project ([limits]driver = config), who
# still creates: the callers baremetal:allocation:limit_exempt allows
# (administrators and system scoped callers by default).  "lim" is a 403
# naming the limit; "403" one naming a policy rule.
LIMITS_MATRIX = [
    ('allocation_create', 'POST', '/v1/allocations', NEW_ALLOC,
     '201 201 403  201 lim 403  201 lim 403  201 lim 403'),
    ('reservation_create', 'POST', '/v1/reservations',
     {'instance_uuid': '{instance}', 'node_uuid': ['{node}']},
     '201 201 403  201 lim 403  201 lim 403  409 409 403'),
]


class PolicyLimitsMatrixTestCase(PolicyAppTestCase):

    def setUp(self):
        super().setUp()
        self.config(driver='config', project_holds=0, group='limits')

    def test_limit_exempt(self):
        mismatches = []
        for name, method, path, body, row in LIMITS_MATRIX:
            cells = row.split()
            self.assertEqual(len(ORDER), len(cells), row)
            for persona, expected in zip(ORDER, cells):
                world = self.make_world()
                response = self.request(persona, method, _fill(path, world),
                                        _fill(body, world))
                status = response.status_int
                if status == 403:
                    fault = json.loads(json.loads(response.text)[
                        'error_message'])['faultstring']
                    got = ('lim' if 'has reached its limit baremetal_holds'
                           in fault else '403')
                else:
                    got = str(status)
                if got != expected:
                    mismatches.append('%s as %s: expected %s, got %s %s' % (
                        name, persona, expected, got, response.text[:300]))
        if mismatches:
            self.fail('\n'.join(mismatches))
