"""This project's OSC plugin (ironic_alloc/cli) in the real ``openstack``
command, next to python-ironicclient's plugin, against the real service:
``openstack baremetal reservation ...`` and ``openstack baremetal
allocation lease ...``.

The plugin is installed into the client virtualenv from this tree by
tools/setup-client-venv.sh.
"""

import datetime
import json
import os
import time
import urllib.request
import uuid

import fixtures

from ironic_alloc.tests.clients import base

WAIT = str(base.WAIT)

# The commands the plugin registers (entry point group
# openstack.baremetal_alloc.v1), as the "openstack" command names them.
PLUGIN_COMMANDS = frozenset([
    'baremetal reservation create',
    'baremetal reservation list',
    'baremetal reservation show',
    'baremetal reservation set',
    'baremetal reservation delete',
    'baremetal allocation lease set',
    'baremetal allocation lease unset',
    'baremetal allocation group create',
    'baremetal allocation group list',
    'baremetal allocation group show',
    'baremetal allocation group set',
    'baremetal allocation group unset',
    'baremetal allocation group delete',
])
PLUGIN_GROUP = 'openstack.baremetal_alloc.v1'
IRONICCLIENT_GROUP = 'openstack.baremetal.v1'


def parse_time(text):
    value = datetime.datetime.fromisoformat(text)
    if value.tzinfo is None:
        # NOTE: the API's times are UTC.
        value = value.replace(tzinfo=datetime.timezone.utc)
    return value


class PluginTestCase(base.ClientTestCase):

    def usage_error(self, *args):
        """Run a command argparse must refuse; return its stderr."""
        result = self._run_in_shell(self.cli_argv(*args))
        self.assertEqual(2, result.returncode,
                         'expected a usage error (exit status 2) from '
                         '%s' % (args,))
        return result.stderr

    def api(self, method, path, body=None):
        """One request to the service at extension 1.3; the decoded answer
        (None when empty).  The set-up of the tests (nodes, their states)
        and what the plugin's commands do not show (an allocation's lease)
        go this way: the commands under test are the plugin's.
        """
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.endpoint + path, data=data, method=method, headers={
                'OpenStack-API-Version': 'ironic-alloc 1.3',
                'X-OpenStack-Ironic-API-Version': '1.60',
                'Accept': 'application/json',
                'Content-Type': 'application/json'})
        with urllib.request.urlopen(request, timeout=base.WAIT) as answer:
            text = answer.read()
        return json.loads(text) if text else None

    def wait_for_state(self, node, state):
        deadline = time.monotonic() + base.WAIT
        while True:
            found = self.api('GET', '/v1/nodes/%s' % node)
            if found['provision_state'] == state:
                return
            if time.monotonic() > deadline:
                self.fail('node %s is %s, not %s, after %ds'
                          % (node, found['provision_state'], state,
                             base.WAIT))
            time.sleep(0.2)

    def available_nodes(self, rc, *names):
        """Create fake-hardware nodes of ``rc`` and make them available;
        return their UUIDs in order (they are deleted at the end)."""
        uuids = []
        for name in names:
            node = self.api('POST', '/v1/nodes', {
                'driver': 'fake-hardware', 'name': name,
                'resource_class': rc})
            uuids.append(node['uuid'])
            self.addCleanup(self.delete_node, node['uuid'])
        for target, state in (('manage', 'manageable'),
                              ('provide', 'available')):
            for node in uuids:
                self.api('PUT', '/v1/nodes/%s/states/provision' % node,
                         {'target': target})
            for node in uuids:
                self.wait_for_state(node, state)
        return uuids

    def delete_node(self, node):
        self.api('DELETE', '/v1/nodes/%s/maintenance' % node)
        self.api('DELETE', '/v1/nodes/%s' % node)

    def set_maintenance(self, node):
        self.api('PUT', '/v1/nodes/%s/maintenance' % node,
                 {'reason': 'test'})


