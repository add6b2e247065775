"""SQLAlchemy Core statements of the allocation path, built once.

Every allocation runs these (its creation, the conductor's candidate search
and reservation, its reads and its deletion).  Built once with bind
parameters and run on a plain connection, a statement skips SQLAlchemy's
expression building and the ORM's loading on every call, work that
weighs on statements this short.  The engine caches their compiled
forms.

The constraints of the candidate search live here, in one place
(``candidate_groups``): the search, the reservation's guard and the
explanation of an empty search use them.  Their availability part is the
picking rule of ``common/picking.py``, turned into SQL.  On PostgreSQL
the search and the guard test a node's traits (and capabilities) in one
subquery each (``_search_clauses``), the same answer in a form that is
cheap to plan.
"""

import collections
import json
import operator

import sqlalchemy as sa
from sqlalchemy.dialects import mysql
from sqlalchemy.dialects import postgresql
from sqlalchemy.dialects import sqlite
from sqlalchemy.ext import compiler as sa_compiler

from ironic_alloc.common import matching
from ironic_alloc.common import picking
from ironic_alloc.common import states
from ironic_alloc.db.sqlalchemy import models

ALLOCATIONS = models.Allocation.__table__
GROUPS = models.AllocationGroup.__table__
NODES = models.Node.__table__
NODE_TRAITS = models.NodeTrait.__table__
PROJECT_LOCKS = models.ProjectLock.__table__


def _bind(name, column):
    """A bind parameter typed like ``column``."""
    return sa.bindparam(name, type_=column.type)


# The node lock: a conductor changing a node writes its hostname into
# ``reservation``, on this condition (db api reserve_node).  Every write
# that binds a node to an allocation without holding the lock (the
# conductor's reservation, the API's backfill) is guarded by the same
# clause, so none lands under a conductor's change.
NODE_UNLOCKED = NODES.c.reservation.is_(None)


# Allocations

# The kinds of allocation rows (common/states.py): Ironic's allocations,
# and the reservations of the reservations extension, which hold their
# node the same way.
IS_ALLOCATION = ALLOCATIONS.c.kind == states.ALLOCATION_KIND
IS_RESERVATION = ALLOCATIONS.c.kind == states.RESERVATION_KIND


def _by(column, *where):
    return sa.select(ALLOCATIONS).where(
        ALLOCATIONS.c[column] == _bind('value', ALLOCATIONS.c[column]),
        *where)


# One allocation by id, uuid or name (bind parameter "value").  By uuid
# and by name these are the reads of Ironic's API, which never sees a
# reservation; by id it is the conductor's read of a row it was given
# (a node's allocation_id, whatever its kind).
ALLOCATION_BY = {
    'id': _by('id'),
    'uuid': _by('uuid', IS_ALLOCATION),
    'name': _by('name', IS_ALLOCATION),
}

# The same, with its node's UUID as "node_uuid" (NULL without a node).
# NOTE: a scalar subquery rather than an outer join: the same answer, and
# PostgreSQL plans it faster, for the statement every poll of an
# allocation runs.
_NODE_UUID_OF_ALLOCATION = sa.select(NODES.c.uuid).where(
    NODES.c.id == ALLOCATIONS.c.node_id).scalar_subquery()

ALLOCATION_WITH_NODE_UUID_BY = {
    column: sa.select(ALLOCATIONS,
                      _NODE_UUID_OF_ALLOCATION.label('node_uuid'))
    .where(ALLOCATIONS.c[column] == _bind('value', ALLOCATIONS.c[column]),
           IS_ALLOCATION)
    for column in ('id', 'uuid', 'name')
}

INSERT_ALLOCATION = ALLOCATIONS.insert()

# A new row and every column of it as stored, where the database can
# return them (INSERT ... RETURNING): no read of the row afterwards.
INSERT_ALLOCATION_RETURNING = ALLOCATIONS.insert().returning(
    *ALLOCATIONS.c)

# Per-project limits: the project's row is written (inserted the first
# time) to lock it.  An upsert that updates the row it finds locks that
# row on PostgreSQL and MySQL until the transaction ends, in one statement
# and without an error to recover from when two requests insert it at
# once; SQLite's writers are serialized anyway.
_LOCK_PROJECT = {
    'postgresql': postgresql.insert(PROJECT_LOCKS).on_conflict_do_update(
        index_elements=[PROJECT_LOCKS.c.project_id],
        set_={'project_id': PROJECT_LOCKS.c.project_id}),
    'mysql': mysql.insert(PROJECT_LOCKS).on_duplicate_key_update(
        project_id=PROJECT_LOCKS.c.project_id),
    'sqlite': sqlite.insert(PROJECT_LOCKS).on_conflict_do_update(
        index_elements=[PROJECT_LOCKS.c.project_id],
        set_={'project_id': PROJECT_LOCKS.c.project_id}),
}
_LOCK_PROJECT['mariadb'] = _LOCK_PROJECT['mysql']


def lock_project(conn, project):
    """Lock ``project``'s row of project_locks for the transaction."""
    conn.execute(_LOCK_PROJECT[conn.dialect.name], {'project_id': project})


# The holds of a project by resource class: allocations in any state
# and reservations, whose class is their node's.
_HOLD_CLASS = sa.func.coalesce(ALLOCATIONS.c.resource_class,
                               NODES.c.resource_class)
PROJECT_HOLDS = sa.select(_HOLD_CLASS, sa.func.count()).select_from(
    ALLOCATIONS.outerjoin(NODES, NODES.c.id == ALLOCATIONS.c.node_id),
).where(
    ALLOCATIONS.c.owner == sa.bindparam('project'),
).group_by(_HOLD_CLASS)

# The node an instance UUID is already bound to ("instance_uuid").
NODE_UUID_BY_INSTANCE = sa.select(NODES.c.uuid).where(
    NODES.c.instance_uuid == _bind('instance_uuid', NODES.c.instance_uuid))

