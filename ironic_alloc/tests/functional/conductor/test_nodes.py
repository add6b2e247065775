"""Node actions through RPC to a real in-process conductor."""

import time

from ironic_alloc.common import exception
from ironic_alloc.common import states
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

make_node = utils.make_node


class ConductorNodeTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.conductor = self.useFixture(ia_fixtures.ConductorFixture())
        self.rpcapi = self.conductor.rpcapi
        self.host = self.conductor.host

    def wait_for(self, node, predicate, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            node.refresh()
            if predicate(node):
                return node
            time.sleep(0.02)
        self.fail('node %s never reached the condition; state %s/%s'
                  % (node.uuid, node.provision_state, node.reservation))

    def act(self, node, action):
        self.rpcapi.do_provisioning_action(self.context, node.id, action,
                                           self.host)
        return self.wait_for(node, lambda n: n.reservation is None
                             and n.target_provision_state is None)

    def test_full_life_cycle(self):
        node = make_node(self.context)
        self.assertIsNone(node.power_state)
        node = self.act(node, 'manage')
        self.assertEqual(states.MANAGEABLE, node.provision_state)
        self.assertEqual(states.POWER_OFF, node.power_state)
        node = self.act(node, 'provide')
        self.assertEqual(states.AVAILABLE, node.provision_state)
        node.instance_uuid = '9a2d4bd8-0d1f-4c39-8b6b-1e8a0f4f1a11'
        node = self.rpcapi.update_node(self.context, node, self.host)
        node = self.act(node, 'deploy')
        self.assertEqual(states.ACTIVE, node.provision_state)
        self.assertEqual(states.POWER_ON, node.power_state)
        node = self.act(node, 'rebuild')
        self.assertEqual(states.ACTIVE, node.provision_state)
        node = self.act(node, 'undeploy')
        self.assertEqual(states.AVAILABLE, node.provision_state)
        self.assertIsNone(node.instance_uuid)
        node = self.act(node, 'manage')
        self.assertEqual(states.MANAGEABLE, node.provision_state)
        self.rpcapi.destroy_node(self.context, node.id, self.host)
        self.assertRaises(exception.NodeNotFound, node_obj.Node.get_by_id,
                          self.context, node.id)

    def test_illegal_transition(self):
        node = make_node(self.context)
        exc = self.assertRaises(exception.InvalidStateRequested,
                                self.rpcapi.do_provisioning_action,
                                self.context, node.id, 'deploy', self.host)
        self.assertEqual(400, exc.code)
        self.assertIn('"deploy"', str(exc))
        self.assertIn('"enroll"', str(exc))
        node.refresh()
        self.assertIsNone(node.reservation)

    def test_locked_node(self):
        node = make_node(self.context)
        node_obj.Node.reserve(self.context, 'other-host', node.id)
        exc = self.assertRaises(exception.NodeLocked,
                                self.rpcapi.do_provisioning_action,
                                self.context, node.id, 'manage', self.host)
        self.assertEqual(409, exc.code)
        self.assertIn('locked by host other-host', str(exc))

    def test_dead_holder_lock_released(self):
        node = make_node(self.context, provision_state=states.DEPLOYING)
        node_obj.Node.reserve(self.context, 'dead-host', node.id)
        self.conductor.service.takeover.release_dead_locks()
        node.refresh()
        self.assertIsNone(node.reservation)
        self.assertEqual(states.DEPLOYFAIL, node.provision_state)
        self.assertIn('dead-host', node.last_error)

    def test_maintenance_blocks_deploy(self):
        node = make_node(self.context, provision_state=states.AVAILABLE,
                         power_state=states.POWER_OFF, maintenance=True)
        exc = self.assertRaises(exception.NodeInMaintenance,
                                self.rpcapi.do_provisioning_action,
                                self.context, node.id, 'deploy', self.host)
        self.assertEqual(400, exc.code)

    def test_delete_refused_when_active(self):
        node = make_node(self.context, provision_state=states.ACTIVE)
        exc = self.assertRaises(exception.InvalidState,
                                self.rpcapi.destroy_node, self.context,
                                node.id, self.host)
        self.assertIn('provision state "active"', str(exc))

    def test_power(self):
        node = make_node(self.context, power_state=states.POWER_OFF)
        self.rpcapi.change_node_power_state(self.context, node.id,
                                            states.POWER_ON, self.host)
        node = self.wait_for(node, lambda n: n.target_power_state is None
                             and n.reservation is None)
        self.assertEqual(states.POWER_ON, node.power_state)
        self.assertRaises(exception.InvalidParameterValue,
                          self.rpcapi.change_node_power_state, self.context,
                          node.id, 'explode', self.host)

    def test_power_off_disabled(self):
        # The conductor applies the rule itself, under the node lock: a
        # request the API let through before disable_power_off was set
        # still finds it.
        node = make_node(self.context, power_state=states.POWER_ON,
                         disable_power_off=True)
        for target in (states.POWER_OFF, states.SOFT_POWER_OFF):
            exc = self.assertRaises(exception.PowerOffDisabled,
                                    self.rpcapi.change_node_power_state,
                                    self.context, node.id, target,
                                    self.host)
            self.assertEqual(409, exc.code)
        node.refresh()
        self.assertEqual(states.POWER_ON, node.power_state)
        self.assertIsNone(node.target_power_state)
        self.assertIsNone(node.reservation)
        self.rpcapi.change_node_power_state(self.context, node.id,
                                            states.REBOOT, self.host)
        node = self.wait_for(node, lambda n: n.target_power_state is None
                             and n.reservation is None)
        self.assertEqual(states.POWER_ON, node.power_state)

    def test_undeploy_keeps_power_off_disabled_node_on(self):
        node = make_node(self.context, provision_state=states.ACTIVE,
                         power_state=states.POWER_ON,
                         instance_uuid='5c1e7a93-2d4b-4f60-8a1e-3b9d7c5f2e14',
                         instance_name='vm-1', disable_power_off=True)
        node = self.act(node, 'undeploy')
        self.assertEqual(states.AVAILABLE, node.provision_state)
        self.assertIsNone(node.instance_uuid)
        # The instance's name goes with it, as in Ironic.
        self.assertIsNone(node.instance_name)
        self.assertEqual(states.POWER_ON, node.power_state)

    def test_traits(self):
        node = make_node(self.context)
        self.rpcapi.set_node_traits(self.context, node.id,
                                    ['CUSTOM_A', 'CUSTOM_B'], self.host)
        self.rpcapi.add_node_trait(self.context, node.id, 'CUSTOM_C',
                                   self.host)
        self.rpcapi.remove_node_trait(self.context, node.id, 'CUSTOM_A',
                                      self.host)
        node.refresh()
        self.assertEqual(['CUSTOM_B', 'CUSTOM_C'], node.traits)
        self.assertRaises(exception.NodeTraitNotFound,
                          self.rpcapi.remove_node_trait, self.context,
                          node.id, 'CUSTOM_A', self.host)
