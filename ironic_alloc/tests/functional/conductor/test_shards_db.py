"""The database layer of node shards: the list filters and the counts,
on every database the tests run on."""

from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


class TestShardRows(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.a1 = utils.make_node(self.context, shard='rack-a', owner='p1')
        self.a2 = utils.make_node(self.context, shard='rack-a', owner='p2')
        self.b1 = utils.make_node(self.context, shard='rack-b', owner='p1')
        self.none = utils.make_node(self.context, owner='p1')

    def _uuids(self, **filters):
        return sorted(n.uuid for n in node_obj.Node.list(
            self.context, filters=filters))

    def test_shard_in(self):
        self.assertEqual(sorted([self.a1.uuid, self.a2.uuid]),
                         self._uuids(shard_in=['rack-a']))
        self.assertEqual(
            sorted([self.a1.uuid, self.a2.uuid, self.b1.uuid]),
            self._uuids(shard_in=['rack-a', 'rack-b', 'rack-z']))
        self.assertEqual([], self._uuids(shard_in=['rack-z']))

    def test_sharded(self):
        self.assertEqual(
            sorted([self.a1.uuid, self.a2.uuid, self.b1.uuid]),
            self._uuids(sharded=True))
        self.assertEqual([self.none.uuid], self._uuids(sharded=False))
        # With the other filters, as the API combines them.
        self.assertEqual(sorted([self.a1.uuid, self.b1.uuid]),
                         self._uuids(sharded=True, project='p1'))
        self.assertEqual([], self._uuids(sharded=False, shard_in=['rack-a']))

    def test_counts(self):
        self.assertEqual({'rack-a': 2, 'rack-b': 1, None: 1},
                         dict(dbapi.get_shard_counts()))
        dbapi.update_node(self.b1.id, {'shard': 'rack-a'})
        dbapi.update_node(self.a1.id, {'shard': None})
        self.assertEqual({'rack-a': 2, None: 2},
                         dict(node_obj.Node.shard_counts(self.context)))

    def test_no_nodes_no_shards(self):
        for node in (self.a1, self.a2, self.b1, self.none):
            dbapi.destroy_node(node.id)
        self.assertEqual([], dbapi.get_shard_counts())
