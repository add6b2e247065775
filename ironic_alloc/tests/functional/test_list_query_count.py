"""List pages cost a constant number of SQL statements, not one per row.

Counts the statements the real application sends to the test database
(SQLAlchemy's before_cursor_execute event on the real engine) for a page
of nodes (with allocation_uuid and the conductor of each node), a page
of allocations (with node_uuid) and a page of allocation groups (with
their members), at two sizes: the counts must be equal.
"""

import sqlalchemy as sa
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import context as ia_context
from ironic_alloc.common import states
from ironic_alloc.db.sqlalchemy import api as sqla_api
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import test_groups
from ironic_alloc.tests.functional.conductor import utils

HEADERS = {'X-OpenStack-Ironic-API-Version': '1.79'}
GROUP_HEADERS = dict(HEADERS, **{'OpenStack-API-Version': 'ironic-alloc 1.3'})


class TestListQueryCount(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.app = webtest.TestApp(api_app.setup_app())
        self.context = ia_context.get_admin_context()
        self.conductor = objects.Conductor.register(
            self.context, 'query-count-conductor', '')

    def _add_allocated_nodes(self, count):
        for _ in range(count):
            node = utils.make_available_node(
                self.context, provision_state=states.ACTIVE)
            allocation = utils.make_allocation(
                self.context, self.conductor.id, state=states.ACTIVE,
                node_id=node.id)
            sqla_api.get_backend().update_node(
                node.id, {'allocation_id': allocation.id,
                          'instance_uuid': allocation.uuid})

    def _count_statements(self, url, headers=HEADERS):
        statements = []

        def count(conn, cursor, statement, *args):
            if not statement.startswith(('BEGIN', 'SAVEPOINT', 'RELEASE')):
                statements.append(statement)

        engine = sqla_api.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', count)
        try:
            resp = self.app.get(url, headers=headers)
        finally:
            sa.event.remove(engine, 'before_cursor_execute', count)
        return resp, statements

    def _assert_constant(self, url, key, field):
        self._add_allocated_nodes(3)
        small, small_statements = self._count_statements(url)
        self.assertEqual(3, len(small.json[key]))
        self._add_allocated_nodes(30)
        large, large_statements = self._count_statements(url)
        self.assertEqual(33, len(large.json[key]))
        # Every row really carries the value that needs the extra lookup.
        self.assertTrue(all(row[field] for row in large.json[key]))
        self.assertEqual(len(small_statements), len(large_statements),
                         'statements for 3 rows:\n%s\nfor 33 rows:\n%s' % (
                             '\n'.join(small_statements),
                             '\n'.join(large_statements)))

    def test_node_detail_page(self):
        self._assert_constant('/v1/nodes/detail?limit=1000', 'nodes',
                              'allocation_uuid')

    def test_node_list_with_allocation_field(self):
        self._assert_constant(
            '/v1/nodes?fields=uuid,allocation_uuid,conductor&limit=1000',
            'nodes', 'allocation_uuid')

    def test_allocation_list_page(self):
        self._assert_constant('/v1/allocations?limit=1000', 'allocations',
                              'node_uuid')

    def test_allocation_group_list_page(self):
        url = '/v1/allocation_groups?limit=1000'
        for _ in range(3):
            test_groups.make_group(self.context, self.conductor.id, 2)
        small, small_statements = self._count_statements(url, GROUP_HEADERS)
        self.assertEqual(3, len(small.json['allocation_groups']))
        for _ in range(30):
            test_groups.make_group(self.context, self.conductor.id, 2)
        large, large_statements = self._count_statements(url, GROUP_HEADERS)
        groups = large.json['allocation_groups']
        self.assertEqual(33, len(groups))
        # Every group shows its own two members, read with the page.
        self.assertEqual([[states.ALLOCATING] * 2] * 33,
                         [[m['state'] for m in g['members']]
                          for g in groups])
        self.assertEqual(len(small_statements), len(large_statements),
                         'statements for 3 groups:\n%s\nfor 33 groups:\n%s'
                         % ('\n'.join(small_statements),
                            '\n'.join(large_statements)))
