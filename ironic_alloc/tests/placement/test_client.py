"""The Placement client against a real Placement: microversion, error
mapping, retries of generation conflicts, and no hang without an
answer."""

import socket
import threading

from oslo_utils import uuidutils

from ironic_alloc.common import exception
from ironic_alloc.common import placement
from ironic_alloc.conductor.backends import placement as placement_backend
from ironic_alloc.conductor.backends import placement_microversions
from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests.placement import base


class TestPlacementClient(base.PlacementTestCase):

    def _provider(self, name):
        return self.client.post('/resource_providers', {'name': name})

    def test_every_request_asks_for_its_microversion(self):
        # The backend's table gives each call its own version, and
        # Placement answers with the version it was asked for.
        for method, path in (('GET', '/resource_providers'),
                             ('GET', '/resource_classes/CUSTOM_NOT_THERE'),
                             ('GET', '/allocations/%s'
                              % uuidutils.generate_uuid())):
            response = self.client.request(method, path,
                                           expected=(200, 404))
            self.assertEqual(
                'placement %s' % placement_microversions.microversion_for(
                    method, path),
                response.headers['OpenStack-API-Version'])

    def test_a_call_without_a_microversion_is_not_sent(self):
        self.assertRaises(ValueError, self.client.get, '/usages')

    def test_missing_resource(self):
        self.assertIsNone(self.client.get(
            '/resource_providers/%s' % self.getUniqueString(),
            expected=(200, 404)))
        exc = self.assertRaises(
            exception.PlacementRequestFailed, self.client.get,
            '/resource_providers/6f1ebd89-6ca2-4b52-9d3e-5f4a1c3f1b20')
        self.assertIn('404', str(exc))
        self.assertEqual(503, exc.code)

    def test_conflict_carries_placement_error_code(self):
        self._provider('twin')
        exc = self.assertRaises(exception.PlacementConflict, self._provider,
                                'twin')
        self.assertEqual('placement.duplicate_name', exc.error_code)
        self.assertEqual(409, exc.code)

    def test_custom_classes_and_traits_are_created_once(self):
        for _ in range(2):
            self.client.ensure_resource_class('CUSTOM_IA_CLIENT_TEST')
            self.client.ensure_trait('CUSTOM_IA_CLIENT_TEST')
        self.assertIsNotNone(self.client.get(
            '/resource_classes/CUSTOM_IA_CLIENT_TEST'))
        # NOTE: 204, not 201: the trait exists.
        self.assertEqual(204, self.client.request(
            'PUT', '/traits/CUSTOM_IA_CLIENT_TEST',
            expected=(204,)).status_code)


class TestRetryConcurrentUpdate(base.PlacementTestCase):

    def setUp(self):
        super().setUp()
        self.client.ensure_trait('CUSTOM_IA_ONE')
        self.client.ensure_trait('CUSTOM_IA_TWO')
        self.path = '/resource_providers/%s/traits' % self.client.post(
            '/resource_providers', {'name': 'retried'})['uuid']
        self.attempts = 0

    def _bump_generation(self):
        """Another writer: the provider's generation moves on."""
        current = self.client.get(self.path)
        self.client.put(self.path, {
            'traits': ['CUSTOM_IA_TWO'] if current['traits'] == [] else [],
            'resource_provider_generation':
                current['resource_provider_generation']})

    def _set_one(self, interfering_attempts):
        self.attempts += 1
        current = self.client.get(self.path)
        if self.attempts <= interfering_attempts:
            self._bump_generation()
        self.client.put(self.path, {
            'traits': ['CUSTOM_IA_ONE'],
            'resource_provider_generation':
                current['resource_provider_generation']})

    def test_stale_generation_is_retried(self):
        placement.retry_concurrent_update(self._set_one, 1)
        self.assertEqual(2, self.attempts)
        self.assertEqual(['CUSTOM_IA_ONE'],
                         self.client.get(self.path)['traits'])

    def test_attempts_are_bounded(self):
        exc = self.assertRaises(
            exception.PlacementConflict, placement.retry_concurrent_update,
            self._set_one, placement.CONCURRENT_UPDATE_ATTEMPTS + 1)
        self.assertEqual(placement.CONCURRENT_UPDATE, exc.error_code)
        self.assertEqual(placement.CONCURRENT_UPDATE_ATTEMPTS,
                         self.attempts)

    def test_other_conflicts_are_not_retried(self):
        def duplicate():
            self.attempts += 1
            self.client.post('/resource_providers', {'name': 'retried'})

        self.assertRaises(exception.PlacementConflict,
                          placement.retry_concurrent_update, duplicate)
        self.assertEqual(1, self.attempts)


