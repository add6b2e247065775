"""CORS and the proxy headers: in the chain only when configured, and
then doing their work (the root document through the whole application)."""

import webtest

from ironic_alloc.api import app as api_app
from ironic_alloc.api import hooks
from ironic_alloc.tests import base

ORIGIN = 'https://console.example.com'


class OptionalMiddlewareTestCase(base.DbTestCase):

    def setUp(self):
        super().setUp()
        self.config(transport_url='fake://', auth_strategy='noauth')
        hooks.reset_rpcapi()
        self.addCleanup(hooks.reset_rpcapi)
        # NOTE: the middlewares register their option groups when built.
        api_app.setup_app()

    def _root(self, **headers):
        app = webtest.TestApp(api_app.setup_app())
        return app.get('/', headers=dict(headers, Host='api.example.com'))

    def _version_href(self, resp):
        return resp.json['default_version']['links'][0]['href']

    def test_proxy_headers_ignored_by_default(self):
        resp = self._root(**{'X-Forwarded-Proto': 'https'})
        self.assertEqual('http://api.example.com/v1/',
                         self._version_href(resp))

    def test_proxy_headers_parsed_when_enabled(self):
        self.config(enable_proxy_headers_parsing=True,
                    group='oslo_middleware')
        resp = self._root(**{'X-Forwarded-Proto': 'https'})
        self.assertEqual('https://api.example.com/v1/',
                         self._version_href(resp))

    def test_no_cors_headers_without_allowed_origin(self):
        resp = self._root(Origin=ORIGIN)
        self.assertNotIn('Access-Control-Allow-Origin', resp.headers)

    def test_cors_headers_for_an_allowed_origin(self):
        self.config(allowed_origin=[ORIGIN], group='cors')
        resp = self._root(Origin=ORIGIN)
        self.assertEqual(ORIGIN, resp.headers['Access-Control-Allow-Origin'])
        self.assertIn('X-OpenStack-Ironic-API-Version',
                      resp.headers['Access-Control-Expose-Headers'])
        resp = self._root(Origin='https://elsewhere.example.com')
        self.assertNotIn('Access-Control-Allow-Origin', resp.headers)
