"""The rows the process tests write straight into the database
(ironic_alloc/tests/db_rows.py) are what the service reads as available
nodes and allocations in flight."""

from ironic_alloc.common import states
from ironic_alloc.db import api as db_api
from ironic_alloc import objects
from ironic_alloc.tests import base
from ironic_alloc.tests import db_rows


class TestDbRows(base.DbTestCase):

    dbapi = db_api.get_instance()

    def test_nodes_are_available(self):
        uuids = db_rows.insert_available_nodes(self.db.engine, 3, 'rows',
                                               'loaded')
        self.assertEqual(3, len(set(uuids)))
        nodes = [objects.Node.get_by_uuid(self.context, node_uuid)
                 for node_uuid in uuids]
        self.assertEqual(['loaded-000000', 'loaded-000001', 'loaded-000002'],
                         [node.name for node in nodes])
        for node in nodes:
            self.assertEqual(states.AVAILABLE, node.provision_state)
            self.assertIsNone(node.target_provision_state)
            self.assertEqual(states.POWER_OFF, node.power_state)
            self.assertEqual('rows', node.resource_class)
            self.assertEqual(db_rows.DRIVER, node.driver)
            self.assertFalse(node.maintenance)
            self.assertIsNone(node.instance_uuid)
            self.assertIsNone(node.allocation_id)
            self.assertEqual({}, node.properties)
            self.assertIsNotNone(node.created_at)

    def test_nodes_with_properties_match(self):
        uuids = db_rows.insert_available_nodes(
            self.db.engine, 2, 'rows', 'matched',
            properties={'memory_mb': '4096', 'cpu_arch': 'x86_64',
                        'capabilities': 'boot_mode:uefi'})
        criteria = {'resource_class': 'rows', 'traits': [],
                    'candidate_uuids': [], 'owner': None,
                    'match': {'memory_mb': 4096, 'cpu_arch': 'x86_64',
                              'capabilities': {'boot_mode': 'uefi'}}}
        found = self.dbapi.get_allocation_candidates(criteria, 10)
        self.assertEqual(sorted(uuids), sorted(
            objects.Node.get_by_id(self.context, i).uuid for i in found))
        criteria['match']['memory_mb'] = 4097
        self.assertEqual([], self.dbapi.get_allocation_candidates(criteria,
                                                                  10))

    def test_allocations_are_in_flight(self):
        uuids = db_rows.insert_allocating_allocations(self.db.engine, 2,
                                                      'rows', 7)
        allocations = [objects.Allocation.get_by_uuid(self.context, uuid)
                       for uuid in uuids]
        for allocation in allocations:
            self.assertEqual(states.ALLOCATING, allocation.state)
            self.assertEqual('rows', allocation.resource_class)
            self.assertEqual(7, allocation.conductor_affinity)
            self.assertIsNone(allocation.node_id)
            self.assertEqual([], allocation.traits)

    def test_nothing_to_insert(self):
        self.assertEqual([], db_rows.insert_available_nodes(
            self.db.engine, 0, 'rows', 'none'))
        self.assertEqual([], db_rows.insert_allocating_allocations(
            self.db.engine, 0, 'rows', 7))
        self.assertEqual([], objects.Node.list(self.context))
