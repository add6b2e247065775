"""The rules of the Placement sync that need no Placement: resource class
names, which nodes are held back, and collisions."""

from oslo_utils import uuidutils

from ironic_alloc.common import picking
from ironic_alloc.common import states
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base


def _node(**kw):
    values = dict(uuid=uuidutils.generate_uuid(), resource_class='gold',
                  provision_state=states.AVAILABLE,
                  power_state=states.POWER_OFF, maintenance=False,
                  retired=False, instance_uuid=None, allocation_id=None,
                  name=None, traits=[])
    values.update(kw)
    return node_obj.Node(**values)


class TestResourceClassName(base.TestCase):

    def test_names(self):
        for name, expected in [
                ('baremetal-gold', 'CUSTOM_BAREMETAL_GOLD'),
                ('gold', 'CUSTOM_GOLD'),
                ('Large.2x', 'CUSTOM_LARGE_2X'),
                ('a b--c', 'CUSTOM_A_B__C'),
                ('CUSTOM_GOLD', 'CUSTOM_CUSTOM_GOLD'),
                ('gold\u00e9', 'CUSTOM_GOLD_')]:
            self.assertEqual(expected,
                             placement_sync.placement_resource_class(name),
                             name)

    def test_no_class(self):
        for name in (None, ''):
            self.assertIsNone(placement_sync.placement_resource_class(name))


class TestPickingRule(base.TestCase):
    """The Python view of common/picking.py that the Placement sync uses
    (functional test_picking_rule compares it with the SQL)."""

    def test_available_node_may_be_picked(self):
        self.assertTrue(picking.may_be_picked(_node()))
        self.assertEqual(0, placement_sync.wanted_state(_node(),
                                                        False).reserved)

    def test_held_back(self):
        for change in [{'provision_state': states.MANAGEABLE},
                       {'provision_state': states.ACTIVE},
                       {'provision_state': None},
                       {'maintenance': True},
                       {'retired': True},
                       {'power_state': None},
                       {'instance_uuid': uuidutils.generate_uuid()},
                       {'allocation_id': 7}]:
            self.assertFalse(picking.may_be_picked(_node(**change)), change)
            self.assertEqual(1, placement_sync.wanted_state(
                _node(**change), False).reserved, change)

    def test_a_node_lock_is_not_part_of_the_rule(self):
        self.assertTrue(picking.may_be_picked(_node(reservation='host-1')))

    def test_free_node_index_predicate(self):
        self.assertEqual("provision_state = 'available' AND allocation_id "
                         "IS NULL AND instance_uuid IS NULL",
                         picking.sql_text(('instance_uuid', 'allocation_id',
                                           'provision_state')))


class TestCollisions(base.TestCase):

    def test_one_report_per_placement_class(self):
        nodes = [_node(resource_class=rc) for rc in (
            'big-gold', 'big.gold', 'big-gold', 'silver', 'Silver', None,
            'bronze')]
        found = placement_sync.collisions(nodes)
        self.assertEqual({'CUSTOM_BIG_GOLD', 'CUSTOM_SILVER'}, set(found))
        message = str(found['CUSTOM_BIG_GOLD'])
        self.assertIn('big-gold, big.gold', message)
        for node in nodes[:3]:
            self.assertIn(node.uuid, message)
        self.assertEqual(409, found['CUSTOM_SILVER'].code)

    def test_same_name_is_no_collision(self):
        nodes = [_node(resource_class='gold') for _ in range(3)]
        self.assertEqual({}, placement_sync.collisions(nodes))