# Deletion: the allocation, then its node, locked in that order (the order
# of the reservation too, so the two never deadlock).
ALLOCATION_FOR_DELETE = sa.select(
    ALLOCATIONS.c.id, ALLOCATIONS.c.uuid, ALLOCATIONS.c.node_id,
    ALLOCATIONS.c.kind, ALLOCATIONS.c.instance_uuid,
    ALLOCATIONS.c.expires_at,
).where(ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id)).with_for_update()

# A reservation's row for its deletion (the same lock order).
RESERVATION_FOR_DELETE = sa.select(
    ALLOCATIONS.c.id, ALLOCATIONS.c.uuid, ALLOCATIONS.c.node_id,
    ALLOCATIONS.c.kind, ALLOCATIONS.c.instance_uuid,
    ALLOCATIONS.c.expires_at,
).where(ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id),
        IS_RESERVATION).with_for_update()

# The same row deleted at once, where the database can say what it deleted
# (DELETE ... RETURNING): the DELETE takes the row's lock, so the lock
# order is unchanged, and the locking read is one statement fewer.
DELETE_RESERVATION_RETURNING = ALLOCATIONS.delete().where(
    ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id),
    IS_RESERVATION).returning(
        ALLOCATIONS.c.id, ALLOCATIONS.c.uuid, ALLOCATIONS.c.node_id,
        ALLOCATIONS.c.kind, ALLOCATIONS.c.instance_uuid,
        ALLOCATIONS.c.expires_at)

NODE_FOR_DEALLOCATION = sa.select(
    NODES.c.id, NODES.c.uuid, NODES.c.maintenance, NODES.c.provision_state,
    NODES.c.allocation_id, NODES.c.instance_uuid, NODES.c.instance_info,
    NODES.c.reservation,
).where(NODES.c.id == _bind('id', NODES.c.id)).with_for_update()

DELETE_ALLOCATION = ALLOCATIONS.delete().where(
    ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id))

# Frees node "node_id" (its instance stays: not the allocation's).
FREE_NODE = NODES.update().where(
    NODES.c.id == _bind('node_id', NODES.c.id)).values(
        allocation_id=None)

# Frees a node and unbinds the allocation's instance ("instance_info":
# the node's instance_info without the allocation's traits).
FREE_NODE_AND_INSTANCE = NODES.update().where(
    NODES.c.id == _bind('node_id', NODES.c.id)).values(
        allocation_id=None, instance_uuid=None,
        instance_info=_bind('instance_info', NODES.c.instance_info))

# Leases

# The rule of states.LEASE_ALLOWED_STATES, for the hold of the enclosing
# statement (a row of allocations): it may have a lease, and lose its node
# to an ended one, only while it holds no node or its node is in one of
# those states.  Every write that sets a lease or releases a hold whose
# lease ended carries it in its WHERE clause, so no check made before in
# Python can be overtaken by a deploy.
_LEASE_STATES = sorted(states.LEASE_ALLOWED_STATES)
NODE_LEASABLE = NODES.c.provision_state.in_(_LEASE_STATES)
# Its negation (a node without a provision state counts as deployed, as
# in Python).
NODE_DEPLOYED = sa.or_(NODES.c.provision_state.is_(None),
                       NODES.c.provision_state.notin_(_LEASE_STATES))
HOLD_LEASABLE = sa.or_(
    ALLOCATIONS.c.node_id.is_(None),
    sa.exists().where(NODES.c.id == ALLOCATIONS.c.node_id, NODE_LEASABLE))
HOLD_DEPLOYED = sa.exists().where(NODES.c.id == ALLOCATIONS.c.node_id,
                                  NODE_DEPLOYED)
# What an ended lease may release now: HOLD_LEASABLE, and the node not
# locked by a conductor either.
HOLD_RELEASABLE = sa.or_(
    ALLOCATIONS.c.node_id.is_(None),
    sa.exists().where(NODES.c.id == ALLOCATIONS.c.node_id, NODE_LEASABLE,
                      NODE_UNLOCKED))
# A member of the group of the enclosing statement (a row of
# allocation_groups) holds a deployed node.
GROUP_HOLDS_DEPLOYED = sa.exists().where(
    ALLOCATIONS.c.group_id == GROUPS.c.id, HOLD_DEPLOYED)

# The holds among "hold_ids" whose node is deployed, with that node, to
# name them in a refusal.
DEPLOYED_NODES_OF_HOLDS = sa.select(
    ALLOCATIONS.c.uuid, ALLOCATIONS.c.kind, NODES.c.uuid.label('node_uuid'),
    NODES.c.provision_state,
).select_from(ALLOCATIONS.join(
    NODES, NODES.c.id == ALLOCATIONS.c.node_id)).where(
        ALLOCATIONS.c.id.in_(sa.bindparam('hold_ids', expanding=True)),
        NODE_DEPLOYED).order_by(ALLOCATIONS.c.id)

# The lease of group "group_id" becomes "lease_end" (NULL: none); when
# "leased" (a time), only while none of its members holds a deployed node.
SET_GROUP_LEASE = GROUPS.update().where(
    GROUPS.c.id == _bind('group_id', GROUPS.c.id),
    sa.or_(~sa.bindparam('leased', type_=sa.Boolean),
           ~GROUP_HOLDS_DEPLOYED)).values(
        expires_at=_bind('lease_end', GROUPS.c.expires_at))

# The nodes of the members of group "group_id", locked (after the group)
# in id order.
LOCK_GROUP_NODES = sa.select(NODES.c.id).where(NODES.c.id.in_(
    sa.select(ALLOCATIONS.c.node_id).where(
        ALLOCATIONS.c.group_id == _bind('group_id', ALLOCATIONS.c.group_id),
    ))).order_by(NODES.c.id).with_for_update()

# The lease of hold "hold_id" ends at "lease_end" (NULL: never).
SET_HOLD_EXPIRY = ALLOCATIONS.update().where(
    ALLOCATIONS.c.id == _bind('hold_id', ALLOCATIONS.c.id)).values(
        expires_at=_bind('lease_end', ALLOCATIONS.c.expires_at))

