"""``openstack baremetal node ...`` (python-ironicclient) against the real
service."""

import json
import uuid

from ironic_alloc.tests.clients import base

IMAGE = 'http://images.example.com/cli-whole-disk.qcow2'
CHECKSUM = 'c' * 64
WAIT = str(base.WAIT)


class TestNodeCommands(base.ClientTestCase):

    def show(self, node):
        return self.cli_json('node', 'show', node)

    def test_node_life_cycle(self):
        name = base.unique('cli-node')
        rc = base.unique_rc('CLI')
        node = self.cli_json('node', 'create', '--driver', 'fake-hardware',
                             '--name', name, '--resource-class', rc,
                             '--property', 'local_gb=10',
                             '--extra', 'rack=r1')
        uuid = node['uuid']
        self.assertEqual(name, node['name'])
        self.assertEqual('enroll', node['provision_state'])
        self.assertEqual(rc, node['resource_class'])
        # NOTE: the client sends KEY=VALUE values JSON-decoded when they can be.
        self.assertEqual({'local_gb': 10}, node['properties'])

        listed = self.cli_json('node', 'list', '--resource-class', rc)
        # NOTE: with -f json the columns are the API's field names.
        self.assertEqual([(uuid, name, 'enroll')],
                         [(n['uuid'], n['name'], n['provision_state'])
                          for n in listed])
        long_list = self.cli_json('node', 'list', '--long',
                                  '--resource-class', rc)
        self.assertEqual([rc], [n['resource_class'] for n in long_list])

        self.cli('node', 'set', name, '--description', 'clients tier',
                 '--extra', 'row=7')
        node = self.show(uuid)
        self.assertEqual('clients tier', node['description'])
        self.assertEqual({'rack': 'r1', 'row': 7}, node['extra'])
        self.cli('node', 'unset', name, '--extra', 'rack')
        self.assertEqual({'row': 7}, self.show(name)['extra'])

        self.cli('node', 'add', 'trait', name, 'CUSTOM_GPU', 'CUSTOM_SSD')
        traits = self.cli_json('node', 'trait', 'list', name)
        self.assertEqual(['CUSTOM_GPU', 'CUSTOM_SSD'],
                         sorted(t['traits'] for t in traits))
        self.cli('node', 'remove', 'trait', name, 'CUSTOM_SSD')
        self.assertEqual(['CUSTOM_GPU'], self.show(name)['traits'])

        self.cli('node', 'manage', name, '--wait', WAIT)
        self.assertEqual('manageable', self.show(name)['provision_state'])
        self.cli('node', 'provide', name, '--wait', WAIT)
        node = self.show(name)
        self.assertEqual('available', node['provision_state'])
        self.assertIsNone(node['target_provision_state'])

        self.cli('node', 'set', name,
                 '--instance-info', 'image_source=%s' % IMAGE,
                 '--instance-info', 'image_checksum=%s' % CHECKSUM)
        config_drive = json.dumps({'meta_data': {'hostname': name}})
        self.cli('node', 'deploy', name, '--config-drive', config_drive,
                 '--wait', WAIT)
        node = self.show(name)
        self.assertEqual('active', node['provision_state'])
        self.assertIsNone(node['target_provision_state'])
        self.assertEqual(IMAGE, node['instance_info']['image_source'])
        self.assertIsNone(node['last_error'])

        self.cli('node', 'undeploy', name, '--wait', WAIT)
        node = self.show(name)
        self.assertEqual('available', node['provision_state'])
        self.assertEqual({}, node['instance_info'])
        self.assertIsNone(node['instance_uuid'])

        self.cli('node', 'maintenance', 'set', name, '--reason', 'testing')
        node = self.show(name)
        self.assertTrue(node['maintenance'])
        self.assertEqual('testing', node['maintenance_reason'])
        self.cli('node', 'maintenance', 'unset', name)
        node = self.show(name)
        self.assertFalse(node['maintenance'])
        self.assertIsNone(node['maintenance_reason'])

        self.cli('node', 'delete', name)
        self.assertEqual([], self.cli_json('node', 'list',
                                           '--resource-class', rc))
        stderr = self.cli_error('node', 'show', uuid)
        self.assertIn('Node %s could not be found' % uuid, stderr)

    def test_show_missing_node(self):
        stderr = self.cli_error('node', 'show', 'no-such-node')
        self.assertIn('Node no-such-node could not be found', stderr)
        self.assertIn('HTTP 404', stderr)

    def test_create_with_any_driver_name(self):
        # NOTE: no hardware is driven here, so any driver name is stored
        # as given (the foundation issue asks for exactly that).
        name = base.unique('cli-other-driver')
        node = self.cli_json('node', 'create', '--driver', 'ipmi',
                             '--name', name)
        self.assertEqual('ipmi', node['driver'])
        self.cli('node', 'delete', name)

    def test_deploy_in_wrong_state(self):
        name = base.unique('cli-enroll')
        self.cli('node', 'create', '--driver', 'fake-hardware',
                 '--name', name)
        stderr = self.cli_error('node', 'deploy', name)
        self.assertIn('The requested action "deploy" can not be performed',
                      stderr)
        self.assertIn('"enroll"', stderr)
        self.assertIn('HTTP 400', stderr)
        self.cli('node', 'delete', name)

    def test_invalid_trait(self):
        name = base.unique('cli-trait')
        self.cli('node', 'create', '--driver', 'fake-hardware',
                 '--name', name)
        stderr = self.cli_error('node', 'add', 'trait', name, 'lower_case')
        self.assertIn('lower_case', stderr)
        self.assertIn('HTTP 400', stderr)
        self.assertEqual([], self.cli_json('node', 'trait', 'list', name))
        self.cli('node', 'delete', name)

    def test_chassis_life_cycle(self):
        # NOTE: in this class, to share its service (one per class).
        description = base.unique('cli-chassis')
        chassis = self.cli_json('chassis', 'create', '--description',
                                description, '--extra', 'row=b')
        chassis_uuid = chassis['uuid']
        self.assertEqual(description, chassis['description'])
        self.assertEqual({'row': 'b'}, chassis['extra'])

        listed = self.cli_json('chassis', 'list')
        self.assertIn((chassis_uuid, description),
                      [(c['uuid'], c['description']) for c in listed])
        shown = self.cli_json('chassis', 'show', chassis_uuid)
        self.assertEqual(description, shown['description'])

        self.cli('chassis', 'set', chassis_uuid, '--description', 'renamed',
                 '--extra', 'power=2')
        shown = self.cli_json('chassis', 'show', chassis_uuid)
        self.assertEqual('renamed', shown['description'])
        # NOTE: the client sends KEY=VALUE values JSON-decoded.
        self.assertEqual({'row': 'b', 'power': 2}, shown['extra'])

        node = self.cli_json('node', 'create', '--driver', 'fake-hardware',
                             '--name', base.unique('cli-chassis-node'),
                             '--chassis-uuid', chassis_uuid)
        self.assertEqual(chassis_uuid, node['chassis_uuid'])
        in_chassis = self.cli_json('node', 'list', '--chassis', chassis_uuid)
        self.assertEqual([node['uuid']], [n['uuid'] for n in in_chassis])

        # A chassis with a node is not deleted; the server's reason is
        # shown.
        error = self.cli_error('chassis', 'delete', chassis_uuid)
        self.assertIn('contains nodes', error)
        error = self.cli_error('node', 'create', '--driver',
                               'fake-hardware', '--chassis-uuid',
                               str(uuid.uuid4()))
        self.assertIn('could not be found', error)

        self.cli('node', 'unset', node['uuid'], '--chassis-uuid')
        self.assertIsNone(
            self.cli_json('node', 'show', node['uuid'])['chassis_uuid'])
        self.cli('chassis', 'delete', chassis_uuid)
        error = self.cli_error('chassis', 'show', chassis_uuid)
        self.assertIn('could not be found', error)
        self.cli('node', 'delete', node['uuid'])

    def test_shards_at_the_negotiated_version(self):
        """No --os-baremetal-api-version: the client negotiates the
        newest version both sides know, and the fields and filters of the
        latest versions work."""
        shard = base.unique('cli-shard')
        node = self.cli_json('node', 'create', '--driver', 'fake-hardware',
                             '--name', base.unique('cli-shard-node'))
        other = self.cli_json('node', 'create', '--driver', 'fake-hardware',
                              '--name', base.unique('cli-shard-other'))
        self.cli('node', 'set', node['uuid'], '--shard', shard)

        shown = self.show(node['uuid'])
        self.assertEqual(shard, shown['shard'])
        # NOTE: health appears from 1.109, disable_power_off from 1.95:
        # they are shown only when the negotiation reached them.
        self.assertIn('health', shown)
        self.assertIs(False, shown['disable_power_off'])

        in_shard = self.cli_json('node', 'list', '--shards', shard)
        self.assertEqual([node['uuid']], [n['uuid'] for n in in_shard])
        sharded = {n['uuid'] for n in self.cli_json('node', 'list',
                                                    '--sharded')}
        self.assertIn(node['uuid'], sharded)
        self.assertNotIn(other['uuid'], sharded)
        unsharded = {n['uuid'] for n in self.cli_json('node', 'list',
                                                      '--unsharded')}
        self.assertIn(other['uuid'], unsharded)
        self.assertNotIn(node['uuid'], unsharded)
        shards = {s['name']: s['count']
                  for s in self.cli_json('shard', 'list')}
        self.assertEqual(1, shards.get(shard))

        for node_uuid in (node['uuid'], other['uuid']):
            self.cli('node', 'delete', node_uuid)