class TestPluginNextToIronicclient(PluginTestCase):

    def test_both_plugins_loaded_no_command_collides(self):
        # NOTE: the console script itself, in a process of its own: the
        # entry points are what this test is about.
        result = self._run([self.venv.openstack, 'command', 'list',
                            '-f', 'json'])
        self.assertEqual(0, result.returncode, result.stderr)
        groups = {entry['Command Group']: set(entry['Commands'])
                  for entry in json.loads(result.stdout)}
        self.assertIn(PLUGIN_GROUP, groups)
        self.assertIn(IRONICCLIENT_GROUP, groups)
        self.assertEqual(PLUGIN_COMMANDS, groups[PLUGIN_GROUP])
        # python-ironicclient's commands are all there, ours among none
        # of them nor of any other group.
        self.assertIn('baremetal allocation set',
                      groups[IRONICCLIENT_GROUP])
        self.assertIn('baremetal node list', groups[IRONICCLIENT_GROUP])
        for group, commands in groups.items():
            if group != PLUGIN_GROUP:
                self.assertEqual(set(), commands & PLUGIN_COMMANDS, group)

        # Both plugins answer in one process: ours and ironicclient's
        # neighbours of the same words.
        ours = self.cli('allocation', 'lease', 'set', '--help').stdout
        self.assertIn('--expires-at', ours)
        theirs = self.cli('allocation', 'set', '--help').stdout
        self.assertIn('--name', theirs)
        self.assertNotIn('--expires-at', theirs)
        self.cli('node', 'list')

    def test_usage_errors(self):
        reservation = str(uuid.uuid4())
        stderr = self.usage_error('reservation', 'set', reservation)
        self.assertIn('one of the arguments --ttl --expires-at is required',
                      stderr)
        stderr = self.usage_error('reservation', 'set', reservation,
                                  '--ttl', '60', '--expires-at',
                                  '2030-01-01T00:00:00Z')
        self.assertIn('not allowed with argument', stderr)
        stderr = self.usage_error('reservation', 'set', reservation,
                                  '--ttl', 'soon')
        self.assertIn("invalid int value: 'soon'", stderr)
        stderr = self.usage_error('reservation', 'create', '--node',
                                  reservation)
        self.assertIn('--instance-uuid', stderr)
        stderr = self.usage_error('reservation', 'create',
                                  '--instance-uuid', reservation)
        self.assertIn('--node', stderr)
        stderr = self.usage_error('reservation', 'list', '--long',
                                  '--fields', 'uuid')
        self.assertIn('not allowed with argument', stderr)
        stderr = self.usage_error('reservation', 'list', '--fields',
                                  'uuid', 'name')
        self.assertIn("invalid choice: 'name'", stderr)
        stderr = self.usage_error('reservation', 'list', '--limit', '0')
        self.assertIn('0 is not greater than zero', stderr)
        self.usage_error('reservation', 'delete')
        stderr = self.usage_error('allocation', 'lease', 'set', 'alloc')
        self.assertIn('one of the arguments --ttl --expires-at is required',
                      stderr)
        self.usage_error('allocation', 'lease', 'unset')
        stderr = self.usage_error('allocation', 'group', 'create',
                                  '--count', '0')
        self.assertIn('0 is not greater than zero', stderr)
        stderr = self.usage_error('allocation', 'group', 'create',
                                  '--ttl', '60', '--expires-at',
                                  '2030-01-01T00:00:00Z')
        self.assertIn('not allowed with argument', stderr)
        self.usage_error('allocation', 'group', 'delete')
        stderr = self.usage_error('allocation', 'group', 'set', 'group')
        self.assertIn('one of the arguments --ttl --expires-at is required',
                      stderr)
        stderr = self.usage_error('allocation', 'group', 'unset', 'group')
        self.assertIn('--lease', stderr)


