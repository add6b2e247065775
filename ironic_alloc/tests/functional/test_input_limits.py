"""Input limits over a real socket: bodies too large to write in a gabbit.

hostile-input.yaml covers the other limits; here the API's server
(ironic-alloc-api's) listens on a real port, so what a client sees is what
crosses the wire, and the server must keep answering afterwards.
"""

import http.client
import json
import socket

from ironic_alloc.api import hooks
from ironic_alloc.cmd import api as api_cmd
from ironic_alloc.tests import base
from ironic_alloc.tests.functional import openapi

_HEADERS = {'X-OpenStack-Ironic-API-Version': 'latest',
            'Content-Type': 'application/json'}


class TestInputLimitsOverHTTP(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.config(max_request_body_size=4096, max_json_depth=32,
                    group='api')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = api_cmd.build_service()
        self.addCleanup(self.server.stop)
        self.server.start()

    def _request(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.server.host,
                                          self.server.port, timeout=30)
        self.addCleanup(conn.close)
        conn.request(method, path, body=body, headers=_HEADERS)
        resp = conn.getresponse()
        return resp, resp.read()

    def _fault(self, body):
        return json.loads(json.loads(body)['error_message'])

    def _assert_still_serving(self):
        resp, body = self._request('GET', '/v1/nodes')
        self.assertEqual(200, resp.status)
        return json.loads(body)['nodes']

    def test_body_over_the_limit(self):
        node = {'driver': 'fake-hardware',
                'description': 'd' * 4096}
        resp, body = self._request('POST', '/v1/nodes', json.dumps(node))
        self.assertEqual(413, resp.status)
        fault = self._fault(body)
        self.assertEqual('Client', fault['faultcode'])
        self.assertEqual('The request body is larger than 4096 bytes.',
                         fault['faultstring'])
        self.assertTrue(resp.getheader('X-OpenStack-Request-Id'))
        self.assertEqual([], self._assert_still_serving())

    def test_body_at_the_limit(self):
        node = {'driver': 'fake-hardware', 'description': ''}
        padding = 4096 - len(json.dumps(node))
        node['description'] = 'd' * padding
        data = json.dumps(node)
        self.assertEqual(4096, len(data))
        resp, body = self._request('POST', '/v1/nodes', data)
        self.assertEqual(201, resp.status, body)

    def test_get_with_a_body_that_is_not_utf8(self):
        # NOTE: found by test_fuzz: WSME decodes the body of a GET too,
        # and this was a 500.
        resp, body = self._request('GET', '/v1/nodes', b'.\xab\x83')
        self.assertEqual(400, resp.status)
        self.assertEqual('The request body is not UTF-8.',
                         self._fault(body)['faultstring'])

    def _raw_post(self, content_length):
        """POST with a Content-Length header and no body; the reply."""
        with socket.create_connection((self.server.host, self.server.port),
                                      timeout=30) as sock:
            sock.sendall(b'POST /v1/nodes HTTP/1.1\r\n'
                         b'Host: localhost\r\n'
                         b'Content-Type: application/json\r\n'
                         b'Content-Length: %s\r\n\r\n' % content_length)
            # NOTE: the server closes the connection after its answer.
            reply = b''
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    return reply
                reply += chunk

    def test_large_announced_body_is_not_read(self):
        # NOTE: the client announces 1 GiB and sends none of it: the
        # answer must come from the headers alone.
        reply = self._raw_post(b'1073741824')
        self.assertIn(b' 413 ', reply.split(b'\r\n', 1)[0])
        self.assertIn(b'The request body is larger than 4096 bytes', reply)
        self._assert_still_serving()

    def test_very_deep_body(self):
        # NOTE: deeper than Python's own recursion limit: json would fail
        # with a RecursionError (a 500 before the limit existed).
        depth = 2000
        data = '{"driver": "x", "extra": {"a": %s%s}}' % ('[' * depth,
                                                         ']' * depth)
        self.config(max_request_body_size=65536, group='api')
        resp, body = self._request('POST', '/v1/nodes', data)
        self.assertEqual(400, resp.status)
        self.assertEqual('The JSON body is nested deeper than 32 levels.',
                         self._fault(body)['faultstring'])
        self.assertEqual([], self._assert_still_serving())

    def test_negative_content_length(self):
        reply = self._raw_post(b'-5')
        self.assertIn(b' 400 ', reply.split(b'\r\n', 1)[0])
        self.assertIn(b'Invalid Content-Length', reply)
        self._assert_still_serving()


class TestStoredSizes(base.DbTestCase):
    """Text and JSON fields larger than a MySQL TEXT column: 400.

    NOTE: found on MariaDB, where they were a 500 ("Data too long"); CI
    runs this on SQLite, PostgreSQL and MariaDB.
    """

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        self.api = self.useFixture(openapi.ServedAPI())
        status, self.node = self.api.json('POST', '/v1/nodes', {
            'name': 'sized', 'driver': 'fake-hardware'})
        self.assertEqual(201, status)

    def _extra_of_size(self, size):
        """An object whose JSON text is ``size`` bytes."""
        extra = {'k': ''}
        extra['k'] = 'x' * (size - len(json.dumps(extra)))
        self.assertEqual(size, len(json.dumps(extra)))
        return extra

    def _assert_too_large(self, status, doc, field):
        self.assertEqual(400, status, doc)
        self.assertIn('The %s field is too large' % field,
                      doc['error_message'])

    def test_node_fields(self):
        status, doc = self.api.json('POST', '/v1/nodes', {
            'driver': 'fake-hardware',
            'extra': self._extra_of_size(65536)})
        self._assert_too_large(status, doc, 'extra')
        status, doc = self.api.json('PATCH', '/v1/nodes/sized', [
            {'op': 'add', 'path': '/retired_reason',
             'value': '\u00e9' * 32768}])
        self._assert_too_large(status, doc, 'retired_reason')
        status, doc = self.api.json('PUT', '/v1/nodes/sized/maintenance',
                                    {'reason': 'r' * 65536})
        self._assert_too_large(status, doc, 'maintenance_reason')
        status, doc = self.api.json('GET', '/v1/nodes/sized')
        self.assertEqual(({}, None, False),
                         (doc['extra'], doc['retired_reason'],
                          doc['maintenance']))

    def test_node_extra_at_the_limit_is_stored(self):
        extra = self._extra_of_size(65535)
        status, doc = self.api.json('POST', '/v1/nodes', {
            'driver': 'fake-hardware', 'extra': extra})
        self.assertEqual(201, status, doc)
        status, doc = self.api.json('GET', '/v1/nodes/%s' % doc['uuid'])
        self.assertEqual(extra, doc['extra'])

    def test_allocation_extra(self):
        status, doc = self.api.json('POST', '/v1/allocations', {
            'resource_class': 'gold',
            'extra': self._extra_of_size(65536)})
        self._assert_too_large(status, doc, 'extra')
        status, alloc = self.api.json('POST', '/v1/allocations', {
            'resource_class': 'gold', 'name': 'sized-alloc'})
        self.assertEqual(201, status, alloc)
        status, doc = self.api.json('PATCH', '/v1/allocations/sized-alloc', [
            {'op': 'add', 'path': '/extra/k', 'value': 'v' * 65536}])
        self._assert_too_large(status, doc, 'extra')
