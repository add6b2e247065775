"""Helpers for conductor-level tests: node factories and the invariant."""

import collections
import json
import time

from oslo_utils import uuidutils
import sqlalchemy as sa

from ironic_alloc.common import matching
from ironic_alloc.common import picking
from ironic_alloc.common import states
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import models
from ironic_alloc.objects import allocation as allocation_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests.functional import fixtures as ia_fixtures


def make_node(context, **kw):
    values = dict(driver='fake-hardware', provision_state=states.ENROLL,
                  maintenance=False, protected=False, retired=False,
                  console_enabled=False, conductor_group='',
                  resource_class='gold', traits=[])
    values.update(kw)
    node = node_obj.Node(context, **values)
    node.create()
    return node


def make_available_node(context, **kw):
    kw.setdefault('provision_state', states.AVAILABLE)
    kw.setdefault('power_state', states.POWER_OFF)
    return make_node(context, **kw)


def make_allocation(context, conductor_id, **kw):
    values = dict(uuid=uuidutils.generate_uuid(), resource_class='gold',
                  state=states.ALLOCATING, conductor_affinity=conductor_id,
                  traits=[], candidate_nodes=[], extra={})
    values.update(kw)
    allocation = allocation_obj.Allocation(context, **values)
    allocation.create()
    return allocation


def wait_for_allocations(context, ids, timeout=60):
    """Wait until every allocation in ``ids`` left state allocating (or
    was deleted); returns {id: allocation or None}."""
    deadline = time.monotonic() + timeout
    while True:
        rows = {a.id: a for a in allocation_obj.Allocation.list(
            context, filters={'id_in': list(ids)})}
        pending = [i for i in ids
                   if i in rows and rows[i].state == states.ALLOCATING]
        if not pending:
            return {i: rows.get(i) for i in ids}
        if time.monotonic() > deadline:
            raise AssertionError('%d allocations still allocating after '
                                 '%ss: %s' % (len(pending), timeout,
                                              pending[:10]))
        time.sleep(0.05)


def _instance_of(alloc):
    """The instance_uuid a holding row gives its node: a reservation's
    instance, an allocation's own uuid."""
    if alloc.kind == 'reservation':
        return alloc.instance_uuid
    return alloc.uuid


def check_invariant():
    """Node and allocation rows agree; no node has two allocations.

    :returns: list of violations (empty when all is well).
    """
    problems = []
    with sqla_api._session_for_read() as session:
        nodes = {n.id: n for n in session.query(models.Node)}
        allocs = {a.id: a for a in session.query(models.Allocation)}
    by_node = {}
    for alloc in allocs.values():
        if alloc.state == states.ALLOCATION_ACTIVE:
            if alloc.node_id is None:
                problems.append('active allocation %s has no node'
                                % alloc.uuid)
                continue
            if alloc.node_id in by_node:
                problems.append('node %s has allocations %s and %s' % (
                    alloc.node_id, by_node[alloc.node_id], alloc.uuid))
            by_node[alloc.node_id] = alloc.uuid
            node = nodes.get(alloc.node_id)
            if node is None:
                problems.append('allocation %s points to missing node %s'
                                % (alloc.uuid, alloc.node_id))
            elif (node.allocation_id != alloc.id
                  or node.instance_uuid != _instance_of(alloc)):
                problems.append('allocation %s -> node %s, but node has '
                                'allocation_id %s instance_uuid %s' % (
                                    alloc.uuid, node.uuid,
                                    node.allocation_id, node.instance_uuid))
        elif alloc.node_id is not None:
            problems.append('%s allocation %s has node %s' % (
                alloc.state, alloc.uuid, alloc.node_id))
    for node in nodes.values():
        if node.allocation_id is None:
            continue
        alloc = allocs.get(node.allocation_id)
        if alloc is None or alloc.node_id != node.id:
            problems.append('node %s points to allocation %s which does '
                            'not point back' % (node.uuid,
                                                node.allocation_id))
    return problems + check_tallies()


