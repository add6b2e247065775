"""openstacksdk against the real service (drivers/sdk_driver.py)."""

from ironic_alloc.tests.clients import base

IMAGE = 'http://images.example.com/clients-tier.qcow2'
CHECKSUM = 'a' * 64


class TestOpenStackSDK(base.ClientTestCase):

    def test_node_life_cycle(self):
        name = base.unique('sdk-node')
        rc = base.unique_rc('SDK')
        out = self.driver('sdk_driver.py', 'node_lifecycle', name=name,
                          resource_class=rc,
                          traits=['CUSTOM_GPU', 'HW_CPU_X86_VMX'],
                          image_source=IMAGE, image_checksum=CHECKSUM)

        created = out['created']
        self.assertEqual(name, created['name'])
        self.assertEqual('fake-hardware', created['driver'])
        self.assertEqual(rc, created['resource_class'])
        self.assertEqual('enroll', created['provision_state'])
        self.assertFalse(created['is_maintenance'])

        self.assertEqual(['CUSTOM_ADDED', 'CUSTOM_GPU', 'HW_CPU_X86_VMX'],
                         out['traits_after_add'])
        self.assertEqual(['CUSTOM_GPU', 'HW_CPU_X86_VMX'], out['traits'])

        self.assertEqual('manageable', out['managed']['provision_state'])
        self.assertEqual('available', out['provided']['provision_state'])
        self.assertIsNone(out['provided']['target_provision_state'])
        self.assertEqual([name], out['listed'])

        deployed = out['deployed']
        self.assertEqual('active', deployed['provision_state'])
        self.assertIsNone(deployed['target_provision_state'])
        self.assertEqual(IMAGE, deployed['instance_info']['image_source'])
        self.assertIsNone(deployed['last_error'])

        undeployed = out['undeployed']
        self.assertEqual('available', undeployed['provision_state'])
        self.assertIsNone(undeployed['instance_id'])
        self.assertIsNone(undeployed['allocation_id'])
        self.assertEqual({}, undeployed['instance_info'])

        self.assertTrue(out['maintenance_on']['is_maintenance'])
        self.assertEqual('clients tier',
                         out['maintenance_on']['maintenance_reason'])
        self.assertFalse(out['maintenance_off']['is_maintenance'])
        self.assertIsNone(out['maintenance_off']['maintenance_reason'])

        self.assertEqual(404, out['get_after_delete']['status'])

    def test_allocations(self):
        rc = base.unique_rc('SDK')
        with_trait = base.unique('sdk-alloc-gpu')
        without_trait = base.unique('sdk-alloc-plain')
        name = base.unique('sdk-allocation')
        renamed = base.unique('sdk-renamed')
        backfill_name = base.unique('sdk-backfill')
        out = self.driver('sdk_driver.py', 'allocations',
                          resource_class=rc, trait='CUSTOM_GPU',
                          names=[with_trait, without_trait],
                          allocation_name=name, renamed=renamed,
                          backfill_name=backfill_name, image_source=IMAGE,
                          image_checksum=CHECKSUM)

        created = out['created']
        self.assertIn(created['state'], ('allocating', 'active'))
        self.assertEqual(rc, created['resource_class'])
        self.assertEqual(['CUSTOM_GPU'], created['traits'])
        self.assertEqual({'purpose': 'clients tier'}, created['extra'])

        active = out['active']
        self.assertEqual('active', active['state'])
        # Only the node with the trait matches.
        self.assertEqual(out['nodes'][with_trait], active['node_id'])
        self.assertIsNone(active['last_error'])

        node = out['node']
        self.assertEqual(active['id'], node['allocation_id'])
        self.assertEqual(active['id'], node['instance_id'])
        self.assertEqual('available', node['provision_state'])

        self.assertEqual(active['id'], out['by_name']['id'])
        self.assertEqual([active['id']], out['listed_for_node'])
        self.assertEqual(renamed, out['renamed']['name'])

        after = out['node_after_delete']
        self.assertIsNone(after['allocation_id'])
        self.assertIsNone(after['instance_id'])
        self.assertEqual(404, out['get_after_delete']['status'])

        failed = out['failed']
        self.assertEqual('error', failed['state'])
        self.assertIsNone(failed['node_id'])
        self.assertIn(rc + '_NONE', failed['last_error'])
        self.assertIn(rc + '_NONE', out['wait_raised'])

        backfill = out['backfill']
        self.assertEqual('active', backfill['state'])
        self.assertEqual(backfill_name, backfill['name'])
        self.assertEqual(out['nodes'][without_trait], backfill['node_id'])
        self.assertEqual(rc, backfill['resource_class'])
        node = out['backfilled_node']
        self.assertEqual('active', node['provision_state'])
        self.assertEqual(backfill['id'], node['allocation_id'])
        self.assertEqual(backfill['id'], node['instance_id'])
        self.assertEqual(409, out['delete_deployed']['status'])
        self.assertIn('Cannot remove allocation %s' % backfill['id'],
                      out['delete_deployed']['message'])
        undeployed = out['undeployed_node']
        self.assertEqual('available', undeployed['provision_state'])
        self.assertIsNone(undeployed['allocation_id'])
        self.assertIsNone(undeployed['instance_id'])
        self.assertEqual([], out['backfill_after_undeploy'])
        self.assertTrue(out['deleted'])