# The node a deploy starts on, locked after its hold (the lock order of
# deletion).
NODE_FOR_DEPLOY = sa.select(
    NODES.c.id, NODES.c.uuid, NODES.c.reservation, NODES.c.allocation_id,
    NODES.c.instance_info,
).where(NODES.c.id == _bind('node_id', NODES.c.id)).with_for_update()

NODE_HOLD = sa.select(NODES.c.allocation_id).where(
    NODES.c.id == _bind('node_id', NODES.c.id))

# The reservation, first half: the allocation becomes active on
# "node_id" only while it is still allocating and owned by "conductor_id".
ACTIVATE_ALLOCATION = ALLOCATIONS.update().where(
    ALLOCATIONS.c.id == _bind('allocation_id', ALLOCATIONS.c.id),
    ALLOCATIONS.c.state == states.ALLOCATING,
    ALLOCATIONS.c.conductor_affinity == _bind(
        'conductor_id', ALLOCATIONS.c.conductor_affinity),
).values(node_id=_bind('node_id', ALLOCATIONS.c.node_id),
         state=states.ALLOCATION_ACTIVE, last_error=None)

NODE_INSTANCE_INFO = sa.select(NODES.c.instance_info).where(
    NODES.c.id == _bind('node_id', NODES.c.id))

# The instance_info of node "node_id" with, one row each, its traits
# among "traits" (the members of an allocation's any-of groups: which of
# them the node brought); one row with a NULL trait when it has none of
# them.  One statement instead of two for a reservation with any-of
# groups.
NODE_INSTANCE_INFO_AND_TRAITS_AMONG = sa.select(
    NODES.c.instance_info, NODE_TRAITS.c.trait).select_from(
    NODES.outerjoin(NODE_TRAITS, sa.and_(
        NODE_TRAITS.c.node_id == NODES.c.id,
        NODE_TRAITS.c.trait.in_(sa.bindparam('traits', expanding=True))))
).where(NODES.c.id == _bind('node_id', NODES.c.id))

SET_NODE_INSTANCE_INFO = NODES.update().where(
    NODES.c.id == _bind('node_id', NODES.c.id)).values(
        instance_info=_bind('instance_info', NODES.c.instance_info))

# Backfill: binds deployed node "node_id" to the active allocation
# "allocation_id" (UUID "allocation_uuid", which becomes the node's
# instance) only while the node is unlocked, in one of "node_states", has
# no allocation and no other instance: the API's checks, made again in the
# write, since the node may have changed since the API read it.
BACKFILL_NODE = NODES.update().where(
    NODES.c.id == _bind('node_id', NODES.c.id),
    NODE_UNLOCKED,
    NODES.c.provision_state.in_(
        sa.bindparam('node_states', expanding=True)),
    NODES.c.allocation_id.is_(None),
    sa.or_(NODES.c.instance_uuid.is_(None),
           NODES.c.instance_uuid == _bind('allocation_uuid',
                                          NODES.c.instance_uuid)),
).values(allocation_id=_bind('allocation_id', NODES.c.allocation_id),
         instance_uuid=_bind('allocation_uuid', NODES.c.instance_uuid))

# Why BACKFILL_NODE matched no row: the node read again, locking it so a
# database reading from an older snapshot (MySQL's repeatable read) shows
# the row the UPDATE saw.
NODE_FOR_BACKFILL_CHECK = sa.select(
    NODES.c.uuid, NODES.c.reservation, NODES.c.provision_state,
    NODES.c.allocation_id, NODES.c.instance_uuid,
).where(NODES.c.id == _bind('node_id', NODES.c.id)).with_for_update()


# Candidates

def candidate_shape(criteria):
    """The shape of an allocation's criteria and their bind parameters.

    Criteria of one shape share their statements: the shape holds whether
    there is a candidate list, an owner, a CPU architecture and a
    conductor group, the numbers of required and forbidden traits, of
    any-of groups and of capabilities, and which minimums are asked for.
    Each count is bounded by the API's limits, so the shapes are few.

    :param criteria: from conductor/allocations.criteria_of(): the keys
        ``resource_class``, ``traits`` (required), ``candidate_uuids`` and
        ``owner``, and optionally ``forbidden_traits``, ``any_of_traits``
        (list of lists) and ``match`` (common/matching.check_match()).
    :returns: (shape, parameters).
    """
    traits = sorted(set(criteria.get('traits') or []))
    forbidden = sorted(set(criteria.get('forbidden_traits') or []))
    any_of = [sorted(set(group))
              for group in criteria.get('any_of_traits') or []]
    match = criteria.get('match') or {}
    candidates = list(criteria.get('candidate_uuids') or [])
    owner = criteria.get('owner')
    params = {'c_resource_class': criteria['resource_class']}
    if candidates:
        params['c_candidates'] = candidates
    if owner:
        params['c_owner'] = owner
    for index, trait in enumerate(traits):
        params['c_trait_%d' % index] = trait
    for index, trait in enumerate(forbidden):
        params['c_forbidden_%d' % index] = trait
    for index, group in enumerate(any_of):
        params['c_any_of_%d' % index] = group
    minimums = tuple(key for key in matching.MINIMUMS if key in match)
    for key in minimums:
        params['c_min_%s' % key] = match[key]
    if 'cpu_arch' in match:
        params['c_cpu_arch'] = match['cpu_arch']
    capabilities = sorted((match.get('capabilities') or {}).items())
    for index, (name, value) in enumerate(capabilities):
        params['c_capability_name_%d' % index] = name
        params['c_capability_value_%d' % index] = value
    if 'conductor_group' in match:
        params['c_conductor_group'] = match['conductor_group']
    shape = Shape(bool(candidates), bool(owner), len(traits),
                  len(forbidden), len(any_of), minimums, 'cpu_arch' in match,
                  len(capabilities), 'conductor_group' in match)
    return shape, params


Shape = collections.namedtuple(
    'Shape', 'candidates owner traits forbidden any_of minimums cpu_arch '
    'capabilities conductor_group')


