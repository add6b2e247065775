"""``python -m tools.bench reservations``: its checks, and the command end
to end against a standalone ironic-alloc on SQLite with a small fleet (its
latencies are never asserted, only that every answer was checked and
sound)."""

import json
import os
import threading

import fixtures
from oslotest import base as oslo_base

from tools.bench import report
from tools.bench import reservations
from tools.bench.tests import command

A, B, C = ('aaaaaaaa-0000-4000-8000-%012d' % n for n in range(3))


class TestHeldNodes(oslo_base.BaseTestCase):

    def test_a_node_taken_twice_is_a_problem(self):
        held = reservations.HeldNodes()
        self.assertIsNone(held.take(A, 'r1'))
        self.assertIn('while r1 still holds it', held.take(A, 'r2'))
        held.drop(A)
        self.assertIsNone(held.take(A, 'r3'))

    def test_concurrent_takers_of_one_node(self):
        held = reservations.HeldNodes()
        problems = []
        gate = threading.Barrier(8)

        def take(number):
            gate.wait()
            problem = held.take(B, 'r%d' % number)
            if problem:
                problems.append(problem)

        threads = [threading.Thread(target=take, args=(n,))
                   for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        self.assertEqual(7, len(problems))


class TestAnswers(oslo_base.BaseTestCase):

    def test_created(self):
        body = {'reservation': {'uuid': 'r1', 'node_uuid': B,
                                'expires_at': '2026-11-26T10:00:00+00:00'}}
        self.assertEqual(([], 'r1', B),
                         reservations.check_created(body, [A, B]))

    def test_created_for_a_node_not_asked_for(self):
        body = {'reservation': {'uuid': 'r1', 'node_uuid': C}}
        problems, _r, _n = reservations.check_created(body, [A, B])
        self.assertEqual(2, len(problems))
        self.assertIn('not one of', problems[0])
        self.assertIn('without expires_at', problems[1])

    def _refusal(self, reasons):
        return {'error_message': json.dumps({
            'faultcode': 'Client', 'faultstring': 'none', 'debuginfo': None,
            'reasons': reasons})}

    def test_refused_with_a_reason_per_node_in_order(self):
        body = self._refusal([{'node_uuid': A, 'reason': 'reserved'},
                              {'node_uuid': B, 'reason': 'not found'}])
        self.assertEqual([], reservations.check_refused(body, [A, B]))

    def test_refused_without_reasons_or_out_of_order(self):
        self.assertEqual(1, len(reservations.check_refused({}, [A])))
        body = self._refusal([{'node_uuid': B, 'reason': 'reserved'},
                              {'node_uuid': A, 'reason': 'reserved'}])
        self.assertEqual(1, len(reservations.check_refused(body, [A, B])))

    def test_format(self):
        summary = {'count': 2, 'min': 0.01, 'mean': 0.02, 'p50': 0.02,
                   'p90': 0.03, 'p99': 0.04, 'max': 0.07}
        text = report.format_reservations({
            'nodes': 10, 'choose': 5, 'concurrency': 2, 'requests': 2,
            'created': 2, 'refused': 0, 'seconds': 1.0, 'per_second': 2.0,
            'post_latency': summary, 'delete_latency': summary,
            'problems': [], 'target_p99': 0.05, 'target_per_second': 200,
            'interrupted': False})
        self.assertIn('POST p99 40.0 ms: target <= 50 ms met; 2.0 '
                      'reservations per second: target >= 200 NOT met',
                      text)
        self.assertIn('no node held twice', text)


class TestCommand(oslo_base.BaseTestCase):

    def test_small_fleet_on_sqlite(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        out = os.path.join(workdir, 'reservations.json')
        # NOTE: 4 clients choosing 3 of 6 nodes: lists often meet, so
        # requests race for the same nodes and some find them all held.
        _result, document = command.run_bench(
            self, ['reservations', '--nodes', '6', '--choose', '3',
                   '--requests', '200', '--warmup', '5', '--concurrency',
                   '4', '--no-progress'], out, timeout=240)
        self.assertEqual([], document['problems'])
        self.assertEqual(200, document['requests'])
        self.assertEqual(200, document['created'] + document['refused'])
        self.assertEqual(document['created'],
                         document['delete_latency']['count'])
        self.assertLess(0, document['created'])
