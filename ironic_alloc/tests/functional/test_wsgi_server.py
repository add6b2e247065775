"""The development server and ironic-alloc-api over real sockets."""

import http.client
import json
import logging

import fixtures

from ironic_alloc.api import hooks
from ironic_alloc.cmd import api as api_cmd
from ironic_alloc.common import wsgi_server
from ironic_alloc.tests import base


def _app(environ, start_response):
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return [b'hello']


class TestApiServer(base.DbTestCase):
    """ironic-alloc-api's server: port 0, a thread, HTTP over a socket."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = api_cmd.build_server()
        self.addCleanup(self.server.stop)
        self.server.start()

    def _get(self, path, headers=None):
        conn = http.client.HTTPConnection(self.server.host, self.server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request('GET', path, headers=headers or {})
        resp = conn.getresponse()
        return resp, resp.read()

    def test_bound_port(self):
        self.assertNotEqual(0, self.server.port)
        self.assertEqual('127.0.0.1', self.server.host)

    def test_get_root(self):
        resp, body = self._get('/')
        self.assertEqual(200, resp.status)
        doc = json.loads(body)
        self.assertEqual('v1', doc['default_version']['id'])
        self.assertEqual('http://127.0.0.1:%d/v1/' % self.server.port,
                         doc['default_version']['links'][0]['href'])
        self.assertTrue(resp.getheader('X-OpenStack-Request-Id'))

    def test_get_nodes(self):
        resp, body = self._get('/v1/nodes', {
            'X-OpenStack-Ironic-API-Version': 'latest'})
        self.assertEqual(200, resp.status)
        self.assertEqual({'nodes': []}, json.loads(body))
        self.assertEqual('1.79',
                         resp.getheader('X-OpenStack-Ironic-API-Version'))

    def test_error_over_the_socket(self):
        resp, body = self._get('/v1/nodes', {
            'X-OpenStack-Ironic-API-Version': '1.99'})
        self.assertEqual(406, resp.status)
        self.assertIn('error_message', json.loads(body))

    def test_stop_closes_the_socket(self):
        port = self.server.port
        self.server.stop()
        conn = http.client.HTTPConnection('127.0.0.1', port, timeout=5)
        self.addCleanup(conn.close)
        self.assertRaises(OSError, conn.request, 'GET', '/')


class TestNoauthWarning(base.TestCase):
    """Warnings when the API listens beyond loopback: without
    authentication, or with credentials in clear text."""

    def _serve(self, host):
        logger = self.useFixture(fixtures.FakeLogger(
            name='ironic_alloc.common.wsgi_server', level=logging.WARNING))
        server = wsgi_server.Server(_app, host=host, port=0)
        server.stop()
        return logger.output

    def test_noauth_on_all_addresses(self):
        self.config(auth_strategy='noauth')
        output = self._serve('0.0.0.0')
        self.assertIn('auth_strategy noauth and the API listens on 0.0.0.0',
                      output)
        self.assertIn('anyone who can reach 0.0.0.0 can', output)

    def test_noauth_on_loopback(self):
        self.config(auth_strategy='noauth')
        self.assertEqual('', self._serve('127.0.0.1'))

    def test_authenticated_on_all_addresses(self):
        for strategy in ('keystone', 'http_basic'):
            self.config(auth_strategy=strategy)
            output = self._serve('0.0.0.0')
            self.assertIn('auth_strategy %s and the API listens on 0.0.0.0:'
                          % strategy, output)
            self.assertIn('over plain HTTP: credentials (tokens, passwords) '
                          'travel in clear text', output)
            self.assertNotIn('anyone who can reach', output)

    def test_authenticated_on_loopback(self):
        for strategy in ('keystone', 'http_basic'):
            self.config(auth_strategy=strategy)
            self.assertEqual('', self._serve('127.0.0.2'))

    def test_is_loopback(self):
        for host in ('127.0.0.1', '127.1.2.3', '::1', 'localhost'):
            self.assertTrue(wsgi_server.is_loopback(host), host)
        for host in ('0.0.0.0', '::', '10.0.0.1', 'api.example.com'):
            self.assertFalse(wsgi_server.is_loopback(host), host)


class TestServer(base.TestCase):

    def test_serves_in_a_thread(self):
        server = wsgi_server.Server(_app, port=0)
        self.addCleanup(server.stop)
        server.start()
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request('GET', '/')
        resp = conn.getresponse()
        self.assertEqual(200, resp.status)
        self.assertEqual(b'hello', resp.read())

    def test_stop_without_start(self):
        server = wsgi_server.Server(_app, port=0)
        server.stop()
        server.stop()
