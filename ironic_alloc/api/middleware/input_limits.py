"""Refuse hostile requests before anything parses them for real.

One place for the limits every request obeys, whatever its route:

* a body larger than [api]max_request_body_size: 413, unread;
* a path or query string that is not UTF-8 or holds a NUL character, or
  a query parameter given twice: 400;
* a body that is not JSON (by Content-Type): 415;
* a JSON body that does not parse, is nested deeper than
  [api]max_json_depth, uses NaN/Infinity, or holds a string with a NUL or
  an unpaired surrogate (neither can be stored by PostgreSQL or encoded
  as UTF-8), or a number too large to be finite: 400.

Refusals have Ironic's error body.  Field-specific limits (string
lengths, list lengths) live with the API types and controllers.
"""

import io
import json
import math
from urllib import parse

from oslo_log import log

from ironic_alloc.api.middleware import parsable_error

LOG = log.getLogger(__name__)

_JSON_TYPES = ('application/json', 'application/vnd.openstack.ironic.v1+json')


class RequestRefused(Exception):
    """A request the middleware answers itself."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def _reject_constant(name):
    raise RequestRefused('400 Bad Request',
                         'JSON value %s is not allowed.' % name)


def _check_text(text, where):
    """:raises: RequestRefused for a NUL or an unencodable character."""
    if '\x00' in text:
        raise RequestRefused('400 Bad Request',
                             'NUL characters are not allowed in %s.' % where)
    try:
        text.encode('utf-8')
    except UnicodeEncodeError:
        raise RequestRefused('400 Bad Request',
                             'Unpaired surrogate characters are not allowed '
                             'in %s.' % where)


def check_json_document(doc, max_depth):
    """Depth and string rules of a parsed JSON body, without recursion.

    :raises: RequestRefused (400).
    """
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_text(value, 'JSON strings')
            continue
        if isinstance(value, float) and not math.isfinite(value):
            # NOTE: 1e999 parses as infinity, which JSON cannot carry back.
            raise RequestRefused('400 Bad Request',
                                 'JSON numbers must be finite.')
        if not isinstance(value, (dict, list)):
            continue
        if depth > max_depth:
            raise RequestRefused(
                '400 Bad Request',
                'The JSON body is nested deeper than %d levels.' % max_depth)
        if isinstance(value, dict):
            for key, item in value.items():
                _check_text(key, 'JSON keys')
                stack.append((item, depth + 1))
        else:
            stack.extend((item, depth + 1) for item in value)


def parse_json_body(body, max_depth):
    """The JSON document of ``body``, checked.  :raises: RequestRefused."""
    try:
        text = body.decode('utf-8')
    except UnicodeDecodeError:
        raise RequestRefused('400 Bad Request',
                             'The request body is not UTF-8.')
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        # NOTE: the C decoder gives up on deep nesting before we can
        # count it; such a body is far beyond any sane limit.
        raise RequestRefused(
            '400 Bad Request',
            'The JSON body is nested deeper than %d levels.' % max_depth)
    except ValueError as e:
        raise RequestRefused('400 Bad Request',
                             'Request is not in valid JSON format: %s' % e)
    check_json_document(doc, max_depth)
    return doc


def check_path_and_query(environ):
    """:raises: RequestRefused for a non-UTF-8 or NUL-holding URL, or a
    repeated query parameter."""
    # NOTE: WSGI gives the unquoted path as latin-1 text of the raw bytes.
    path = environ.get('PATH_INFO', '')
    try:
        path = path.encode('latin-1').decode('utf-8')
    except (UnicodeEncodeError, UnicodeDecodeError):
        raise RequestRefused('400 Bad Request',
                             'The request path is not UTF-8.')
    _check_text(path, 'the request path')
    query = environ.get('QUERY_STRING', '')
    try:
        pairs = parse.parse_qsl(query, keep_blank_values=True,
                                encoding='utf-8', errors='strict')
    except (UnicodeDecodeError, ValueError):
        raise RequestRefused('400 Bad Request',
                             'The query string is not UTF-8.')
    seen = set()
    for name, value in pairs:
        _check_text(name, 'query parameters')
        _check_text(value, 'query parameters')
        # NOTE: Pecan would hand a repeated parameter to the controller as
        # a list where it expects a string.
        if name in seen:
            raise RequestRefused('400 Bad Request',
                                 'Query parameter "%s" is given more than '
                                 'once.' % name)
        seen.add(name)


def _content_length(environ):
    try:
        length = int(environ.get('CONTENT_LENGTH') or 0)
    except ValueError:
        raise RequestRefused('400 Bad Request', 'Invalid Content-Length.')
    if length < 0:
        raise RequestRefused('400 Bad Request', 'Invalid Content-Length.')
    return length


def read_body(environ, max_size):
    """The request body, at most ``max_size`` bytes.

    :raises: RequestRefused (413) for a larger one.
    """
    too_large = RequestRefused(
        '413 Request Entity Too Large',
        'The request body is larger than %d bytes.' % max_size)
    stream = environ.get('wsgi.input')
    length = _content_length(environ)
    if length > max_size:
        raise too_large
    if stream is None:
        return b''
    if length:
        return stream.read(length)
    if environ.get('HTTP_TRANSFER_ENCODING', '').lower() != 'chunked':
        return b''
    # NOTE: a chunked body has no length: read one byte past the limit.
    chunks, size = [], 0
    while size <= max_size:
        chunk = stream.read(min(65536, max_size + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > max_size:
        raise too_large
    return b''.join(chunks)


def _is_json(content_type):
    media_type = content_type.split(';', 1)[0].strip().lower()
    return media_type in _JSON_TYPES or media_type.endswith('+json')


class InputLimitsMiddleware:
    """Apply the module's limits to every request (see module doc)."""

    def __init__(self, app, conf):
        self.app = app
        self.conf = conf

    def _check(self, environ):
        check_path_and_query(environ)
        # NOTE: every method, GET included: WSME reads a body whatever
        # the method.
        body = read_body(environ, self.conf.api.max_request_body_size)
        # NOTE: the body was consumed; the application reads this copy.
        environ['wsgi.input'] = io.BytesIO(body)
        environ['CONTENT_LENGTH'] = str(len(body))
        environ.pop('HTTP_TRANSFER_ENCODING', None)
        content_type = environ.get('CONTENT_TYPE', '')
        if not body.strip():
            # NOTE: nothing to parse, so no media type applies; WebOb would
            # read a form type's (empty) body as a form, and a multipart
            # type without a boundary makes it fail.
            if content_type and not _is_json(content_type):
                del environ['CONTENT_TYPE']
            return
        if content_type and not _is_json(content_type):
            raise RequestRefused(
                '415 Unsupported Media Type',
                'Request bodies must be JSON (Content-Type: '
                'application/json), not %s.' % content_type.split(';')[0])
        parse_json_body(body, self.conf.api.max_json_depth)

    def __call__(self, environ, start_response):
        try:
            self._check(environ)
        except RequestRefused as e:
            LOG.info('Refused %(method)s request: %(reason)s',
                     {'method': environ.get('REQUEST_METHOD'),
                      'reason': e})
            fault = json.dumps({'faultstring': str(e), 'debuginfo': None})
            body = json.dumps(
                parsable_error.make_fault_body(e.status, fault)).encode()
            start_response(e.status, [
                ('Content-Type', 'application/json'),
                ('Content-Length', str(len(body)))])
            return [body]
        return self.app(environ, start_response)
