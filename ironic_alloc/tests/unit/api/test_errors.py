"""Error responses of the whole WSGI application (webtest, no database:
the object layer is replaced where a request reaches it)."""

import json
from unittest import mock

import oslo_messaging as messaging
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.common import exception
from ironic_alloc import objects
from ironic_alloc.tests import base

NODE = '6e4b2d1f-4b7d-4e3a-9f0a-3c1c1c1c1c1c'
SECRET = 'mysql+pymysql://admin:hunter2@db.internal/ironic'


class TestErrors(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(auth_strategy='noauth')
        patcher = mock.patch('ironic_alloc.api.hooks.get_rpcapi',
                             autospec=True)
        patcher.start()
        self.addCleanup(patcher.stop)

    def _get(self, path, error, debug=False):
        """GET ``path`` while the node lookup raises ``error``."""
        self.config(debug_tracebacks_in_api=debug, group='api')
        app = webtest.TestApp(api_app.setup_app())
        with mock.patch.object(objects.Node, 'get_by_uuid', autospec=True,
                               side_effect=error):
            return app.get(path, expect_errors=True,
                           headers={'X-OpenStack-Ironic-API-Version': '1.50'})

    def _fault(self, resp):
        self.assertEqual('application/json', resp.content_type)
        self.assertEqual(['error_message'], list(resp.json))
        self.assertIsInstance(resp.json['error_message'], str)
        fault = json.loads(resp.json['error_message'])
        self.assertEqual({'faultcode', 'faultstring', 'debuginfo'},
                         set(fault))
        return fault

    def _check_headers(self, resp):
        self.assertEqual('1.50', resp.headers['X-OpenStack-Ironic-API-Version'])
        self.assertEqual('1.1',
                         resp.headers['X-OpenStack-Ironic-API-Minimum-Version'])
        self.assertTrue(resp.headers['X-OpenStack-Request-Id'].startswith(
            'req-'))

    def test_unexpected_error_in_a_wsme_controller(self):
        resp = self._get('/v1/nodes/%s' % NODE, RuntimeError(SECRET))
        self.assertEqual(500, resp.status_int)
        fault = self._fault(resp)
        self.assertEqual('Server', fault['faultcode'])
        self.assertEqual('An internal error occurred; see the API service '
                         'log.', fault['faultstring'])
        self.assertIsNone(fault['debuginfo'])
        self.assertNotIn('hunter2', resp.text)
        self.assertNotIn('Traceback', resp.text)
        self._check_headers(resp)

    def test_unexpected_error_in_a_plain_controller(self):
        # NOTE: /ports is a pecan (not WSME) controller: ErrorHook.
        resp = self._get('/v1/nodes/%s/ports' % NODE, RuntimeError(SECRET))
        self.assertEqual(500, resp.status_int)
        fault = self._fault(resp)
        self.assertEqual('Server', fault['faultcode'])
        self.assertNotIn('hunter2', resp.text)
        self.assertNotIn('Traceback', resp.text)
        self._check_headers(resp)

    def test_unexpected_remote_error(self):
        # NOTE: an exception of the conductor outside our module arrives
        # as a RemoteError carrying the remote traceback.
        error = messaging.RemoteError('OperationalError', SECRET,
                                      'Traceback (most recent call last)')
        resp = self._get('/v1/nodes/%s' % NODE, error)
        self.assertEqual(500, resp.status_int)
        self.assertNotIn('hunter2', resp.text)

    def test_debug_tracebacks_in_api(self):
        resp = self._get('/v1/nodes/%s' % NODE, RuntimeError('boom'),
                         debug=True)
        self.assertEqual(500, resp.status_int)
        fault = self._fault(resp)
        self.assertIn('Traceback (most recent call last)',
                      fault['debuginfo'])
        self.assertIn('RuntimeError: boom', fault['debuginfo'])

    def test_expected_error_keeps_its_status_and_message(self):
        resp = self._get('/v1/nodes/%s' % NODE,
                         exception.NodeNotFound(node=NODE))
        self.assertEqual(404, resp.status_int)
        fault = self._fault(resp)
        self.assertEqual('Client', fault['faultcode'])
        self.assertEqual('Node %s could not be found.' % NODE,
                         fault['faultstring'])
        self.assertIsNone(fault['debuginfo'])
        self._check_headers(resp)

    def test_temporary_failure_is_a_server_fault(self):
        resp = self._get('/v1/nodes/%s' % NODE,
                         exception.NoValidHost(reason='none alive'))
        self.assertEqual(503, resp.status_int)
        self.assertEqual('Server', self._fault(resp)['faultcode'])

    def test_remote_traceback_is_stripped(self):
        error = exception.NodeLocked(
            'Node %s is locked by host c1, please retry after the current '
            'operation is completed.\nTraceback (most recent call last):\n'
            '  File "/srv/ironic_alloc/conductor/task.py"' % NODE)
        for path in ('/v1/nodes/%s' % NODE, '/v1/nodes/%s/ports' % NODE):
            resp = self._get(path, error)
            self.assertEqual(409, resp.status_int, path)
            fault = self._fault(resp)
            self.assertTrue(fault['faultstring'].endswith('completed.'),
                            fault['faultstring'])
            self.assertNotIn('task.py', resp.text)

    def test_remote_traceback_is_kept_when_debugging(self):
        error = exception.NodeLocked(
            'locked\nTraceback (most recent call last):\n  File "task.py"')
        resp = self._get('/v1/nodes/%s' % NODE, error, debug=True)
        self.assertIn('task.py', self._fault(resp)['faultstring'])

    def test_debug_tracebacks_in_a_plain_controller(self):
        resp = self._get('/v1/nodes/%s/ports' % NODE, RuntimeError('boom'),
                         debug=True)
        self.assertEqual(500, resp.status_int)
        fault = self._fault(resp)
        self.assertIn('RuntimeError: boom', fault['debuginfo'])
        self.assertNotIn('boom', fault['faultstring'])

    def test_debug_off_again(self):
        self._get('/v1/nodes/%s' % NODE, RuntimeError('boom'), debug=True)
        resp = self._get('/v1/nodes/%s' % NODE, RuntimeError('boom'))
        self.assertIsNone(self._fault(resp)['debuginfo'])
