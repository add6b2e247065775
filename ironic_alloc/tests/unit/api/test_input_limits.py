"""The input limits middleware's rules, one by one, without a server."""

import io
import json

from ironic_alloc.api.middleware import input_limits
from ironic_alloc.conf import CONF
from ironic_alloc.tests import base


def _refusal(func, *args):
    """(status, message) of the RequestRefused ``func`` raises."""
    try:
        func(*args)
    except input_limits.RequestRefused as e:
        return e.status, str(e)
    raise AssertionError('%s%r was not refused' % (func.__name__, args))


def _downstream(environ, start_response):
    start_response('200 OK', [('Content-Type', 'application/json')])
    return [environ['wsgi.input'].read()]


class TestJsonDocument(base.TestCase):

    def test_depth_counts_the_body_as_level_one(self):
        input_limits.check_json_document({'a': [1]}, 2)
        self.assertEqual(
            ('400 Bad Request',
             'The JSON body is nested deeper than 2 levels.'),
            _refusal(input_limits.check_json_document, {'a': [[1]]}, 2))

    def test_scalars_do_not_add_depth(self):
        input_limits.check_json_document({'a': 'x', 'b': 1, 'c': None}, 1)

    def test_depth_far_beyond_the_recursion_limit(self):
        doc = []
        for _ in range(100000):
            doc = [doc]
        self.assertEqual('400 Bad Request',
                         _refusal(input_limits.check_json_document, doc,
                                  32)[0])

    def test_nul_in_nested_value_and_key(self):
        self.assertIn('NUL characters are not allowed in JSON strings',
                      _refusal(input_limits.check_json_document,
                               {'a': [{'b': 'x\x00'}]}, 10)[1])
        self.assertIn('NUL characters are not allowed in JSON keys',
                      _refusal(input_limits.check_json_document,
                               {'a': {'\x00': 1}}, 10)[1])

    def test_unpaired_surrogate(self):
        self.assertIn('Unpaired surrogate',
                      _refusal(input_limits.check_json_document,
                               ['\ud800'], 10)[1])
        input_limits.check_json_document(['\U0001f600'], 10)

    def test_infinite_number(self):
        self.assertIn('finite', _refusal(input_limits.check_json_document,
                                         {'a': float('inf')}, 10)[1])

    def test_parse_refuses_constants_and_bad_utf8(self):
        self.assertIn('NaN', _refusal(input_limits.parse_json_body,
                                      b'[NaN]', 10)[1])
        self.assertIn('-Infinity', _refusal(input_limits.parse_json_body,
                                            b'[-Infinity]', 10)[1])
        self.assertIn('not UTF-8', _refusal(input_limits.parse_json_body,
                                            b'"\xff"', 10)[1])
        self.assertIn('Request is not in valid JSON format',
                      _refusal(input_limits.parse_json_body, b'{', 10)[1])

    def test_parse_survives_recursion_error(self):
        body = b'[' * 200000 + b']' * 200000
        self.assertEqual(
            ('400 Bad Request',
             'The JSON body is nested deeper than 32 levels.'),
            _refusal(input_limits.parse_json_body, body, 32))


class TestReadBody(base.TestCase):

    def test_announced_length_over_the_limit_is_not_read(self):
        stream = io.BytesIO(b'x' * 10)
        environ = {'wsgi.input': stream, 'CONTENT_LENGTH': '11'}
        self.assertEqual('413 Request Entity Too Large',
                         _refusal(input_limits.read_body, environ, 10)[0])
        self.assertEqual(0, stream.tell())

    def test_chunked_body_over_the_limit(self):
        # NOTE: a server that decodes chunked bodies (mod_wsgi, uWSGI)
        # gives no CONTENT_LENGTH.
        environ = {'wsgi.input': io.BytesIO(b'x' * 11),
                   'HTTP_TRANSFER_ENCODING': 'chunked'}
        self.assertEqual('413 Request Entity Too Large',
                         _refusal(input_limits.read_body, environ, 10)[0])

    def test_chunked_body_at_the_limit(self):
        environ = {'wsgi.input': io.BytesIO(b'x' * 10),
                   'HTTP_TRANSFER_ENCODING': 'chunked'}
        self.assertEqual(b'x' * 10, input_limits.read_body(environ, 10))

    def test_no_length_and_not_chunked_is_empty(self):
        environ = {'wsgi.input': io.BytesIO(b'ignored')}
        self.assertEqual(b'', input_limits.read_body(environ, 10))

    def test_bad_content_length(self):
        for value in ('abc', '-1'):
            environ = {'wsgi.input': io.BytesIO(b''),
                       'CONTENT_LENGTH': value}
            self.assertEqual(('400 Bad Request', 'Invalid Content-Length.'),
                             _refusal(input_limits.read_body, environ, 10))


