"""``python -m tools.bench solver``: its shapes, its checks, and the
command end to end on a small group (its times are never asserted)."""

import os

import fixtures
from oslotest import base as oslo_base

from ironic_alloc.conductor import group_solver
from tools.bench import solver
from tools.bench.tests import command


class TestShapes(oslo_base.BaseTestCase):

    def test_dense(self):
        lists = solver.candidate_lists('dense', 4, 10, seed=1)
        self.assertEqual(4, len(lists))
        for nodes in lists.values():
            self.assertEqual(list(range(10)), sorted(nodes))

    def test_chain_needs_one_repair_through_every_member(self):
        lists = solver.candidate_lists('chain', 5, 10, seed=1)
        # The first fit alone leaves the last member without a node.
        taken = set()
        for key in sorted(lists):
            free = [node for node in lists[key] if node not in taken]
            if free:
                taken.add(free[0])
        self.assertEqual(4, len(taken))
        self.assertEqual([], group_solver.solve(lists).unmatched)

    def test_scarce_has_no_assignment(self):
        lists = solver.candidate_lists('scarce', 6, 10, seed=1)
        self.assertEqual(1, len(group_solver.solve(lists).unmatched))

    def test_check_refuses_a_node_given_twice(self):
        lists = {'a': [1, 2], 'b': [1, 2]}
        bad = group_solver.Solution({'a': 1, 'b': 1}, [], None)
        self.assertRaises(solver.SolverCheckFailed, solver.check, 'dense',
                          lists, bad)

    def test_check_refuses_a_node_not_a_candidate(self):
        bad = group_solver.Solution({'a': 3}, [], None)
        self.assertRaises(solver.SolverCheckFailed, solver.check, 'dense',
                          {'a': [1, 2]}, bad)

    def test_check_refuses_a_missing_member(self):
        bad = group_solver.Solution({'a': 1}, ['b'], None)
        self.assertRaises(solver.SolverCheckFailed, solver.check, 'chain',
                          {'a': [1], 'b': [1]}, bad)


class TestCommand(oslo_base.BaseTestCase):

    def test_end_to_end(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        result, document = command.run_bench(
            self, ['solver', '--members', '20', '--nodes', '200',
                   '--repeat', '2'],
            os.path.join(workdir, 'solver.json'), timeout=120)
        self.assertEqual('solver', document['workload'])
        self.assertEqual(['dense', 'chain', 'scarce'],
                         [row['shape'] for row in document['results']])
        dense = document['results'][0]
        self.assertEqual(20 * 200, dense['candidates'])
        self.assertEqual(2, len(dense['cpu_seconds']))
        self.assertIn('median CPU s', result.stdout)
