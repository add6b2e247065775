"""Per-project limits on their own: what a limit refuses, the Keystone
resource names, the [limits] options and their check at start-up, and the
cache of the limits read from Keystone."""

import os
import tempfile

import fixtures
from keystoneauth1 import exceptions as ksa_exceptions
from oslo_config import cfg

from ironic_alloc.common import exception
from ironic_alloc.common import limits
from ironic_alloc.conf import limits as limits_conf
from ironic_alloc.tests import base


class ProjectLimitsTestCase(base.TestCase):

    def test_class_limit_first_then_total(self):
        project_limits = limits.ProjectLimits('p', 4, {'gold': 1})
        refusal = project_limits.refusal({'gold': 1}, 'gold')
        self.assertIsInstance(refusal, exception.ProjectLimitExceeded)
        self.assertEqual(403, refusal.code)
        self.assertIn('limit baremetal_holds:gold: 1 of 1 holds',
                      str(refusal))
        self.assertIsNone(project_limits.refusal({'gold': 1}, 'silver'))
        refusal = project_limits.refusal({'gold': 1, 'silver': 2, None: 1},
                                         'silver')
        self.assertIn('limit baremetal_holds: 4 of 4 holds', str(refusal))
        self.assertIsNone(project_limits.refusal({}, 'gold'))

    def test_many_at_once_counts_usage_and_request_apart(self):
        project_limits = limits.ProjectLimits('p', 5, {'gold': 3})
        # Two in use and two asked for: past the class limit of 3.
        refusal = project_limits.refusal_of_many({'gold': 2}, {'gold': 2})
        self.assertIsInstance(refusal, exception.ProjectLimitExceeded)
        self.assertEqual(403, refusal.code)
        self.assertEqual(
            'Project p would pass its limit baremetal_holds:gold: 2 of 3 '
            'holds (allocations and reservations) are in use and the '
            'allocation group asks for 2 more, so none of them can be '
            'created.', str(refusal))
        self.assertIsNone(project_limits.refusal_of_many({'gold': 2},
                                                         {'gold': 1}))
        # The total counts every class of the request.
        refusal = project_limits.refusal_of_many(
            {'gold': 1, None: 1}, {'gold': 1, 'silver': 3})
        self.assertIn('limit baremetal_holds: 2 of 5 holds', str(refusal))
        self.assertIn('asks for 4 more', str(refusal))
        self.assertIsNone(project_limits.refusal_of_many({}, {}))

    def test_negative_is_no_limit(self):
        project_limits = limits.ProjectLimits('p', -1, {'gold': -1})
        self.assertFalse(project_limits)
        self.assertIsNone(project_limits.refusal({'gold': 100}, 'gold'))
        self.assertTrue(limits.ProjectLimits('p', 0))

    def test_resource_names(self):
        self.assertEqual('baremetal_holds', limits.resource_name())
        self.assertEqual('baremetal_holds:CUSTOM_GOLD',
                         limits.resource_name('CUSTOM_GOLD'))
        parsed = limits._from_resource_names('p', {
            'baremetal_holds': 10, 'baremetal_holds:gold': 2,
            'baremetal_holds:': 1, 'other_service_thing': 3})
        self.assertEqual(10, parsed.total)
        self.assertEqual({'gold': 2}, parsed.per_class)

    def test_config_driver(self):
        self.config(driver='config', project_holds=3,
                    project_holds_per_resource_class={'gold': 1},
                    group='limits')
        project_limits = limits.for_project('p')
        self.assertEqual((3, {'gold': 1}),
                         (project_limits.total, project_limits.per_class))
        self.assertIsNone(limits.for_project(None))
        self.config(project_holds=-1, project_holds_per_resource_class={},
                    group='limits')
        self.assertIsNone(limits.for_project('p'))
        self.config(driver='none', project_holds=0, group='limits')
        self.assertIsNone(limits.for_project('p'))