# One constraint of the candidate search: its kind (the step of an
# explanation's funnel), the name of the parameter holding what it asks
# for (None for a fixed rule), its WHERE clauses, the sentence (formatted
# with words()) that explains why no node passed it and the constraints
# before it, what it removes, in a few words (also formatted), and, for a
# test of the node's rows in another table, that test as a RowTest (else
# None), and the same test of a node's tally key (a TallyKey): a function
# of the key and the parameters that is true when the nodes of the key
# pass (None for the candidate list, which a tally does not hold).
Constraint = collections.namedtuple(
    'Constraint', 'step param clauses reason removes rows tally',
    defaults=(None, None))

# The node has (present) or has not (not present) a row of ``table``
# (node_traits or node_capabilities) for which ``condition`` holds.
RowTest = collections.namedtuple('RowTest', 'table condition present')


def _rule_clause(condition):
    column = NODES.c[condition.field]
    if condition.test == picking.EQUALS:
        return column == condition.value
    if condition.test == picking.IS:
        return column.is_(condition.value)
    return column.isnot(condition.value)


# The picking rule (common/picking.py) as SQL.
PICKABLE_CLAUSES = [_rule_clause(c) for c in picking.PICKABLE]

# The picking rule's conditions as steps of an explanation, in the order
# of the funnel: (step, fields of the rule, what the step removes).
PICKING_STEPS = (
    ('available', ('provision_state',), 'not available'),
    ('maintenance', ('maintenance',), 'in maintenance'),
    ('power_state', ('power_state',), 'without a power state'),
    ('retired', ('retired',), 'retired'),
    ('held', ('allocation_id', 'instance_uuid'),
     'held by an allocation or an instance'),
)
if (sorted(f for _s, fields, _r in PICKING_STEPS for f in fields)
        != sorted(c.field for c in picking.PICKABLE)):
    raise RuntimeError('PICKING_STEPS must place every condition of '
                       'picking.PICKABLE exactly once')

_UNAVAILABLE = ('no node of resource class "%(resource_class)s" is '
                'available (' + picking.describe().replace('%', '%%') + ')')
_PASSED = ('no available node of resource class "%(resource_class)s" that '
           'passed the other constraints ')


def _node_has(table, counting, *conditions):
    """The node has a row of ``table`` (node_traits or node_capabilities)
    for which ``conditions`` hold.

    NOTE: a search reads few nodes, and probes the index per node
    (EXISTS); the funnel classifies every node of the class, and asks the
    subquery once (an uncorrelated IN, which PostgreSQL hashes and SQLite
    and MySQL materialise) instead of once per node.
    """
    if counting:
        return NODES.c.id.in_(sa.select(table.c.node_id).where(*conditions))
    return sa.exists().where(table.c.node_id == NODES.c.id, *conditions)


def _row_constraint(step, param, test, counting, reason, removes, tally):
    """A Constraint whose clause is ``test``, a RowTest."""
    clause = _node_has(test.table, counting, test.condition)
    return Constraint(step, param, [clause if test.present else ~clause],
                      reason, removes, test, tally)


def candidate_groups(shape, counting=False):
    """The constraints that make a node a candidate, in the order of an
    explanation's funnel; parameters from candidate_shape().

    The first one, the resource class, is where the funnel starts; each
    later one removes nodes from what the ones before left.  Built once
    per shape (they hold bind parameters, never values).

    :param counting: the form for classifying every node of the class
        (the funnel) rather than for finding a few (the same answer).
    :returns: tuple of Constraint.
    """
    return _cached(('groups', shape, counting), _candidate_groups, shape,
                   counting)


def _candidate_groups(shape, counting):
    n = NODES.c
    trait = NODE_TRAITS.c.trait

    groups = [Constraint(
        'resource_class', 'c_resource_class',
        [n.resource_class == _bind('c_resource_class', n.resource_class)],
        'no node has resource class "%(resource_class)s"', None,
        tally=lambda key, p: key.resource_class == p['c_resource_class'])]
    for step, fields, removes in PICKING_STEPS:
        groups.append(Constraint(
            step, None, [_rule_clause(c) for c in picking.PICKABLE
                   if c.field in fields], _UNAVAILABLE, removes,
            tally=_passes_fields(fields)))
    if shape.owner:
        owner = _bind('c_owner', n.owner)
        groups.append(Constraint(
            'owner', 'c_owner',
            [sa.or_(n.owner == owner, n.lessee == owner)],
            'no available node of resource class "%(resource_class)s" is '
            'owned or leased by "%(owner)s"',
            'not owned or leased by %(owner)s',
            tally=lambda key, p: p['c_owner'] in (key.owner, key.lessee)))
    for index in range(shape.traits):
        name = 'c_trait_%d' % index
        groups.append(_row_constraint(
            'trait', name,
            RowTest(NODE_TRAITS, trait == _bind(name, trait), True),
            counting, _PASSED + 'has all the traits %(traits)s',
            'lack %%(%s)s' % name,
            lambda key, p, name=name: p[name] in key.traits))
    for index in range(shape.forbidden):
        name = 'c_forbidden_%d' % index
        groups.append(_row_constraint(
            'forbidden_trait', name,
            RowTest(NODE_TRAITS, trait == _bind(name, trait), False),
            counting, _PASSED + 'lacks the forbidden trait %%(%s)s' % name,
            'have the forbidden %%(%s)s' % name,
            lambda key, p, name=name: p[name] not in key.traits))
    for index in range(shape.any_of):
        name = 'c_any_of_%d' % index
        groups.append(_row_constraint(
            'any_of', name,
            RowTest(NODE_TRAITS,
                    trait.in_(sa.bindparam(name, expanding=True)), True),
            counting, _PASSED + 'has one of the traits %%(%s)s' % name,
            'have none of %%(%s)s' % name,
            lambda key, p, name=name: not key.traits.isdisjoint(p[name])))
    for key in shape.minimums:
        name = 'c_min_%s' % key
        column = n['match_%s' % key]
        groups.append(Constraint(
            key, name, [column >= _bind(name, column)],
            _PASSED + 'has %s of at least %%(%s)s' % (key, name),
            'have %s below %%(%s)s or unknown' % (key, name),
            tally=_at_least('match_%s' % key, name)))
    if shape.cpu_arch:
        groups.append(Constraint(
            'cpu_arch', 'c_cpu_arch',
            [n.match_cpu_arch == _bind('c_cpu_arch', n.match_cpu_arch)],
            _PASSED + 'has cpu_arch %(c_cpu_arch)s',
            'not of cpu_arch %(c_cpu_arch)s',
            tally=lambda key, p: key.match_cpu_arch == p['c_cpu_arch']))
    capabilities = models.NodeCapability.__table__.c
    for index in range(shape.capabilities):
        name = 'c_capability_name_%d' % index
        value = 'c_capability_value_%d' % index
        groups.append(_row_constraint(
            'capability', 'c_capability_%d' % index,
            RowTest(models.NodeCapability.__table__, sa.and_(
                capabilities.name == _bind(name, capabilities.name),
                capabilities.value == _bind(value, capabilities.value)),
                True),
            counting,
            _PASSED + 'has the capability %%(%s)s:%%(%s)s' % (name, value),
            'without capability %%(%s)s:%%(%s)s' % (name, value),
            lambda key, p, name=name, value=value: (
                p[name] in key.capabilities
                and key.capabilities[p[name]] == p[value])))
    if shape.candidates:
        groups.append(Constraint(
            'candidates', None,
            [n.uuid.in_(sa.bindparam('c_candidates', expanding=True))],
            'none of the candidate nodes %(candidate_uuids)s is an '
            'available node of resource class "%(resource_class)s" that '
            'passed the other constraints',
            'not among the candidate nodes'))
    if shape.conductor_group:
        groups.append(Constraint(
            'conductor_group', 'c_conductor_group',
            [n.conductor_group == _bind('c_conductor_group',
                                        n.conductor_group)],
            _PASSED + 'is in conductor group "%(c_conductor_group)s"',
            'not in conductor group "%(c_conductor_group)s"',
            tally=lambda key, p: (
                key.conductor_group == p['c_conductor_group'])))
    return tuple(groups)


