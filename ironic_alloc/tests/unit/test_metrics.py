"""The metrics module on its own: names, route classes, the sample
dashboard, and recording that never raises."""

import json
import os
import re

import fixtures
from prometheus_client import parser

from ironic_alloc.api.middleware import metrics as metrics_middleware
from ironic_alloc.common import metrics
from ironic_alloc.tests import base

DASHBOARD = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'etc',
                         'grafana', 'ironic-alloc.json')
# What the text format adds to a family's name for its samples.
_SUFFIXES = ('_total', '_bucket', '_count', '_sum')


def _family_names():
    """Every metric family of one process's exposition."""
    metrics.set_allocation_counter(lambda: [])
    metrics.watch_worker_pool('unit-test', lambda: (0, 0, 1))
    try:
        text = metrics.exposition().decode()
    finally:
        metrics.forget_worker_pool('unit-test')
        metrics.set_allocation_counter(None)
    return {family.name for family in parser.text_string_to_metric_families(
        text)}


class TestNames(base.TestCase):

    def test_prefixed_and_documented(self):
        metrics.set_allocation_counter(lambda: [])
        self.addCleanup(metrics.set_allocation_counter, None)
        text = metrics.exposition().decode()
        families = list(parser.text_string_to_metric_families(text))
        self.assertGreaterEqual(len(families), 9)
        for family in families:
            self.assertTrue(family.name.startswith(metrics.PREFIX),
                            family.name)
            self.assertGreater(len(family.documentation), 20, family.name)

    def test_dashboard_uses_existing_names(self):
        with open(DASHBOARD) as f:
            dashboard = json.load(f)
        exprs = [target['expr'] for panel in dashboard['panels']
                 for target in panel['targets']]
        used = set(re.findall(r'ironic_alloc_\w+', ' '.join(exprs)))
        self.assertTrue(used)
        names = _family_names()
        for name in used:
            base_name = name
            for suffix in _SUFFIXES:
                if name.endswith(suffix) and name[:-len(suffix)] in names:
                    base_name = name[:-len(suffix)]
            self.assertIn(base_name, names, name)


class TestRouteClass(base.TestCase):

    def test_bounded(self):
        for path, route in (('/', 'root'), ('', 'root'), ('/v1', 'v1'),
                            ('/v1/', 'v1'),
                            ('/v1/nodes', 'v1/nodes'),
                            ('/v1/nodes/abc/states/provision', 'v1/nodes'),
                            ('/v1/allocations/x', 'v1/allocations'),
                            ('/v1/reservations', 'v1/reservations'),
                            ('/v1/whatever/1', 'v1/other'),
                            ('/healthcheck', 'healthcheck'),
                            ('/metrics', 'metrics'),
                            ('/metrics/x', 'other'),
                            ('/../../etc/passwd', 'other')):
            self.assertEqual(route, metrics_middleware.route_class(path),
                             path)


class TestRecordingNeverRaises(base.TestCase):

    def test_unknown_failure_reason_is_logged(self):
        logger = self.useFixture(
            fixtures.FakeLogger(name='ironic_alloc.common.metrics'))
        metrics.allocation_failed('not-a-reason')
        self.assertIn('Recording metric allocation_failed failed',
                      logger.output)

    def test_collector_error_is_reported_as_down(self):
        def broken():
            raise RuntimeError('database gone')
        metrics.set_allocation_counter(broken)
        self.addCleanup(metrics.set_allocation_counter, None)
        text = metrics.exposition().decode()
        self.assertIn('ironic_alloc_allocation_count_up 0.0', text)
        self.assertNotIn('ironic_alloc_allocations{', text)
