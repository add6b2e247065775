"""The assignment of an allocation group: one distinct node per member.

The group's new members each come with the candidate nodes the SQL
matcher found for them.  A greedy first fit can fail where an assignment
exists (member A can use n1 or n2, member B only n1: giving n1 to A leaves
B with nothing), so the assignment is a maximum bipartite matching of
members against nodes (Hopcroft and Karp's algorithm), found whenever one
exists.

Fetching at most ``m`` candidates per member, m the number of members,
keeps this complete: a set S of members that contains a member whose list
was cut has at least m >= |S| candidates between them, and a set without
one has all its candidates, so Hall's condition holds on the cut lists
whenever it holds on the whole fleet.

The members are tried in a fixed order and each member's candidates in
the order given (the matcher's, which starts at a random point of the
candidate index so that concurrent groups spread over the fleet): the
same input and seed give the same assignment.

Pure functions only; no database, no configuration.
"""

import collections
import random

Solution = collections.namedtuple('Solution',
                                  'assignment unmatched conflict')
Solution.__doc__ = """The outcome of solve().

``assignment``: member -> node, one distinct node each, as many members
as can be given one; ``unmatched``: the members left without a node, in
the order they were tried ([] when everyone has one); ``conflict``: None,
or a ``Conflict`` for the first unmatched member."""

Conflict = collections.namedtuple('Conflict', 'members nodes')
Conflict.__doc__ = """Why a member has no node: ``members`` (the member
itself and every member it competes with) can only use ``nodes``, which
are fewer than they are (Hall's condition fails on this set)."""


def solve(candidates, seed=None):
    """Give each member a distinct node from its candidates.

    :param candidates: dict member -> sequence of node ids, in the order
        they are preferred.  Members are compared with each other only for
        their order (sorted by their ``str()``).
    :param seed: when given, the members are tried in an order shuffled
        with it instead of their sorted order.
    :returns: a Solution.  Its assignment covers every member whenever
        such an assignment exists.
    """
    members = sorted(candidates, key=str)
    if seed is not None:
        random.Random(seed).shuffle(members)
    # NOTE: a node listed twice for one member is one edge.
    edges = {member: list(dict.fromkeys(candidates[member]))
             for member in members}
    node_of = {}
    member_of = {}
    # A first fit in preference order gives most members their node at
    # once; the matching phases below repair what it got wrong.
    for member in members:
        for node in edges[member]:
            if node not in member_of:
                node_of[member] = node
                member_of[node] = member
                break
    while len(node_of) < len(members):
        layers = _layers(members, edges, node_of, member_of)
        if layers is None:
            break
        next_edge = dict.fromkeys(members, 0)
        for member in members:
            if member not in node_of:
                _augment(member, edges, layers, next_edge, node_of,
                         member_of)
    unmatched = [member for member in members if member not in node_of]
    conflict = None
    if unmatched:
        conflict = _conflict(unmatched[0], edges, member_of)
    return Solution(node_of, unmatched, conflict)


def _layers(members, edges, node_of, member_of):
    """Breadth-first layers from the members without a node, along
    alternating paths (any candidate, then the member holding it).

    :returns: dict member -> layer, or None when no path reaches a free
        node (the matching is maximum).
    """
    layer = {member: 0 for member in members if member not in node_of}
    queue = collections.deque(layer)
    reaches_free_node = False
    while queue:
        member = queue.popleft()
        for node in edges[member]:
            holder = member_of.get(node)
            if holder is None:
                reaches_free_node = True
            elif holder not in layer:
                layer[holder] = layer[member] + 1
                queue.append(holder)
    return layer if reaches_free_node else None


def _augment(root, edges, layers, next_edge, node_of, member_of):
    """Look for an alternating path from ``root`` to a free node that
    follows the layers, and flip it.  Iterative: a group may be larger
    than Python's recursion limit.

    :returns: True when ``root`` got a node.
    """
    path = [root]
    nodes = []
    while path:
        member = path[-1]
        member_edges = edges[member]
        moved = False
        while next_edge[member] < len(member_edges):
            node = member_edges[next_edge[member]]
            next_edge[member] += 1
            holder = member_of.get(node)
            if holder is None:
                nodes.append(node)
                for on_path, new_node in zip(path, nodes):
                    node_of[on_path] = new_node
                    member_of[new_node] = on_path
                return True
            if layers.get(holder) == layers[member] + 1:
                nodes.append(node)
                path.append(holder)
                moved = True
                break
        if not moved:
            # NOTE: a dead end for this phase: never entered again.
            layers[member] = None
            path.pop()
            if nodes:
                nodes.pop()
    return False


def _conflict(member, edges, member_of):
    """The members ``member`` competes with and the nodes they share: all
    reachable along alternating paths, every one of those nodes taken
    (the matching is maximum), so they are one fewer than the members."""
    seen_members = {member}
    seen_nodes = set()
    queue = collections.deque([member])
    while queue:
        current = queue.popleft()
        for node in edges[current]:
            if node in seen_nodes:
                continue
            seen_nodes.add(node)
            holder = member_of.get(node)
            if holder is not None and holder not in seen_members:
                seen_members.add(holder)
                queue.append(holder)
    return Conflict(sorted(seen_members, key=str),
                    sorted(seen_nodes, key=str))