def _passes_fields(fields):
    """The tally test of the picking rule's conditions on ``fields``."""
    passes = operator.itemgetter(*[models.TALLY_KEY.index('passes_%s' % f)
                                   for f in fields])
    if len(fields) == 1:
        return lambda key, p: passes(key)
    return lambda key, p: all(passes(key))


def _at_least(column, param):
    """The tally test of a minimum: NULL (unknown) never passes."""
    def test(key, p):
        number = getattr(key, column)
        return number is not None and number >= p[param]
    return test


def words(criteria, params):
    """The values a Constraint's reason and removes are formatted with:
    the criteria and the parameters, lists written as comma-separated
    names."""
    values = dict(criteria)
    for name, value in params.items():
        values[name] = (', '.join(value) if isinstance(value, list)
                        else value)
    return values


def _node_rows_at_once(table, tests):
    """The node's rows of ``table`` pass every RowTest of ``tests``: one
    aggregate over them counts the rows that meet each condition (zero
    rows still make one aggregate row, so a test of absence holds for a
    node without any)."""
    one = sa.literal_column('1')
    return sa.select(sa.func.count()).where(
        table.c.node_id == NODES.c.id).having(
        sa.and_(*[
            (count > 0) if test.present else (count == 0)
            for test, count in (
                (test, sa.func.count(sa.case((test.condition, one))))
                for test in tests)])).exists()


class likely(sa.sql.expression.FunctionElement):
    """A test that most rows pass: SQLite's planner hint likely(); on
    other databases (a search form run where it was not made for, as the
    tests do) the test alone."""
    type = sa.Boolean()
    inherit_cache = True
    name = 'likely'


@sa_compiler.compiles(likely)
def _likely_elsewhere(element, compiler, **kw):
    return '(%s)' % compiler.process(element.clauses, **kw)


@sa_compiler.compiles(likely, 'sqlite')
def _likely_sqlite(element, compiler, **kw):
    return 'likely(%s)' % compiler.process(element.clauses, **kw)


def _search_clauses(shape, dialect):
    """The WHERE clauses of the search and of the reservation's guard on
    the database of ``dialect`` (its name): those of candidate_groups(),
    except that PostgreSQL gets the tests of a node's rows in one
    subquery per table.

    NOTE: PostgreSQL turns each EXISTS of a constraint into a semi- or
    anti-join and weighs their orders at every planning (psycopg2 sends
    text, so every statement is planned): a few milliseconds for a few
    trait expressions, more than the search costs to run.  An aggregate
    subquery is never made a join, and one per table gives the planner a
    single filter of unknown selectivity, not one per constraint whose
    product makes it expect too few candidates and sort every free node
    instead of walking the index in order.  SQLite and MySQL keep the
    EXISTS form they had (only PostgreSQL's planning was measured; SQLite
    before 3.39 refuses HAVING without GROUP BY).

    NOTE: SQLite takes "instance_uuid IS NULL" for a lookup of one row in
    the unique index of instance_uuid, though every free node passes it.
    Without a range on uuid (an explanation's examples) it then read
    every free node of the class and sorted them.  likely() tells its
    planner that the tests of the "held" step pass most rows; it walks
    nodes_candidate_idx in uuid order instead and stops at "limit".
    """
    groups = candidate_groups(shape)
    if dialect == 'sqlite':
        return [likely(clause) if constraint.step == 'held' else clause
                for constraint in groups for clause in constraint.clauses]
    if dialect != 'postgresql':
        return [clause for constraint in groups
                for clause in constraint.clauses]
    clauses = [clause for constraint in groups if constraint.rows is None
               for clause in constraint.clauses]
    tests = collections.defaultdict(list)
    for constraint in groups:
        if constraint.rows is not None:
            tests[constraint.rows.table].append(constraint.rows)
    clauses.extend(_node_rows_at_once(table, table_tests)
                   for table, table_tests in tests.items())
    return clauses