def live_tallies():
    """The node tallies computed from the node rows, their traits and
    capabilities, as {tally key tuple: nodes}, without the triggers."""
    with sqla_api._session_for_read() as session:
        nodes = session.query(models.Node).all()
        traits, capabilities = {}, {}
        for row in session.query(models.NodeTrait):
            traits.setdefault(row.node_id, []).append(row.trait)
        for row in session.query(models.NodeCapability):
            capabilities.setdefault(row.node_id, {})[row.name] = row.value
    counts = collections.Counter()
    for node in nodes:
        values = {name: getattr(node, name)
                  for name in models.TALLY_NODE_COLUMNS}
        values['match_traits'] = matching.traits_column(
            traits.get(node.id, []))
        values['match_capabilities'] = matching.capabilities_column(
            capabilities.get(node.id, {}))
        for condition in picking.PICKABLE:
            values['passes_%s' % condition.field] = picking.holds(
                condition, getattr(node, condition.field))
        counts[tuple(values[name] for name in models.TALLY_KEY)] += 1
    return counts


def stored_tallies():
    """The node tallies as the database holds them: the folded tallies
    plus the changes not yet folded, as {tally key tuple: nodes}.  A tally
    counts under its key as explanations read it (key_json)."""
    # NOTE: one statement, so that a conductor's fold cannot commit
    # between the read of the tallies and that of the changes.
    both = sa.union_all(
        sa.select(sa.null().label('key_json'),
                  *[models.NODE_TALLY_CHANGES.c[name]
                    for name in models.TALLY_KEY],
                  models.NODE_TALLY_CHANGES.c.delta.label('nodes')),
        sa.select(models.NODE_TALLIES.c.key_json,
                  *[sa.null().label(name) for name in models.TALLY_KEY],
                  models.NODE_TALLIES.c.nodes))
    counts = collections.Counter()
    with sqla_api._session_for_read() as session:
        for row in session.execute(both):
            if row[0] is None:
                key = tuple(row[1:-1])
            else:
                key = tuple(json.loads(row[0]))
            counts[key] += row[-1]
    return +counts


def mismatched_tally_keys():
    """The tallies whose key_json is not their key columns."""
    tallies = models.NODE_TALLIES.c
    with sqla_api._session_for_read() as session:
        rows = session.execute(sa.select(
            tallies.id, tallies.key_json,
            *[tallies[name] for name in models.TALLY_KEY])).all()
    return [(row[0], row[1], tuple(row[2:])) for row in rows
            if tuple(json.loads(row[1])) != tuple(row[2:])]


def check_tallies(attempts=5):
    """The stored node tallies equal the live ones, and every tally's
    key_json is its key.

    NOTE: the two are read by separate statements, so a write between them
    (a conductor's periodic task) may make them differ for a moment: a
    difference must last ``attempts`` reads to count.

    :returns: list of problems.
    """
    mismatched = mismatched_tally_keys()
    if mismatched:
        return ['node tallies whose key_json is not their key: %s'
                % mismatched]
    for attempt in range(attempts):
        live, stored = live_tallies(), stored_tallies()
        if live == stored:
            return []
        time.sleep(0.2)
    return ['node tallies differ from the nodes: %s' % sorted(
        (key, stored.get(key, 0), live.get(key, 0))
        for key in set(live) | set(stored)
        if live.get(key, 0) != stored.get(key, 0))]


def start_leaving_conductor(host='leaving-host'):
    """A second conductor, started, that will be stopped by the test
    (``cleanUp()``) to hand its work back; returned once its start-up
    re-drive pass is over, or it would simply do the work it is given
    before stopping."""
    leaving = ia_fixtures.ConductorFixture(
        host=host, allocation_redrive_interval=3600)
    leaving.setUp()
    for _ in range(500):
        if any(w.runs for w in leaving.service.periodic_tasks.watchers()):
            break
        time.sleep(0.01)
    return leaving
