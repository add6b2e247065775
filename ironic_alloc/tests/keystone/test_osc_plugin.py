"""This project's OSC plugin with real Keystone authentication: the
``openstack`` command (client virtualenv, tools/setup-client-venv.sh)
logs in with a password, finds the service in the token's catalog as
service type ``baremetal`` (no --os-endpoint) and sends the token.
"""

import uuid

import fixtures
from testtools import content

from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests.keystone import base
from ironic_alloc.tests.keystone import fixtures as ks_fixtures


class TestPluginWithKeystone(base.KeystoneTestCase):

    def setUp(self):
        super().setUp()
        self.venv = client_fixtures.ClientVenv()
        reason = self.venv.missing_reason()
        if reason:
            ia_base.skip_or_fail(self, reason)
        self.home = self.useFixture(fixtures.TempDir()).path
        self.identities.catalog_endpoint('baremetal', self.service.url)

    def openstack(self, *args, password=None):
        name, real_password = self.identities.user('member')
        argv = [self.venv.openstack,
                '--os-auth-url', self.keystone.url,
                '--os-identity-api-version', '3',
                '--os-username', name,
                '--os-password', password or real_password,
                '--os-user-domain-name', ks_fixtures.DOMAIN,
                '--os-project-id', self.identities.project_ids['owner'],
                '--os-region-name', ks_fixtures.REGION,
                '--os-interface', 'public'] + list(args)
        result = self.venv.run(argv, self.home)
        self.addDetail('openstack %s' % ' '.join(args),
                       content.text_content(
                           'exit status %d\nstdout:\n%s\nstderr:\n%s'
                           % (result.returncode, result.stdout,
                              result.stderr)))
        return result

    def test_catalog_endpoint_and_token(self):
        missing = 'cli-missing-%s' % uuid.uuid4().hex[:8]
        result = self.openstack('baremetal', 'allocation', 'lease', 'unset',
                                missing)
        # The request reached the service through the catalog, with a
        # token it accepted: the allocation is looked for, not refused
        # with 401.
        self.assertEqual(1, result.returncode)
        self.assertIn('Allocation %s could not be found' % missing,
                      result.stderr)
        self.assertIn('HTTP 404', result.stderr)

    def test_wrong_password_is_refused(self):
        result = self.openstack('baremetal', 'reservation', 'list',
                                password='wrong-%s' % uuid.uuid4().hex)
        self.assertNotEqual(0, result.returncode)
        self.assertIn('401', result.stderr)

