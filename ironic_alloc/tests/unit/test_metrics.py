"""The metrics module on its own: names, route classes, the sample
dashboard, and recording that never raises."""

import json
import os
import re
import subprocess
import sys

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


class TestMultiprocessModeChosenFirst(base.TestCase):
    """prometheus-client fixes its values' mode when it is imported: the
    service's modules must leave that import to the metrics module, after
    ironic-alloc-api has chosen the mode (a library importing it with them
    made every API worker's counters invisible to the scrape)."""

    def test_service_modules_do_not_import_prometheus_client(self):
        code = ('import sys\n'
                'import ironic_alloc.api.app\n'
                'import ironic_alloc.cmd.api\n'
                'import ironic_alloc.cmd.conductor\n'
                'import ironic_alloc.cmd.standalone\n'
                'import ironic_alloc.conductor.manager\n'
                'print(sorted(m for m in sys.modules\n'
                '             if m.split(".")[0] == "prometheus_client"))\n')
        result = subprocess.run([sys.executable, '-c', code],
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual('[]', result.stdout.strip().splitlines()[-1])

    def test_prepare_refuses_after_an_early_import(self):
        code = ('import sys, tempfile\n'
                'import prometheus_client\n'
                'from ironic_alloc.common import metrics\n'
                'try:\n'
                '    metrics.prepare_multiprocess(tempfile.mkdtemp())\n'
                'except RuntimeError as exc:\n'
                '    print("refused:", exc)\n')
        env = {k: v for k, v in os.environ.items()
               if k != metrics.MULTIPROCESS_ENV}
        result = subprocess.run([sys.executable, '-c', code], env=env,
                                capture_output=True, text=True, timeout=120)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('refused: prometheus-client was imported before',
                      result.stdout)
