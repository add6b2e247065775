"""A small client of the OpenStack Placement API.

keystoneauth1 carries the requests (the [placement] options: auth plugin,
session timeouts and TLS, adapter endpoint and retries), every request
asks for the microversion its caller's table gives it (the Placement
backend's is ``conductor/backends/placement_microversions.py``), and
Placement's answers become exceptions of ``ironic_alloc.common.exception``:

* no answer (refused connection, timeout, no endpoint, auth failure):
  ``PlacementUnavailable``;
* 409: ``PlacementConflict`` with Placement's error code;
* any other status the caller did not expect: ``PlacementRequestFailed``.

``retry_concurrent_update`` runs a read-modify-write step again when
Placement refuses it because another writer changed the provider.
"""

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from oslo_log import log

from ironic_alloc.common import exception
from ironic_alloc.conf import CONF
from ironic_alloc.conf import placement as placement_conf

LOG = log.getLogger(__name__)

# NOTE: a pooled keep-alive connection that the server has just closed
# (gunicorn closes idle ones after 2 seconds) fails the next request before
# Placement reads it.  An idempotent request is sent once more, on a new
# connection; a timeout is not a reason to send it again.
RESENT_ON_CONNECT_FAILURE = frozenset({'GET', 'PUT', 'DELETE'})

CONCURRENT_UPDATE = 'placement.concurrent_update'
# How many times a step refused with CONCURRENT_UPDATE is tried in all.
# Each refusal means another writer changed the provider in between, so
# the bound is only reached under a stream of writers to one provider.
CONCURRENT_UPDATE_ATTEMPTS = 10


def _error_of(response):
    """(code, detail) of Placement's error document, when it is one."""
    try:
        error = response.json()['errors'][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, response.text[:500]
    # NOTE: Placement's details carry the HTML-ish layout of webob.
    detail = error.get('detail') or error.get('title') or ''
    return error.get('code'), ' '.join(str(detail).split())


class PlacementClient:
    """Placement's HTTP API, as used by the resource provider sync.

    :param microversion_for: ``f(method, path)`` giving the microversion
        of each request; it raises ValueError for a call it does not know.
    :param conf: the oslo.config object holding the [placement] group.
    """

    def __init__(self, microversion_for, conf=CONF):
        group = placement_conf.GROUP
        try:
            auth = ks_loading.load_auth_from_conf_options(conf, group)
            session = ks_loading.load_session_from_conf_options(
                conf, group, auth=auth)
            self._adapter = ks_loading.load_adapter_from_conf_options(
                conf, group, session=session, auth=auth,
                raise_exc=False)
        except ks_exceptions.ClientException as exc:
            # NOTE: e.g. auth_type names no installed plugin.
            raise exception.ConfigInvalid(
                error_msg='[placement]: %s' % exc)
        self._microversion_for = microversion_for
        # Custom resource classes and traits known to exist (made or seen
        # by this client), so each is created once, not once per provider.
        self._known_names = set()

    def request(self, method, path, body=None, expected=(200,)):
        """Send one request; return the response when its status is in
        ``expected``.

        :raises: PlacementUnavailable, PlacementConflict,
            PlacementRequestFailed.
        """
        kwargs = {'microversion': self._microversion_for(method, path)}
        if body is not None:
            kwargs['json'] = body
        resend = method in RESENT_ON_CONNECT_FAILURE
        while True:
            try:
                response = self._adapter.request(path, method, **kwargs)
                break
            except ks_exceptions.ConnectFailure as exc:
                if resend:
                    resend = False
                    LOG.debug('Placement request %(method)s %(path)s '
                              'sent again: %(exc)s',
                              {'method': method, 'path': path, 'exc': exc})
                    continue
                raise self._unavailable(method, path, exc)
            except ks_exceptions.ClientException as exc:
                raise self._unavailable(method, path, exc)
        if response.status_code in expected:
            return response
        code, detail = _error_of(response)
        if response.status_code == 409:
            raise exception.PlacementConflict(
                method=method, path=path, error_code=code, detail=detail)
        raise exception.PlacementRequestFailed(
            method=method, path=path, status=response.status_code,
            detail=detail)

    @staticmethod
    def _unavailable(method, path, exc):
        LOG.warning('Placement request %(method)s %(path)s failed: '
                    '%(exc)s', {'method': method, 'path': path, 'exc': exc})
        return exception.PlacementUnavailable(
            reason='%s %s: %s' % (method, path, exc))

    def get(self, path, expected=(200,)):
        """The decoded body of a GET, or None for an expected 404."""
        response = self.request('GET', path, expected=expected)
        if response.status_code == 404:
            return None
        return response.json()

    def put(self, path, body=None, expected=(200,)):
        response = self.request('PUT', path, body=body, expected=expected)
        return response.json() if response.content else None

    def post(self, path, body, expected=(200,)):
        response = self.request('POST', path, body=body, expected=expected)
        return response.json() if response.content else None

    def delete(self, path, expected=(204,)):
        return self.request('DELETE', path, expected=expected).status_code

    # Resource classes and traits

    def ensure_resource_class(self, name):
        """Create custom resource class ``name`` unless it exists."""
        self._ensure('/resource_classes/%s' % name)

    def ensure_trait(self, name):
        """Create custom trait ``name`` unless it exists."""
        self._ensure('/traits/%s' % name)

    def _ensure(self, path):
        if path in self._known_names:
            return
        self.put(path, expected=(201, 204))
        self._known_names.add(path)

    def forget_custom_names(self):
        """Forget which custom classes and traits exist (one may have been
        deleted in Placement since): the next use creates them again."""
        self._known_names.clear()


def _is_write_race(exc):
    if isinstance(exc, exception.PlacementConflict):
        return exc.error_code == CONCURRENT_UPDATE
    # NOTE: seen with openstack-placement 15.0.0 on PostgreSQL with
    # several workers: two PUTs of one provider's traits or aggregates
    # with the same generation can both insert the same row, and the
    # loser answers 500 ("current transaction is aborted") instead of a
    # 409.  Nothing was written then, so the step can run again.
    return isinstance(exc, exception.PlacementRequestFailed) and (
        exc.status is not None and exc.status >= 500)


def retry_concurrent_update(step, *args, **kwargs):
    """Run ``step(*args, **kwargs)``, again while Placement refuses it
    because another writer changed the provider (a 409
    ``placement.concurrent_update``, or the 500 of the same race).

    ``step`` must read the provider's generation itself on every call, so
    a write that did happen is seen and not repeated.

    :raises: the last refusal once the attempts are used up.
    """
    for attempt in range(1, CONCURRENT_UPDATE_ATTEMPTS + 1):
        try:
            return step(*args, **kwargs)
        except (exception.PlacementConflict,
                exception.PlacementRequestFailed) as exc:
            if (not _is_write_race(exc)
                    or attempt == CONCURRENT_UPDATE_ATTEMPTS):
                raise
            LOG.debug('Placement write race (attempt %(n)d): %(exc)s',
                      {'n': attempt, 'exc': exc})