class TestPathAndQuery(base.TestCase):

    def _environ(self, path, query=''):
        return {'PATH_INFO': path.decode('latin-1'), 'QUERY_STRING': query}

    def test_utf8_path_and_query_pass(self):
        input_limits.check_path_and_query(self._environ(
            'é'.encode(), 'name=%C3%A9&owner=%25_%27'))

    def test_refusals(self):
        cases = [
            (self._environ(b'/v1/\xff'), 'The request path is not UTF-8.'),
            (self._environ(b'/v1/a\x00'),
             'NUL characters are not allowed in the request path.'),
            (self._environ(b'/', 'a=%FF'), 'The query string is not UTF-8.'),
            (self._environ(b'/', 'a=%00'),
             'NUL characters are not allowed in query parameters.'),
            (self._environ(b'/', 'a%00=1'),
             'NUL characters are not allowed in query parameters.'),
            (self._environ(b'/', 'a=1&b=2&a=3'),
             'Query parameter "a" is given more than once.'),
        ]
        for environ, message in cases:
            self.assertEqual(
                ('400 Bad Request', message),
                _refusal(input_limits.check_path_and_query, environ))


class TestMiddleware(base.TestCase):

    def setUp(self):
        super().setUp()
        self.config(max_request_body_size=1024, max_json_depth=3,
                    group='api')
        self.app = input_limits.InputLimitsMiddleware(_downstream, CONF)

    def _call(self, method, body, content_type='application/json'):
        environ = {'REQUEST_METHOD': method, 'PATH_INFO': '/v1/nodes',
                   'QUERY_STRING': '', 'CONTENT_TYPE': content_type,
                   'CONTENT_LENGTH': str(len(body)),
                   'wsgi.input': io.BytesIO(body)}
        answer = {}

        def start_response(status, headers, exc_info=None):
            answer['status'] = status
            answer['headers'] = dict(headers)

        answer['body'] = b''.join(self.app(environ, start_response))
        return answer

    def test_accepted_body_reaches_the_application_unchanged(self):
        body = b'{"a": {"b": [1]}}'
        answer = self._call('POST', body)
        self.assertEqual('200 OK', answer['status'])
        self.assertEqual(body, answer['body'])

    def test_refusal_has_ironic_error_body(self):
        answer = self._call('PATCH', b'[[[[1]]]]')
        self.assertEqual('400 Bad Request', answer['status'])
        fault = json.loads(json.loads(answer['body'])['error_message'])
        self.assertEqual({'faultcode': 'Client', 'debuginfo': None,
                          'faultstring': 'The JSON body is nested deeper '
                                         'than 3 levels.'}, fault)
        self.assertEqual(str(len(answer['body'])),
                         answer['headers']['Content-Length'])

    def test_media_types(self):
        self.assertEqual('200 OK', self._call(
            'PUT', b'{}', 'application/json; charset=UTF-8')['status'])
        self.assertEqual('200 OK', self._call(
            'PUT', b'{}', 'application/vnd.openstack.ironic.v1+json')[
                'status'])
        self.assertEqual('200 OK', self._call('PUT', b'{}', '')['status'])
        self.assertEqual('415 Unsupported Media Type', self._call(
            'PUT', b'{}', 'text/plain')['status'])
        # NOTE: an empty body has no media type to check.
        self.assertEqual('200 OK', self._call('DELETE', b'',
                                              'text/plain')['status'])

    def test_get_body_is_checked(self):
        # NOTE: found by test_fuzz: WSME decoded the body of a GET, and a
        # body that was not UTF-8 was a 500.
        self.assertEqual('400 Bad Request',
                         self._call('GET', b'.\xab\x83')['status'])
        self.assertEqual('400 Bad Request',
                         self._call('GET', b'[[[[[[')['status'])
        self.assertEqual('200 OK', self._call('GET', b'')['status'])
