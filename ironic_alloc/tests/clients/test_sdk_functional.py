"""openstacksdk's own functional tests of the baremetal allocation and node
resources (openstack/tests/functional/baremetal/v1/test_allocation.py and
test_node.py, shipped in its wheel), unmodified, against this tier's
service.

They read their clouds from a clouds.yaml: the user, alternate user,
operator and system admin clouds (the OPENSTACKSDK_*_CLOUD variables of
openstack/tests/functional/base.py) all reach the auth-less service
through the endpoint of the ``none`` auth plugin.  stestr runs them in the client
tools' virtualenv; what they may not run is on the committed exclude list
sdk-functional-exclude.txt (policy: ironic_alloc/tests/conformance.py).
"""

import os
import subprocess

from testtools import content

from ironic_alloc.tests.clients import base
from ironic_alloc.tests import conformance

EXCLUDE_LIST = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            'sdk-functional-exclude.txt')
PACKAGE = 'openstack.tests.functional.baremetal.v1'
MODULES = ('test_allocation', 'test_node')
REGEX = r'^%s\.(%s)\.' % (PACKAGE.replace('.', r'\.'), '|'.join(MODULES))
RUN_TIMEOUT = 600
TEST_TIMEOUT = 120
# Services the functional base class looks for besides bare metal.
OTHER_SERVICES = ('compute', 'image', 'network', 'block_storage',
                  'identity')
# The environment variables of the functional base class naming the
# clouds it uses, and the cloud name each gets here.
CLOUDS = {
    'OS_CLOUD': 'ironic-alloc-admin',
    'OPENSTACKSDK_OPERATOR_CLOUD': 'ironic-alloc-admin',
    'OPENSTACKSDK_SYSTEM_ADMIN_CLOUD': 'ironic-alloc-system-admin',
    'OPENSTACKSDK_DEMO_CLOUD': 'ironic-alloc-user',
    'OPENSTACKSDK_DEMO_CLOUD_ALT': 'ironic-alloc-user-alt',
}


class TestSDKFunctional(base.ClientTestCase):

    def site_packages(self):
        result = self._run([self.venv.python, '-c',
                            'import os, openstack; print(os.path.dirname('
                            'os.path.dirname(openstack.__file__)))'])
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout.strip()

    def write_clouds(self):
        directory = os.path.join(self.home, '.config', 'openstack')
        os.makedirs(directory, exist_ok=True)
        lines = ['clouds:']
        for name in sorted(set(CLOUDS.values())):
            lines += ['  %s:' % name,
                      '    auth_type: none',
                      # NOTE: the "none" plugin's endpoint, unlike
                      # baremetal_endpoint_override, is what the session
                      # discovers the microversion range of, which the
                      # suites check before every versioned test.
                      '    auth:',
                      '      endpoint: %s' % self.endpoint,
                      '    region_name: RegionOne']
            # That endpoint would answer for every service: the cloud
            # says it has only bare metal (the suites then use no
            # flavor or image, as in an Ironic-only deployment).
            lines += ['    has_%s: false' % service
                      for service in OTHER_SERVICES]
        with open(os.path.join(directory, 'clouds.yaml'), 'w') as f:
            f.write('\n'.join(lines) + '\n')

    def write_stestr_conf(self, site_packages):
        with open(os.path.join(self.home, '.stestr.conf'), 'w') as f:
            f.write('[DEFAULT]\ntest_path=%s\ntop_dir=%s\n' % (
                os.path.join(site_packages, *PACKAGE.split('.')),
                site_packages))

    def run_suite(self):
        env = self.venv.environ(self.home)
        env.update(CLOUDS)
        env['OPENSTACKSDK_FUNC_TEST_TIMEOUT'] = str(base.WAIT)
        # NOTE: the suites' own per-test bound defaults to 5 seconds, less
        # than a node takes through manage, provide and power off with
        # the SDK's polling; their tox environment raises it too.
        env['OS_TEST_TIMEOUT'] = str(TEST_TIMEOUT)
        argv = [self.venv.python, '-m', 'stestr', 'run', '--subunit',
                '--concurrency', '1', '--exclude-list', EXCLUDE_LIST, REGEX]
        result = subprocess.run(argv, capture_output=True, env=env,
                                cwd=self.home, timeout=RUN_TIMEOUT,
                                stdin=subprocess.DEVNULL)
        self.addDetail('stestr-stderr', content.text_content(
            result.stderr.decode('utf-8', 'replace')[-20000:]))
        return result

    def test_allocation_and_node_suites(self):
        conformance.read_exclude_list(EXCLUDE_LIST)
        self.write_clouds()
        self.write_stestr_conf(self.site_packages())
        result = self.run_suite()
        results = conformance.Results.parse(result.stdout)
        self.addDetail('sdk-results', content.text_content(
            'passed %d, skipped %d, failed %d\nskipped:\n%s' % (
                len(results.passed), len(results.skipped),
                len(results.failed), results.skip_report())))

        self.assertEqual([], results.failed, results.failure_report())
        # NOTE: the suites skip a test whose microversion is above the
        # service's maximum (it runs once the maximum rises); any other
        # skip would hide a test, so it fails.
        self.assertEqual(
            [], [test_id for test_id in results.skipped
                 if 'does not provide microversion'
                 not in results.skip_reasons[test_id]],
            results.skip_report())
        self.assertEqual(0, result.returncode,
                         'stestr run exited %d' % result.returncode)
        for module in MODULES:
            self.assertNotEqual(
                [], conformance.matching(results.passed,
                                         r'\.%s\.' % module),
                '%s passed no test' % module)