class TestReservationCommands(PluginTestCase):

    def test_reservation_life_cycle(self):
        rc = base.unique_rc('CLI_RESV')
        busy, free = base.unique('cli-busy'), base.unique('cli-free')
        busy_uuid, free_uuid = self.available_nodes(rc, busy, free)
        self.set_maintenance(busy_uuid)
        instance = str(uuid.uuid4())

        # The first node of the list that can be reserved: the second.
        created = self.cli_json('reservation', 'create', '--instance-uuid',
                                instance, '--node', busy, '--node',
                                free_uuid, '--ttl', '600')
        self.assertEqual(free_uuid, created['node_uuid'])
        self.assertEqual(instance, created['instance_uuid'])
        self.assertNotIn('links', created)
        for field in ('uuid', 'owner', 'expires_at', 'created_at',
                      'updated_at'):
            self.assertIn(field, created)
        resv = created['uuid']
        first_expiry = parse_time(created['expires_at'])
        self.assertGreater(first_expiry, parse_time(created['created_at']))

        # Ironic's clients see the node as held by the instance, and no
        # allocation.
        node = self.cli_json('node', 'show', free)
        self.assertEqual(instance, node['instance_uuid'])
        self.assertIsNone(node['allocation_uuid'])
        self.assertNotIn(resv, [a['uuid'] for a in
                                self.cli_json('allocation', 'list')])

        listed = self.cli_json('reservation', 'list', '--instance-uuid',
                               instance)
        self.assertEqual([{'uuid': resv, 'node_uuid': free_uuid,
                           'instance_uuid': instance,
                           'expires_at': created['expires_at']}], listed)
        for node_ref in (free, free_uuid):
            listed = self.cli_json('reservation', 'list', '--node',
                                   node_ref)
            self.assertEqual([resv], [r['uuid'] for r in listed])
        self.assertEqual([], self.cli_json('reservation', 'list', '--node',
                                           busy_uuid))
        long_list = self.cli_json('reservation', 'list', '--long',
                                  '--instance-uuid', instance)
        self.assertEqual(
            ['created_at', 'expires_at', 'instance_uuid', 'node_uuid',
             'owner', 'updated_at', 'uuid'], sorted(long_list[0]))
        narrow = self.cli_json('reservation', 'list', '--fields',
                               'node_uuid', '--fields', 'instance_uuid',
                               '--instance-uuid', instance)
        self.assertEqual([{'node_uuid': free_uuid,
                           'instance_uuid': instance}], narrow)

        shown = self.cli_json('reservation', 'show', resv)
        self.assertEqual(created['expires_at'], shown['expires_at'])
        self.assertEqual(free_uuid, shown['node_uuid'])
        shown = self.cli_json('reservation', 'show', resv, '--fields',
                              'node_uuid')
        self.assertEqual({'node_uuid': free_uuid}, shown)

        # Renewal: a longer ttl, then a time.
        self.cli('reservation', 'set', resv, '--ttl', '3600')
        renewed = parse_time(self.cli_json('reservation', 'show',
                                           resv)['expires_at'])
        self.assertGreater(renewed, first_expiry)
        until = (renewed + datetime.timedelta(hours=1)).replace(
            microsecond=0)
        self.cli('reservation', 'set', resv, '--expires-at',
                 until.strftime('%Y-%m-%dT%H:%M:%SZ'))
        self.assertEqual(until, parse_time(self.cli_json(
            'reservation', 'show', resv)['expires_at']))
        stderr = self.cli_error('reservation', 'set', resv, '--ttl', '0')
        self.assertIn('HTTP 400', stderr)

        self.cli('reservation', 'delete', resv)
        stderr = self.cli_error('reservation', 'show', resv)
        self.assertIn('HTTP 404', stderr)
        node = self.cli_json('node', 'show', free)
        self.assertIsNone(node['instance_uuid'])

    def test_refused_reservation_prints_reasons(self):
        rc = base.unique_rc('CLI_REFUSED')
        maint = base.unique('cli-maint')
        [maint_uuid] = self.available_nodes(rc, maint)
        self.set_maintenance(maint_uuid)
        missing = str(uuid.uuid4())

        stderr = self.cli_error('reservation', 'create', '--instance-uuid',
                                str(uuid.uuid4()), '--node', maint_uuid,
                                '--node', missing)
        self.assertIn('HTTP 409', stderr)
        lines = stderr.splitlines()
        maint_lines = [line for line in lines
                       if line.strip().startswith(maint_uuid + ':')]
        missing_lines = [line for line in lines
                         if line.strip().startswith(missing + ':')]
        self.assertEqual(1, len(maint_lines), stderr)
        self.assertIn('maintenance', maint_lines[0])
        self.assertEqual(1, len(missing_lines), stderr)
        self.assertIn('not found', missing_lines[0])
        # In request order.
        self.assertLess(lines.index(maint_lines[0]),
                        lines.index(missing_lines[0]))
        node = self.cli_json('node', 'show', maint)
        self.assertIsNone(node['instance_uuid'])

    def test_bad_input_and_missing_reservations(self):
        node = str(uuid.uuid4())
        stderr = self.cli_error('reservation', 'create', '--instance-uuid',
                                'not-a-uuid', '--node', node)
        self.assertIn('HTTP 400', stderr)
        stderr = self.cli_error('reservation', 'create', '--instance-uuid',
                                str(uuid.uuid4()), '--node', node,
                                '--ttl', '0')
        self.assertIn('HTTP 400', stderr)
        # A name is looked up first: an unknown one is an error of its own.
        name = base.unique('cli-no-such-node')
        stderr = self.cli_error('reservation', 'create', '--instance-uuid',
                                str(uuid.uuid4()), '--node', name)
        self.assertIn(name, stderr)
        self.assertIn('HTTP 404', stderr)

        rc = base.unique_rc('CLI_DELETE')
        free = base.unique('cli-delete')
        [free_uuid] = self.available_nodes(rc, free)
        resv = self.cli_json('reservation', 'create', '--instance-uuid',
                             str(uuid.uuid4()), '--node', free)['uuid']
        missing = str(uuid.uuid4())
        stderr = self.cli_error('reservation', 'delete', missing, resv)
        self.assertIn('1 of 2 reservations could not be deleted', stderr)
        self.assertIn(missing, stderr)
        self.assertEqual([], self.cli_json('reservation', 'list', '--node',
                                           free_uuid))


