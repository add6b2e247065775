"""The upstream conformance suite: tempest with ironic-tempest-plugin, both
unmodified (pinned in tools/client-requirements.txt, installed into the
client tools' virtualenv), run against the service of this tier through
the real Keystone: tempest logs in as Keystone's bootstrap admin, makes its
own users and projects (dynamic credentials) and finds the service in the
token's catalog as ``baremetal``.

The configuration is the one of the plugin's fake-driver API job
(ironic-tempest-functional-python3): the ``fake-hardware`` driver, no
compute, image or network service.  ``max_microversion`` is read from
``GET /v1`` at run time, so it follows the service's maximum.

The plugin's API modules run are those whose features ironic_alloc
claims; the tests of features the microversion table marks unsupported
are on the committed exclude list, tempest-exclude.txt (see
ironic_alloc/tests/conformance.py for its policy).
"""

import os
import subprocess

import fixtures
from testtools import content

from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests import conformance
from ironic_alloc.tests.keystone import base
from ironic_alloc.tests.keystone import fixtures as ks_fixtures

EXCLUDE_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'tempest-exclude.txt')
# The plugin's API modules of the features ironic_alloc claims.
MODULES = ('test_allocations', 'test_nodes', 'test_nodestates',
           'test_chassis', 'test_conductor', 'test_api_discovery',
           'test_microversion_enforcement', 'test_shards')
PACKAGE = 'ironic_tempest_plugin.tests.api.admin'
REGEX = r'^%s\.(%s)\.' % (PACKAGE.replace('.', r'\.'), '|'.join(MODULES))
# test_allocations.py of the pinned plugin holds this many tests; all of
# them must pass (counted, so that a skip fails).
ALLOCATION_TESTS = 17
# Bounds a hung run (the suite itself takes far less).
RUN_TIMEOUT = 1500
CONCURRENCY = 4


def _ini(sections):
    lines = []
    for group, options in sections.items():
        lines.append('[%s]' % group)
        lines.extend('%s = %s' % item for item in options.items())
        lines.append('')
    return '\n'.join(lines)


class TestTempestPlugin(base.KeystoneTestCase):

    def setUp(self):
        super().setUp()
        # NOTE: the suite alone outlasts the tier's per-test bound.
        self.useFixture(fixtures.Timeout(RUN_TIMEOUT + 120, gentle=True))
        self.venv = client_fixtures.ClientVenv()
        reason = self.venv.missing_reason()
        self.tempest = os.path.join(self.venv.path, 'bin', 'tempest')
        if not reason and not os.access(self.tempest, os.X_OK):
            reason = ('%s is missing (%s)'
                      % (self.tempest, client_fixtures.SETUP_HINT))
        if reason:
            ia_base.skip_or_fail(self, reason)
        self.workspace = self.useFixture(fixtures.TempDir()).path
        self.identities.catalog_endpoint('baremetal', self.service.url)

    def max_microversion(self):
        response = self.request('GET', '/v1')
        self.assertStatus(200, response)
        return response.json['version']['version']

    def write_config(self):
        lock_path = os.path.join(self.workspace, 'locks')
        os.makedirs(lock_path)
        path = os.path.join(self.workspace, 'tempest.conf')
        with open(path, 'w') as f:
            f.write(_ini({
                'DEFAULT': {
                    'log_file': os.path.join(self.workspace, 'tempest.log'),
                    'debug': 'true',
                },
                'oslo_concurrency': {'lock_path': lock_path},
                'auth': {
                    'admin_username': 'admin',
                    'admin_password': ks_fixtures.ADMIN_PASSWORD,
                    'admin_project_name': 'admin',
                    'admin_domain_name': 'Default',
                    'use_dynamic_credentials': 'true',
                    'create_isolated_networks': 'false',
                },
                'identity': {
                    'uri_v3': self.keystone.url,
                    'auth_version': 'v3',
                    'region': ks_fixtures.REGION,
                    'v3_endpoint_type': 'public',
                },
                'identity-feature-enabled': {'api_v2': 'false'},
                # What the fake-driver API job runs without.
                'service_available': {
                    'ironic': 'true',
                    'nova': 'false',
                    'neutron': 'false',
                    'glance': 'false',
                    'cinder': 'false',
                    'swift': 'false',
                    'ironic_inspector': 'false',
                },
                'baremetal': {
                    'catalog_type': 'baremetal',
                    'endpoint_type': 'public',
                    'driver': 'fake-hardware',
                    'enabled_hardware_types': 'fake-hardware',
                    'enabled_deploy_interfaces': 'fake',
                    'enabled_boot_interfaces': 'fake',
                    'enabled_power_interfaces': 'fake',
                    'enabled_management_interfaces': 'fake',
                    'enabled_console_interfaces': 'no-console',
                    'min_microversion': '1.1',
                    'max_microversion': self.max_microversion(),
                    'power_timeout': '60',
                    'unprovision_timeout': '60',
                    'active_timeout': '60',
                },
            }))
        return path

    def run_tempest(self, config):
        argv = [self.tempest, 'run', '--config-file', config,
                '--regex', REGEX, '--exclude-list', EXCLUDE_LIST,
                '--concurrency', str(CONCURRENCY), '--subunit']
        result = subprocess.run(argv, capture_output=True,
                                timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL,
                                env=self.venv.environ(self.workspace),
                                cwd=self.workspace)
        self.addDetail('tempest-stderr', content.text_content(
            result.stderr.decode('utf-8', 'replace')[-20000:]))
        log = os.path.join(self.workspace, 'tempest.log')
        self.addOnException(lambda exc_info: self.addDetail(
            'tempest-log', content.text_content(
                open(log, encoding='utf-8', errors='replace').read()[-50000:]
                if os.path.exists(log) else '(no tempest.log)')))
        return result

    def test_plugin_api_suite(self):
        excluded = conformance.read_exclude_list(EXCLUDE_LIST)
        result = self.run_tempest(self.write_config())
        results = conformance.Results.parse(result.stdout)
        self.addDetail('tempest-results', content.text_content(
            'passed %d, skipped %d, failed %d\nskipped:\n%s' % (
                len(results.passed), len(results.skipped),
                len(results.failed), results.skip_report())))

        self.assertEqual([], results.failed, results.failure_report())
        self.assertEqual(0, result.returncode,
                         'tempest run exited %d' % result.returncode)
        allocations = conformance.matching(
            results.passed, r'^%s\.test_allocations\.' % PACKAGE)
        self.assertEqual(ALLOCATION_TESTS, len(allocations),
                         'test_allocations: passed\n%s\nskipped\n%s' % (
                             '\n'.join(allocations),
                             '\n'.join(conformance.matching(
                                 results.skipped, 'test_allocations'))))
        # Every module chosen ran, and every exclusion still names a test
        # (a stale line would hide nothing and mislead).
        ran = results.passed + results.skipped
        for module in MODULES:
            self.assertNotEqual(
                [], conformance.matching(ran, r'\.%s\.' % module),
                '%s ran no test' % module)
        self.assertNotEqual([], excluded)
