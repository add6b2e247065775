"""metalsmith against the real service (drivers/metalsmith_driver.py)."""

from ironic_alloc.tests.clients import base

IMAGE = 'http://images.example.com/metalsmith-whole-disk.qcow2'
CHECKSUM = 'b' * 64


class TestMetalsmith(base.ClientTestCase):

    def test_reserve_provision_unprovision(self):
        rc = base.unique_rc('METALSMITH')
        node_name = base.unique('ms-node')
        hostname = base.unique('ms-host')
        out = self.driver('metalsmith_driver.py', 'provision',
                          resource_class=rc, node_name=node_name,
                          hostname=hostname, image_source=IMAGE,
                          image_checksum=CHECKSUM)

        reserved = out['reserved']
        self.assertEqual(out['node_id'], reserved['id'])
        self.assertIsNotNone(reserved['allocation_id'])
        self.assertEqual('available', reserved['provision_state'])

        self.assertIn(out['started']['provision_state'],
                      ('deploying', 'wait call-back', 'active'))

        done = out['provisioned']
        self.assertEqual('active', done['state'])
        self.assertEqual('active', done['provision_state'])
        self.assertEqual(hostname, done['hostname'])
        self.assertEqual(hostname, done['allocation_name'])
        self.assertEqual(out['node_id'], done['uuid'])
        self.assertEqual(reserved['allocation_id'], done['allocation_id'])
        info = done['instance_info']
        self.assertEqual(IMAGE, info['image_source'])
        self.assertEqual(CHECKSUM, info['image_checksum'])
        # local_gb 20, less one for partitioning and the config drive.
        self.assertEqual(19, info['root_gb'])
        self.assertEqual(hostname, info['display_name'])

        self.assertEqual({'hostname': hostname, 'uuid': out['node_id'],
                          'state': 'active'}, out['shown'])
        self.assertIn(hostname, out['listed'])

        self.assertIn(out['unprovisioned']['provision_state'],
                      ('available',))
        after = out['after']
        self.assertEqual('available', after['provision_state'])
        self.assertIsNone(after['allocation_id'])
        self.assertIsNone(after['instance_id'])
        self.assertEqual([], after['allocations_for_node'])
        self.assertEqual([], after['allocations_of_class'])

    def test_reserve_without_matching_node(self):
        rc = base.unique_rc('METALSMITH_NONE')
        out = self.driver('metalsmith_driver.py', 'reserve_failure',
                          resource_class=rc)
        self.assertIsNotNone(out['raised'])
        self.assertIn(rc, out['raised'])
        self.assertEqual([], out['allocations_left'])


class TestMetalsmithWaitingCreate(TestMetalsmith):
    """The same against a service whose POST /v1/allocations answers with
    the end state ([api]allocation_create_wait)."""

    service_config = {'api': {'allocation_create_wait': '10'}}