class TestUnreachablePlacement(base.PlacementTestCase):

    def test_nobody_listening(self):
        client = self.make_client(
            self.placement,
            endpoint='http://127.0.0.1:%d' % client_fixtures.free_port())
        exc = self.assertRaises(exception.PlacementUnavailable, client.get,
                                '/resource_providers')
        self.assertEqual(503, exc.code)

    def test_no_answer_ends_with_the_timeout(self):
        # A peer that accepts connections and never answers: a real
        # socket, no Placement, since no Placement can be made to hang.
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        accepted = []

        def accept():
            try:
                while True:
                    accepted.append(listener.accept()[0])
            except OSError:
                pass

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        self.addCleanup(lambda: [s.close() for s in accepted])
        client = self.make_client(
            self.placement, timeout=1,
            endpoint='http://127.0.0.1:%d' % listener.getsockname()[1])
        exc = self.assertRaises(exception.PlacementUnavailable, client.get,
                                '/resource_providers')
        self.assertIn('GET /resource_providers', str(exc))
        self.assertTrue(accepted)

    def _closing_peer(self, answers_per_connection):
        """A peer that answers each connection's first
        ``answers_per_connection`` requests (keep-alive) and then closes
        it without answering, as a server closing an idle connection
        does; returns (port, requests seen)."""
        listener = socket.socket()
        self.addCleanup(listener.close)
        listener.bind(('127.0.0.1', 0))
        listener.listen(8)
        seen = []
        body = b'{"resource_providers": []}'
        answer = (b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
                  b'Content-Length: %d\r\n\r\n%s' % (len(body), body))

        def serve(conn):
            with conn:
                stream = conn.makefile('rb')
                for index in range(answers_per_connection + 1):
                    line = stream.readline()
                    if not line:
                        return
                    while stream.readline() not in (b'\r\n', b''):
                        pass
                    seen.append(line.split()[0].decode())
                    if index == answers_per_connection:
                        return
                    conn.sendall(answer)

        def accept():
            try:
                while True:
                    threading.Thread(target=serve, daemon=True,
                                     args=(listener.accept()[0],)).start()
            except OSError:
                pass

        threading.Thread(target=accept, daemon=True).start()
        return listener.getsockname()[1], seen

    def test_idempotent_request_is_sent_again_after_a_closed_connection(
            self):
        port, seen = self._closing_peer(1)
        client = self.make_client(
            self.placement, endpoint='http://127.0.0.1:%d' % port)
        self.assertEqual([], client.get('/resource_providers')[
            'resource_providers'])
        # NOTE: the pooled connection is closed by the peer at this
        # request; the client sends it again on a new connection.
        self.assertEqual([], client.get('/resource_providers')[
            'resource_providers'])
        self.assertEqual(['GET', 'GET', 'GET'], seen)

    def test_post_is_not_sent_again(self):
        port, seen = self._closing_peer(0)
        client = self.make_client(
            self.placement, endpoint='http://127.0.0.1:%d' % port)
        self.assertRaises(exception.PlacementUnavailable, client.post,
                          '/resource_providers', {'name': 'once'})
        self.assertEqual(['POST'], seen)

    def test_unknown_auth_plugin_is_a_configuration_error(self):
        conf = self.placement.client_conf()
        conf.set_override('auth_type', 'no-such-plugin', group='placement')
        self.assertRaises(exception.ConfigInvalid,
                          placement_backend.new_client, conf)
