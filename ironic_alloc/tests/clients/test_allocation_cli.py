"""``openstack baremetal allocation ...`` (python-ironicclient) against the
real service (Bare Metal API 1.52 and later)."""

from ironic_alloc.tests.clients import base

IMAGE = 'http://images.example.com/cli-allocation.qcow2'
CHECKSUM = 'd' * 64
WAIT = str(base.WAIT)


class TestAllocationCommands(base.ClientTestCase):

    def available_nodes(self, rc, *nodes):
        """Create nodes of resource class ``rc`` and make them available.

        :param nodes: (name, [extra "node create" arguments]) pairs.
        :returns: their UUIDs, in order.
        """
        uuids = []
        for name, args in nodes:
            uuids.append(self.cli_json(
                'node', 'create', '--driver', 'fake-hardware', '--name',
                name, '--resource-class', rc, *args)['uuid'])
        names = [name for name, _args in nodes]
        # NOTE: one command for all of them: "provide --wait" polls every
        # 10 seconds.
        self.cli('node', 'manage', *names, '--wait', WAIT)
        self.cli('node', 'provide', *names, '--wait', WAIT)
        return uuids

    def test_allocation_life_cycle(self):
        rc = base.unique_rc('CLI_ALLOC')
        owner = base.unique('project')
        gpu = base.unique('cli-gpu')
        plain = base.unique('cli-plain')
        other = base.unique('cli-other-owner')
        gpu_uuid, _plain_uuid, other_uuid = self.available_nodes(
            rc, (gpu, ['--owner', owner]), (plain, ['--owner', owner]),
            (other, []))
        self.cli('node', 'add', 'trait', gpu, 'CUSTOM_GPU')
        self.cli('node', 'add', 'trait', other, 'CUSTOM_GPU')
        name = base.unique('cli-allocation')

        alloc = self.cli_json(
            'allocation', 'create', '--resource-class', rc,
            '--trait', 'CUSTOM_GPU', '--candidate-node', gpu,
            '--candidate-node', plain, '--candidate-node', other,
            '--name', name, '--extra', 'purpose=ci', '--owner', owner,
            '--wait', WAIT)
        # Only the node with the trait and the owner matches.
        self.assertEqual('active', alloc['state'])
        self.assertEqual(gpu_uuid, alloc['node_uuid'])
        self.assertEqual(name, alloc['name'])
        self.assertEqual(rc, alloc['resource_class'])
        self.assertEqual(['CUSTOM_GPU'], alloc['traits'])
        self.assertEqual(owner, alloc['owner'])
        self.assertEqual({'purpose': 'ci'}, alloc['extra'])
        self.assertEqual(3, len(alloc['candidate_nodes']))
        self.assertIn(other_uuid, alloc['candidate_nodes'])
        self.assertIsNone(alloc['last_error'])
        alloc_uuid = alloc['uuid']

        node = self.cli_json('node', 'show', gpu)
        self.assertEqual(alloc_uuid, node['allocation_uuid'])
        self.assertEqual(alloc_uuid, node['instance_uuid'])

        for args in ([], ['--node', gpu], ['--resource-class', rc],
                     ['--state', 'active'], ['--owner', owner]):
            listed = self.cli_json('allocation', 'list', *args)
            self.assertIn(alloc_uuid, [a['uuid'] for a in listed], args)
        self.assertEqual([], self.cli_json('allocation', 'list',
                                           '--node', plain))
        long_list = self.cli_json('allocation', 'list', '--long',
                                  '--resource-class', rc)
        self.assertEqual([(alloc_uuid, name, gpu_uuid)],
                         [(a['uuid'], a['name'], a['node_uuid'])
                          for a in long_list])

        shown = self.cli_json('allocation', 'show', name)
        self.assertEqual(alloc_uuid, shown['uuid'])

        renamed = base.unique('cli-renamed')
        self.cli('allocation', 'set', name, '--name', renamed,
                 '--extra', 'team=metal')
        shown = self.cli_json('allocation', 'show', alloc_uuid)
        self.assertEqual(renamed, shown['name'])
        self.assertEqual({'purpose': 'ci', 'team': 'metal'}, shown['extra'])
        self.cli('allocation', 'unset', renamed, '--extra', 'purpose')
        self.cli('allocation', 'unset', renamed, '--name')
        shown = self.cli_json('allocation', 'show', alloc_uuid)
        self.assertIsNone(shown['name'])
        self.assertEqual({'team': 'metal'}, shown['extra'])

        self.cli('allocation', 'delete', alloc_uuid)
        stderr = self.cli_error('allocation', 'show', alloc_uuid)
        self.assertIn('Allocation %s could not be found' % alloc_uuid,
                      stderr)
        node = self.cli_json('node', 'show', gpu)
        self.assertIsNone(node['allocation_uuid'])
        self.assertIsNone(node['instance_uuid'])

        for node_name in (gpu, plain, other):
            self.cli('node', 'delete', node_name)

    def test_backfill_deployed_node(self):
        rc = base.unique_rc('CLI_BACKFILL')
        name = base.unique('cli-deployed')
        [uuid] = self.available_nodes(rc, (name, []))
        self.cli('node', 'set', name,
                 '--instance-info', 'image_source=%s' % IMAGE,
                 '--instance-info', 'image_checksum=%s' % CHECKSUM)
        self.cli('node', 'deploy', name, '--wait', WAIT)

        alloc_name = base.unique('cli-backfill')
        alloc = self.cli_json('allocation', 'create', '--node', name,
                              '--name', alloc_name, '--wait', WAIT)
        self.assertEqual('active', alloc['state'])
        self.assertEqual(uuid, alloc['node_uuid'])
        self.assertEqual(rc, alloc['resource_class'])
        node = self.cli_json('node', 'show', name)
        self.assertEqual('active', node['provision_state'])
        self.assertEqual(alloc['uuid'], node['allocation_uuid'])
        self.assertEqual(alloc['uuid'], node['instance_uuid'])

        # NOTE: deleting the allocation of a deployed node is refused with
        # 409, which ironicclient retries for 20 seconds before it gives
        # up; the openstacksdk tests check that refusal instead.
        # Undeploying removes the allocation.
        self.cli('node', 'undeploy', name, '--wait', WAIT)
        stderr = self.cli_error('allocation', 'show', alloc_name)
        self.assertIn('could not be found', stderr)
        node = self.cli_json('node', 'show', name)
        self.assertIsNone(node['allocation_uuid'])
        self.assertIsNone(node['instance_uuid'])
        self.cli('node', 'delete', name)

    def test_allocation_without_match_fails(self):
        rc = base.unique_rc('CLI_NONE')
        name = base.unique('cli-nothing')
        stderr = self.cli_error('allocation', 'create', '--resource-class',
                                rc, '--name', name, '--wait', WAIT)
        self.assertIn(rc, stderr)
        alloc = self.cli_json('allocation', 'show', name)
        self.assertEqual('error', alloc['state'])
        self.assertIsNone(alloc['node_uuid'])
        self.assertIn(rc, alloc['last_error'])
        self.cli('allocation', 'delete', name)

    def test_show_missing_allocation(self):
        stderr = self.cli_error('allocation', 'show', 'no-such-allocation')
        self.assertIn('Allocation no-such-allocation could not be found',
                      stderr)
        self.assertIn('HTTP 404', stderr)


class TestAllocationCommandsWaitingCreate(TestAllocationCommands):
    """The same against a service whose POST /v1/allocations answers with
    the end state ([api]allocation_create_wait)."""

    service_config = {'api': {'allocation_create_wait': '10'}}
