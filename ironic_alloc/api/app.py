"""The WSGI application: Pecan app wrapped in its middleware.

From the outside in: the request counter (metrics), request id, input
limits, http_proxy_to_wsgi and CORS (when configured), /healthcheck
(unauthenticated), authentication ([DEFAULT]auth_strategy), GET /metrics,
version headers, Ironic error bodies, Pecan.
"""

from oslo_log import log
from oslo_middleware import cors
from oslo_middleware import http_proxy_to_wsgi
from oslo_middleware import request_id
import pecan

from ironic_alloc.api.controllers.v1 import negotiation
from ironic_alloc.api import expose
from ironic_alloc.api import healthcheck
from ironic_alloc.api import hooks
from ironic_alloc.api.middleware import auth
from ironic_alloc.api.middleware import input_limits
from ironic_alloc.api.middleware import metrics as metrics_middleware
from ironic_alloc.api.middleware import parsable_error
from ironic_alloc.common import compat
from ironic_alloc.common import metrics
from ironic_alloc.conf import CONF
from ironic_alloc import objects

LOG = log.getLogger(__name__)

# Headers a browser may send/see through CORS.
CORS_ALLOW_HEADERS = ['X-Auth-Token', 'X-OpenStack-Ironic-API-Version',
                      'OpenStack-API-Version', 'X-OpenStack-Request-Id']
CORS_EXPOSE_HEADERS = ['X-OpenStack-Ironic-API-Version',
                       'X-OpenStack-Ironic-API-Minimum-Version',
                       'X-OpenStack-Ironic-API-Maximum-Version',
                       'OpenStack-API-Version', 'X-OpenStack-Request-Id']


def get_pecan_config():
    return pecan.configuration.conf_from_dict({
        'app': {
            'root': 'ironic_alloc.api.controllers.root.RootController',
            'modules': ['ironic_alloc.api'],
            'static_root': None,
            'debug': False,
            'force_canonical': False,
            'guess_content_type_from_ext': False,
        },
        'wsme': {'debug': CONF.api.debug_tracebacks_in_api},
    })


def setup_app(conf=CONF):
    """Build the whole WSGI application for ``conf``."""
    pecan_config = get_pecan_config()
    try:
        compat.cache_pecan_signatures()
    except compat.LibraryChanged as exc:
        LOG.error('%s', exc)
    # NOTE: WSME reads its ``debug`` (tracebacks in debuginfo) from Pecan's
    # global configuration, not from the application: one API per process.
    pecan.configuration.set_config({'wsme': dict(pecan_config.wsme)})
    # NOTE: a 503 is logged by us, once per cause per interval: WSME's
    # line with a traceback for each is left out.
    expose.install_wsme_log_filter()
    app = pecan.make_app(
        pecan_config.app.root,
        debug=False,
        static_root=None,
        force_canonical=False,
        guess_content_type_from_ext=False,
        hooks=[hooks.ConfigHook(), hooks.ContextHook(), hooks.RPCHook(),
               hooks.PublicUrlHook(), hooks.NoExceptionTracebackHook(),
               hooks.ErrorHook()],
        wrap_app=parsable_error.ParsableErrorMiddleware,
    )
    app = negotiation.VersionHeadersMiddleware(app)
    # NOTE: behind authentication, which GET /metrics needs for its policy.
    app = metrics_middleware.MetricsEndpoint(app)
    app = auth.wrap(app, conf)
    app = healthcheck.Healthcheck(app, conf)
    # NOTE: CORS and the proxy headers are only in the chain when
    # configured: each parses every request with WebOb even when it has
    # nothing to do, which shows in the CPU of every request.  Their
    # options are read once either way.
    cors.set_defaults(allow_headers=CORS_ALLOW_HEADERS,
                      expose_headers=CORS_EXPOSE_HEADERS,
                      allow_methods=['GET', 'PUT', 'POST', 'DELETE',
                                     'PATCH'])
    cors_app = cors.CORS(app, conf)
    if cors_app.allowed_origins:
        app = cors_app
    proxy_app = http_proxy_to_wsgi.HTTPProxyToWSGI(app, conf)
    if conf.oslo_middleware.enable_proxy_headers_parsing:
        app = proxy_app
    # NOTE: the input limits come first so no middleware parses a hostile
    # request; only the request id is added to their refusals.
    app = input_limits.InputLimitsMiddleware(app, conf)
    app = request_id.RequestId(app)
    # NOTE: outermost, so that every answer is counted, refusals included.
    app = metrics_middleware.RequestCounter(app)
    metrics.set_allocation_counter(objects.Allocation.count_by_state)
    return app

