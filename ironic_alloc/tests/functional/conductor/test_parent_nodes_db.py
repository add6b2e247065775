"""The database layer of parent nodes: the list filters, a parent that
must exist, and no node ever its own ancestor, even when writes race."""

import threading

from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


def _ancestors(context, node_uuid, limit=20):
    """The chain of parents of a node, stopping at a repeat."""
    chain = []
    current = node_obj.Node.get_by_uuid(context, node_uuid).parent_node
    while current is not None and current not in chain and limit:
        chain.append(current)
        current = node_obj.Node.get_by_uuid(context, current).parent_node
        limit -= 1
    return chain, current


class TestParentRows(base.DbTestCase):

    def test_filters(self):
        parent = utils.make_node(self.context)
        child = utils.make_node(self.context, parent_node=parent.uuid)
        other = utils.make_node(self.context)

        def uuids(**filters):
            return sorted(n.uuid for n in node_obj.Node.list(
                self.context, filters=filters))

        self.assertEqual([child.uuid], uuids(parent_node=parent.uuid))
        self.assertEqual([child.uuid], uuids(has_parent=True))
        self.assertEqual(sorted([parent.uuid, other.uuid]),
                         uuids(has_parent=False))
        self.assertEqual([], uuids(parent_node=other.uuid))

    def test_parent_must_exist(self):
        missing = uuidutils.generate_uuid()
        self.assertRaises(exception.NodeParentInvalid, utils.make_node,
                          self.context, parent_node=missing)
        self.assertEqual([], node_obj.Node.list(
            self.context, filters={'parent_node': missing}))
        node = utils.make_node(self.context)
        self.assertRaises(exception.NodeParentInvalid, dbapi.update_node,
                          node.id, {'parent_node': missing})

    def test_no_cycle(self):
        top = utils.make_node(self.context)
        middle = utils.make_node(self.context, parent_node=top.uuid)
        bottom = utils.make_node(self.context, parent_node=middle.uuid)
        # The node itself, its child and its grandchild.
        for parent in (top, middle, bottom):
            self.assertRaises(exception.NodeParentInvalid,
                              dbapi.update_node, top.id,
                              {'parent_node': parent.uuid})
        self.assertRaises(exception.NodeParentInvalid, dbapi.update_node,
                          middle.id, {'parent_node': bottom.uuid})
        self.assertIsNone(node_obj.Node.get_by_uuid(
            self.context, top.uuid).parent_node)
        # A parent that was deleted ends the chain, as in Ironic.
        dbapi.update_node(bottom.id, {'parent_node': None})
        dbapi.destroy_node(top.id)
        dbapi.update_node(bottom.id, {'parent_node': middle.uuid})

    def test_racing_writes_never_make_a_loop(self):
        # NOTE: each round, every node of a ring is made the child of the
        # next at once; whatever the order, the last write must be
        # refused, and no node ends up its own ancestor.
        for _round in range(8):
            ring = [utils.make_node(self.context) for _ in range(3)]
            barrier = threading.Barrier(len(ring))
            outcomes = []
            lock = threading.Lock()

            def link(node, parent):
                barrier.wait()
                try:
                    dbapi.update_node(node.id, {'parent_node': parent.uuid})
                    outcome = 'linked'
                except exception.NodeParentInvalid:
                    outcome = 'refused'
                with lock:
                    outcomes.append(outcome)

            threads = [threading.Thread(target=link,
                                        args=(node, ring[(i + 1) % 3]))
                       for i, node in enumerate(ring)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(['linked', 'linked', 'refused'],
                             sorted(outcomes))
            for node in ring:
                chain, repeated = _ancestors(self.context, node.uuid)
                self.assertIsNone(repeated, chain)
                self.assertNotIn(node.uuid, chain)
