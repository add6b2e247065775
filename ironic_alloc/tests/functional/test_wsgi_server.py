"""The API's cheroot server (common/wsgi_service.py) and ironic-alloc-api
over real sockets."""

import http.client
import json
import logging
import socket
import threading

import fixtures

from ironic_alloc.api import hooks
from ironic_alloc.cmd import api as api_cmd
from ironic_alloc.common import request_slots
from ironic_alloc.common import wsgi_service
from ironic_alloc.tests import base


def _app(environ, start_response):
    # Like the API's responses, with their length.
    start_response('200 OK', [('Content-Type', 'text/plain'),
                              ('Content-Length', '5')])
    return [b'hello']


class TestApiServer(base.DbTestCase):
    """ironic-alloc-api's service: port 0, a thread, HTTP over a socket."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        self.config(host_ip='127.0.0.1', port=0, group='api')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        self.server = api_cmd.build_service()
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
        self.assertEqual('1.115',
                         resp.getheader('X-OpenStack-Ironic-API-Version'))

    def test_error_over_the_socket(self):
        resp, body = self._get('/v1/nodes', {
            'X-OpenStack-Ironic-API-Version': '1.999'})
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
            name='ironic_alloc.common.wsgi_service', level=logging.WARNING))
        server = wsgi_service.WSGIService(lambda: _app, host=host, port=0)
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
            self.assertTrue(wsgi_service.is_loopback(host), host)
        for host in ('0.0.0.0', '::', '10.0.0.1', 'api.example.com'):
            self.assertFalse(wsgi_service.is_loopback(host), host)


class TestServer(base.TestCase):

    def test_serves_in_a_thread(self):
        server = wsgi_service.WSGIService(lambda: _app, port=0)
        self.addCleanup(server.stop)
        server.start()
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request('GET', '/')
        resp = conn.getresponse()
        self.assertEqual(200, resp.status)
        self.assertEqual(b'hello', resp.read())

    def test_listening_socket_options(self):
        # TCP_NODELAY is inherited by the accepted connections: without
        # it, a response written in two parts (cheroot writes the headers,
        # then the body) waits for the client's delayed acknowledgement.
        sock = wsgi_service.listen('127.0.0.1', 0)
        self.addCleanup(sock.close)
        self.assertTrue(sock.getsockopt(socket.IPPROTO_TCP,
                                        socket.TCP_NODELAY))
        self.assertTrue(sock.getsockopt(socket.SOL_SOCKET,
                                        socket.SO_REUSEADDR))

    def test_stop_without_start(self):
        server = wsgi_service.WSGIService(lambda: _app, port=0)
        server.stop()
        server.stop()


def _streaming_app(environ, start_response):
    # A body of unknown length: no Content-Length header.
    start_response('200 OK', [('Content-Type', 'text/plain')])
    return iter([b'part one, ', b'part two'])


def _echo_app(environ, start_response):
    # Reads "all" of its input the careless way, read() without a size,
    # or, on /ignore, none of it.
    if environ['PATH_INFO'] == '/ignore':
        body = b'ignored'
    else:
        body = environ['wsgi.input'].read()
    body = environ['REQUEST_METHOD'].encode() + b' ' + body
    start_response('200 OK', [('Content-Type', 'text/plain'),
                              ('Content-Length', str(len(body)))])
    return [body]


def _recv_until_closed(sock):
    chunks = []
    while True:
        data = sock.recv(65536)
        if not data:
            return b''.join(chunks)
        chunks.append(data)


class TestKeepAlive(base.TestCase):
    """HTTP/1.1 persistent connections of the API's server, over real
    sockets."""

    def _server(self, app, keepalive_timeout=30):
        self.config(keepalive_timeout=keepalive_timeout, group='api')
        server = wsgi_service.WSGIService(lambda: app, port=0)
        self.addCleanup(server.stop)
        server.start()
        return server

    def _socket(self, server):
        sock = socket.create_connection(('127.0.0.1', server.port),
                                        timeout=30)
        self.addCleanup(sock.close)
        return sock

    def test_two_requests_on_one_connection(self):
        server = self._server(_echo_app)
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request('POST', '/', body=b'first')
        resp = conn.getresponse()
        self.assertEqual(b'POST first', resp.read())
        self.assertEqual('HTTP/1.1', 'HTTP/1.%d' % (resp.version % 10))
        self.assertIsNone(resp.getheader('Connection'))
        sock = conn.sock
        self.assertIsNotNone(sock)
        conn.request('GET', '/')
        resp = conn.getresponse()
        self.assertEqual(b'GET ', resp.read())
        # http.client reconnects silently: the same socket proves the
        # second request went over the first connection.
        self.assertIs(sock, conn.sock)

    def test_pipelined_requests(self):
        server = self._server(_echo_app)
        sock = self._socket(server)
        sock.sendall(b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n'
                     b'\r\nabc'
                     b'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n'
                     b'Connection: close\r\n\r\ndef')
        data = _recv_until_closed(sock)
        self.assertEqual(2, data.count(b'HTTP/1.1 200 OK'))
        self.assertIn(b'\r\n\r\nPOST abcHTTP/1.1 200 OK', data)
        self.assertTrue(data.endswith(b'\r\n\r\nPOST def'), data)
        self.assertEqual(1, data.count(b'Connection: close'))

    def test_unread_body_does_not_leak_into_next_request(self):
        server = self._server(_echo_app)
        sock = self._socket(server)
        sock.sendall(b'PUT /ignore HTTP/1.1\r\nHost: x\r\n'
                     b'Content-Length: 13\r\n\r\nGET / HTTP/1.'
                     b'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n'
                     b'\r\n')
        data = _recv_until_closed(sock)
        self.assertEqual(2, data.count(b'HTTP/1.1 200 OK'), data)
        self.assertIn(b'PUT ignored', data)
        self.assertTrue(data.endswith(b'\r\n\r\nGET '), data)

    def test_response_without_length_is_chunked(self):
        server = self._server(_streaming_app)
        conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                          timeout=30)
        self.addCleanup(conn.close)
        conn.request('GET', '/')
        resp = conn.getresponse()
        # The client can tell where the body ends without the end of the
        # connection: the connection carries the next request.
        self.assertEqual('chunked', resp.getheader('Transfer-Encoding'))
        self.assertIsNone(resp.getheader('Content-Length'))
        self.assertEqual(b'part one, part two', resp.read())
        sock = conn.sock
        conn.request('GET', '/')
        resp = conn.getresponse()
        self.assertEqual(b'part one, part two', resp.read())
        self.assertIs(sock, conn.sock)

    def test_client_asks_to_close(self):
        server = self._server(_app)
        sock = self._socket(server)
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n'
                     b'\r\n')
        data = _recv_until_closed(sock)
        self.assertIn(b'Connection: close', data)
        self.assertTrue(data.endswith(b'\r\n\r\nhello'))

    def test_http_1_0_client_gets_one_response(self):
        server = self._server(_app)
        sock = self._socket(server)
        sock.sendall(b'GET / HTTP/1.0\r\n\r\n')
        data = _recv_until_closed(sock)
        self.assertNotIn(b'Keep-Alive', data)
        self.assertTrue(data.endswith(b'\r\n\r\nhello'))

    def test_keepalive_disabled(self):
        server = self._server(_app, keepalive_timeout=0)
        sock = self._socket(server)
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        data = _recv_until_closed(sock)
        self.assertIn(b'Connection: close', data)
        self.assertTrue(data.endswith(b'\r\n\r\nhello'))

    def test_idle_connection_is_closed(self):
        server = self._server(_app, keepalive_timeout=1)
        sock = self._socket(server)
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        # The server ends the connection after a second of idleness; the
        # 30 s socket timeout of this client is only a safety net.
        data = _recv_until_closed(sock)
        self.assertNotIn(b'Connection: close', data)
        self.assertTrue(data.endswith(b'\r\n\r\nhello'))

    def test_stop_ends_idle_connections(self):
        server = self._server(_app)
        sock = self._socket(server)
        sock.sendall(b'GET / HTTP/1.1\r\nHost: x\r\n\r\n')
        head = sock.recv(65536)
        while not head.endswith(b'hello'):
            head += sock.recv(65536)
        server.stop()
        self.assertEqual(b'', _recv_until_closed(sock))


class TestRequestLimits(base.TestCase):
    """What the server refuses before the application sees it."""

    def setUp(self):
        super().setUp()
        self.server = wsgi_service.WSGIService(lambda: _app, port=0)
        self.addCleanup(self.server.stop)
        self.server.start()

    def _send(self, data):
        sock = socket.create_connection(('127.0.0.1', self.server.port),
                                        timeout=30)
        self.addCleanup(sock.close)
        try:
            sock.sendall(data)
        except OSError:
            # The server may answer and close before it read everything.
            pass
        return _recv_until_closed(sock)

    def test_request_line_too_long(self):
        path = b'/' + b'a' * wsgi_service.MAX_REQUEST_HEADER_SIZE
        data = self._send(b'GET ' + path + b' HTTP/1.1\r\nHost: x\r\n\r\n')
        self.assertTrue(data.startswith(b'HTTP/1.1 414 '), data[:100])

    def test_headers_too_large(self):
        headers = b''.join(b'X-Filler-%d: %s\r\n' % (i, b'b' * 1000)
                           for i in range(70))
        data = self._send(b'GET / HTTP/1.1\r\nHost: x\r\n' + headers
                          + b'\r\n')
        self.assertTrue(data.startswith(b'HTTP/1.1 413 '), data[:100])

    def test_not_http(self):
        data = self._send(b'hello there\r\n\r\n')
        self.assertTrue(data.startswith(b'HTTP/1.1 400 '), data[:100])

    def test_two_lengths(self):
        # Where the request ends is unknown: 400, and the connection,
        # which would carry the rest as another request, is closed.
        data = self._send(b'POST / HTTP/1.1\r\nHost: x\r\n'
                          b'Content-Length: 3\r\nContent-Length: 40\r\n'
                          b'\r\nabcGET / HTTP/1.1\r\nHost: x\r\n\r\n')
        self.assertTrue(data.startswith(b'HTTP/1.1 400 '), data[:100])
        self.assertIn(b'Invalid Content-Length', data)
        self.assertEqual(1, data.count(b'HTTP/1.1 '))

    def test_headers_within_the_limit(self):
        headers = b''.join(b'X-Filler-%d: %s\r\n' % (i, b'b' * 1000)
                           for i in range(8))
        data = self._send(b'GET / HTTP/1.1\r\nHost: x\r\n' + headers
                          + b'Connection: close\r\n\r\n')
        self.assertTrue(data.startswith(b'HTTP/1.1 200 '), data[:100])
        self.assertTrue(data.endswith(b'\r\n\r\nhello'))


class TestRequestSlots(base.TestCase):
    """[api]max_concurrent_requests bounds the requests in progress; a
    request waiting outside the process gives its slot back."""

    def setUp(self):
        super().setUp()
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.entered = threading.Semaphore(0)
        self.go_on = threading.Event()

    def _app(self, environ, start_response):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.entered.release()
        if environ['PATH_INFO'] == '/outside':
            with request_slots.released():
                self.go_on.wait(30)
        else:
            self.go_on.wait(30)
        with self.lock:
            self.running -= 1
        start_response('200 OK', [('Content-Type', 'text/plain')])
        return [b'done']

    def _serve(self, limit):
        self.config(max_concurrent_requests=limit, group='api')
        server = wsgi_service.WSGIService(lambda: self._app, port=0)
        self.addCleanup(server.stop)
        server.start()
        return server

    def _get_in_thread(self, server, path, results):
        def get():
            conn = http.client.HTTPConnection('127.0.0.1', server.port,
                                              timeout=60)
            try:
                conn.request('GET', path)
                results.append(conn.getresponse().read())
            finally:
                conn.close()
        thread = threading.Thread(target=get)
        thread.start()
        self.addCleanup(thread.join)
        return thread

    def test_second_request_waits_for_the_first(self):
        server = self._serve(1)
        results = []
        first = self._get_in_thread(server, '/', results)
        self.assertTrue(self.entered.acquire(timeout=30))
        second = self._get_in_thread(server, '/', results)
        # The second request is accepted but not let in while the first
        # holds the only slot: the first leaves only after go_on, and
        # entered is released by requests inside the application.
        self.assertFalse(self.entered.acquire(timeout=0.5))
        self.go_on.set()
        first.join(30)
        second.join(30)
        self.assertEqual([b'done', b'done'], results)
        self.assertEqual(1, self.most)

    def test_request_waiting_outside_lets_another_in(self):
        server = self._serve(1)
        results = []
        first = self._get_in_thread(server, '/outside', results)
        self.assertTrue(self.entered.acquire(timeout=30))
        second = self._get_in_thread(server, '/', results)
        self.assertTrue(self.entered.acquire(timeout=30))
        self.assertEqual(2, self.most)
        self.go_on.set()
        first.join(30)
        second.join(30)
        self.assertEqual([b'done', b'done'], results)

    def test_no_limit(self):
        server = self._serve(0)
        results = []
        threads = [self._get_in_thread(server, '/', results)
                   for _ in range(3)]
        for _ in threads:
            self.assertTrue(self.entered.acquire(timeout=30))
        self.assertEqual(3, self.most)
        self.go_on.set()
        for thread in threads:
            thread.join(30)
        self.assertEqual([b'done'] * 3, results)
