"""Schemathesis against the real service: one test per operation.

The class runs schemathesis once (schemathesis_run.run(): the all-in-one
service on SQLite, known nodes and allocations, every phase, a fixed
seed) and each test reads what it saw for one operation of
api/openapi.yaml:

* no check failed: no 5xx, and every answer is described (status code,
  content type, headers, body schema); after a deletion the object is
  gone, after a creation it is there;
* an operation that documents a 2xx answer was answered with one at
  least once, so the checks saw its success path too.  Operations whose
  only answer is an error by design (features absent here: 400; objects
  no node can have: 404) are checked for their errors only.

Further tests check the run itself: it completed every phase with the
seed and number of examples asked, and nothing failed outside an
operation.  A failure names the operation and quotes schemathesis's
report of the case (with a curl command that replays it) and the service
log.

Run alone (one worker: the run is shared by the tests of the class)::

    stestr --test-path=./ironic_alloc/tests/fuzzing run --concurrency=1
"""

import threading

from oslotest import base as oslo_base
import testscenarios
from testtools import content

from ironic_alloc.tests.functional import openapi
from ironic_alloc.tests.fuzzing import schemathesis_run

load_tests = testscenarios.load_tests_apply_scenarios

_LOCK = threading.Lock()
_RESULT = {}


def _shared_run():
    """(Report, service log) of the one run of this process."""
    with _LOCK:
        if 'report' not in _RESULT:
            try:
                _RESULT['report'], _RESULT['log'] = schemathesis_run.run()
            except Exception as exc:
                _RESULT['report'], _RESULT['log'] = None, None
                _RESULT['error'] = exc
        if _RESULT.get('error') is not None:
            raise RuntimeError('the schemathesis run failed: %s'
                               % _RESULT['error'])
        return _RESULT['report'], _RESULT['log']


def _documents_success(doc, path, method):
    responses = doc['paths'][path][method]['responses']
    return any(str(code).startswith('2') for code in responses)


def _scenarios():
    doc = openapi.load()
    return [(op.operation_id, {'operation': op,
                               'documents_success': _documents_success(
                                   doc, op.path, op.method.lower())})
            for op in openapi.operations(doc)]


class SchemathesisTestCase(oslo_base.BaseTestCase):

    @classmethod
    def setUpClass(cls):
        # NOTE: in the class set-up, not in setUp: the run takes minutes,
        # more than a test's own timeout (OS_TEST_TIMEOUT) allows.
        super().setUpClass()
        _shared_run()

    def setUp(self):
        super().setUp()
        self.report, self.service_log = _shared_run()

    def _attach_log(self):
        if self.service_log:
            self.addDetail('service-log', content.text_content(
                self.service_log[-200000:]))


class TestOperation(SchemathesisTestCase):

    scenarios = _scenarios()

    def test_operation(self):
        label = '%s %s' % (self.operation.method, self.operation.path)
        failures = self.report.failures.get(label, [])
        if failures:
            self._attach_log()
            details = self.report.failure_texts.get(label) or '\n'.join(
                '%s phase, check %s, case %s: %s' % failure
                for failure in failures[:10])
            self.fail('%s (%s): %d failed check(s):\n%s'
                      % (label, self.operation.operation_id, len(failures),
                         details))
        statuses = self.report.statuses.get(label)
        self.assertTrue(statuses, '%s was never answered' % label)
        if self.documents_success:
            self.assertGreater(
                self.report.two_hundreds(label), 0,
                '%s never answered 2xx: %s' % (label, dict(statuses)))


class TestRun(SchemathesisTestCase):

    def test_settings(self):
        config = self.report.initialize
        self.assertEqual(schemathesis_run.SEED, config.get('seed'))
        self.assertGreaterEqual(schemathesis_run.MAX_EXAMPLES, 100)
        # Every operation gets the full count: no section of the
        # configuration lowers it for some of them.
        text = schemathesis_run.config_text({}, '/nonexistent')
        self.assertEqual(1, text.count('max-examples'), text)

    def test_every_phase_ran(self):
        self.assertEqual('completed', self.report.stop_reason,
                         self.report.output[-5000:])
        for phase in schemathesis_run.PHASES:
            # NOTE: "failure": a check failed, which the test of its
            # operation reports; anything else (errored, skipped,
            # interrupted) means the phase did not run through.
            self.assertIn(self.report.phases.get(phase),
                          ('success', 'failure'),
                          '%s: %s' % (phase, self.report.phases))
            self.assertGreater(self.report.scenarios[phase], 0, phase)

    def test_no_error_outside_the_checks(self):
        self.assertEqual([], self.report.errors)
        # NOTE: every failure was filed under an operation of the
        # description (a label nobody reads would hide one).
        labels = {'%s %s' % (op.method, op.path)
                  for op in openapi.operations()}
        self.assertEqual([], sorted(set(self.report.failures) - labels))
        if self.report.returncode != 0 and not self.report.failures:
            self._attach_log()
            self.fail('schemathesis exited %s without a failed check:\n%s'
                      % (self.report.returncode, self.report.output[-5000:]))

    def test_stateful_phase_followed_links(self):
        # The links of openapi.yaml (list the nodes, then act on one)
        # were followed: an operation reached only by a link answered.
        self.assertGreater(self.report.stateful_steps, 0)
