"""The database layer of chassis: a node write naming a chassis needs it
to exist, and a chassis is deleted only while no node names it."""

import threading

from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import chassis as chassis_obj
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()


class TestChassisRows(base.DbTestCase):

    def _chassis(self, **values):
        chassis = chassis_obj.Chassis(self.context, **values)
        chassis.create()
        return chassis

    def test_create_show_list_update(self):
        first = self._chassis(description='one', extra={'row': 'a'})
        second = self._chassis(uuid=uuidutils.generate_uuid())
        self.assertEqual('one', chassis_obj.Chassis.get_by_uuid(
            self.context, first.uuid).description)
        self.assertEqual(second.uuid, chassis_obj.Chassis.get_by_id(
            self.context, second.id).uuid)
        self.assertEqual(
            [second.uuid],
            [c.uuid for c in chassis_obj.Chassis.list(
                self.context, limit=5, marker=first.id)])
        first.description = 'renamed'
        first.save()
        self.assertEqual('renamed', chassis_obj.Chassis.get_by_uuid(
            self.context, first.uuid).description)
        self.assertIsNotNone(first.updated_at)
        self.assertRaises(exception.ChassisAlreadyExists, self._chassis,
                          uuid=first.uuid)
        self.assertRaises(exception.ChassisNotFound,
                          chassis_obj.Chassis.get_by_uuid, self.context,
                          uuidutils.generate_uuid())

    def test_node_needs_an_existing_chassis(self):
        chassis = self._chassis()
        missing = uuidutils.generate_uuid()
        self.assertRaises(exception.ChassisNotFound, utils.make_node,
                          self.context, chassis_uuid=missing)
        # Nothing was written by the refused creation.
        self.assertEqual([], node_obj.Node.list(
            self.context, filters={'chassis_uuid': missing}))
        node = utils.make_node(self.context, chassis_uuid=chassis.uuid)
        self.assertRaises(exception.ChassisNotFound, dbapi.update_node,
                          node.id, {'chassis_uuid': missing})
        self.assertEqual(chassis.uuid, node_obj.Node.get_by_uuid(
            self.context, node.uuid).chassis_uuid)

    def test_chassis_with_nodes_is_kept(self):
        chassis = self._chassis()
        other = self._chassis()
        node = utils.make_node(self.context, chassis_uuid=chassis.uuid)
        self.assertRaises(exception.ChassisNotEmpty, chassis.destroy)
        self.assertEqual(chassis.uuid, chassis_obj.Chassis.get_by_id(
            self.context, chassis.id).uuid)
        dbapi.update_node(node.id, {'chassis_uuid': other.uuid})
        chassis.destroy()
        self.assertRaises(exception.ChassisNotFound,
                          chassis_obj.Chassis.get_by_id, self.context,
                          chassis.id)
        self.assertRaises(exception.ChassisNotFound, chassis.destroy)
        self.assertRaises(exception.ChassisNotEmpty, other.destroy)
        dbapi.update_node(node.id, {'chassis_uuid': None})
        other.destroy()

    def test_deleting_a_chassis_races_nodes_joining_it(self):
        # NOTE: every round starts the deletion and the node writes at
        # once; whoever wins, no node may name a chassis that is gone.
        for _round in range(8):
            chassis = self._chassis()
            joined = utils.make_node(self.context)
            barrier = threading.Barrier(5)
            outcomes = []
            lock = threading.Lock()

            def delete():
                barrier.wait()
                try:
                    dbapi.destroy_chassis(chassis.id)
                    outcome = 'deleted'
                except exception.ChassisNotEmpty:
                    outcome = 'not empty'
                with lock:
                    outcomes.append(outcome)

            def create_node():
                barrier.wait()
                try:
                    utils.make_node(self.context,
                                    chassis_uuid=chassis.uuid)
                    outcome = 'node created'
                except exception.ChassisNotFound:
                    outcome = 'no chassis'
                with lock:
                    outcomes.append(outcome)

            def move_node():
                barrier.wait()
                try:
                    dbapi.update_node(joined.id,
                                      {'chassis_uuid': chassis.uuid})
                    outcome = 'node moved'
                except exception.ChassisNotFound:
                    outcome = 'no chassis'
                with lock:
                    outcomes.append(outcome)

            threads = [threading.Thread(target=target) for target in
                       (delete, create_node, create_node, move_node,
                        create_node)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(5, len(outcomes), outcomes)
            members = node_obj.Node.list(
                self.context, filters={'chassis_uuid': chassis.uuid})
            if 'deleted' in outcomes:
                self.assertEqual([], members, outcomes)
                self.assertNotIn('node created', outcomes)
                self.assertNotIn('node moved', outcomes)
                self.assertRaises(exception.ChassisNotFound,
                                  chassis_obj.Chassis.get_by_uuid,
                                  self.context, chassis.uuid)
            else:
                self.assertIn('not empty', outcomes)
                self.assertNotIn('no chassis', outcomes)
                self.assertEqual(4, len(members), outcomes)