# NOTE: a few statements per shape and dialect, so this stays small:
# shapes differ by flags and counts bounded by the API's limits
# ([api]max_traits for the trait expressions together,
# matching.MAX_CAPABILITIES), and real requests use few of them.
_CACHE = {}


def _cached(key, build, *args):
    statement = _CACHE.get(key)
    if statement is None:
        statement = _CACHE.setdefault(key, build(*args))
    return statement


def _search(shape, dialect):
    return sa.select(NODES.c.id).where(*_search_clauses(shape, dialect))


def candidates_named(shape, dialect):
    """Candidate ids of the node named "name" (on the database of
    ``dialect``, as every statement of the search)."""
    return _cached(('named', shape, dialect), lambda: _search(
        shape, dialect).where(NODES.c.name == _bind('name', NODES.c.name)))


def candidates_from(shape, dialect):
    """At most "limit" candidate ids in uuid order from the start."""
    return _cached(('from', shape, dialect), lambda: _search(
        shape, dialect).order_by(NODES.c.uuid).limit(
            sa.bindparam('limit')))


def candidates_after_pivot(shape, dialect):
    """At most "limit" candidate ids in uuid order from "pivot" on."""
    return _cached(('after', shape, dialect), lambda: _search(
        shape, dialect).where(
            NODES.c.uuid >= _bind('pivot', NODES.c.uuid)).order_by(
                NODES.c.uuid).limit(sa.bindparam('limit')))


def candidates_before_pivot(shape, dialect):
    """At most "limit" candidate ids in uuid order before "pivot"."""
    return _cached(('before', shape, dialect), lambda: _search(
        shape, dialect).where(
            NODES.c.uuid < _bind('pivot', NODES.c.uuid)).order_by(
                NODES.c.uuid).limit(sa.bindparam('limit')))


def reserve_node(shape, dialect):
    """The reservation, second half: binds node "node_id" to allocation
    "allocation_id" only while the node is unlocked and still a candidate,
    so a node changed or taken since the search is never reserved and two
    allocations never get the same node."""
    def build():
        return NODES.update().where(
            NODES.c.id == _bind('node_id', NODES.c.id),
            NODE_UNLOCKED,
            *_search_clauses(shape, dialect),
        ).values(
            allocation_id=_bind('allocation_id', NODES.c.allocation_id),
            instance_uuid=sa.select(ALLOCATIONS.c.uuid).where(
                ALLOCATIONS.c.id == _bind('allocation_id',
                                          ALLOCATIONS.c.id),
            ).scalar_subquery())
    return _cached(('reserve', shape, dialect), build)


# Explanations

def constraint_value(constraint, params):
    """What ``constraint`` asks for, as the client wrote it (None for a
    rule of its own)."""
    if constraint.step == 'capability':
        index = constraint.param.rsplit('_', 1)[1]
        return {params['c_capability_name_%s' % index]:
                params['c_capability_value_%s' % index]}
    if constraint.param is None:
        return None
    return params[constraint.param]


def _visible(project, columns=NODES.c):
    """Nodes a project sees (as GET /v1/nodes shows them to it), of
    ``columns``: the nodes' or their tallies'."""
    if not project:
        return []
    visible = _bind('c_visible_project', columns.owner)
    return [sa.or_(columns.owner == visible, columns.lessee == visible)]


def funnel(shape, project):
    """How many nodes of the resource class each constraint removes: the
    number of the first constraint (of candidate_groups(), from 1) that
    each node fails, 0 for a match, and the count of nodes per number.

    NOTE: one pass over the nodes of the class, grouped in SQL.  Each
    constraint becomes 0 or 1 by a CASE of its own first, since a
    comparison with NULL (a node without an owner, say) is neither true
    nor false and must count as failing.

    :param project: count only the nodes this project owns or leases
        (bind parameter "c_visible_project"), or False for all.
    """
    def build():
        groups = candidate_groups(shape, counting=True)
        failing = [(sa.case((sa.and_(*g.clauses), 0), else_=1) == 1, number)
                   for number, g in enumerate(groups[1:], 1)]
        first = sa.case(*failing, else_=0).label('step')
        passes = sa.select(first).where(
            *groups[0].clauses, *_visible(project)).subquery()
        return sa.select(passes.c.step, sa.func.count()).group_by(
            passes.c.step)
    return _cached(('funnel', shape, bool(project)), build)


# Node tallies (models.NODE_TALLIES): the counts an explanation reads.

TALLIES = models.NODE_TALLIES
TALLY_CHANGES = models.NODE_TALLY_CHANGES


class TallyKey(collections.namedtuple('TallyKey', models.TALLY_KEY)):
    """A tally key as the tally tests of candidate_groups() read it."""

    __slots__ = ()

    @property
    def traits(self):
        return matching.tally_traits(self.match_traits)

    @property
    def capabilities(self):
        return matching.tally_capabilities(self.match_capabilities)


def tally_key_json(key):
    """node_tallies.key_json of the tally key ``key`` (its values in
    models.TALLY_KEY order)."""
    return json.dumps(list(key), separators=(',', ':'))


def tally_key(row_key):
    """The TallyKey of a key as tally_rows() gives it: a key_json, or the
    tuple of a change's key columns."""
    if isinstance(row_key, str):
        return TallyKey(*json.loads(row_key))
    return TallyKey(*row_key)


def tally_rows(project):
    """Every tally key of the class "c_resource_class" with a count: the
    changes not yet folded and the folded tallies, by one statement (so
    both are read at one moment); the sum of a key's counts is its number
    of nodes.

    Each row is (key_json, the key's columns, count). A change gives its
    key by its columns (key_json is NULL); a tally gives its key_json only
    (the columns are NULL), which takes the database and the reader a
    fraction of the work of the columns.

    :param project: only the keys of nodes this project owns or leases
        (bind parameter "c_visible_project"), or False for all.
    """
    def build():
        def of_class(table):
            return (table.c.resource_class == _bind(
                'c_resource_class', table.c.resource_class),
                *_visible(project, table.c))
        # NOTE: the changes first: the first SELECT of a UNION types its
        # columns (MySQL's booleans are read as such).
        changes = sa.select(
            sa.null().label('key_json'),
            *[TALLY_CHANGES.c[name] for name in models.TALLY_KEY],
            TALLY_CHANGES.c.delta.label('nodes')).where(
                *of_class(TALLY_CHANGES))
        tallies = sa.select(
            TALLIES.c.key_json,
            *[sa.null().label(name) for name in models.TALLY_KEY],
            TALLIES.c.nodes).where(*of_class(TALLIES))
        return sa.union_all(changes, tallies)
    return _cached(('tally_rows', bool(project)), build)


