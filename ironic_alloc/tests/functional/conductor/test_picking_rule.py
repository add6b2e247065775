"""The picking rule (common/picking.py) has one meaning everywhere: the
candidate search's SQL and the Placement backend's view of a node agree on
every combination of the node fields the rule and the lock guard read."""

import itertools

from oslo_utils import uuidutils

from ironic_alloc.common import picking
from ironic_alloc.common import states
from ironic_alloc.conductor.backends import placement_sync
from ironic_alloc.db import api as db_api
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils

dbapi = db_api.get_instance()

PROVISION_STATES = (states.AVAILABLE, states.MANAGEABLE, states.ACTIVE,
                    None)
POWER_STATES = (states.POWER_OFF, states.POWER_ON, None)
# What holds the node: nothing, an instance, an allocation and its
# instance (as a reservation writes them), an allocation alone.
HOLDERS = ('none', 'instance', 'allocation', 'allocation only')
LOCKS = (None, 'some-conductor')


class TestPickingRule(base.DbTestCase):

    def _every_combination(self):
        nodes = {}
        next_allocation_id = itertools.count(1000)
        for (provision_state, maintenance, power_state, retired, holder,
             lock) in itertools.product(PROVISION_STATES, (False, True),
                                        POWER_STATES, (False, True),
                                        HOLDERS, LOCKS):
            values = {'provision_state': provision_state,
                      'maintenance': maintenance,
                      'power_state': power_state, 'retired': retired}
            if holder in ('instance', 'allocation'):
                values['instance_uuid'] = uuidutils.generate_uuid()
            if holder in ('allocation', 'allocation only'):
                values['allocation_id'] = next(next_allocation_id)
            node = utils.make_node(self.context, **values)
            if lock is not None:
                node_obj.Node.reserve(self.context, lock, node.id)
            nodes[node.id] = values, lock
        return nodes

    def test_search_and_placement_view_agree(self):
        nodes = self._every_combination()
        criteria = {'resource_class': 'gold', 'traits': [],
                    'candidate_uuids': [], 'owner': None}
        searched = set(dbapi.get_allocation_candidates(criteria,
                                                       len(nodes) + 1))
        listed = node_obj.Node.list(self.context)
        self.assertEqual(len(nodes), len(listed))
        not_reserved = {node.id for node in listed
                        if not placement_sync.wanted_state(node,
                                                           False).reserved}
        self.assertEqual(searched, not_reserved)
        # The rule is not empty nor everything: available, powered, free,
        # not in maintenance and not retired nodes, locked or not.
        expected = {node_id for node_id, (values, _lock) in nodes.items()
                    if values['provision_state'] == states.AVAILABLE
                    and values['power_state'] is not None
                    and not values['maintenance'] and not values['retired']
                    and 'instance_uuid' not in values
                    and 'allocation_id' not in values}
        self.assertEqual(expected, searched)
        self.assertEqual(2 * len(POWER_STATES[:-1]), len(expected))

    def test_the_reservation_guard_adds_only_the_lock(self):
        nodes = self._every_combination()
        criteria = {'resource_class': 'gold', 'traits': [],
                    'candidate_uuids': [], 'owner': None}
        conductor_id = dbapi.register_conductor('picking-host', '').id
        won = set()
        for node_id in nodes:
            allocation = utils.make_allocation(self.context, conductor_id)
            if dbapi.reserve_node_for_allocation(allocation.id, conductor_id,
                                                 node_id, criteria):
                won.add(node_id)
        self.assertEqual({node_id for node_id, (values, lock)
                          in nodes.items()
                          if lock is None and picking.may_be_picked(
                              _Fields(values))}, won)
        self.assertTrue(won)

    def test_empty_search_explained_with_the_rule(self):
        utils.make_node(self.context, provision_state=states.AVAILABLE,
                        power_state=states.POWER_OFF, retired=True)
        reason = dbapi.explain_no_candidates(
            {'resource_class': 'gold', 'traits': [], 'candidate_uuids': [],
             'owner': None})
        self.assertIn('is available (%s)' % picking.describe(), reason)
        self.assertIn('not retired', reason)


class _Fields:
    """A node's fields as attributes, the unset ones None or False."""

    def __init__(self, values):
        self.provision_state = values.get('provision_state')
        self.maintenance = values.get('maintenance', False)
        self.retired = values.get('retired', False)
        self.power_state = values.get('power_state')
        self.allocation_id = values.get('allocation_id')
        self.instance_uuid = values.get('instance_uuid')
