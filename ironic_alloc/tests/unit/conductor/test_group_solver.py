"""The assignment of allocation groups (conductor/group_solver.py)."""

import itertools
import random

from ironic_alloc.conductor import group_solver
from ironic_alloc.tests import base


def _largest_by_brute_force(candidates):
    """The size of the largest assignment, by trying every one."""
    members = sorted(candidates)
    best = 0
    for size in range(len(members), 0, -1):
        for chosen in itertools.combinations(members, size):
            for nodes in itertools.product(
                    *(candidates[member] for member in chosen)):
                if len(set(nodes)) == size:
                    return size
    return best


class TestSolve(base.TestCase):

    def _check_valid(self, candidates, solution):
        for member, node in solution.assignment.items():
            self.assertIn(node, candidates[member])
        self.assertEqual(len(solution.assignment),
                         len(set(solution.assignment.values())))
        self.assertEqual(
            sorted(set(candidates) - set(solution.assignment)),
            sorted(solution.unmatched))

    def test_greedy_would_fail(self):
        # A tried first takes n1 in a first fit and leaves B nothing.
        candidates = {'a': ['n1', 'n2'], 'b': ['n1']}
        solution = group_solver.solve(candidates)
        self.assertEqual({'a': 'n2', 'b': 'n1'}, solution.assignment)
        self.assertEqual([], solution.unmatched)
        self.assertIsNone(solution.conflict)

    def test_long_chain_of_displacements(self):
        # Member i prefers node i + 1, which member i + 1 takes in a first
        # fit, and the last member can use no other: only a path through
        # the whole chain gives it a node; longer than Python's recursion
        # limit.
        size = 3000
        candidates = {i: [i + 1, i] for i in range(size)}
        candidates[size] = [size]
        # Sorted by str(): build keys that sort in numeric order.
        keyed = {'m%05d' % member: nodes
                 for member, nodes in candidates.items()}
        solution = group_solver.solve(keyed)
        self.assertEqual([], solution.unmatched)
        self._check_valid(keyed, solution)

    def test_not_enough_nodes_names_the_conflict(self):
        candidates = {'a': ['n1', 'n2'], 'b': ['n1', 'n2'],
                      'c': ['n2', 'n1'], 'd': ['n3', 'n4']}
        solution = group_solver.solve(candidates)
        self.assertEqual(1, len(solution.unmatched))
        self._check_valid(candidates, solution)
        self.assertEqual(['a', 'b', 'c'], solution.conflict.members)
        self.assertEqual(['n1', 'n2'], solution.conflict.nodes)

    def test_member_without_candidates(self):
        solution = group_solver.solve({'a': [], 'b': ['n1']})
        self.assertEqual(['a'], solution.unmatched)
        self.assertEqual({'b': 'n1'}, solution.assignment)
        self.assertEqual(group_solver.Conflict(['a'], []),
                         solution.conflict)

    def test_duplicate_candidates_are_one_edge(self):
        solution = group_solver.solve({'a': ['n1', 'n1'], 'b': ['n1']})
        self.assertEqual(1, len(solution.assignment))
        self.assertEqual(['n1'], solution.conflict.nodes)

    def test_empty(self):
        self.assertEqual(group_solver.Solution({}, [], None),
                         group_solver.solve({}))

    def test_preference_order_is_kept(self):
        # Nothing to repair: each member gets its first free choice.
        solution = group_solver.solve({'a': ['n3', 'n1'],
                                       'b': ['n3', 'n2']})
        self.assertEqual({'a': 'n3', 'b': 'n2'}, solution.assignment)

    def test_deterministic_under_a_seed(self):
        rng = random.Random(7)
        nodes = ['n%d' % i for i in range(30)]
        candidates = {'m%d' % i: rng.sample(nodes, 5) for i in range(20)}
        first = group_solver.solve(candidates, seed=42)
        for _ in range(3):
            self.assertEqual(first, group_solver.solve(candidates, seed=42))
        # Another seed tries the members in another order.
        orders = {tuple(group_solver.solve(candidates, seed=seed)
                        .assignment.items()) for seed in range(10)}
        self.assertGreater(len(orders), 1)

    def test_maximum_on_random_graphs(self):
        rng = random.Random(2026)
        for _ in range(300):
            node_count = rng.randint(1, 6)
            nodes = ['n%d' % i for i in range(node_count)]
            candidates = {
                'm%d' % i: rng.sample(nodes, rng.randint(0, node_count))
                for i in range(rng.randint(1, 6))}
            solution = group_solver.solve(candidates,
                                          seed=rng.randint(0, 9))
            self._check_valid(candidates, solution)
            self.assertEqual(_largest_by_brute_force(candidates),
                             len(solution.assignment), candidates)
            if solution.unmatched:
                # Hall's condition fails on the conflict: the members
                # named can use only the nodes named, and are more.
                conflict = solution.conflict
                self.assertIn(solution.unmatched[0], conflict.members)
                used = set()
                for member in conflict.members:
                    used.update(candidates[member])
                self.assertEqual(sorted(used), conflict.nodes)
                self.assertEqual(len(conflict.members) - 1,
                                 len(conflict.nodes))