# Folding (db api fold_node_tallies): the lock, the oldest changes, every
# tally.
LOCK_TALLY_FOLDS = models.NODE_TALLY_FOLDS.update().where(
    models.NODE_TALLY_FOLDS.c.id == 1).values(
        folded_at=sa.bindparam('now'))

# NOTE: by the primary key's index, not a scan (see the index of
# node_tally_changes).
ANY_TALLY_CHANGE = sa.select(TALLY_CHANGES.c.id).order_by(
    TALLY_CHANGES.c.id).limit(1)

TALLY_CHANGES_TO_FOLD = sa.select(
    TALLY_CHANGES.c.id, TALLY_CHANGES.c.delta,
    *[TALLY_CHANGES.c[name] for name in models.TALLY_KEY]).order_by(
        TALLY_CHANGES.c.id).limit(sa.bindparam('limit'))

ALL_TALLIES = sa.select(
    TALLIES.c.id, TALLIES.c.nodes,
    *[TALLIES.c[name] for name in models.TALLY_KEY])

DELETE_TALLY_CHANGES = TALLY_CHANGES.delete().where(
    TALLY_CHANGES.c.id.in_(sa.bindparam('ids', expanding=True)))

INSERT_TALLY = TALLIES.insert()

ADD_TO_TALLY = TALLIES.update().where(
    TALLIES.c.id == sa.bindparam('tally_id')).values(
        nodes=TALLIES.c.nodes + sa.bindparam('delta'))

DELETE_TALLY = TALLIES.delete().where(
    TALLIES.c.id == sa.bindparam('tally_id'))


def matching_uuids(shape, project, dialect):
    """At most "limit" UUIDs of candidates in uuid order (visible to the
    project "c_visible_project" when ``project``)."""
    def build():
        return sa.select(NODES.c.uuid).where(
            *_search_clauses(shape, dialect), *_visible(project)).order_by(
                NODES.c.uuid).limit(sa.bindparam('limit'))
    return _cached(('uuids', shape, bool(project), dialect), build)


# Reservations (API extension 1.2): allocation rows of kind
# 'reservation', active from their insertion, whose node gets
# allocation_id = the row's id and instance_uuid = the reservation's
# instance, as an allocation's does.

# Every column of a reservation and its node's UUID as "node_uuid".
_RESERVATION_WITH_NODE_UUID = sa.select(
    ALLOCATIONS, _NODE_UUID_OF_ALLOCATION.label('node_uuid')).where(
        IS_RESERVATION)

RESERVATION_BY_UUID = _RESERVATION_WITH_NODE_UUID.where(
    ALLOCATIONS.c.uuid == _bind('value', ALLOCATIONS.c.uuid))

RESERVATION_BY_ID = _RESERVATION_WITH_NODE_UUID.where(
    ALLOCATIONS.c.id == _bind('value', ALLOCATIONS.c.id))


def reservation_list(filters):
    """At most "limit" reservations in id order after "marker" (an id,
    0 for the start), with the filters named in ``filters`` (instance_uuid,
    node_id, owner: bind parameters of those names)."""
    def build(names):
        query = _RESERVATION_WITH_NODE_UUID.where(
            ALLOCATIONS.c.id > _bind('marker', ALLOCATIONS.c.id))
        for name in names:
            query = query.where(
                ALLOCATIONS.c[name] == _bind(name, ALLOCATIONS.c[name]))
        return query.order_by(ALLOCATIONS.c.id).limit(
            sa.bindparam('limit'))
    names = tuple(sorted(filters))
    return _cached(('reservations', names), build, names)


# Why a node cannot be reserved, for each node of a request ("uuids"):
# the node's fields of the picking rule, its lock, who sees it, and the
# kind of the row holding it (NULL when none).
NODES_FOR_RESERVATION = sa.select(
    NODES.c.id, NODES.c.uuid, NODES.c.owner, NODES.c.lessee,
    NODES.c.reservation,
    *[NODES.c[field] for field in sorted(
        {c.field for c in picking.PICKABLE} | {'resource_class'})],
    ALLOCATIONS.c.kind.label('holder_kind'),
).select_from(NODES.outerjoin(
    ALLOCATIONS, ALLOCATIONS.c.id == NODES.c.allocation_id)).where(
        NODES.c.uuid.in_(sa.bindparam('uuids', expanding=True)))

# Each condition of the picking rule as the reason a node fails it, in a
# reservation's 409 (formatted with the node's fields).
REFUSALS = {
    'provision_state': 'in provision state %(provision_state)s',
    'maintenance': 'in maintenance',
    'retired': 'retired',
    'power_state': 'without a power state',
    'allocation_id': 'held by an allocation',
    'instance_uuid': 'held by an instance',
}
if sorted(REFUSALS) != sorted(c.field for c in picking.PICKABLE):
    raise RuntimeError('REFUSALS must give a reason for every condition '
                       'of picking.PICKABLE')


def reserve_for_reservation(project):
    """Binds node "node_id" to reservation "allocation_id" with instance
    "instance_uuid" only while the node is unlocked, passes the picking
    rule and, when ``project``, is owned or leased by the project
    "c_visible_project": one winner for every node."""
    def build(project):
        return NODES.update().where(
            NODES.c.id == _bind('node_id', NODES.c.id),
            NODE_UNLOCKED,
            *PICKABLE_CLAUSES,
            *_visible(project),
        ).values(
            allocation_id=_bind('allocation_id', NODES.c.allocation_id),
            instance_uuid=_bind('instance_uuid', NODES.c.instance_uuid))
    return _cached(('reserve_for_reservation', bool(project)), build,
                   bool(project))