class _FakeEnforcer:
    """Stands for oslo.limit's Enforcer, whose limits come from Keystone,
    a service outside this process (the keystone tier uses the real
    one)."""

    reads = 0
    project_limits = {}
    failure = None

    def __init__(self, usage_callback, cache=True):
        assert callable(usage_callback) and cache is False

    def get_registered_limits(self, names):
        type(self).reads += 1
        if self.failure is not None:
            raise self.failure
        return [('baremetal_holds', 10), ('baremetal_holds:gold', 3)]

    def get_project_limits(self, project, names):
        return list(self.project_limits.get(project, {}).items())


class KeystoneLimitsTestCase(base.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.MonkeyPatch(
            'oslo_limit.limit.Enforcer', _FakeEnforcer))
        _FakeEnforcer.reads = 0
        _FakeEnforcer.failure = None
        _FakeEnforcer.project_limits = {'p': {'baremetal_holds:gold': 1}}
        limits.reset()
        self.addCleanup(limits.reset)
        self.config(driver='keystone', group='limits')

    def test_project_limit_replaces_the_registered_one(self):
        self.config(cache_time=0, group='limits')
        project_limits = limits.for_project('p')
        self.assertEqual((10, {'gold': 1}),
                         (project_limits.total, project_limits.per_class))
        other = limits.for_project('q')
        self.assertEqual((10, {'gold': 3}), (other.total, other.per_class))
        self.assertEqual(2, _FakeEnforcer.reads)

    def test_cached_per_project(self):
        self.config(cache_time=600, group='limits')
        for _ in range(3):
            limits.for_project('p')
        limits.for_project('q')
        self.assertEqual(2, _FakeEnforcer.reads)

    def test_keystone_failure_is_a_503(self):
        _FakeEnforcer.failure = ksa_exceptions.ConnectFailure('refused')
        error = self.assertRaises(exception.LimitsUnavailable,
                                  limits.for_project, 'p')
        self.assertEqual(503, error.code)
        self.assertNotIn('refused', str(error))

    def test_unknown_endpoint_is_a_503(self):
        # oslo.limit's error for an [oslo_limit]endpoint_id Keystone does
        # not have.
        _FakeEnforcer.failure = ValueError("Can't find endpoint for x")
        error = self.assertRaises(exception.LimitsUnavailable,
                                  limits.for_project, 'p')
        self.assertEqual(503, error.code)


class CheckConfigTestCase(base.TestCase):

    def _conf(self, text):
        conf = cfg.ConfigOpts()
        limits_conf.register_opts(conf)
        fd, path = tempfile.mkstemp(suffix='.conf')
        self.addCleanup(os.remove, path)
        with os.fdopen(fd, 'w') as f:
            f.write(text)
        conf(['--config-file', path])
        return conf

    def assertStops(self, text, *words):
        exc = self.assertRaises(SystemExit, limits.check_config,
                                self._conf(text))
        message = str(exc)
        self.assertNotIn('\n', message)
        for word in words:
            self.assertIn(word, message)

    def test_malformed_options_stop_start_up(self):
        self.assertStops('[limits]\ndriver = quota\n',
                         'Invalid [limits]driver', 'quota')
        self.assertStops('[limits]\nproject_holds = many\n',
                         'Invalid [limits]project_holds', 'many')
        self.assertStops('[limits]\nproject_holds = -2\n',
                         'Invalid [limits]project_holds')
        self.assertStops('[limits]\nproject_holds_per_resource_class = '
                         'gold:two\n',
                         'Invalid [limits]project_holds_per_resource_class')
        self.assertStops('[limits]\nproject_holds_per_resource_class = '
                         'gold\n',
                         'Invalid [limits]project_holds_per_resource_class')

    def test_keystone_needs_an_endpoint_and_credentials(self):
        self.assertStops('[limits]\ndriver = keystone\n',
                         'Invalid [limits]driver keystone', 'endpoint_id')
        self.assertStops('[limits]\ndriver = keystone\n[oslo_limit]\n'
                         'endpoint_id = abc\n',
                         'Invalid [limits]driver keystone', 'auth_type')

    def test_good_options(self):
        limits.check_config(self._conf(
            '[limits]\ndriver = config\nproject_holds = 5\n'
            'project_holds_per_resource_class = gold:1,silver:-1\n'))
        limits.check_config(self._conf(
            '[limits]\ndriver = keystone\n[oslo_limit]\nendpoint_id = abc\n'
            'auth_type = password\n'))
