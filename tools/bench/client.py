"""A minimal Bare Metal API client: one keep-alive connection, JSON bodies.

Each worker thread owns one ``ApiClient`` (http.client connections are not
thread-safe). Every request carries the microversion header, a JSON content
type and, when given, an X-Auth-Token.
"""

import http.client
import json
import re
import time
import urllib.parse

API_VERSION = '1.79'
VERSION_HEADER = 'X-OpenStack-Ironic-API-Version'
# ironic_alloc's own extensions are asked for with the API-SIG header's
# "ironic-alloc" entry (doc/source/api/extensions.rst).
EXTENSION_HEADER = 'OpenStack-API-Version'
EXTENSION_TOKEN = 'ironic-alloc'
# The extension version of the matching language (extension "matching").
MATCHING_EXTENSION = '1.1'

# Exceptions meaning "the connection broke", as opposed to an HTTP error.
CONNECTION_ERRORS = (http.client.HTTPException, ConnectionError, OSError)

_UUID_RE = re.compile(r'[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-'
                      r'[0-9a-fA-F]{4}-[0-9a-fA-F]{12}')
_NUMBER_RE = re.compile(r'\b\d+(\.\d+)?\b')
KIND_PREFIX_LENGTH = 80


class ConnectionFailed(Exception):
    """A request got no HTTP response at all."""

    def __init__(self, method, path, cause):
        super().__init__('%s %s: %s: %s' % (method, path,
                                            type(cause).__name__, cause))
        self.cause = cause

    @property
    def kind(self):
        return 'connection: %s' % type(self.cause).__name__


class Response:
    """A complete HTTP response with its JSON body decoded when possible."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body
        try:
            self.json = json.loads(body) if body else None
        except ValueError:
            self.json = None

    @property
    def ok(self):
        return 200 <= self.status < 300

    @property
    def faultstring(self):
        return faultstring(self.json, self.body)


def faultstring(document, raw=b''):
    """The error message of an Ironic error body.

    Ironic wraps its ``{"faultcode", "faultstring", "debuginfo"}`` document
    in ``{"error_message": "<that document as a JSON string>"}``; both
    layers are unwrapped, and a non-JSON body is returned as text.
    """
    if isinstance(document, dict) and 'error_message' in document:
        inner = document['error_message']
        if isinstance(inner, str):
            try:
                inner = json.loads(inner)
            except ValueError:
                return inner
        document = inner
    if isinstance(document, dict):
        for key in ('faultstring', 'message', 'title'):
            if document.get(key):
                return str(document[key])
        return json.dumps(document, sort_keys=True)
    if document is not None:
        return str(document)
    if isinstance(raw, bytes):
        return raw.decode('utf-8', 'replace').strip()
    return str(raw or '').strip()


def normalize_message(message, length=KIND_PREFIX_LENGTH):
    """A message reduced to a groupable prefix.

    UUIDs and numbers are replaced by placeholders so that the same error
    about different nodes or allocations counts as one kind.
    """
    text = ' '.join((message or '').split())
    text = _UUID_RE.sub('<uuid>', text)
    text = _NUMBER_RE.sub('<n>', text)
    if len(text) > length:
        text = text[:length - 3] + '...'
    return text


def http_error_kind(status, message):
    """The error kind of an HTTP error: status plus faultstring prefix."""
    text = normalize_message(message)
    return 'HTTP %d: %s' % (status, text) if text else 'HTTP %d' % status


def state_error_kind(last_error):
    """The error kind of an allocation that ended in state error."""
    text = normalize_message(last_error)
    return 'state error: %s' % text if text else 'state error'


class ApiClient:
    """A Bare Metal API client owning one keep-alive HTTP connection.

    :param endpoint: the API root, e.g. ``http://127.0.0.1:6385`` (a path
        prefix such as ``https://host/baremetal`` is kept).
    :param token: an optional Keystone token sent as X-Auth-Token.
    :param timeout: socket timeout of one request, in seconds.
    :param api_version: the microversion sent with every request.
    :param extra_headers: more headers sent with every request.
    """

    def __init__(self, endpoint, token=None, timeout=30.0,
                 api_version=API_VERSION, extra_headers=None):
        parsed = urllib.parse.urlsplit(endpoint)
        if parsed.scheme not in ('http', 'https') or not parsed.hostname:
            raise ValueError('endpoint must be an http(s) URL, not %r'
                             % endpoint)
        self._scheme = parsed.scheme
        self._netloc = parsed.netloc
        self._prefix = parsed.path.rstrip('/')
        self._timeout = timeout
        self._headers = {VERSION_HEADER: api_version,
                         'Content-Type': 'application/json',
                         'Accept': 'application/json'}
        if token:
            self._headers['X-Auth-Token'] = token
        self._headers.update(extra_headers or {})
        self._conn = None
        self._used = False

    def _connection(self):
        if self._conn is None:
            cls = (http.client.HTTPSConnection if self._scheme == 'https'
                   else http.client.HTTPConnection)
            self._conn = cls(self._netloc, timeout=self._timeout)
            self._used = False
        return self._conn

    def close(self):
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def url(self, path, params=None):
        """The request target for ``path`` (from /v1) and query ``params``."""
        target = self._prefix + path
        if params:
            target += '?' + urllib.parse.urlencode(
                [(k, v) for k, v in params.items() if v is not None])
        return target

    def request(self, method, path, body=None, params=None):
        """Send one request and read the whole response.

        A reused keep-alive connection that the server closed while idle
        is reopened and the request sent again once, when sending failed,
        or, for methods other than POST, when the response was missing.
        A POST whose response was lost is not repeated: it may have been
        processed, and a second one would create a second allocation.

        :returns: a Response (any HTTP status).
        :raises: ConnectionFailed when no response could be read.
        """
        target = self.url(path, params)
        data = json.dumps(body).encode() if body is not None else None
        for attempt in (1, 2):
            conn = self._connection()
            retry = attempt == 1 and self._used
            try:
                conn.request(method, target, body=data,
                             headers=self._headers)
            except CONNECTION_ERRORS as exc:
                self.close()
                if retry:
                    continue
                raise ConnectionFailed(method, path, exc)
            try:
                resp = conn.getresponse()
                payload = resp.read()
            except CONNECTION_ERRORS as exc:
                self.close()
                stale = isinstance(exc, (http.client.RemoteDisconnected,
                                         ConnectionResetError))
                if retry and stale and method != 'POST':
                    continue
                raise ConnectionFailed(method, path, exc)
            self._used = True
            if resp.will_close:
                # NOTE: an HTTP/1.0 server (wsgiref) or "Connection: close":
                # the next request opens a new connection.
                self.close()
            return Response(resp.status, dict(resp.getheaders()), payload)
        raise AssertionError('unreachable')

    def timed(self, method, path, body=None, params=None):
        """``request`` plus its duration in seconds.

        :returns: (Response or ConnectionFailed, seconds).
        """
        start = time.perf_counter()
        try:
            result = self.request(method, path, body=body, params=params)
        except ConnectionFailed as exc:
            result = exc
        return result, time.perf_counter() - start


def error_kind(result):
    """The error kind of a failed request (Response or ConnectionFailed)."""
    if isinstance(result, ConnectionFailed):
        return result.kind
    return http_error_kind(result.status, result.faultstring)
