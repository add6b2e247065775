"""The API's Prometheus metrics: requests counted, GET /metrics served.

``RequestCounter`` wraps the whole application and counts every answer
by method, route class and status.  The route class is the resource a
path names (``nodes``, ``allocations``...), or ``other``: a label never
holds a path, an identifier or anything else a client chooses, so the
number of series stays bounded.

``MetricsEndpoint`` answers ``GET /metrics`` behind authentication, when
the policy rule ``baremetal:metrics:get`` allows the caller: the text
format of Prometheus, with every API worker's values.
"""

import json

from oslo_log import log

from ironic_alloc.api.middleware import parsable_error
from ironic_alloc.common import context as ia_context
from ironic_alloc.common import metrics
from ironic_alloc.common import policy

LOG = log.getLogger(__name__)

PATH = '/metrics'
POLICY_RULE = 'baremetal:metrics:get'

# The resources of /v1/<resource>, as route classes; anything else under
# /v1 is "v1/other".
V1_RESOURCES = frozenset(['nodes', 'allocations', 'reservations',
                          'conductors', 'drivers', 'ports', 'portgroups',
                          'volume', 'chassis'])
METHODS = frozenset(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE',
                     'OPTIONS'])


def route_class(path):
    """The bounded name of the resource ``path`` addresses."""
    parts = [p for p in (path or '').split('/') if p]
    if not parts:
        return 'root'
    if parts[0] == 'v1':
        if len(parts) == 1:
            return 'v1'
        if parts[1] in V1_RESOURCES:
            return 'v1/' + parts[1]
        return 'v1/other'
    if len(parts) == 1 and parts[0] in ('healthcheck', 'metrics'):
        return parts[0]
    return 'other'


class RequestCounter:
    """Count each answer (api_requests) once its status is known."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        method = environ.get('REQUEST_METHOD')
        if method not in METHODS:
            method = 'other'
        route = route_class(environ.get('PATH_INFO'))

        def counting_start_response(status, headers, exc_info=None):
            metrics.api_request(method, route, status.split(' ', 1)[0])
            return start_response(status, headers, exc_info)

        return self.app(environ, counting_start_response)


def _error(start_response, status, text):
    fault = json.dumps({'faultstring': text, 'debuginfo': None})
    body = json.dumps(parsable_error.make_fault_body(status, fault)).encode()
    start_response(status, [('Content-Type', 'application/json'),
                            ('Content-Length', str(len(body)))])
    return [body]


class MetricsEndpoint:
    """GET /metrics; every other request goes on untouched."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO') != PATH:
            return self.app(environ, start_response)
        if environ.get('REQUEST_METHOD') not in ('GET', 'HEAD'):
            return _error(start_response, '405 Method Not Allowed',
                          'Only GET is allowed on /metrics.')
        context = ia_context.from_request_environ(environ)
        if not policy.check(POLICY_RULE, {}, context):
            LOG.info('Rejected %(rule)s for user %(user)s of project '
                     '%(project)s', {'rule': POLICY_RULE,
                                     'user': context.user_id,
                                     'project': context.project_id})
            return _error(start_response, '403 Forbidden',
                          'Access was denied to the following resource: '
                          '%s' % POLICY_RULE)
        try:
            body = metrics.exposition()
        except Exception:
            # NOTE: the scrape-time values catch their own errors; this is
            # what remains (a broken registry, a full disk under the
            # multiprocess directory).  A scrape failing must not look
            # like the API failing: 503, no exception text.
            LOG.exception('Metrics: building the exposition failed')
            return _error(start_response, '503 Service Unavailable',
                          'The metrics could not be collected.')
        start_response('200 OK', [('Content-Type', metrics.CONTENT_TYPE),
                                  ('Content-Length', str(len(body)))])
        if environ.get('REQUEST_METHOD') == 'HEAD':
            return [b'']
        return [body]