class TestAllocationLeaseCommands(PluginTestCase):

    def allocation(self, ident):
        return self.api('GET', '/v1/allocations/%s' % ident)

    def test_lease_set_and_unset(self):
        rc = base.unique_rc('CLI_LEASE')
        node = base.unique('cli-lease-node')
        self.available_nodes(rc, node)
        name = base.unique('cli-leased')
        alloc = self.cli_json('allocation', 'create', '--resource-class',
                              rc, '--name', name, '--wait', WAIT)
        self.assertEqual('active', alloc['state'])
        self.assertIsNone(self.allocation(name)['expires_at'])

        self.cli('allocation', 'lease', 'set', name, '--ttl', '3600')
        leased = parse_time(self.allocation(name)['expires_at'])
        self.assertGreater(
            leased, parse_time(self.allocation(name)['created_at']))

        until = (leased + datetime.timedelta(hours=2)).replace(microsecond=0)
        self.cli('allocation', 'lease', 'set', alloc['uuid'],
                 '--expires-at', until.isoformat())
        self.assertEqual(until, parse_time(
            self.allocation(name)['expires_at']))

        self.cli('allocation', 'lease', 'unset', name)
        self.assertIsNone(self.allocation(name)['expires_at'])
        # ironicclient's own view of the allocation is unchanged.
        shown = self.cli_json('allocation', 'show', name)
        self.assertEqual('active', shown['state'])
        self.assertNotIn('expires_at', shown)

        stderr = self.cli_error('allocation', 'lease', 'set', name,
                                '--ttl', '-5')
        self.assertIn('HTTP 400', stderr)
        missing = base.unique('cli-no-such-allocation')
        stderr = self.cli_error('allocation', 'lease', 'unset', missing)
        self.assertIn('HTTP 404', stderr)

        self.cli('allocation', 'delete', name)


