"""The "solver" workload: the CPU time of an allocation group's
assignment (ironic_alloc/conductor/group_solver.py) alone, with no
service and no database.

Each shape builds the candidate lists a conductor would hand to the
solver for a group of ``members`` members, then times ``solve()`` with
the process's CPU clock, ``repeat`` times:

``dense``
    every member may use every one of ``nodes`` nodes, each member's list
    in its own random order (the lists a large, loosely constrained group
    gets at most: the matcher fetches no more candidates than that);
``chain``
    member i can use node i + 1 or node i and prefers node i + 1, the
    last member only node i + 1 too: the first fit leaves the last member
    without a node and only one alternating path through every member
    repairs it (the deepest repair there is);
``scarce``
    every member lists the same ``members`` - 1 nodes: no assignment
    exists, so every phase of the search and the explanation of the
    conflict run to the end.

Every solution is checked: distinct nodes, each from its member's list,
every member assigned for ``dense`` and ``chain``, exactly one member
left without a node for ``scarce``.
"""

import random
import statistics
import time

from ironic_alloc.conductor import group_solver

SHAPES = ('dense', 'chain', 'scarce')


class SolverCheckFailed(Exception):
    """A solution broke a rule of the assignment."""


def candidate_lists(shape, members, nodes, seed):
    """dict member -> list of node ids for ``shape``."""
    rng = random.Random(seed)
    keys = ['member-%05d' % index for index in range(members)]
    if shape == 'dense':
        fleet = list(range(nodes))
        lists = {}
        for key in keys:
            order = fleet[:]
            rng.shuffle(order)
            lists[key] = order
        return lists
    if shape == 'chain':
        lists = {key: [index + 1, index] for index, key in enumerate(keys)}
        lists[keys[-1]] = [members - 1]
        return lists
    if shape == 'scarce':
        pool = list(range(members - 1))
        lists = {}
        for key in keys:
            order = pool[:]
            rng.shuffle(order)
            lists[key] = order
        return lists
    raise ValueError('unknown shape %r' % shape)


def check(shape, candidates, solution):
    """Raise SolverCheckFailed unless ``solution`` is sound for ``shape``."""
    used = list(solution.assignment.values())
    if len(used) != len(set(used)):
        raise SolverCheckFailed('%s: a node was given twice' % shape)
    for member, node in solution.assignment.items():
        if node not in candidates[member]:
            raise SolverCheckFailed('%s: %s got %s, not one of its '
                                    'candidates' % (shape, member, node))
    expected = 1 if shape == 'scarce' else 0
    if len(solution.unmatched) != expected:
        raise SolverCheckFailed('%s: %d members without a node, expected %d'
                                % (shape, len(solution.unmatched), expected))


def measure(shapes, members, nodes, repeat, seed=2026):
    """Time solve() on each shape.

    :returns: list of dicts: shape, members, candidates (edges), repeat,
        cpu_seconds (the list), median and max seconds.
    """
    results = []
    for shape in shapes:
        candidates = candidate_lists(shape, members, nodes, seed)
        times = []
        for run in range(repeat):
            started = time.process_time()
            solution = group_solver.solve(candidates, seed=seed + run)
            times.append(time.process_time() - started)
            check(shape, candidates, solution)
        results.append({
            'shape': shape,
            'members': members,
            'candidates': sum(len(nodes_) for nodes_ in candidates.values()),
            'repeat': repeat,
            'cpu_seconds': times,
            'median_seconds': statistics.median(times),
            'max_seconds': max(times),
        })
    return results


def format_results(results):
    """The results as a table for the terminal."""
    lines = ['%-8s %8s %12s %8s %12s %12s' % (
        'shape', 'members', 'candidates', 'repeat', 'median CPU s',
        'max CPU s')]
    for row in results:
        lines.append('%-8s %8d %12d %8d %12.4f %12.4f' % (
            row['shape'], row['members'], row['candidates'], row['repeat'],
            row['median_seconds'], row['max_seconds']))
    return '\n'.join(lines)
