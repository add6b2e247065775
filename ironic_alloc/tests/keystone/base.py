"""Test case base of the keystone tier.

One real Keystone (fixtures.Keystone) and one ``ironic-alloc`` service with
``auth_strategy = keystone`` whose [keystone_authtoken] points at it serve
every test of a test process; they start with the first test and stop when
the process exits.  Tests share them, so each names what it creates
uniquely.  Without the Keystone virtualenv (tools/setup-keystone-venv.sh)
the tests skip, or fail under CI=true; a Keystone that does not start
always fails them.
"""

import atexit
import json
import urllib.error
import urllib.request
import uuid

import fixtures
from oslotest import base as oslo_base
from testtools import content

from ironic_alloc.tests import base as ia_base
from ironic_alloc.tests.clients import fixtures as client_fixtures
from ironic_alloc.tests.keystone import fixtures as ks_fixtures

TEST_TIMEOUT = 180
HTTP_TIMEOUT = 60
# [limits]cache_time of the service under test, in seconds.
LIMITS_CACHE_TIME = 1


class _Shared:
    keystone = None
    identities = None
    service = None
    error = None


def _cleanup():
    if _Shared.service is not None:
        _Shared.service.cleanup()
    if _Shared.keystone is not None:
        _Shared.keystone.cleanup()


def _start():
    keystone = ks_fixtures.Keystone()
    _Shared.keystone = keystone
    atexit.register(_cleanup)
    keystone.start()
    _Shared.identities = ks_fixtures.Identities(keystone)
    service = client_fixtures.Service(extra_config={
        'DEFAULT': {'auth_strategy': 'keystone'},
        'keystone_authtoken': _Shared.identities.authtoken_config(),
        # NOTE: every project member's hold reads the limits (none are
        # set but by test_limits); a short cache keeps most of those reads
        # from costing a Keystone round trip, and test_limits waits it
        # out after setting limits.
        'limits': {'driver': 'keystone',
                   'cache_time': str(LIMITS_CACHE_TIME)},
        'oslo_limit': _Shared.identities.oslo_limit_config(),
    })
    _Shared.service = service
    service.start()


class Response:
    """Status, headers and body (JSON when it parses) of one request."""

    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.text = body.decode('utf-8', 'replace')
        try:
            self.json = json.loads(self.text)
        except ValueError:
            self.json = None

    def __repr__(self):
        return '<%d %s>' % (self.status, self.text[:500])


def http_request(url, method, path, token=None, body=None, headers=None):
    """One HTTP request to ``url``; never raises for a status."""
    headers = dict(headers or {})
    headers.setdefault('X-OpenStack-Ironic-API-Version', 'latest')
    if token is not None:
        headers['X-Auth-Token'] = token
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers['Content-Type'] = 'application/json'
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as resp:
            return Response(resp.status, resp.headers, resp.read())
    except urllib.error.HTTPError as err:
        return Response(err.code, err.headers, err.read())


class KeystoneTestCase(oslo_base.BaseTestCase):
    """Talks HTTP to the service under test with real Keystone tokens."""

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.Timeout(TEST_TIMEOUT, gentle=True))
        reason = ks_fixtures.missing_reason()
        if reason:
            ia_base.skip_or_fail(self, reason)
        if _Shared.keystone is None:
            try:
                _start()
            except (ks_fixtures.KeystoneError,
                    client_fixtures.ServiceError, OSError) as exc:
                _Shared.error = str(exc)
            except Exception as exc:
                _Shared.error = '%s: %s\n%s' % (
                    type(exc).__name__, exc, _Shared.keystone.logs())
        if _Shared.error is not None:
            self.fail('Keystone or the service did not start: %s'
                      % _Shared.error)
        self.keystone = _Shared.keystone
        self.identities = _Shared.identities
        self.service = _Shared.service
        status = self.service.process.poll()
        if status is not None:
            self.fail('the service exited with status %s; its log:\n%s'
                      % (status, self.service.log_since(0, limit=20000)))
        offset = self.service.log_size()
        self.addOnException(lambda exc_info: self.addDetail(
            'service-log', content.text_content(
                self.service.log_since(offset))))
        self.addOnException(lambda exc_info: self.addDetail(
            'keystone-logs', content.text_content(self.keystone.logs())))

    def request(self, method, path, token=None, body=None, headers=None):
        """One HTTP request to the service; never raises for a status."""
        return http_request(self.service.url, method, path, token=token,
                            body=body, headers=headers)

    def assertStatus(self, status, response):
        self.assertEqual(status, response.status, response)

    @staticmethod
    def unique(prefix):
        return '%s-%s' % (prefix, uuid.uuid4().hex[:8])
