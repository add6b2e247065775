"""``python -m tools.bench explain``: its pure parts, and the command end
to end against a standalone ironic-alloc on SQLite with a small fleet (its
latencies are never asserted, only that every answer was checked and
sound)."""

import os

import fixtures
from oslotest import base as oslo_base

from tools.bench import explain
from tools.bench import report
from tools.bench.tests import command


class TestFleet(oslo_base.BaseTestCase):

    def test_plan_adds_up(self):
        for count in (1, 9, 10, 1001, 100000):
            plan = explain.fleet_plan(count)
            self.assertEqual(count, sum(n for n, _t, _p in plan))
            self.assertEqual(len(explain.KINDS), len(plan))

    def test_plan_follows_the_shares(self):
        total = sum(share for share, _t, _p in explain.KINDS)
        plan = explain.fleet_plan(total * 100)
        self.assertEqual([share * 100 for share, _t, _p in explain.KINDS],
                         [n for n, _t, _p in plan])

    def test_states(self):
        self.assertEqual({'owner': 'bench-p1', 'conductor_group': 'bench-b'},
                         explain.state_changes(0))
        # Every second node is held; the first rule met wins.
        self.assertEqual('active',
                         explain.state_changes(1)['provision_state'])
        self.assertTrue(explain.state_changes(28)['maintenance'])
        self.assertNotIn('maintenance', explain.state_changes(57))
        self.assertIsNone(explain.state_changes(96)['power_state'])
        self.assertTrue(explain.state_changes(100)['retired'])
        self.assertEqual('bench-p2', explain.state_changes(2)['owner'])
        self.assertEqual('bench-a', explain.state_changes(4)[
            'conductor_group'])


class TestAnswers(oslo_base.BaseTestCase):

    ANSWER = {'nodes': 10, 'matching_nodes': 4,
              'steps': [{'step': 'available', 'removed': 5},
                        {'step': 'trait', 'removed': 1}]}

    def test_sound(self):
        self.assertEqual([], explain.check_answer(self.ANSWER, 10))

    def test_other_start(self):
        self.assertEqual(['starts from 10 nodes, not 11'],
                         explain.check_answer(self.ANSWER, 11))

    def test_removals_do_not_add_up(self):
        answer = dict(self.ANSWER, matching_nodes=5)
        self.assertEqual(
            ['removals 6 plus matches 5 differ from the start 10'],
            explain.check_answer(answer, 10))

    def test_funnel_of(self):
        self.assertEqual((10, 4, (('available', 5), ('trait', 1))),
                         explain.funnel_of(self.ANSWER))

    def test_format(self):
        summary = {'count': 2, 'min': 0.01, 'mean': 0.02, 'p50': 0.02,
                   'p90': 0.03, 'p99': 0.06, 'max': 0.07}
        text = report.format_explain({
            'nodes': 10, 'concurrency': 2, 'requests': 2, 'seconds': 1.0,
            'per_second': 2.0, 'latency': summary,
            'by_request': {'plain': summary},
            'funnels': {'plain': [[10, 4, [['available', 5],
                                           ['trait', 1]]]]},
            'problems': [], 'target_p99': 0.05, 'interrupted': False})
        self.assertIn('p99 60.0 ms: target <= 50 ms NOT met', text)
        self.assertIn('plain: 4 of 10 nodes match; removed: available 5, '
                      'trait 1', text)
        self.assertIn('every answer consistent', text)


class TestCommand(oslo_base.BaseTestCase):

    def test_small_fleet_on_sqlite(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        out = os.path.join(workdir, 'explain.json')
        _result, document = command.run_bench(
            self, ['explain', '--nodes', '300', '--requests', '30',
                   '--warmup', '3', '--concurrency', '3', '--no-progress'],
            out, timeout=240)
        self.assertEqual([], document['problems'])
        self.assertEqual(30, document['requests'])
        self.assertEqual(300, document['nodes'])
        plain = document['funnels']['plain']
        self.assertEqual(1, len(plain))
        nodes, matching, steps = plain[0]
        # Every second node is held (see explain.STATES).
        self.assertEqual(150, dict(steps)['available'])
        for name, _fields in explain.REQUESTS:
            self.assertEqual(1, len(document['funnels'][name]), name)
            self.assertEqual(10, document['by_request'][name]['count'])
        rich = document['funnels']['rich'][0]
        self.assertLess(0, rich[1])
        self.assertLess(rich[1], matching)
