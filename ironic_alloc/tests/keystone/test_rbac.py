"""A representative subset of the RBAC matrix end to end: real Keystone
tokens (with Keystone's role implications: admin > member > reader)
through keystonemiddleware, the request context and the policy rules of
the service.  Every operation is covered for every persona by
ironic_alloc/tests/functional/test_policy_matrix.py; these cells prove
that real tokens reach the same answers.
"""

import time
import uuid

from ironic_alloc.tests.keystone import base

WAIT = 60


class TestRBACWithTokens(base.KeystoneTestCase):
    """One node owned by "owner" and leased by "lessee", available."""

    _node = None

    def setUp(self):
        super().setUp()
        if TestRBACWithTokens._node is None:
            TestRBACWithTokens._node = self._make_node()
        self.node, self.resource_class = TestRBACWithTokens._node
        self.ids = self.identities.project_ids

    def _make_node(self):
        admin = self.identities.token('admin', 'system')
        resource_class = 'KEYSTONE_%s' % uuid.uuid4().hex[:8].upper()
        resp = self.request('POST', '/v1/nodes', admin, body={
            'name': self.unique('rbac'), 'driver': 'fake-hardware',
            'resource_class': resource_class,
            'owner': self.identities.project_ids['owner'],
            'lessee': self.identities.project_ids['lessee']})
        self.assertStatus(201, resp)
        node = resp.json['uuid']
        for target, state in (('manage', 'manageable'),
                              ('provide', 'available')):
            self.assertStatus(202, self.request(
                'PUT', '/v1/nodes/%s/states/provision' % node, admin,
                body={'target': target}))
            self._wait(admin, '/v1/nodes/' + node, 'provision_state', state)
        return node, resource_class

    def _wait(self, token, path, field, value):
        deadline = time.monotonic() + WAIT
        while True:
            resp = self.request('GET', path, token)
            self.assertStatus(200, resp)
            if resp.json[field] == value:
                return resp.json
            if time.monotonic() > deadline:
                self.fail('%s: %s is %r, not %r after %ds'
                          % (path, field, resp.json[field], value, WAIT))
            time.sleep(0.1)

    def test_system_reader_lists_nodes(self):
        resp = self.request('GET', '/v1/nodes',
                            self.identities.token('reader', 'system'))
        self.assertStatus(200, resp)
        self.assertIn(self.node, [n['uuid'] for n in resp.json['nodes']])

    def test_system_reader_cannot_create_nodes(self):
        resp = self.request('POST', '/v1/nodes',
                            self.identities.token('reader', 'system'),
                            body={'driver': 'fake-hardware'})
        self.assertStatus(403, resp)

    def test_owner_member_sees_its_node(self):
        resp = self.request('GET', '/v1/nodes/' + self.node,
                            self.identities.token('member', 'project',
                                                  'owner'))
        self.assertStatus(200, resp)
        self.assertEqual(self.ids['owner'], resp.json['owner'])

    def test_lessee_reader_sees_the_leased_node(self):
        resp = self.request('GET', '/v1/nodes/' + self.node,
                            self.identities.token('reader', 'project',
                                                  'lessee'))
        self.assertStatus(200, resp)

    def test_unrelated_project_gets_404(self):
        token = self.identities.token('admin', 'project', 'other')
        self.assertStatus(404, self.request('GET', '/v1/nodes/' + self.node,
                                            token))
        resp = self.request('GET', '/v1/nodes', token)
        self.assertStatus(200, resp)
        self.assertNotIn(self.node, [n['uuid'] for n in resp.json['nodes']])

    def test_project_reader_cannot_allocate(self):
        resp = self.request('POST', '/v1/allocations',
                            self.identities.token('reader', 'project',
                                                  'owner'),
                            body={'resource_class': self.resource_class})
        self.assertStatus(403, resp)

    def test_foreign_owner_needs_the_restricted_rule(self):
        resp = self.request('POST', '/v1/allocations',
                            self.identities.token('member', 'project',
                                                  'lessee'),
                            body={'resource_class': self.resource_class,
                                  'owner': self.ids['owner']})
        self.assertStatus(403, resp)

    def test_candidates_of_another_project_are_refused(self):
        resp = self.request('POST', '/v1/allocations',
                            self.identities.token('member', 'project',
                                                  'other'),
                            body={'resource_class': self.resource_class,
                                  'candidate_nodes': [self.node]})
        self.assertStatus(400, resp)

    def test_member_allocation_belongs_to_its_project(self):
        member = self.identities.token('member', 'project', 'lessee')
        resp = self.request('POST', '/v1/allocations', member,
                            body={'resource_class': self.resource_class,
                                  'candidate_nodes': [self.node]})
        self.assertStatus(201, resp)
        self.assertEqual(self.ids['lessee'], resp.json['owner'])
        path = '/v1/allocations/' + resp.json['uuid']
        alloc = self._wait(member, path, 'state', 'active')
        self.assertEqual(self.node, alloc['node_uuid'])
        # Visible to the project's reader, a 404 for another project,
        # and listing the lessee's allocations is a 403 for the owner.
        self.assertStatus(200, self.request(
            'GET', path, self.identities.token('reader', 'project',
                                               'lessee')))
        self.assertStatus(404, self.request(
            'GET', path, self.identities.token('reader', 'project',
                                               'other')))
        self.assertStatus(403, self.request(
            'GET', '/v1/allocations?owner=' + self.ids['lessee'],
            self.identities.token('member', 'project', 'owner')))