class TestAllocationGroupCommands(PluginTestCase):

    def allocation(self, ident):
        return self.api('GET', '/v1/allocations/%s' % ident)

    def test_gang_swap_and_delete(self):
        rc = base.unique_rc('CLI_GROUP')
        nodes = self.available_nodes(
            rc, *[base.unique('cli-group-node') for _i in range(4)])
        name = base.unique('cli-gang')
        group = self.cli_json('allocation', 'group', 'create', '--name',
                              name, '--count', '3', '--resource-class', rc,
                              '--wait', WAIT)
        self.assertEqual('active', group['state'])
        self.assertEqual(3, len(group['members']))
        held = {member['node_uuid'] for member in group['members']}
        self.assertEqual(3, len(held))
        self.assertLessEqual(held, set(nodes))
        # ironicclient's commands see the members as allocations.
        for member in group['members']:
            shown = self.cli_json('allocation', 'show', member['uuid'])
            self.assertEqual('active', shown['state'])

        listed = self.cli_json('allocation', 'group', 'list')
        self.assertIn((group['uuid'], name, 'active'),
                      [(g['uuid'], g['name'], g['state']) for g in listed])
        self.assertEqual(group['uuid'], self.cli_json(
            'allocation', 'group', 'show', name)['uuid'])

        # A swap: one member released, a new one in the same commit.
        released = group['members'][0]
        swap = self.cli_json('allocation', 'group', 'create',
                             '--release', released['uuid'], '--count', '1',
                             '--resource-class', rc, '--wait', WAIT)
        self.assertEqual('active', swap['state'])
        new = [m for m in swap['members'] if m['uuid'] != released['uuid']]
        self.assertEqual(1, len(new))
        self.assertNotIn(new[0]['node_uuid'], held)
        stderr = self.cli_error('allocation', 'show', released['uuid'])
        self.assertIn('404', stderr)

        # Too many members for the free nodes: the group fails, whole.
        stderr = self.cli_error('allocation', 'group', 'create',
                                '--count', '5', '--resource-class', rc,
                                '--wait', WAIT)
        self.assertIn('failed', stderr)
        failed = [g for g in self.cli_json('allocation', 'group', 'list',
                                           '--long')
                  if g['state'] == 'error']
        self.assertTrue(failed)

        self.cli('allocation', 'group', 'delete', name, swap['uuid'])
        for member in group['members'][1:] + new:
            stderr = self.cli_error('allocation', 'show', member['uuid'])
            self.assertIn('404', stderr)
        # One refusal does not stop the other deletions; it is counted.
        missing = str(uuid.uuid4())
        stderr = self.cli_error('allocation', 'group', 'delete', missing,
                                *[group_['uuid'] for group_ in failed])
        self.assertIn('1 of %d allocation groups could not be deleted'
                      % (len(failed) + 1), stderr)
        self.assertIn(missing, stderr)
        for group_ in failed:
            stderr = self.cli_error('allocation', 'group', 'show',
                                    group_['uuid'])
            self.assertIn('HTTP 404', stderr)
        stderr = self.cli_error('allocation', 'group', 'show', name)
        self.assertIn('HTTP 404', stderr)

    def test_lease_set_and_unset(self):
        rc = base.unique_rc('CLI_GROUP_LEASE')
        self.available_nodes(
            rc, *[base.unique('cli-group-lease') for _i in range(2)])
        name = base.unique('cli-leased-group')
        group = self.cli_json('allocation', 'group', 'create', '--name',
                              name, '--count', '2', '--resource-class', rc,
                              '--wait', WAIT)
        self.assertEqual('active', group['state'])
        self.assertIsNone(group['expires_at'])
        self.addCleanup(self.cli, 'allocation', 'group', 'delete',
                        group['uuid'])

        def leases():
            """The group's lease end and its members' (by the API)."""
            shown = self.api('GET', '/v1/allocation_groups/%s' % name)
            return shown['expires_at'], {
                self.api('GET', '/v1/allocations/%s'
                         % member['uuid'])['expires_at']
                for member in shown['members']}

        self.cli('allocation', 'group', 'set', name, '--ttl', '3600')
        leased, members = leases()
        self.assertGreater(parse_time(leased),
                           parse_time(group['created_at']))
        self.assertEqual({leased}, members)
        # The command's view of the group shows the lease too.
        self.assertEqual(leased, self.cli_json(
            'allocation', 'group', 'show', name)['expires_at'])

        until = (parse_time(leased)
                 + datetime.timedelta(hours=2)).replace(microsecond=0)
        self.cli('allocation', 'group', 'set', group['uuid'],
                 '--expires-at', until.isoformat())
        leased, members = leases()
        self.assertEqual(until, parse_time(leased))
        self.assertEqual({leased}, members)

        self.cli('allocation', 'group', 'unset', name, '--lease')
        self.assertEqual((None, {None}), leases())

        stderr = self.cli_error('allocation', 'group', 'set', name,
                                '--ttl', '-5')
        self.assertIn('HTTP 400', stderr)
        missing = base.unique('cli-no-such-group')
        stderr = self.cli_error('allocation', 'group', 'unset', missing,
                                '--lease')
        self.assertIn('HTTP 404', stderr)

    def test_members_file_and_bad_input(self):
        workdir = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(workdir, 'members.json')
        with open(path, 'w') as f:
            json.dump([], f)
        stderr = self.cli_error('allocation', 'group', 'create',
                                '--members-file', path)
        self.assertIn('must hold a JSON object', stderr)
        with open(path, 'w') as f:
            json.dump({'not-a-uuid': {'resource_class': 'x'}}, f)
        stderr = self.cli_error('allocation', 'group', 'create',
                                '--members-file', path)
        self.assertIn('HTTP 400', stderr)
        self.assertIn('not-a-uuid', stderr)
        stderr = self.cli_error('allocation', 'group', 'create')
        self.assertIn('Give the members', stderr)
        stderr = self.cli_error('allocation', 'group', 'create',
                                '--trait', 'CUSTOM_X')
        self.assertIn('--count', stderr)
        stderr = self.cli_error('allocation', 'group', 'create',
                                '--handover', 'no-equals-sign')
        self.assertIn('ALLOCATION=NODE', stderr)


