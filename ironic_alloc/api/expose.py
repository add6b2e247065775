"""The one decorator exposing WSME-typed controller methods, as JSON."""

import functools
import http.client as http_client
import inspect
import logging
import threading

from oslo_db import exception as db_exc
from oslo_log import log
import pecan
from sqlalchemy import exc as sa_exc
import wsme
from wsmeext import pecan as wsme_pecan

from ironic_alloc.common import exception
from ironic_alloc.common import unavailable_log

LOG = log.getLogger(__name__)

# NOTE: one per process, so that a cause is counted across requests.
_UNAVAILABLE = unavailable_log.UnavailableLog(LOG)

# Per thread: the error WSME is about to format was logged here already.
_ANSWER_LOGGED = threading.local()

DB_UNAVAILABLE = ('The database is unavailable. The request may be '
                  'retried.')

INTERNAL_ERROR = 'An internal error occurred; see the API service log.'

# Set in the WSGI environ once WSME calls the exposed method: a 5xx WSME
# answered without it comes from its own conversion of the arguments.
_METHOD_CALLED = 'ironic_alloc.api.method_called'


class _HideUnexpectedErrors:
    """A controller method that turns an exception without an HTTP status
    into a bare 500.

    WSME answers any exception with its ``str()``; for errors we did not
    anticipate (a driver message, an SQL fragment) that may leak internals,
    so they are logged with their traceback and the client gets a generic
    message.  Our exceptions and WSME's client errors carry ``code`` and
    pass through unchanged.
    """

    def __init__(self, method):
        functools.update_wrapper(self, method)
        self._method = method
        self._signature = inspect.signature(method)

    @property
    def __signature__(self):
        # NOTE: WSME reads the arguments of the method it exposes, and gives
        # them to Pecan, from its signature (Python's __signature__
        # protocol): this is the method's own.  A property, not an
        # attribute, so that it is not copied (functools.wraps) onto the
        # function WSME wraps around this one, which Pecan's RestController
        # routes by, exactly as for a plain wsexpose.
        return self._signature

    def __call__(self, controller, *args, **kwargs):
        f = self._method
        pecan.request.environ[_METHOD_CALLED] = True
        _ANSWER_LOGGED.error = None
        try:
            return f(controller, *args, **kwargs)
        except (exception.IronicAllocException,
                wsme.exc.ClientSideError) as exc:
            if getattr(exc, 'code', None) != http_client.SERVICE_UNAVAILABLE:
                raise
            unavailable = exc
        except (db_exc.DBConnectionError, db_exc.DBNonExistentDatabase,
                sa_exc.OperationalError) as exc:
            # NOTE: the database server is down or restarting (a failed
            # new connection is not translated by oslo.db: it arrives as
            # SQLAlchemy's OperationalError): a 503 tells clients to
            # retry, a 500 would say the request is wrong.
            unavailable = exception.TemporaryFailure(DB_UNAVAILABLE)
            unavailable.__cause__ = exc
        except Exception as exc:
            if isinstance(getattr(exc, 'code', None), int):
                raise
            LOG.exception('Unexpected error in %s', f.__qualname__)
            raise exception.IronicAllocException(INTERNAL_ERROR)
        # NOTE: logged out of the except clauses, where oslo.log would
        # repeat the error at the end of the line.
        _log_unavailable(unavailable, pecan.request)
        raise unavailable


def _hide_argument_errors(exposed):
    """The same for errors of WSME's own conversion of the arguments.

    WSME converts the path, query and body into arguments before it calls
    the method, so outside ``_HideUnexpectedErrors``; it answers an error
    there that is not a client error (a bug of a type's conversion) with
    a 500 whose faultstring is the error's text.  WSME has logged the
    error with its traceback; the client gets the generic message.
    """
    @functools.wraps(exposed)
    def wrapper(self, *args, **kwargs):
        try:
            result = exposed(self, *args, **kwargs)
        finally:
            _ANSWER_LOGGED.error = None
        if (pecan.response.status_int >= 500 and isinstance(result, dict)
                and 'faultstring' in result
                and not pecan.request.environ.get(_METHOD_CALLED)):
            result = dict(result, faultstring=INTERNAL_ERROR)
        return result
    return wrapper


def _log_unavailable(error, request):
    """Log a 503 answer (something the request needs is unavailable)
    as one quiet line per cause (common/unavailable_log.py), and have
    WSME's line with a traceback for it left out."""
    _ANSWER_LOGGED.error = error
    log_unavailable(error, request.method, request.path)


def log_unavailable(error, method, path):
    """One WARNING line without a traceback for the 503 answer
    ``error``, at most once per cause per interval."""
    cause = unavailable_log.cause_of_answer(error)
    origin = unavailable_log.origin_of(error)
    _UNAVAILABLE.warning(
        cause,
        'Answered 503 (%(cause)s) to %(method)s %(path)s: %(error)s'
        '%(origin)s',
        {'cause': type(error).__name__, 'method': method, 'path': path,
         'error': error, 'origin': ' (%s)' % origin if origin else ''})


class _AnswerLoggedFilter(logging.Filter):
    """On WSME's logger (``wsme.api``): leaves out its "Server-side
    error" line, with a traceback, for an error logged by
    _log_unavailable() in the same thread.  A filter on a logger is a
    public mechanism of ``logging``; WSME offers no other way."""

    def filter(self, record):
        error = getattr(_ANSWER_LOGGED, 'error', None)
        if error is None or record.levelno < logging.ERROR:
            return True
        _ANSWER_LOGGED.error = None
        return False


def install_wsme_log_filter():
    """Put _AnswerLoggedFilter on WSME's logger, once per process."""
    logger = logging.getLogger('wsme.api')
    if not any(isinstance(f, _AnswerLoggedFilter) for f in logger.filters):
        logger.addFilter(_AnswerLoggedFilter())


def expose(*args, **kwargs):
    """``wsexpose`` forcing JSON; arguments are WSME's signature."""
    kwargs.setdefault('rest_content_types', ('json',))

    def decorate(f):
        return _hide_argument_errors(wsme_pecan.wsexpose(*args, **kwargs)(
            _HideUnexpectedErrors(f)))
    return decorate