# A reservation inserted in the same transaction ("reservation_id") now
# tries node "new_node_id": the node it tried before was taken since it
# was read.
MOVE_RESERVATION = ALLOCATIONS.update().where(
    ALLOCATIONS.c.id == _bind('reservation_id', ALLOCATIONS.c.id)).values(
        node_id=_bind('new_node_id', ALLOCATIONS.c.node_id))


# A reservation's new lease ("expires_at"), of reservation
# "reservation_id" only, under the rule of leases (HOLD_LEASABLE).
RENEW_RESERVATION = ALLOCATIONS.update().where(
    ALLOCATIONS.c.id == _bind('reservation_id', ALLOCATIONS.c.id),
    IS_RESERVATION, HOLD_LEASABLE,
).values(expires_at=_bind('expires_at', ALLOCATIONS.c.expires_at))


# Allocation groups (extension 1.3)

INSERT_GROUP = GROUPS.insert()

GROUP_BY = {
    column: sa.select(GROUPS).where(
        GROUPS.c[column] == _bind('value', GROUPS.c[column]))
    for column in ('id', 'uuid', 'name')
}

# The members of group "group_id" (the rows it created), with their
# nodes' UUIDs.
GROUP_MEMBERS = sa.select(
    ALLOCATIONS, _NODE_UUID_OF_ALLOCATION.label('node_uuid'),
).where(ALLOCATIONS.c.group_id == _bind('group_id', ALLOCATIONS.c.group_id)
        ).order_by(ALLOCATIONS.c.id)

# The members of every group of "group_ids" (a page of a list), with
# their nodes' UUIDs, by group then id.
GROUPS_MEMBERS = sa.select(
    ALLOCATIONS, _NODE_UUID_OF_ALLOCATION.label('node_uuid'),
).where(ALLOCATIONS.c.group_id.in_(
    sa.bindparam('group_ids', expanding=True))
).order_by(ALLOCATIONS.c.group_id, ALLOCATIONS.c.id)

# The state of the group of allocation "id" (None: no group).
GROUP_STATE_OF_ALLOCATION = sa.select(GROUPS.c.uuid, GROUPS.c.state).where(
    GROUPS.c.id == ALLOCATIONS.c.group_id,
    ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id))

# The group id of allocation "id" (None: no group), read without a lock.
GROUP_OF_ALLOCATION = sa.select(ALLOCATIONS.c.group_id).where(
    ALLOCATIONS.c.id == _bind('id', ALLOCATIONS.c.id))

# The commit's first write: the group becomes active only while it is
# still allocating and owned by "conductor_id".
ACTIVATE_GROUP = GROUPS.update().where(
    GROUPS.c.id == _bind('group_id', GROUPS.c.id),
    GROUPS.c.state == states.GROUP_ALLOCATING,
    GROUPS.c.conductor_affinity == _bind('conductor_id',
                                         GROUPS.c.conductor_affinity),
).values(state=states.GROUP_ACTIVE, last_error=None, explanation=None)

# A failed group (the same condition), then its new members.
FAIL_GROUP = GROUPS.update().where(
    GROUPS.c.id == _bind('group_id', GROUPS.c.id),
    GROUPS.c.state == states.GROUP_ALLOCATING,
    GROUPS.c.conductor_affinity == _bind('conductor_id',
                                         GROUPS.c.conductor_affinity),
).values(state=states.GROUP_ERROR,
         last_error=_bind('last_error', GROUPS.c.last_error),
         explanation=_bind('explanation', GROUPS.c.explanation))

FAIL_GROUP_MEMBERS = ALLOCATIONS.update().where(
    ALLOCATIONS.c.group_id == _bind('of_group', ALLOCATIONS.c.group_id),
    ALLOCATIONS.c.state == states.ALLOCATING,
).values(state=states.ALLOCATION_ERROR,
         last_error=_bind('last_error', ALLOCATIONS.c.last_error))

# Take-over of a group: the group and its allocating members move to
# "new_id" only while "old_id" owns the group.
TAKE_OVER_GROUP = GROUPS.update().where(
    GROUPS.c.id == _bind('group_id', GROUPS.c.id),
    GROUPS.c.state == states.GROUP_ALLOCATING,
    GROUPS.c.conductor_affinity == _bind('old_id',
                                         GROUPS.c.conductor_affinity),
).values(conductor_affinity=_bind('new_id', GROUPS.c.conductor_affinity))

TAKE_OVER_GROUP_MEMBERS = ALLOCATIONS.update().where(
    ALLOCATIONS.c.group_id == _bind('of_group', ALLOCATIONS.c.group_id),
    ALLOCATIONS.c.state == states.ALLOCATING,
).values(conductor_affinity=_bind('new_id',
                                  ALLOCATIONS.c.conductor_affinity))

# A member's name, written in the commit that deleted the allocation it
# takes it from (a swap).
SET_ALLOCATION_NAME = ALLOCATIONS.update().where(
    ALLOCATIONS.c.id == _bind('allocation_id', ALLOCATIONS.c.id)).values(
        name=_bind('name', ALLOCATIONS.c.name))

# A hand-over: node "node_id" passes from allocation "old_id" to
# "new_id" (UUID "new_uuid") while it is unlocked, held by the old one
# and in a state of states.HANDOVER_STATES; its instance moves with it
# when it was the old allocation's ("old_uuid").
HAND_OVER_NODE = NODES.update().where(
    NODES.c.id == _bind('node_id', NODES.c.id),
    NODE_UNLOCKED,
    NODES.c.allocation_id == _bind('old_id', NODES.c.allocation_id),
    NODES.c.provision_state.in_(states.HANDOVER_STATES),
).values(
    allocation_id=_bind('new_id', NODES.c.allocation_id),
    instance_uuid=sa.case(
        (NODES.c.instance_uuid == _bind('old_uuid', NODES.c.instance_uuid),
         _bind('new_uuid', NODES.c.instance_uuid)),
        else_=NODES.c.instance_uuid))
