"""The node lock guards every statement that binds a node.

A conductor changing a node holds its lock (``reservation``); a write that
binds the node to an allocation without holding it must carry the one
shared clause ``statements.NODE_UNLOCKED``.  Checked on the statements
themselves, so a new binding statement without the guard fails here.
"""

import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import statements as stmts
from ironic_alloc.tests import base


def _where_clauses(statement):
    where = statement.whereclause
    if isinstance(where, sa.sql.elements.BooleanClauseList):
        return list(where.clauses)
    return [where]


def _binds_a_node(statement):
    """True for an UPDATE of nodes that sets allocation_id to a value
    given at run time (freeing a node sets a literal NULL)."""
    if statement.table is not stmts.NODES:
        return False
    value = statement._values.get('allocation_id')
    return value is not None and not (
        isinstance(value, sa.sql.elements.BindParameter)
        and not value.required and value.value is None)


class TestNodeLockGuard(base.TestCase):

    def _binding_statements(self):
        found = {name: value for name, value in vars(stmts).items()
                 if isinstance(value, sa.sql.dml.Update)
                 and _binds_a_node(value)}
        every_operator = {
            'resource_class': 'gold', 'owner': 'p', 'candidate_uuids': ['u'],
            'traits': ['CUSTOM_A', 'CUSTOM_B'], 'forbidden_traits': ['X'],
            'any_of_traits': [['Y', 'Z']],
            'match': {'cpus': 1, 'memory_mb': 2, 'local_gb': 3,
                      'cpu_arch': 'x86_64', 'capabilities': {'a': 'b'},
                      'conductor_group': 'g'}}
        for criteria in ({'resource_class': 'gold'}, every_operator):
            shape = stmts.candidate_shape(criteria)[0]
            for dialect in ('sqlite', 'postgresql', 'mysql'):
                found['reserve_node%r on %s' % (shape, dialect)] = (
                    stmts.reserve_node(shape, dialect))
        return found

    def test_every_binding_statement_is_guarded(self):
        found = self._binding_statements()
        self.assertIn('BACKFILL_NODE', found)
        unguarded = sorted(
            name for name, statement in found.items()
            if not any(clause is stmts.NODE_UNLOCKED
                       for clause in _where_clauses(statement)))
        self.assertEqual([], unguarded)

    def test_freeing_is_not_binding(self):
        self.assertFalse(_binds_a_node(stmts.FREE_NODE))
        self.assertFalse(_binds_a_node(stmts.FREE_NODE_AND_INSTANCE))

    def test_guard_is_reservation_is_null(self):
        self.assertEqual('nodes.reservation IS NULL',
                         str(stmts.NODE_UNLOCKED))
