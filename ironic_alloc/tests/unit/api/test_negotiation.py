"""Microversion negotiation: parsing, range checks, response headers."""

from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.api.controllers.v1 import negotiation
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import exception
from ironic_alloc.tests import base


class TestNegotiate(base.TestCase):

    def test_no_header_is_the_minimum(self):
        self.assertEqual(api_base.Version(1, 1), negotiation.negotiate({}))

    def test_ironic_header(self):
        version = negotiation.negotiate(
            {'X-OpenStack-Ironic-API-Version': '1.52'})
        self.assertEqual((1, 52), (version.major, version.minor))

    def test_latest(self):
        version = negotiation.negotiate(
            {'X-OpenStack-Ironic-API-Version': 'latest'})
        self.assertEqual(versions.MAX_VERSION_STRING, str(version))

    def test_latest_in_capitals(self):
        version = negotiation.negotiate(
            {'X-OpenStack-Ironic-API-Version': 'LATEST'})
        self.assertEqual(versions.MAX_VERSION_STRING, str(version))

    def test_generic_header(self):
        version = negotiation.negotiate(
            {'OpenStack-API-Version': 'compute 2.1, baremetal 1.37'})
        self.assertEqual('1.37', str(version))

    def test_generic_header_latest(self):
        version = negotiation.negotiate(
            {'OpenStack-API-Version': 'baremetal latest'})
        self.assertEqual(versions.MAX_VERSION_STRING, str(version))

    def test_generic_header_of_another_service_is_ignored(self):
        version = negotiation.negotiate(
            {'OpenStack-API-Version': 'compute 2.90'})
        self.assertEqual('1.1', str(version))

    def test_ironic_header_wins(self):
        version = negotiation.negotiate(
            {'OpenStack-API-Version': 'baremetal 1.50',
             'X-OpenStack-Ironic-API-Version': '1.40'})
        self.assertEqual('1.40', str(version))

    def test_too_new(self):
        exc = self.assertRaises(
            exception.NotAcceptable, negotiation.negotiate,
            {'X-OpenStack-Ironic-API-Version': '1.80'})
        self.assertEqual(406, exc.code)
        self.assertIn('[1.1, 1.79]', str(exc))

    def test_too_old(self):
        self.assertRaises(exception.NotAcceptable, negotiation.negotiate,
                          {'X-OpenStack-Ironic-API-Version': '1.0'})

    def test_other_major(self):
        exc = self.assertRaises(
            exception.NotAcceptable, negotiation.negotiate,
            {'X-OpenStack-Ironic-API-Version': '2.1'})
        self.assertIn('Mutually exclusive versions requested', str(exc))

    def test_malformed(self):
        for text in ('1', '1.x', '1.2.3', 'v1.2', '', ' ', '1.-1', 'one'):
            exc = self.assertRaises(
                exception.Invalid, negotiation.negotiate,
                {'X-OpenStack-Ironic-API-Version': text})
            self.assertEqual(400, exc.code, text)


class TestVersionHeaders(base.TestCase):

    def test_with_version(self):
        headers = dict(negotiation.version_headers(api_base.Version(1, 9)))
        self.assertEqual({
            'X-OpenStack-Ironic-API-Minimum-Version': '1.1',
            'X-OpenStack-Ironic-API-Maximum-Version': '1.79',
            'X-OpenStack-Ironic-API-Version': '1.9',
            'OpenStack-API-Version': 'baremetal 1.9',
            'Vary': 'X-OpenStack-Ironic-API-Version, OpenStack-API-Version',
        }, headers)

    def test_without_version(self):
        headers = dict(negotiation.version_headers(None))
        self.assertNotIn('X-OpenStack-Ironic-API-Version', headers)
        self.assertEqual('1.79',
                         headers['X-OpenStack-Ironic-API-Maximum-Version'])

    def test_middleware_replaces_headers_of_the_app(self):
        def app(environ, start_response):
            start_response('200 OK', [('X-OpenStack-Ironic-API-Version',
                                       '9.9'), ('X-Other', 'kept')])
            return [b'']
        seen = {}

        def start_response(status, headers, exc_info=None):
            seen['headers'] = headers

        middleware = negotiation.VersionHeadersMiddleware(app)
        middleware({'HTTP_X_OPENSTACK_IRONIC_API_VERSION': '1.5'},
                   start_response)
        headers = seen['headers']
        self.assertEqual(['1.5'], [v for h, v in headers
                                   if h == 'X-OpenStack-Ironic-API-Version'])
        self.assertIn(('X-Other', 'kept'), headers)


class TestVersion(base.TestCase):

    def test_ordering(self):
        self.assertLess(api_base.Version(1, 9), api_base.Version(1, 10))
        self.assertGreater(api_base.Version(1, 10), api_base.Version(1, 9))
        self.assertEqual(api_base.Version(1, 10), api_base.Version(1, 10))
        self.assertEqual('1.10', str(api_base.Version(1, 10)))
