"""An API pinned to an older release against a real conductor.

The API is served over HTTP with ``[DEFAULT]pin_release_version`` set;
the conductor (in-process, on the fake:// transport) runs the current
code.  Every RPC message that reaches the transport is recorded after the
real serializer ran, to show what a conductor of the older release would
have received.
"""

import http.client
import json
import time

import fixtures
from oslo_messaging._drivers import impl_fake

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.common import release_mappings
from ironic_alloc.common import states
from ironic_alloc.common import wsgi_service
from ironic_alloc.objects import node as node_obj
from ironic_alloc.tests import base
from ironic_alloc.tests.functional.conductor import utils
from ironic_alloc.tests.functional import fixtures as ia_fixtures

HEADERS = {'Content-Type': 'application/json',
           'X-OpenStack-Ironic-API-Version': '1.79'}
OBJ_NAME = 'ironic_alloc_object.name'
OBJ_VERSION = 'ironic_alloc_object.version'


class RollingUpgradeTestCase(base.DbTestCase):

    PIN = None

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        # NOTE: the POST asks its conductor to answer when done (RPC 1.2)
        # unless pinned to a release before that.
        self.config(allocation_create_wait=5, group='api')
        if self.PIN:
            self.config(pin_release_version=self.PIN)
        self.sent = []
        deliver = impl_fake.FakeExchange.deliver_message

        def record(exchange, topic, ctxt, message, **kwargs):
            self.sent.append(message)
            return deliver(exchange, topic, ctxt, message, **kwargs)

        # NOTE: a pass-through spy on the in-process transport: the real
        # conductor still gets every message.
        self.useFixture(fixtures.MockPatchObject(
            impl_fake.FakeExchange, 'deliver_message', record))
        self.useFixture(ia_fixtures.ConductorFixture(host='upgrade-c1'))
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = wsgi_service.WSGIService(api_app.setup_app,
                                               '127.0.0.1', 0)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.conn = http.client.HTTPConnection('127.0.0.1', self.server.port,
                                               timeout=30)
        self.addCleanup(self.conn.close)

    def request(self, method, path, body=None, version=None):
        headers = dict(HEADERS)
        if version is not None:
            headers['X-OpenStack-Ironic-API-Version'] = version
        self.conn.request(method, path,
                          body=json.dumps(body) if body else None,
                          headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data else None

    def wait_for(self, path, key, done):
        deadline = time.monotonic() + 30
        while True:
            status, body = self.request('GET', path)
            self.assertEqual(200, status, body)
            if body[key] not in done or time.monotonic() > deadline:
                return body
            time.sleep(0.05)

    def sent_by_method(self):
        result = {}
        for message in self.sent:
            result.setdefault(message['method'], []).append(message)
        return result

    def objects_sent(self):
        """(name, version) of every object in the recorded arguments."""
        found = []
        for message in self.sent:
            for value in message['args'].values():
                if isinstance(value, dict) and OBJ_NAME in value:
                    found.append((value[OBJ_NAME], value[OBJ_VERSION]))
        return found

    def exercise(self):
        """Allocate, update, power and delete through the API."""
        node = self.node = utils.make_available_node(self.context,
                                                     name='upgrade-node')
        status, body = self.request('POST', '/v1/allocations',
                                    {'resource_class': 'gold'})
        self.assertEqual(201, status, body)
        self.created = body
        allocation = self.wait_for('/v1/allocations/%s' % body['uuid'],
                                   'state', (states.ALLOCATING,))
        self.assertEqual(states.ACTIVE, allocation['state'], allocation)
        self.assertEqual(node.uuid, allocation['node_uuid'])

        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % node.uuid,
            [{'op': 'add', 'path': '/description', 'value': 'rack 7'}])
        self.assertEqual(200, status, body)
        self.assertEqual('rack 7', body['description'])

        self.config(fake_action_delay=2, group='conductor')
        status, body = self.request(
            'PUT', '/v1/nodes/%s/states/power' % node.uuid,
            {'target': states.POWER_ON, 'timeout': 1})
        self.assertEqual(202, status, body)
        power = self.wait_for('/v1/nodes/%s' % node.uuid,
                              'target_power_state', (states.POWER_ON,))

        status, body = self.request('DELETE', '/v1/allocations/%s'
                                    % allocation['uuid'])
        self.assertEqual(204, status, body)
        refreshed = node_obj.Node.get_by_uuid(self.context, node.uuid)
        self.assertIsNone(refreshed.allocation_id)
        return power


