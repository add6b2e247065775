"""Pecan hooks: per-request context, RPC client, URLs, error bodies."""

import http.client as http_client
import json
import threading
import traceback

from oslo_db import exception as db_exc
from oslo_log import log
import pecan
from sqlalchemy import exc as sa_exc
from webob import exc as webob_exc

from ironic_alloc.api import expose
from ironic_alloc.common import context as ia_context
from ironic_alloc.common import exception
from ironic_alloc.common import rpc
from ironic_alloc.conductor import rpcapi
from ironic_alloc.conf import CONF

LOG = log.getLogger(__name__)

_RPCAPI = None
_RPCAPI_LOCK = threading.Lock()

TRACEBACK_MARKER = 'Traceback (most recent call last):'


def get_rpcapi():
    """The one conductor RPC client of this process, built lazily."""
    global _RPCAPI
    with _RPCAPI_LOCK:
        if _RPCAPI is None:
            _RPCAPI = rpcapi.ConductorAPI()
            # NOTE: in the background, so that the first call finds it.
            rpc.prepare_reply_queue()
        return _RPCAPI


def reset_rpcapi():
    """Forget the RPC client (tests that change the transport)."""
    global _RPCAPI
    with _RPCAPI_LOCK:
        _RPCAPI = None


class ConfigHook(pecan.hooks.PecanHook):
    """Attach the configuration object to the request."""

    def before(self, state):
        state.request.cfg = CONF


class ContextHook(pecan.hooks.PecanHook):
    """Build the RequestContext from the request headers.

    The request id comes from oslo.middleware's RequestId middleware,
    which also puts X-OpenStack-Request-Id on every response.
    """

    def before(self, state):
        state.request.context = ia_context.from_request_environ(
            state.request.environ)


class RPCHook(pecan.hooks.PecanHook):
    """Attach the process-wide conductor RPC client to the request."""

    def before(self, state):
        state.request.rpcapi = get_rpcapi()


class PublicUrlHook(pecan.hooks.PecanHook):
    """The URL links are built on: [api]public_endpoint or the request's
    (proxy headers applied by http_proxy_to_wsgi when enabled)."""

    def before(self, state):
        state.request.public_url = (CONF.api.public_endpoint
                                    or state.request.application_url)


def strip_traceback(text):
    """``text`` without a remote traceback appended by oslo.messaging."""
    if text and TRACEBACK_MARKER in text:
        return text.split(TRACEBACK_MARKER, 1)[0].rstrip()
    return text


class NoExceptionTracebackHook(pecan.hooks.PecanHook):
    """Cut remote tracebacks out of error messages.

    oslo.messaging appends the conductor's traceback to the message of a
    re-raised exception; clients must not see it unless
    [api]debug_tracebacks_in_api.
    """

    def after(self, state):
        if state.response.status_int < 400 or not state.response.body:
            return
        if CONF.api.debug_tracebacks_in_api:
            return
        try:
            body = json.loads(state.response.body)
        except ValueError:
            return
        if not isinstance(body, dict):
            return
        stripped = strip_traceback(body.get('faultstring'))
        if stripped != body.get('faultstring'):
            body['faultstring'] = stripped
            state.response.body = json.dumps(body).encode()


class ErrorHook(pecan.hooks.PecanHook):
    """Errors raised outside WSME methods (routing, plain controllers).

    Our exceptions get their ``code`` and message; anything unexpected is
    logged and becomes a 500 without details.  WebOb HTTP errors (404 of
    an unknown path, 405) are left to Pecan; ParsableErrorMiddleware
    gives all of them the same body.
    """

    def on_error(self, state, e):
        if isinstance(e, webob_exc.HTTPException):
            return None
        debug = CONF.api.debug_tracebacks_in_api
        if isinstance(e, (db_exc.DBConnectionError, sa_exc.OperationalError)):
            # NOTE: the database is down: 503, as in WSME methods.
            under, e = e, exception.TemporaryFailure(expose.DB_UNAVAILABLE)
            e.__cause__ = under
        code = getattr(e, 'code', None)
        if isinstance(e, exception.IronicAllocException) or (
                isinstance(code, int) and 400 <= code < 600):
            message = str(e) if debug else strip_traceback(str(e))
            if code == http_client.SERVICE_UNAVAILABLE:
                expose.log_unavailable(e, state.request.method,
                                       state.request.path)
        else:
            LOG.error('Unexpected error handling %(method)s %(path)s',
                      {'method': state.request.method,
                       'path': state.request.path}, exc_info=e)
            code = http_client.INTERNAL_SERVER_ERROR
            message = 'An internal error occurred; see the API service log.'
        body = {'faultcode': 'Client' if code < 500 else 'Server',
                'faultstring': message,
                'debuginfo': (''.join(traceback.format_exception(e))
                              if debug else None)}
        return pecan.Response(json.dumps(body).encode(), status=code,
                              content_type='application/json')
