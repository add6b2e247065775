"""Microversion negotiation: parsing, range checks, response headers."""

from ironic_alloc.api.controllers import base as api_base
from ironic_alloc.api.controllers.v1 import extensions
from ironic_alloc.api.controllers.v1 import negotiation
from ironic_alloc.api.controllers.v1 import versions
from ironic_alloc.common import exception
from ironic_alloc.tests import api_extensions
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
            {'X-OpenStack-Ironic-API-Version': '1.999'})
        self.assertEqual(406, exc.code)
        self.assertIn('[1.1, 1.115]', str(exc))

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
            'X-OpenStack-Ironic-API-Maximum-Version': '1.115',
            'X-OpenStack-Ironic-API-Version': '1.9',
            'OpenStack-API-Version': 'baremetal 1.9',
            'Vary': 'X-OpenStack-Ironic-API-Version, OpenStack-API-Version',
        }, headers)

    def test_without_version(self):
        headers = dict(negotiation.version_headers(None))
        self.assertNotIn('X-OpenStack-Ironic-API-Version', headers)
        self.assertEqual('1.115',
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


class TestApiVersionEntries(base.TestCase):

    def entries(self, value):
        return list(api_base.api_version_entries(value))

    def test_several_services(self):
        self.assertEqual([('baremetal', ['1.79']), ('ironic-alloc', ['1.0'])],
                         self.entries('baremetal 1.79, ironic-alloc 1.0'))

    def test_folded_repeated_header(self):
        # How wsgiref and most WSGI servers pass a header sent twice.
        self.assertEqual([('baremetal', ['1.79']), ('ironic-alloc', ['1.0'])],
                         self.entries('baremetal 1.79,ironic-alloc 1.0'))

    def test_tokens_lowercased_and_empty_entries_skipped(self):
        self.assertEqual([('ironic-alloc', ['1.0']), ('baremetal', [])],
                         self.entries(' , Ironic-Alloc\t1.0 ,,BAREMETAL,'))


class TestIronicVersionWithExtensionEntries(base.TestCase):
    """The ironic-alloc entry never changes the Ironic version."""

    def version(self, value, **headers):
        headers['OpenStack-API-Version'] = value
        return str(negotiation.negotiate(headers))

    def test_baremetal_first_or_last(self):
        self.assertEqual('1.79',
                         self.version('baremetal 1.79, ironic-alloc 1.0'))
        self.assertEqual('1.50',
                         self.version('ironic-alloc 1.0, baremetal 1.50'))
        self.assertEqual('1.37',
                         self.version('ironic-alloc 1.0,baremetal 1.37'))

    def test_extension_entry_alone_is_the_default_version(self):
        self.assertEqual('1.1', self.version('ironic-alloc 1.0'))
        self.assertEqual('1.1', self.version('ironic-alloc latest'))

    def test_bad_extension_entry_does_not_disturb(self):
        for entry in ('ironic-alloc abc', 'ironic-alloc 9.9',
                      'ironic-alloc', 'ironic-alloc 1.0 1.1'):
            self.assertEqual('1.40',
                             self.version('%s, baremetal 1.40' % entry))

    def test_ironic_header_still_wins(self):
        self.assertEqual('1.40', self.version(
            'baremetal 1.50, ironic-alloc 1.0',
            **{'X-OpenStack-Ironic-API-Version': '1.40'}))

    def test_bad_baremetal_entry_is_still_refused(self):
        self.assertRaises(exception.NotAcceptable, negotiation.negotiate,
                          {'OpenStack-API-Version':
                           'ironic-alloc 1.0, baremetal 1.999'})
        self.assertRaises(exception.Invalid, negotiation.negotiate,
                          {'OpenStack-API-Version':
                           'baremetal one, ironic-alloc 1.0'})


class TestNegotiateExtension(base.TestCase):

    def negotiate(self, value):
        return negotiation.negotiate_extension(
            {'OpenStack-API-Version': value})

    def test_absent(self):
        self.assertIsNone(negotiation.negotiate_extension({}))
        self.assertIsNone(negotiation.negotiate_extension(
            {'X-OpenStack-Ironic-API-Version': '1.79'}))
        for value in ('', 'baremetal 1.79', 'compute 2.1, baremetal 1.9',
                      'ironic-allocator 1.0', 'ironic 1.0',
                      'baremetal ironic-alloc'):
            self.assertIsNone(self.negotiate(value), value)

    def test_version(self):
        for value in ('ironic-alloc 1.0', 'IRONIC-ALLOC 1.0',
                      'baremetal 1.79, ironic-alloc 1.0',
                      'ironic-alloc 1.0, baremetal 1.79',
                      'baremetal 1.79,ironic-alloc 1.0',
                      'ironic-alloc 1.0, ironic-alloc 1.5'):
            self.assertEqual(api_base.Version(1, 0), self.negotiate(value),
                             value)

    def test_latest(self):
        newest = extensions.version_string(extensions.MAX_MINOR)
        for value in ('ironic-alloc latest', 'ironic-alloc LATEST'):
            self.assertEqual(newest, str(self.negotiate(value)))

    def test_latest_follows_the_table(self):
        self.useFixture(api_extensions.TestExtension())
        self.assertEqual(api_extensions.VERSION,
                         str(self.negotiate('ironic-alloc latest')))
        self.assertEqual(api_extensions.VERSION, str(self.negotiate(
            'ironic-alloc ' + api_extensions.VERSION)))

    def test_too_new(self):
        too_new = extensions.version_string(extensions.MAX_MINOR + 1)
        exc = self.assertRaises(exception.NotAcceptable, self.negotiate,
                                'baremetal 1.79, ironic-alloc ' + too_new)
        self.assertEqual(406, exc.code)
        self.assertEqual(
            'ironic_alloc API extension version %s was requested but is '
            'not supported by this service. The supported extension '
            'version range is: [1.0, %s].' % (
                too_new, extensions.version_string(extensions.MAX_MINOR)),
            str(exc))

    def test_other_major(self):
        for value in ('ironic-alloc 2.0', 'ironic-alloc 0.9',
                      'ironic-alloc 0.0'):
            exc = self.assertRaises(exception.NotAcceptable, self.negotiate,
                                    value)
            self.assertIn('[1.0, %s]' % extensions.version_string(
                extensions.MAX_MINOR), str(exc))

    def test_malformed(self):
        for text in ('abc', '', '1', '1.x', '1.0.0', 'v1.0', '1.0 1.1',
                     '1.-1', 'latest please'):
            value = ('ironic-alloc %s' % text).strip()
            exc = self.assertRaises(exception.Invalid, self.negotiate, value)
            self.assertEqual(400, exc.code, value)
            self.assertIn('Invalid value for OpenStack-API-Version header',
                          str(exc))
            self.assertIn('Expected "ironic-alloc 1.N" or "ironic-alloc '
                          'latest"', str(exc))
            self.assertIn('header: "%s".' % value, str(exc))

    def test_disabled_ignores_the_entry(self):
        self.config(enable_extensions=False, group='api')
        for value in ('ironic-alloc 1.0', 'ironic-alloc 1.1',
                      'ironic-alloc abc'):
            self.assertIsNone(self.negotiate(value), value)


class TestExtensionHeaders(base.TestCase):

    def headers(self, value=None):
        request = {} if value is None else {'OpenStack-API-Version': value}
        return negotiation.extension_headers(request)

    def test_none_without_the_entry(self):
        self.assertEqual([], self.headers())
        self.assertEqual([], self.headers('baremetal 1.79'))

    def test_range_and_version(self):
        newest = extensions.version_string(extensions.MAX_MINOR)
        self.assertEqual(
            [('X-OpenStack-Ironic-Alloc-Extension-Minimum-Version', '1.0'),
             ('X-OpenStack-Ironic-Alloc-Extension-Maximum-Version', newest),
             ('OpenStack-API-Version', 'ironic-alloc ' + newest)],
            self.headers('baremetal 1.79, ironic-alloc latest'))

    def test_range_only_when_refused(self):
        newest = extensions.version_string(extensions.MAX_MINOR)
        too_new = extensions.version_string(extensions.MAX_MINOR + 1)
        for value in ('ironic-alloc ' + too_new, 'ironic-alloc x'):
            self.assertEqual(
                [('X-OpenStack-Ironic-Alloc-Extension-Minimum-Version',
                  '1.0'),
                 ('X-OpenStack-Ironic-Alloc-Extension-Maximum-Version',
                  newest)], self.headers(value))

    def test_none_when_disabled(self):
        self.config(enable_extensions=False, group='api')
        self.assertEqual([], self.headers('ironic-alloc 1.0'))

    def _through_middleware(self, environ):
        def app(environ, start_response):
            start_response('200 OK', [('OpenStack-API-Version', 'x 9.9'),
                                      ('X-Other', 'kept')])
            return [b'']
        seen = {}

        def start_response(status, headers, exc_info=None):
            seen['headers'] = headers

        negotiation.VersionHeadersMiddleware(app)(environ, start_response)
        return seen['headers']

    def test_middleware_adds_a_second_generic_header(self):
        headers = self._through_middleware({
            'HTTP_OPENSTACK_API_VERSION': 'baremetal 1.79,ironic-alloc 1.0'})
        self.assertEqual(['baremetal 1.79', 'ironic-alloc 1.0'],
                         [v for h, v in headers
                          if h == 'OpenStack-API-Version'])
        self.assertIn(('X-Other', 'kept'), headers)
        self.assertIn('OpenStack-API-Version',
                      dict(headers)['Vary'].split(', '))

    def test_middleware_unchanged_without_the_entry(self):
        for environ in ({}, {'HTTP_OPENSTACK_API_VERSION': 'baremetal 1.5'}):
            headers = self._through_middleware(environ)
            version = negotiation.negotiate(
                {'OpenStack-API-Version': environ.get(
                    'HTTP_OPENSTACK_API_VERSION', '')})
            self.assertEqual([('X-Other', 'kept')] +
                             negotiation.version_headers(version), headers)
