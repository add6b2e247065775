"""auth_strategy = keystone: keystonemiddleware's auth_token in front of
the API, against a real Keystone."""

import json

import fixtures
from oslotest import base as oslotest_base

from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests.keystone import base


class TestAuthToken(base.KeystoneTestCase):

    def test_version_documents_need_no_token(self):
        for path in ('/', '/v1'):
            self.assertStatus(200, self.request('GET', path))

    def test_missing_token(self):
        resp = self.request('GET', '/v1/nodes')
        self.assertStatus(401, resp)
        # NOTE: the header tells a client where to get a token.
        self.assertEqual('Keystone uri="%s"' % self.keystone.url,
                         resp.headers['WWW-Authenticate'])
        self.assertEqual(
            {'faultcode': 'Client', 'debuginfo': None,
             'faultstring': 'The request you have made requires '
                            'authentication.'},
            json.loads(resp.json['error_message']))

    def test_garbage_token(self):
        resp = self.request('GET', '/v1/nodes', token='not-a-token')
        self.assertStatus(401, resp)
        self.assertIn('WWW-Authenticate', resp.headers)

    def test_expired_token(self):
        token = self.identities.expired_token('member', 'owner')
        self.assertStatus(401, self.request('GET', '/v1/nodes', token))
        # The same user with a token in date is let in: the expiry made
        # the difference.
        self.assertStatus(200, self.request(
            'GET', '/v1/nodes', self.identities.token('member', 'project',
                                                      'owner')))

    def test_revoked_token(self):
        token = self.identities.revoked_token('member', 'owner')
        self.assertStatus(401, self.request('GET', '/v1/nodes', token))
        self.assertStatus(200, self.request(
            'GET', '/v1/nodes', self.identities.token('member', 'project',
                                                      'owner')))

    def test_project_scoped_token(self):
        token = self.identities.token('member', 'project', 'owner')
        resp = self.request('GET', '/v1/allocations', token)
        self.assertStatus(200, resp)
        self.assertEqual([], [a for a in resp.json['allocations']
                              if a['owner'] not in (
                                  None,
                                  self.identities.project_ids['owner'])])

    def test_system_scoped_token(self):
        token = self.identities.token('reader', 'system')
        self.assertStatus(200, self.request('GET', '/v1/nodes', token))

    def test_identity_headers_from_the_client_are_ignored(self):
        # A project reader claiming to be a system admin through the
        # headers auth_token sets itself stays a project reader.
        token = self.identities.token('reader', 'project', 'other')
        resp = self.request(
            'POST', '/v1/nodes', token,
            body={'name': self.unique('forged'), 'driver': 'fake-hardware'},
            headers={'X-Roles': 'admin', 'OpenStack-System-Scope': 'all',
                     'X-Project-Id': self.identities.project_ids['owner']})
        self.assertStatus(403, resp)

    def test_service_token_with_the_service_role(self):
        token = self.identities.token('reader', 'system')
        resp = self.request('GET', '/v1/nodes', token, headers={
            'X-Service-Token': self.identities.service_token()})
        self.assertStatus(200, resp)

    def test_service_token_without_the_service_role(self):
        # [keystone_authtoken]service_token_roles_required: a valid token
        # without the "service" role is no service token.
        token = self.identities.token('reader', 'system')
        resp = self.request('GET', '/v1/nodes', token, headers={
            'X-Service-Token': self.identities.token('admin', 'project',
                                                     'other')})
        self.assertStatus(401, resp)

    def test_garbage_service_token(self):
        token = self.identities.token('reader', 'system')
        resp = self.request('GET', '/v1/nodes', token,
                            headers={'X-Service-Token': 'not-a-token'})
        self.assertStatus(401, resp)


class TestKeystoneUnreachable(oslotest_base.BaseTestCase):
    """A service whose [keystone_authtoken] names a port nobody listens
    on: requests with a token are 503, not 500 or 401."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(base.TEST_TIMEOUT, gentle=True))
        dead = 'http://127.0.0.1:%d/v3' % client_fixtures.free_port()
        self.service = client_fixtures.Service(extra_config={
            'DEFAULT': {'auth_strategy': 'keystone'},
            'keystone_authtoken': {
                'www_authenticate_uri': dead, 'auth_url': dead,
                'auth_type': 'password', 'username': 'nobody',
                'password': 'nothing', 'user_domain_name': 'Default',
                'project_name': 'service',
                'project_domain_name': 'Default',
                'http_request_max_retries': '0'}})
        self.addCleanup(self.service.cleanup)
        self.service.start()

    def test_unreachable_keystone(self):
        resp = base.http_request(self.service.url, 'GET', '/v1/nodes',
                                 token='some-token')
        self.assertEqual(503, resp.status, resp)
        fault = json.loads(resp.json['error_message'])
        self.assertEqual('Server', fault['faultcode'])
        self.assertEqual(200, base.http_request(self.service.url, 'GET',
                                                '/v1').status)
