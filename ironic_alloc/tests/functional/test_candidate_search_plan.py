"""The candidate search reads free nodes in index order, however full.

Once most nodes of a resource class are allocated, a plan that collects
every free node and sorts them costs in proportion to the free nodes
(PostgreSQL chose one: 6.5 ms per search with 5,000 free nodes of
100,000).  On PostgreSQL the search reads the candidates in uuid order
from nodes_free_candidate_idx and stops after "limit"; SQLite walks
nodes_candidate_idx in order.  MariaDB has no partial index: it walks the
uuid index in order when free nodes are rare in a big fleet and may sort
the free nodes its indexes find when they are few, but never scans the
table.  Checked on the real statement and the database's own plan, with
95 % of 20,000 nodes allocated and the table's statistics up to date (as
autovacuum keeps them on PostgreSQL).

The fleet is big enough for the choice to matter: PostgreSQL multiplies
the selectivities of "allocation_id IS NULL" and "instance_uuid IS NULL",
which go together, so it expects about 0.25 % of the nodes to be free
instead of 5 %.  With 5,000 nodes that made sorting the free nodes look as
cheap as the ordered walk, and the plan depended on the random pivot (one
run in three failed); with 20,000 the walk wins every time (40 runs).

On PostgreSQL the same holds for a request with trait expressions,
whose tests it gets as one aggregate subquery (statements._search_clauses):
they never become joins, and the planner does not expect so few
candidates that sorting every free node looks cheaper.
"""

import uuid as uuid_mod

import sqlalchemy as sa

from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc.db.sqlalchemy import statements
from ironic_alloc.tests import base

NODES = 20000
ALLOCATED_EVERY = 20  # one node in 20 stays free
# Every node has these traits but one in four lacks CUSTOM_B and one in
# four has CUSTOM_GPU, so the rich request below matches some of them.
RICH = {'resource_class': 'gold', 'traits': ['CUSTOM_A', 'CUSTOM_B'],
        'forbidden_traits': ['CUSTOM_GPU'],
        'any_of_traits': [['CUSTOM_RACK_1', 'CUSTOM_RACK_2']]}


class CandidateSearchPlanTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.engine = sqla_api.get_engine()
        rows = []
        traits = []
        for index in range(NODES):
            node_uuid = str(uuid_mod.uuid4())
            taken = index % ALLOCATED_EVERY != 0
            rows.append({
                'uuid': node_uuid, 'name': 'node-%d' % index,
                'driver': 'fake-hardware', 'resource_class': 'gold',
                'provision_state': 'available', 'power_state': 'power off',
                'maintenance': False, 'protected': False, 'retired': False,
                'console_enabled': False, 'conductor_group': '',
                'instance_uuid': node_uuid if taken else None,
                'allocation_id': 100000 + index if taken else None})
            names = ['CUSTOM_A', 'CUSTOM_RACK_%d' % (index % 2 + 1),
                     'CUSTOM_GPU' if index % 4 == 1 else 'CUSTOM_B']
            traits.extend({'node_id': index + 1, 'trait': name}
                          for name in names)
        with self.engine.begin() as conn:
            conn.execute(statements.NODES.insert(), [
                dict(row, id=index + 1) for index, row in enumerate(rows)])
            conn.execute(statements.NODE_TRAITS.insert(), traits)
            dialect = conn.dialect.name
            if dialect == 'postgresql':
                conn.execute(sa.text('ANALYZE nodes'))
                conn.execute(sa.text('ANALYZE node_traits'))
            elif dialect == 'mysql':
                conn.execute(sa.text('ANALYZE TABLE nodes'))
                conn.execute(sa.text('ANALYZE TABLE node_traits'))

    def _plan(self, statement, values):
        with self.engine.connect() as conn:
            # NOTE: the expanded form, in which a list's items are
            # parameters of their own, as the driver gets them.
            state = statement.compile(
                dialect=conn.dialect).construct_expanded_state(values)
            dialect = conn.dialect.name
            if dialect == 'sqlite':
                rows = conn.exec_driver_sql(
                    'EXPLAIN QUERY PLAN ' + state.statement,
                    tuple(state.parameters[name]
                          for name in state.positiontup))
                return dialect, '\n'.join(row[-1] for row in rows)
            rows = conn.exec_driver_sql('EXPLAIN ' + state.statement,
                                        state.parameters).mappings().all()
            if dialect == 'mysql':
                return dialect, '\n'.join(
                    'type=%s key=%s %s' % (row['type'], row['key'],
                                           row['Extra']) for row in rows)
            return dialect, '\n'.join(row['QUERY PLAN'] for row in rows)

    def _assert_ordered_walk(self, statement, criteria):
        shape, params = statements.candidate_shape(criteria)
        dialect, plan = self._plan(
            statement(shape, self.engine.dialect.name),
            dict(params, pivot=str(uuid_mod.uuid4()), limit=16))
        if dialect == 'postgresql':
            self.assertIn('nodes_free_candidate_idx', plan)
            self.assertNotIn('Sort', plan)
            # The trait tests stay filters of the walk, never joins.
            self.assertNotIn('Join', plan)
            self.assertNotIn('Nested Loop', plan)
        elif dialect == 'mysql':
            self.assertNotIn('type=ALL', plan)
            self.assertNotIn('key=None', plan)
        else:
            self.assertNotIn('TEMP B-TREE', plan)

    def test_search_after_the_pivot(self):
        self._assert_ordered_walk(statements.candidates_after_pivot,
                                  {'resource_class': 'gold'})

    def test_search_before_the_pivot(self):
        self._assert_ordered_walk(statements.candidates_before_pivot,
                                  {'resource_class': 'gold'})

    def test_search_from_the_start(self):
        self._assert_ordered_walk(statements.candidates_from,
                                  {'resource_class': 'gold'})

    def test_examples_of_an_explanation(self):
        # NOTE: no range on uuid here: SQLite took "instance_uuid IS
        # NULL" for a one-row lookup of its unique index, read every free
        # node and sorted them.
        self._assert_ordered_walk(
            lambda shape, dialect: statements.matching_uuids(
                shape, False, dialect), {'resource_class': 'gold'})

    def test_examples_of_a_rich_explanation(self):
        if self.engine.dialect.name == 'mysql':
            self.skipTest('MariaDB plans the EXISTS form of trait tests '
                          'as it always did')
        self._assert_ordered_walk(
            lambda shape, dialect: statements.matching_uuids(
                shape, False, dialect), RICH)

    def _only_postgresql(self):
        # NOTE: the form of the trait tests is PostgreSQL's own; SQLite
        # and MariaDB plan the EXISTS form as they always did.
        if self.engine.dialect.name != 'postgresql':
            self.skipTest('the trait tests have a form of their own on '
                          'PostgreSQL only')

    def test_rich_search_after_the_pivot(self):
        self._only_postgresql()
        self._assert_ordered_walk(statements.candidates_after_pivot, RICH)

    def test_rich_search_before_the_pivot(self):
        self._only_postgresql()
        self._assert_ordered_walk(statements.candidates_before_pivot, RICH)