class TestReservationPaging(PluginTestCase):
    """Pages of two reservations at most: the list command follows them.

    The only test of its service, so that it lists every reservation
    without a filter (an instance has one node, so one reservation).
    """

    service_config = {'api': {'max_limit': '2'}}

    def test_list_follows_pages_limit_and_marker(self):
        rc = base.unique_rc('CLI_PAGES')
        nodes = self.available_nodes(
            rc, *[base.unique('cli-page') for _i in range(3)])
        reserved = []
        for node in nodes:
            reserved.append(self.cli_json(
                'reservation', 'create', '--instance-uuid',
                str(uuid.uuid4()), '--node', node)['uuid'])
            self.addCleanup(self.cli, 'reservation', 'delete',
                            reserved[-1])

        listed = [r['uuid'] for r in self.cli_json('reservation', 'list')]
        self.assertEqual(sorted(reserved), sorted(listed))
        self.assertEqual(listed[:1], [r['uuid'] for r in self.cli_json(
            'reservation', 'list', '--limit', '1')])
        self.assertEqual(listed[1:], [r['uuid'] for r in self.cli_json(
            'reservation', 'list', '--marker', listed[0])])
        self.assertEqual(listed[1:2], [r['uuid'] for r in self.cli_json(
            'reservation', 'list', '--marker', listed[0],
            '--limit', '1')])
