"""``python -m tools.bench groups``: its checks of groups and rounds, and
the command end to end, both modes tiny, against a standalone
ironic-alloc on SQLite (its latencies are never asserted, only that
every group was checked and sound)."""

import os

import fixtures
from oslotest import base as oslo_base

from tools.bench import groups
from tools.bench.tests import command


def _group(uuid, state, nodes, last_error=None):
    return {'uuid': uuid, 'state': state, 'last_error': last_error,
            'members': [{'uuid': '%s-%d' % (uuid, n),
                         'state': 'active' if node else state,
                         'node_uuid': node}
                        for n, node in enumerate(nodes)]}


class TestChecks(oslo_base.BaseTestCase):

    def test_sound_groups(self):
        self.assertEqual([], groups.check_group(
            _group('g1', 'active', ['n1', 'n2']), 2))
        self.assertEqual([], groups.check_group(
            _group('g2', 'error', [None, None], 'no node'), 2))

    def test_partial_groups(self):
        problems = groups.check_group(_group('g1', 'active', ['n1', None]),
                                      2)
        self.assertIn('partial group', problems[0])
        problems = groups.check_group(
            _group('g2', 'error', ['n1', None], 'no node'), 2)
        self.assertEqual(['failed group g2 holds 1 nodes: a partial group'],
                         problems)

    def test_node_twice_in_a_group_and_wrong_size(self):
        problems = groups.check_group(_group('g1', 'active', ['n1', 'n1']),
                                      3)
        self.assertEqual(2, len(problems))
        self.assertIn('has 2 members, not 3', problems[0])
        self.assertIn('holds a node twice', problems[1])

    def test_round_counts(self):
        sound = {'a': _group('a', 'active', ['n1', 'n2']),
                 'b': _group('b', 'error', [None, None], 'taken')}
        self.assertEqual([], groups.check_round(sound, 2, 3, 2))
        # Room for only one group of two on three nodes: two active is a
        # broken round, and so is a node held by two groups.
        doubled = {'a': _group('a', 'active', ['n1', 'n2']),
                   'b': _group('b', 'active', ['n3', 'n2'])}
        problems = groups.check_round(doubled, 2, 3, 2)
        self.assertEqual(2, len(problems))
        self.assertIn('2 groups active and 0 error, expected 1 and 1',
                      problems[0])
        self.assertIn('node n2 held by groups a and b', problems[1])

    def test_format(self):
        summary = {'count': 2, 'min': 0.1, 'mean': 0.2, 'p50': 0.2,
                   'p90': 0.3, 'p99': 0.3, 'max': 0.3}
        text = groups.format_groups({
            'large': {'members': 50, 'nodes': 1000, 'runs': 2,
                      'latency': summary, 'target_p50': 1.0,
                      'problems': []},
            'scarcity': {'clients': 2, 'group_size': 2, 'nodes': 3,
                         'expected_active': 1, 'active': 1, 'error': 1,
                         'round_seconds': summary,
                         'rounds': [{'active': 1, 'error': 1,
                                     'seconds': 0.5, 'slowest': 0.4,
                                     'problems': []}],
                         'problems': []},
            'problems': [], 'interrupted': False})
        self.assertIn('POST -> active p50 200 ms, p90 300 ms, max 300 ms; '
                      'p50 target <= 1000 ms met', text)
        self.assertIn('(expected per round: 1 active, 1 error)', text)
        self.assertIn('no node held twice', text)


class TestCommand(oslo_base.BaseTestCase):

    def test_both_modes_tiny_on_sqlite(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        out = os.path.join(workdir, 'groups.json')
        # NOTE: 4 clients of 3 members on 10 nodes: room for 3 groups, so
        # every round has a loser.
        _result, document = command.run_bench(
            self, ['groups', '--large-nodes', '30', '--members', '5',
                   '--repeat', '3', '--scarce-nodes', '10', '--clients', '4',
                   '--group-size', '3', '--rounds', '3', '--no-progress'],
            out, timeout=240)
        self.assertEqual([], document['problems'])
        self.assertEqual(3, document['large']['latency']['count'])
        scarcity = document['scarcity']
        self.assertEqual([(3, 1)] * 3, [(r['active'], r['error'])
                                        for r in scarcity['rounds']])