class PinnedApiTestCase(RollingUpgradeTestCase):

    PIN = '2026.2'

    def test_pinned_api_works_with_current_conductor(self):
        power = self.exercise()
        release = release_mappings.RELEASE_MAPPING[self.PIN]
        sent = self.sent_by_method()
        self.assertEqual({'create_allocation', 'update_node',
                          'change_node_power_state', 'destroy_allocation'},
                         set(sent))
        versions = {m.get('version') for ms in sent.values() for m in ms}
        self.assertEqual({release['rpc']}, versions - {None})
        # The 1.0 signature: no timeout; the power action was not bounded.
        self.assertEqual([{'node_id', 'new_state'}],
                         [set(m['args'])
                          for m in sent['change_node_power_state']])
        self.assertEqual(states.POWER_ON, power['power_state'])
        self.assertIsNone(power['last_error'])
        # 1.0: a cast without wait; the answer shows the row as created.
        self.assertEqual([{'allocation_id'}],
                         [set(m['args']) for m in sent['create_allocation']])
        self.assertEqual(states.ALLOCATING, self.created['state'])
        objects = self.objects_sent()
        self.assertIn('Node', [name for name, _ in objects])
        for name, version in objects:
            self.assertEqual(release['objects'][name], version, name)


    def test_shard_change_refused(self):
        # A conductor of 2026.2 (Node 1.0) would drop the shard and the
        # parent of the node it is sent: the change is refused before
        # anything is sent.
        node = utils.make_node(self.context, name='pinned-shard')
        parent = utils.make_node(self.context, name='pinned-parent')
        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % node.uuid,
            [{'op': 'add', 'path': '/shard', 'value': 'rack-a'},
             {'op': 'add', 'path': '/description', 'value': 'moved'},
             {'op': 'add', 'path': '/parent_node', 'value': parent.uuid}],
            version='1.83')
        self.assertEqual(409, status, body)
        self.assertIn('Field(s) parent_node, shard cannot be changed while '
                      '[DEFAULT]pin_release_version is 2026.2',
                      body['error_message'])
        self.assertEqual([], self.sent)
        stored = node_obj.Node.get_by_uuid(self.context, node.uuid)
        self.assertIsNone(stored.shard)
        self.assertIsNone(stored.description)
        # Other fields are changed as before.
        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % node.uuid,
            [{'op': 'add', 'path': '/description', 'value': 'moved'}],
            version='1.82')
        self.assertEqual(200, status, body)
        self.assertEqual('moved', body['description'])
        self.assertIsNone(body['shard'])
        stored = node_obj.Node.get_by_uuid(self.context, node.uuid)
        self.assertIsNone(stored.parent_node)

    def test_node_1_3_fields_change_refused(self):
        # Node 1.3 (disable_power_off, instance_name) is unknown to the
        # conductors of 2026.2 as well.
        node = utils.make_node(self.context, name='pinned-power')
        for path, value in (('/disable_power_off', True),
                            ('/instance_name', 'vm-1')):
            status, body = self.request(
                'PATCH', '/v1/nodes/%s' % node.uuid,
                [{'op': 'replace', 'path': path, 'value': value}],
                version='1.104')
            self.assertEqual(409, status, body)
            self.assertIn('Field(s) %s cannot be changed while '
                          '[DEFAULT]pin_release_version is 2026.2'
                          % path[1:], body['error_message'])
        self.assertEqual([], self.sent)
        stored = node_obj.Node.get_by_uuid(self.context, node.uuid)
        self.assertFalse(stored.disable_power_off)
        self.assertIsNone(stored.instance_name)


class UnpinnedApiTestCase(RollingUpgradeTestCase):

    def test_shard_change_reaches_the_conductor(self):
        node = utils.make_node(self.context, name='unpinned-shard')
        status, body = self.request(
            'PATCH', '/v1/nodes/%s' % node.uuid,
            [{'op': 'add', 'path': '/shard', 'value': 'rack-a'}],
            version='1.82')
        self.assertEqual(200, status, body)
        self.assertEqual('rack-a', body['shard'])
        self.assertEqual('rack-a', node_obj.Node.get_by_uuid(
            self.context, node.uuid).shard)

    def test_current_api_sends_current_versions(self):
        power = self.exercise()
        sent = self.sent_by_method()
        self.assertEqual(['1.1'], [m['version'] for m in
                                   sent['change_node_power_state']])
        # 1.2: a call with the wait; the answer shows the end state.
        self.assertEqual([('1.2', 5)],
                         [(m['version'], m['args']['wait'])
                          for m in sent['create_allocation']])
        self.assertEqual(states.ACTIVE, self.created['state'])
        self.assertEqual(self.node.uuid, self.created['node_uuid'])
        self.assertEqual([1], [m['args']['timeout'] for m in
                               sent['change_node_power_state']])
        # The power action outlasted its timeout: it failed.
        self.assertEqual(states.POWER_OFF, power['power_state'])
        self.assertIn('did not reach power state power on within 1 '
                      'seconds', power['last_error'])
        for name, version in self.objects_sent():
            self.assertEqual(
                release_mappings.RELEASE_MAPPING[
                    release_mappings.CURRENT]['objects'][name], version)
