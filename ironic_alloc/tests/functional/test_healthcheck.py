"""GET /healthcheck: open without credentials, 503 while the database is
unreachable; other requests meanwhile: a clean 503."""

import json
import os

import bcrypt
import fixtures
from oslo_db.sqlalchemy import enginefacade
import sqlalchemy as sa
import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.tests import base


class _AppTestCase(base.DbTestCase):
    """The whole WSGI application on the test database (webtest)."""

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)

    def _app(self):
        return webtest.TestApp(api_app.setup_app())

    def _break_database(self):
        """Point the whole database layer at a database that cannot be
        opened (an SQLite file in a directory that does not exist).

        NOTE: this is a real connection failure, not a mock: every query
        goes through oslo.db's global transaction factory, and
        patch_engine() (the hook oslo.db's own test fixtures use) swaps
        the engine behind it.
        """
        missing = os.path.join(self.useFixture(fixtures.TempDir()).path,
                               'gone', 'db.sqlite')
        engine = sa.create_engine('sqlite:///%s' % missing)
        self.addCleanup(engine.dispose)
        reset = enginefacade._context_manager.patch_engine(engine)
        self.addCleanup(reset)
        return reset


class TestHealthcheck(_AppTestCase):

    def test_healthy(self):
        resp = self._app().get('/healthcheck',
                               headers={'Accept': 'text/plain'})
        self.assertEqual(200, resp.status_int)
        self.assertEqual('OK', resp.text.strip())
        self.assertTrue(resp.headers['X-OpenStack-Request-Id'].startswith(
            'req-'))

    def test_healthy_json(self):
        resp = self._app().get('/healthcheck',
                               headers={'Accept': 'application/json'})
        self.assertEqual(200, resp.status_int)
        self.assertEqual(['OK'], resp.json['reasons'])

    def test_database_unreachable(self):
        app = self._app()
        self._break_database()
        resp = app.get('/healthcheck', headers={'Accept': 'text/plain'},
                       expect_errors=True)
        self.assertEqual(503, resp.status_int)
        self.assertEqual('database unreachable', resp.text.strip())

    def test_recovers_with_the_database(self):
        app = self._app()
        reset = self._break_database()
        self.assertEqual(503, app.get('/healthcheck',
                                      expect_errors=True).status_int)
        reset()
        self.assertEqual(200, app.get('/healthcheck').status_int)

    def test_open_without_credentials(self):
        users = self.useFixture(fixtures.TempDir()).join('htpasswd')
        with open(users, 'w') as f:
            f.write('admin:%s\n' % bcrypt.hashpw(
                b'secret', bcrypt.gensalt(4)).decode())
        self.config(auth_strategy='http_basic',
                    http_basic_auth_user_file=users)
        app = self._app()
        self.assertEqual(401, app.get('/v1/nodes',
                                      expect_errors=True).status_int)
        self.assertEqual(200, app.get('/healthcheck').status_int)
        # NOTE: the version documents stay public too.
        self.assertEqual(200, app.get('/v1').status_int)
        self.assertEqual(200, app.get(
            '/v1/nodes', headers={'Authorization': 'Basic YWRtaW46c2VjcmV0'}
        ).status_int)


class TestDatabaseOutage(_AppTestCase):
    """API requests while the database is unreachable: a 503 in Ironic's
    format (clients may retry), without the database error in it."""

    def test_list_nodes(self):
        app = self._app()
        self._break_database()
        resp = app.get('/v1/nodes', expect_errors=True)
        self.assertEqual(503, resp.status_int)
        fault = json.loads(resp.json['error_message'])
        self.assertEqual({'faultcode': 'Server', 'faultstring':
                          'The database is unavailable. The request may be '
                          'retried.', 'debuginfo': None}, fault)
        self.assertNotIn('sqlite', resp.text)
        self.assertTrue(resp.headers['X-OpenStack-Request-Id'])

    def test_root_needs_no_database(self):
        app = self._app()
        self._break_database()
        self.assertEqual(200, app.get('/').status_int)
